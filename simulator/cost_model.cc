// The analytical H100 cost model (DESIGN.md, "The cost model").
//
// Structure. Create() turns the Problem into per-problem constants (weights per
// layer and operator, activation sizes, achievable rates). Evaluate() then
// costs a plan with closed forms: the layers of one kind (dense, MoE) are
// identical, so each kind is costed once per phase (decode, prefill) and
// multiplied by its count in every pipeline stage. No heap allocation, no
// strings, no per-layer loops in the hot path.
//
// Per operator: seconds = max(FLOPs / achievable FLOP/s, bytes / achievable HBM
// bytes/s), GEMM efficiency falling off for small token counts (eff = e * t /
// (t + t_half)), plus the collective that reshards its input, derived from ONE
// rule table (TransitionCollective) from the layouts the consecutive operators'
// sharding dims produce and consume.
//
// Layout conventions (see internal/cost_layers.h):
//  - column: Full -> FeatureSplit; row: FeatureSplit -> PartialSum; replicate:
//  Full -> Full;
//    batch and sequence: TokenSplit -> TokenSplit. Attention column splits
//    heads (FeatureSplit -> FeatureSplit). Attention sequence (context
//    parallel): decode takes the full queries and leaves per-rank partial
//    softmax results (a PartialSum over the heads' outputs, combined by the
//    next transition); prefill splits the sequence and ring-passes the KV
//    shards (an all-gather of the layer's KV).
//  - The residual stream between blocks is Full or TokenSplit. A block output
//  in PartialSum
//    or FeatureSplit is converted to the residual's layout (all-reduce /
//    all-gather, or reduce-scatter / all-to-all when the residual is
//    TokenSplit); a Full or TokenSplit output is added locally and the residual
//    becomes TokenSplit if either side is. Every layer is costed in the
//    residual layout it settles into (steady state).
//  - MoE layers: attention runs on dp x tp ranks; the dp*tp ranks of a stage
//  are one expert
//    domain: experts spread over `ep` ranks, each expert split tp_expert =
//    dp*tp/ep ways (expert_up/expert_down dims apply within tp_expert). Tokens
//    reach their experts by an all-to-all over ep (deduplicated per destination
//    group) and come back by another. Shared experts ride along as
//    always-active experts on every expert group.
//  - Rank order tp (innermost), pp, dp: a tp group of <= gpus_per_node stays in
//  a node.
//    Collectives use the ring formulas of DESIGN.md with a per-step latency; a
//    group that spans nodes is hierarchical (NVLink inside, InfiniBand across)
//    and never cheaper than the NVLink ring of the same size.
//
// Serving (continuous batching, per replica, batch B, OSL output tokens per
// request):
//   iteration = max over stages of (m * t_stage(B/m) + (B/OSL) * prefill_stage)
//   (pipelined; with pp > 1 t_stage includes the host's walk over the B
//   active requests, pipeline_request_overhead_seconds * B, per micro-batch),
//               at least the micro-batch's trip through all stages, + step
//               overhead;
//   B = ceil(C / dp) per attention dp rank for C requests per replica;
//   TPOT = iteration; throughput = replicas * C / iteration (Little's law:
//   the ranks with one request fewer are not counted full);
//   TTFT = prefill of one request through all stages + queueing behind
//          ttft_inflight_prefills * (B - 1) / B other prefills (none
//          under SGLang's scheduler recv interval, whose poll wait holds
//          them) +
//          prefill_queue_fraction * (B - 1) prompts' shares of a packed
//          prefill step (prefill_batch_tokens; a prefill each when 0) +
//          ttft_wait_iterations decode iterations + the engine's waits
//          (TensorRT-LLM's batch waiting and attention-dp balance, SGLang's
//          scheduler recv interval), in decode iterations.
// Memory per GPU: weight shard of the worst stage + KV cache for B contexts of
// ISL+OSL tokens
// + activation workspace, against (1 - kMemoryReserveFraction) of HBM.
//
// Files: cost_context.cc (Create, internal/cost_context.h), the collective
// formulas (internal/collectives.h), operator_pass.cc (the per-layer pass),
// serving.cc (batching, queueing, batch choice, SLOs), plan_rules.cc
// (ValidatePlan); this file is the facade and the pool costing of
// disaggregated.cc.
#include "simulator/cost_model.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "simulator/disaggregated.h"
#include "simulator/internal/cost_context.h"
#include "simulator/internal/pool_costing.h"
#include "simulator/internal/serving.h"
#include "simulator/placement.h"

