// Plan space: masks only yield plans CostModel::ValidatePlan accepts (property
// test over many samples and problems, MoE included), encode/decode round
// trips, hashing, size, moves between degree tuples.
#include "policy/plan_space.h"

#include <algorithm>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policy/disaggregated_grid.h"
#include "simulator/disaggregated.h"
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

// A case's cost model and plan space.
absl::StatusOr<testing::ModelAndSpace> Build(const Case& c) {
  return testing::MakeModelAndSpace(c.model, c.gpus, 2048, 512, c.concurrency);
}

TEST(PlanSpaceTest, MaskFollowingSamplesAlwaysPassValidatePlan) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.model + " on " + std::to_string(c.gpus));
    auto built = Build(c);
    ASSERT_TRUE(built.ok()) << built.status();
    const PlanSpace& space = *built->space;
    const simulator::CostModel& model = *built->model;
    EXPECT_GT(space.Size(), 0);
    EXPECT_GT(space.NumChoices(kDegreesDecision), 0);
    std::mt19937_64 rng(7);
    Decisions walk = space.SampleUniform(rng);
    for (int i = 0; i < 3000; ++i) {
      // Alternate fresh samples and one-decision changes with repair (what
      // anneal and genetic do) so that prefixes are exercised from both
      // directions.
      Decisions d = space.SampleUniform(rng);
      if (i % 2 == 1) {
        const int decision = static_cast<int>(rng() % kNumDecisions);
        const std::vector<uint8_t> mask = space.Mask(decision, walk);
        std::vector<int> valid;
        for (size_t k = 0; k < mask.size(); ++k) {
          if (mask[k]) valid.push_back(static_cast<int>(k));
        }
        ASSERT_FALSE(valid.empty());
        walk[decision] = valid[rng() % valid.size()];
        space.Repair(walk, decision + 1, rng);
        d = walk;
      }
      ASSERT_TRUE(space.IsValid(d));
      const simulator::PlanDims plan = space.Decode(d);
      const absl::Status status = model.ValidatePlan(plan);
      ASSERT_TRUE(status.ok()) << status;
    }
  }
}

TEST(PlanSpaceTest, EncodeInvertsDecode) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.model);
    auto built = Build(c);
    ASSERT_TRUE(built.ok()) << built.status();
    const PlanSpace& space = *built->space;
    std::mt19937_64 rng(11);
    for (int i = 0; i < 500; ++i) {
      const Decisions d = space.SampleUniform(rng);
      auto encoded = space.Encode(space.Decode(d));
      ASSERT_TRUE(encoded.ok()) << encoded.status();
      EXPECT_EQ(*encoded, d);
    }
  }
}

TEST(PlanSpaceTest, MegatronPlanIsInTheSpaceWhenFeasible) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.model);
    auto built = Build(c);
    ASSERT_TRUE(built.ok()) << built.status();
    const PlanSpace& space = *built->space;
    const simulator::CostModel& model = *built->model;
    const simulator::PlanDims plan = simulator::MegatronPlan(model);
    const simulator::Evaluation e = model.Evaluate(plan);
    if (!e.feasible) continue;
    auto d = space.Encode(plan, e.batch_size);
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

TEST(PlanSpaceTest, TranslateBatchKeepsTheBatchPerGpuOfAReplica) {
  const std::vector<int>& candidates = simulator::BatchSizeCandidates();
  auto index_of = [&](int batch) {
    const auto it = std::find(candidates.begin(), candidates.end(), batch);
    return it == candidates.end() ? -1
                                  : static_cast<int>(it - candidates.begin());
  };
  Degrees one, eight;  // a replica of 1 GPU, and of tp 4 x pp 2 = 8 GPUs
  eight.tp = 4;
  eight.pp = 2;
  int checked = 0;
  for (int i = 0; i < static_cast<int>(candidates.size()); ++i) {
    const int up = index_of(candidates[i] * 8);
    if (up < 0) continue;
    EXPECT_EQ(TranslateBatch(i, one, eight), up) << candidates[i];
    EXPECT_EQ(TranslateBatch(up, eight, one), i) << candidates[up];
    ++checked;
  }
  EXPECT_GE(checked, 3);
  // Past either end: the extreme candidate.
  EXPECT_EQ(TranslateBatch(0, eight, one), 0);
  const int last = static_cast<int>(candidates.size()) - 1;
  EXPECT_EQ(TranslateBatch(last, one, eight), last);
  // Not a candidate index (the workload's concurrency): unchanged.
  EXPECT_EQ(TranslateBatch(last + 1, one, eight), last + 1);
}

