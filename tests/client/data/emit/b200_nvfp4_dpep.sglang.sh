# SGLang 0.5 flags (releases 0.5.0 and later; client/engines/sglang.yaml): 1 instance on 8 GPUs.
# nvidia/Kimi-K2.5-NVFP4 is NVIDIA's NVFP4 checkpoint of moonshotai/Kimi-K2.5 (the engine reads its quantization from the checkpoint): the weights the prediction prices on FP4 tensor cores.

# node 0:
python -m sglang.launch_server --model-path nvidia/Kimi-K2.5-NVFP4 \
  --tp-size 8 \
  --dp-size 8 \
  --enable-dp-attention \
  --ep-size 8 \
  --moe-a2a-backend deepep \
  --max-running-requests 256 \
  --cuda-graph-max-bs 32 \
  --kv-cache-dtype fp8_e4m3 \
  --host 0.0.0.0 \
  --port 30000

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 256 requests in flight):
python -m sglang.bench_serving \
  --backend sglang \
  --host localhost \
  --port 30000 \
  --model nvidia/Kimi-K2.5-NVFP4 \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --random-range-ratio 1 \
  --max-concurrency 256 \
  --num-prompts 1280
