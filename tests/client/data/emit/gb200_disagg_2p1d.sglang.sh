# SGLang 0.5 flags (releases 0.5.0 and later; client/engines/sglang.yaml): disaggregated 2P1D (2 prefill instances of 8 GPUs, 1 decode instance of 16 GPUs, a router) on 32 GPUs.
# Set NODE0_ADDR..NODE7_ADDR to the nodes' addresses and run each command on the node it names.

# Prefill instance 0, node 0 (head):
python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3.2 \
  --tp-size 8 \
  --dp-size 8 \
  --enable-dp-attention \
  --ep-size 8 \
  --moe-a2a-backend deepep \
  --max-running-requests 8 \
  --cuda-graph-max-bs 1 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 2 \
  --node-rank 0 \
  --dist-init-addr $NODE0_ADDR:20000 \
  --host 0.0.0.0 \
  --port 30000 \
  --disaggregation-mode prefill \
  --disaggregation-transfer-backend mooncake \
  --disaggregation-bootstrap-port 8998

# Prefill instance 0, node 1 (worker):
python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3.2 \
  --tp-size 8 \
  --dp-size 8 \
  --enable-dp-attention \
  --ep-size 8 \
  --moe-a2a-backend deepep \
  --max-running-requests 8 \
  --cuda-graph-max-bs 1 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 2 \
  --node-rank 1 \
  --dist-init-addr $NODE0_ADDR:20000 \
  --disaggregation-mode prefill \
  --disaggregation-transfer-backend mooncake \
  --disaggregation-bootstrap-port 8998

# Prefill instance 1, node 2 (head):
python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3.2 \
  --tp-size 8 \
  --dp-size 8 \
  --enable-dp-attention \
  --ep-size 8 \
  --moe-a2a-backend deepep \
  --max-running-requests 8 \
  --cuda-graph-max-bs 1 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 2 \
  --node-rank 0 \
  --dist-init-addr $NODE2_ADDR:20000 \
  --host 0.0.0.0 \
  --port 30000 \
  --disaggregation-mode prefill \
  --disaggregation-transfer-backend mooncake \
  --disaggregation-bootstrap-port 8998

# Prefill instance 1, node 3 (worker):
python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3.2 \
  --tp-size 8 \
  --dp-size 8 \
  --enable-dp-attention \
  --ep-size 8 \
  --moe-a2a-backend deepep \
  --max-running-requests 8 \
  --cuda-graph-max-bs 1 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 2 \
  --node-rank 1 \
  --dist-init-addr $NODE2_ADDR:20000 \
  --disaggregation-mode prefill \
  --disaggregation-transfer-backend mooncake \
  --disaggregation-bootstrap-port 8998

# Decode node 4 (head):
python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3.2 \
  --tp-size 16 \
  --dp-size 16 \
  --enable-dp-attention \
  --ep-size 16 \
  --moe-a2a-backend deepep \
  --max-running-requests 512 \
  --cuda-graph-max-bs 32 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 4 \
  --node-rank 0 \
  --dist-init-addr $NODE4_ADDR:20000 \
  --host 0.0.0.0 \
  --port 30000 \
  --disaggregation-mode decode \
  --disaggregation-transfer-backend mooncake

# Decode node 5 (worker):
python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3.2 \
  --tp-size 16 \
  --dp-size 16 \
  --enable-dp-attention \
  --ep-size 16 \
  --moe-a2a-backend deepep \
  --max-running-requests 512 \
  --cuda-graph-max-bs 32 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 4 \
  --node-rank 1 \
  --dist-init-addr $NODE4_ADDR:20000 \
  --disaggregation-mode decode \
  --disaggregation-transfer-backend mooncake

# Decode node 6 (worker):
python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3.2 \
  --tp-size 16 \
  --dp-size 16 \
  --enable-dp-attention \
  --ep-size 16 \
  --moe-a2a-backend deepep \
  --max-running-requests 512 \
  --cuda-graph-max-bs 32 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 4 \
  --node-rank 2 \
  --dist-init-addr $NODE4_ADDR:20000 \
  --disaggregation-mode decode \
  --disaggregation-transfer-backend mooncake

# Decode node 7 (worker):
python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3.2 \
  --tp-size 16 \
  --dp-size 16 \
  --enable-dp-attention \
  --ep-size 16 \
  --moe-a2a-backend deepep \
  --max-running-requests 512 \
  --cuda-graph-max-bs 32 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 4 \
  --node-rank 3 \
  --dist-init-addr $NODE4_ADDR:20000 \
  --disaggregation-mode decode \
  --disaggregation-transfer-backend mooncake

# Router (sglang-router, PD mode), on node 0:
python -m sglang_router.launch_router \
  --pd-disaggregation \
  --prefill http://$NODE0_ADDR:30000 8998 \
  --prefill http://$NODE2_ADDR:30000 8998 \
  --decode http://$NODE4_ADDR:30000 \
  --host 0.0.0.0 \
  --port 8000

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 512 requests in flight):
python -m sglang.bench_serving \
  --backend sglang \
  --host $NODE0_ADDR \
  --port 8000 \
  --model deepseek-ai/DeepSeek-V3.2 \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --random-range-ratio 1 \
  --max-concurrency 512 \
  --num-prompts 2560