TEST(PlanSpaceTest, NearestTuplesListsEveryOtherTupleOnceByDistance) {
  auto built = testing::MakeModelAndSpace("mixtral-8x22b", 16);
  ASSERT_TRUE(built.ok()) << built.status();
  const PlanSpace& space = *built->space;
  const int t = space.NumChoices(kDegreesDecision);
  ASSERT_GT(t, 10);
  for (int from : {0, t / 2, t - 1}) {
    const std::vector<int> order = space.NearestTuples(from);
    EXPECT_EQ(order.size(), static_cast<size_t>(t - 1));
    EXPECT_EQ(std::set<int>(order.begin(), order.end()).size(), order.size());
    EXPECT_EQ(std::count(order.begin(), order.end(), from), 0);
    auto distance = [&](int i) {
      const auto a = space.DegreeFeatures(from);
      const auto b = space.DegreeFeatures(i);
      double d2 = 0;
      for (size_t k = 0; k < a.size(); ++k) d2 += (a[k] - b[k]) * (a[k] - b[k]);
      return d2;
    };
    for (size_t i = 1; i < order.size(); ++i)
      EXPECT_LE(distance(order[i - 1]), distance(order[i]));
  }
}

TEST(PlanSpaceTest, MoveToTupleKeepsEveryDecisionThatStaysValid) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.model + " on " + std::to_string(c.gpus));
    auto built = Build(c);
    ASSERT_TRUE(built.ok()) << built.status();
    const PlanSpace& space = *built->space;
    std::mt19937_64 rng(11);
    const Decisions from = space.SampleUniform(rng);
    const Degrees& own = space.degrees()[from[kDegreesDecision]];
    for (int t = 0; t < space.NumChoices(kDegreesDecision); ++t) {
      const Decisions moved = space.MoveToTuple(from, t, rng);
      ASSERT_TRUE(space.IsValid(moved));
      EXPECT_EQ(moved[kDegreesDecision], t);
      for (int i = kFirstOpDecision; i < kNumDecisions; ++i) {
        const int wanted =
            i == kBatchDecision
                ? TranslateBatch(from[i], own, space.degrees()[t])
                : from[i];
        if (space.IsAllowed(i, moved, wanted)) {
          EXPECT_EQ(moved[i], wanted) << "decision " << i << " tuple " << t;
        }
      }
    }
  }
}

// Disaggregated cases: dense and MoE, open-loop and fixed concurrency, one
// node and several.
const std::vector<Case>& DisaggregatedCases() {
  static const auto* cases =
      new std::vector<Case>{{"llama-3.1-8b", 4, 0},  {"llama-3.1-70b", 16, 0},
                            {"deepseek-v3", 32, 0},  {"qwen3-235b-a22b", 16, 0},
                            {"mixtral-8x7b", 8, 32}, {"gpt-oss-120b", 8, 0}};
  return *cases;
}

absl::StatusOr<testing::ModelAndSpace> BuildDisaggregated(const Case& c) {
  testing::ModelAndSpace out;
  ASSIGN_OR_RETURN(out.model, testing::MakeCostModel(c.model, c.gpus, 2048, 512,
                                                     c.concurrency));
  ASSIGN_OR_RETURN(out.space, PlanSpace::CreateDisaggregated(*out.model));
  return out;
}

TEST(DisaggregatedPlanSpaceTest, MaskFollowingSamplesAlwaysPassValidatePlan) {
  for (const Case& c : DisaggregatedCases()) {
    SCOPED_TRACE(c.model + " on " + std::to_string(c.gpus));
    auto built = BuildDisaggregated(c);
    ASSERT_TRUE(built.ok()) << built.status();
    const PlanSpace& space = *built->space;
    ASSERT_TRUE(space.disaggregated());
    EXPECT_GT(space.Size(), 0);
    std::mt19937_64 rng(17);
    Decisions walk = space.SampleUniform(rng);
    for (int i = 0; i < 2000; ++i) {
      Decisions d = space.SampleUniform(rng);
      if (i % 2 == 1) {
        const int decision = static_cast<int>(rng() % kNumDecisions);
        const uint64_t bits =
            decision == kDegreesDecision ? 0 : space.MaskBits(decision, walk);
        walk[decision] =
            decision == kDegreesDecision
                ? static_cast<int>(rng() % space.NumChoices(decision))
                : SampleBit(bits, rng);
        space.Repair(walk, decision + 1, rng);
        d = walk;
      }
      ASSERT_TRUE(space.IsValid(d));
      const simulator::PlanDims plan = space.Decode(d);
      ASSERT_TRUE(plan.disaggregated);
      const absl::Status status = built->model->ValidatePlan(plan);
      ASSERT_TRUE(status.ok()) << status;
      EXPECT_EQ(plan.prefill_instances * plan.prefill.gpus() +
                    plan.decode_instances * plan.instance_gpus(),
                c.gpus);
    }
  }
}

