# vLLM 0.12 flags (releases 0.12.0 and later; client/engines/vllm.yaml): 1 instance on 64 GPUs.
# Set NODE0_ADDR..NODE15_ADDR to the nodes' addresses and run each command on the node it names.

# node 0 (head):
vllm serve zai-org/GLM-5 \
  --tensor-parallel-size 1 \
  --pipeline-parallel-size 1 \
  --data-parallel-size 64 \
  --enable-expert-parallel \
  --all2all-backend flashinfer_all2allv \
  --max-num-seqs 32 \
  --quantization fp8 \
  --kv-cache-dtype fp8_ds_mla \
  --data-parallel-size-local 4 \
  --data-parallel-address $NODE0_ADDR \
  --data-parallel-rpc-port 13345 \
  --port 8000

# node 1 (headless):
vllm serve zai-org/GLM-5 \
  --tensor-parallel-size 1 \
  --pipeline-parallel-size 1 \
  --data-parallel-size 64 \
  --enable-expert-parallel \
  --all2all-backend flashinfer_all2allv \
  --max-num-seqs 32 \
  --quantization fp8 \
  --kv-cache-dtype fp8_ds_mla \
  --data-parallel-size-local 4 \
  --data-parallel-start-rank 4 \
  --data-parallel-address $NODE0_ADDR \
  --data-parallel-rpc-port 13345 \
  --headless

# node 2 (headless):
vllm serve zai-org/GLM-5 \
  --tensor-parallel-size 1 \
  --pipeline-parallel-size 1 \
  --data-parallel-size 64 \
  --enable-expert-parallel \
  --all2all-backend flashinfer_all2allv \
  --max-num-seqs 32 \
  --quantization fp8 \
  --kv-cache-dtype fp8_ds_mla \
  --data-parallel-size-local 4 \
  --data-parallel-start-rank 8 \
  --data-parallel-address $NODE0_ADDR \
  --data-parallel-rpc-port 13345 \
  --headless

# node 3 (headless):
vllm serve zai-org/GLM-5 \
  --tensor-parallel-size 1 \
  --pipeline-parallel-size 1 \
  --data-parallel-size 64 \
  --enable-expert-parallel \
  --all2all-backend flashinfer_all2allv \
  --max-num-seqs 32 \
  --quantization fp8 \
  --kv-cache-dtype fp8_ds_mla \
  --data-parallel-size-local 4 \
  --data-parallel-start-rank 12 \
  --data-parallel-address $NODE0_ADDR \
  --data-parallel-rpc-port 13345 \
  --headless

# node 4 (headless):
vllm serve zai-org/GLM-5 \
  --tensor-parallel-size 1 \
  --pipeline-parallel-size 1 \
  --data-parallel-size 64 \
  --enable-expert-parallel \
  --all2all-backend flashinfer_all2allv \
  --max-num-seqs 32 \
  --quantization fp8 \
  --kv-cache-dtype fp8_ds_mla \
  --data-parallel-size-local 4 \
  --data-parallel-start-rank 16 \
  --data-parallel-address $NODE0_ADDR \
  --data-parallel-rpc-port 13345 \
  --headless

# node 5 (headless):
vllm serve zai-org/GLM-5 \
  --tensor-parallel-size 1 \
  --pipeline-parallel-size 1 \
  --data-parallel-size 64 \
  --enable-expert-parallel \
  --all2all-backend flashinfer_all2allv \
  --max-num-seqs 32 \
  --quantization fp8 \
  --kv-cache-dtype fp8_ds_mla \
  --data-parallel-size-local 4 \
  --data-parallel-start-rank 20 \
  --data-parallel-address $NODE0_ADDR \
  --data-parallel-rpc-port 13345 \
  --headless

# node 6 (headless):
vllm serve zai-org/GLM-5 \
  --tensor-parallel-size 1 \
  --pipeline-parallel-size 1 \
  --data-parallel-size 64 \
  --enable-expert-parallel \
  --all2all-backend flashinfer_all2allv \
  --max-num-seqs 32 \
  --quantization fp8 \
  --kv-cache-dtype fp8_ds_mla \
  --data-parallel-size-local 4 \
  --data-parallel-start-rank 24 \
  --data-parallel-address $NODE0_ADDR \
  --data-parallel-rpc-port 13345 \
  --headless

# node 7 (headless):
vllm serve zai-org/GLM-5 \
  --tensor-parallel-size 1 \
  --pipeline-parallel-size 1 \
  --data-parallel-size 64 \
  --enable-expert-parallel \
  --all2all-backend flashinfer_all2allv \
  --max-num-seqs 32 \
  --quantization fp8 \
  --kv-cache-dtype fp8_ds_mla \
  --data-parallel-size-local 4 \
  --data-parallel-start-rank 28 \
  --data-parallel-address $NODE0_ADDR \
  --data-parallel-rpc-port 13345 \
  --headless

