# vLLM 0.12 flags (releases 0.12.0 and later; client/engines/vllm.yaml): 1 instance on 8 GPUs.

# node 0:
vllm serve Qwen/Qwen3.5-397B-A17B \
  --tensor-parallel-size 8 \
  --pipeline-parallel-size 1 \
  --enable-expert-parallel \
  --max-num-seqs 256 \
  --kv-cache-dtype fp8 \
  --port 8000

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 256 requests in flight):
vllm bench serve \
  --model Qwen/Qwen3.5-397B-A17B \
  --host localhost \
  --port 8000 \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --max-concurrency 256 \
  --num-prompts 1280 \
  --ignore-eos
