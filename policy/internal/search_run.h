// Shared bookkeeping of one Search call, used by every searcher: plan space,
// the Megatron baseline, budget (evaluations, seconds, cancellation),
// evaluation through the pool with a de-duplicating cache, rewards, elite
// history, the throughput-latency frontier and observer reports.
#ifndef SHARDPLAN_POLICY_INTERNAL_SEARCH_RUN_H_
#define SHARDPLAN_POLICY_INTERNAL_SEARCH_RUN_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "policy/elite_history.h"
#include "policy/internal/pareto_archive.h"
#include "policy/objective.h"
#include "policy/plan_space.h"
#include "policy/searcher.h"

namespace shardplan::policy::internal {

// Reward of an evaluation against the reference throughput (the Megatron
// plan's, or 1 token/s when that plan is infeasible): log(throughput /
// reference), floored at kFeasibleFloor; infeasible plans get
// kInfeasiblePenalty minus up to 2 by how far over the limit they are.
inline constexpr double kFeasibleFloor = -3.5;
inline constexpr double kInfeasiblePenalty = -4.0;
double RewardFor(const simulator::Evaluation& evaluation,
                 double reference_tokens_per_s);

class SearchRun {
 public:
  SearchRun(const simulator::CostModel& model, const SearchOptions& options,
            const CancellationToken& cancel, SearchObserver& observer);

  // Builds the plan space and evaluates the Megatron baseline (one evaluation),
  // or takes them from options.space / options.baseline; reports the baseline
  // through SearchObserver::OnBaseline.
  absl::Status Start();

  const simulator::CostModel& model() const { return model_; }
  const SearchOptions& options() const { return options_; }
  const PlanSpace& space() const { return *space_; }
  const ParetoArchive& frontier() const { return frontier_; }
  const ScoredPlan& baseline() const { return baseline_; }
  // The baseline as decisions, when it is representable in the space.
  const std::optional<Decisions>& baseline_decisions() const {
    return baseline_decisions_;
  }
  double reference_tokens_per_s() const { return reference_; }

  // Re-evaluates the warm-start plans (each counts against the budget) and
  // returns the decisions of those representable in the space, best first.
  std::vector<Decisions> EvaluateWarmStart();
  // Scores `plan` (of the space's kind) as decisions of the space, like
  // Evaluate. A batch of 0 is the cost model's choice: one evaluation learns
  // it, a second scores the plan at it. nullopt when the plan fails
  // ValidatePlan or is not in the space, or when the budget ran out.
  std::optional<std::pair<Decisions, ScoredPlan>> EvaluatePlan(
      const simulator::PlanDims& plan);
  // EvaluatePlan of each plan, the evaluations of each step through the pool
  // at once; entry i is plans[i]'s.
  std::vector<std::optional<std::pair<Decisions, ScoredPlan>>> EvaluatePlans(
      absl::Span<const simulator::PlanDims> plans);

  // Scores `batch` in order. Plans seen before in this search come from the
  // cache for free; new ones cost one evaluation each and run on the pool. When
  // the budget runs out midway the result is truncated (it has fewer entries
  // than `batch`). `fresh` (optional) gets whether each returned entry cost an
  // evaluation. Updates the best plan, the elite history and reports
  // improvements in input order.
  std::vector<ScoredPlan> Evaluate(absl::Span<const Decisions> batch,
                                   std::vector<uint8_t>* fresh = nullptr);

  // Whether the search must stop (budget, time, cancellation, or the space is
  // exhausted); sets the stop reason. Cheap; call at least once per iteration.
  bool Done();
  // Reports progress (evaluations since the previous report) to the observer.
  void ReportProgress(int iterations_delta);
  // Marks the search as stopped because nothing new can be found.
  void MarkExhausted() { exhausted_ = true; }
  // Exhaustive enumeration never revisits a plan: it turns the cache off to
  // save memory.
  void DisableCache() {
    use_cache_ = false;
    distinct_ = 0;
  }

  // Whether the plan of this PlanSpace::Hash has been scored in this search
  // (a repeat costs no evaluation).
  bool IsCachedHash(uint64_t hash) const { return cache_.count(hash) > 0; }
  int evaluations() const { return evaluations_; }
  int remaining() const {
    return std::max(0, options_.max_evaluations - evaluations_);
  }
  double ElapsedSeconds() const;
  const ScoredPlan& best() const { return best_; }
  bool has_feasible() const { return has_feasible_; }
  EliteHistory& elite() { return elite_; }
  void set_warm_started(bool w) { warm_started_ = w; }
  void set_iterations(int n) { iterations_ = n; }

  // The result, cancelled or not (stop_reason from Done()). Fills the frontier
  // first by a batch sweep of its layouts (see FillFrontier).
  SearchResult Finish(std::string policy_weights = "");

 private:
  void Consider(const ScoredPlan& scored, const Decisions* decisions);
  // Re-evaluates each frontier layout at the smaller batch sizes of
  // simulator::BatchSizeCandidates(): faster per user, less per GPU. The curve
  // a search finds otherwise has few points at the per-user end, since the
  // cost model picks each layout's highest-throughput batch. At most
  // frontier_size x candidates extra cost-model calls, outside the budget;
  // nothing when the workload fixes the concurrency.
  void FillFrontier();
  // The plan scored; infeasible (kEngineCannotRun) when the workload's engine
  // cannot launch it (any engine when none is named): plans from outside the
  // space (warm starts) and batch-split attention, which the space's
  // per-tuple check cannot see.
  ScoredPlan Score(const simulator::PlanDims& plan,
                   const simulator::Evaluation& e) const;
  bool EngineCanRun(const simulator::PlanDims& plan) const;

  const simulator::CostModel& model_;
  SearchOptions options_;
  const CancellationToken& cancel_;
  SearchObserver& observer_;
  std::chrono::steady_clock::time_point start_;
  std::unique_ptr<const PlanSpace> owned_space_;
  const PlanSpace* space_ = nullptr;
  ScoredPlan baseline_;
  std::optional<Decisions> baseline_decisions_;
  double reference_ = 1;
  // The objective's throughput of a plan (rewards are its log).
  const ObjectiveScorer scorer_;
  ScoredPlan best_;
  bool has_best_ = false;
  bool has_feasible_ = false;
  EliteHistory elite_;
  ParetoArchive frontier_;
  std::unordered_map<uint64_t, ScoredPlan> cache_;
  // EngineCanRun by layout (degrees and attention split), search thread only.
  mutable std::unordered_map<std::string, bool> runnable_;
  bool use_cache_ = true;
  int distinct_ = 0;  // distinct plans of the space evaluated
  int evaluations_ = 0;
  int reported_evaluations_ = 0;
  int iterations_ = 0;
  int stalled_batches_ = 0;
  bool exhausted_ = false;
  bool warm_started_ = false;
  std::optional<StopReason> stop_reason_;
  std::vector<simulator::PlanDims> plan_buffer_;
  std::vector<simulator::Evaluation> eval_buffer_;
};

}  // namespace shardplan::policy::internal

#endif  // SHARDPLAN_POLICY_INTERNAL_SEARCH_RUN_H_
