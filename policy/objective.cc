// The typed objective and the API enums (policy/objective.h).
#include "policy/objective.h"

#include <cmath>
#include <cstddef>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "proto/enum_names.h"
#include "simulator/calibration.h"
#include "simulator/user_text.h"

namespace shardplan::policy {
namespace {

// Indexed by the enums' values (policy/objective.h).
constexpr absl::string_view kMethodNames[] = {
    "rl", "megatron", "random", "anneal", "genetic", "exhaustive", "grid"};
constexpr absl::string_view kDisaggregationNames[] = {"auto", "off", "only"};
constexpr absl::string_view kEstimateNames[] = {"expected", "conservative"};
constexpr absl::string_view kCapacityGoalNames[] = {"max_throughput",
                                                    "min_gpus", "min_cost"};

// "" is `empty`; a name of `names` its value; otherwise INVALID_ARGUMENT
// "<field> must be one of <names>; got \"<value>\"".
template <typename Enum, size_t N>
absl::StatusOr<Enum> ParseNamed(absl::string_view name, Enum empty,
                                const absl::string_view (&names)[N],
                                absl::string_view field) {
  if (name.empty()) return empty;
  if (std::optional<Enum> value = EnumFromName<Enum>(name, names)) {
    return *value;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(field, " must be one of ", absl::StrJoin(names, ", "),
                   "; got ", simulator::QuoteUserText(name)));
}

}  // namespace

absl::string_view SearchMethodName(SearchMethod method) {
  return EnumName(method, kMethodNames, "rl");
}

absl::StatusOr<SearchMethod> ParseSearchMethod(absl::string_view name) {
  return ParseNamed(name, SearchMethod::kRl, kMethodNames, "options.method");
}

bool SamplesPlanSpace(SearchMethod method) {
  return method == SearchMethod::kRl || method == SearchMethod::kRandom ||
         method == SearchMethod::kAnneal || method == SearchMethod::kGenetic;
}

absl::string_view DisaggregationName(Disaggregation mode) {
  return EnumName(mode, kDisaggregationNames, "auto");
}

absl::StatusOr<Disaggregation> ParseDisaggregation(absl::string_view name) {
  return ParseNamed(name, Disaggregation::kAuto, kDisaggregationNames,
                    "options.disaggregation");
}

absl::StatusOr<Estimate> ParseEstimate(absl::string_view name) {
  return ParseNamed(name, Estimate::kExpected, kEstimateNames,
                    "options.objective");
}

absl::string_view CapacityGoalName(CapacityGoal goal) {
  return EnumName(goal, kCapacityGoalNames, "max_throughput");
}

absl::StatusOr<CapacityGoal> ParseCapacityGoal(absl::string_view name) {
  return ParseNamed(name, CapacityGoal::kMaxThroughput, kCapacityGoalNames,
                    "options.goal");
}

double ObjectiveScorer::TokensPerS(
    const simulator::Evaluation& evaluation) const {
  if (!evaluation.feasible) return 0;
  if (objective_.estimate == Estimate::kExpected) {
    return evaluation.output_tokens_per_s;
  }
  // The three figures simulator::RegimeOf reads of an evaluation; the rest of
  // the regime is the problem's.
  const std::tuple<int, int, bool> key{evaluation.pipeline_stages,
                                       evaluation.replica_nodes,
                                       evaluation.ep_nodes > 1};
  double tpot_high = 0;
  {
    absl::MutexLock lock(&mu_);
    auto it = tpot_high_.find(key);
    if (it != tpot_high_.end()) tpot_high = it->second;
  }
  if (!(tpot_high > 0)) {
    tpot_high =
        simulator::FindPredictionBand(simulator::RegimeOf(evaluation, problem_))
            .tpot_high;
    absl::MutexLock lock(&mu_);
    tpot_high_.emplace(key, tpot_high);
  }
  return evaluation.output_tokens_per_s / tpot_high;
}

double ObjectiveScorer::Score(const simulator::PlanDims& plan,
                              const simulator::Evaluation& evaluation) const {
  const double tokens_per_s = TokensPerS(evaluation);
  if (objective_.transition == nullptr) return tokens_per_s;
  simulator::Evaluation moved = evaluation;
  const double penalty =
      simulator::ApplyTransitionObjective(*objective_.transition, plan, &moved);
  if (!moved.feasible) return 0;
  return tokens_per_s * std::exp(-penalty);
}

}  // namespace shardplan::policy
