# vLLM 0.12 flags (releases 0.12.0 and later; client/engines/vllm.yaml): 1 instance on 8 GPUs.
# nvidia/Kimi-K2.5-NVFP4 is NVIDIA's NVFP4 checkpoint of moonshotai/Kimi-K2.5 (the engine reads its quantization from the checkpoint): the weights the prediction prices on FP4 tensor cores.

# node 0:
vllm serve nvidia/Kimi-K2.5-NVFP4 \
  --tensor-parallel-size 1 \
  --pipeline-parallel-size 1 \
  --data-parallel-size 8 \
  --enable-expert-parallel \
  --max-num-seqs 32 \
  --kv-cache-dtype fp8 \
  --port 8000

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 256 requests in flight):
vllm bench serve \
  --model nvidia/Kimi-K2.5-NVFP4 \
  --host localhost \
  --port 8000 \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --max-concurrency 256 \
  --num-prompts 1280 \
  --ignore-eos
