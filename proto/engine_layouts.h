// The per-operator layouts the serving engines launch, shared by the plan
// space (policy/, through simulator/engine_capability.h: a request naming an
// engine is offered and priced only the layouts it launches) and the emitters
// (client/emit/: the warning for a plan built outside that space). Header-only;
// Abseil only.
//
// Every engine shards inside a tensor-parallel group the Megatron way: the
// embedding and the LM head split by vocabulary, column- then row-parallel
// linears, attention by heads, the MoE gate replicated (vLLM
// vllm/model_executor/layers/linear.py ColumnParallelLinear /
// RowParallelLinear, vocab_parallel_embedding.py VocabParallelEmbedding /
// ParallelLMHead; SGLang python/sglang/srt/layers/linear.py,
// vocab_parallel_embedding.py; TensorRT-LLM
// tensorrt_llm/_torch/modules/linear.py TensorParallelMode.COLUMN / ROW,
// embedding.py Embedding / LMHead). None takes a per-operator choice of
// another split: no sequence-split (context-parallel) embedding, linear or LM
// head, no batch-split linear outside attention. The one other layout is
// data-parallel attention (qkv, attention and attn_out all batch-split inside
// the group, the rest as above): SGLang's --enable-dp-attention for any model
// (python/sglang/srt/server_args.py enable_dp_attention; the attention TP
// group is tp_size / dp_size, python/sglang/srt/layers/dp_attention.py
// compute_dp_attention_world_info), vLLM's and TensorRT-LLM's only around MoE
// layers (vLLM docs/serving/data_parallel_deployment.md: "for MoE models ...
// attention layers data parallel, expert layers EP or TP"; a dense model's DP
// ranks are independent copies; TensorRT-LLM enable_attention_dp,
// tensorrt_llm/_torch/models/modeling_deepseekv3.py and modeling_qwen3_moe.py
// read mapping.enable_attention_dp around their MoE blocks).
#ifndef SHARDPLAN_PROTO_ENGINE_LAYOUTS_H_
#define SHARDPLAN_PROTO_ENGINE_LAYOUTS_H_

#include "absl/strings/string_view.h"

namespace shardplan {

// An operator and the dimension every engine splits it by inside a
// tensor-parallel (for experts: expert tensor-parallel) group, in the
// simulator's OpKind order (simulator/types.h MegatronShardDims).
struct EngineOpLayout {
  const char* op;
  const char* dim;
};
inline constexpr EngineOpLayout kEngineOpLayouts[] = {
    {"embedding", "row"},    {"qkv", "column"},       {"attention", "column"},
    {"attn_out", "row"},     {"mlp_up", "column"},    {"mlp_down", "row"},
    {"router", "replicate"}, {"expert_up", "column"}, {"expert_down", "row"},
    {"lm_head", "column"},
};
// The operators data-parallel attention splits by batch, all three together.
inline constexpr const char* kAttentionDpOps[] = {"qkv", "attention",
                                                  "attn_out"};
inline constexpr const char* kAttentionDpDim = "batch";

// Whether `engine` ("vllm", "sglang", "trtllm") runs data-parallel attention
// (kAttentionDpOps batch-split inside the tensor-parallel group) for a model
// that is (`moe`) or is not a mixture of experts.
inline bool EngineRunsAttentionDp(absl::string_view engine, bool moe) {
  return moe || engine == "sglang";
}

}  // namespace shardplan

#endif  // SHARDPLAN_PROTO_ENGINE_LAYOUTS_H_
