// BatchLineSearch (policy/internal/batch_line_search.h): the batch it settles
// on and the plans it evaluates, checked against the cost model scanning the
// same batches directly.
#include "policy/internal/batch_line_search.h"

#include <algorithm>
#include <memory>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "policy/internal/search_run.h"
#include "policy/plan_space.h"
#include "tests/policy/test_util.h"

namespace shardplan::policy::internal {
namespace {

// Llama-3.1-405B on 32 H100s: Megatron's plan (dp2 tp8 pp2) moved to dp1 tp4
// pp8 keeps its batch per GPU of a replica, but the smaller weight share per
// GPU leaves room for a larger batch.
class BatchLineSearchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto model = testing::MakeCostModel("llama-3.1-405b", 32);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = *std::move(model);
  }

  // The evaluated plans, in order, and the best reward among them.
  struct Trace {
    std::vector<Decisions> evaluated;
    double best_reward = -1e300;
    int evaluations = 0;
  };

  // Moves Megatron's plan to `tuple` (-1: dp1 tp4 pp8) and line-searches it.
  Trace Run(int max_evaluations, int batch_offset_from_last_valid = -1,
            int tuple = -1) {
    SearchOptions options;
    options.max_evaluations = max_evaluations;
    run_ = std::make_unique<SearchRun>(*model_, options, cancel_, observer_);
    SearchRun& run = *run_;
    Trace trace;
    if (!run.Start().ok() || !run.baseline_decisions().has_value()) {
      ADD_FAILURE() << "no baseline";
      return trace;
    }
    space_ = &run.space();
    Decisions plan = *run.baseline_decisions();
    int target = tuple;
    for (int t = 0; target < 0 && t < space_->NumChoices(kDegreesDecision);
         ++t) {
      const Degrees& g = space_->degrees()[t];
      if (g.dp == 1 && g.tp == 4 && g.pp == 8) target = t;
    }
    if (target < 0) {
      ADD_FAILURE() << "dp1 tp4 pp8 not in the space";
      return trace;
    }
    std::mt19937_64 rng(3);
    plan = space_->MoveToTuple(plan, target, rng);
    if (batch_offset_from_last_valid >= 0) {
      // Start from one of the largest batches the masks allow.
      int last = plan[kBatchDecision];
      while (true) {
        Decisions bigger = plan;
        bigger[kBatchDecision] = last + 1;
        if (!space_->IsValid(bigger)) break;
        ++last;
      }
      plan[kBatchDecision] = last - batch_offset_from_last_valid;
    }
    start_ = plan;
    const std::vector<ScoredPlan> scored = run.Evaluate({plan});
    BatchLineSearch(run, {plan}, scored,
                    [&](const Decisions& a, const ScoredPlan& p) {
                      trace.evaluated.push_back(a);
                      trace.best_reward = std::max(trace.best_reward, p.reward);
                    });
    trace.evaluations = run.evaluations();
    return trace;
  }

  simulator::Evaluation Evaluate(const Decisions& d, int batch) const {
    Decisions with = d;
    with[kBatchDecision] = batch;
    return model_->Evaluate(space_->Decode(with));
  }

  std::unique_ptr<const simulator::CostModel> model_;
  std::unique_ptr<SearchRun> run_;  // owns the space
  const PlanSpace* space_ = nullptr;
  Decisions start_{};
  CancellationToken cancel_;
  SearchObserver observer_;
};

TEST_F(BatchLineSearchTest, ClimbsWhileThroughputRisesAndStopsAtTheFirstDrop) {
  const Trace trace = Run(/*max_evaluations=*/100);
  ASSERT_FALSE(trace.evaluated.empty());
  const int b0 = start_[kBatchDecision];
  ASSERT_TRUE(Evaluate(start_, b0).feasible);
  // Expected from the cost model directly: the batches above b0 while each
  // beats the one before, then the first that does not; a batch the masks do
  // not allow ends the climb unevaluated.
  int expect_last = b0;
  while (true) {
    Decisions bigger = start_;
    bigger[kBatchDecision] = expect_last + 1;
    if (!space_->IsValid(bigger)) break;
    const simulator::Evaluation next = Evaluate(start_, expect_last + 1);
    const simulator::Evaluation here = Evaluate(start_, expect_last);
    ++expect_last;
    if (!next.feasible || next.output_tokens_per_s <= here.output_tokens_per_s)
      break;
  }
  ASSERT_GE(expect_last - b0, 2) << "the moved plan's batch is already best";
  ASSERT_EQ(static_cast<int>(trace.evaluated.size()), expect_last - b0);
  for (size_t i = 0; i < trace.evaluated.size(); ++i) {
    Decisions expected = start_;
    expected[kBatchDecision] = b0 + 1 + static_cast<int>(i);
    EXPECT_EQ(trace.evaluated[i], expected) << "step " << i;
  }
  // The best plan found has the best throughput of the scanned batches, well
  // above the moved plan's.
  const double best_tps = Evaluate(start_, expect_last - 1).output_tokens_per_s;
  EXPECT_GT(best_tps, 1.2 * Evaluate(start_, b0).output_tokens_per_s);
  EXPECT_EQ(trace.evaluations, 2 + static_cast<int>(trace.evaluated.size()));
}

TEST_F(BatchLineSearchTest, AnInfeasibleBatchDescendsToTheFirstFeasibleOne) {
  // The masks are a lower bound of the memory a batch needs: find a degree
  // tuple whose largest allowed batch still does not fit.
  Trace trace;
  int b0 = -1;
  for (int t = 0; t < 64; ++t) {
    trace = Run(/*max_evaluations=*/100, /*batch_offset_from_last_valid=*/0, t);
    if (space_ == nullptr || t >= space_->NumChoices(kDegreesDecision)) break;
    const simulator::Evaluation e = Evaluate(start_, start_[kBatchDecision]);
    if (!e.feasible &&
        e.reason == simulator::InfeasibleReason::kKvCacheExceedsMemory) {
      b0 = start_[kBatchDecision];
      break;
    }
  }
  ASSERT_GE(b0, 0) << "every tuple's largest allowed batch fits; no descent";
  int expect = b0;
  while (expect > 0 && !Evaluate(start_, expect).feasible) --expect;
  ASSERT_FALSE(trace.evaluated.empty());
  EXPECT_EQ(static_cast<int>(trace.evaluated.size()), b0 - expect);
  EXPECT_EQ(trace.evaluated.back()[kBatchDecision], expect);
  EXPECT_TRUE(Evaluate(start_, expect).feasible);
}

TEST_F(BatchLineSearchTest, StopsWhenTheBudgetRunsOut) {
  // Baseline + the moved plan + one step.
  const Trace trace = Run(/*max_evaluations=*/3);
  EXPECT_EQ(trace.evaluated.size(), 1u);
  EXPECT_EQ(trace.evaluations, 3);
}

}  // namespace
}  // namespace shardplan::policy::internal
