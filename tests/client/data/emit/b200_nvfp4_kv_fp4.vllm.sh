# vLLM 0.12 flags (releases 0.12.0 and later; client/engines/vllm.yaml): 4 instances on 8 GPUs.
# The FP4 KV cache (nvfp4) needs vLLM 0.21.0 or later (https://github.com/vllm-project/vllm/pull/40177).
# Known issue (vLLM issue 49011, open): --kv-cache-dtype nvfp4 needs FlashInfer's trtllm-gen kernels for prefill and decode; without them the server refuses to start ("requires the SM100 trtllm-gen FlashInfer path") or, on releases without that check, fails at the first request (issue 43562): install flashinfer-cubin (vLLM's image has it) or let the server reach NVIDIA's artifactory.
# 4 servers: put them behind a load balancer.
# Set LB_ADDR and LB_PORT to the load balancer's address and port for the benchmark.

# Instance 0, node 0:
CUDA_VISIBLE_DEVICES=0,1 vllm serve nvidia/Llama-3.3-70B-Instruct-FP4 \
  --tensor-parallel-size 2 \
  --pipeline-parallel-size 1 \
  --max-num-seqs 128 \
  --kv-cache-dtype nvfp4 \
  --port 8000

# Instance 1, node 0:
CUDA_VISIBLE_DEVICES=2,3 vllm serve nvidia/Llama-3.3-70B-Instruct-FP4 \
  --tensor-parallel-size 2 \
  --pipeline-parallel-size 1 \
  --max-num-seqs 128 \
  --kv-cache-dtype nvfp4 \
  --port 8001

# Instance 2, node 0:
CUDA_VISIBLE_DEVICES=4,5 vllm serve nvidia/Llama-3.3-70B-Instruct-FP4 \
  --tensor-parallel-size 2 \
  --pipeline-parallel-size 1 \
  --max-num-seqs 128 \
  --kv-cache-dtype nvfp4 \
  --port 8002

# Instance 3, node 0:
CUDA_VISIBLE_DEVICES=6,7 vllm serve nvidia/Llama-3.3-70B-Instruct-FP4 \
  --tensor-parallel-size 2 \
  --pipeline-parallel-size 1 \
  --max-num-seqs 128 \
  --kv-cache-dtype nvfp4 \
  --port 8003

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 512 requests in flight: 128 per instance on 4 instances) through the load balancer in front of them:
vllm bench serve \
  --model nvidia/Llama-3.3-70B-Instruct-FP4 \
  --host $LB_ADDR \
  --port $LB_PORT \
  --dataset-name random \
  --random-input-len 1024 \
  --random-output-len 1024 \
  --max-concurrency 512 \
  --num-prompts 2560 \
  --ignore-eos
