// One search, gRPC-free (server/search_job.h).
#include "server/search_job.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "policy/baselines.h"
#include "policy/disaggregated_grid.h"
#include "policy/plan_space.h"
#include "proto/spec_text.h"
#include "server/replan.h"
#include "server/store/elite_store.h"
#include "simulator/spec.h"

namespace shardplan::server {
namespace {

double Throughput(const simulator::Evaluation& evaluation) {
  return evaluation.feasible ? evaluation.output_tokens_per_s : 0.0;
}

// Whether two plans are the same choice for a user: the same plan, or a variant
// with the same degrees and batch whose throughput, TTFT and TPOT are within
// 0.1% (e.g. a different split of an operator that costs next to nothing).
// Top plans list one of each.
bool SameChoice(const policy::ScoredPlan& a, const policy::ScoredPlan& b) {
  if (a.plan == b.plan) return true;
  const simulator::PlanDims& p = a.plan;
  const simulator::PlanDims& q = b.plan;
  auto close = [](double x, double y) {
    return std::abs(x - y) <= 1e-3 * std::max(std::abs(x), std::abs(y));
  };
  return p.replicas == q.replicas && p.dp == q.dp && p.tp == q.tp &&
         p.pp == q.pp && p.ep == q.ep &&
         a.evaluation.batch_size == b.evaluation.batch_size &&
         close(a.evaluation.output_tokens_per_s,
               b.evaluation.output_tokens_per_s) &&
         close(a.evaluation.tpot_seconds, b.evaluation.tpot_seconds) &&
         close(a.evaluation.ttft_seconds, b.evaluation.ttft_seconds);
}

}  // namespace

// Forwards the searcher's improvements that beat, by the request's objective,
// what was reported before (the baseline first).
class SearchJob::Observer final : public policy::SearchObserver {
 public:
  Observer(const SearchJob& job, Listener& listener)
      : job_(job),
        listener_(listener),
        best_(job.baseline_),
        best_score_(job.Score(job.baseline_)) {}

  void OnImprovement(const policy::Improvement& improvement) override {
    const double score = job_.Score(improvement.best);
    if (score <= best_score_) return;
    best_ = improvement.best;
    best_score_ = score;
    listener_.OnImprovement(improvement.best, improvement.evaluations);
  }
  void OnProgress(const policy::SearchProgress& progress) override {
    listener_.OnProgress(progress);
  }
  const policy::ScoredPlan& best() const { return best_; }

