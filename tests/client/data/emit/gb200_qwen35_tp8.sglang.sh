# SGLang 0.5 flags (releases 0.5.0 and later; client/engines/sglang.yaml): 1 instance on 8 GPUs.
# Set NODE0_ADDR..NODE1_ADDR to the nodes' addresses and run each command on the node it names.

# node 0 (head):
python -m sglang.launch_server --model-path Qwen/Qwen3.5-397B-A17B \
  --tp-size 8 \
  --ep-size 8 \
  --max-running-requests 256 \
  --cuda-graph-max-bs 256 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 2 \
  --node-rank 0 \
  --dist-init-addr $NODE0_ADDR:20000 \
  --host 0.0.0.0 \
  --port 30000

# node 1 (worker):
python -m sglang.launch_server --model-path Qwen/Qwen3.5-397B-A17B \
  --tp-size 8 \
  --ep-size 8 \
  --max-running-requests 256 \
  --cuda-graph-max-bs 256 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 2 \
  --node-rank 1 \
  --dist-init-addr $NODE0_ADDR:20000

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 256 requests in flight):
python -m sglang.bench_serving \
  --backend sglang \
  --host $NODE0_ADDR \
  --port 30000 \
  --model Qwen/Qwen3.5-397B-A17B \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --random-range-ratio 1 \
  --max-concurrency 256 \
  --num-prompts 1280