TEST(DisaggregatedPlanSpaceTest, EncodeInvertsDecodeAndHashesAreDistinct) {
  for (const Case& c : DisaggregatedCases()) {
    SCOPED_TRACE(c.model);
    auto built = BuildDisaggregated(c);
    ASSERT_TRUE(built.ok()) << built.status();
    const PlanSpace& space = *built->space;
    std::mt19937_64 rng(23);
    std::set<Decisions> plans;
    std::set<uint64_t> hashes;
    for (int i = 0; i < 500; ++i) {
      const Decisions d = space.SampleUniform(rng);
      auto encoded = space.Encode(space.Decode(d));
      ASSERT_TRUE(encoded.ok()) << encoded.status();
      EXPECT_EQ(*encoded, d);
      plans.insert(d);
      hashes.insert(PlanSpace::Hash(d));
    }
    EXPECT_EQ(plans.size(), hashes.size());
  }
}

TEST(DisaggregatedPlanSpaceTest, CoversTheSweepsCandidatesWithMegatronDims) {
  // Every plan the disaggregated sweep evaluates (its decode batch 0 resolved
  // by the cost model) is a plan of the space, so a search of the space can
  // find whatever the sweep finds.
  int checked = 0;
  for (const Case& c : DisaggregatedCases()) {
    SCOPED_TRACE(c.model);
    auto built = BuildDisaggregated(c);
    ASSERT_TRUE(built.ok()) << built.status();
    const simulator::CostModel& model = *built->model;
    for (const simulator::PlanDims& plan :
         DisaggregatedCandidates(model, 200)) {
      const simulator::Evaluation e = model.Evaluate(plan);
      if (!e.feasible) continue;
      auto d = built->space->Encode(plan, e.batch_size);
      EXPECT_TRUE(d.ok()) << d.status();
      ++checked;
    }
  }
  EXPECT_GT(checked, 20);
}

TEST(DisaggregatedPlanSpaceTest, PlansOfTheOtherKindAreNotInTheSpace) {
  auto model = testing::MakeCostModel("llama-3.1-70b", 16);
  ASSERT_TRUE(model.ok()) << model.status();
  auto aggregated = PlanSpace::Create(**model);
  auto disaggregated = PlanSpace::CreateDisaggregated(**model);
  ASSERT_TRUE(aggregated.ok() && disaggregated.ok());
  std::mt19937_64 rng(5);
  const simulator::PlanDims agg =
      (*aggregated)->Decode((*aggregated)->SampleUniform(rng));
  const simulator::PlanDims disagg =
      (*disaggregated)->Decode((*disaggregated)->SampleUniform(rng));
  EXPECT_THAT((*disaggregated)->Encode(agg).status().message(),
              HasSubstr("aggregated plan"));
  EXPECT_THAT((*aggregated)->Encode(disagg).status().message(),
              HasSubstr("disaggregated plan"));
  // Prefill dims the cost model rejects (attention has no row split) are
  // outside the space once the prefill instance is tensor-parallel.
  simulator::PlanDims other = disagg;
  while (other.prefill.tp == 1)
    other = (*disaggregated)->Decode((*disaggregated)->SampleUniform(rng));
  other.prefill.dims[static_cast<int>(simulator::OpKind::kAttention)] =
      simulator::ShardDim::kRow;
  EXPECT_THAT((*disaggregated)->Encode(other).status().message(),
              HasSubstr("prefill attention dim row"));
}

