// One search, gRPC-free (server/search_job.h).
#include "server/search_job.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "policy/baselines.h"
#include "policy/disaggregated_grid.h"
#include "policy/plan_space.h"
#include "proto/spec_text.h"
#include "server/replan.h"
#include "server/store/elite_store.h"
#include "simulator/calibration.h"
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
      baseline_(std::move(baseline)) {}

double SearchJob::Score(const policy::ScoredPlan& scored) const {
  const double tokens_per_s =
      request_.conservative
          ? simulator::ConservativeOutputTokensPerS(
                scored.evaluation, request_.cost_model->problem())
          : Throughput(scored.evaluation);
  if (request_.transition != nullptr) {
    return ReplanScore(*request_.transition, scored, tokens_per_s);
  }
  return tokens_per_s;
}

SearchJob::Outcome SearchJob::Run(const policy::CancellationToken& cancel,
                                  Listener& listener) {
  const simulator::Problem& problem = request_.cost_model->problem();
  Outcome outcome;
  outcome.best = baseline_;
  std::optional<policy::SearchResult> result;
  std::optional<policy::ScoredPlan> streamed_best;
  WarmStartPersistence::Found found;
  if (cancel.cancelled()) {
    outcome.stop_reason = policy::StopReason::kCancelled;
  } else if (absl::StatusOr<std::unique_ptr<policy::Searcher>> searcher =
                 deps_.searcher_factory(request_.method);
             !searcher.ok()) {
    // Keeps the code: "rl" in a build without LibTorch is FAILED_PRECONDITION,
    // not a server bug.
    outcome.status =
        absl::Status(searcher.status().code(),
                     absl::StrCat("cannot create searcher \"", request_.method,
                                  "\": ", searcher.status().message()));
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
    policy::SearchOptions options;
    // The disaggregated search (or sweep) after this one shares the request's
    // budget of evaluations and, when it searches, of seconds.
    options.max_evaluations =
        std::max(1, request_.max_evaluations - DisaggregatedBudget());
    options.max_seconds = SearchesDisaggregatedSpace()
                              ? SecondsShare(options.max_evaluations)
                              : request_.max_seconds;
    options.seed = request_.seed;
    options.warm_start =
        found.warm_start.has_value() ? &*found.warm_start : nullptr;
    // Re-planning starts from the running plan too, and scores moves.
    policy::WarmStart replan_warm_start;
    if (request_.transition != nullptr) {
      replan_warm_start = ReplanWarmStart(replan_starts, options.warm_start);
      options.warm_start = &replan_warm_start;
      options.transition = request_.transition.get();
    }
    options.pool = deps_.eval_pool;
    options.elite_size = std::max(deps_.elite_size, request_.top_n);
    options.space = space.ok() ? space->get() : nullptr;
    options.baseline = &baseline_;
    Observer observer(*this, listener);
    absl::StatusOr<policy::SearchResult> searched =
        (*searcher)->Search(*request_.cost_model, options, cancel, observer);
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
    to_store.plans = result->elite;
    to_store.plans.push_back(result->best);
    to_store.policy_weights = result->policy_weights;
  }
  // The baseline was streamed first: it is stored even when the search found
  // nothing better, so that every final update is backed by the store.
  to_store.plans.push_back(baseline_);

  if (result.has_value()) {
    outcome = OutcomeOf(*result, cancel);
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
  if (request_.disaggregation != "off" && !cancel.cancelled()) {
    ToPersist disaggregated =
        AddDisaggregated(cancel, listener, found.warm_start, &outcome);
    to_store.plans.insert(to_store.plans.end(), disaggregated.plans.begin(),
                          disaggregated.plans.end());
    if (!disaggregated.policy_weights.empty()) {
      to_store.policy_weights = std::move(disaggregated.policy_weights);
    }
  }
  Persist(to_store.plans, to_store.policy_weights);
  return outcome;
}

bool SearchJob::SearchesDisaggregatedSpace() const {
  // Methods that search a plan space by sampling; "grid" and "megatron" are
  // rules (the disaggregated sweep is grid's counterpart) and "exhaustive"
  // cannot enumerate the joint space.
  return request_.disaggregation != "off" && request_.method != "grid" &&
         request_.method != "megatron" && request_.method != "exhaustive";
}

double SearchJob::SecondsShare(int evaluations) const {
  // A tiny positive max_seconds (5e-324 is valid) must not round to 0: the
  // searcher refuses 0, and the request asked for "as short as possible".
  return std::max(std::numeric_limits<double>::min(),
                  request_.max_seconds * evaluations /
                      std::max(1, request_.max_evaluations));
}

int SearchJob::DisaggregatedBudget() const {
  if (request_.disaggregation == "off") return 0;
  if (SearchesDisaggregatedSpace()) {
    // "auto": half each (the joint space is larger than the aggregated one,
    // but the aggregated search also serves the warm-start store's weights);
    // "only": seven eighths (the aggregated search then mostly serves the
    // baseline and the warm-start store).
    return request_.disaggregation == "only"
               ? request_.max_evaluations - request_.max_evaluations / 8
               : request_.max_evaluations / 2;
  }
  // The sweep: "auto" a quarter (its candidates are few next to the
  // aggregated space), "only" half.
  return request_.disaggregation == "only" ? request_.max_evaluations / 2
                                           : request_.max_evaluations / 4;
}

SearchJob::DisaggregatedFound SearchJob::SearchDisaggregated(
    const policy::CancellationToken& cancel, Listener& listener,
    const std::optional<policy::WarmStart>& warm_start,
    int evaluations_before) const {
  DisaggregatedFound found;
  absl::StatusOr<std::unique_ptr<policy::Searcher>> searcher =
      deps_.searcher_factory(request_.method);
  if (!searcher.ok()) return found;
  // Progress only: the stream's best stays the aggregated search's (the
  // final update reports the disaggregated best beside it).
  // Its counts continue the aggregated search's, without the baseline it
  // counts as its first evaluation.
  class ProgressObserver final : public policy::SearchObserver {
   public:
    ProgressObserver(Listener& listener, int offset)
        : listener_(listener), offset_(offset) {}
    void OnProgress(const policy::SearchProgress& progress) override {
      policy::SearchProgress p = progress;
      if (!baseline_dropped_ && p.evaluations_delta > 0) {
        --p.evaluations_delta;
        baseline_dropped_ = true;
      }
      p.evaluations = offset_ + std::max(0, progress.evaluations - 1);
      listener_.OnProgress(p);
    }

   private:
    Listener& listener_;
    const int offset_;
    bool baseline_dropped_ = false;
  } observer(listener, evaluations_before);
  policy::SearchOptions options;
  options.disaggregated = true;
  // The baseline counts as the search's first evaluation though it was made
  // before: one more, so that the search gets its share in full.
  options.max_evaluations = DisaggregatedBudget() + 1;
  options.max_seconds = std::max(0.1, SecondsShare(DisaggregatedBudget()));
  options.seed = request_.seed;
  // The same stored state as the aggregated search: the search skips plans of
  // the other kind, and the weights fit either space.
  options.warm_start = warm_start.has_value() ? &*warm_start : nullptr;
  options.pool = deps_.eval_pool;
  options.elite_size = std::max(deps_.elite_size, request_.top_n);
  options.baseline = &baseline_;
  absl::StatusOr<policy::SearchResult> result =
      (*searcher)->Search(*request_.cost_model, options, cancel, observer);
  if (!result.ok()) {
    LOG(WARNING) << "disaggregated " << request_.method
                 << " search failed: " << result.status();
    return found;
  }
  found.evaluations = std::max(0, result->evaluations - 1);
  found.stop_reason = result->stop_reason;
  // Only disaggregated plans: a searcher that ignored the option (a test's
  // fake) contributes evaluations, nothing else.
  auto keep = [](const std::vector<policy::ScoredPlan>& plans) {
    std::vector<policy::ScoredPlan> out;
    for (const policy::ScoredPlan& p : plans)
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

SearchJob::ToPersist SearchJob::AddDisaggregated(
    const policy::CancellationToken& cancel, Listener& listener,
    const std::optional<policy::WarmStart>& warm_start,
    Outcome* outcome) const {
  const int frontier_size = policy::SearchOptions().frontier_size;
  DisaggregatedFound sweep;
  ToPersist to_store;
  if (SearchesDisaggregatedSpace()) {
    sweep =
        SearchDisaggregated(cancel, listener, warm_start, outcome->evaluations);
    // Its elite warm-starts the next disaggregated search of the problem,
    // and its weights the family's next searches: carried to a new problem
    // they lift a disaggregated search at small budgets, while aggregated
    // searches do as well from them as from aggregated-trained ones
    // (docs/benchmarks.md, "Learning across problems").
    to_store.plans = sweep.elite;
    if (sweep.found) to_store.plans.push_back(sweep.best);
    to_store.policy_weights = sweep.policy_weights;
  }
  // The sweep: for the methods that do not search, or with what is left of
  // the share when the search found nothing.
  const int sweep_budget = DisaggregatedBudget() - sweep.evaluations;
  bool sweep_stopped_at_budget = false;
  if (!sweep.found && sweep_budget > 0 && !cancel.cancelled()) {
    const policy::DisaggregatedSweep grid = policy::SweepDisaggregated(
        *request_.cost_model, sweep_budget, Throughput(baseline_.evaluation),
        cancel, frontier_size);
    sweep.evaluations += grid.evaluations;
    sweep_stopped_at_budget = !grid.complete && !cancel.cancelled();
    sweep.best = grid.best;
    sweep.found = grid.found;
    sweep.frontier = grid.frontier;
    policy::SearchProgress progress;  // for the evaluation counters
    progress.evaluations_delta = grid.evaluations;
    progress.evaluations = outcome->evaluations + sweep.evaluations;
    listener.OnProgress(progress);
  }
  outcome->evaluations += sweep.evaluations;
  if (sweep.found) outcome->best_disaggregated = sweep.best;
  if (request_.disaggregation == "only") {
    // The sweep is the search here: stopped at its share of the budget, it
    // reports that, not the aggregated rule's "exhausted".
    if (sweep_stopped_at_budget)
      outcome->stop_reason = policy::StopReason::kBudget;
    outcome->best = sweep.best;
    outcome->top_plans.clear();
    if (sweep.found) outcome->top_plans.push_back(sweep.best);
    outcome->frontier = sweep.frontier;
    return to_store;
  }
  // The frontier over everything evaluated, agg and disagg (marked by
  // FrontierPoint.disaggregated).
  outcome->frontier =
      policy::MergeFrontiers(outcome->frontier, sweep.frontier, frontier_size);
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
