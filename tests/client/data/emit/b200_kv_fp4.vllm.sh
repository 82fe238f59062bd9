# vLLM 0.12 flags (releases 0.12.0 and later; client/engines/vllm.yaml): 1 instance on 8 GPUs.
# The FP4 KV cache (nvfp4) needs vLLM 0.21.0 or later (https://github.com/vllm-project/vllm/pull/40177).
# Known issue (vLLM issue 49011, open): --kv-cache-dtype nvfp4 needs FlashInfer's trtllm-gen kernels for prefill and decode; without them the server refuses to start ("requires the SM100 trtllm-gen FlashInfer path") or, on releases without that check, fails at the first request (issue 43562): install flashinfer-cubin (vLLM's image has it) or let the server reach NVIDIA's artifactory.

# node 0:
vllm serve meta-llama/Llama-3.1-70B-Instruct \
  --tensor-parallel-size 8 \
  --pipeline-parallel-size 1 \
  --max-num-seqs 256 \
  --kv-cache-dtype nvfp4 \
  --port 8000

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 256 requests in flight):
vllm bench serve \
  --model meta-llama/Llama-3.1-70B-Instruct \
  --host localhost \
  --port 8000 \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --max-concurrency 256 \
  --num-prompts 1280 \
  --ignore-eos
