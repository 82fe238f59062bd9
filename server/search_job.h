// One PlanSharding search without gRPC: the warm start from the elite history,
// the search (one plan space and one baseline evaluation, shared with the grid
// reference), persistence of what it found, and the outcome the stream's final
// update reports (best plan by the request's objective, top plans, frontier).
// server/plan_stream.cc turns its reports into stream writes; tests drive it
// alone.
#ifndef SHARDPLAN_SERVER_SEARCH_JOB_H_
#define SHARDPLAN_SERVER_SEARCH_JOB_H_

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "policy/objective.h"
#include "policy/plan_search.h"
#include "policy/searcher.h"
#include "server/store/warm_start_persistence.h"
#include "server/validation.h"

namespace shardplan::server {

// Makes a searcher for a validated method name ("rl", ...). The server uses
// policy::CreateSearcher; tests inject fakes.
using SearcherFactory =
    std::function<absl::StatusOr<std::unique_ptr<policy::Searcher>>(
        absl::string_view method)>;

struct SearchJobDeps {
  WarmStartPersistence* history = nullptr;  // not owned, outlives the job
  SearcherFactory searcher_factory;
  policy::EvalPool* eval_pool = nullptr;  // null: searchers evaluate inline
  int elite_size = 16;
};

class SearchJob {
 public:
  // Receives the job's reports on the worker thread; quick, no call back into
  // the job.
  class Listener {
   public:
    virtual ~Listener() = default;
    // A plan better by the request's objective than the baseline and every
    // plan reported before it.
    virtual void OnImprovement(const policy::ScoredPlan& best,
                               int evaluations) = 0;
    virtual void OnProgress(const policy::SearchProgress& progress) = 0;
  };

  struct Outcome {
    // OK, or why the search failed (a cancellation is not a failure: it ends
    // with stop_reason kCancelled).
    absl::Status status;
    std::optional<policy::StopReason> stop_reason;  // unset when failed
    policy::ScoredPlan best;  // by the objective; the baseline at worst
    // Distinct feasible plans, best first by the objective, at most top_n,
    // from the elite and the frontier; a variant with the same degrees and
    // batch and figures within 0.1% of a listed plan is not listed again.
    std::vector<policy::ScoredPlan> top_plans;
    // policy::SearchResult's, merged with the disaggregated search's or
    // sweep's unless disaggregation is off (only that one's when "only").
    std::vector<policy::ScoredPlan> frontier;
    // The search's cost-model evaluations plus the disaggregated sweep's.
    int evaluations = 0;
    int iterations = 0;
    double space_size = 0;
    bool warm_started = false;
    std::string warm_start_source;  // "" unless warm_started
    // options.disaggregation "auto": the best plan of each kind, when one is
    // feasible (best is the aggregated one); "only": best is the
    // disaggregated one.
    std::optional<policy::ScoredPlan> best_aggregated;
    std::optional<policy::ScoredPlan> best_disaggregated;
  };

  // `baseline`: the Megatron plan of the request, already evaluated (the
  // stream writes it before the job runs). `request` outlives the job.
  SearchJob(SearchJobDeps deps, const ValidatedPlanRequest& request,
            policy::ScoredPlan baseline);

  // The job, on a worker thread: the whole search, then persistence (the
  // baseline and the plans found, durable on return, so that a client that saw
  // the final update finds them in the store), then the outcome. Never fails
  // as a call: errors are in Outcome::status.
  Outcome Run(const policy::CancellationToken& cancel, Listener& listener);
  // The outcome of a job that never runs (dropped by a server drain): the
  // baseline as best, persisted like Run's.
  Outcome Abandon();

  // The request's objective (policy::ObjectiveScorer::Score): expected
  // throughput, or with "conservative" the low end of its range, times the
  // transition's cost when re-planning; 0 for infeasible plans.
  double Score(const policy::ScoredPlan& scored) const {
    return scorer_.Score(scored.plan, scored.evaluation);
  }
  const policy::ScoredPlan& baseline() const { return baseline_; }
  // Best throughput of the grid sweep (policy::GridBest), computed by Run
  // before the search; 0 until then. Thread-safe.
  double grid_tokens_per_s() const {
    return grid_tokens_per_s_.load(std::memory_order_acquire);
  }

 private:
  class Observer;
  void Persist(const std::vector<policy::ScoredPlan>& plans,
               const std::string& policy_weights) const;
  Outcome OutcomeOf(const policy::SearchResult& result,
                    const policy::CancellationToken& cancel) const;
  // What a search stores: its plans and the policy weights ("" = keep).
  struct ToPersist {
    std::vector<policy::ScoredPlan> plans;
    std::string policy_weights;
  };
  // options.disaggregation "auto" / "only": what the policy's search of the
  // disaggregated kind found, into `outcome`. Returns the disaggregated
  // search's elite (and, for "only", its weights) for Run to store with the
  // aggregated plans in one write, so the store counts one search.
  ToPersist AddDisaggregated(policy::DisaggregatedFound found,
                             Outcome* outcome) const;

  const SearchJobDeps deps_;
  const ValidatedPlanRequest& request_;
  const policy::ObjectiveScorer scorer_;
  const policy::ScoredPlan baseline_;
  std::atomic<double> grid_tokens_per_s_{0};
};

}  // namespace shardplan::server

#endif  // SHARDPLAN_SERVER_SEARCH_JOB_H_
