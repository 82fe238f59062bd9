#include "policy/disaggregated_grid.h"

#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policy/plan_space.h"
#include "simulator/spec.h"
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

// A cluster of node groups of `sizes` GPUs per node (Qwen3-235B, FP8).
absl::StatusOr<std::unique_ptr<const simulator::CostModel>> MixedNodesModel(
    const std::vector<std::pair<int, int>>& groups) {
  shardplan::v1::ModelSource source;
  source.set_catalog_name("qwen3-235b-a22b");
  shardplan::v1::ClusterSpec cluster;
  cluster.set_hardware("h100-sxm-80gb");
  int gpus = 0;
  for (const auto& [nodes, size] : groups) {
    auto* g = cluster.add_node_groups();
    g->set_name("g" + std::to_string(cluster.node_groups_size()));
    g->set_num_nodes(nodes);
    g->set_gpus_per_node(size);
    gpus += nodes * size;
  }
  cluster.set_num_gpus(gpus);
  cluster.set_gpus_per_node(groups.front().second);
  shardplan::v1::Workload workload;
  workload.set_input_tokens(4096);
  workload.set_output_tokens(1024);
  workload.set_weight_dtype("fp8");
  ASSIGN_OR_RETURN(simulator::Problem problem,
                   simulator::ProblemFromProto(source, cluster, workload));
  return simulator::CostModel::Create(std::move(problem));
}

// 8-GPU and 4-GPU nodes: the sweep offers tensor parallelism up to the big
// nodes (the smallest node used to bound it), and the search's best plan on
// such a cluster is valid and feasible.
TEST(DisaggregatedGridTest, MixedNodesOfferTpUpToTheBiggestNode) {
  auto model = MixedNodesModel({{2, 8}, {2, 4}});
  ASSERT_TRUE(model.ok()) << model.status();
  bool tp8 = false;
  for (const simulator::PlanDims& p :
       DisaggregatedCandidates(**model, 1 << 20)) {
    tp8 |= p.tp == 8 || p.prefill.tp == 8;
  }
  EXPECT_TRUE(tp8);
  CancellationToken token;
  const DisaggregatedSweep sweep = SweepDisaggregated(**model, 2000, 0, token);
  ASSERT_TRUE(sweep.found);
  EXPECT_TRUE(sweep.best.evaluation.feasible);
  EXPECT_TRUE(sweep.best.plan.disaggregated);
  EXPECT_TRUE((*model)->ValidatePlan(sweep.best.plan).ok());
}

// The sweep ("grid" and "megatron" in disaggregation "only") returns a
// feasible plan whenever its candidates hold one, at a budget below the
// whole sweep: instances too small for the weights are never listed, and
// every pool split is tried before a second layout of any.
TEST(DisaggregatedGridTest, SweepReachesAFeasiblePlanWhenOneExists) {
  struct Case {
    std::string model;
    int gpus, isl, osl;
    double ttft_ms;
    int budget;
  };
  for (const Case& c :
       std::vector<Case>{{"qwen3-235b-a22b", 24, 2048, 512, 0, 3000},
                         {"moe-1.6t", 256, 128, 256, 1000, 3000}}) {
    SCOPED_TRACE(c.model);
    auto model = MakeCostModel(c.model, c.gpus, c.isl, c.osl, 0, c.ttft_ms);
    ASSERT_TRUE(model.ok()) << model.status();
    const double weight_bytes =
        (*model)->problem().model.TotalParams() *
        simulator::BytesPerElement((*model)->problem().workload.weight_dtype);
    const std::vector<simulator::PlanDims> candidates =
        DisaggregatedCandidates(**model, 1 << 20);
    bool any_feasible = false;
    for (const simulator::PlanDims& p : candidates) {
      EXPECT_LE(weight_bytes, p.prefill.gpus() * (*model)->capacity_bytes());
      EXPECT_LE(weight_bytes, p.instance_gpus() * (*model)->capacity_bytes());
      any_feasible = any_feasible || (*model)->Evaluate(p).feasible;
    }
    ASSERT_TRUE(any_feasible);
    CancellationToken token;
    const DisaggregatedSweep sweep =
        SweepDisaggregated(**model, c.budget, 0, token);
    EXPECT_TRUE(sweep.found);
    EXPECT_TRUE(sweep.best.evaluation.feasible);
    EXPECT_LE(sweep.evaluations, c.budget);
    EXPECT_EQ(sweep.complete, sweep.evaluations == sweep.candidates);
  }
}

// Instance sizes by the real nodes: on 8, 8 and 6 GPUs an instance of 14
// (8 + 6) is whole nodes, one of 12 is not (nor a power of two).
TEST(DisaggregatedGridTest, PlanSpaceOffersWholeNodeInstanceSizes) {
  auto model = MixedNodesModel({{2, 8}, {1, 6}});
  ASSERT_TRUE(model.ok()) << model.status();
  auto space = PlanSpace::CreateDisaggregated(**model, PlanSpaceOptions());
  ASSERT_TRUE(space.ok()) << space.status();
  std::set<int> sizes;
  for (int t = 0; t < (*space)->NumChoices(kDegreesDecision); ++t) {
    const Degrees g = (*space)->TupleDegrees(t);
    sizes.insert(g.prefill_gpus());
    sizes.insert(g.dp * g.tp * g.pp);
  }
  EXPECT_EQ(sizes.count(14), 1u);
  EXPECT_EQ(sizes.count(12), 0u);
  EXPECT_EQ(sizes.count(8), 1u);
}

}  // namespace
}  // namespace shardplan::policy
