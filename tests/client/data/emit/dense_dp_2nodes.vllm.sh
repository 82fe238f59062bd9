# vLLM 0.12 flags (releases 0.12.0 and later; client/engines/vllm.yaml): 1 instance on 16 GPUs.
# Set NODE0_ADDR..NODE1_ADDR to the nodes' addresses and run each command on the node it names.

# node 0 (head):
vllm serve meta-llama/Llama-3.1-70B-Instruct \
  --tensor-parallel-size 8 \
  --pipeline-parallel-size 1 \
  --data-parallel-size 2 \
  --max-num-seqs 256 \
  --data-parallel-size-local 1 \
  --data-parallel-address $NODE0_ADDR \
  --data-parallel-rpc-port 13345 \
  --port 8000

# node 1 (headless):
vllm serve meta-llama/Llama-3.1-70B-Instruct \
  --tensor-parallel-size 8 \
  --pipeline-parallel-size 1 \
  --data-parallel-size 2 \
  --max-num-seqs 256 \
  --data-parallel-size-local 1 \
  --data-parallel-start-rank 1 \
  --data-parallel-address $NODE0_ADDR \
  --data-parallel-rpc-port 13345 \
  --headless

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 512 requests in flight):
vllm bench serve \
  --model meta-llama/Llama-3.1-70B-Instruct \
  --host $NODE0_ADDR \
  --port 8000 \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --max-concurrency 512 \
  --num-prompts 2560 \
  --ignore-eos
