// Method registry (policy/searcher.h): the baselines are built in; the RL
// searchers register themselves from policy/rl/ so that this library links
// no LibTorch.
#include "policy/searcher.h"

#include <map>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "policy/baselines.h"
#include "proto/enum_names.h"

namespace shardplan::policy {
namespace {

using Maker = std::function<std::unique_ptr<Searcher>()>;

struct Registry {
  absl::Mutex mu;
  std::map<std::string, Maker, std::less<>> makers ABSL_GUARDED_BY(mu);
};

Registry& GetRegistry() {
  static auto* registry = new Registry();
  return *registry;
}

// The baselines, in every build.
Maker BuiltIn(absl::string_view method) {
  if (method == "megatron") return NewMegatronSearcher;
  if (method == "random") return NewRandomSearcher;
  if (method == "anneal") return NewAnnealSearcher;
  if (method == "genetic") return NewGeneticSearcher;
  if (method == "exhaustive") return NewExhaustiveSearcher;
  if (method == "grid") return NewGridSearcher;
  return Maker();
}

// The maker of `method` in this binary, or null.
Maker Find(absl::string_view method) {
  if (Maker make = BuiltIn(method)) return make;
  Registry& r = GetRegistry();
  absl::MutexLock lock(&r.mu);
  auto it = r.makers.find(method);
  return it == r.makers.end() ? Maker() : it->second;
}

}  // namespace

double TokensPerSecondPerUser(const simulator::Evaluation& evaluation) {
  if (!evaluation.feasible || !(evaluation.tpot_seconds > 0)) return 0;
  return 1.0 / evaluation.tpot_seconds;
}

absl::string_view StopReasonName(StopReason reason) {
  // Indexed by StopReason.
  static constexpr absl::string_view kNames[] = {"budget", "time", "exhausted",
                                                 "cancelled"};
  return EnumName(reason, kNames, "exhausted");
}

const std::vector<std::string>& SearchMethods() {
  static const auto* methods = new std::vector<std::string>{
      "rl", "megatron", "random", "anneal", "genetic", "exhaustive", "grid"};
  return *methods;
}

std::vector<std::string> AvailableSearchMethods() {
  std::vector<std::string> available;
  for (const std::string& method : SearchMethods()) {
    if (Find(method)) available.push_back(method);
  }
  return available;
}

void RegisterSearcher(std::string method, Maker make) {
  Registry& r = GetRegistry();
  absl::MutexLock lock(&r.mu);
  r.makers[std::move(method)] = std::move(make);
}

absl::StatusOr<std::unique_ptr<Searcher>> CreateSearcher(
    absl::string_view method) {
  // The baselines, or registered: "rl" and the benchmark's ablations of it
  // (not advertised in SearchMethods()) when this binary linked policy/rl/.
  if (Maker make = Find(method)) return make();
  for (const std::string& known : SearchMethods()) {
    if (known != method) continue;
    return absl::FailedPreconditionError(absl::StrFormat(
        "options.method \"%s\" is not available in this build (the RL "
        "searcher needs LibTorch: SHARDPLAN_WITH_TORCH=ON); available: %s",
        method, absl::StrJoin(AvailableSearchMethods(), ", ")));
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "options.method: unknown method \"%s\"; expected one of %s", method,
      absl::StrJoin(SearchMethods(), ", ")));
}

}  // namespace shardplan::policy
