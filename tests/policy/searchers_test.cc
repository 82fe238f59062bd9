// The method registry and the baselines behind CreateSearcher, in the
// torch-free core: determinism for a seed (whatever the pool size), valid
// plans, budget, exhaustive limits and optimum, cancellation latency (the
// checks of tests/policy/searcher_conformance.h), and "rl" unavailable
// without policy/rl/.
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policy/disaggregated_grid.h"
#include "policy/plan_space.h"
#include "policy/searcher.h"
#include "tests/policy/searcher_conformance.h"
#include "tests/policy/test_util.h"

namespace shardplan::policy {
namespace {

using ::testing::HasSubstr;
using testing::RunSearch;
using testing::SearcherConformanceTest;

TEST(SearchersTest, UnknownMethodIsInvalidArgument) {
  auto s = CreateSearcher("gradient-descent");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("gradient-descent"));
  EXPECT_THAT(SearchMethods(),
              ::testing::ElementsAre("rl", "megatron", "random", "anneal",
                                     "genetic", "exhaustive", "grid"));
}

// This binary links the core only: "rl" is a known method it cannot run.
TEST(SearchersTest, RlIsUnavailableWithoutItsLibrary) {
  EXPECT_THAT(AvailableSearchMethods(),
              ::testing::ElementsAre("megatron", "random", "anneal", "genetic",
                                     "exhaustive", "grid"));
  auto s = CreateSearcher("rl");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.status().message(),
              HasSubstr("available: megatron, random, anneal, genetic, "
                        "exhaustive, grid"));
  // Its ablations are not API methods: unknown.
  auto ablation = CreateSearcher("rl-policy-only");
  ASSERT_FALSE(ablation.ok());
  EXPECT_EQ(ablation.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SearchersTest, RegisteredMethodsAreCreated) {
  RegisterSearcher("test-only-megatron", [] {
    auto s = CreateSearcher("megatron");
    return s.ok() ? *std::move(s) : nullptr;
  });
  auto s = CreateSearcher("test-only-megatron");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_NE(*s, nullptr);
  EXPECT_EQ((*s)->method(), "megatron");
  // Only API methods are advertised.
  EXPECT_THAT(AvailableSearchMethods(),
              ::testing::Not(::testing::Contains("test-only-megatron")));
}

// Every method scores warm-start plans first: a stored best comes back even
// from a budget too small to find it again.
TEST(SearchersTest, RandomAndAnnealAndGeneticWarmStart) {
  auto model = testing::MakeCostModel("llama-3.1-70b", 16);
  ASSERT_TRUE(model.ok()) << model.status();
  SearchOptions big;
  big.max_evaluations = 3000;
  auto found = RunSearch("grid", **model, big, nullptr);
  ASSERT_TRUE(found.ok()) << found.status();
  WarmStart warm;
  warm.elite_plans = {found->best.plan};
  for (const char* method : {"random", "anneal", "genetic"}) {
    SCOPED_TRACE(method);
    SearchOptions small;
    small.max_evaluations = 4;
    small.warm_start = &warm;
    auto r = RunSearch(method, **model, small, nullptr);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->warm_started);
    EXPECT_GE(r->best.evaluation.output_tokens_per_s,
              found->best.evaluation.output_tokens_per_s * (1 - 1e-9));
  }
}

// The baselines search the disaggregated space too: valid disaggregated plans
// within the budget, the aggregated Megatron plan only the reference, and the
// plans they leave behind warm-start the next search; aggregated warm-start
// plans are skipped without an evaluation.
TEST(SearchersTest, BaselinesSearchTheDisaggregatedSpaceAndWarmStart) {
  auto model =
      testing::MakeCostModel("llama-3.1-70b", 16, 2048, 512, 0, 0, 0, "fp8");
  ASSERT_TRUE(model.ok()) << model.status();
  for (const char* method : {"random", "anneal", "genetic", "grid"}) {
    SCOPED_TRACE(method);
    SearchOptions options;
    options.disaggregated = true;
    options.max_evaluations = 300;
    auto r = RunSearch(method, **model, options, nullptr);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_LE(r->evaluations, 300);
    ASSERT_TRUE(r->best.evaluation.feasible);
    EXPECT_TRUE(r->best.plan.disaggregated);
    EXPECT_TRUE((*model)->ValidatePlan(r->best.plan).ok());
    EXPECT_FALSE(r->baseline.plan.disaggregated);
    for (const ScoredPlan& s : r->elite) EXPECT_TRUE(s.plan.disaggregated);
    for (const ScoredPlan& s : r->frontier) EXPECT_TRUE(s.plan.disaggregated);

    WarmStart warm;
    for (const ScoredPlan& s : r->elite) warm.elite_plans.push_back(s.plan);
    warm.elite_plans.push_back(r->baseline.plan);  // the other kind
    SearchOptions small = options;
    small.max_evaluations = 1 + static_cast<int>(r->elite.size());
    small.warm_start = &warm;
    auto again = RunSearch(method, **model, small, nullptr);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_TRUE(again->warm_started || std::string(method) == "grid");
    if (std::string(method) != "grid") {
      EXPECT_GE(again->best.reward, r->best.reward - 1e-12);
    }
  }
}

