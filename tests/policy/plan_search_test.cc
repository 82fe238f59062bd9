// The policy-level search of both plan kinds: the budget split, which kinds
// run for each disaggregation mode, and the sweep's stop at its share.
#include "policy/plan_search.h"

#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policy/plan_space.h"
#include "tests/policy/test_util.h"

namespace shardplan::policy {
namespace {

using ::testing::ElementsAre;

// SearchPlans of llama-3.1-70b on 16 H100s with `method`, `disaggregation`
// and `max_evaluations`.
absl::StatusOr<PlanSearchResult> SearchLlama70b(SearchMethod method,
                                                Disaggregation disaggregation,
                                                int max_evaluations) {
  auto model = testing::MakeCostModel("llama-3.1-70b", 16);
  if (!model.ok()) return model.status();
  PlanSearchOptions options;
  options.method = method;
  options.disaggregation = disaggregation;
  options.search.max_evaluations = max_evaluations;
  CancellationToken cancel;
  SearchObserver observer;
  return SearchPlans(**model, options, cancel, observer);
}

TEST(PlanSearchTest, BudgetSplitsByModeAndMethod) {
  // Sampling methods: half each ("auto"), seven eighths to the joint space
  // ("only"), seconds in proportion.
  BudgetSplit s = SplitBudget(SearchMethod::kRl, Disaggregation::kAuto, 800, 8);
  EXPECT_EQ(s.aggregated_evaluations, 400);
  EXPECT_EQ(s.disaggregated_evaluations, 400);
  EXPECT_DOUBLE_EQ(s.aggregated_seconds, 4);
  EXPECT_DOUBLE_EQ(s.disaggregated_seconds, 4);
  s = SplitBudget(SearchMethod::kGenetic, Disaggregation::kOnly, 800, 8);
  EXPECT_EQ(s.aggregated_evaluations, 100);
  EXPECT_EQ(s.disaggregated_evaluations, 700);
  EXPECT_DOUBLE_EQ(s.aggregated_seconds, 1);
  // Rules sweep: a quarter ("auto") or half ("only"); the aggregated search
  // keeps every second.
  s = SplitBudget(SearchMethod::kGrid, Disaggregation::kAuto, 800, 8);
  EXPECT_EQ(s.aggregated_evaluations, 600);
  EXPECT_EQ(s.disaggregated_evaluations, 200);
  EXPECT_DOUBLE_EQ(s.aggregated_seconds, 8);
  s = SplitBudget(SearchMethod::kMegatron, Disaggregation::kOnly, 800, 8);
  EXPECT_EQ(s.disaggregated_evaluations, 400);
  s = SplitBudget(SearchMethod::kRl, Disaggregation::kOff, 800, 8);
  EXPECT_EQ(s.aggregated_evaluations, 800);
  EXPECT_EQ(s.disaggregated_evaluations, 0);
  EXPECT_DOUBLE_EQ(s.aggregated_seconds, 8);
  // A budget of one still searches; a tiny time never rounds to 0.
  s = SplitBudget(SearchMethod::kRl, Disaggregation::kOnly, 1, 5e-324);
  EXPECT_EQ(s.aggregated_evaluations, 1);
  EXPECT_GT(s.aggregated_seconds, 0);
}

TEST(PlanSearchTest, OffSearchesTheAggregatedKindOnly) {
  absl::StatusOr<PlanSearchResult> r =
      SearchLlama70b(SearchMethod::kAnneal, Disaggregation::kOff, 300);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->disaggregated.has_value());
  EXPECT_FALSE(r->aggregated.best.plan.disaggregated);
  EXPECT_LE(r->aggregated.evaluations, 300 + 64);  // a batch may overrun
}

// "auto" with a sampling method: the same method searches the joint space on
// its half; the disaggregated plans found are disaggregated and valid.
TEST(PlanSearchTest, AutoSearchesBothKindsOnOneBudget) {
  absl::StatusOr<PlanSearchResult> r =
      SearchLlama70b(SearchMethod::kGenetic, Disaggregation::kAuto, 600);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->disaggregated.has_value());
  const DisaggregatedFound& d = *r->disaggregated;
  ASSERT_TRUE(d.found);
  EXPECT_FALSE(d.swept);
  EXPECT_TRUE(d.best.plan.disaggregated);
  auto model = testing::MakeCostModel("llama-3.1-70b", 16);
  ASSERT_TRUE(model.ok());
  EXPECT_TRUE((*model)->ValidatePlan(d.best.plan).ok());
  EXPECT_LE(r->aggregated.evaluations + d.evaluations, 600 + 2 * 64);
  for (const ScoredPlan& p : d.elite) EXPECT_TRUE(p.plan.disaggregated);
}

