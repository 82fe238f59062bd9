// The typed objective: the API enums parse once (INVALID_ARGUMENT naming the
// field on unknown values), the conservative estimate equals the range's low
// end bit for bit, and the searchers maximise the objective they are given.
#include "policy/objective.h"

#include <cmath>
#include <memory>
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policy/baselines.h"
#include "policy/plan_space.h"
#include "policy/searcher.h"
#include "simulator/calibration.h"
#include "tests/policy/test_util.h"

namespace shardplan::policy {
namespace {

using ::testing::HasSubstr;

TEST(ObjectiveTest, MethodsParseOnceAndNameTheFieldWhenUnknown) {
  for (const std::string& name : SearchMethods()) {
    absl::StatusOr<SearchMethod> method = ParseSearchMethod(name);
    ASSERT_TRUE(method.ok()) << name;
    EXPECT_EQ(SearchMethodName(*method), name);
  }
  EXPECT_EQ(*ParseSearchMethod(""), SearchMethod::kRl);  // the default
  const absl::Status bad = ParseSearchMethod("gradient-descent").status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(),
              HasSubstr("options.method must be one of rl, megatron, random, "
                        "anneal, genetic, exhaustive, grid; got "
                        "\"gradient-descent\""));
  EXPECT_TRUE(SamplesPlanSpace(SearchMethod::kAnneal));
  EXPECT_FALSE(SamplesPlanSpace(SearchMethod::kGrid));
  EXPECT_FALSE(SamplesPlanSpace(SearchMethod::kExhaustive));
}

TEST(ObjectiveTest, ModesParseWithTheirDefaults) {
  EXPECT_EQ(*ParseDisaggregation(""), Disaggregation::kAuto);
  EXPECT_EQ(*ParseDisaggregation("only"), Disaggregation::kOnly);
  EXPECT_EQ(DisaggregationName(Disaggregation::kOff), "off");
  EXPECT_THAT(ParseDisaggregation("both").status().message(),
              HasSubstr("options.disaggregation must be one of auto, off, "
                        "only; got \"both\""));
  EXPECT_EQ(*ParseEstimate(""), Estimate::kExpected);
  EXPECT_EQ(*ParseEstimate("conservative"), Estimate::kConservative);
  EXPECT_THAT(ParseEstimate("optimistic").status().message(),
              HasSubstr("options.objective must be one of expected, "
                        "conservative; got \"optimistic\""));
  EXPECT_EQ(*ParseCapacityGoal(""), CapacityGoal::kMaxThroughput);
  EXPECT_EQ(*ParseCapacityGoal("min_cost"), CapacityGoal::kMinCost);
  EXPECT_EQ(CapacityGoalName(CapacityGoal::kMinGpus), "min_gpus");
  EXPECT_EQ(ParseCapacityGoal("fast").status().code(),
            absl::StatusCode::kInvalidArgument);
}

// The scorer's cached band gives the same number as the range's low end
// (simulator::ConservativeOutputTokensPerS) for every grid plan of a
// two-node problem, whose plans fall in several band regimes (one or two
// nodes per replica, pipelines).
TEST(ObjectiveTest, ConservativeIsTheRangesLowEndForEveryPlan) {
  auto model = testing::MakeCostModel("llama-3.1-70b", 16);
  ASSERT_TRUE(model.ok()) << model.status();
  auto space = PlanSpace::Create(**model);
  ASSERT_TRUE(space.ok()) << space.status();
  Objective objective;
  objective.estimate = Estimate::kConservative;
  const ObjectiveScorer conservative(objective, (*model)->problem());
  const ObjectiveScorer expected(Objective(), (*model)->problem());
  std::set<double> ratios;  // distinct expected / conservative
  int feasible = 0;
  for (const simulator::PlanDims& plan : GridPlans(**space)) {
    const simulator::Evaluation e = (*model)->Evaluate(plan);
    EXPECT_EQ(conservative.TokensPerS(e),
              simulator::ConservativeOutputTokensPerS(e, (*model)->problem()));
    EXPECT_EQ(expected.TokensPerS(e), e.feasible ? e.output_tokens_per_s : 0.0);
    EXPECT_EQ(conservative.Score(plan, e), conservative.TokensPerS(e));
    if (!e.feasible) continue;
    ++feasible;
    ratios.insert(e.output_tokens_per_s / conservative.TokensPerS(e));
  }
  EXPECT_GT(feasible, 10);
  EXPECT_GE(ratios.size(), 2u) << "several band regimes, several cache keys";
}

// A search given the conservative objective maximises it: its best plan is
// at least as good by the range's low end as every plan it kept, and as the
// best of the same search by expected throughput; the reward is the log of
// the conservative throughput over the baseline's expected one.
TEST(ObjectiveTest, SearchersMaximiseTheConservativeObjective) {
  auto model = testing::MakeCostModel("llama-3.1-70b", 16);
  ASSERT_TRUE(model.ok()) << model.status();
  const simulator::Problem& problem = (*model)->problem();
  for (const char* method : {"anneal", "genetic", "random"}) {
    SCOPED_TRACE(method);
    SearchOptions options;
    options.max_evaluations = 400;
    options.seed = 3;
    CancellationToken cancel;
    SearchObserver observer;
    auto searcher = CreateSearcher(method);
    ASSERT_TRUE(searcher.ok());
    auto by_expected = (*searcher)->Search(**model, options, cancel, observer);
    options.objective.estimate = Estimate::kConservative;
    auto by_low_end = (*searcher)->Search(**model, options, cancel, observer);
    ASSERT_TRUE(by_expected.ok() && by_low_end.ok());
    auto low = [&](const ScoredPlan& s) {
      return simulator::ConservativeOutputTokensPerS(s.evaluation, problem);
    };
    const double best = low(by_low_end->best);
    ASSERT_GT(best, 0);
    EXPECT_NEAR(
        by_low_end->best.reward,
        std::log(best / by_low_end->baseline.evaluation.output_tokens_per_s),
        1e-12);
    for (const ScoredPlan& s : by_low_end->elite) EXPECT_LE(low(s), best);
    for (const ScoredPlan& s : by_low_end->frontier) EXPECT_LE(low(s), best);
  }
}

// The grid sweep (every degree tuple and batch, complete here) by the
// conservative objective returns the plan of the highest low end it swept,
// which on this problem is not the plan of the highest expected throughput:
// the searcher optimises what the user asked.
TEST(ObjectiveTest, GridByTheLowEndIsNotTheExpectedOptimum) {
  auto model = testing::MakeCostModel("llama-3.1-70b", 8);
  ASSERT_TRUE(model.ok()) << model.status();
  const simulator::Problem& problem = (*model)->problem();
  SearchOptions options;
  options.max_evaluations = 100000;
  CancellationToken cancel;
  SearchObserver observer;
  auto grid = CreateSearcher("grid");
  ASSERT_TRUE(grid.ok());
  auto by_expected = (*grid)->Search(**model, options, cancel, observer);
  options.objective.estimate = Estimate::kConservative;
  auto by_low_end = (*grid)->Search(**model, options, cancel, observer);
  ASSERT_TRUE(by_expected.ok() && by_low_end.ok());
  EXPECT_EQ(by_expected->stop_reason, StopReason::kExhausted);
  EXPECT_EQ(by_low_end->evaluations, by_expected->evaluations);
  auto low = [&](const ScoredPlan& s) {
    return simulator::ConservativeOutputTokensPerS(s.evaluation, problem);
  };
  EXPECT_GT(low(by_low_end->best), low(by_expected->best));
  EXPECT_GT(by_expected->best.evaluation.output_tokens_per_s,
            by_low_end->best.evaluation.output_tokens_per_s);
}

}  // namespace
}  // namespace shardplan::policy
