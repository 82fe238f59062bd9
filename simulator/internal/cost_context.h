// The per-problem constants CostModel::Create precomputes (weights per layer
// and operator, activation sizes, achievable rates), read by every part of the
// cost model. Not part of the public API.
#ifndef SHARDPLAN_SIMULATOR_INTERNAL_COST_CONTEXT_H_
#define SHARDPLAN_SIMULATOR_INTERNAL_COST_CONTEXT_H_

#include <cmath>
#include <vector>

#include "simulator/calibration_parameters.h"
#include "simulator/placement.h"
#include "simulator/types.h"

namespace shardplan::simulator::internal {

// Fraction of HBM kept free for the CUDA context, NCCL and cuBLAS workspaces
// and allocator fragmentation (serving engines default to using ~90% of device
// memory).
inline constexpr double kMemoryReserveFraction = 0.10;
// Activations are exchanged in bf16 whatever the weight dtype.
inline constexpr double kActivationBytes = 2.0;

// What the expert all-to-all of one expert-parallel size `ep` reads, the same
// for every plan of that size (CostConstants::ep_rates): ln(ep) for the
// routing imbalance, and DeepEP's measured bandwidths at that size
// (DeepEpBytesPerS) scaled to the hardware's NIC.
struct ExpertParallelRates {
  double log_ep = 0;
  double low_latency_dispatch_bytes_per_s = 0;
  double low_latency_combine_bytes_per_s = 0;
  double normal_rdma_bytes_per_s = 0;
};

// A tensor's size and its fractional index in a measured collective table
// (collectives.h, MeasuredPosition).
struct MeasuredBytesPosition {
  double bytes = -1;
  double x = 0;
};

struct CostConstants {
  // Model.
  double hidden = 0, heads = 0, kv_heads = 0, vocab = 0, intermediate = 0;
  double experts = 0, top_k = 0, moe_intermediate = 0, shared_experts = 0;
  int layers = 0, dense_layers = 0, moe_layers = 0;
  bool moe = false, mla = false, tied = false;
  // Weights per layer, in elements.
  // query projection (split by heads under column, by input under row)
  double w_q = 0;
  // GQA K and V projections (replicate when tp > kv_heads, column)
  double w_kv = 0;
  double w_latent = 0;  // MLA down-projections (replicated under column)
  double w_attn_out = 0, w_mlp_up = 0, w_mlp_down = 0, w_router = 0;
  double w_expert_up = 0, w_expert_down = 0;  // one expert
  double w_embedding = 0;                     // also the LM head
  // Activations per token, in elements.
  double qkv_out = 0, attn_out = 0;
  // KV cache elements per token per layer (all heads)
  double kv_per_token_layer = 0;
  // Attention kinds (simulator/types.h ModelDims): DeepSeek sparse attention
  // reads at most attn_topk cached tokens (0 = all) after an indexer that
  // scores every one (index_flops per query and cached token, its key cache
  // index_bytes_per_token_layer); hybrid models' linear-attention layers keep
  // linear_state_bytes per request instead of a KV cache and cost
  // linear_*_flops per token. Per-layer figures are means over the layers.
  double attn_topk = 0;
  double index_flops = 0;
  double index_bytes_per_token_layer = 0;
  double linear_state_bytes = 0;
  double linear_decode_flops = 0;
  double linear_prefill_flops = 0;
  double attn_decode_flops = 0;  // per query token per context token per layer
  // A decode layer's share of Calibration::layer_overhead_seconds, in units of
  // a grouped-query attention layer's (kMlaDecodeLayerKernelSteps).
  double decode_layer_overhead_scale = 1;
  // per request per (sequence length)^2 per layer
  double attn_prefill_flops = 0;
  // Dtypes.
  double weight_bytes = 2, kv_bytes = 2;
  // Achievable rates.
  double gemm_flops_per_s = 0, hbm_bytes_per_s = 0;
  // Attention math: prefill (flash attention, fitted attention_efficiency) and
  // decode (batched GEMV-like per head; when compute bound, e.g. MLA, it
  // reaches GEMM-class efficiency, so it uses gemm_efficiency).
  double attention_prefill_flops_per_s = 0, attention_decode_flops_per_s = 0;
  double nv_bytes_per_s = 0, ib_bytes_per_s = 0, nv_latency_seconds = 0,
         ib_latency_seconds = 0;
  // The link's datasheet bandwidth, for kernels costed from measurements.
  double ib_raw_bytes_per_s = 0;
  // Expert dispatch bytes per element (FP8 with FP8/FP4 weights, as DeepEP
  // and the engines dispatch; combine is always bf16).
  double dispatch_bytes = 2;
  // Calibration::expert_dispatch_gathers_over_dp, and which measured NCCL
  // all-gather/reduce-scatter table the hardware's collectives follow
  // (collectives.h, kNcclGatherScatterSeconds: 0 Hopper, 1 Blackwell).
  bool expert_dispatch_gathers = false;
  // Calibration::expert_a2a_needs_whole_group_ep.
  bool expert_a2a_needs_whole_group = false;
  // Calibration::expert_a2a_low_latency_chunk_tokens.
  double expert_a2a_low_latency_chunk_tokens = 0;
  // Calibration::expert_parallel_all_reduces_without_dp.
  bool expert_all_reduce_without_dp = false;
  int nccl_table = 0;
  // Calibration::all_reduce_kernel (collectives.h, kCustomAllReduceSeconds).
  int all_reduce_kernel = 0;
  // WorkloadDims::fused_all_reduce_max_bytes: all-reduces up to this size
  // run TensorRT-LLM's measured kernel (kCustomAllReduceSeconds[0]).
  double fused_all_reduce_max_bytes = 0;
  // The NVLink of the GPUs kCustomAllReduceSeconds measured (a hardware spec
  // with another link keeps the ring formula; MeasuredAllReduceLinkMatches).
  bool measured_all_reduce_link = true;
  // FP4 weights on hardware without FP4 tensor cores (Hopper): weight-only
  // dequantising kernels, costed as streaming this many bytes per weight
  // element instead of 0.5 (Calibration::fp4_dequant_bytes_per_weight).
  bool fp4_dequant = false;
  // Bytes per weight element a GEMM's time is charged for (weight_bytes, or
  // the dequantising kernels' equivalent).
  double weight_stream_bytes = 2;
  // The same for the routed experts' grouped GEMMs (native FP4 ones at the
  // engine's Calibration::fp4_grouped_gemm_bandwidth_ratio).
  double expert_weight_stream_bytes = 2;
  int gpus_per_node = 8, num_gpus = 1;
  ClusterDims cluster;
  // DispatchFanout(*this, ep) of every ep up to the GPUs (at most
  // kBlockShapeTableGpus); MoE models only.
  std::vector<double> dispatch_fanout;
  // ExpertParallelRatesOf(*this, ep) of the same eps (entries 0 and 1
  // unused); MoE models only.
  std::vector<ExpertParallelRates> ep_rates;
  // UntouchedExpertShare(*this, dp * isl) of every dp up to the GPUs (at most
  // kBlockShapeTableGpus): a prefill of one request per attention dp rank;
  // MoE models only.
  std::vector<double> untouched_at_isl;
  // The cluster's block shapes (the placement of every plan), blocks of up
  // to kBlockShapeTableGpus GPUs (larger ones are computed per plan).
  BlockShapeTable block_shapes;
  static constexpr int kBlockShapeTableGpus = 1024;
  // ReplicasMayDiffer(cluster): replicas are costed class by class.
  bool replicas_may_differ = false;
  // The all-reduce table's positions (collectives.h, AllReducePosition) of
  // t tokens' hidden states in bf16, t = 1..kAllReducePositionTokens - 1
  // (entry 0 unused), and of one prompt's ISL tokens; 1 / (hidden x 2 bytes)
  // to find the entry.
  static constexpr int kAllReducePositionTokens = 1024;
  std::vector<MeasuredBytesPosition> hidden_all_reduce_positions;
  MeasuredBytesPosition prompt_all_reduce_position;
  double inverse_hidden_activation_bytes = 0;
  double capacity_bytes = 0;
  // Share of the weights and activations that counts against capacity_bytes
  // when the KV cache pool is sized (Calibration::kv_pool_from_free_memory):
  // 1, or 1 - kMemoryReserveFraction when the pool is a fraction of the
  // memory left free after the weights. The weights alone are always held
  // to capacity_bytes.
  double kv_room_fixed_share = 1;
  // Workload.
  double isl = 0, osl = 0, ctx_decode = 0;
  double ctx_max = 0;  // KV tokens a running request holds (memory)
  double max_ttft_seconds = 0, max_tpot_seconds = 0;
  double batch_wait_timeout_iterations = 0;                  // WorkloadDims'
  double attention_dp_balance_timeout_iterations = 0;        // WorkloadDims'
  double attention_dp_balance_batching_wait_iterations = 0;  // WorkloadDims'
  bool lengths_desynchronise = false;                        // WorkloadDims'
  double scheduler_recv_interval = 0;                        // WorkloadDims'
  // PackedPrefillPrompts (serving.h): prompts per packed prefill step.
  double packed_prefill_prompts = 0;
  Calibration cal;
};

// Expected distinct expert groups (of `ep`) a token routed to top_k experts
// is sent to, divided by top_k (PlanCtx::dispatch_fanout).
inline double DispatchFanout(const CostConstants& k, int ep) {
  return ep * (1.0 - std::pow(1.0 - 1.0 / ep, k.top_k)) / k.top_k;
}

// Share of one expert group's routed experts that none of `domain_tokens`
// tokens, each routed to top_k of the experts, lands on.
inline double UntouchedExpertShare(const CostConstants& k,
                                   double domain_tokens) {
  return std::pow(1.0 - k.top_k / k.experts, domain_tokens);
}

}  // namespace shardplan::simulator::internal

#endif  // SHARDPLAN_SIMULATOR_INTERNAL_COST_CONTEXT_H_
