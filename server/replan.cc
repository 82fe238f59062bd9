#include "server/replan.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

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

namespace {

void ClearPlacements(shardplan::v1::Plan* plan) {
  plan->clear_placement();
  if (plan->has_prefill()) plan->mutable_prefill()->clear_placement();
  if (plan->has_decode()) plan->mutable_decode()->clear_placement();
}

}  // namespace

std::string FitUpdate(size_t max_bytes, shardplan::v1::PlanUpdate* update) {
  std::vector<std::string> dropped;
  auto fits = [&] { return update->ByteSizeLong() <= max_bytes; };
  if (fits()) return "";
  for (shardplan::v1::TopPlan& top : *update->mutable_top_plans()) {
    ClearPlacements(top.mutable_plan());
  }
  for (shardplan::v1::FrontierPoint& point : *update->mutable_frontier()) {
    ClearPlacements(point.mutable_plan());
  }
  if (update->has_summary()) {
    shardplan::v1::SearchSummary* summary = update->mutable_summary();
    if (summary->has_best_aggregated_plan()) {
      ClearPlacements(summary->mutable_best_aggregated_plan());
    }
    if (summary->has_best_disaggregated_plan()) {
      ClearPlacements(summary->mutable_best_disaggregated_plan());
    }
  }
  dropped.push_back("placements of top plans and frontier points");
  if (!fits() && update->has_transition() &&
      update->transition().node_loads_size() > 0) {
    // The nodes that load the most stay; the rest are summed in the totals.
    auto* loads = update->mutable_transition()->mutable_node_loads();
    std::stable_sort(
        loads->begin(), loads->end(),
        [](const shardplan::v1::NodeLoad& a, const shardplan::v1::NodeLoad& b) {
          return a.bytes() > b.bytes();
        });
    const size_t rest =
        update->ByteSizeLong() - update->transition().ByteSizeLong();
    size_t budget = max_bytes > rest + 64 ? max_bytes - rest - 64 : 0;
    int keep = 0;
    for (const shardplan::v1::NodeLoad& load : *loads) {
      const size_t bytes = load.ByteSizeLong() + 4;
      if (bytes > budget) break;
      budget -= bytes;
      ++keep;
    }
    const int total = loads->size();
    loads->DeleteSubrange(keep, total - keep);
    dropped.push_back(absl::StrCat(total - keep, " of ", total,
                                   " node loads (the largest kept)"));
  }
  if (!fits() && update->has_plan()) {
    ClearPlacements(update->mutable_plan());
    dropped.push_back("the plan's placement");
  }
  int points = 0, tops = 0;
  while (!fits() && update->frontier_size() > 0) {
    update->mutable_frontier()->RemoveLast();
    ++points;
  }
  while (!fits() && update->top_plans_size() > 0) {
    update->mutable_top_plans()->RemoveLast();
    ++tops;
  }
  if (points > 0) dropped.push_back(absl::StrCat(points, " frontier points"));
  if (tops > 0) dropped.push_back(absl::StrCat(tops, " top plans"));
  return absl::StrJoin(dropped, ", ");
}

}  // namespace shardplan::server
