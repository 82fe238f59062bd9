# vLLM 0.12 flags (releases 0.12.0 and later; client/engines/vllm.yaml): 1 instance on 32 GPUs.
# Set NODE0_ADDR..NODE3_ADDR to the nodes' addresses and run each command on the node it names.

# node 0 (head):
vllm serve deepseek-ai/DeepSeek-V3 \
  --tensor-parallel-size 1 \
  --pipeline-parallel-size 1 \
  --data-parallel-size 32 \
  --enable-expert-parallel \
  --max-num-seqs 32 \
  --all2all-backend deepep_low_latency \
  --data-parallel-size-local 8 \
  --data-parallel-address $NODE0_ADDR \
  --data-parallel-rpc-port 13345 \
  --port 8000

# node 1 (headless):
vllm serve deepseek-ai/DeepSeek-V3 \
  --tensor-parallel-size 1 \
  --pipeline-parallel-size 1 \
  --data-parallel-size 32 \
  --enable-expert-parallel \
  --max-num-seqs 32 \
  --all2all-backend deepep_low_latency \
  --data-parallel-size-local 8 \
  --data-parallel-start-rank 8 \
  --data-parallel-address $NODE0_ADDR \
  --data-parallel-rpc-port 13345 \
  --headless

# node 2 (headless):
vllm serve deepseek-ai/DeepSeek-V3 \
  --tensor-parallel-size 1 \
  --pipeline-parallel-size 1 \
  --data-parallel-size 32 \
  --enable-expert-parallel \
  --max-num-seqs 32 \
  --all2all-backend deepep_low_latency \
  --data-parallel-size-local 8 \
  --data-parallel-start-rank 16 \
  --data-parallel-address $NODE0_ADDR \
  --data-parallel-rpc-port 13345 \
  --headless

# node 3 (headless):
vllm serve deepseek-ai/DeepSeek-V3 \
  --tensor-parallel-size 1 \
  --pipeline-parallel-size 1 \
  --data-parallel-size 32 \
  --enable-expert-parallel \
  --max-num-seqs 32 \
  --all2all-backend deepep_low_latency \
  --data-parallel-size-local 8 \
  --data-parallel-start-rank 24 \
  --data-parallel-address $NODE0_ADDR \
  --data-parallel-rpc-port 13345 \
  --headless

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 1024 requests in flight):
vllm bench serve \
  --model deepseek-ai/DeepSeek-V3 \
  --host $NODE0_ADDR \
  --port 8000 \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --max-concurrency 1024 \
  --num-prompts 5120 \
  --ignore-eos
