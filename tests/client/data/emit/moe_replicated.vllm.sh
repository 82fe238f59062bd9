# vLLM 0.12 flags (releases 0.12.0 and later; client/engines/vllm.yaml): 2 instances on 16 GPUs.
# Set NODE0_ADDR..NODE1_ADDR to the nodes' addresses and run each command on the node it names.
# 2 servers: put them behind a load balancer.
# Set LB_ADDR and LB_PORT to the load balancer's address and port for the benchmark.

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

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 1024 requests in flight: 512 per instance on 2 instances) through the load balancer in front of them:
vllm bench serve \
  --model deepseek-ai/DeepSeek-V3 \
  --host $LB_ADDR \
  --port $LB_PORT \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --max-concurrency 1024 \
  --num-prompts 5120 \
  --ignore-eos
