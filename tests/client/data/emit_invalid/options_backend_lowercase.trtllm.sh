# Invalid: cache_transceiver_config.backend spelt as before TensorRT-LLM's uppercase names.
cat > shardplan-trtllm-ctx.yaml <<'EOF'
tensor_parallel_size: 4
pipeline_parallel_size: 1
max_batch_size: 16
max_num_tokens: 16384
disable_overlap_scheduler: true
cache_transceiver_config:
  backend: ucx
  max_tokens_in_buffer: 1024
EOF
