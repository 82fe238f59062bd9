// Disaggregated prefill/decode serving (xPyD): x prefill instances of one
// layout and y decode instances of another, the KV cache of each request
// moving from its prefill instance to a decode instance. The plan is a
// PlanDims with disaggregated = true (see simulator/types.h); CostModel's
// ValidatePlan and Evaluate dispatch here.
//
// Model (docs/cost-model-and-calibration.md, "Disaggregated plans"):
//  - decode: each decode instance runs continuous-batching decode iterations
//    at its batch (requests per instance, plan.batch_size, spread over its
//    attention dp ranks), with no prefill work interleaved; TPOT = the
//    iteration.
//    The decode pool sustains y * (tokens/s of an instance) / OSL requests/s.
//  - prefill: an instance prefills `prefill.batch_size` requests per pass;
//    pipelined, it sustains batch / (slowest stage) requests/s. Requests
//    reach it as a Poisson stream at the offered load (what the decode pool
//    sustains, at most the prefill pool's capacity), split evenly over the x
//    instances: each is an M/D/1 queue, mean wait (Pollaczek-Khinchine)
//    rho / (2 mu (1 - rho)), rho capped at kMaxPrefillUtilization.
//  - KV transfer: ISL x KV bytes per token per request, one stream per GPU
//    of the smaller instance, over NVLink for the (prefill, decode) instance
//    pairs that lie inside one node and InfiniBand for the others, averaged
//    over the pairs (routers pair any prefill with any decode instance).
//    Sent layer by layer while the prefill computes (NIXL / Mooncake
//    transfer engines), so only what the prefill cannot hide is exposed:
//    max(one layer's share, transfer - prefill).
//  - TTFT = prefill wait + prefill + exposed transfer + the calibrated
//    per-request overhead (Calibration::disagg_request_overhead_seconds);
//    throughput = the offered load x OSL; per GPU over every GPU of both
//    pools; memory per pool (the Evaluation's memory fields are the decode
//    pool's).
//  - closed-loop clients (workload concurrency C per decode instance, a
//    dense model's dp copies each one; decode batch 0): N = C x y clients
//    (x copies); the requests decoding spread over each instance's attention
//    dp ranks (RankBatch); Little's law gives the completion rate
//    N / (TTFT + (OSL - 1) TPOT) and the decode occupancy, solved by
//    fixed-point iteration; the prefill wait is the M/D/1 wait at that rate
//    or the lockstep-burst wait (Calibration::disagg_prefill_queue_fraction),
//    whichever is longer.
// Placement (simulator/placement.h, DecodePoolFirst): each pool a contiguous
// block of ranks; where node sizes differ the pool with the bigger instances
// takes the lowest ranks (the biggest nodes), else prefill first. Every
// instance is costed on the nodes it really occupies (instances placed
// differently are costed class by class: the pools' rates add up, TTFT and
// TPOT are the slowest class's).
#ifndef SHARDPLAN_SIMULATOR_DISAGGREGATED_H_
#define SHARDPLAN_SIMULATOR_DISAGGREGATED_H_

#include "absl/status/status.h"
#include "simulator/cost_model.h"
#include "simulator/types.h"

namespace shardplan::simulator {

// Highest prefill-pool utilisation the queueing formula is evaluated at: a
// pool offered more than its capacity is reported at this load (closed-loop
// clients cannot push it further) with throughput capped at its capacity.
inline constexpr double kMaxPrefillUtilization = 0.9;

// The decode instance of a disaggregated plan as an aggregated PlanDims
// (replicas 1), and the prefill instance likewise.
PlanDims DecodeInstancePlan(const PlanDims& plan);
PlanDims PrefillInstancePlan(const PlanDims& plan);

// Structural validity of one pool instance (an aggregated plan with replicas
// 1, e.g. DecodeInstancePlan or PrefillInstancePlan) on its own
// instance_gpus() GPUs: what ValidateDisaggregatedPlan checks of each pool.
// INVALID_ARGUMENT, messages rooted at "plan.".
absl::Status ValidateInstancePlan(const CostModel& model,
                                  const PlanDims& instance);

// Structural validity of a disaggregated plan: instance counts >= 1, each
// instance valid on its own GPUs (messages start with plan.prefill. or
// plan.decode.), GPUs of both pools = cluster.num_gpus. INVALID_ARGUMENT.
absl::Status ValidateDisaggregatedPlan(const CostModel& model,
                                       const PlanDims& plan);

// Predicts a disaggregated plan that passed ValidateDisaggregatedPlan (else
// infeasible). Decode batch 0: closed-loop clients when the workload has a
// concurrency, else the best decode batch under memory and the SLOs.
// Allocation-free on uniform nodes when every instance is aligned to them.
Evaluation EvaluateDisaggregated(const CostModel& model, const PlanDims& plan);

}  // namespace shardplan::simulator

#endif  // SHARDPLAN_SIMULATOR_DISAGGREGATED_H_
