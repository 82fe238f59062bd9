# SGLang 0.5 flags (releases 0.5.0 and later; client/engines/sglang.yaml): 1 instance on 16 GPUs.
# Set NODE0_ADDR..NODE1_ADDR to the nodes' addresses and run each command on the node it names.

# node 0 (head):
python -m sglang.launch_server --model-path meta-llama/Llama-3.1-405B-Instruct \
  --tp-size 8 \
  --pp-size 2 \
  --max-running-requests 128 \
  --cuda-graph-max-bs 128 \
  --quantization fp8 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 2 \
  --node-rank 0 \
  --dist-init-addr $NODE0_ADDR:20000 \
  --host 0.0.0.0 \
  --port 30000

# node 1 (worker):
python -m sglang.launch_server --model-path meta-llama/Llama-3.1-405B-Instruct \
  --tp-size 8 \
  --pp-size 2 \
  --max-running-requests 128 \
  --cuda-graph-max-bs 128 \
  --quantization fp8 \
  --kv-cache-dtype fp8_e4m3 \
  --nnodes 2 \
  --node-rank 1 \
  --dist-init-addr $NODE0_ADDR:20000

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 128 requests in flight):
python -m sglang.bench_serving \
  --backend sglang \
  --host $NODE0_ADDR \
  --port 30000 \
  --model meta-llama/Llama-3.1-405B-Instruct \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --random-range-ratio 1 \
  --max-concurrency 128 \
  --num-prompts 640
