// Names, parsing and small helpers for the compact simulator types
// (simulator/types.h).
#include "simulator/types.h"

#include <cstddef>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "proto/enum_names.h"
#include "simulator/user_text.h"

namespace shardplan::simulator {
namespace {

constexpr absl::string_view kDtypeNames[kNumDtypes] = {"bf16", "fp8", "fp4"};
constexpr absl::string_view kOpKindNames[kNumOpKinds] = {
    "embedding", "qkv",    "attention", "attn_out",    "mlp_up",
    "mlp_down",  "router", "expert_up", "expert_down", "lm_head"};
constexpr absl::string_view kShardDimNames[kNumShardDims] = {
    "column", "row", "replicate", "batch", "sequence"};
constexpr absl::string_view kBottleneckNames[] = {"compute", "memory",
                                                  "communication", "pipeline"};

// Finds `name` in `names`; on failure the message names the field, the value
// and the accepted spellings.
template <typename Enum, size_t N>
absl::StatusOr<Enum> ParseName(absl::string_view name,
                               absl::string_view field_path,
                               const absl::string_view (&names)[N],
                               absl::string_view what) {
  if (std::optional<Enum> value = EnumFromName<Enum>(name, names)) {
    return *value;
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("%s: unknown %s %s; expected one of %s", field_path, what,
                      QuoteUserText(name), absl::StrJoin(names, ", ")));
}

double Gb(double bytes) { return bytes / 1e9; }

}  // namespace

double BytesPerElement(Dtype dtype) {
  switch (dtype) {
    case Dtype::kBf16:
      return 2.0;
    case Dtype::kFp8:
      return 1.0;
    case Dtype::kFp4:
      return 0.5;
  }
  return 2.0;
}

// Every engine's FP4 KV cache stores a one-byte block scale per 16 values
// beside the packed 4-bit data, and its attention kernels read both:
// - vLLM nvfp4: FlashInferBackend.get_kv_cache_shape gives the last dim
//   nvfp4_kv_cache_full_dim(head_size) = head_size / 2 + head_size / 16
//   ("fp4 data + fp8 block scales in last dim"), vllm/v1/attention/backends/
//   flashinfer.py of https://github.com/vllm-project/vllm; the function and
//   nvfp4_split_data_scale, which views the scale part as float8_e4m3fn, are
//   in vllm/utils/torch_utils.py at commit
//   0024350b5da3ad174435e62a15273c0d3caba57b;
// - TensorRT-LLM nvfp4: the KV cache manager adds block-scale pools with
//   kQuantBlockSizeNVFP4 = 16 (FP8 E4M3 scales) when the cache dtype is FP4,
//   cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp of
//   https://github.com/NVIDIA/TensorRT-LLM;
// - SGLang fp4_e2m1: MHATokenToKVPoolFP4 and MLATokenToKVPoolFP4 allocate
//   uint8 k/v scale buffers of (n * k) / 16 per token (scale_block_size = 16,
//   an exponent byte, E8M0-like), python/sglang/srt/mem_cache/memory_pool.py
//   at
//   https://github.com/sgl-project/sglang/blob/14c3feee2390a7b5a06accc7af651bde8c5211c6/python/sglang/srt/mem_cache/memory_pool.py.
//   Its --kv-cache-dtype help calls the format "mxfp4", but the blocks are
//   not OCP MX's 32 values: KVFP4QuantizeUtil.batched_quantize views the
//   tensor as [B, M*N/16, 16] and writes one uint8 exponent (scale_exp + 127)
//   per block,
//   https://github.com/sgl-project/sglang/blob/0e6b6cf0ac719aca12987b393d17e8caaabcaa87/python/sglang/srt/layers/quantization/kvfp4_tensor.py#L45-L51,
//   so SGLang's cache is as large as the NVFP4 ones.
constexpr double kFp4KvCacheBytesPerElement = 0.5 + 1.0 / 16;

double KvCacheBytesPerElement(Dtype dtype) {
  return dtype == Dtype::kFp4 ? kFp4KvCacheBytesPerElement
                              : BytesPerElement(dtype);
}

absl::string_view DtypeName(Dtype dtype) {
  return EnumName(dtype, kDtypeNames, "unknown");
}

absl::StatusOr<Dtype> ParseDtype(absl::string_view name,
                                 absl::string_view field_path, Dtype fallback) {
  if (name.empty()) return fallback;
  return ParseName<Dtype>(name, field_path, kDtypeNames, "dtype");
}

absl::string_view OpKindName(OpKind op) {
  return EnumName(op, kOpKindNames, "unknown");
}

absl::StatusOr<OpKind> ParseOpKind(absl::string_view name,
                                   absl::string_view field_path) {
  return ParseName<OpKind>(name, field_path, kOpKindNames, "operator");
}

absl::string_view ShardDimName(ShardDim dim) {
  return EnumName(dim, kShardDimNames, "unknown");
}

absl::StatusOr<ShardDim> ParseShardDim(absl::string_view name,
                                       absl::string_view field_path) {
  return ParseName<ShardDim>(name, field_path, kShardDimNames, "dim");
}

ShardDims MegatronShardDims() {
  ShardDims dims{};
  dims[static_cast<int>(OpKind::kEmbedding)] = ShardDim::kRow;
  dims[static_cast<int>(OpKind::kQkv)] = ShardDim::kColumn;
  dims[static_cast<int>(OpKind::kAttention)] = ShardDim::kColumn;
  dims[static_cast<int>(OpKind::kAttnOut)] = ShardDim::kRow;
  dims[static_cast<int>(OpKind::kMlpUp)] = ShardDim::kColumn;
  dims[static_cast<int>(OpKind::kMlpDown)] = ShardDim::kRow;
  dims[static_cast<int>(OpKind::kRouter)] = ShardDim::kReplicate;
  dims[static_cast<int>(OpKind::kExpertUp)] = ShardDim::kColumn;
  dims[static_cast<int>(OpKind::kExpertDown)] = ShardDim::kRow;
  dims[static_cast<int>(OpKind::kLmHead)] = ShardDim::kColumn;
  return dims;
}

LayerParams LayerParamsOf(const ModelDims& m) {
  LayerParams p;
  const double h = m.hidden;
  if (m.is_mla()) {
    const double qk_head =
        static_cast<double>(m.qk_nope_head_dim) + m.qk_rope_head_dim;
    p.q = m.q_lora_rank > 0 ? h * m.q_lora_rank +
                                  double{1} * m.q_lora_rank * m.heads * qk_head
                            : h * m.heads * qk_head;
    const double kv_down =
        h * (static_cast<double>(m.kv_lora_rank) + m.qk_rope_head_dim);
    const double kv_up =
        static_cast<double>(m.kv_lora_rank) * m.heads *
        (static_cast<double>(m.qk_nope_head_dim) + m.v_head_dim);
    p.kv = kv_down + kv_up;
    p.attn_out = static_cast<double>(m.heads) * m.v_head_dim * h;
  } else {
    p.q = h * m.heads * m.head_dim * (m.attention_output_gate ? 2.0 : 1.0);
    p.kv = 2.0 * h * m.kv_heads * m.head_dim;
    p.attn_out = static_cast<double>(m.heads) * m.head_dim * h;
  }
  if (m.is_sparse_attention()) {
    // The indexer: query up-projection from the q latent (or the hidden
    // state), one shared key projection, per-head weights.
    const double q_in = m.q_lora_rank > 0 ? m.q_lora_rank : h;
    p.q += q_in * m.index_n_heads * m.index_head_dim + h * m.index_n_heads;
    p.kv += h * m.index_head_dim;
  }
  if (m.is_hybrid() && m.layers > 0) {
    // Gated DeltaNet: input projections to q, k (key heads) and v, z (value
    // heads) plus the per-head beta and alpha, a depthwise convolution over
    // q, k, v, and the output projection. Per-layer figures are the mean over
    // the layers, so the totals hold.
    const double qk =
        static_cast<double>(m.linear_num_key_heads) * m.linear_key_head_dim;
    const double v =
        static_cast<double>(m.linear_num_value_heads) * m.linear_value_head_dim;
    const double lin_q = h * qk;
    const double lin_kv = h * (qk + 2.0 * v + 2.0 * m.linear_num_value_heads) +
                          (2.0 * qk + v) * m.linear_conv_kernel_dim;
    const double lin_out = v * h;
    const double full =
        static_cast<double>(m.full_attention_layers()) / m.layers;
    p.q = full * p.q + (1 - full) * lin_q;
    p.kv = full * p.kv + (1 - full) * lin_kv;
    p.attn_out = full * p.attn_out + (1 - full) * lin_out;
  }
  p.mlp_up = 2.0 * h * m.intermediate;
  p.mlp_down = h * m.intermediate;
  p.router = h * m.experts;
  p.expert_up = 2.0 * h * m.moe_intermediate;
  p.expert_down = h * m.moe_intermediate;
  p.embedding_table = static_cast<double>(m.vocab) * m.hidden;
  return p;
}

namespace {

double ModelParams(const ModelDims& m, int experts_counted) {
  const LayerParams p = LayerParamsOf(m);
  const double attention = p.q + p.kv + p.attn_out;
  const double dense_mlp = p.mlp_up + p.mlp_down;
  const double expert = p.expert_up + p.expert_down;
  const double moe_mlp =
      (static_cast<double>(experts_counted) + m.shared_experts) * expert +
      p.router;
  const double embedding =
      m.tie_embeddings ? p.embedding_table : 2.0 * p.embedding_table;
  return m.layers * attention + m.dense_layers() * dense_mlp +
         m.moe_layers() * moe_mlp + embedding;
}

}  // namespace

double ModelDims::TotalParams() const { return ModelParams(*this, experts); }

double ModelDims::ActiveParams() const {
  return ModelParams(*this, experts_per_token);
}

bool PrefillLayout::operator==(const PrefillLayout& other) const {
  return dp == other.dp && tp == other.tp && pp == other.pp && ep == other.ep &&
         dims == other.dims && micro_batches == other.micro_batches &&
         batch_size == other.batch_size;
}

bool PlanDims::operator==(const PlanDims& other) const {
  if (disaggregated != other.disaggregated) return false;
  if (disaggregated && (prefill != other.prefill ||
                        prefill_instances != other.prefill_instances ||
                        decode_instances != other.decode_instances)) {
    return false;
  }
  if (replicas != other.replicas || dp != other.dp || tp != other.tp ||
      pp != other.pp || ep != other.ep || dims != other.dims ||
      micro_batches != other.micro_batches || batch_size != other.batch_size ||
      num_stage_layers != other.num_stage_layers) {
    return false;
  }
  const int n = num_stage_layers < 0                    ? 0
                : num_stage_layers > kMaxPipelineStages ? kMaxPipelineStages
                                                        : num_stage_layers;
  for (int i = 0; i < n; ++i) {
    if (stage_layers[i] != other.stage_layers[i]) return false;
  }
  return true;
}

absl::string_view BottleneckName(Bottleneck b) {
  return EnumName(b, kBottleneckNames, "unknown");
}

std::string InfeasibleReasonText(const Evaluation& e) {
  switch (e.reason) {
    case InfeasibleReason::kNone:
      return e.feasible ? "" : "infeasible";
    case InfeasibleReason::kWeightsExceedMemory:
      return absl::StrFormat("weights need %.1f GB per GPU, %.1f GB available",
                             Gb(e.reason_value), Gb(e.reason_limit));
    case InfeasibleReason::kKvCacheExceedsMemory:
      if (e.batch_per_rank > 0 && e.batch_per_rank != e.batch_size) {
        return absl::StrFormat(
            "KV cache for batch %d (%d per attention rank) needs %.1f GB per "
            "GPU beside %.1f GB of weights, %.1f GB available",
            e.batch_size, e.batch_per_rank, Gb(e.reason_value),
            Gb(e.weights_bytes), Gb(e.reason_limit));
      }
      return absl::StrFormat(
          "KV cache for batch %d needs %.1f GB per GPU beside %.1f GB of "
          "weights, %.1f GB "
          "available",
          e.batch_size, Gb(e.reason_value), Gb(e.weights_bytes),
          Gb(e.reason_limit));
    case InfeasibleReason::kTtftSlo:
      return absl::StrFormat("TTFT %.0f ms exceeds the %.0f ms SLO",
                             e.reason_value * 1e3, e.reason_limit * 1e3);
    case InfeasibleReason::kTpotSlo:
      return absl::StrFormat("TPOT %.1f ms exceeds the %.1f ms SLO",
                             e.reason_value * 1e3, e.reason_limit * 1e3);
    case InfeasibleReason::kNoBatchFits:
      return "no decode batch size fits in memory and meets the TTFT/TPOT SLOs";
    case InfeasibleReason::kTransitionTooSlow:
      return absl::StrFormat(
          "moving from the running plan takes %.1f s, over the %.1f s limit "
          "(options.max_transition_seconds)",
          e.reason_value, e.reason_limit);
    case InfeasibleReason::kEngineCannotRun:
      return "the workload's engine cannot launch this layout (see "
             "docs/cli-and-emit.md, engine capability)";
  }
  return "infeasible";
}

}  // namespace shardplan::simulator
