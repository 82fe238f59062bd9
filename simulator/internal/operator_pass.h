// The operator pass: the time, memory traffic and collectives of one layer
// (and of the embedding and LM head) for one replica micro-batch of a plan.
// Not part of the public API.
#ifndef SHARDPLAN_SIMULATOR_INTERNAL_OPERATOR_PASS_H_
#define SHARDPLAN_SIMULATOR_INTERNAL_OPERATOR_PASS_H_

#include <array>
#include <vector>

#include "simulator/internal/collectives.h"
#include "simulator/internal/cost_context.h"
#include "simulator/internal/cost_layers.h"
#include "simulator/placement.h"
#include "simulator/types.h"

namespace shardplan::simulator::internal {

// Plan-dependent constants shared by all phases of one evaluation.
struct PlanCtx {
  // replicas: independent copies of the model (dense: replicas * dp, see
  // simulator/placement.h); dp: attention data-parallel ranks of an MoE stage.
  int replicas = 1, dp = 1, tp = 1, pp = 1, ep = 1, tp_expert = 1;
  // 1 / tp; the share of the KV heads (and of the KV cache) a rank of a
  // head-split attention holds: 1 / tp, or one head when tp exceeds the KV
  // heads; the qkv projection's weight elements per rank when column-split
  // (the KV heads as above, MLA's up-projections split and its latent
  // down-projections replicated).
  double inv_tp = 1;
  double kv_head_share = 1;
  double qkv_column_weights = 0;
  ShardDims dims{};
  Group tp_group, tp_expert_group, ep_group;
  // One rank of each attention dp rank of a stage (strided by tp).
  Group dp_group;
  // The ranks attention runs data-parallel over, each with its own tokens:
  // dp_group, or the whole stage when qkv, attention and attn_out are
  // batch-split over tp (what engines launch as DP attention).
  Group attention_dp_group;
  // The expert domain crosses nodes: over InfiniBand, or over the trays of
  // one NVLink domain (GB200/GB300 NVL72).
  bool ep_crosses_nodes = false;
  // A prefill instance of a disaggregated plan (its own all-to-all kernels).
  bool prefill_pool = false;
  int micro_batches = 1;
  bool p2p_inter_node = false;
  // Stage boundaries whose sends cross nodes (the others ride NVLink).
  int p2p_ib_boundaries = 0;
  // Nodes spanned (reported in the Evaluation).
  int tp_nodes = 1, ep_nodes = 1, replica_nodes = 1;
  // Expected distinct expert groups a token is sent to, divided by top_k (a
  // token routed to several experts of one group is sent there once).
  double dispatch_fanout = 1;
  // The expert all-to-all's rates at this ep (ep > 1 only).
  ExpertParallelRates ep_rates;
  // Routed-expert slots per expert-parallel rank: ceil(experts / ep). When ep
  // does not divide the experts, engines fill the spare slots with copies of
  // hot experts (EPLB's redundant experts: SGLang
  // --ep-num-redundant-experts, vLLM --num-redundant-experts), so every rank
  // holds and reads this many.
  double experts_rank = 0;
};

// The operators each kind of pass charges (LayerResult::first_op..last_op):
// a dense layer its attention and MLP, an MoE layer its attention, router and
// experts, the embedding and the LM head themselves.
struct OpRange {
  OpKind first;
  OpKind last;
};
inline constexpr OpRange kDenseLayerOps{OpKind::kQkv, OpKind::kMlpDown};
inline constexpr OpRange kMoeLayerOps{OpKind::kQkv, OpKind::kExpertDown};
inline constexpr OpRange kEmbeddingOps{OpKind::kEmbedding, OpKind::kEmbedding};
inline constexpr OpRange kLmHeadOps{OpKind::kLmHead, OpKind::kLmHead};

struct LayerResult {
  std::array<double, kNumOpKinds> compute{};
  std::array<double, kNumOpKinds> memory{};
  std::array<double, kNumOpKinds> comm{};
  Traffic traffic;
  double seconds = 0;  // sum over operators of max(compute, memory) + comm
  Layout residual = Layout::kFull;
  // The operators a pass of this kind can charge, first_op..last_op (a layer:
  // its attention and MLP or MoE operators; the embedding or the LM head
  // alone); the entries outside stay zero, so sums over the operators skip
  // them (adding +0 changes no sum).
  int first_op = 0;
  int last_op = kNumOpKinds - 1;
};

// Steady-state residual layouts for the dense and the MoE layers.
struct Residuals {
  Layout dense = Layout::kFull;
  Layout moe = Layout::kFull;
  // what the embedding produces for the first layer
  Layout first = Layout::kFull;
  Layout last = Layout::kFull;  // what the LM head receives
};

// One layer (dense when `moe_layer` is false) of `tokens` tokens (of
// `requests` requests attending over `ctx` tokens each) entering in layout
// `residual`. `records`: if not null, receives the layer's collectives.
LayerResult CostLayer(const CostConstants& k, const PlanCtx& p, bool moe_layer,
                      bool decode, double tokens, double requests, double ctx,
                      Layout residual, std::vector<CollectiveRecord>* records);
// The embedding and the LM head of the same pass.
LayerResult CostEmbedding(const CostConstants& k, const PlanCtx& p, bool decode,
                          double tokens, double requests, double ctx,
                          Layout residual);
LayerResult CostLmHead(const CostConstants& k, const PlanCtx& p, bool decode,
                       double tokens, double requests, double ctx,
                       Layout residual);
// The same, written into `*result`, which must be as a fresh LayerResult
// (zero): no copy of the result on the hot path. CostLayerInto returns
// `*result`.
const LayerResult& CostLayerInto(const CostConstants& k, const PlanCtx& p,
                                 bool moe_layer, bool decode, double tokens,
                                 double requests, double ctx, Layout residual,
                                 std::vector<CollectiveRecord>* records,
                                 LayerResult* result);
void CostEmbeddingInto(const CostConstants& k, const PlanCtx& p, bool decode,
                       double tokens, double requests, double ctx,
                       Layout residual, LayerResult* result);
void CostLmHeadInto(const CostConstants& k, const PlanCtx& p, bool decode,
                    double tokens, double requests, double ctx, Layout residual,
                    LayerResult* result);

// The residual layout each layer kind settles into, from the dims alone.
Residuals SteadyResiduals(const CostConstants& k, const PlanCtx& p);

// `num_gpus`: the GPUs the plan is placed on (the cluster's, or one instance's
// for a pool of a disaggregated plan, placed from a node boundary).
// `replica_class`: the shapes of some of the replicas (ReplicaClasses), or of
// some pool instances (InstanceClasses), or null for the worst of all.
PlanCtx MakePlanCtx(const CostConstants& k, const PlanDims& plan, int num_gpus,
                    const PlanPlacement* replica_class = nullptr);
// The same, every field of `*out` written (no copy of the context on the hot
// path).
void MakePlanCtxInto(const CostConstants& k, const PlanDims& plan, int num_gpus,
                     const PlanPlacement* replica_class, PlanCtx* out);

}  // namespace shardplan::simulator::internal

#endif  // SHARDPLAN_SIMULATOR_INTERNAL_OPERATOR_PASS_H_
