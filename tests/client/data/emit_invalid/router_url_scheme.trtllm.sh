# Invalid: router URLs with a scheme (the router splits each URL on ':').
cat > shardplan-trtllm-disagg.yaml <<EOF
hostname: localhost
port: 8000
context_servers:
  num_instances: 1
  urls:
    - "http://localhost:8001"
generation_servers:
  num_instances: 1
  urls:
    - "localhost:8002"
EOF
