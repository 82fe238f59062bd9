// The network's input tokens: fixed sizes whatever the problem (so weights
// transfer), finite values, and a plan token that encodes its decisions.
#include "policy/rl/features.h"

#include <array>
#include <cmath>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "policy/plan_space.h"
#include "simulator/megatron.h"
#include "tests/policy/test_util.h"

namespace shardplan::policy::rl {
namespace {

TEST(FeaturesTest, ContextTokenHasAFixedSizeAndFiniteValues) {
  for (const auto& [model, gpus] : std::vector<std::pair<std::string, int>>{
           {"llama-3.1-8b", 4}, {"deepseek-v3", 128}}) {
    auto built = testing::MakeCostModel(model, gpus);
    ASSERT_TRUE(built.ok()) << built.status();
    const std::vector<float> f = ContextFeatures((*built)->problem());
    ASSERT_EQ(f.size(), static_cast<size_t>(kContextFeatures)) << model;
    for (float x : f) EXPECT_TRUE(std::isfinite(x)) << model;
  }
}

TEST(FeaturesTest, PlanTokenEncodesTheDecisions) {
  auto built = testing::MakeModelAndSpace("mixtral-8x7b", 8);
  ASSERT_TRUE(built.ok()) << built.status();
  const PlanSpace& space = *built->space;
  const simulator::PlanDims megatron = simulator::MegatronPlan(*built->model);
  auto plan =
      space.Encode(megatron, built->model->Evaluate(megatron).batch_size);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ScoredPlan scored;
  scored.evaluation = built->model->Evaluate(space.Decode(*plan));
  scored.plan = space.Decode(*plan);
  const std::array<float, kPlanFeatures> f =
      PlanFeatures(space, *plan, scored, /*norm_reward=*/0.5f, /*rank=*/0.25f);
  const int degree = PlanSpace::kDegreeFeatures;
  // One operator dimension per operator kind, one micro-batch choice.
  const float ops =
      std::accumulate(f.begin() + degree,
                      f.begin() + degree + simulator::kNumOpKinds * 5, 0.0f);
  EXPECT_EQ(ops, static_cast<float>(simulator::kNumOpKinds));
  const int micro = degree + simulator::kNumOpKinds * 5;
  EXPECT_EQ(f[micro + (*plan)[kMicroBatchesDecision]], 1.0f);
  EXPECT_EQ(f[kPlanFeatures - 3], 0.5f);   // normalised reward
  EXPECT_EQ(f[kPlanFeatures - 2], 0.25f);  // rank
  EXPECT_EQ(f[kPlanFeatures - 1], scored.evaluation.feasible ? 1.0f : 0.0f);
}

}  // namespace
}  // namespace shardplan::policy::rl
