// The per-problem context: CostModel::Create checks the problem and
// precomputes the constants every evaluation reads (internal/cost_context.h).
#include "simulator/internal/cost_context.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "simulator/cost_model.h"
#include "simulator/internal/collectives.h"
#include "simulator/internal/serving.h"

namespace shardplan::simulator {
namespace {

// Bytes per weight element native FP4 GEMMs stream: the 4-bit values and
// their block scales, one FP8 E4M3 scale per 16 values for NVFP4 (4.5 bits,
// https://developer.nvidia.com/blog/introducing-nvfp4-for-efficient-and-accurate-low-precision-inference/).
// MXFP4 checkpoints (one E8M0 scale per 32 values, 4.25 bits, OCP
// Microscaling Formats v1.0) are charged the same: the dtype does not say
// which one a checkpoint uses.
constexpr double kNativeFp4StreamBytes = 0.5 + 1.0 / 16;

// Kernels a decode layer runs one after another (kernels the engine puts on
// its auxiliary stream overlap and are not counted), read in TensorRT-LLM's
// PyTorch backend, tensorrt_llm/_torch/modules/attention.py at
// https://github.com/NVIDIA/TensorRT-LLM/blob/00547a25ac61d28d1dabb2e47383a1af605ebb59/tensorrt_llm/_torch/modules/attention.py
// Both layers share input RMSNorm, output projection, post-attention RMSNorm
// and the MLP's up GEMM, activation and down GEMM (6).
// Grouped-query attention (Attention.forward, RoPE fused into the attention
// op): the fused QKV GEMM, the attention op's QKV preprocessing kernel (RoPE
// and KV-cache append) and its XQA/MMHA kernel: 3, 9 in all.
// MLA (MLA.forward_impl then forward_absorption_generation): the
// kv_a_proj_with_mqa GEMM, the q_a/kv_a RMSNorms (two streams, one step), the
// q_b_proj GEMM (the latent concat on the other stream), the absorbed k_b
// BMM, mla_rope_generation (RoPE and latent-cache append; on the main stream
// after the BMM when the KV cache is FP8, rope_stream = None), the MLA
// generation attention kernel and the v_b BMM: 7, 13 in all.
constexpr double kGqaDecodeLayerKernelSteps = 9;
constexpr double kMlaDecodeLayerKernelSteps = 13;
// DeepSeek sparse attention's indexer adds its own serial kernels to every
// decode layer, read in SGLang's Indexer.forward_cuda (decode under CUDA
// graphs, the dual-stream branch), python/sglang/srt/layers/attention/nsa/
// nsa_indexer.py at
// https://github.com/sgl-project/sglang/blob/005e8bf8abf447d93cd14427efbf0b10bf42a326/python/sglang/srt/layers/attention/nsa/nsa_indexer.py
// counted as the MLA layer's are (a GEMM is one kernel): on the auxiliary
// stream, which is longer than the main stream's head-gate projection that
// overlaps it, the wq_b and wk GEMMs, the key LayerNorm, RoPE, the two
// copies of the rotated dims back into the query and key, the two Hadamard
// rotations and the two FP8 activation quantisations (10); then, in series,
// the head-gate weights scaled by the query scale and the softmax scale (2),
// the indexer key-cache store (set_index_k_scale_buffer), DeepGEMM's
// fp8_paged_mqa_logits and the top-k transform (3): 15 in all.
constexpr double kSparseIndexerDecodeKernelSteps = 15;
// Hybrid models (Qwen3-Next, Qwen3.5) in SGLang under CUDA graphs, counted
// against SGLang's grouped-query attention block (QKV GEMM, RoPE, attention,
// output GEMM: 4). A Gated DeltaNet layer (Qwen3GatedDeltaNet.forward in
// python/sglang/srt/models/qwen3_next.py at
// https://github.com/sgl-project/sglang/blob/0201bc8059b1b7496d0ba03d5950285a854e4d0f/python/sglang/srt/models/qwen3_next.py,
// and GDNAttnBackend.forward_decode in
// python/sglang/srt/layers/attention/hybrid_linear_attn_backend.py) runs the
// in_proj_qkvz GEMM (in_proj_ba overlaps on the other stream),
// fused_qkvzba_split_reshape_cat, causal_conv1d_update,
// fused_sigmoid_gating_delta_rule_update, the gated RMSNorm and out_proj: 6,
// 2 more. A full-attention layer
// (Qwen3HybridAttentionDecoderLayer.self_attention, same file) adds to the
// GQA block the copies of the query and output-gate halves out of the fused
// projection (2), the per-head q/k RMSNorms (two streams, one step), the
// gate's sigmoid and its product with the attention output (2): 5 more.
constexpr double kLinearAttentionDecodeExtraKernelSteps = 2;
constexpr double kGatedFullAttentionDecodeExtraKernelSteps = 5;

// The GEMM peak to use for a weight dtype. FP4 without FP4 tensor cores
// (Hopper) runs weight-only dequantising kernels: weights expanded to bf16 in
// registers, bf16 tensor-core math (vLLM's Marlin MXFP4/NVFP4 path).
double GemmPeak(const HardwareDims& hw, Dtype dtype) {
  const double peak = hw.peak_flops_per_s[static_cast<int>(dtype)];
  if (peak > 0) return peak;
  return hw.peak_flops_per_s[static_cast<int>(Dtype::kBf16)];
}

bool Positive(double x) { return std::isfinite(x) && x > 0; }

// Bytes per weight element the dense GEMMs are charged for
// (CostConstants::weight_stream_bytes): the dtype's stream bytes, divided for
// native FP4 GEMMs by the engine's dense FP4 GEMM bandwidth ratio
// (Calibration). The ratio was measured on B200 (SM100), so it applies on
// SM100 and SM103 only: B300 is the same tensor-core generation (compute
// capability 10.0 and 10.3, https://developer.nvidia.com/cuda-gpus; one
// family, compute_100f kernels run on both:
// https://docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/compute-capabilities.html).
// SM120 (RTX PRO 6000, GDDR7) runs other FP4 kernels; no table for it was
// read.
double DenseWeightStreamBytes(const HardwareDims& hw, Dtype dtype,
                              const Calibration& cal, double stream_bytes) {
  const bool measured_architecture =
      hw.architecture == GpuArchitecture::kSm100 ||
      hw.architecture == GpuArchitecture::kSm103;
  if (dtype != Dtype::kFp4 || !measured_architecture ||
      !(hw.peak_flops_per_s[static_cast<int>(Dtype::kFp4)] > 0)) {
    return stream_bytes;
  }
  return stream_bytes / cal.fp4_dense_gemm_bandwidth_ratio;
}

// Bytes per weight element the routed experts' grouped GEMMs are charged for
// (CostConstants::expert_weight_stream_bytes): the dense GEMMs' figure,
// divided on hardware with FP4 tensor cores (Blackwell) by the engine's
// grouped-GEMM bandwidth ratio for the weight dtype (Calibration).
double ExpertWeightStreamBytes(const HardwareDims& hw, Dtype dtype,
                               const Calibration& cal,
                               double weight_stream_bytes) {
  if (!(hw.peak_flops_per_s[static_cast<int>(Dtype::kFp4)] > 0)) {
    return weight_stream_bytes;
  }
  switch (dtype) {
    case Dtype::kFp4:
      return kNativeFp4StreamBytes / cal.fp4_grouped_gemm_bandwidth_ratio;
    case Dtype::kFp8:
      return weight_stream_bytes / cal.fp8_grouped_gemm_bandwidth_ratio;
    case Dtype::kBf16:
      return weight_stream_bytes / cal.bf16_grouped_gemm_bandwidth_ratio;
  }
  return weight_stream_bytes;
}

// Constants of the attention kinds beyond MHA/GQA/MLA (ModelDims):
// DeepSeek sparse attention and hybrid linear attention.
void AttentionKindConstants(const ModelDims& md, internal::CostConstants* k) {
  if (md.is_sparse_attention()) {
    k->attn_topk = md.index_topk;
    k->decode_layer_overhead_scale +=
        kSparseIndexerDecodeKernelSteps / kGqaDecodeLayerKernelSteps;
    // The indexer caches one FP8 key per token with an FP32 scale per 128
    // elements, and scores in FP8 (twice the BF16 rate: index_n_heads x
    // index_head_dim multiply-adds per query and cached token, charged at
    // half); its weights are replicated like MLA's down-projections
    // (DeepSeek-V3.2 inference/model.py, class Indexer).
    k->index_bytes_per_token_layer =
        md.index_head_dim + 4.0 * std::ceil(md.index_head_dim / 128.0);
    k->index_flops = static_cast<double>(md.index_n_heads) * md.index_head_dim;
    const double q_in = md.q_lora_rank > 0 ? md.q_lora_rank : md.hidden;
    k->w_latent +=
        q_in * md.index_n_heads * md.index_head_dim +
        static_cast<double>(md.hidden) * (md.index_head_dim + md.index_n_heads);
  }
  if (md.is_hybrid()) {
    // Per-layer means over full- and linear-attention layers: weights from
    // LayerParamsOf (Gated DeltaNet projections on the linear layers, split
    // by heads like attention), the KV cache and attention math of the full
    // layers only.
    const LayerParams lp = LayerParamsOf(md);
    k->w_q = lp.q;
    k->w_kv = lp.kv;
    k->w_attn_out = lp.attn_out;
    const double full =
        static_cast<double>(md.full_attention_layers()) / md.layers;
    const double linear = 1 - full;
    k->kv_per_token_layer *= full;
    k->attn_decode_flops *= full;
    k->attn_prefill_flops *= full;
    const double nv = md.linear_num_value_heads;
    const double dk = md.linear_key_head_dim, dv = md.linear_value_head_dim;
    const double conv_channels = 2.0 * md.linear_num_key_heads * dk + nv * dv;
    // The recurrent state is kept in FP32 (Qwen3.5's config.json:
    // mamba_ssm_dtype float32), the convolution window in BF16.
    k->linear_state_bytes =
        linear *
        (4.0 * nv * dk * dv +
         2.0 * conv_channels * std::max(0, md.linear_conv_kernel_dim - 1));
    // Decode, per token and head: decay and delta update of the dk x dv
    // state and the read-out, ~6 dk dv; prefill runs the chunked delta rule
    // (chunks of 64 tokens: the same per-token state work plus the
    // intra-chunk products, 2 x 64 x (dk + dv)).
    k->linear_decode_flops = linear * 6.0 * nv * dk * dv;
    k->decode_layer_overhead_scale +=
        (linear * kLinearAttentionDecodeExtraKernelSteps +
         full * kGatedFullAttentionDecodeExtraKernelSteps) /
        kGqaDecodeLayerKernelSteps;
    k->linear_prefill_flops =
        linear * nv * (6.0 * dk * dv + 2.0 * 64 * (dk + dv));
  }
}

}  // namespace

CostModel::CostModel(Problem problem, const Calibration& calibration)
    : problem_(std::move(problem)), calibration_(calibration) {}

CostModel::~CostModel() = default;

double CostModel::capacity_bytes() const { return constants_->capacity_bytes; }

absl::StatusOr<std::unique_ptr<const CostModel>> CostModel::Create(
    Problem problem, const Calibration& calibration) {
  const ModelDims& m = problem.model;
  const ClusterDims& c = problem.cluster;
  const WorkloadDims& w = problem.workload;
  const HardwareDims& hw = c.hardware;
  // Defensive checks: spec.cc validates specs; the cost model must never divide
  // by zero.
  if (m.hidden <= 0 || m.layers <= 0 || m.heads <= 0 || m.kv_heads <= 0 ||
      m.head_dim <= 0 || m.vocab <= 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "model: hidden_size, num_layers, num_attention_heads, "
        "num_key_value_heads, head_dim "
        "and vocab_size must be > 0, got %d, %d, %d, %d, %d, %d",
        m.hidden, m.layers, m.heads, m.kv_heads, m.head_dim, m.vocab));
  }
  if (!m.is_moe() && m.intermediate <= 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "model.intermediate_size must be > 0 for a dense model, got %d",
        m.intermediate));
  }
  if (m.is_moe() &&
      (m.experts_per_token <= 0 || m.experts_per_token > m.experts ||
       m.moe_intermediate <= 0 || m.first_k_dense < 0 ||
       m.first_k_dense > m.layers ||
       (m.first_k_dense > 0 && m.intermediate <= 0))) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "model: MoE fields inconsistent (num_experts %d, experts_per_token %d, "
        "moe_intermediate_size %d, first_k_dense_layers %d, intermediate_size "
        "%d)",
        m.experts, m.experts_per_token, m.moe_intermediate, m.first_k_dense,
        m.intermediate));
  }
  if (c.num_gpus <= 0 || c.gpus_per_node <= 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "cluster.num_gpus and cluster.gpus_per_node must be > 0, got %d, %d",
        c.num_gpus, c.gpus_per_node));
  }
  if (!Positive(hw.hbm_bytes) || !Positive(hw.hbm_bytes_per_s) ||
      !Positive(hw.intra_node_bytes_per_s) ||
      !Positive(hw.inter_node_bytes_per_s) ||
      !Positive(hw.peak_flops_per_s[static_cast<int>(Dtype::kBf16)]) ||
      !(hw.intra_node_latency_seconds >= 0) ||
      !(hw.inter_node_latency_seconds >= 0)) {
    return absl::InvalidArgumentError(
        "cluster.hardware: peak bf16 FLOP/s, HBM bytes and bandwidth and link "
        "bandwidths "
        "must be finite and > 0, latencies >= 0");
  }
  if (w.input_tokens <= 0 || w.output_tokens <= 0 || w.concurrency < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("workload: input_tokens and output_tokens must be > 0 "
                        "and concurrency >= 0, got %d, "
                        "%d, %d",
                        w.input_tokens, w.output_tokens, w.concurrency));
  }
  const Calibration& cal = calibration;
  if (!Positive(cal.gemm_efficiency) || !Positive(cal.hbm_efficiency) ||
      !Positive(cal.attention_efficiency) ||
      !Positive(cal.intra_node_efficiency) ||
      !Positive(cal.inter_node_efficiency) ||
      !(cal.gemm_half_efficiency_tokens >= 0) ||
      !(cal.collective_latency_scale >= 0) ||
      !(cal.decode_step_overhead_seconds >= 0) ||
      !(cal.layer_overhead_seconds >= 0) ||
      !(cal.prefill_overhead_seconds >= 0) ||
      !(cal.prefill_queue_fraction >= 0) || !(cal.ttft_wait_iterations >= 0) ||
      !(cal.ttft_inflight_prefills >= 0) ||
      !(cal.disagg_request_overhead_seconds >= 0) ||
      !(cal.pipeline_request_overhead_seconds >= 0) ||
      !(cal.disagg_prefill_queue_fraction >= 0) ||
      !Positive(cal.fp4_grouped_gemm_bandwidth_ratio) ||
      !Positive(cal.bf16_grouped_gemm_bandwidth_ratio) ||
      !Positive(cal.fp8_grouped_gemm_bandwidth_ratio) ||
      !Positive(cal.fp4_dense_gemm_bandwidth_ratio)) {
    return absl::InvalidArgumentError(
        "calibration: efficiencies must be > 0, overheads >= 0");
  }

  auto model = std::unique_ptr<CostModel>(
      new CostModel(std::move(problem), calibration));
  auto k = std::make_unique<internal::CostConstants>();
  const ModelDims& md = model->problem_.model;
  const double h = md.hidden;
  k->hidden = h;
  k->heads = md.heads;
  k->kv_heads = md.kv_heads;
  k->vocab = md.vocab;
  k->intermediate = md.intermediate;
  k->moe = md.is_moe();
  k->mla = md.is_mla();
  k->tied = md.tie_embeddings;
  k->layers = md.layers;
  k->dense_layers = md.dense_layers();
  k->moe_layers = md.moe_layers();
  if (k->moe) {
    k->experts = md.experts;
    k->top_k = md.experts_per_token;
    k->moe_intermediate = md.moe_intermediate;
    k->shared_experts = md.shared_experts;
  }
  const double nh = md.heads;
  if (k->mla) {
    const double qk = md.qk_nope_head_dim + md.qk_rope_head_dim;
    const double v = md.v_head_dim > 0 ? md.v_head_dim : md.head_dim;
    const double latent = md.kv_lora_rank + md.qk_rope_head_dim;
    if (md.q_lora_rank > 0) {
      k->w_q = md.q_lora_rank * nh * qk;
      k->w_latent = h * md.q_lora_rank + h * latent;
    } else {
      k->w_q = h * nh * qk;
      k->w_latent = h * latent;
    }
    // split by heads
    k->w_kv = md.kv_lora_rank * nh * (md.qk_nope_head_dim + v);
    k->w_attn_out = nh * v * h;
    k->qkv_out = nh * (2 * qk + v);
    k->attn_out = nh * v;
    k->kv_per_token_layer = latent;
    k->decode_layer_overhead_scale =
        kMlaDecodeLayerKernelSteps / kGqaDecodeLayerKernelSteps;
    // Decode with absorbed projections: scores over the latent + rope, values
    // in the latent.
    k->attn_decode_flops = 2 * nh * (latent + md.kv_lora_rank);
    // causal: 2 * nh * (qk + v) * S^2 / 2
    k->attn_prefill_flops = nh * (qk + v);
  } else {
    const double hd = md.head_dim;
    k->w_q = h * nh * hd;
    k->w_kv = 2 * h * md.kv_heads * hd;
    k->w_attn_out = nh * hd * h;
    k->qkv_out = (nh + 2.0 * md.kv_heads) * hd;
    k->attn_out = nh * hd;
    k->kv_per_token_layer = 2.0 * md.kv_heads * hd;
    k->attn_decode_flops = 4 * nh * hd;
    k->attn_prefill_flops = 2 * nh * hd;  // causal: 4 * nh * hd * S^2 / 2
  }
  AttentionKindConstants(md, k.get());
  k->w_mlp_up = 2 * h * md.intermediate;
  k->w_mlp_down = h * md.intermediate;
  if (k->moe) {
    k->w_router = h * md.experts;
    k->w_expert_up = 2 * h * md.moe_intermediate;
    k->w_expert_down = h * md.moe_intermediate;
  }
  k->w_embedding = static_cast<double>(md.vocab) * h;
  const WorkloadDims& wd = model->problem_.workload;
  const HardwareDims& hd = model->problem_.cluster.hardware;
  k->weight_bytes = BytesPerElement(wd.weight_dtype);
  k->fp4_dequant = wd.weight_dtype == Dtype::kFp4 &&
                   !(hd.peak_flops_per_s[static_cast<int>(Dtype::kFp4)] > 0);
  const double stream_bytes =
      k->fp4_dequant ? cal.fp4_dequant_bytes_per_weight
                     : (wd.weight_dtype == Dtype::kFp4 ? kNativeFp4StreamBytes
                                                       : k->weight_bytes);
  k->weight_stream_bytes =
      DenseWeightStreamBytes(hd, wd.weight_dtype, cal, stream_bytes);
  k->expert_weight_stream_bytes =
      ExpertWeightStreamBytes(hd, wd.weight_dtype, cal, stream_bytes);
  k->dispatch_bytes = wd.weight_dtype == Dtype::kBf16 ? 2.0 : 1.0;
  k->kv_bytes = KvCacheBytesPerElement(wd.kv_cache_dtype);
  k->gemm_flops_per_s = GemmPeak(hd, wd.weight_dtype) * cal.gemm_efficiency;
  k->attention_prefill_flops_per_s =
      hd.peak_flops_per_s[static_cast<int>(Dtype::kBf16)] *
      cal.attention_efficiency;
  k->attention_decode_flops_per_s =
      hd.peak_flops_per_s[static_cast<int>(Dtype::kBf16)] * cal.gemm_efficiency;
  k->hbm_bytes_per_s = hd.hbm_bytes_per_s * cal.hbm_efficiency;
  k->nv_bytes_per_s = hd.intra_node_bytes_per_s * cal.intra_node_efficiency;
  k->ib_bytes_per_s = hd.inter_node_bytes_per_s * cal.inter_node_efficiency;
  k->nv_latency_seconds =
      hd.intra_node_latency_seconds * cal.collective_latency_scale;
  // The latency scale is fitted on single-node rows only: inter-node
  // collectives keep the link's own latency.
  k->ib_latency_seconds = hd.inter_node_latency_seconds;
  k->ib_raw_bytes_per_s = hd.inter_node_bytes_per_s;
  k->expert_dispatch_gathers = cal.expert_dispatch_gathers_over_dp;
  k->expert_a2a_needs_whole_group = cal.expert_a2a_needs_whole_group_ep;
  k->expert_a2a_low_latency_chunk_tokens =
      cal.expert_a2a_low_latency_chunk_tokens;
  k->expert_all_reduce_without_dp = cal.expert_parallel_all_reduces_without_dp;
  k->all_reduce_kernel = cal.all_reduce_kernel;
  // Blackwell (FP4 tensor cores) or Hopper NCCL measurements.
  k->nccl_table =
      hd.peak_flops_per_s[static_cast<int>(Dtype::kFp4)] > 0 ? 1 : 0;
  k->measured_all_reduce_link = internal::MeasuredAllReduceLinkMatches(
      k->nccl_table, hd.intra_node_bytes_per_s);
  k->gpus_per_node = model->problem_.cluster.gpus_per_node;
  k->cluster = model->problem_.cluster;
  if (k->moe && k->experts > 0) {
    const int eps = std::min(model->problem_.cluster.num_gpus,
                             internal::CostConstants::kBlockShapeTableGpus);
    k->dispatch_fanout.assign(static_cast<size_t>(std::max(0, eps)) + 1, 0.0);
    k->ep_rates.assign(static_cast<size_t>(std::max(0, eps)) + 1, {});
    for (int ep = 2; ep <= eps; ++ep) {
      k->dispatch_fanout[ep] = internal::DispatchFanout(*k, ep);
      k->ep_rates[ep] = internal::ExpertParallelRatesOf(*k, ep);
    }
  }
  k->block_shapes = BlockShapeTable(
      k->cluster, std::min(k->cluster.num_gpus,
                           internal::CostConstants::kBlockShapeTableGpus));
  k->replicas_may_differ = ReplicasMayDiffer(k->cluster);
  k->num_gpus = model->problem_.cluster.num_gpus;
  k->capacity_bytes = hd.hbm_bytes * (1 - internal::kMemoryReserveFraction);
  k->kv_room_fixed_share =
      cal.kv_pool_from_free_memory ? 1 - internal::kMemoryReserveFraction : 1;
  k->isl = wd.input_tokens;
  k->osl = wd.output_tokens;
  k->ctx_decode = wd.input_tokens + wd.output_tokens / 2.0;
  if (k->moe && k->experts > 0) {
    k->untouched_at_isl.assign(k->dispatch_fanout.size(), 0.0);
    for (size_t dp = 1; dp < k->untouched_at_isl.size(); ++dp) {
      k->untouched_at_isl[dp] =
          internal::UntouchedExpertShare(*k, static_cast<int>(dp) * k->isl);
    }
  }
  // The operator pass's all-reduce bytes, tokens x hidden x bf16 as it
  // multiplies them (Pass::Transition), so that a lookup matches exactly.
  auto hidden_position = [&](double tokens) {
    internal::MeasuredBytesPosition e;
    e.bytes = tokens * k->hidden * internal::kActivationBytes;
    e.x = internal::MeasuredPosition(internal::kCustomAllReduceFirstBytes,
                                     internal::kCustomAllReduceStep, e.bytes);
    return e;
  };
  if (k->hidden > 0) {
    k->inverse_hidden_activation_bytes =
        1.0 / (k->hidden * internal::kActivationBytes);
    k->hidden_all_reduce_positions.resize(
        internal::CostConstants::kAllReducePositionTokens);
    for (int t = 1; t < internal::CostConstants::kAllReducePositionTokens;
         ++t) {
      k->hidden_all_reduce_positions[t] = hidden_position(t);
    }
    k->prompt_all_reduce_position = hidden_position(k->isl);
  }
  k->ctx_max =
      wd.input_tokens +
      std::clamp(cal.kv_reserved_output_fraction, 0.0, 1.0) * wd.output_tokens;
  k->max_ttft_seconds = wd.max_ttft_seconds;
  k->batch_wait_timeout_iterations = wd.batch_wait_timeout_iterations;
  k->attention_dp_balance_timeout_iterations =
      wd.attention_dp_balance_timeout_iterations;
  k->attention_dp_balance_batching_wait_iterations =
      wd.attention_dp_balance_batching_wait_iterations;
  k->scheduler_recv_interval = wd.scheduler_recv_interval;
  k->max_tpot_seconds = wd.max_tpot_seconds;
  k->lengths_desynchronise = wd.lengths_desynchronise;
  k->fused_all_reduce_max_bytes = wd.fused_all_reduce_max_bytes;
  k->cal = cal;
  // A TensorRT-LLM server that detokenises in postprocess worker processes
  // spends the per-request host time of an engine built that way.
  if (wd.detokenises_off_executor &&
      cal.offloaded_detokenisation_request_overhead_seconds > 0) {
    k->cal.prefill_overhead_seconds =
        cal.offloaded_detokenisation_request_overhead_seconds;
  }
  k->packed_prefill_prompts = internal::PackedPrefillPrompts(*k);
  model->constants_ = std::move(k);
  return std::unique_ptr<const CostModel>(std::move(model));
}

}  // namespace shardplan::simulator
