// Plan space: masks only yield plans CostModel::ValidatePlan accepts (property
// test over many samples and problems, MoE included), encode/decode round
// trips, hashing, size.
#include "policy/plan_space.h"

#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simulator/megatron.h"
#include "tests/policy/test_util.h"

namespace shardplan::policy {
namespace {

using ::testing::HasSubstr;

struct Case {
  std::string model;
  int gpus;
  int concurrency;
};

const std::vector<Case>& Cases() {
  static const auto* cases = new std::vector<Case>{
      {"llama-3.1-8b", 4, 0},     {"llama-3.1-70b", 16, 0},
      {"llama-3.1-405b", 64, 0},  {"mixtral-8x22b", 16, 0},
      {"qwen3-235b-a22b", 64, 0}, {"deepseek-v3", 32, 0},
      {"moe-1.6t", 256, 0},       {"llama-3.1-70b", 8, 64},
      {"mixtral-8x7b", 8, 32},    {"gpt-oss-120b", 8, 0}};
  return *cases;
}

TEST(PlanSpaceTest, MaskFollowingSamplesAlwaysPassValidatePlan) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.model + " on " + std::to_string(c.gpus));
    auto model =
        testing::MakeCostModel(c.model, c.gpus, 2048, 512, c.concurrency);
    ASSERT_TRUE(model.ok()) << model.status();
    auto space = PlanSpace::Create(**model);
    ASSERT_TRUE(space.ok()) << space.status();
    EXPECT_GT((*space)->Size(), 0);
    EXPECT_GT((*space)->NumChoices(kDegreesDecision), 0);
    std::mt19937_64 rng(7);
    Decisions walk = (*space)->SampleUniform(rng);
    for (int i = 0; i < 3000; ++i) {
      // Alternate fresh samples and one-decision changes with repair (what
      // anneal and genetic do) so that prefixes are exercised from both
      // directions.
      Decisions d = (*space)->SampleUniform(rng);
      if (i % 2 == 1) {
        const int decision = static_cast<int>(rng() % kNumDecisions);
        const std::vector<uint8_t> mask = (*space)->Mask(decision, walk);
        std::vector<int> valid;
        for (size_t k = 0; k < mask.size(); ++k) {
          if (mask[k]) valid.push_back(static_cast<int>(k));
        }
        ASSERT_FALSE(valid.empty());
        walk[decision] = valid[rng() % valid.size()];
        (*space)->Repair(walk, decision + 1, rng);
        d = walk;
      }
      ASSERT_TRUE((*space)->IsValid(d));
      const simulator::PlanDims plan = (*space)->Decode(d);
      const absl::Status status = (*model)->ValidatePlan(plan);
      ASSERT_TRUE(status.ok()) << status;
    }
  }
}

TEST(PlanSpaceTest, EncodeInvertsDecode) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.model);
    auto model =
        testing::MakeCostModel(c.model, c.gpus, 2048, 512, c.concurrency);
    ASSERT_TRUE(model.ok()) << model.status();
    auto space = PlanSpace::Create(**model);
    ASSERT_TRUE(space.ok()) << space.status();
    std::mt19937_64 rng(11);
    for (int i = 0; i < 500; ++i) {
      const Decisions d = (*space)->SampleUniform(rng);
      auto encoded = (*space)->Encode((*space)->Decode(d));
      ASSERT_TRUE(encoded.ok()) << encoded.status();
      EXPECT_EQ(*encoded, d);
    }
  }
}

TEST(PlanSpaceTest, MegatronPlanIsInTheSpaceWhenFeasible) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.model);
    auto model =
        testing::MakeCostModel(c.model, c.gpus, 2048, 512, c.concurrency);
    ASSERT_TRUE(model.ok()) << model.status();
    auto space = PlanSpace::Create(**model);
    ASSERT_TRUE(space.ok());
    const simulator::PlanDims plan = simulator::MegatronPlan(**model);
    const simulator::Evaluation e = (*model)->Evaluate(plan);
    if (!e.feasible) continue;
    auto d = (*space)->Encode(plan, e.batch_size);
    EXPECT_TRUE(d.ok()) << d.status();
  }
}

TEST(PlanSpaceTest, DistinctPlansHashDistinctly) {
  auto model = testing::MakeCostModel("deepseek-v3", 32);
  ASSERT_TRUE(model.ok()) << model.status();
  auto space = PlanSpace::Create(**model);
  ASSERT_TRUE(space.ok());
  std::mt19937_64 rng(3);
  std::set<Decisions> plans;
  std::set<uint64_t> hashes;
  for (int i = 0; i < 20000; ++i) {
    const Decisions d = (*space)->SampleUniform(rng);
    plans.insert(d);
    hashes.insert(PlanSpace::Hash(d));
  }
  EXPECT_EQ(plans.size(), hashes.size());
}

TEST(PlanSpaceTest, ForEachVisitsExactlySizePlans) {
  for (const auto& [gpus, concurrency] :
       std::vector<std::pair<int, int>>{{1, 0}, {2, 32}}) {
    auto model =
        testing::MakeCostModel("llama-3.1-8b", gpus, 2048, 512, concurrency);
    ASSERT_TRUE(model.ok()) << model.status();
    auto space = PlanSpace::Create(**model);
    ASSERT_TRUE(space.ok());
    std::set<uint64_t> seen;
    (*space)->ForEach([&](const Decisions& d) {
      EXPECT_TRUE((*space)->IsValid(d));
      EXPECT_TRUE((*model)->ValidatePlan((*space)->Decode(d)).ok());
      seen.insert(PlanSpace::Hash(d));
      return true;
    });
    EXPECT_EQ(static_cast<double>(seen.size()), (*space)->Size());
  }
}

TEST(PlanSpaceTest, DenseModelsHaveNoExpertParallelismOrExpertChoices) {
  auto model = testing::MakeCostModel("llama-3.1-70b", 16);
  ASSERT_TRUE(model.ok()) << model.status();
  auto space = PlanSpace::Create(**model);
  ASSERT_TRUE(space.ok());
  Decisions d{};
  for (size_t t = 0; t < (*space)->degrees().size(); ++t) {
    EXPECT_EQ((*space)->degrees()[t].ep, 1);
    d[kDegreesDecision] = static_cast<int>(t);
    for (simulator::OpKind op :
         {simulator::OpKind::kRouter, simulator::OpKind::kExpertUp,
          simulator::OpKind::kExpertDown}) {
      EXPECT_EQ(__builtin_popcountll((*space)->MaskBits(
                    kFirstOpDecision + static_cast<int>(op), d)),
                1);
    }
  }
}

TEST(PlanSpaceTest, EncodeRejectsPlansOutsideTheSpace) {
  auto model = testing::MakeCostModel("llama-3.1-70b", 16);
  ASSERT_TRUE(model.ok()) << model.status();
  auto space = PlanSpace::Create(**model);
  ASSERT_TRUE(space.ok());
  simulator::PlanDims plan;
  plan.dp = 16;
  plan.tp = 1;
  plan.pp = 1;
  plan.ep = 2;
  plan.batch_size = 8;
  auto d = (*space)->Encode(plan);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(), HasSubstr("not in the plan space"));
}

}  // namespace
}  // namespace shardplan::policy
