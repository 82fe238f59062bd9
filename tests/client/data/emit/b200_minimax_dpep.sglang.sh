# SGLang 0.5 flags (releases 0.5.0 and later; client/engines/sglang.yaml): 1 instance on 8 GPUs.

# node 0:
python -m sglang.launch_server --model-path MiniMaxAI/MiniMax-M2.5 \
  --tp-size 8 \
  --dp-size 8 \
  --enable-dp-attention \
  --ep-size 8 \
  --moe-a2a-backend deepep \
  --max-running-requests 512 \
  --cuda-graph-max-bs 64 \
  --host 0.0.0.0 \
  --port 30000

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 512 requests in flight):
python -m sglang.bench_serving \
  --backend sglang \
  --host localhost \
  --port 30000 \
  --model MiniMaxAI/MiniMax-M2.5 \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --random-range-ratio 1 \
  --max-concurrency 512 \
  --num-prompts 2560
