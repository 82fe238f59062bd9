# TensorRT-LLM 1.1 flags (releases 1.1.0 and later; client/engines/trtllm.yaml): 1 instance on 8 GPUs.
# nvidia/Kimi-K2.5-NVFP4 is NVIDIA's NVFP4 checkpoint of moonshotai/Kimi-K2.5 (the engine reads its quantization from the checkpoint): the weights the prediction prices on FP4 tensor cores.
cat > shardplan-trtllm.yaml <<'EOF'
enable_attention_dp: true
kv_cache_config:
  dtype: fp8
cuda_graph_config:
  max_batch_size: 32
  enable_padding: true
EOF

# node 0:
trtllm-serve nvidia/Kimi-K2.5-NVFP4 \
  --backend pytorch \
  --tp_size 8 \
  --pp_size 1 \
  --ep_size 8 \
  --max_batch_size 32 \
  --num_postprocess_workers 4 \
  --config shardplan-trtllm.yaml \
  --host 0.0.0.0 \
  --port 8000

# Benchmark that checks the prediction (ISL 1024, OSL 1024, 256 requests in flight):
aiperf profile \
  --model nvidia/Kimi-K2.5-NVFP4 \
  --url localhost:8000 \
  --endpoint-type chat \
  --streaming \
  --synthetic-input-tokens-mean 1024 \
  --synthetic-input-tokens-stddev 0 \
  --output-tokens-mean 1024 \
  --output-tokens-stddev 0 \
  --extra-inputs ignore_eos:true \
  --extra-inputs min_tokens:1024 \
  --concurrency 256 \
  --request-count 1280
