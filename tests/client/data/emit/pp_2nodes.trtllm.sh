# stderr: warning: TensorRT-LLM takes the weight dtype from the checkpoint: serve an FP8-quantized checkpoint (e.g. one made with NVIDIA ModelOpt) instead of meta-llama/Llama-3.1-405B-Instruct.
# TensorRT-LLM 1.1 flags (releases 1.1.0 and later; client/engines/trtllm.yaml): 1 instance on 16 GPUs.
# Set NODE0_ADDR..NODE1_ADDR to the nodes' addresses and run each command on the node it names.
# shardplan-trtllm.yaml must exist at the same path on every node.
cat > shardplan-trtllm.yaml <<'EOF'
kv_cache_config:
  dtype: fp8
cuda_graph_config:
  max_batch_size: 128
  enable_padding: true
EOF

# one MPI world over nodes 0-1, started from node 0:
mpirun --allow-run-as-root -np 16 -H $NODE0_ADDR:8,$NODE1_ADDR:8 -x PATH -x LD_LIBRARY_PATH trtllm-llmapi-launch trtllm-serve meta-llama/Llama-3.1-405B-Instruct \
  --backend pytorch \
  --tp_size 8 \
  --pp_size 2 \
  --max_batch_size 128 \
  --num_postprocess_workers 4 \
  --config shardplan-trtllm.yaml \
  --host 0.0.0.0 \
  --port 8000

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 128 requests in flight):
aiperf profile \
  --model meta-llama/Llama-3.1-405B-Instruct \
  --url $NODE0_ADDR:8000 \
  --endpoint-type chat \
  --streaming \
  --synthetic-input-tokens-mean 1024 \
  --synthetic-input-tokens-stddev 0 \
  --output-tokens-mean 1024 \
  --output-tokens-stddev 0 \
  --extra-inputs ignore_eos:true \
  --extra-inputs min_tokens:1024 \
  --concurrency 128 \
  --request-count 640
