# vLLM 0.12 flags (releases 0.12.0 and later; client/engines/vllm.yaml): 2 instances on 16 GPUs.
# Set NODE0_ADDR..NODE2_ADDR to the nodes' addresses and run each command on the node it names.
# 2 servers: put them behind a load balancer.

# Instance 0, node 0:
vllm serve meta-llama/Llama-3.1-70B-Instruct \
  --tensor-parallel-size 8 \
  --pipeline-parallel-size 1 \
  --max-num-seqs 128 \
  --port 8000

# Instance 1, node 1 (head):
vllm serve meta-llama/Llama-3.1-70B-Instruct \
  --tensor-parallel-size 8 \
  --pipeline-parallel-size 1 \
  --max-num-seqs 128 \
  --nnodes 2 \
  --node-rank 0 \
  --master-addr $NODE1_ADDR \
  --port 8000

# Instance 1, node 2 (headless):
vllm serve meta-llama/Llama-3.1-70B-Instruct \
  --tensor-parallel-size 8 \
  --pipeline-parallel-size 1 \
  --max-num-seqs 128 \
  --nnodes 2 \
  --node-rank 1 \
  --master-addr $NODE1_ADDR \
  --headless

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 128 requests in flight per instance): run it against each instance, or at 256 through the load balancer.
vllm bench serve \
  --model meta-llama/Llama-3.1-70B-Instruct \
  --host $NODE0_ADDR \
  --port 8000 \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --max-concurrency 128 \
  --num-prompts 640 \
  --ignore-eos
