# SGLang 0.5 flags (releases 0.5.0 and later; client/engines/sglang.yaml): disaggregated 1P1D (1 prefill instance of 4 GPUs, 1 decode instance of 4 GPUs, a router) on 8 GPUs.

# Prefill node 0:
CUDA_VISIBLE_DEVICES=0,1,2,3 python -m sglang.launch_server --model-path meta-llama/Llama-3.1-70B-Instruct \
  --tp-size 4 \
  --max-running-requests 16 \
  --cuda-graph-max-bs 16 \
  --host 0.0.0.0 \
  --port 30000 \
  --disaggregation-mode prefill \
  --disaggregation-transfer-backend mooncake \
  --disaggregation-bootstrap-port 8998

# Decode node 0:
CUDA_VISIBLE_DEVICES=4,5,6,7 python -m sglang.launch_server --model-path meta-llama/Llama-3.1-70B-Instruct \
  --tp-size 4 \
  --max-running-requests 128 \
  --cuda-graph-max-bs 128 \
  --host 0.0.0.0 \
  --port 30001 \
  --disaggregation-mode decode \
  --disaggregation-transfer-backend mooncake

# Router (sglang-router, PD mode), on node 0:
python -m sglang_router.launch_router \
  --pd-disaggregation \
  --prefill http://localhost:30000 8998 \
  --decode http://localhost:30001 \
  --port 8000

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 128 requests in flight):
python -m sglang.bench_serving \
  --backend sglang \
  --host localhost \
  --port 8000 \
  --model meta-llama/Llama-3.1-70B-Instruct \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --random-range-ratio 1 \
  --max-concurrency 128 \
  --num-prompts 640
