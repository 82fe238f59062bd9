# vLLM 0.12 flags (releases 0.12.0 and later; client/engines/vllm.yaml): 1 instance on 8 GPUs.

# node 0:
VLLM_PP_LAYER_PARTITION=44,36 vllm serve meta-llama/Llama-3.1-70B-Instruct \
  --tensor-parallel-size 4 \
  --pipeline-parallel-size 2 \
  --max-num-seqs 64 \
  --port 8000

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 64 requests in flight):
vllm bench serve \
  --model meta-llama/Llama-3.1-70B-Instruct \
  --host localhost \
  --port 8000 \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --max-concurrency 64 \
  --num-prompts 320 \
  --ignore-eos
