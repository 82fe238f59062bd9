// The search of both plan kinds on one budget (policy/plan_search.h).
#include "policy/plan_search.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "policy/disaggregated_grid.h"
#include "policy/plan_space.h"

namespace shardplan::policy {
namespace {

// Progress only: the caller's best stays the aggregated search's (the
// disaggregated best is reported beside it). Its counts continue the
// aggregated search's, without the baseline it counts as its first
// evaluation.
class ContinuedProgress final : public SearchObserver {
 public:
  ContinuedProgress(SearchObserver& observer, int offset)
      : observer_(observer), offset_(offset) {}
  void OnProgress(const SearchProgress& progress) override {
    SearchProgress p = progress;
    if (!baseline_dropped_ && p.evaluations_delta > 0) {
      --p.evaluations_delta;
      baseline_dropped_ = true;
    }
    p.evaluations = offset_ + std::max(0, progress.evaluations - 1);
    observer_.OnProgress(p);
  }

 private:
  SearchObserver& observer_;
  const int offset_;
  bool baseline_dropped_ = false;
};

double Throughput(const simulator::Evaluation& evaluation) {
  return evaluation.feasible ? evaluation.output_tokens_per_s : 0.0;
}

// The same method over the joint space, on its share of the budget.
DisaggregatedFound SearchDisaggregatedSpace(const simulator::CostModel& model,
                                            const PlanSearchOptions& request,
                                            const BudgetSplit& split,
                                            const MethodFactory& make,
                                            const CancellationToken& cancel,
                                            SearchObserver& observer,
                                            int evaluations_before) {
  DisaggregatedFound found;
  found.method = request.method;
  // The default method depends on the joint space's size: built here once
  // and handed to the searcher.
  std::unique_ptr<const PlanSpace> joint;
  if (request.default_method) {
    absl::StatusOr<std::unique_ptr<const PlanSpace>> space =
        PlanSpace::CreateDisaggregated(model);
    if (space.ok()) {
      joint = *std::move(space);
      found.method = DefaultMethod(true, joint->NumChoices(kDegreesDecision));
    }
  }
  absl::StatusOr<std::unique_ptr<Searcher>> searcher = make(found.method);
  if (!searcher.ok()) return found;
  ContinuedProgress progress(observer, evaluations_before);
  SearchOptions options = request.search;
  options.disaggregated = true;
  // The baseline counts as the search's first evaluation though it was made
  // before: one more, so that the search gets its share in full.
  options.max_evaluations = split.disaggregated_evaluations + 1;
  options.max_seconds = std::max(0.1, split.disaggregated_seconds);
  // The same stored state as the aggregated search: the search skips plans of
  // the other kind, and the weights fit either space.
  options.space = joint.get();
  // The transition diff models aggregated plans only.
  options.objective.transition = nullptr;
  absl::StatusOr<SearchResult> result =
      (*searcher)->Search(model, options, cancel, progress);
  if (!result.ok()) {
    LOG(WARNING) << "disaggregated " << SearchMethodName(found.method)
                 << " search failed: " << result.status();
    return found;
  }
  found.evaluations = std::max(0, result->evaluations - 1);
  // Only disaggregated plans: a searcher that ignored the option (a test's
  // fake) contributes evaluations, nothing else.
  auto keep = [](const std::vector<ScoredPlan>& plans) {
    std::vector<ScoredPlan> out;
    for (const ScoredPlan& p : plans)
      if (p.plan.disaggregated) out.push_back(p);
    return out;
  };
  found.frontier = keep(result->frontier);
  found.elite = keep(result->elite);
  if (result->best.plan.disaggregated) found.best = result->best;
  found.found =
      result->best.plan.disaggregated && result->best.evaluation.feasible;
  found.policy_weights = std::move(result->policy_weights);
  return found;
}

}  // namespace

SearchMethod DefaultMethod(bool disaggregated, int joint_tuples) {
  return disaggregated && joint_tuples > PlanSpace::kLargeJointSpace
             ? SearchMethod::kGenetic
             : SearchMethod::kRl;
}

BudgetSplit SplitBudget(SearchMethod method, Disaggregation disaggregation,
                        int max_evaluations, double max_seconds) {
  const bool off = disaggregation == Disaggregation::kOff;
  const bool only = disaggregation == Disaggregation::kOnly;
  const bool samples = !off && SamplesPlanSpace(method);
  BudgetSplit split;
  if (off) {
    split.disaggregated_evaluations = 0;
  } else if (samples) {
    split.disaggregated_evaluations =
        only ? max_evaluations - max_evaluations / 8 : max_evaluations / 2;
  } else {
    split.disaggregated_evaluations =
        only ? max_evaluations / 2 : max_evaluations / 4;
  }
  split.aggregated_evaluations =
      std::max(1, max_evaluations - split.disaggregated_evaluations);
  // The seconds in proportion to the evaluations when both kinds search. A
  // tiny positive max_seconds (5e-324 is valid) must not round to 0: the
  // searcher refuses 0, and the request asked for "as short as possible".
  auto share = [&](int evaluations) {
    return std::max(std::numeric_limits<double>::min(),
                    max_seconds * evaluations / std::max(1, max_evaluations));
  };
  split.aggregated_seconds =
      samples ? share(split.aggregated_evaluations) : max_seconds;
  split.disaggregated_seconds = share(split.disaggregated_evaluations);
  return split;
}

absl::StatusOr<PlanSearchResult> SearchPlans(const simulator::CostModel& model,
                                             const PlanSearchOptions& options,
                                             const CancellationToken& cancel,
                                             SearchObserver& observer,
                                             const MethodFactory& make) {
  const MethodFactory& factory =
      make ? make : MethodFactory([](SearchMethod m) {
        return CreateSearcher(SearchMethodName(m));
      });
  const BudgetSplit split =
      SplitBudget(options.method, options.disaggregation,
                  options.search.max_evaluations, options.search.max_seconds);
  absl::StatusOr<std::unique_ptr<Searcher>> searcher = factory(options.method);
  if (!searcher.ok()) {
    // Keeps the code: "rl" in a build without LibTorch is FAILED_PRECONDITION,
    // not a server bug.
    return absl::Status(searcher.status().code(),
                        absl::StrCat("cannot create searcher \"",
                                     SearchMethodName(options.method),
                                     "\": ", searcher.status().message()));
  }
  SearchOptions aggregated = options.search;
  aggregated.disaggregated = false;
  aggregated.max_evaluations = split.aggregated_evaluations;
  aggregated.max_seconds = split.aggregated_seconds;
  absl::StatusOr<SearchResult> searched =
      (*searcher)->Search(model, aggregated, cancel, observer);
  if (!searched.ok()) return searched.status();
  PlanSearchResult result;
  result.aggregated = *std::move(searched);
  if (options.disaggregation == Disaggregation::kOff || cancel.cancelled()) {
    return result;
  }

  DisaggregatedFound found;
  if (SamplesPlanSpace(options.method)) {
    found = SearchDisaggregatedSpace(model, options, split, factory, cancel,
                                     observer, result.aggregated.evaluations);
  }
  // The sweep: for the methods that do not sample, or with what is left of
  // the share when the search found nothing.
  const int sweep_budget = split.disaggregated_evaluations - found.evaluations;
  if (!found.found && sweep_budget > 0 && !cancel.cancelled()) {
    const ScoredPlan& baseline = result.aggregated.baseline;
    const DisaggregatedSweep sweep =
        SweepDisaggregated(model, sweep_budget, Throughput(baseline.evaluation),
                           cancel, options.search.frontier_size);
    found.swept = true;
    found.evaluations += sweep.evaluations;
    found.sweep_stopped_at_budget = !sweep.complete && !cancel.cancelled();
    found.best = sweep.best;
    found.found = sweep.found;
    found.frontier = sweep.frontier;
    SearchProgress progress;  // for the evaluation counters
    progress.evaluations_delta = sweep.evaluations;
    progress.evaluations = result.aggregated.evaluations + found.evaluations;
    observer.OnProgress(progress);
  }
  result.disaggregated = std::move(found);
  return result;
}

}  // namespace shardplan::policy
