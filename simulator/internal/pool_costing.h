// Costs of one instance of a pool of a disaggregated plan, from the same
// per-phase terms as aggregated plans (serving.cc). Used by
// simulator/disaggregated.cc only; not part of the public API.
#ifndef SHARDPLAN_SIMULATOR_INTERNAL_POOL_COSTING_H_
#define SHARDPLAN_SIMULATOR_INTERNAL_POOL_COSTING_H_

#include "absl/status/status.h"
#include "simulator/cost_model.h"
#include "simulator/placement.h"
#include "simulator/types.h"

namespace shardplan::simulator::internal {

// One prefill instance prefilling `requests` requests of ISL tokens together.
struct PrefillInstanceCost {
  double chain_seconds = 0;      // the batch's prefill through all stages
  double max_stage_seconds = 0;  // the slowest stage: pipelined rate = 1 / this
  // The per-request overhead the chain includes (prefill_overhead_seconds).
  double overhead_seconds = 0;
  // Memory per GPU (worst stage), the KV cache of the batch's ISL tokens.
  double weights_bytes = 0;
  double kv_cache_bytes = 0;
  double activations_bytes = 0;
  double kv_room_bytes = 0;  // Evaluation::kv_room_bytes
  bool fits =
      false;  // the KV cache within its room (Evaluation::kv_room_bytes)
  int tp_nodes = 1, ep_nodes = 1, replica_nodes = 1;
};

// Marks `e` infeasible when it misses a TTFT or TPOT SLO (0: none), and
// zeroes the throughput of an infeasible evaluation.
void ApplySlos(double max_ttft_seconds, double max_tpot_seconds, Evaluation* e);

class PoolCosting {
 public:
  // ValidatePlan of one instance (replicas must be 1) on its own GPUs.
  static absl::Status ValidateInstance(const CostModel& model,
                                       const PlanDims& instance);
  // `instance`: one decode instance (aggregated fields, replicas 1) with
  // `requests` in flight (a dense model: per dp copy), spread over its
  // attention dp ranks (RankBatch); no prefill interleaves, no SLO is
  // checked (feasible = fits memory). `placement`: the instance's shapes on
  // the cluster (InstanceClasses); null: placed from a node boundary on
  // uniform nodes of cluster.gpus_per_node.
  static Evaluation DecodeInstance(const CostModel& model,
                                   const PlanDims& instance, int requests,
                                   const PlanPlacement* placement = nullptr);
  // `requests` per pass on each attention dp rank (PrefillLayout.batch_size).
  static PrefillInstanceCost PrefillInstance(
      const CostModel& model, const PlanDims& instance, int requests,
      const PlanPlacement* placement = nullptr);
  // KV-cache bytes one token leaves behind over all layers (KV dtype).
  static double KvBytesPerToken(const CostModel& model);
  // Achievable per-GPU bytes/s and per-message latency of NVLink and
  // InfiniBand (the calibrated link efficiencies applied).
  static double LinkBytesPerS(const CostModel& model, bool inter_node);
  static double LinkLatencyS(const CostModel& model, bool inter_node);
};

}  // namespace shardplan::simulator::internal

#endif  // SHARDPLAN_SIMULATOR_INTERNAL_POOL_COSTING_H_
