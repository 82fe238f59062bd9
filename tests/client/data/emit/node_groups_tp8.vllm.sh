# vLLM 0.12 flags (releases 0.12.0 and later; client/engines/vllm.yaml): 2 instances on 16 GPUs.
# Set NODE0_ADDR..NODE2_ADDR to the nodes' addresses and run each command on the node it names.
# 2 servers: put them behind a load balancer.
# Set LB_ADDR and LB_PORT to the load balancer's address and port for the benchmark.

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

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 256 requests in flight: 128 per instance on 2 instances) through the load balancer in front of them:
vllm bench serve \
  --model meta-llama/Llama-3.1-70B-Instruct \
  --host $LB_ADDR \
  --port $LB_PORT \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --max-concurrency 256 \
  --num-prompts 1280 \
  --ignore-eos
