# SGLang 0.5 flags (releases 0.5.0 and later; client/engines/sglang.yaml): 4 instances on 8 GPUs.
# The FP4 KV cache (fp4_e2m1) needs SGLang 0.5.6 or later (https://github.com/sgl-project/sglang/pull/10078).
# 4 servers: put them behind sglang-router (or another load balancer).
# Set LB_ADDR and LB_PORT to the load balancer's address and port for the benchmark.

# Instance 0, node 0:
CUDA_VISIBLE_DEVICES=0,1 python -m sglang.launch_server --model-path nvidia/Llama-3.3-70B-Instruct-FP4 \
  --tp-size 2 \
  --max-running-requests 128 \
  --cuda-graph-max-bs 128 \
  --kv-cache-dtype fp4_e2m1 \
  --host 0.0.0.0 \
  --port 30000

# Instance 1, node 0:
CUDA_VISIBLE_DEVICES=2,3 python -m sglang.launch_server --model-path nvidia/Llama-3.3-70B-Instruct-FP4 \
  --tp-size 2 \
  --max-running-requests 128 \
  --cuda-graph-max-bs 128 \
  --kv-cache-dtype fp4_e2m1 \
  --host 0.0.0.0 \
  --port 30001

# Instance 2, node 0:
CUDA_VISIBLE_DEVICES=4,5 python -m sglang.launch_server --model-path nvidia/Llama-3.3-70B-Instruct-FP4 \
  --tp-size 2 \
  --max-running-requests 128 \
  --cuda-graph-max-bs 128 \
  --kv-cache-dtype fp4_e2m1 \
  --host 0.0.0.0 \
  --port 30002

# Instance 3, node 0:
CUDA_VISIBLE_DEVICES=6,7 python -m sglang.launch_server --model-path nvidia/Llama-3.3-70B-Instruct-FP4 \
  --tp-size 2 \
  --max-running-requests 128 \
  --cuda-graph-max-bs 128 \
  --kv-cache-dtype fp4_e2m1 \
  --host 0.0.0.0 \
  --port 30003

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 512 requests in flight: 128 per instance on 4 instances) through the load balancer in front of them:
python -m sglang.bench_serving \
  --backend sglang \
  --host $LB_ADDR \
  --port $LB_PORT \
  --model nvidia/Llama-3.3-70B-Instruct-FP4 \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --random-range-ratio 1 \
  --max-concurrency 512 \
  --num-prompts 2560
