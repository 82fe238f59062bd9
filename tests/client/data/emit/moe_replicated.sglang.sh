# SGLang 0.5 flags (releases 0.5.0 and later; client/engines/sglang.yaml): 2 instances on 16 GPUs.
# Set NODE0_ADDR..NODE1_ADDR to the nodes' addresses and run each command on the node it names.
# 2 servers: put them behind sglang-router (or another load balancer).

# Instance 0, node 0:
python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 \
  --tp-size 8 \
  --dp-size 8 \
  --enable-dp-attention \
  --ep-size 8 \
  --moe-a2a-backend deepep \
  --max-running-requests 512 \
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
  --host 0.0.0.0 \
  --port 30000

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 512 requests in flight per instance): run it against each instance, or at 1024 through the load balancer.
python -m sglang.bench_serving \
  --backend sglang \
  --host $NODE0_ADDR \
  --port 30000 \
  --model deepseek-ai/DeepSeek-V3 \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --random-range-ratio 1 \
  --max-concurrency 512 \
  --num-prompts 2560
