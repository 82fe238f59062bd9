# SGLang 0.5 flags (releases 0.5.0 and later; client/engines/sglang.yaml): 4 instances on 16 GPUs.
# Set NODE0_ADDR..NODE2_ADDR to the nodes' addresses and run each command on the node it names.
# 4 servers: put them behind sglang-router (or another load balancer).

# Instance 0, node 0:
CUDA_VISIBLE_DEVICES=0,1,2,3 python -m sglang.launch_server --model-path meta-llama/Llama-3.1-70B-Instruct \
  --tp-size 4 \
  --max-running-requests 64 \
  --host 0.0.0.0 \
  --port 30000

# Instance 1, node 0:
CUDA_VISIBLE_DEVICES=4,5,6,7 python -m sglang.launch_server --model-path meta-llama/Llama-3.1-70B-Instruct \
  --tp-size 4 \
  --max-running-requests 64 \
  --host 0.0.0.0 \
  --port 30001

# Instance 2, node 1:
python -m sglang.launch_server --model-path meta-llama/Llama-3.1-70B-Instruct \
  --tp-size 4 \
  --max-running-requests 64 \
  --host 0.0.0.0 \
  --port 30000

# Instance 3, node 2:
python -m sglang.launch_server --model-path meta-llama/Llama-3.1-70B-Instruct \
  --tp-size 4 \
  --max-running-requests 64 \
  --host 0.0.0.0 \
  --port 30000

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 64 requests in flight per instance): run it against each instance, or at 256 through the load balancer.
python -m sglang.bench_serving \
  --backend sglang \
  --host $NODE0_ADDR \
  --port 30000 \
  --model meta-llama/Llama-3.1-70B-Instruct \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --random-range-ratio 1 \
  --max-concurrency 64 \
  --num-prompts 320
