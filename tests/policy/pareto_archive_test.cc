// The frontier archive: non-dominated, sorted, bounded; and the frontier a
// search returns (every evaluated plan offered, batch sweep, shared baseline).
#include "policy/internal/pareto_archive.h"

#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "policy/internal/search_run.h"
#include "policy/plan_space.h"
#include "simulator/megatron.h"
#include "tests/policy/test_util.h"

namespace shardplan::policy::internal {
namespace {

ScoredPlan Point(double per_gpu, double per_user, bool feasible = true) {
  ScoredPlan s;
  s.evaluation.feasible = feasible;
  s.evaluation.output_tokens_per_s_per_gpu = per_gpu;
  s.evaluation.tpot_seconds = per_user > 0 ? 1.0 / per_user : 0;
  return s;
}

// No point dominates another; throughput per GPU strictly falls and per-user
// speed strictly rises along the list.
void ExpectFrontier(const std::vector<ScoredPlan>& points) {
  for (size_t i = 1; i < points.size(); ++i) {
    EXPECT_GT(points[i - 1].evaluation.output_tokens_per_s_per_gpu,
              points[i].evaluation.output_tokens_per_s_per_gpu);
    EXPECT_LT(TokensPerSecondPerUser(points[i - 1].evaluation),
              TokensPerSecondPerUser(points[i].evaluation));
  }
}

TEST(ParetoArchiveTest, KeepsOnlyNonDominatedFeasiblePoints) {
  ParetoArchive archive(16);
  EXPECT_TRUE(archive.Offer(Point(100, 10)));
  EXPECT_FALSE(archive.Offer(Point(90, 9)));           // dominated
  EXPECT_FALSE(archive.Offer(Point(100, 10)));         // equal
  EXPECT_FALSE(archive.Offer(Point(500, 50, false)));  // infeasible
  EXPECT_TRUE(archive.Offer(Point(50, 20)));
  EXPECT_TRUE(archive.Offer(Point(200, 5)));
  ASSERT_EQ(archive.size(), 3);
  EXPECT_TRUE(archive.Offer(Point(120, 21)));  // dominates (100,10), (50,20)
  ASSERT_EQ(archive.size(), 2);
  EXPECT_EQ(archive.points()[0].evaluation.output_tokens_per_s_per_gpu, 200);
  EXPECT_EQ(archive.points()[1].evaluation.output_tokens_per_s_per_gpu, 120);
  ExpectFrontier(archive.points());
}

TEST(ParetoArchiveTest, MatchesBruteForceAndStaysBounded) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(1, 1000);
  ParetoArchive unbounded(1 << 20);
  ParetoArchive bounded(8);
  std::vector<ScoredPlan> all;
  for (int i = 0; i < 3000; ++i) {
    // Anti-correlated, as throughput and per-user speed are.
    const double x = u(rng);
    const ScoredPlan p = Point(x, 2e5 / x * u(rng) / 1000);
    all.push_back(p);
    unbounded.Offer(p);
    bounded.Offer(p);
  }
  int expected = 0;
  for (const ScoredPlan& p : all) {
    bool dominated = false;
    for (const ScoredPlan& q : all) {
      const double px = p.evaluation.output_tokens_per_s_per_gpu;
      const double qx = q.evaluation.output_tokens_per_s_per_gpu;
      const double py = TokensPerSecondPerUser(p.evaluation);
      const double qy = TokensPerSecondPerUser(q.evaluation);
      if (qx >= px && qy >= py && (qx > px || qy > py)) dominated = true;
    }
    if (!dominated) ++expected;
  }
  EXPECT_EQ(unbounded.size(), expected);
  ExpectFrontier(unbounded.points());
  ASSERT_EQ(bounded.size(), 8);
  ExpectFrontier(bounded.points());
  // The ends of the curve survive the bound.
  EXPECT_EQ(bounded.points().front().evaluation.output_tokens_per_s_per_gpu,
            unbounded.points().front().evaluation.output_tokens_per_s_per_gpu);
  EXPECT_EQ(TokensPerSecondPerUser(bounded.points().back().evaluation),
            TokensPerSecondPerUser(unbounded.points().back().evaluation));
}

class CountingObserver : public SearchObserver {
 public:
  void OnBaseline(const ScoredPlan&) override { ++baselines; }
  int baselines = 0;
};

TEST(SearchRunFrontierTest, FrontierCoversTheBestPlanAndFillsSmallBatches) {
  auto model = testing::MakeCostModel("llama-3.1-70b", 16);
  ASSERT_TRUE(model.ok()) << model.status();
  SearchOptions options;
  options.max_evaluations = 3000;
  CancellationToken cancel;
  CountingObserver observer;
  SearchRun run(**model, options, cancel, observer);
  ASSERT_TRUE(run.Start().ok());
  std::mt19937_64 rng(3);
  std::vector<Decisions> batch(256);
  while (!run.Done()) {
    for (Decisions& d : batch) d = run.space().SampleUniform(rng);
    run.Evaluate(batch);
  }
  const int layouts_found = run.frontier().size();
  const SearchResult result = run.Finish();
  EXPECT_EQ(observer.baselines, 1);
  ASSERT_FALSE(result.frontier.empty());
  EXPECT_GE(static_cast<int>(result.frontier.size()), layouts_found);
  ExpectFrontier(result.frontier);
  // The best-throughput end is at least as good per GPU as the best plan.
  EXPECT_GE(result.frontier.front().evaluation.output_tokens_per_s_per_gpu,
            result.best.evaluation.output_tokens_per_s_per_gpu);
  for (const ScoredPlan& p : result.frontier) {
    EXPECT_TRUE(p.evaluation.feasible);
    EXPECT_TRUE((*model)->ValidatePlan(p.plan).ok());
  }
  // The batch sweep reaches single-request speed.
  EXPECT_EQ(result.frontier.back().evaluation.batch_size, 1);
}

TEST(SearchRunFrontierTest, SharedSpaceAndBaselineAreNotRebuilt) {
  auto model = testing::MakeCostModel("llama-3.1-8b", 8);
  ASSERT_TRUE(model.ok()) << model.status();
  auto space = PlanSpace::Create(**model);
  ASSERT_TRUE(space.ok());
  ScoredPlan baseline;
  baseline.plan = simulator::MegatronPlan(**model);
  baseline.evaluation = (*model)->Evaluate(baseline.plan);
  SearchOptions options;
  options.space = space->get();
  options.baseline = &baseline;
  CancellationToken cancel;
  CountingObserver observer;
  SearchRun run(**model, options, cancel, observer);
  ASSERT_TRUE(run.Start().ok());
  EXPECT_EQ(&run.space(), space->get());
  EXPECT_EQ(run.evaluations(), 1);  // the baseline, counted once
  EXPECT_EQ(run.baseline().plan, baseline.plan);
  EXPECT_EQ(observer.baselines, 1);
}

TEST(SearchRunFrontierTest, CancelledRunStillReturnsItsBest) {
  auto model = testing::MakeCostModel("llama-3.1-8b", 8);
  ASSERT_TRUE(model.ok()) << model.status();
  SearchOptions options;
  CancellationToken cancel;
  SearchObserver observer;
  SearchRun run(**model, options, cancel, observer);
  ASSERT_TRUE(run.Start().ok());
  cancel.Cancel();
  EXPECT_TRUE(run.Done());
  const SearchResult result = run.Finish();
  EXPECT_EQ(result.stop_reason, StopReason::kCancelled);
  EXPECT_EQ(StopReasonName(result.stop_reason), "cancelled");
  EXPECT_EQ(result.best.plan, result.baseline.plan);
}

}  // namespace
}  // namespace shardplan::policy::internal
