// Method registry (policy/searcher.h).
#include "policy/searcher.h"

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "policy/baselines.h"
#include "policy/rl_searcher.h"

namespace shardplan::policy {

const std::vector<std::string>& SearchMethods() {
  static const auto* methods = new std::vector<std::string>{
      "rl", "megatron", "random", "anneal", "genetic", "exhaustive", "grid"};
  return *methods;
}

absl::StatusOr<std::unique_ptr<Searcher>> CreateSearcher(
    absl::string_view method) {
  if (method == "rl") return std::unique_ptr<Searcher>(new RlSearcher());
  if (method == "megatron") return NewMegatronSearcher();
  if (method == "random") return NewRandomSearcher();
  if (method == "anneal") return NewAnnealSearcher();
  if (method == "genetic") return NewGeneticSearcher();
  if (method == "exhaustive") return NewExhaustiveSearcher();
  if (method == "grid") return NewGridSearcher();
  // Ablations for the benchmark; not advertised in SearchMethods().
  if (method == "rl-no-elite" || method == "rl-no-learning") {
    return std::unique_ptr<Searcher>(
        new RlSearcher(RlMethodOptions(method), std::string(method)));
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "options.method: unknown method \"%s\"; expected one of %s", method,
      absl::StrJoin(SearchMethods(), ", ")));
}

}  // namespace shardplan::policy
