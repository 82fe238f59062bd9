// The one interface every plan searcher implements (RL and the baselines), with
// the budget, cancellation token, warm-start state and observer it takes. No
// gRPC, no Prometheus, no LibTorch types: server/ translates observer calls
// into stream updates and metrics.
#ifndef SHARDPLAN_POLICY_SEARCHER_H_
#define SHARDPLAN_POLICY_SEARCHER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "policy/objective.h"
#include "simulator/cost_model.h"
#include "simulator/transition.h"
#include "simulator/types.h"

namespace shardplan::policy {

class EvalPool;   // policy/eval_pool.h
class PlanSpace;  // policy/plan_space.h

// Cooperative cancellation: set once by any thread, polled by searchers at
// least once per iteration. Thread-safe.
class CancellationToken {
 public:
  void Cancel() {
    if (!cancelled_.exchange(true)) notification_.Notify();
  }
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }
  // Blocks until cancelled or `timeout` elapses; returns whether it was
  // cancelled.
  bool WaitForCancellation(absl::Duration timeout) const {
    return notification_.WaitForNotificationWithTimeout(timeout);
  }

 private:
  std::atomic<bool> cancelled_{false};
  absl::Notification notification_;
};

// A plan with its prediction and reward (log of throughput over the baseline's;
// a penalty for infeasible plans).
struct ScoredPlan {
  simulator::PlanDims plan;
  simulator::Evaluation evaluation;
  double reward = 0;
};

// Tokens/s one user sees, 1 / TPOT: the frontier's second axis. 0 for
// infeasible plans.
double TokensPerSecondPerUser(const simulator::Evaluation& evaluation);

struct Improvement {
  ScoredPlan best;
  int evaluations = 0;
  double elapsed_seconds = 0;
  double speedup_vs_baseline = 0;  // best throughput / baseline throughput
};

struct SearchProgress {
  int evaluations_delta = 0;  // cost-model calls since the previous report
  int iterations_delta = 0;   // RL iterations since the previous report
  int evaluations = 0;        // totals so far
  double best_speedup = 0;
  double elapsed_seconds = 0;
};

// Receives a searcher's reports. Called on the searcher's thread;
// implementations must be quick and must not call back into the searcher.
class SearchObserver {
 public:
  virtual ~SearchObserver() = default;
  // Once, first: the Megatron plan every speedup is measured against.
  virtual void OnBaseline(const ScoredPlan& baseline) { (void)baseline; }
  // Each time the best plan improves (the first feasible plan counts).
  virtual void OnImprovement(const Improvement& improvement) {
    (void)improvement;
  }
  // At least once per iteration (or every few hundred evaluations for
  // baselines).
  virtual void OnProgress(const SearchProgress& progress) { (void)progress; }
};

// What a previous search left behind. Plans are re-evaluated before use.
struct WarmStart {
  std::vector<simulator::PlanDims> elite_plans;
  std::string
      policy_weights;  // RL only: bytes from SearchResult::policy_weights
  std::string source;  // for reporting: "exact", "nearest:<fingerprint>"
};

struct SearchOptions {
  int max_evaluations = 2000;
  double max_seconds = 30;
  uint32_t seed = 1;
  const WarmStart* warm_start = nullptr;  // optional, not owned
  EvalPool* pool = nullptr;  // optional, not owned; null: evaluate inline
  int elite_size = 16;       // K of the top-K elite history
  // exhaustive: the largest space it enumerates (it also needs max_evaluations
  // > size).
  double exhaustive_limit = 2e6;
  // Search the disaggregated plan space (PlanSpace::CreateDisaggregated)
  // instead of the aggregated one. The Megatron plan is still evaluated
  // first, as the reward reference and OnBaseline's plan, but it is not a
  // result: best, elite and frontier hold disaggregated plans only, and
  // warm-start plans of the other kind are skipped without an evaluation.
  bool disaggregated = false;
  // Optional, not owned: the plan space of this model, when the caller built
  // it already (the server shares one between the grid reference and the
  // search); must come from PlanSpace::Create (CreateDisaggregated when
  // `disaggregated`) of the same model.
  const PlanSpace* space = nullptr;
  // Optional, not owned: the Megatron plan already evaluated on this model,
  // so that it is not evaluated twice; it still counts as the search's first
  // evaluation.
  const ScoredPlan* baseline = nullptr;
  // Bound on SearchResult::frontier.
  int frontier_size = 64;
  // What the search maximises (policy/objective.h): rewards are the log of
  // the objective's throughput (expected, or the low end of its range) over
  // the baseline's expected throughput; when re-planning they pay the
  // transition penalty and plans over its time limit are infeasible.
  Objective objective;
};

