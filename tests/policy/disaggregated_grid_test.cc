#include "policy/disaggregated_grid.h"

#include <set>
#include <tuple>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/policy/test_util.h"

namespace shardplan::policy {
namespace {

using testing::MakeCostModel;

TEST(DisaggregatedGridTest, CandidatesAreValidAndCoverSplits) {
  auto model = MakeCostModel("llama-3.1-8b", 8, 4096, 512);
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<simulator::PlanDims> candidates =
      DisaggregatedCandidates(**model, 1 << 20);
  ASSERT_FALSE(candidates.empty());
  EXPECT_EQ(DisaggregatedCandidates(**model, 5).size(), 5u);
  std::set<std::pair<int, int>> splits;
  for (const simulator::PlanDims& p : candidates) {
    EXPECT_TRUE(p.disaggregated);
    EXPECT_TRUE((*model)->ValidatePlan(p).ok());
    splits.insert({p.prefill_instances * p.prefill.gpus(),
                   p.decode_instances * p.instance_gpus()});
  }
  // Every split of 8 GPUs into two non-empty pools appears.
  for (int prefill = 1; prefill < 8; ++prefill) {
    EXPECT_EQ(splits.count({prefill, 8 - prefill}), 1u) << prefill;
  }
}

TEST(DisaggregatedGridTest, SweepFindsTheBestWithinBudget) {
  auto model = MakeCostModel("llama-3.1-8b", 8, 4096, 512, 0, 2000, 50);
  ASSERT_TRUE(model.ok()) << model.status();
  CancellationToken token;
  const DisaggregatedSweep all = SweepDisaggregated(**model, 1 << 20, 0, token);
  ASSERT_TRUE(all.found);
  EXPECT_EQ(all.evaluations, all.candidates);
  // No candidate beats the sweep's best.
  for (const simulator::PlanDims& p :
       DisaggregatedCandidates(**model, 1 << 20)) {
    EXPECT_LE((*model)->Evaluate(p).output_tokens_per_s,
              all.best.evaluation.output_tokens_per_s);
  }
  EXPECT_LE(all.best.evaluation.tpot_seconds, 0.050);
  // Its frontier: feasible disaggregated plans, non-dominated, best
  // throughput per GPU first, the best plan's throughput at its head; merging
  // it with nothing (or itself) changes nothing.
  ASSERT_FALSE(all.frontier.empty());
  for (size_t i = 0; i < all.frontier.size(); ++i) {
    EXPECT_TRUE(all.frontier[i].evaluation.feasible);
    EXPECT_TRUE(all.frontier[i].plan.disaggregated);
    if (i > 0) {
      EXPECT_GT(all.frontier[i - 1].evaluation.output_tokens_per_s_per_gpu,
                all.frontier[i].evaluation.output_tokens_per_s_per_gpu);
      EXPECT_LT(TokensPerSecondPerUser(all.frontier[i - 1].evaluation),
                TokensPerSecondPerUser(all.frontier[i].evaluation));
    }
  }
  EXPECT_DOUBLE_EQ(all.frontier.front().evaluation.output_tokens_per_s,
                   all.best.evaluation.output_tokens_per_s);
  EXPECT_EQ(MergeFrontiers(all.frontier, {}, 64).size(), all.frontier.size());
  EXPECT_EQ(MergeFrontiers(all.frontier, all.frontier, 64).size(),
            all.frontier.size());
  const DisaggregatedSweep few = SweepDisaggregated(**model, 3, 0, token);
  EXPECT_EQ(few.evaluations, 3);
  token.Cancel();
  EXPECT_EQ(SweepDisaggregated(**model, 100, 0, token).evaluations, 0);
}

}  // namespace
}  // namespace shardplan::policy
