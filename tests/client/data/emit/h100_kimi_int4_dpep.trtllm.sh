# stderr: warning: TensorRT-LLM cannot launch this plan's layout (the server's capability rules allow: vllm, sglang); plan again with --engine trtllm, or emit for one of those.