TEST(DisaggregatedPlanSpaceTest, PrefillDimsAreDecidedAsTheCostModelAllows) {
  for (const Case& c : DisaggregatedCases()) {
    SCOPED_TRACE(c.model + " on " + std::to_string(c.gpus));
    auto built = BuildDisaggregated(c);
    ASSERT_TRUE(built.ok()) << built.status();
    const PlanSpace& space = *built->space;
    const simulator::CostModel& model = *built->model;
    ASSERT_EQ(space.num_decisions(), kNumDecisions);
    std::mt19937_64 rng(29);
    int free_ops = 0, non_megatron = 0;
    for (int i = 0; i < 300; ++i) {
      const Decisions d = space.SampleUniform(rng);
      const simulator::PlanDims plan = space.Decode(d);
      if (plan.prefill.dims != simulator::MegatronShardDims()) ++non_megatron;
      for (int o = 0; o < simulator::kNumOpKinds; ++o) {
        const uint64_t mask = space.MaskBits(kFirstPrefillOpDecision + o, d);
        ASSERT_NE(mask, 0u);
        // Every allowed dim is one the cost model accepts for the prefill
        // instance; where there is a choice, every dim it accepts is allowed.
        for (int dim = 0; dim < simulator::kNumShardDims; ++dim) {
          simulator::PlanDims variant = plan;
          variant.prefill.dims[o] = static_cast<simulator::ShardDim>(dim);
          const bool accepted =
              simulator::ValidateInstancePlan(
                  model, simulator::PrefillInstancePlan(variant))
                  .ok();
          const bool allowed = (mask >> dim) & 1;
          if (allowed) {
            EXPECT_TRUE(accepted) << o << " " << dim;
          }
          if (__builtin_popcountll(mask) > 1) {
            EXPECT_EQ(allowed, accepted) << o << " " << dim;
          }
        }
        if (__builtin_popcountll(mask) > 1) ++free_ops;
      }
    }
    // The prefill dims are decisions, not fixed at Megatron's.
    EXPECT_GT(free_ops, 0);
    EXPECT_GT(non_megatron, 0);
  }
}

