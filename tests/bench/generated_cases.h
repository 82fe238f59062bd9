// Seeded benchmark problems for shardplan-bench-search --generated: models,
// GPU counts (powers of two and not: 12, 24, 48 = 6 nodes, 96 = 12 nodes,
// partial nodes), ISL/OSL and SLOs drawn from one std::mt19937_64. A fixed
// generator seed gives the same problems on every machine, so one seed can be
// the set searches are tuned on and another the held-out set they never see.
#ifndef SHARDPLAN_TESTS_BENCH_GENERATED_CASES_H_
#define SHARDPLAN_TESTS_BENCH_GENERATED_CASES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "policy/searcher.h"

namespace shardplan::bench {

struct GeneratedCase {
  std::string model;
  int gpus = 0;
  int gpus_per_node = 8;
  int isl = 0;
  int osl = 0;
  double max_ttft_ms = 0;  // 0: none
  double max_tpot_ms = 0;  // 0: none
  std::string weight_dtype;
  std::string hardware = "h100-sxm-80gb";
  std::string name() const;
};

// `count` problems from `seed`, each with a feasible Megatron or grid plan
// (draws without one are skipped). `moe_only`: MoE models only.
std::vector<GeneratedCase> GenerateCases(uint64_t seed, int count,
                                         bool moe_only);

struct GeneratedOptions {
  std::vector<std::string> metaheuristics = {"random", "anneal", "genetic"};
  int seeds = 5;
  int budget = 3000;
  // > 0: equal wall time instead of equal evaluations: every search gets
  // this many seconds and no evaluation limit.
  double seconds = 0;
  policy::EvalPool* pool = nullptr;
};

// Runs megatron, grid (its whole sweep), rl and the metaheuristics (median
// over seeds, equal budget) on every case, checks that the best plan per GPU
// on the case's GPUs is at least the best on half of them (when that is a
// valid cluster), and prints a markdown table with the ratios to grid and to
// the best metaheuristic plus a summary line. Returns the table.
absl::StatusOr<std::string> RunGeneratedCases(
    const std::vector<GeneratedCase>& cases, const GeneratedOptions& options);

// Disaggregated cases: of `count` generated problems from `seed`, those with
// a disaggregated plan space and a feasible plan in the disaggregated sweep.
std::vector<GeneratedCase> GenerateDisaggregatedCases(uint64_t seed, int count);
// The same on 256, 384 or 512 GPUs (the generator's draw with the GPU count
// drawn from those instead): joint spaces too large to sweep.
std::vector<GeneratedCase> GenerateLargeDisaggregatedCases(uint64_t seed,
                                                           int count);

// On every case, searches the disaggregated plan space
// (SearchOptions::disaggregated) with rl, rl-no-learning, anneal and genetic
// at equal budget (median over seeds) against the disaggregated sweep
// (policy::SweepDisaggregated) on the same budget, and prints a markdown
// table with a summary line. Returns the table.
absl::StatusOr<std::string> RunDisaggregatedCases(
    const std::vector<GeneratedCase>& cases, const GeneratedOptions& options);

// The server's family of a problem (server/store/elite_store.cc MakeProblemKey:
// model family, hardware, num_gpus x gpus_per_node): stored policy weights
// are shared within it.
absl::StatusOr<std::string> FamilyKey(const GeneratedCase& c);

// Up to `count` problems drawn from `seed` as GenerateCases draws them, of
// the family of `like` (same model family, hardware and cluster shape, not
// `like` itself) and feasible (grid; with `disaggregated` also the
// disaggregated sweep).
std::vector<GeneratedCase> GenerateFamilyCases(uint64_t seed, int count,
                                               const GeneratedCase& like,
                                               bool disaggregated);

struct TransferOptions {
  uint64_t train_seed = 3;  // generator seed of the training problems
  int train_problems = 4;   // training searches per chain
  int train_budget = 1000;  // evaluations per training search
  // false: one chain per held-out case's family (the server's rule); true:
  // one chain over the training seed's first problems, for every case.
  bool across_families = false;
  bool disaggregated = false;  // search (and train on) the joint space
  // With `disaggregated`: train in the aggregated space, as the server's
  // stored weights are with options.disaggregation "auto" (the aggregated
  // search's weights are kept; the disaggregated search's only with "only").
  bool train_aggregated = false;
  // Without `disaggregated`: train in the joint space (aggregated searches
  // started from weights a disaggregated search left).
  bool train_disaggregated = false;
  // One training chain (seeds 1, 2, ...) for every test seed instead of one
  // per test seed (seeds 1000 s, 1000 s + 1, ...).
  bool one_chain = false;
  std::vector<int> budgets = {100, 300, 600};
};

// Cross-problem transfer of the RL policy weights: per held-out case, rl
// searches on training problems chain their weights (weights only, no elite
// plans: each search loads the previous one's SearchResult::policy_weights,
// as the server's elite store does within a family; one chain per test seed,
// trained with seeds of its own); then at each small
// budget, with --seeds seeds, rl and rl-no-learning from the transferred
// weights against rl and rl-no-learning from fresh weights, anneal, genetic
// and random. Returns a markdown report.
absl::StatusOr<std::string> RunTransferCases(
    const std::vector<GeneratedCase>& held_out, const GeneratedOptions& options,
    const TransferOptions& transfer);

// The full "auto" search the server runs (policy::SearchOptions with the
// budget split in half: aggregated, then disaggregated, the same method) on
// one case, timed: seconds, evaluations and cost-model seconds until the
// combined best reaches 99% of its final value. Returns a markdown report.
absl::StatusOr<std::string> TimeAutoSearch(const GeneratedCase& c,
                                           const std::string& method,
                                           const GeneratedOptions& options);

}  // namespace shardplan::bench

#endif  // SHARDPLAN_TESTS_BENCH_GENERATED_CASES_H_
