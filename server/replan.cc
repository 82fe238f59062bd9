#include "server/replan.h"

#include <cmath>

namespace shardplan::server {

shardplan::v1::Transition TransitionToProto(
    const simulator::TransitionObjective& objective,
    const simulator::PlanDims& plan) {
  shardplan::v1::Transition out;
  if (objective.model == nullptr) return out;
  const simulator::TransitionCost cost =
      objective.model->Diff(plan, /*with_node_loads=*/true);
  out.set_max_bytes_per_gpu(cost.max_bytes_per_gpu);
  out.set_total_bytes(cost.total_bytes);
  out.set_kv_bytes_lost(cost.kv_bytes_lost);
  out.set_gpus_unchanged(cost.gpus_unchanged);
  out.set_estimated_seconds(cost.estimated_seconds);
  out.set_rolling(cost.rolling);
  out.set_peer_bytes(cost.peer_bytes);
  out.set_storage_bytes(cost.storage_bytes);
  for (const simulator::NodeLoad& load : cost.node_loads) {
    shardplan::v1::NodeLoad* node = out.add_node_loads();
    node->set_node(load.node);
    node->set_node_group(load.node_group);
    node->set_bytes(load.bytes);
    node->set_seconds(load.seconds);
    node->set_what(load.what);
  }
  return out;
}

policy::WarmStart ReplanWarmStart(
    const std::vector<simulator::PlanDims>& current_plans,
    const policy::WarmStart* found) {
  policy::WarmStart out;
  out.elite_plans = current_plans;
  if (found != nullptr) {
    out.elite_plans.insert(out.elite_plans.end(), found->elite_plans.begin(),
                           found->elite_plans.end());
    out.policy_weights = found->policy_weights;
    out.source = found->source;
  }
  if (out.source.empty()) out.source = "current";
  return out;
}

double ReplanScore(const simulator::TransitionObjective& objective,
                   const policy::ScoredPlan& scored, double throughput) {
  simulator::Evaluation evaluation = scored.evaluation;
  const double penalty =
      simulator::ApplyTransitionObjective(objective, scored.plan, &evaluation);
  if (!evaluation.feasible) return 0;
  return throughput * std::exp(-penalty);
}

}  // namespace shardplan::server