// The prefill instance's operator dims are searched: on a problem where the
// prompt's prefill time decides feasibility, the searches find prefill dims
// other than Megatron's, and the cost model rates their plan above the same
// plan with Megatron's prefill dims and above the Megatron-dims sweep.
TEST(SearchersTest, SearchesFindPrefillDimsOtherThanMegatronsWhenBetter) {
  auto model = testing::MakePrefillBoundCostModel();
  ASSERT_TRUE(model.ok()) << model.status();
  const DisaggregatedSweep sweep =
      SweepDisaggregated(**model, 3000, 0, CancellationToken(), 2);
  for (const char* method : {"anneal", "genetic"}) {
    const double found = testing::ExpectBetterPrefillDimsFound(method, **model);
    EXPECT_TRUE(!sweep.found ||
                sweep.best.evaluation.output_tokens_per_s < found);
  }
}

TEST(SearchersTest, AnAggregatedSpaceForADisaggregatedSearchIsInvalid) {
  auto model = testing::MakeCostModel("llama-3.1-70b", 16);
  ASSERT_TRUE(model.ok()) << model.status();
  auto space = PlanSpace::Create(**model);
  ASSERT_TRUE(space.ok());
  SearchOptions options;
  options.disaggregated = true;
  options.space = space->get();
  auto r = RunSearch("random", **model, options, nullptr);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SearchersTest, MegatronReturnsTheHeuristicPlanWithOneEvaluation) {
  auto model = testing::MakeCostModel("llama-3.1-70b", 16);
  ASSERT_TRUE(model.ok()) << model.status();
  auto r = RunSearch("megatron", **model, SearchOptions(), nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->evaluations, 1);
  EXPECT_EQ(r->best.plan, r->baseline.plan);
  EXPECT_TRUE(r->best.evaluation.feasible);
}

TEST(SearchersTest, ExhaustiveFailsAboveTheLimit) {
  auto model = testing::MakeCostModel("deepseek-v3", 128);
  ASSERT_TRUE(model.ok()) << model.status();
  SearchOptions options;
  options.max_evaluations = 5000;
  auto r = RunSearch("exhaustive", **model, options, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("space has"));
  EXPECT_THAT(r.status().message(), HasSubstr("limit 4999"));
}

TEST(SearchersTest, ExhaustiveIsTheOptimumOfASmallSpace) {
  auto model = testing::MakeCostModel("llama-3.1-8b", 2, 2048, 512, 32);
  ASSERT_TRUE(model.ok()) << model.status();
  SearchOptions options;
  options.max_evaluations = 100000;
  auto exhaustive = RunSearch("exhaustive", **model, options, nullptr);
  ASSERT_TRUE(exhaustive.ok()) << exhaustive.status();
  EXPECT_EQ(exhaustive->stop_reason, StopReason::kExhausted);
  EXPECT_LE(exhaustive->evaluations, exhaustive->space_size + 1);
  // The other methods stay below it:
  // SearcherConformanceTest.NeverBeatsTheOptimumOfASmallSpace.
}

TEST(SearchersTest, GridSweepsEveryDegreeTupleWithMegatronDims) {
  auto model = testing::MakeCostModel("qwen3-235b-a22b", 16);
  ASSERT_TRUE(model.ok()) << model.status();
  auto space = PlanSpace::Create(**model);
  ASSERT_TRUE(space.ok()) << space.status();
  SearchOptions options;
  options.max_evaluations = 1'000'000;
  auto grid = RunSearch("grid", **model, options, nullptr);
  ASSERT_TRUE(grid.ok()) << grid.status();
  EXPECT_EQ(grid->stop_reason, StopReason::kExhausted);
  // Every tuple with every batch its masks allow: more evaluations than
  // tuples, and replicated tuples among them.
  EXPECT_GT(grid->evaluations, (*space)->NumChoices(kDegreesDecision));
  bool replicated = false;
  for (const Degrees& g : (*space)->degrees()) replicated |= g.replicas > 1;
  EXPECT_TRUE(replicated);
  EXPECT_EQ(grid->best.plan.dims, simulator::MegatronShardDims());
  auto megatron = RunSearch("megatron", **model, options, nullptr);
  ASSERT_TRUE(megatron.ok()) << megatron.status();
  EXPECT_GE(grid->best.evaluation.output_tokens_per_s,
            megatron->best.evaluation.output_tokens_per_s);
}

