# TensorRT-LLM 1.1 flags (releases 1.1.0 and later; client/engines/trtllm.yaml): 2 instances on 16 GPUs.
# Set NODE0_ADDR..NODE2_ADDR to the nodes' addresses and run each command on the node it names.
# 2 servers: put them behind a load balancer.

# Instance 0, node 0:
trtllm-serve meta-llama/Llama-3.1-70B-Instruct \
  --backend pytorch \
  --tp_size 8 \
  --pp_size 1 \
  --max_batch_size 128 \
  --host 0.0.0.0 \
  --port 8000

# Instance 1, one MPI world over nodes 1-2, started from node 1:
mpirun -np 8 -H $NODE1_ADDR:4,$NODE2_ADDR:4 trtllm-llmapi-launch trtllm-serve meta-llama/Llama-3.1-70B-Instruct \
  --backend pytorch \
  --tp_size 8 \
  --pp_size 1 \
  --max_batch_size 128 \
  --host 0.0.0.0 \
  --port 8000

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 128 requests in flight per instance): run it against each instance, or at 256 through the load balancer.
aiperf profile \
  --model meta-llama/Llama-3.1-70B-Instruct \
  --url $NODE0_ADDR:8000 \
  --endpoint-type chat \
  --streaming \
  --synthetic-input-tokens-mean 1024 \
  --synthetic-input-tokens-stddev 0 \
  --output-tokens-mean 1024 \
  --output-tokens-stddev 0 \
  --concurrency 128 \
  --request-count 640