namespace shardplan::simulator {
namespace {

// True when every operator's dim code is below kNumShardDims, all ten bytes
// tested at once (a branch-free loop over them was 2% of an evaluation): a
// byte b >= kNumShardDims sets its top bit in b + (128 - kNumShardDims) when
// b < 128, and b itself has it set otherwise; a carry out of such a byte can
// only flag its neighbour too, and the plan is refused either way.
bool DimCodesValid(const ShardDims& dims) {
  static_assert(
      sizeof(ShardDims) == kNumOpKinds && kNumOpKinds > 8 && kNumOpKinds <= 16,
      "ten one-byte dim codes, read as two words");
  uint64_t low = 0, high = 0;
  std::memcpy(&low, dims.data(), 8);
  std::memcpy(&high, dims.data() + 8, kNumOpKinds - 8);
  constexpr uint64_t kBytes = 0x0101010101010101ULL;
  constexpr uint64_t kAdd = kBytes * (128 - kNumShardDims);
  constexpr uint64_t kTop = kBytes * 0x80;
  return (((low + kAdd) | low | (high + kAdd) | high) & kTop) == 0;
}

}  // namespace

Evaluation CostModel::Evaluate(const PlanDims& plan) const {
  const internal::CostConstants& k = *constants_;
  if (plan.disaggregated) return EvaluateDisaggregated(*this, plan);
  // Evaluate requires a plan that passed ValidatePlan; this cheap guard keeps a
  // caller's mistake from indexing out of bounds or dividing by zero (the
  // result is infeasible).
  bool evaluable =
      plan.replicas >= 1 && plan.dp >= 1 && plan.tp >= 1 && plan.pp >= 1 &&
      static_cast<int64_t>(plan.replicas) * plan.dp * plan.tp * plan.pp ==
          k.num_gpus &&
      plan.ep >= 1 && plan.pp <= kMaxPipelineStages && plan.pp <= k.layers &&
      plan.batch_size >= 0 && plan.batch_size <= kMaxRequestsInFlight &&
      plan.micro_batches >= 0;
  evaluable = evaluable && DimCodesValid(plan.dims);
  if (evaluable && plan.num_stage_layers != 0) {
    int sum = 0;
    evaluable = plan.num_stage_layers == plan.pp;
    for (int i = 0; evaluable && i < plan.pp; ++i) {
      evaluable = plan.stage_layers[i] >= 1;
      sum += plan.stage_layers[i];
    }
    evaluable = evaluable && sum == k.layers;
  }
  if (!evaluable) {
    Evaluation e;
    e.capacity_bytes = k.capacity_bytes;
    return e;  // feasible = false, reason kNone ("infeasible")
  }
  return internal::EvaluateAggregated(k, plan, problem_.workload.concurrency);
}

}  // namespace shardplan::simulator

namespace shardplan::simulator::internal {

Evaluation PoolCosting::DecodeInstance(const CostModel& model,
                                       const PlanDims& instance, int requests,
                                       const PlanPlacement* placement) {
  const CostConstants& k = *model.constants_;
  PlanState state;
  PreparePlan(k, instance, instance.instance_gpus(), 1, &state, placement);
  return EvaluateState(k, state, requests, /*decode_only=*/true);
}

PrefillInstanceCost PoolCosting::PrefillInstance(
    const CostModel& model, const PlanDims& instance, int requests,
    const PlanPlacement* placement) {
  const CostConstants& k = *model.constants_;
  PlanState state;
  PreparePlan(k, instance, instance.instance_gpus(), requests, &state,
              placement, /*prefill_pool=*/true);
  // Memory as a decode step of the same batch on every rank would hold it,
  // the KV cache scaled from ISL+OSL contexts to the ISL tokens a prefill
  // leaves.
  const Evaluation e =
      EvaluateState(k, state, std::max(1, requests) * std::max(1, state.ctx.dp),
                    /*decode_only=*/true);
  PrefillInstanceCost c;
  c.chain_seconds = state.prefill_chain_seconds;
  c.max_stage_seconds = state.prefill_max_stage_seconds;
  c.overhead_seconds = k.cal.prefill_overhead_seconds;
  c.weights_bytes = e.weights_bytes;
  c.kv_cache_bytes = e.kv_cache_bytes * k.isl / std::max(1.0, k.ctx_max);
  c.activations_bytes = e.activations_bytes;
  c.kv_room_bytes = e.kv_room_bytes;
  c.fits = c.kv_cache_bytes <= e.kv_room_bytes &&
           c.weights_bytes <= k.capacity_bytes;
  c.tp_nodes = e.tp_nodes;
  c.ep_nodes = e.ep_nodes;
  c.replica_nodes = e.replica_nodes;
  return c;
}

double PoolCosting::KvBytesPerToken(const CostModel& model) {
  const CostConstants& k = *model.constants_;
  return (k.kv_per_token_layer * k.kv_bytes + k.index_bytes_per_token_layer) *
         k.layers;
}

double PoolCosting::LinkBytesPerS(const CostModel& model, bool inter_node) {
  const CostConstants& k = *model.constants_;
  return inter_node ? k.ib_bytes_per_s : k.nv_bytes_per_s;
}

double PoolCosting::LinkLatencyS(const CostModel& model, bool inter_node) {
  const CostConstants& k = *model.constants_;
  return inter_node ? k.ib_latency_seconds : k.nv_latency_seconds;
}

}  // namespace shardplan::simulator::internal
