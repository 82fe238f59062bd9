# Invalid: num_instances does not match the URLs listed.
cat > shardplan-trtllm-disagg.yaml <<EOF
hostname: localhost
port: 8000
context_servers:
  num_instances: 2
  urls:
    - "localhost:8001"
generation_servers:
  num_instances: 1
  urls:
    - "localhost:8003"
EOF