// A rule method sweeps the joint space; cut at its share of a small budget,
// the sweep says so (the server reports "budget", not "exhausted"), and with
// a budget over its candidates it completes.
TEST(PlanSearchTest, SweepReportsItsStopAtTheBudget) {
  absl::StatusOr<PlanSearchResult> r =
      SearchLlama70b(SearchMethod::kMegatron, Disaggregation::kOnly, 20);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->disaggregated.has_value());
  EXPECT_TRUE(r->disaggregated->swept);
  EXPECT_EQ(r->disaggregated->evaluations, 10);
  EXPECT_TRUE(r->disaggregated->sweep_stopped_at_budget);
  r = SearchLlama70b(SearchMethod::kMegatron, Disaggregation::kOnly, 100000);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->disaggregated->sweep_stopped_at_budget);
  EXPECT_LT(r->disaggregated->evaluations, 50000);
}

// The server's default method: rl, except genetic over a joint space of more
// than PlanSpace::kLargeJointSpace tuples. Through SearchPlans (rl played by
// random: this binary has no LibTorch), the methods each kind asked for.
TEST(PlanSearchTest, DefaultMethodIsGeneticOnLargeJointSpacesOnly) {
  EXPECT_EQ(DefaultMethod(false, 1 << 20), SearchMethod::kRl);
  EXPECT_EQ(DefaultMethod(true, PlanSpace::kLargeJointSpace),
            SearchMethod::kRl);
  EXPECT_EQ(DefaultMethod(true, PlanSpace::kLargeJointSpace + 1),
            SearchMethod::kGenetic);
  std::vector<SearchMethod> asked;
  const MethodFactory make = [&](SearchMethod method) {
    asked.push_back(method);
    return CreateSearcher(SearchMethodName(
        method == SearchMethod::kRl ? SearchMethod::kRandom : method));
  };
  CancellationToken cancel;
  SearchObserver observer;
  PlanSearchOptions options;
  options.disaggregation = Disaggregation::kOnly;
  options.search.max_evaluations = 80;
  options.default_method = true;
  auto large = testing::MakeLargeDisaggregatedCostModel();
  ASSERT_TRUE(large.ok()) << large.status();
  absl::StatusOr<PlanSearchResult> r =
      SearchPlans(**large, options, cancel, observer, make);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(asked, ElementsAre(SearchMethod::kRl, SearchMethod::kGenetic));
  EXPECT_EQ(r->disaggregated->method, SearchMethod::kGenetic);
  // A method the request names is the method of both kinds.
  options.default_method = false;
  asked.clear();
  r = SearchPlans(**large, options, cancel, observer, make);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(asked, ElementsAre(SearchMethod::kRl, SearchMethod::kRl));
  // A small joint space keeps rl by default.
  auto small = testing::MakeCostModel("llama-3.1-8b", 8);
  ASSERT_TRUE(small.ok()) << small.status();
  options.default_method = true;
  asked.clear();
  r = SearchPlans(**small, options, cancel, observer, make);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(asked, ElementsAre(SearchMethod::kRl, SearchMethod::kRl));
}

}  // namespace
}  // namespace shardplan::policy
