# TensorRT-LLM 1.1 flags (releases 1.1.0 and later; client/engines/trtllm.yaml): 3 instances on 12 GPUs.
# Set NODE0_ADDR..NODE1_ADDR to the nodes' addresses and run each command on the node it names.
# 3 servers: put them behind a load balancer.
# Set LB_ADDR and LB_PORT to the load balancer's address and port for the benchmark.
cat > shardplan-trtllm.yaml <<'EOF'
cuda_graph_config:
  max_batch_size: 128
  enable_padding: true
EOF

# Instance 0, node 0:
CUDA_VISIBLE_DEVICES=0,1,2,3 trtllm-serve openai/gpt-oss-120b \
  --backend pytorch \
  --tp_size 4 \
  --pp_size 1 \
  --ep_size 4 \
  --max_batch_size 128 \
  --num_postprocess_workers 4 \
  --config shardplan-trtllm.yaml \
  --host 0.0.0.0 \
  --port 8000

# Instance 1, node 0:
CUDA_VISIBLE_DEVICES=4,5,6,7 trtllm-serve openai/gpt-oss-120b \
  --backend pytorch \
  --tp_size 4 \
  --pp_size 1 \
  --ep_size 4 \
  --max_batch_size 128 \
  --num_postprocess_workers 4 \
  --config shardplan-trtllm.yaml \
  --host 0.0.0.0 \
  --port 8001

# Instance 2, node 1:
CUDA_VISIBLE_DEVICES=0,1,2,3 trtllm-serve openai/gpt-oss-120b \
  --backend pytorch \
  --tp_size 4 \
  --pp_size 1 \
  --ep_size 4 \
  --max_batch_size 128 \
  --num_postprocess_workers 4 \
  --config shardplan-trtllm.yaml \
  --host 0.0.0.0 \
  --port 8000

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 384 requests in flight: 128 per instance on 3 instances) through the load balancer in front of them:
aiperf profile \
  --model openai/gpt-oss-120b \
  --url $LB_ADDR:$LB_PORT \
  --endpoint-type chat \
  --streaming \
  --synthetic-input-tokens-mean 1024 \
  --synthetic-input-tokens-stddev 0 \
  --output-tokens-mean 1024 \
  --output-tokens-stddev 0 \
  --extra-inputs ignore_eos:true \
  --extra-inputs min_tokens:1024 \
  --concurrency 384 \
  --request-count 1920
