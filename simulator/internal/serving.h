// Serving: a plan's per-batch state (stage split, prefill costs, memory),
// continuous batching (TPOT, TTFT, throughput of a batch), queueing when the
// KV cache overflows, the batch choice and the SLO checks. Not part of the
// public API.
#ifndef SHARDPLAN_SIMULATOR_INTERNAL_SERVING_H_
#define SHARDPLAN_SIMULATOR_INTERNAL_SERVING_H_

#include <array>

#include "simulator/internal/cost_context.h"
#include "simulator/internal/operator_pass.h"
#include "simulator/placement.h"
#include "simulator/types.h"

namespace shardplan::simulator::internal {

// Per-stage layer counts.
// (No default values: PlanState's per-stage array is left unzeroed.)
struct StageLayers {
  int dense;
  int moe;
};

// Plan state shared by every batch size: groups, residual layouts, prefill
// costs, weights.
struct PlanState {
  PlanCtx ctx;
  Residuals residuals;
  int num_stages = 1;
  // The per-stage arrays hold num_stages entries, written by PreparePlan;
  // nothing reads past them, and they are left unzeroed (3 KB per
  // evaluation on the hot path).
  std::array<StageLayers, kMaxPipelineStages> stages;
  // Prefill of one request (ISL tokens).
  LayerResult pre_dense, pre_moe, pre_embed, pre_head;
  std::array<double, kMaxPipelineStages> prefill_stage_seconds;
  double prefill_chain_seconds = 0;
  double prefill_max_stage_seconds = 0;
  int prefill_worst_stage = 0;
  double p2p_prefill_seconds = 0;        // the slowest stage boundary
  double p2p_prefill_chain_seconds = 0;  // all boundaries, each over its link
  Traffic p2p_prefill_traffic;
  // One prompt's share of the slowest stage of a prefill step that packs as
  // many waiting prompts as the engine's token budget holds
  // (Calibration::prefill_batch_tokens): what a prompt queued behind it adds
  // to the wait. prefill_max_stage_seconds when the budget holds one prompt.
  double prefill_batched_share_seconds = 0;
  // Memory per GPU per stage (weights) and per layer (KV for one request).
  std::array<double, kMaxPipelineStages> weights_bytes;
  double kv_bytes_per_request_layer = 0;  // per rank, excluding the batch split
  double activations_bytes = 0;
};

// Prompts of ISL tokens one packed prefill step of the engine holds
// (Calibration::prefill_batch_tokens, scaled by the GPU's memory as SGLang
// sizes it); 0 when the engine packs none (CostConstants::
// packed_prefill_prompts).
double PackedPrefillPrompts(const CostConstants& k);

// `prefill_requests` requests of ISL tokens are prefilled together (1 in
// aggregated serving, the prefill batch of a disaggregated prefill instance).
// `replica_class`: as for MakePlanCtx. `s`: a freshly constructed state (the
// results of layer kinds the model lacks stay as constructed, zero).
// `prefill_pool`: a prefill instance of a disaggregated plan (PlanCtx).
void PreparePlan(const CostConstants& k, const PlanDims& plan, int num_gpus,
                 int prefill_requests, PlanState* s,
                 const PlanPlacement* replica_class = nullptr,
                 bool prefill_pool = false);

// `requests` in flight per replica, RankBatch(requests, dp) on each attention
// dp rank. `decode_only`: a decode instance of a disaggregated plan: no
// prefill work interleaves with its iterations and TTFT/SLOs are left to the
// caller.
Evaluation EvaluateState(const CostConstants& k, const PlanState& s,
                         int requests, bool decode_only = false);

// An aggregated plan that passed the facade's guard: at the workload's
// concurrency (queueing what the KV cache does not hold; 0: none), at the
// plan's batch, or at the best load of ScanLoads().
Evaluation EvaluateAggregated(const CostConstants& k, const PlanDims& plan,
                              int workload_concurrency);

}  // namespace shardplan::simulator::internal

#endif  // SHARDPLAN_SIMULATOR_INTERNAL_SERVING_H_
