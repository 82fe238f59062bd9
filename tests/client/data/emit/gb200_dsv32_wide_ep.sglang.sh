# SGLang 0.5 flags (releases 0.5.0 and later; client/engines/sglang.yaml): 1 instance on 32 GPUs.
# Set NODE0_ADDR..NODE7_ADDR to the nodes' addresses and run each command on the node it names.

# node 0 (head):
python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3.2 \
  --tp-size 32 \
  --dp-size 32 \
  --enable-dp-attention \
  --ep-size 32 \
  --moe-a2a-backend deepep \
  --max-running-requests 1024 \
  --cuda-graph-max-bs 32 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 8 \
  --node-rank 0 \
  --dist-init-addr $NODE0_ADDR:20000 \
  --host 0.0.0.0 \
  --port 30000

# node 1 (worker):
python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3.2 \
  --tp-size 32 \
  --dp-size 32 \
  --enable-dp-attention \
  --ep-size 32 \
  --moe-a2a-backend deepep \
  --max-running-requests 1024 \
  --cuda-graph-max-bs 32 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 8 \
  --node-rank 1 \
  --dist-init-addr $NODE0_ADDR:20000

# node 2 (worker):
python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3.2 \
  --tp-size 32 \
  --dp-size 32 \
  --enable-dp-attention \
  --ep-size 32 \
  --moe-a2a-backend deepep \
  --max-running-requests 1024 \
  --cuda-graph-max-bs 32 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 8 \
  --node-rank 2 \
  --dist-init-addr $NODE0_ADDR:20000

# node 3 (worker):
python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3.2 \
  --tp-size 32 \
  --dp-size 32 \
  --enable-dp-attention \
  --ep-size 32 \
  --moe-a2a-backend deepep \
  --max-running-requests 1024 \
  --cuda-graph-max-bs 32 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 8 \
  --node-rank 3 \
  --dist-init-addr $NODE0_ADDR:20000

# node 4 (worker):
python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3.2 \
  --tp-size 32 \
  --dp-size 32 \
  --enable-dp-attention \
  --ep-size 32 \
  --moe-a2a-backend deepep \
  --max-running-requests 1024 \
  --cuda-graph-max-bs 32 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 8 \
  --node-rank 4 \
  --dist-init-addr $NODE0_ADDR:20000

# node 5 (worker):
python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3.2 \
  --tp-size 32 \
  --dp-size 32 \
  --enable-dp-attention \
  --ep-size 32 \
  --moe-a2a-backend deepep \
  --max-running-requests 1024 \
  --cuda-graph-max-bs 32 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 8 \
  --node-rank 5 \
  --dist-init-addr $NODE0_ADDR:20000

# node 6 (worker):
python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3.2 \
  --tp-size 32 \
  --dp-size 32 \
  --enable-dp-attention \
  --ep-size 32 \
  --moe-a2a-backend deepep \
  --max-running-requests 1024 \
  --cuda-graph-max-bs 32 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 8 \
  --node-rank 6 \
  --dist-init-addr $NODE0_ADDR:20000

# node 7 (worker):
python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3.2 \
  --tp-size 32 \
  --dp-size 32 \
  --enable-dp-attention \
  --ep-size 32 \
  --moe-a2a-backend deepep \
  --max-running-requests 1024 \
  --cuda-graph-max-bs 32 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 8 \
  --node-rank 7 \
  --dist-init-addr $NODE0_ADDR:20000

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 1024 requests in flight):
python -m sglang.bench_serving \
  --backend sglang \
  --host $NODE0_ADDR \
  --port 30000 \
  --model deepseek-ai/DeepSeek-V3.2 \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --random-range-ratio 1 \
  --max-concurrency 1024 \
  --num-prompts 5120
