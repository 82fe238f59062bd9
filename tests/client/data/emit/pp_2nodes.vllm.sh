# vLLM 0.12 flags (releases 0.12.0 and later; client/engines/vllm.yaml): 1 instance on 16 GPUs.
# Set NODE0_ADDR..NODE1_ADDR to the nodes' addresses and run each command on the node it names.

# node 0 (head):
vllm serve meta-llama/Llama-3.1-405B-Instruct \
  --tensor-parallel-size 8 \
  --pipeline-parallel-size 2 \
  --max-num-seqs 128 \
  --quantization fp8 \
  --kv-cache-dtype fp8 \
  --nnodes 2 \
  --node-rank 0 \
  --master-addr $NODE0_ADDR \
  --port 8000

# node 1 (headless):
vllm serve meta-llama/Llama-3.1-405B-Instruct \
  --tensor-parallel-size 8 \
  --pipeline-parallel-size 2 \
  --max-num-seqs 128 \
  --quantization fp8 \
  --kv-cache-dtype fp8 \
  --nnodes 2 \
  --node-rank 1 \
  --master-addr $NODE0_ADDR \
  --headless

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 128 requests in flight):
vllm bench serve \
  --model meta-llama/Llama-3.1-405B-Instruct \
  --host $NODE0_ADDR \
  --port 8000 \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --max-concurrency 128 \
  --num-prompts 640 \
  --ignore-eos
