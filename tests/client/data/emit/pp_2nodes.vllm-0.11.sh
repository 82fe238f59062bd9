# vLLM 0.10 flags (releases 0.10.0 to before 0.12.0; client/engines/vllm.yaml): 1 instance on 16 GPUs.
# Set NODE0_ADDR..NODE1_ADDR to the nodes' addresses and run each command on the node it names.

# Ray cluster over nodes 0-1: `ray start --head --port=6379` on node 0, `ray start --address=$NODE0_ADDR:6379` on node(s) 1; then on node 0:
vllm serve meta-llama/Llama-3.1-405B-Instruct \
  --tensor-parallel-size 8 \
  --pipeline-parallel-size 2 \
  --max-num-seqs 128 \
  --quantization fp8 \
  --kv-cache-dtype fp8 \
  --distributed-executor-backend ray \
  --port 8000

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
