# TensorRT-LLM 1.1 flags (releases 1.1.0 and later; client/engines/trtllm.yaml): 1 instance on 8 GPUs.
# Set NODE0_ADDR..NODE1_ADDR to the nodes' addresses and run each command on the node it names.
# shardplan-trtllm.yaml must exist at the same path on every node.
cat > shardplan-trtllm.yaml <<'EOF'
kv_cache_config:
  dtype: fp8
cuda_graph_config:
  max_batch_size: 256
  enable_padding: true
EOF

# one MPI world over nodes 0-1, started from node 0:
mpirun --allow-run-as-root -np 8 -H $NODE0_ADDR:4,$NODE1_ADDR:4 -x PATH -x LD_LIBRARY_PATH trtllm-llmapi-launch trtllm-serve Qwen/Qwen3.5-397B-A17B \
  --backend pytorch \
  --tp_size 8 \
  --pp_size 1 \
  --ep_size 8 \
  --max_batch_size 256 \
  --num_postprocess_workers 4 \
  --config shardplan-trtllm.yaml \
  --host 0.0.0.0 \
  --port 8000

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 256 requests in flight):
aiperf profile \
  --model Qwen/Qwen3.5-397B-A17B \
  --url $NODE0_ADDR:8000 \
  --endpoint-type chat \
  --streaming \
  --synthetic-input-tokens-mean 1024 \
  --synthetic-input-tokens-stddev 0 \
  --output-tokens-mean 1024 \
  --output-tokens-stddev 0 \
  --extra-inputs ignore_eos:true \
  --extra-inputs min_tokens:1024 \
  --concurrency 256 \
  --request-count 1280
