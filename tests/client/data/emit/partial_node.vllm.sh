# vLLM 0.12 flags (releases 0.12.0 and later; client/engines/vllm.yaml): 3 instances on 12 GPUs.
# Set NODE0_ADDR..NODE1_ADDR to the nodes' addresses and run each command on the node it names.
# 3 servers: put them behind a load balancer.
# Set LB_ADDR and LB_PORT to the load balancer's address and port for the benchmark.

# Instance 0, node 0:
CUDA_VISIBLE_DEVICES=0,1,2,3 vllm serve openai/gpt-oss-120b \
  --tensor-parallel-size 4 \
  --pipeline-parallel-size 1 \
  --enable-expert-parallel \
  --max-num-seqs 128 \
  --port 8000

# Instance 1, node 0:
CUDA_VISIBLE_DEVICES=4,5,6,7 vllm serve openai/gpt-oss-120b \
  --tensor-parallel-size 4 \
  --pipeline-parallel-size 1 \
  --enable-expert-parallel \
  --max-num-seqs 128 \
  --port 8001

# Instance 2, node 1:
CUDA_VISIBLE_DEVICES=0,1,2,3 vllm serve openai/gpt-oss-120b \
  --tensor-parallel-size 4 \
  --pipeline-parallel-size 1 \
  --enable-expert-parallel \
  --max-num-seqs 128 \
  --port 8000

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 384 requests in flight: 128 per instance on 3 instances) through the load balancer in front of them:
vllm bench serve \
  --model openai/gpt-oss-120b \
  --host $LB_ADDR \
  --port $LB_PORT \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --max-concurrency 384 \
  --num-prompts 1920 \
  --ignore-eos
