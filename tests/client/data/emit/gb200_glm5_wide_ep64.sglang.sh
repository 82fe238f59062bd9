# SGLang 0.5 flags (releases 0.5.0 and later; client/engines/sglang.yaml): 1 instance on 64 GPUs.
# Set NODE0_ADDR..NODE15_ADDR to the nodes' addresses and run each command on the node it names.

# node 0 (head):
python -m sglang.launch_server --model-path zai-org/GLM-5 \
  --tp-size 64 \
  --dp-size 64 \
  --enable-dp-attention \
  --ep-size 64 \
  --moe-a2a-backend deepep \
  --max-running-requests 2048 \
  --cuda-graph-max-bs 32 \
  --quantization fp8 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 16 \
  --node-rank 0 \
  --dist-init-addr $NODE0_ADDR:20000 \
  --host 0.0.0.0 \
  --port 30000

# node 1 (worker):
python -m sglang.launch_server --model-path zai-org/GLM-5 \
  --tp-size 64 \
  --dp-size 64 \
  --enable-dp-attention \
  --ep-size 64 \
  --moe-a2a-backend deepep \
  --max-running-requests 2048 \
  --cuda-graph-max-bs 32 \
  --quantization fp8 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 16 \
  --node-rank 1 \
  --dist-init-addr $NODE0_ADDR:20000

# node 2 (worker):
python -m sglang.launch_server --model-path zai-org/GLM-5 \
  --tp-size 64 \
  --dp-size 64 \
  --enable-dp-attention \
  --ep-size 64 \
  --moe-a2a-backend deepep \
  --max-running-requests 2048 \
  --cuda-graph-max-bs 32 \
  --quantization fp8 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 16 \
  --node-rank 2 \
  --dist-init-addr $NODE0_ADDR:20000

# node 3 (worker):
python -m sglang.launch_server --model-path zai-org/GLM-5 \
  --tp-size 64 \
  --dp-size 64 \
  --enable-dp-attention \
  --ep-size 64 \
  --moe-a2a-backend deepep \
  --max-running-requests 2048 \
  --cuda-graph-max-bs 32 \
  --quantization fp8 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 16 \
  --node-rank 3 \
  --dist-init-addr $NODE0_ADDR:20000

# node 4 (worker):
python -m sglang.launch_server --model-path zai-org/GLM-5 \
  --tp-size 64 \
  --dp-size 64 \
  --enable-dp-attention \
  --ep-size 64 \
  --moe-a2a-backend deepep \
  --max-running-requests 2048 \
  --cuda-graph-max-bs 32 \
  --quantization fp8 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 16 \
  --node-rank 4 \
  --dist-init-addr $NODE0_ADDR:20000

# node 5 (worker):
python -m sglang.launch_server --model-path zai-org/GLM-5 \
  --tp-size 64 \
  --dp-size 64 \
  --enable-dp-attention \
  --ep-size 64 \
  --moe-a2a-backend deepep \
  --max-running-requests 2048 \
  --cuda-graph-max-bs 32 \
  --quantization fp8 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 16 \
  --node-rank 5 \
  --dist-init-addr $NODE0_ADDR:20000

# node 6 (worker):
python -m sglang.launch_server --model-path zai-org/GLM-5 \
  --tp-size 64 \
  --dp-size 64 \
  --enable-dp-attention \
  --ep-size 64 \
  --moe-a2a-backend deepep \
  --max-running-requests 2048 \
  --cuda-graph-max-bs 32 \
  --quantization fp8 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 16 \
  --node-rank 6 \
  --dist-init-addr $NODE0_ADDR:20000

# node 7 (worker):
python -m sglang.launch_server --model-path zai-org/GLM-5 \
  --tp-size 64 \
  --dp-size 64 \
  --enable-dp-attention \
  --ep-size 64 \
  --moe-a2a-backend deepep \
  --max-running-requests 2048 \
  --cuda-graph-max-bs 32 \
  --quantization fp8 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 16 \
  --node-rank 7 \
  --dist-init-addr $NODE0_ADDR:20000