// Why a search stopped. StopReasonName gives the text the API reports.
enum class StopReason {
  kBudget,     // max_evaluations spent
  kTime,       // max_seconds elapsed
  kExhausted,  // nothing new left to find
  kCancelled,  // the cancellation token fired
};
// "budget", "time", "exhausted", "cancelled".
absl::string_view StopReasonName(StopReason reason);

struct SearchResult {
  ScoredPlan best;
  ScoredPlan baseline;  // the Megatron plan, evaluated
  int evaluations = 0;
  int iterations = 0;
  double elapsed_seconds = 0;
  std::vector<ScoredPlan> elite;  // top-K distinct plans, best first
  std::string
      policy_weights;  // RL only: serialised network, for the next warm start
  StopReason stop_reason = StopReason::kExhausted;
  double space_size = 0;  // distinct valid plans in the space
  bool warm_started = false;
  // The non-dominated feasible plans of everything evaluated, in output
  // tokens/s per GPU vs tokens/s per user (1 / TPOT), best throughput first
  // (policy/internal/pareto_archive.h); at most options.frontier_size points.
  std::vector<ScoredPlan> frontier;
};

// A search method. Instances are single-use per Search call but reusable
// sequentially.
class Searcher {
 public:
  virtual ~Searcher() = default;
  virtual absl::string_view method() const = 0;
  // Searches `model`'s problem within `options`' budget. Deterministic for a
  // given seed (and pool-size independent). Returns the best plan found,
  // also when `cancel` fired (stop_reason kCancelled, the best so far);
  // INVALID_ARGUMENT for a bad option (e.g. exhaustive over a too-large
  // space); INTERNAL on LibTorch failures.
  virtual absl::StatusOr<SearchResult> Search(const simulator::CostModel& model,
                                              const SearchOptions& options,
                                              const CancellationToken& cancel,
                                              SearchObserver& observer) = 0;
};

// The API's methods: "rl", "megatron", "random", "anneal", "genetic",
// "exhaustive". A binary runs the baselines always, "rl" only when it links
// shardplan_policy_rl and calls RegisterRlSearchers (policy/rl/rl_searcher.h).
const std::vector<std::string>& SearchMethods();
// The SearchMethods() this binary can run, in that order. Thread-safe.
std::vector<std::string> AvailableSearchMethods();
// Makes CreateSearcher(method) call `make` (a method registered twice keeps
// the last; the baselines' names stay theirs). Lets policy/rl/, the only part
// that needs LibTorch, add its searchers without the core linking it.
// Thread-safe; call at startup.
void RegisterSearcher(std::string method,
                      std::function<std::unique_ptr<Searcher>()> make);
// A new searcher for `method`. FAILED_PRECONDITION for a method of
// SearchMethods() this binary cannot run (e.g. "rl" built without LibTorch),
// naming the available ones; INVALID_ARGUMENT naming an unknown method and
// the known ones. Thread-safe.
absl::StatusOr<std::unique_ptr<Searcher>> CreateSearcher(
    absl::string_view method);

}  // namespace shardplan::policy

#endif  // SHARDPLAN_POLICY_SEARCHER_H_