TEST(DisaggregatedPlanSpaceTest, PrefillDimsOfOneRankGroupsAreCanonical) {
  // A prefill instance without tensor parallelism computes the same plan
  // whatever its dims say: it encodes (and hashes) as Megatron's.
  auto built = BuildDisaggregated({"llama-3.1-8b", 4, 0});
  ASSERT_TRUE(built.ok()) << built.status();
  const PlanSpace& space = *built->space;
  std::mt19937_64 rng(31);
  int checked = 0;
  for (int i = 0; i < 2000 && checked < 20; ++i) {
    const Decisions d = space.SampleUniform(rng);
    simulator::PlanDims plan = space.Decode(d);
    if (plan.prefill.tp != 1) continue;
    EXPECT_EQ(plan.prefill.dims, simulator::MegatronShardDims());
    plan.prefill.dims.fill(simulator::ShardDim::kReplicate);
    auto encoded = space.Encode(plan);
    ASSERT_TRUE(encoded.ok()) << encoded.status();
    EXPECT_EQ(*encoded, d);
    EXPECT_EQ(PlanSpace::Hash(*encoded), PlanSpace::Hash(d));
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

TEST(PlanSpaceTest, AggregatedSpacesHaveNoPrefillDims) {
  auto built = Build({"llama-3.1-70b", 16, 0});
  ASSERT_TRUE(built.ok()) << built.status();
  const PlanSpace& space = *built->space;
  EXPECT_EQ(space.num_decisions(), kNumAggregatedDecisions);
  std::mt19937_64 rng(37);
  for (int i = 0; i < 100; ++i) {
    Decisions d = space.SampleUniform(rng);
    for (int o = 0; o < simulator::kNumOpKinds; ++o) {
      EXPECT_EQ(d[kFirstPrefillOpDecision + o], 0);
      EXPECT_EQ(space.MaskBits(kFirstPrefillOpDecision + o, d), 1u);
    }
    d[kFirstPrefillOpDecision] = 1;
    EXPECT_FALSE(space.IsValid(d));
  }
}

TEST(DisaggregatedPlanSpaceTest, PoolFeaturesTellPrefillSidesApart) {
  auto model =
      testing::MakeCostModel("qwen3-235b-a22b", 32, 2048, 512, 0, 0, 0, "fp8");
  ASSERT_TRUE(model.ok()) << model.status();
  auto full = PlanSpace::CreateDisaggregated(**model);
  ASSERT_TRUE(full.ok()) << full.status();
  // Two joint tuples with the same decode layout but another prefill side
  // must be told apart by the features the policy sees.
  const PlanSpace& space = **full;
  const Degrees first = space.TupleDegrees(0);
  bool found = false;
  for (int i = 1; i < space.NumChoices(kDegreesDecision) && !found; ++i) {
    const Degrees g = space.TupleDegrees(i);
    if (g.dp == first.dp && g.tp == first.tp && g.pp == first.pp &&
        g.ep == first.ep && g.replicas == first.replicas) {
      EXPECT_NE(space.PoolFeatures(i), space.PoolFeatures(0));
      found = true;
    }
  }
  EXPECT_TRUE(found);
  // Aggregated tuples have no pool features.
  auto aggregated = PlanSpace::Create(**model);
  ASSERT_TRUE(aggregated.ok());
  EXPECT_EQ((*aggregated)->PoolFeatures(0),
            (std::array<float, PlanSpace::kPoolFeatures>{}));
}

// The joint space is not truncated: on 256 H100s the moe-1.6t space has
// about a hundred thousand (split, prefill layout, decode layout) tuples,
// the largest splits among them, and every tuple decodes to a plan
// ValidatePlan accepts and encodes back to itself.
TEST(DisaggregatedPlanSpaceTest, EveryPoolSplitOfALargeClusterIsInTheSpace) {
  auto model = testing::MakeLargeDisaggregatedCostModel();
  ASSERT_TRUE(model.ok()) << model.status();
  auto space = PlanSpace::CreateDisaggregated(**model);
  ASSERT_TRUE(space.ok()) << space.status();
  // 98,395 tuples whose pools at least one engine can run (the layouts no
  // engine runs, e.g. DP attention with TP and PP, leave the space).
  const int tuples = (*space)->NumChoices(kDegreesDecision);
  EXPECT_GT(tuples, 90000);
  // One prefill and one decode instance of dp128 ep64, at a load the batch
  // decision offers (the cost model's own scan goes on past 4096 requests
  // per instance, which the plan space's batch decisions do not reach).
  simulator::PlanDims plan = testing::OnePrefillOneDecodeDp128Ep64(1);
  plan.batch_size = 4096;
  ASSERT_TRUE((*model)->ValidatePlan(plan).ok());
  const simulator::Evaluation e = (*model)->Evaluate(plan);
  EXPECT_TRUE(e.feasible);
  auto encoded = (*space)->Encode(plan, e.batch_size);
  ASSERT_TRUE(encoded.ok()) << encoded.status();
  EXPECT_TRUE((*space)->IsValid(*encoded));
  const simulator::PlanDims decoded = (*space)->Decode(*encoded);
  EXPECT_EQ(decoded.prefill.dp, 128);
  EXPECT_EQ(decoded.prefill.ep, 64);
  EXPECT_EQ(decoded.decode_instances, 1);
  // Every split x * prefill GPUs + y * decode GPUs = 256: a stride over the
  // tuples sees the prefill pool's share from below a quarter to over three
  // quarters, and each tuple passes ValidatePlan and round-trips.
  std::mt19937_64 rng(5);
  double min_share = 1, max_share = 0;
  for (int t = 0; t < tuples; t += 97) {
    Decisions d{};
    d[kDegreesDecision] = t;
    (*space)->CompleteUniform(d, 1, rng);
    const simulator::PlanDims p = (*space)->Decode(d);
    ASSERT_TRUE((*model)->ValidatePlan(p).ok()) << t;
    auto back = (*space)->Encode(p);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(PlanSpace::Hash(*back), PlanSpace::Hash(d));
    const double share = p.prefill_instances * p.prefill.gpus() / 256.0;
    min_share = std::min(min_share, share);
    max_share = std::max(max_share, share);
  }
  EXPECT_LT(min_share, 0.25);
  EXPECT_GT(max_share, 0.75);
  // Neighbours of the dp128 ep64 tuple: one pool's layout changed, nearest
  // first, none of them the tuple itself.
  const std::vector<int> nearest =
      (*space)->NearestTuples((*encoded)[kDegreesDecision], 16);
  ASSERT_EQ(nearest.size(), 16u);
  const Degrees origin = (*space)->TupleDegrees((*encoded)[kDegreesDecision]);
  for (int t : nearest) {
    EXPECT_NE(t, (*encoded)[kDegreesDecision]);
    const Degrees g = (*space)->TupleDegrees(t);
    const bool same_decode = g.dp == origin.dp && g.tp == origin.tp &&
                             g.pp == origin.pp && g.ep == origin.ep;
    const bool same_prefill = g.prefill_dp == origin.prefill_dp &&
                              g.prefill_tp == origin.prefill_tp &&
                              g.prefill_pp == origin.prefill_pp &&
                              g.prefill_ep == origin.prefill_ep;
    EXPECT_TRUE(same_decode || same_prefill);
  }
}

TEST(DisaggregatedPlanSpaceTest, OneGpuHasNoDisaggregatedPlan) {
  auto model = testing::MakeCostModel("llama-3.1-8b", 1);
  ASSERT_TRUE(model.ok()) << model.status();
  auto space = PlanSpace::CreateDisaggregated(**model);
  EXPECT_EQ(space.status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace shardplan::policy
