# TensorRT-LLM 1.1 flags (releases 1.1.0 and later; client/engines/trtllm.yaml): 4 instances on 8 GPUs.
# The FP4 KV cache (nvfp4) needs TensorRT-LLM 1.4.0 or later (https://github.com/NVIDIA/TensorRT-LLM/pull/11487).
# 4 servers: put them behind a load balancer.
# Set LB_ADDR and LB_PORT to the load balancer's address and port for the benchmark.
cat > shardplan-trtllm.yaml <<'EOF'
kv_cache_config:
  dtype: nvfp4
cuda_graph_config:
  max_batch_size: 128
  enable_padding: true
EOF

# Instance 0, node 0:
CUDA_VISIBLE_DEVICES=0,1 trtllm-serve nvidia/Llama-3.3-70B-Instruct-FP4 \
  --backend pytorch \
  --tp_size 2 \
  --pp_size 1 \
  --max_batch_size 128 \
  --num_postprocess_workers 4 \
  --config shardplan-trtllm.yaml \
  --host 0.0.0.0 \
  --port 8000

# Instance 1, node 0:
CUDA_VISIBLE_DEVICES=2,3 trtllm-serve nvidia/Llama-3.3-70B-Instruct-FP4 \
  --backend pytorch \
  --tp_size 2 \
  --pp_size 1 \
  --max_batch_size 128 \
  --num_postprocess_workers 4 \
  --config shardplan-trtllm.yaml \
  --host 0.0.0.0 \
  --port 8001

# Instance 2, node 0:
CUDA_VISIBLE_DEVICES=4,5 trtllm-serve nvidia/Llama-3.3-70B-Instruct-FP4 \
  --backend pytorch \
  --tp_size 2 \
  --pp_size 1 \
  --max_batch_size 128 \
  --num_postprocess_workers 4 \
  --config shardplan-trtllm.yaml \
  --host 0.0.0.0 \
  --port 8002

# Instance 3, node 0:
CUDA_VISIBLE_DEVICES=6,7 trtllm-serve nvidia/Llama-3.3-70B-Instruct-FP4 \
  --backend pytorch \
  --tp_size 2 \
  --pp_size 1 \
  --max_batch_size 128 \
  --num_postprocess_workers 4 \
  --config shardplan-trtllm.yaml \
  --host 0.0.0.0 \
  --port 8003

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 512 requests in flight: 128 per instance on 4 instances) through the load balancer in front of them:
aiperf profile \
  --model nvidia/Llama-3.3-70B-Instruct-FP4 \
  --url $LB_ADDR:$LB_PORT \
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