 private:
  const SearchJob& job_;
  Listener& listener_;
  policy::ScoredPlan best_;
  double best_score_;
};

SearchJob::SearchJob(SearchJobDeps deps, const ValidatedPlanRequest& request,
                     policy::ScoredPlan baseline)
    : deps_(std::move(deps)),
      request_(request),
      scorer_(request.objective(), request.cost_model->problem()),
      baseline_(std::move(baseline)) {}

SearchJob::Outcome SearchJob::Run(const policy::CancellationToken& cancel,
                                  Listener& listener) {
  const simulator::Problem& problem = request_.cost_model->problem();
  Outcome outcome;
  outcome.best = baseline_;
  std::optional<policy::PlanSearchResult> result;
  std::optional<policy::ScoredPlan> streamed_best;
  WarmStartPersistence::Found found;
  if (cancel.cancelled()) {
    outcome.stop_reason = policy::StopReason::kCancelled;
  } else {
    // One plan space for the grid reference and the search.
    absl::StatusOr<std::unique_ptr<const policy::PlanSpace>> space =
        policy::PlanSpace::Create(*request_.cost_model);
    std::vector<simulator::PlanDims> replan_starts = request_.current_plans;
    if (space.ok()) {
      const policy::ScoredPlan grid = policy::GridBest(**space);
      grid_tokens_per_s_.store(Throughput(grid.evaluation),
                               std::memory_order_release);
      // A re-plan also starts from what a fresh plan would be, so it never
      // ends below it by the objective for want of finding it.
      if (grid.evaluation.feasible) replan_starts.push_back(grid.plan);
    }
    found = deps_.history->Find(MakeProblemKey(problem), request_.warm_start);
    policy::PlanSearchOptions plan_search;
    plan_search.method = request_.method;
    plan_search.default_method = request_.method_defaulted;
    plan_search.disaggregation = request_.disaggregation;
    policy::SearchOptions& options = plan_search.search;
    options.max_evaluations = request_.max_evaluations;
    options.max_seconds = request_.max_seconds;
    options.seed = request_.seed;
    options.warm_start =
        found.warm_start.has_value() ? &*found.warm_start : nullptr;
    // Re-planning starts from the running plan too.
    policy::WarmStart replan_warm_start;
    if (request_.transition != nullptr) {
      replan_warm_start = ReplanWarmStart(replan_starts, options.warm_start);
      options.warm_start = &replan_warm_start;
    }
    options.objective = request_.objective();
    options.pool = deps_.eval_pool;
    options.elite_size = std::max(deps_.elite_size, request_.top_n);
    options.space = space.ok() ? space->get() : nullptr;
    options.baseline = &baseline_;
    Observer observer(*this, listener);
    absl::StatusOr<policy::PlanSearchResult> searched = policy::SearchPlans(
        *request_.cost_model, plan_search, cancel, observer,
        [this](policy::SearchMethod method) {
          return deps_.searcher_factory(policy::SearchMethodName(method));
        });
    streamed_best = observer.best();
    if (searched.ok()) {
      result = *std::move(searched);
    } else if (absl::IsCancelled(searched.status())) {
      outcome.stop_reason = policy::StopReason::kCancelled;
    } else {
      outcome.status = searched.status();
    }
  }

  ToPersist to_store;
  if (result.has_value()) {
    to_store.plans = result->aggregated.elite;
    to_store.plans.push_back(result->aggregated.best);
    to_store.policy_weights = result->aggregated.policy_weights;
  }
  // The baseline was streamed first: it is stored even when the search found
  // nothing better, so that every final update is backed by the store.
  to_store.plans.push_back(baseline_);

  if (result.has_value()) {
    outcome = OutcomeOf(result->aggregated, cancel);
  } else {
    outcome.top_plans = {baseline_};
  }
  if (streamed_best.has_value() &&
      Score(*streamed_best) > Score(outcome.best)) {
    outcome.best = *streamed_best;
  }
  if (!result.has_value()) {
    outcome.warm_started = found.warm_start.has_value();
  }
  if (outcome.warm_started && found.warm_start.has_value()) {
    outcome.warm_start_source = found.warm_start->source;
  }
  if (result.has_value() && result->disaggregated.has_value()) {
    ToPersist disaggregated =
        AddDisaggregated(*std::move(result->disaggregated), &outcome);
    to_store.plans.insert(to_store.plans.end(), disaggregated.plans.begin(),
                          disaggregated.plans.end());
    if (!disaggregated.policy_weights.empty()) {
      to_store.policy_weights = std::move(disaggregated.policy_weights);
    }
  }
  Persist(to_store.plans, to_store.policy_weights);
  return outcome;
}

SearchJob::ToPersist SearchJob::AddDisaggregated(
    policy::DisaggregatedFound found, Outcome* outcome) const {
  const int frontier_size = policy::SearchOptions().frontier_size;
  ToPersist to_store;
  // A search's elite warm-starts the next disaggregated search of the
  // problem, and its weights the family's next searches: carried to a new
  // problem they lift a disaggregated search at small budgets, while
  // aggregated searches do as well from them as from aggregated-trained ones
  // (docs/benchmarks.md, "Learning across problems"). The sweep stores
  // nothing.
  if (policy::SamplesPlanSpace(request_.method)) {
    to_store.plans = found.elite;
    if (found.found && !found.swept) to_store.plans.push_back(found.best);
    to_store.policy_weights = std::move(found.policy_weights);
  }
  outcome->evaluations += found.evaluations;
  if (found.found) outcome->best_disaggregated = found.best;
  if (request_.disaggregation == policy::Disaggregation::kOnly) {
    // The sweep is the search here: stopped at its share of the budget, it
    // reports that, not the aggregated rule's "exhausted".
    if (found.sweep_stopped_at_budget)
      outcome->stop_reason = policy::StopReason::kBudget;
    outcome->best = found.best;
    outcome->top_plans.clear();
    if (found.found) outcome->top_plans.push_back(found.best);
    outcome->frontier = found.frontier;
    return to_store;
  }
  // The frontier over everything evaluated, agg and disagg (marked by
  // FrontierPoint.disaggregated).
  outcome->frontier =
      policy::MergeFrontiers(outcome->frontier, found.frontier, frontier_size);
  if (outcome->best.evaluation.feasible) {
    outcome->best_aggregated = outcome->best;
  }
  return to_store;
}

SearchJob::Outcome SearchJob::Abandon() {
  if (baseline_.evaluation.feasible) Persist({baseline_}, "");
  Outcome outcome;
  outcome.stop_reason = policy::StopReason::kCancelled;
  outcome.best = baseline_;
  if (baseline_.evaluation.feasible) outcome.top_plans = {baseline_};
  return outcome;
}

SearchJob::Outcome SearchJob::OutcomeOf(
    const policy::SearchResult& result,
    const policy::CancellationToken& cancel) const {
  Outcome outcome;
  outcome.stop_reason = result.stop_reason;
  outcome.evaluations = result.evaluations;
  outcome.iterations = result.iterations;
  outcome.space_size = result.space_size;
  outcome.warm_started = result.warm_started;
  outcome.frontier = result.frontier;
  // Candidates: the elite (top-K distinct by expected throughput, which the
  // conservative objective may order differently), the frontier (other
  // layouts and batches when the elite is variants of one plan), the best and
  // the baseline.
  std::vector<policy::ScoredPlan> candidates = result.elite;
  candidates.insert(candidates.end(), result.frontier.begin(),
                    result.frontier.end());
  candidates.push_back(result.best);
  candidates.push_back(baseline_);
  // Each candidate scored once: a re-plan's score diffs the plan against the
  // running one (O(GPUs), tens of ms on 16k GPUs), and a sort comparing
  // scores would diff each candidate ~2 log n times.
  std::vector<std::pair<double, size_t>> order;
  order.reserve(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) {
    // Once cancelled, the rest keep their search order (best first).
    const bool scored = !cancel.cancelled() || i == 0;
    order.push_back({scored ? Score(candidates[i]) : 0.0, i});
  }
  std::stable_sort(
      order.begin(), order.end(),
      [](const std::pair<double, size_t>& a,
         const std::pair<double, size_t>& b) { return a.first > b.first; });
  std::vector<policy::ScoredPlan> sorted;
  sorted.reserve(candidates.size());
  for (const auto& [score, i] : order) sorted.push_back(candidates[i]);
  candidates = std::move(sorted);
  outcome.best = candidates.front();
  for (const policy::ScoredPlan& scored : candidates) {
    if (static_cast<int>(outcome.top_plans.size()) >= request_.top_n) break;
    if (!scored.evaluation.feasible) continue;
    const bool seen =
        std::any_of(outcome.top_plans.begin(), outcome.top_plans.end(),
                    [&](const policy::ScoredPlan& kept) {
                      return SameChoice(kept, scored);
                    });
    if (!seen) outcome.top_plans.push_back(scored);
  }
  return outcome;
}

void SearchJob::Persist(const std::vector<policy::ScoredPlan>& plans,
                        const std::string& policy_weights) const {
  const simulator::Problem& problem = request_.cost_model->problem();
  std::vector<StoredPlan> stored;
  for (const policy::ScoredPlan& scored : plans) {
    if (!scored.evaluation.feasible) continue;
    StoredPlan s;
    s.plan = scored.plan;
    s.reward = scored.reward;
    s.output_tokens_per_s = Throughput(scored.evaluation);
    s.prediction_json = spec_text::ToJson(
        simulator::PredictionToProto(scored.evaluation, problem),
        /*pretty=*/false);
    stored.push_back(std::move(s));
  }
  deps_.history->Record(MakeProblemKey(problem), problem, stored,
                        policy_weights);
}

}  // namespace shardplan::server
