# SGLang 0.5 flags (releases 0.5.0 and later; client/engines/sglang.yaml): 1 instance on 16 GPUs.
# Set NODE0_ADDR..NODE1_ADDR to the nodes' addresses and run each command on the node it names.
# moonshotai/Kimi-K2.5 stores 4-bit weights this GPU has no FP4 tensor cores for: the engine runs them on weight-only kernels (4-bit reads, BF16 math), as the prediction prices them; nvidia/Kimi-K2.5-NVFP4 needs FP4 tensor cores (Blackwell).

# node 0 (head):
python -m sglang.launch_server --model-path moonshotai/Kimi-K2.5 \
  --tp-size 16 \
  --dp-size 16 \
  --enable-dp-attention \
  --ep-size 16 \
  --moe-a2a-backend deepep \
  --max-running-requests 512 \
  --cuda-graph-max-bs 32 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 2 \
  --node-rank 0 \
  --dist-init-addr $NODE0_ADDR:20000 \
  --host 0.0.0.0 \
  --port 30000

# node 1 (worker):
python -m sglang.launch_server --model-path moonshotai/Kimi-K2.5 \
  --tp-size 16 \
  --dp-size 16 \
  --enable-dp-attention \
  --ep-size 16 \
  --moe-a2a-backend deepep \
  --max-running-requests 512 \
  --cuda-graph-max-bs 32 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 2 \
  --node-rank 1 \
  --dist-init-addr $NODE0_ADDR:20000

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 512 requests in flight):
python -m sglang.bench_serving \
  --backend sglang \
  --host $NODE0_ADDR \
  --port 30000 \
  --model moonshotai/Kimi-K2.5 \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --random-range-ratio 1 \
  --max-concurrency 512 \
  --num-prompts 2560