# node 8 (headless):
vllm serve zai-org/GLM-5 \
  --tensor-parallel-size 1 \
  --pipeline-parallel-size 1 \
  --data-parallel-size 64 \
  --enable-expert-parallel \
  --all2all-backend flashinfer_all2allv \
  --max-num-seqs 32 \
  --quantization fp8 \
  --kv-cache-dtype fp8_ds_mla \
  --data-parallel-size-local 4 \
  --data-parallel-start-rank 32 \
  --data-parallel-address $NODE0_ADDR \
  --data-parallel-rpc-port 13345 \
  --headless

# node 9 (headless):
vllm serve zai-org/GLM-5 \
  --tensor-parallel-size 1 \
  --pipeline-parallel-size 1 \
  --data-parallel-size 64 \
  --enable-expert-parallel \
  --all2all-backend flashinfer_all2allv \
  --max-num-seqs 32 \
  --quantization fp8 \
  --kv-cache-dtype fp8_ds_mla \
  --data-parallel-size-local 4 \
  --data-parallel-start-rank 36 \
  --data-parallel-address $NODE0_ADDR \
  --data-parallel-rpc-port 13345 \
  --headless

# node 10 (headless):
vllm serve zai-org/GLM-5 \
  --tensor-parallel-size 1 \
  --pipeline-parallel-size 1 \
  --data-parallel-size 64 \
  --enable-expert-parallel \
  --all2all-backend flashinfer_all2allv \
  --max-num-seqs 32 \
  --quantization fp8 \
  --kv-cache-dtype fp8_ds_mla \
  --data-parallel-size-local 4 \
  --data-parallel-start-rank 40 \
  --data-parallel-address $NODE0_ADDR \
  --data-parallel-rpc-port 13345 \
  --headless

# node 11 (headless):
vllm serve zai-org/GLM-5 \
  --tensor-parallel-size 1 \
  --pipeline-parallel-size 1 \
  --data-parallel-size 64 \
  --enable-expert-parallel \
  --all2all-backend flashinfer_all2allv \
  --max-num-seqs 32 \
  --quantization fp8 \
  --kv-cache-dtype fp8_ds_mla \
  --data-parallel-size-local 4 \
  --data-parallel-start-rank 44 \
  --data-parallel-address $NODE0_ADDR \
  --data-parallel-rpc-port 13345 \
  --headless

# node 12 (headless):
vllm serve zai-org/GLM-5 \
  --tensor-parallel-size 1 \
  --pipeline-parallel-size 1 \
  --data-parallel-size 64 \
  --enable-expert-parallel \
  --all2all-backend flashinfer_all2allv \
  --max-num-seqs 32 \
  --quantization fp8 \
  --kv-cache-dtype fp8_ds_mla \
  --data-parallel-size-local 4 \
  --data-parallel-start-rank 48 \
  --data-parallel-address $NODE0_ADDR \
  --data-parallel-rpc-port 13345 \
  --headless

# node 13 (headless):
vllm serve zai-org/GLM-5 \
  --tensor-parallel-size 1 \
  --pipeline-parallel-size 1 \
  --data-parallel-size 64 \
  --enable-expert-parallel \
  --all2all-backend flashinfer_all2allv \
  --max-num-seqs 32 \
  --quantization fp8 \
  --kv-cache-dtype fp8_ds_mla \
  --data-parallel-size-local 4 \
  --data-parallel-start-rank 52 \
  --data-parallel-address $NODE0_ADDR \
  --data-parallel-rpc-port 13345 \
  --headless

# node 14 (headless):
vllm serve zai-org/GLM-5 \
  --tensor-parallel-size 1 \
  --pipeline-parallel-size 1 \
  --data-parallel-size 64 \
  --enable-expert-parallel \
  --all2all-backend flashinfer_all2allv \
  --max-num-seqs 32 \
  --quantization fp8 \
  --kv-cache-dtype fp8_ds_mla \
  --data-parallel-size-local 4 \
  --data-parallel-start-rank 56 \
  --data-parallel-address $NODE0_ADDR \
  --data-parallel-rpc-port 13345 \
  --headless

# node 15 (headless):
vllm serve zai-org/GLM-5 \
  --tensor-parallel-size 1 \
  --pipeline-parallel-size 1 \
  --data-parallel-size 64 \
  --enable-expert-parallel \
  --all2all-backend flashinfer_all2allv \
  --max-num-seqs 32 \
  --quantization fp8 \
  --kv-cache-dtype fp8_ds_mla \
  --data-parallel-size-local 4 \
  --data-parallel-start-rank 60 \
  --data-parallel-address $NODE0_ADDR \
  --data-parallel-rpc-port 13345 \
  --headless

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 2048 requests in flight):
vllm bench serve \
  --model zai-org/GLM-5 \
  --host $NODE0_ADDR \
  --port 8000 \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --max-concurrency 2048 \
  --num-prompts 10240 \
  --ignore-eos
