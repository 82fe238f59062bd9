# vLLM 0.12 flags (releases 0.12.0 and later; client/engines/vllm.yaml): disaggregated 2P1D (2 prefill instances of 8 GPUs, 1 decode instance of 16 GPUs, a router) on 32 GPUs.
# Set NODE0_ADDR..NODE3_ADDR to the nodes' addresses and run each command on the node it names.

# Prefill instance 0, node 0:
VLLM_NIXL_SIDE_CHANNEL_PORT=5600 VLLM_NIXL_SIDE_CHANNEL_HOST=$NODE0_ADDR vllm serve deepseek-ai/DeepSeek-V3 \
  --tensor-parallel-size 1 \
  --pipeline-parallel-size 1 \
  --data-parallel-size 8 \
  --enable-expert-parallel \
  --max-num-seqs 4 \
  --port 8000 \
  --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}'

# Prefill instance 1, node 1:
VLLM_NIXL_SIDE_CHANNEL_PORT=5600 VLLM_NIXL_SIDE_CHANNEL_HOST=$NODE1_ADDR vllm serve deepseek-ai/DeepSeek-V3 \
  --tensor-parallel-size 1 \
  --pipeline-parallel-size 1 \
  --data-parallel-size 8 \
  --enable-expert-parallel \
  --max-num-seqs 4 \
  --port 8000 \
  --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}'

# Decode node 2 (head):
VLLM_NIXL_SIDE_CHANNEL_PORT=5600 VLLM_NIXL_SIDE_CHANNEL_HOST=$NODE2_ADDR vllm serve deepseek-ai/DeepSeek-V3 \
  --tensor-parallel-size 1 \
  --pipeline-parallel-size 1 \
  --data-parallel-size 16 \
  --enable-expert-parallel \
  --max-num-seqs 16 \
  --all2all-backend deepep_low_latency \
  --data-parallel-size-local 8 \
  --data-parallel-address $NODE2_ADDR \
  --data-parallel-rpc-port 13345 \
  --port 8000 \
  --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}'

# Decode node 3 (headless):
VLLM_NIXL_SIDE_CHANNEL_PORT=5600 VLLM_NIXL_SIDE_CHANNEL_HOST=$NODE3_ADDR vllm serve deepseek-ai/DeepSeek-V3 \
  --tensor-parallel-size 1 \
  --pipeline-parallel-size 1 \
  --data-parallel-size 16 \
  --enable-expert-parallel \
  --max-num-seqs 16 \
  --all2all-backend deepep_low_latency \
  --data-parallel-size-local 8 \
  --data-parallel-start-rank 8 \
  --data-parallel-address $NODE2_ADDR \
  --data-parallel-rpc-port 13345 \
  --headless \
  --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}'

# Router, on node 0 (vLLM's reference proxy: run it from a vLLM checkout):
python tests/v1/kv_connector/nixl_integration/toy_proxy_server.py \
  --prefiller-hosts $NODE0_ADDR $NODE1_ADDR \
  --prefiller-ports 8000 8000 \
  --decoder-hosts $NODE2_ADDR \
  --decoder-ports 8000 \
  --host 0.0.0.0 \
  --port 8192

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 256 requests in flight):
vllm bench serve \
  --model deepseek-ai/DeepSeek-V3 \
  --host $NODE0_ADDR \
  --port 8192 \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --max-concurrency 256 \
  --num-prompts 1280 \
  --ignore-eos
