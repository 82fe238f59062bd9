// The policy-level search of one request: the request's method over the
// aggregated plan space, then (options.disaggregation auto / only) the same
// method over the disaggregated joint space, or the disaggregated sweep for
// the methods that do not sample a space, on one budget of evaluations and
// seconds split between the two, both ranked by the request's objective.
// server/search_job.h adds the warm start, persistence and reporting.
#ifndef SHARDPLAN_POLICY_PLAN_SEARCH_H_
#define SHARDPLAN_POLICY_PLAN_SEARCH_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "policy/objective.h"
#include "policy/searcher.h"
#include "simulator/cost_model.h"

namespace shardplan::policy {

// Makes the searcher of a method; CreateSearcher by default, tests inject
// fakes.
using MethodFactory =
    std::function<absl::StatusOr<std::unique_ptr<Searcher>>(SearchMethod)>;

// The server's default method (options.method left empty) for a space of
// `joint_tuples` degree tuples: rl, except genetic over a joint
// prefill/decode space of more than PlanSpace::kLargeJointSpace tuples, where
// genetic reached better plans than rl at equal wall time on 6 of 8 held-out
// generated problems of 256-512 GPUs (docs/search.md, "The server's default
// method").
SearchMethod DefaultMethod(bool disaggregated, int joint_tuples);

struct PlanSearchOptions {
  SearchMethod method = SearchMethod::kRl;
  // The request left the method to the server: `method` is the aggregated
  // kind's, and the disaggregated kind's is DefaultMethod of its joint space.
  bool default_method = false;
  Disaggregation disaggregation = Disaggregation::kAuto;
  // The request's whole budget (max_evaluations, max_seconds), seed, warm
  // start, pool, elite size and objective. `space` and `baseline`, when set,
  // are the aggregated ones. `disaggregated` is ignored: `disaggregation`
  // decides.
  SearchOptions search;
};

// The evaluations and seconds of the request's budget each kind gets.
struct BudgetSplit {
  int aggregated_evaluations = 0;
  double aggregated_seconds = 0;
  // The disaggregated search's or sweep's share (0 when disaggregation is
  // off); its seconds only bound a search, not the sweep.
  int disaggregated_evaluations = 0;
  double disaggregated_seconds = 0;
};
// Methods that sample a space (SamplesPlanSpace): "auto" half each (the joint
// space is larger than the aggregated one, but the aggregated search also
// serves the warm-start store's weights), "only" seven eighths to the joint
// space (the aggregated search then mostly serves the baseline and the
// store); seconds in proportion. The others sweep: "auto" a quarter (the
// sweep's candidates are few next to the aggregated space), "only" half; the
// aggregated search keeps all the seconds.
BudgetSplit SplitBudget(SearchMethod method, Disaggregation disaggregation,
                        int max_evaluations, double max_seconds);

// What the disaggregated search or sweep found.
struct DisaggregatedFound {
  SearchMethod method = SearchMethod::kRl;  // the method that searched it
  ScoredPlan best;                          // infeasible when none was found
  bool found = false;
  int evaluations = 0;  // without the baseline a search counts first
  std::vector<ScoredPlan> frontier;
  std::vector<ScoredPlan> elite;
  std::string policy_weights;  // a search's ("" for the sweep)
  // The sweep ran (the method does not sample, or its search found nothing);
  // best, found and frontier are then the sweep's.
  bool swept = false;
  // The sweep stopped at its share of the budget (not complete, not
  // cancelled).
  bool sweep_stopped_at_budget = false;
};

struct PlanSearchResult {
  // The aggregated search's result.
  SearchResult aggregated;
  // Unset when disaggregation is off or the search was cancelled before.
  std::optional<DisaggregatedFound> disaggregated;
};

// Runs the search of both kinds for `options`. The aggregated search reports
// everything to `observer`; the disaggregated one only progress, its
// evaluation counts continuing the aggregated search's. Returns the
// aggregated searcher's error (CANCELLED when cancelled during it; the
// disaggregated kind is then not searched); a failed disaggregated search
// falls back to the sweep. Deterministic for a seed.
absl::StatusOr<PlanSearchResult> SearchPlans(
    const simulator::CostModel& model, const PlanSearchOptions& options,
    const CancellationToken& cancel, SearchObserver& observer,
    const MethodFactory& make = MethodFactory());

}  // namespace shardplan::policy

#endif  // SHARDPLAN_POLICY_PLAN_SEARCH_H_
