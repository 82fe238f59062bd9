# TensorRT-LLM 1.1 flags (releases 1.1.0 and later; client/engines/trtllm.yaml): disaggregated 2P1D (2 prefill instances of 8 GPUs, 1 decode instance of 16 GPUs, a router) on 32 GPUs.
# Set NODE0_ADDR..NODE7_ADDR to the nodes' addresses and run each command on the node it names.
# Context (prefill) servers' options; write this file on every node that runs one (every node of an MPI world):
cat > shardplan-trtllm-ctx.yaml <<'EOF'
enable_attention_dp: true
kv_cache_config:
  dtype: fp8
cuda_graph_config:
  max_batch_size: 1
  enable_padding: true
tensor_parallel_size: 8
pipeline_parallel_size: 1
moe_expert_parallel_size: 8
max_batch_size: 1
max_num_tokens: 1280
disable_overlap_scheduler: true
cache_transceiver_config:
  backend: UCX
  max_tokens_in_buffer: 1024
EOF
# Generation (decode) servers' options; write this file on every node that runs one (every node of an MPI world):
cat > shardplan-trtllm-gen.yaml <<'EOF'
enable_attention_dp: true
kv_cache_config:
  dtype: fp8
cuda_graph_config:
  max_batch_size: 32
  enable_padding: true
tensor_parallel_size: 16
pipeline_parallel_size: 1
moe_expert_parallel_size: 16
max_batch_size: 32
max_num_tokens: 32
cache_transceiver_config:
  backend: UCX
  max_tokens_in_buffer: 1024
EOF

# Prefill instance 0, one MPI world over nodes 0-1, started from node 0:
mpirun --allow-run-as-root -np 8 -H $NODE0_ADDR:4,$NODE1_ADDR:4 -x PATH -x LD_LIBRARY_PATH trtllm-llmapi-launch trtllm-serve deepseek-ai/DeepSeek-V3.2 \
  --backend pytorch \
  --tp_size 8 \
  --pp_size 1 \
  --ep_size 8 \
  --max_batch_size 1 \
  --num_postprocess_workers 4 \
  --config shardplan-trtllm-ctx.yaml \
  --host 0.0.0.0 \
  --port 8001

# Prefill instance 1, one MPI world over nodes 2-3, started from node 2:
mpirun --allow-run-as-root -np 8 -H $NODE2_ADDR:4,$NODE3_ADDR:4 -x PATH -x LD_LIBRARY_PATH trtllm-llmapi-launch trtllm-serve deepseek-ai/DeepSeek-V3.2 \
  --backend pytorch \
  --tp_size 8 \
  --pp_size 1 \
  --ep_size 8 \
  --max_batch_size 1 \
  --num_postprocess_workers 4 \
  --config shardplan-trtllm-ctx.yaml \
  --host 0.0.0.0 \
  --port 8001

# Decode instance 0, one MPI world over nodes 4-7, started from node 4:
mpirun --allow-run-as-root -np 16 -H $NODE4_ADDR:4,$NODE5_ADDR:4,$NODE6_ADDR:4,$NODE7_ADDR:4 -x PATH -x LD_LIBRARY_PATH trtllm-llmapi-launch trtllm-serve deepseek-ai/DeepSeek-V3.2 \
  --backend pytorch \
  --tp_size 16 \
  --pp_size 1 \
  --ep_size 16 \
  --max_batch_size 32 \
  --num_postprocess_workers 4 \
  --config shardplan-trtllm-gen.yaml \
  --host 0.0.0.0 \
  --port 8001

# Router (trtllm-serve disaggregated), on node 0: its config lists the context and generation servers above.
cat > shardplan-trtllm-disagg.yaml <<EOF
hostname: 0.0.0.0
port: 8000
context_servers:
  num_instances: 2
  urls:
    - "$NODE0_ADDR:8001"
    - "$NODE2_ADDR:8001"
generation_servers:
  num_instances: 1
  urls:
    - "$NODE4_ADDR:8001"
EOF
trtllm-serve disaggregated \
  -c shardplan-trtllm-disagg.yaml

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 512 requests in flight):
aiperf profile \
  --model deepseek-ai/DeepSeek-V3.2 \
  --url $NODE0_ADDR:8000 \
  --endpoint-type chat \
  --streaming \
  --synthetic-input-tokens-mean 1024 \
  --synthetic-input-tokens-stddev 0 \
  --output-tokens-mean 1024 \
  --output-tokens-stddev 0 \
  --extra-inputs ignore_eos:true \
  --extra-inputs min_tokens:1024 \
  --concurrency 512 \
  --request-count 2560
