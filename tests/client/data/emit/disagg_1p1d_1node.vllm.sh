# vLLM 0.12 flags (releases 0.12.0 and later; client/engines/vllm.yaml): disaggregated 1P1D (1 prefill instance of 4 GPUs, 1 decode instance of 4 GPUs, a router) on 8 GPUs.

# Prefill node 0:
CUDA_VISIBLE_DEVICES=0,1,2,3 VLLM_NIXL_SIDE_CHANNEL_PORT=5600 vllm serve meta-llama/Llama-3.1-70B-Instruct \
  --tensor-parallel-size 4 \
  --pipeline-parallel-size 1 \
  --max-num-seqs 16 \
  --port 8000 \
  --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}'

# Decode node 0:
CUDA_VISIBLE_DEVICES=4,5,6,7 VLLM_NIXL_SIDE_CHANNEL_PORT=5608 vllm serve meta-llama/Llama-3.1-70B-Instruct \
  --tensor-parallel-size 4 \
  --pipeline-parallel-size 1 \
  --max-num-seqs 128 \
  --port 8001 \
  --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}'

# Router, on node 0 (vLLM's reference proxy: run it from a vLLM checkout):
python tests/v1/kv_connector/nixl_integration/toy_proxy_server.py \
  --prefiller-hosts localhost \
  --prefiller-ports 8000 \
  --decoder-hosts localhost \
  --decoder-ports 8001 \
  --port 8192

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 128 requests in flight):
vllm bench serve \
  --model meta-llama/Llama-3.1-70B-Instruct \
  --host localhost \
  --port 8192 \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --max-concurrency 128 \
  --num-prompts 640 \
  --ignore-eos
