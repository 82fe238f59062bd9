# SGLang 0.5 flags (releases 0.5.0 and later; client/engines/sglang.yaml): 2 instances on 16 GPUs.
# Set NODE0_ADDR..NODE2_ADDR to the nodes' addresses and run each command on the node it names.
# 2 servers: put them behind sglang-router (or another load balancer).
# Set LB_ADDR and LB_PORT to the load balancer's address and port for the benchmark.

# Instance 0, node 0:
python -m sglang.launch_server --model-path meta-llama/Llama-3.1-70B-Instruct \
  --tp-size 8 \
  --max-running-requests 128 \
  --cuda-graph-max-bs 128 \
  --host 0.0.0.0 \
  --port 30000

# Instance 1, node 1 (head):
python -m sglang.launch_server --model-path meta-llama/Llama-3.1-70B-Instruct \
  --tp-size 8 \
  --max-running-requests 128 \
  --cuda-graph-max-bs 128 \
  --nnodes 2 \
  --node-rank 0 \
  --dist-init-addr $NODE1_ADDR:20000 \
  --host 0.0.0.0 \
  --port 30000

# Instance 1, node 2 (worker):
python -m sglang.launch_server --model-path meta-llama/Llama-3.1-70B-Instruct \
  --tp-size 8 \
  --max-running-requests 128 \
  --cuda-graph-max-bs 128 \
  --nnodes 2 \
  --node-rank 1 \
  --dist-init-addr $NODE1_ADDR:20000

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 256 requests in flight: 128 per instance on 2 instances) through the load balancer in front of them:
python -m sglang.bench_serving \
  --backend sglang \
  --host $LB_ADDR \
  --port $LB_PORT \
  --model meta-llama/Llama-3.1-70B-Instruct \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --random-range-ratio 1 \
  --max-concurrency 256 \
  --num-prompts 1280
