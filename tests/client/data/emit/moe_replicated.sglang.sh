# SGLang 0.5 flags (releases 0.5.0 and later; client/engines/sglang.yaml): 2 instances on 16 GPUs.
# Set NODE0_ADDR..NODE1_ADDR to the nodes' addresses and run each command on the node it names.
# 2 servers: put them behind sglang-router (or another load balancer).
# Set LB_ADDR and LB_PORT to the load balancer's address and port for the benchmark.

# Instance 0, node 0:
python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 \
  --tp-size 8 \
  --dp-size 8 \
  --enable-dp-attention \
  --ep-size 8 \
  --moe-a2a-backend deepep \
  --max-running-requests 512 \
  --cuda-graph-max-bs 64 \
  --host 0.0.0.0 \
  --port 30000

# Instance 1, node 1:
python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 \
  --tp-size 8 \
  --dp-size 8 \
  --enable-dp-attention \
  --ep-size 8 \
  --moe-a2a-backend deepep \
  --max-running-requests 512 \
  --cuda-graph-max-bs 64 \
  --host 0.0.0.0 \
  --port 30000

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 1024 requests in flight: 512 per instance on 2 instances) through the load balancer in front of them:
python -m sglang.bench_serving \
  --backend sglang \
  --host $LB_ADDR \
  --port $LB_PORT \
  --model deepseek-ai/DeepSeek-V3 \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --random-range-ratio 1 \
  --max-concurrency 1024 \
  --num-prompts 5120
