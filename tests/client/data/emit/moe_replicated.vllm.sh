# vLLM 0.12 flags (releases 0.12.0 and later; client/engines/vllm.yaml): 2 instances on 16 GPUs.
# Set NODE0_ADDR..NODE1_ADDR to the nodes' addresses and run each command on the node it names.
# 2 servers: put them behind a load balancer.

# Instance 0, node 0:
vllm serve deepseek-ai/DeepSeek-V3 \
  --tensor-parallel-size 1 \
  --pipeline-parallel-size 1 \
  --data-parallel-size 8 \
  --enable-expert-parallel \
  --max-num-seqs 64 \
  --port 8000

# Instance 1, node 1:
vllm serve deepseek-ai/DeepSeek-V3 \
  --tensor-parallel-size 1 \
  --pipeline-parallel-size 1 \
  --data-parallel-size 8 \
  --enable-expert-parallel \
  --max-num-seqs 64 \
  --port 8000

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 512 requests in flight per instance): run it against each instance, or at 1024 through the load balancer.
vllm bench serve \
  --model deepseek-ai/DeepSeek-V3 \
  --host $NODE0_ADDR \
  --port 8000 \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --max-concurrency 512 \
  --num-prompts 2560 \
  --ignore-eos
