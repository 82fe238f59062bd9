// Capacity searches (options.goal min_gpus / min_cost): the fewest GPUs, or
// the cheapest GPU type and count, whose plan carries workload.request_rate
// within the SLOs at workload.slo_percentile. Per hardware, two kinds of
// deployment are priced and the one of fewer GPUs kept:
//  - aggregated: R copies of a unit plan on g GPUs (g a power of two); every
//    grid plan of every unit size is priced by the queueing model (its
//    highest rate within the SLOs, r), needing R = ceil(rate / r) copies;
//  - disaggregated (options.disaggregation auto or only): x prefill
//    instances of one layout and y decode instances of another. The pools'
//    GPUs add up (x g_p + y g_d), so each pool's layout is chosen on its own:
//    every instance layout is priced as both pools of a one-plus-one plan
//    (the prefill pool's highest rate within the TTFT SLO less the handoff,
//    the decode pool's within the TPOT SLO), x = ceil(rate / r_p) and
//    y = ceil(rate / r_d) for the few layouts of fewest GPUs per request/s,
//    and each such deployment is then predicted whole (its placement, KV
//    transfer and the decode pool's first step at its real load), a pool
//    that falls short of the rate growing by one instance at a time.
#ifndef SHARDPLAN_SERVER_CAPACITY_SEARCH_H_
#define SHARDPLAN_SERVER_CAPACITY_SEARCH_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "policy/objective.h"
#include "policy/searcher.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/cost_model.h"
#include "simulator/types.h"

namespace shardplan::server {

struct CapacityOption {
  std::string hardware;
  double price_per_gpu_hour = 0;  // 0: no price (min_gpus)
  int max_gpus = 0;
  int gpus_per_node = 0;  // 0: the hardware's
};

struct CapacityRequest {
  policy::CapacityGoal goal = policy::CapacityGoal::kMinGpus;
  std::vector<CapacityOption> options;
  shardplan::v1::ModelSource model;
  shardplan::v1::Workload workload;
  // kOff: aggregated deployments only; kOnly: disaggregated only.
  policy::Disaggregation disaggregation = policy::Disaggregation::kAuto;
};

// The best deployment of one hardware option.
struct CapacityPick {
  CapacityOption option;
  shardplan::v1::ChosenCluster cluster;
  shardplan::v1::Plan plan;
  shardplan::v1::Prediction prediction;  // traffic and cost fields filled
  double cost_per_hour = 0;
};

struct CapacityResult {
  // In option order; options that carry the rate within their max_gpus only.
  std::vector<CapacityPick> picks;
  std::optional<size_t> winner;  // index into picks
  // No option carries the rate: why, naming the limits.
  std::string no_fit_reason;
  int evaluations = 0;
  bool cancelled = false;
};

absl::StatusOr<CapacityResult> SearchCapacity(
    const CapacityRequest& request, const policy::CancellationToken& cancel);

}  // namespace shardplan::server

#endif  // SHARDPLAN_SERVER_CAPACITY_SEARCH_H_
