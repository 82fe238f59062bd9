# vLLM 0.12 flags (releases 0.12.0 and later; client/engines/vllm.yaml): 1 instance on 16 GPUs.
# Set NODE0_ADDR..NODE1_ADDR to the nodes' addresses and run each command on the node it names.
# moonshotai/Kimi-K2.5 stores 4-bit weights this GPU has no FP4 tensor cores for: the engine runs them on weight-only kernels (4-bit reads, BF16 math), as the prediction prices them; nvidia/Kimi-K2.5-NVFP4 needs FP4 tensor cores (Blackwell).

# node 0 (head):
vllm serve moonshotai/Kimi-K2.5 \
  --tensor-parallel-size 1 \
  --pipeline-parallel-size 1 \
  --data-parallel-size 16 \
  --enable-expert-parallel \
  --max-num-seqs 32 \
  --kv-cache-dtype fp8 \
  --all2all-backend deepep_low_latency \
  --data-parallel-size-local 8 \
  --data-parallel-address $NODE0_ADDR \
  --data-parallel-rpc-port 13345 \
  --port 8000

# node 1 (headless):
vllm serve moonshotai/Kimi-K2.5 \
  --tensor-parallel-size 1 \
  --pipeline-parallel-size 1 \
  --data-parallel-size 16 \
  --enable-expert-parallel \
  --max-num-seqs 32 \
  --kv-cache-dtype fp8 \
  --all2all-backend deepep_low_latency \
  --data-parallel-size-local 8 \
  --data-parallel-start-rank 8 \
  --data-parallel-address $NODE0_ADDR \
  --data-parallel-rpc-port 13345 \
  --headless

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 512 requests in flight):
vllm bench serve \
  --model moonshotai/Kimi-K2.5 \
  --host $NODE0_ADDR \
  --port 8000 \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --max-concurrency 512 \
  --num-prompts 2560 \
  --ignore-eos