// More GPUs never make the best plan worse per GPU: k copies of the best plan
// on N GPUs are a plan on k*N GPUs (the space holds replicas), so the best
// plan there is at least as good per GPU.
TEST(SearchersTest, BestPlanPerGpuIsMonotoneInGpus) {
  for (const auto& [name, gpus] : testing::MonotoneCases()) {
    SCOPED_TRACE(name);
    auto models = testing::MakeSmallAndDoubled(name, gpus);
    ASSERT_TRUE(models.ok()) << models.status();
    const auto& small = models->small;
    const auto& large = models->doubled;
    SearchOptions options;
    options.max_evaluations = 1'000'000;
    auto best_small = RunSearch("grid", *small, options, nullptr);
    ASSERT_TRUE(best_small.ok()) << best_small.status();
    ASSERT_TRUE(best_small->best.evaluation.feasible);
    // Two copies of it on twice the GPUs: valid, and as good per GPU.
    simulator::PlanDims copies = best_small->best.plan;
    if (small->problem().model.is_moe()) {
      copies.replicas *= 2;
    } else {
      copies.dp *= 2;
    }
    ASSERT_TRUE(large->ValidatePlan(copies).ok());
    const simulator::Evaluation e = large->Evaluate(copies);
    EXPECT_NEAR(e.output_tokens_per_s_per_gpu,
                best_small->best.evaluation.output_tokens_per_s_per_gpu,
                1e-6 * e.output_tokens_per_s_per_gpu);
    auto space = PlanSpace::Create(*large);
    ASSERT_TRUE(space.ok());
    EXPECT_TRUE((*space)->Encode(copies, e.batch_size).ok());
    // The sweep finds it (RL: RlSearcherTest.BestPlanPerGpuIsMonotoneInGpus).
    auto best_large = RunSearch("grid", *large, options, nullptr);
    ASSERT_TRUE(best_large.ok()) << best_large.status();
    EXPECT_GE(
        best_large->best.evaluation.output_tokens_per_s_per_gpu,
        best_small->best.evaluation.output_tokens_per_s_per_gpu * (1 - 1e-9));
  }
}

// Anneal and genetic spend their budget: chains and populations that only
// re-propose plans already scored restart instead of stopping "exhausted"
// (they stopped after 50 such batches, at a fraction of the budget).
TEST(SearchersTest, AnnealAndGeneticSpendTheirWholeBudget) {
  auto model = testing::MakeCostModel("mixtral-8x7b", 8);
  ASSERT_TRUE(model.ok()) << model.status();
  auto space = PlanSpace::Create(**model);
  ASSERT_TRUE(space.ok()) << space.status();
  SearchOptions options;
  options.max_evaluations = 20000;
  options.max_seconds = 300;
  ASSERT_GT((*space)->Size(), 4.0 * options.max_evaluations);
  for (const char* method : {"anneal", "genetic"}) {
    SCOPED_TRACE(method);
    auto r = RunSearch(method, **model, options, nullptr);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->stop_reason, StopReason::kBudget);
    EXPECT_EQ(r->evaluations, options.max_evaluations);
  }
}

// At the default budget, where the sweep does not finish on 192 GPUs: grid
// sweeps fewest GPUs per copy first, so on twice the GPUs it meets the
// doubled copies of its best plan on half of them and stays as good per GPU.
TEST(SearchersTest, GridAtItsDefaultBudgetIsMonotoneInGpusUpTo192) {
  auto small = testing::MakeCostModel("mixtral-8x22b", 96, 2048, 512, 0, 0, 40,
                                      "fp8", "h200-sxm-141gb");
  auto large = testing::MakeCostModel("mixtral-8x22b", 192, 2048, 512, 0, 0, 40,
                                      "fp8", "h200-sxm-141gb");
  ASSERT_TRUE(small.ok()) << small.status();
  ASSERT_TRUE(large.ok()) << large.status();
  SearchOptions options;  // the default budget
  auto best_small = RunSearch("grid", **small, options, nullptr);
  auto best_large = RunSearch("grid", **large, options, nullptr);
  ASSERT_TRUE(best_small.ok()) << best_small.status();
  ASSERT_TRUE(best_large.ok()) << best_large.status();
  ASSERT_TRUE(best_small->best.evaluation.feasible);
  EXPECT_EQ(best_large->stop_reason, StopReason::kBudget);
  EXPECT_GE(
      best_large->best.evaluation.output_tokens_per_s_per_gpu,
      best_small->best.evaluation.output_tokens_per_s_per_gpu * (1 - 1e-9));
}

INSTANTIATE_TEST_SUITE_P(Baselines, SearcherConformanceTest,
                         ::testing::Values("megatron", "random", "anneal",
                                           "genetic", "exhaustive", "grid"));

}  // namespace
}  // namespace shardplan::policy
