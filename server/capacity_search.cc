#include "server/capacity_search.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "policy/baselines.h"
#include "policy/plan_space.h"
#include "simulator/queueing.h"
#include "simulator/spec.h"
#include "simulator/traffic_costing.h"
#include "simulator/traffic_spec.h"

namespace shardplan::server {
namespace {

// The cost model of `option`'s hardware on `gpus` GPUs; null when the
// problem does not fit it (e.g. the weights need more GPUs).
std::shared_ptr<const simulator::CostModel> ModelOn(
    const CapacityRequest& request, const CapacityOption& option, int gpus) {
  shardplan::v1::ClusterSpec cluster;
  cluster.set_hardware(option.hardware);
  cluster.set_num_gpus(gpus);
  cluster.set_gpus_per_node(option.gpus_per_node);
  absl::StatusOr<simulator::Problem> problem =
      simulator::ProblemFromProto(request.model, cluster, request.workload);
  if (!problem.ok()) return nullptr;
  auto model = simulator::CostModel::Create(*std::move(problem));
  if (!model.ok()) return nullptr;
  return std::shared_ptr<const simulator::CostModel>(*std::move(model));
}

struct Unit {
  simulator::PlanDims plan;  // on `gpus` GPUs
  int gpus = 0;
  double rate = 0;  // requests/s the unit carries within the SLOs
  int copies = 0;
  int total_gpus() const { return gpus * copies; }
};

// Smaller is better: GPUs (min_gpus) or their cost (min_cost, the same
// order within one hardware); more headroom breaks ties.
bool Better(const Unit& a, const Unit& b) {
  if (b.copies == 0) return true;
  if (a.total_gpus() != b.total_gpus()) return a.total_gpus() < b.total_gpus();
  return a.rate * a.copies > b.rate * b.copies;
}

}  // namespace

absl::StatusOr<CapacityResult> SearchCapacity(
    const CapacityRequest& request, const policy::CancellationToken& cancel) {
  CapacityResult result;
  const double rate = request.workload.request_rate();
  std::vector<std::string> limits;
  for (const CapacityOption& option : request.options) {
    Unit best;
    double best_rate_at_limit = 0;  // the most any plan within max_gpus carries
    for (int gpus = 1; gpus <= option.max_gpus; gpus *= 2) {
      // A unit of more GPUs than the best total cannot do better.
      if (best.copies > 0 && gpus > best.total_gpus()) break;
      if (cancel.cancelled()) {
        result.cancelled = true;
        return result;
      }
      const std::shared_ptr<const simulator::CostModel> model =
          ModelOn(request, option, gpus);
      if (model == nullptr) continue;
      absl::StatusOr<std::unique_ptr<const policy::PlanSpace>> space =
          policy::PlanSpace::Create(*model);
      if (!space.ok()) continue;
      const simulator::TrafficDims& traffic = model->problem().workload.traffic;
      const simulator::LengthPoints in = simulator::Discretize(traffic.input);
      const simulator::LengthPoints out = simulator::Discretize(traffic.output);
      const simulator::WorkloadDims& w = model->problem().workload;
      for (const simulator::PlanDims& plan : policy::GridPlans(**space)) {
        const simulator::TrafficPrediction t =
            simulator::StepTimesOf(*model, plan);
        result.evaluations += 3;
        if (!t.computed) continue;
        Unit unit;
        unit.plan = plan;
        unit.gpus = gpus;
        unit.rate =
            t.replicas * simulator::MaxRequestRate(
                             t.steps, in, out, w.max_ttft_seconds,
                             w.max_tpot_seconds, traffic.slo_percentile);
        if (!(unit.rate > 0)) continue;
        unit.copies = static_cast<int>(std::ceil(rate / unit.rate - 1e-9));
        best_rate_at_limit =
            std::max(best_rate_at_limit, unit.rate * (option.max_gpus / gpus));
        if (unit.total_gpus() > option.max_gpus) continue;
        if (Better(unit, best)) best = unit;
      }
    }
    if (best.copies == 0) {
      limits.push_back(absl::StrFormat(
          "%s carries at most %.3g requests/s on its %d GPUs (max_gpus)",
          option.hardware, best_rate_at_limit, option.max_gpus));
      continue;
    }
    // The deployment: `copies` copies of the unit on their own cluster.
    const int total = best.total_gpus();
    const std::shared_ptr<const simulator::CostModel> model =
        ModelOn(request, option, total);
    if (model == nullptr) continue;
    simulator::PlanDims plan = best.plan;
    plan.replicas *= best.copies;
    if (!model->ValidatePlan(plan).ok()) continue;
    const simulator::Evaluation e = model->Evaluate(plan);
    result.evaluations += 1;
    CapacityPick pick;
    pick.option = option;
    pick.cluster.set_hardware(option.hardware);
    pick.cluster.set_num_gpus(total);
    pick.cluster.set_gpus_per_node(model->problem().cluster.gpus_per_node);
    pick.plan = simulator::PlanToProto(plan, model->problem());
    pick.prediction = simulator::PredictionToProto(e, model->problem());
    simulator::AddTrafficPrediction(*model, plan, option.price_per_gpu_hour,
                                    &pick.prediction);
    pick.cost_per_hour = option.price_per_gpu_hour * total;
    result.picks.push_back(std::move(pick));
  }
  for (size_t i = 0; i < result.picks.size(); ++i) {
    const CapacityPick& p = result.picks[i];
    if (!result.winner.has_value()) {
      result.winner = i;
      continue;
    }
    const CapacityPick& w = result.picks[*result.winner];
    const bool better = request.goal == policy::CapacityGoal::kMinCost
                            ? p.cost_per_hour < w.cost_per_hour ||
                                  (p.cost_per_hour == w.cost_per_hour &&
                                   p.cluster.num_gpus() < w.cluster.num_gpus())
                            : p.cluster.num_gpus() < w.cluster.num_gpus();
    if (better) result.winner = i;
  }
  if (result.picks.empty()) {
    result.no_fit_reason = absl::StrCat(
        "no cluster carries workload.request_rate ", rate,
        " requests/s within the SLOs",
        request.workload.slo_percentile() > 0
            ? absl::StrCat(" at p", request.workload.slo_percentile())
            : std::string(),
        ": ", absl::StrJoin(limits, "; "));
  }
  return result;
}

}  // namespace shardplan::server
