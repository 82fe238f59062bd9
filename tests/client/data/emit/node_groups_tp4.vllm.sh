# vLLM 0.12 flags (releases 0.12.0 and later; client/engines/vllm.yaml): 4 instances on 16 GPUs.
# Set NODE0_ADDR..NODE2_ADDR to the nodes' addresses and run each command on the node it names.
# 4 servers: put them behind a load balancer.

# Instance 0, node 0:
CUDA_VISIBLE_DEVICES=0,1,2,3 vllm serve meta-llama/Llama-3.1-70B-Instruct \
  --tensor-parallel-size 4 \
  --pipeline-parallel-size 1 \
  --max-num-seqs 64 \
  --port 8000

# Instance 1, node 0:
CUDA_VISIBLE_DEVICES=4,5,6,7 vllm serve meta-llama/Llama-3.1-70B-Instruct \
  --tensor-parallel-size 4 \
  --pipeline-parallel-size 1 \
  --max-num-seqs 64 \
  --port 8001

# Instance 2, node 1:
vllm serve meta-llama/Llama-3.1-70B-Instruct \
  --tensor-parallel-size 4 \
  --pipeline-parallel-size 1 \
  --max-num-seqs 64 \
  --port 8000

# Instance 3, node 2:
vllm serve meta-llama/Llama-3.1-70B-Instruct \
  --tensor-parallel-size 4 \
  --pipeline-parallel-size 1 \
  --max-num-seqs 64 \
  --port 8000

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 64 requests in flight per instance): run it against each instance, or at 256 through the load balancer.
vllm bench serve \
  --model meta-llama/Llama-3.1-70B-Instruct \
  --host $NODE0_ADDR \
  --port 8000 \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --max-concurrency 64 \
  --num-prompts 320 \
  --ignore-eos
