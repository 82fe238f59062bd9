# vLLM 0.12 flags (releases 0.12.0 and later; client/engines/vllm.yaml): 1 instance on 8 GPUs.

# node 0:
vllm serve MiniMaxAI/MiniMax-M2.5 \
  --tensor-parallel-size 1 \
  --pipeline-parallel-size 1 \
  --data-parallel-size 8 \
  --enable-expert-parallel \
  --max-num-seqs 64 \
  --port 8000

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 512 requests in flight):
vllm bench serve \
  --model MiniMaxAI/MiniMax-M2.5 \
  --host localhost \
  --port 8000 \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --max-concurrency 512 \
  --num-prompts 2560 \
  --ignore-eos
