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
                                     "genetic", "exhaustive"));
}

// This binary links the core only: "rl" is a known method it cannot run.
TEST(SearchersTest, RlIsUnavailableWithoutItsLibrary) {
  EXPECT_THAT(AvailableSearchMethods(),
              ::testing::ElementsAre("megatron", "random", "anneal", "genetic",
                                     "exhaustive"));
  auto s = CreateSearcher("rl");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.status().message(),
              HasSubstr("available: megatron, random, anneal, genetic, "
                        "exhaustive"));
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
  EXPECT_EQ(exhaustive->stop_reason, "exhausted");
  EXPECT_LE(exhaustive->evaluations, exhaustive->space_size + 1);
  // The other methods stay below it:
  // SearcherConformanceTest.NeverBeatsTheOptimumOfASmallSpace.
}

INSTANTIATE_TEST_SUITE_P(Baselines, SearcherConformanceTest,
                         ::testing::Values("megatron", "random", "anneal",
                                           "genetic", "exhaustive"));

}  // namespace
}  // namespace shardplan::policy
