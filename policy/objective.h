// What "the best plan" means for one request, owned here so that the
// searchers, the policy-level search of both plan kinds (policy/plan_search.h)
// and the server rank plans alike: the typed objective (expected or
// conservative throughput, the re-planning transition, the capacity goal),
// the disaggregation mode and the search method, each an enum parsed once
// from the API's string at the boundary.
#ifndef SHARDPLAN_POLICY_OBJECTIVE_H_
#define SHARDPLAN_POLICY_OBJECTIVE_H_

#include <map>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "simulator/transition.h"
#include "simulator/types.h"

namespace shardplan::policy {

// options.method.
enum class SearchMethod {
  kRl,
  kMegatron,
  kRandom,
  kAnneal,
  kGenetic,
  kExhaustive,
  kGrid,
};
// "rl", "megatron", ... (policy::SearchMethods() order).
absl::string_view SearchMethodName(SearchMethod method);
// `name` as a method; "" is the server's default method. INVALID_ARGUMENT
// naming options.method, the known methods and the value otherwise.
absl::StatusOr<SearchMethod> ParseSearchMethod(absl::string_view name);
// Whether `method` samples a plan space (rl, random, anneal, genetic) rather
// than applying a rule (megatron), sweeping (grid) or enumerating
// (exhaustive, which cannot enumerate the joint disaggregated space).
bool SamplesPlanSpace(SearchMethod method);

// options.disaggregation.
enum class Disaggregation {
  kAuto,  // both kinds searched, the best of each reported
  kOff,   // aggregated plans only
  kOnly,  // disaggregated plans only
};
absl::string_view DisaggregationName(Disaggregation mode);
// "" is kAuto; INVALID_ARGUMENT naming options.disaggregation otherwise.
absl::StatusOr<Disaggregation> ParseDisaggregation(absl::string_view name);

// options.objective: which throughput of a plan counts.
enum class Estimate {
  kExpected,      // the prediction
  kConservative,  // the low end of its range
                  // (Prediction.output_tokens_per_s_range)
};
// "" is kExpected; INVALID_ARGUMENT naming options.objective otherwise.
absl::StatusOr<Estimate> ParseEstimate(absl::string_view name);

// options.goal.
enum class CapacityGoal {
  kMaxThroughput,  // the best plan on the given cluster
  kMinGpus,        // the fewest GPUs that carry workload.request_rate
  kMinCost,        // the cheapest hardware option and count that carry it
};
// "" is kMaxThroughput; INVALID_ARGUMENT naming options.goal otherwise.
absl::StatusOr<CapacityGoal> ParseCapacityGoal(absl::string_view name);
absl::string_view CapacityGoalName(CapacityGoal goal);

// One request's objective. The default (expected throughput, no transition,
// max_throughput) is what the searchers maximised before it existed.
struct Objective {
  Estimate estimate = Estimate::kExpected;
  CapacityGoal goal = CapacityGoal::kMaxThroughput;
  // Re-planning (optional, not owned): the move from the running plan costs
  // exp(-penalty) of the throughput (its weight_per_s), and plans slower to
  // reach than its max_seconds are infeasible (simulator/transition.h).
  const simulator::TransitionObjective* transition = nullptr;
};

// Scores plans by an objective for one problem. The conservative estimate is
// the expected throughput over the high end of the plan's TPOT error band
// (simulator::ConservativeOutputTokensPerS, to the last bit); the band depends
// only on the problem and three figures of the evaluation (pipeline stages,
// nodes per replica, whether the expert domain spans nodes), so it is looked
// up once per distinct triple and then costs a map lookup per evaluation.
// Thread-safe.
class ObjectiveScorer {
 public:
  // `problem` outlives the scorer.
  ObjectiveScorer(const Objective& objective, const simulator::Problem& problem)
      : objective_(objective), problem_(problem) {}

  const Objective& objective() const { return objective_; }
  // The throughput the objective counts (output tokens/s): expected or
  // conservative; 0 for infeasible plans. No transition.
  double TokensPerS(const simulator::Evaluation& evaluation) const;
  // How plans rank: TokensPerS times exp(-transition penalty) when
  // re-planning, 0 when infeasible or slower to reach than the transition
  // limit. O(GPUs) when re-planning (a plan diff), else O(1).
  double Score(const simulator::PlanDims& plan,
               const simulator::Evaluation& evaluation) const;

 private:
  const Objective objective_;
  const simulator::Problem& problem_;
  mutable absl::Mutex mu_;
  mutable std::map<std::tuple<int, int, bool>, double> tpot_high_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace shardplan::policy

#endif  // SHARDPLAN_POLICY_OBJECTIVE_H_
