# vLLM 0.12 flags (releases 0.12.0 and later; client/engines/vllm.yaml): 1 instance on 8 GPUs.
# Set NODE0_ADDR..NODE1_ADDR to the nodes' addresses and run each command on the node it names.

# node 0 (head):
vllm serve Qwen/Qwen3.5-397B-A17B \
  --tensor-parallel-size 8 \
  --pipeline-parallel-size 1 \
  --enable-expert-parallel \
  --max-num-seqs 256 \
  --kv-cache-dtype fp8 \
  --nnodes 2 \
  --node-rank 0 \
  --master-addr $NODE0_ADDR \
  --port 8000

# node 1 (headless):
vllm serve Qwen/Qwen3.5-397B-A17B \
  --tensor-parallel-size 8 \
  --pipeline-parallel-size 1 \
  --enable-expert-parallel \
  --max-num-seqs 256 \
  --kv-cache-dtype fp8 \
  --nnodes 2 \
  --node-rank 1 \
  --master-addr $NODE0_ADDR \
  --headless

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 256 requests in flight):
vllm bench serve \
  --model Qwen/Qwen3.5-397B-A17B \
  --host $NODE0_ADDR \
  --port 8000 \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --max-concurrency 256 \
  --num-prompts 1280 \
  --ignore-eos