# node 8 (worker):
python -m sglang.launch_server --model-path zai-org/GLM-5 \
  --tp-size 64 \
  --dp-size 64 \
  --enable-dp-attention \
  --ep-size 64 \
  --moe-a2a-backend deepep \
  --max-running-requests 2048 \
  --cuda-graph-max-bs 32 \
  --quantization fp8 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 16 \
  --node-rank 8 \
  --dist-init-addr $NODE0_ADDR:20000

# node 9 (worker):
python -m sglang.launch_server --model-path zai-org/GLM-5 \
  --tp-size 64 \
  --dp-size 64 \
  --enable-dp-attention \
  --ep-size 64 \
  --moe-a2a-backend deepep \
  --max-running-requests 2048 \
  --cuda-graph-max-bs 32 \
  --quantization fp8 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 16 \
  --node-rank 9 \
  --dist-init-addr $NODE0_ADDR:20000

# node 10 (worker):
python -m sglang.launch_server --model-path zai-org/GLM-5 \
  --tp-size 64 \
  --dp-size 64 \
  --enable-dp-attention \
  --ep-size 64 \
  --moe-a2a-backend deepep \
  --max-running-requests 2048 \
  --cuda-graph-max-bs 32 \
  --quantization fp8 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 16 \
  --node-rank 10 \
  --dist-init-addr $NODE0_ADDR:20000

# node 11 (worker):
python -m sglang.launch_server --model-path zai-org/GLM-5 \
  --tp-size 64 \
  --dp-size 64 \
  --enable-dp-attention \
  --ep-size 64 \
  --moe-a2a-backend deepep \
  --max-running-requests 2048 \
  --cuda-graph-max-bs 32 \
  --quantization fp8 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 16 \
  --node-rank 11 \
  --dist-init-addr $NODE0_ADDR:20000

# node 12 (worker):
python -m sglang.launch_server --model-path zai-org/GLM-5 \
  --tp-size 64 \
  --dp-size 64 \
  --enable-dp-attention \
  --ep-size 64 \
  --moe-a2a-backend deepep \
  --max-running-requests 2048 \
  --cuda-graph-max-bs 32 \
  --quantization fp8 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 16 \
  --node-rank 12 \
  --dist-init-addr $NODE0_ADDR:20000

# node 13 (worker):
python -m sglang.launch_server --model-path zai-org/GLM-5 \
  --tp-size 64 \
  --dp-size 64 \
  --enable-dp-attention \
  --ep-size 64 \
  --moe-a2a-backend deepep \
  --max-running-requests 2048 \
  --cuda-graph-max-bs 32 \
  --quantization fp8 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 16 \
  --node-rank 13 \
  --dist-init-addr $NODE0_ADDR:20000

# node 14 (worker):
python -m sglang.launch_server --model-path zai-org/GLM-5 \
  --tp-size 64 \
  --dp-size 64 \
  --enable-dp-attention \
  --ep-size 64 \
  --moe-a2a-backend deepep \
  --max-running-requests 2048 \
  --cuda-graph-max-bs 32 \
  --quantization fp8 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 16 \
  --node-rank 14 \
  --dist-init-addr $NODE0_ADDR:20000

# node 15 (worker):
python -m sglang.launch_server --model-path zai-org/GLM-5 \
  --tp-size 64 \
  --dp-size 64 \
  --enable-dp-attention \
  --ep-size 64 \
  --moe-a2a-backend deepep \
  --max-running-requests 2048 \
  --cuda-graph-max-bs 32 \
  --quantization fp8 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 16 \
  --node-rank 15 \
  --dist-init-addr $NODE0_ADDR:20000

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 2048 requests in flight):
python -m sglang.bench_serving \
  --backend sglang \
  --host $NODE0_ADDR \
  --port 30000 \
  --model zai-org/GLM-5 \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --random-range-ratio 1 \
  --max-concurrency 2048 \
  --num-prompts 10240
