# SGLang 0.5 flags (releases 0.5.0 and later; client/engines/sglang.yaml): 3 instances on 12 GPUs.
# Set NODE0_ADDR..NODE1_ADDR to the nodes' addresses and run each command on the node it names.
# 3 servers: put them behind sglang-router (or another load balancer).
# Set LB_ADDR and LB_PORT to the load balancer's address and port for the benchmark.

# Instance 0, node 0:
CUDA_VISIBLE_DEVICES=0,1,2,3 python -m sglang.launch_server --model-path openai/gpt-oss-120b \
  --tp-size 4 \
  --ep-size 4 \
  --max-running-requests 128 \
  --cuda-graph-max-bs 128 \
  --host 0.0.0.0 \
  --port 30000

# Instance 1, node 0:
CUDA_VISIBLE_DEVICES=4,5,6,7 python -m sglang.launch_server --model-path openai/gpt-oss-120b \
  --tp-size 4 \
  --ep-size 4 \
  --max-running-requests 128 \
  --cuda-graph-max-bs 128 \
  --host 0.0.0.0 \
  --port 30001

# Instance 2, node 1:
CUDA_VISIBLE_DEVICES=0,1,2,3 python -m sglang.launch_server --model-path openai/gpt-oss-120b \
  --tp-size 4 \
  --ep-size 4 \
  --max-running-requests 128 \
  --cuda-graph-max-bs 128 \
  --host 0.0.0.0 \
  --port 30000

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 384 requests in flight: 128 per instance on 3 instances) through the load balancer in front of them:
python -m sglang.bench_serving \
  --backend sglang \
  --host $LB_ADDR \
  --port $LB_PORT \
  --model openai/gpt-oss-120b \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --random-range-ratio 1 \
  --max-concurrency 384 \
  --num-prompts 1920
