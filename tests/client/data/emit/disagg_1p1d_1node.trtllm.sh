# TensorRT-LLM 1.1 flags (releases 1.1.0 and later; client/engines/trtllm.yaml): disaggregated 1P1D (1 prefill instance of 4 GPUs, 1 decode instance of 4 GPUs, a router) on 8 GPUs.
# Context (prefill) servers' options; write this file on every node that runs one (every node of an MPI world):
cat > shardplan-trtllm-ctx.yaml <<'EOF'
cuda_graph_config:
  max_batch_size: 16
  enable_padding: true
tensor_parallel_size: 4
pipeline_parallel_size: 1
max_batch_size: 16
max_num_tokens: 16384
disable_overlap_scheduler: true
cache_transceiver_config:
  backend: UCX
  max_tokens_in_buffer: 1024
EOF
# Generation (decode) servers' options; write this file on every node that runs one (every node of an MPI world):
cat > shardplan-trtllm-gen.yaml <<'EOF'
cuda_graph_config:
  max_batch_size: 128
  enable_padding: true
tensor_parallel_size: 4
pipeline_parallel_size: 1
max_batch_size: 128
max_num_tokens: 128
cache_transceiver_config:
  backend: UCX
  max_tokens_in_buffer: 1024
EOF

# Prefill node 0:
CUDA_VISIBLE_DEVICES=0,1,2,3 trtllm-serve meta-llama/Llama-3.1-70B-Instruct \
  --backend pytorch \
  --tp_size 4 \
  --pp_size 1 \
  --max_batch_size 16 \
  --num_postprocess_workers 4 \
  --config shardplan-trtllm-ctx.yaml \
  --host 0.0.0.0 \
  --port 8001

# Decode node 0:
CUDA_VISIBLE_DEVICES=4,5,6,7 trtllm-serve meta-llama/Llama-3.1-70B-Instruct \
  --backend pytorch \
  --tp_size 4 \
  --pp_size 1 \
  --max_batch_size 128 \
  --num_postprocess_workers 4 \
  --config shardplan-trtllm-gen.yaml \
  --host 0.0.0.0 \
  --port 8002

# Router (trtllm-serve disaggregated), on node 0: its config lists the context and generation servers above.
cat > shardplan-trtllm-disagg.yaml <<EOF
hostname: localhost
port: 8000
context_servers:
  num_instances: 1
  urls:
    - "localhost:8001"
generation_servers:
  num_instances: 1
  urls:
    - "localhost:8002"
EOF
trtllm-serve disaggregated \
  -c shardplan-trtllm-disagg.yaml

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 128 requests in flight):
aiperf profile \
  --model meta-llama/Llama-3.1-70B-Instruct \
  --url localhost:8000 \
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
