// The typed objective and the API enums (policy/objective.h).
#include "policy/objective.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "simulator/calibration.h"
#include "simulator/user_text.h"

namespace shardplan::policy {
namespace {

constexpr SearchMethod kMethods[] = {
    SearchMethod::kRl,     SearchMethod::kMegatron, SearchMethod::kRandom,
    SearchMethod::kAnneal, SearchMethod::kGenetic,  SearchMethod::kExhaustive,
    SearchMethod::kGrid,
};

// INVALID_ARGUMENT "<field> must be one of <names>; got \"<value>\"".
absl::Status NotOneOf(absl::string_view field, absl::string_view names,
                      absl::string_view value) {
  return absl::InvalidArgumentError(
      absl::StrCat(field, " must be one of ", names, "; got ",
                   simulator::QuoteUserText(value)));
}

}  // namespace

absl::string_view SearchMethodName(SearchMethod method) {
  switch (method) {
    case SearchMethod::kRl:
      return "rl";
    case SearchMethod::kMegatron:
      return "megatron";
    case SearchMethod::kRandom:
      return "random";
    case SearchMethod::kAnneal:
      return "anneal";
    case SearchMethod::kGenetic:
      return "genetic";
    case SearchMethod::kExhaustive:
      return "exhaustive";
    case SearchMethod::kGrid:
      return "grid";
  }
  return "rl";
}

absl::StatusOr<SearchMethod> ParseSearchMethod(absl::string_view name) {
  if (name.empty()) return SearchMethod::kRl;
  for (SearchMethod method : kMethods) {
    if (SearchMethodName(method) == name) return method;
  }
  std::vector<absl::string_view> names;
  for (SearchMethod method : kMethods)
    names.push_back(SearchMethodName(method));
  return NotOneOf("options.method", absl::StrJoin(names, ", "), name);
}

bool SamplesPlanSpace(SearchMethod method) {
  return method == SearchMethod::kRl || method == SearchMethod::kRandom ||
         method == SearchMethod::kAnneal || method == SearchMethod::kGenetic;
}

absl::string_view DisaggregationName(Disaggregation mode) {
  switch (mode) {
    case Disaggregation::kAuto:
      return "auto";
    case Disaggregation::kOff:
      return "off";
    case Disaggregation::kOnly:
      return "only";
  }
  return "auto";
}

absl::StatusOr<Disaggregation> ParseDisaggregation(absl::string_view name) {
  if (name.empty() || name == "auto") return Disaggregation::kAuto;
  if (name == "off") return Disaggregation::kOff;
  if (name == "only") return Disaggregation::kOnly;
  return NotOneOf("options.disaggregation", "auto, off, only", name);
}

absl::StatusOr<Estimate> ParseEstimate(absl::string_view name) {
  if (name.empty() || name == "expected") return Estimate::kExpected;
  if (name == "conservative") return Estimate::kConservative;
  return NotOneOf("options.objective", "expected, conservative", name);
}

absl::string_view CapacityGoalName(CapacityGoal goal) {
  switch (goal) {
    case CapacityGoal::kMaxThroughput:
      return "max_throughput";
    case CapacityGoal::kMinGpus:
      return "min_gpus";
    case CapacityGoal::kMinCost:
      return "min_cost";
  }
  return "max_throughput";
}

absl::StatusOr<CapacityGoal> ParseCapacityGoal(absl::string_view name) {
  if (name.empty() || name == "max_throughput") {
    return CapacityGoal::kMaxThroughput;
  }
  if (name == "min_gpus") return CapacityGoal::kMinGpus;
  if (name == "min_cost") return CapacityGoal::kMinCost;
  return NotOneOf("options.goal", "max_throughput, min_gpus, min_cost", name);
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
