# TensorRT-LLM 1.1 flags (releases 1.1.0 and later; client/engines/trtllm.yaml): 2 instances on 16 GPUs.
# Set NODE0_ADDR..NODE1_ADDR to the nodes' addresses and run each command on the node it names.
# 2 servers: put them behind a load balancer.
# Set LB_ADDR and LB_PORT to the load balancer's address and port for the benchmark.
cat > shardplan-trtllm.yaml <<'EOF'
cuda_graph_config:
  max_batch_size: 256
  enable_padding: true
EOF

# Instance 0, node 0:
trtllm-serve meta-llama/Llama-3.1-70B-Instruct \
  --backend pytorch \
  --tp_size 8 \
  --pp_size 1 \
  --max_batch_size 256 \
  --num_postprocess_workers 4 \
  --config shardplan-trtllm.yaml \
  --host 0.0.0.0 \
  --port 8000

# Instance 1, node 1:
trtllm-serve meta-llama/Llama-3.1-70B-Instruct \
  --backend pytorch \
  --tp_size 8 \
  --pp_size 1 \
  --max_batch_size 256 \
  --num_postprocess_workers 4 \
  --config shardplan-trtllm.yaml \
  --host 0.0.0.0 \
  --port 8000

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 512 requests in flight: 256 per instance on 2 instances) through the load balancer in front of them:
aiperf profile \
  --model meta-llama/Llama-3.1-70B-Instruct \
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
