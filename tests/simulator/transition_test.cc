// The re-planning diff (simulator/transition.h): what a GPU already holds is
// not loaded again, removed nodes lose their shards, nodes say what they load.
#include "simulator/transition.h"

#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/cost_model.h"
#include "simulator/spec.h"

namespace shardplan::simulator {
namespace {

using ::testing::HasSubstr;

Problem MakeProblem(const std::string& model, int gpus,
                    const std::string& hardware = "h100-sxm-80gb",
                    const std::string& dtype = "bf16") {
  shardplan::v1::ModelSource source;
  source.set_catalog_name(model);
  shardplan::v1::ClusterSpec cluster;
  cluster.set_hardware(hardware);
  cluster.set_num_gpus(gpus);
  cluster.set_gpus_per_node(8);
  shardplan::v1::Workload workload;
  workload.set_input_tokens(2048);
  workload.set_output_tokens(512);
  workload.set_concurrency(16);
  workload.set_weight_dtype(dtype);
  absl::StatusOr<Problem> problem = ProblemFromProto(source, cluster, workload);
  EXPECT_TRUE(problem.ok()) << problem.status();
  return problem.ok() ? *problem : Problem{};
}

PlanDims Degrees(int replicas, int dp, int tp, int pp, int ep = 1) {
  PlanDims p;
  p.replicas = replicas;
  p.dp = dp;
  p.tp = tp;
  p.pp = pp;
  p.ep = ep;
  return p;
}

std::unique_ptr<const TransitionModel> MakeModel(const Problem& running,
                                                 const PlanDims& plan,
                                                 const Problem& next) {
  absl::StatusOr<std::unique_ptr<const CostModel>> cost =
      CostModel::Create(running);
  EXPECT_TRUE(cost.ok()) << cost.status();
  EXPECT_TRUE((*cost)->ValidatePlan(plan).ok());
  RunningDeployment d;
  d.problem = running;
  d.plan = plan;
  d.kv_cache_bytes_per_gpu = (*cost)->Evaluate(plan).kv_cache_bytes;
  auto model = TransitionModel::Create(d, next);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? std::move(*model) : nullptr;
}

TEST(TransitionTest, SamePlanSameClusterMovesNothing) {
  const Problem p = MakeProblem("llama-3.1-70b", 16);
  const PlanDims plan = Degrees(2, 1, 8, 1);
  auto model = MakeModel(p, plan, p);
  const TransitionCost c = model->Diff(plan, true);
  EXPECT_EQ(c.total_bytes, 0);
  EXPECT_EQ(c.max_bytes_per_gpu, 0);
  EXPECT_EQ(c.kv_bytes_lost, 0);
  EXPECT_EQ(c.gpus_unchanged, 16);
  EXPECT_EQ(c.estimated_seconds, 0);
  EXPECT_TRUE(c.rolling);
  EXPECT_TRUE(c.node_loads.empty());
  EXPECT_GT(c.fresh_seconds, 0);
}

TEST(TransitionTest, ChangingTpReloadsAllButTheOverlappingSlice) {
  // tp 8 -> tp 4 on the same 8 GPUs (2 replicas of tp 4): rank r of a tp 4
  // group holds slice [r/4, (r+1)/4), which contains the old slices 2r/8 and
  // (2r+1)/8.
  const Problem p = MakeProblem("llama-3.1-8b", 8);
  auto model = MakeModel(p, Degrees(1, 1, 8, 1), p);
  const double weights = p.model.TotalParams() * 2;
  // Ranks in GPU order: only GPU 0 (slice 0/8 inside 0/4) keeps anything, so
  // the busiest GPU loads its whole quarter.
  const TransitionCost in_order =
      model->Diff(Degrees(2, 1, 4, 1), false, /*match_gpu_order=*/false);
  EXPECT_GT(in_order.total_bytes, 0);
  EXPECT_EQ(in_order.gpus_unchanged, 0);
  EXPECT_FALSE(in_order.rolling);
  EXPECT_NEAR(in_order.max_bytes_per_gpu, weights / 4, weights * 0.01);
  EXPECT_LT(in_order.total_bytes, 8 * weights / 4);
  // Everything is still on the cluster: all of it comes from peers.
  EXPECT_EQ(in_order.storage_bytes, 0);
  EXPECT_NEAR(in_order.peer_bytes, in_order.total_bytes, 1);
  // Matched: replica 0's rank r runs on the GPU that held slice 2r/8 and
  // replica 1's on the one that held (2r+1)/8, so every GPU keeps an eighth
  // and loads the other eighth: one model's worth in all.
  const TransitionCost c = model->Diff(Degrees(2, 1, 4, 1), true);
  EXPECT_NEAR(c.max_bytes_per_gpu, weights / 8, weights * 0.01);
  EXPECT_NEAR(c.total_bytes, weights, weights * 0.02);
  EXPECT_LT(c.total_bytes, in_order.total_bytes);
  ASSERT_EQ(c.node_loads.size(), 1u);
  EXPECT_THAT(c.node_loads[0].what, HasSubstr("GPU order 0,2,4,6,1,3,5,7"));
}

TEST(TransitionTest, RemovedNodeLosesItsShardsAndReplicaKeepsServing) {
  // 70B, 3 replicas of tp 8 on 3 nodes; node 1 is removed: replica 0 keeps
  // serving untouched, replica 2 moves to node 1 (a new index), so the diff
  // is zero for node 0 and a reload for new node 1.
  const Problem old_problem = MakeProblem("llama-3.1-70b", 24);
  const Problem next = MakeProblem("llama-3.1-70b", 16);
  const PlanDims plan = Degrees(3, 1, 8, 1);
  absl::StatusOr<std::unique_ptr<const CostModel>> cost =
      CostModel::Create(old_problem);
  ASSERT_TRUE(cost.ok());
  RunningDeployment d;
  d.problem = old_problem;
  d.plan = plan;
  d.kv_cache_bytes_per_gpu = (*cost)->Evaluate(plan).kv_cache_bytes;
  d.removed_nodes = {1};
  auto model = TransitionModel::Create(d, next);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_THAT((*model)->old_node_of(), ::testing::ElementsAre(0, 2));
  const TransitionCost c = (*model)->Diff(Degrees(2, 1, 8, 1), true);
  EXPECT_EQ(c.gpus_unchanged, 16);  // old node 2 is new node 1, same shards
  EXPECT_EQ(c.total_bytes, 0);
  EXPECT_TRUE(c.rolling);
  EXPECT_GT(c.kv_bytes_lost, 0);  // replica 1's requests on the lost node

  // Default rule (no removed_nodes): the last node goes.
  d.removed_nodes.clear();
  auto last = TransitionModel::Create(d, next);
  ASSERT_TRUE(last.ok());
  EXPECT_THAT((*last)->old_node_of(), ::testing::ElementsAre(0, 1));
}

// Which old stages survive is read on the running cluster's own nodes, also
// when they differ in size: an 8-GPU node (placed first) and a 4-GPU node,
// tp 4 x pp 3, the 4-GPU node removed. Stages 0 and 1 (both on the 8-GPU
// node) survive and serve their layers to peers, stage 2's come from
// storage, as on three 4-GPU nodes that lose the last. Read as uniform
// 4-GPU nodes, stage 1 would sit on the removed node.
TEST(TransitionTest, SurvivingStagesAreFoundOnNodesOfDifferentSizes) {
  auto problem = [](int gpus, int gpus_per_node, bool mixed) {
    shardplan::v1::ModelSource source;
    source.set_catalog_name("llama-3.1-8b");
    shardplan::v1::ClusterSpec cluster;
    cluster.set_hardware("h100-sxm-80gb");
    cluster.set_num_gpus(gpus);
    cluster.set_gpus_per_node(gpus_per_node);
    if (mixed) {
      if (gpus == 12) {
        auto* half = cluster.add_node_groups();
        half->set_name("half");
        half->set_num_nodes(1);
        half->set_gpus_per_node(4);
      }
      auto* dgx = cluster.add_node_groups();
      dgx->set_name("dgx");
      dgx->set_num_nodes(1);
      dgx->set_gpus_per_node(8);
    }
    shardplan::v1::Workload workload;
    workload.set_input_tokens(2048);
    workload.set_output_tokens(512);
    workload.set_concurrency(16);
    absl::StatusOr<Problem> p = ProblemFromProto(source, cluster, workload);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *p : Problem{};
  };
  auto storage_bytes = [](const Problem& running, const Problem& next,
                          int removed_node) {
    const PlanDims plan = Degrees(1, 1, 4, 3);
    absl::StatusOr<std::unique_ptr<const CostModel>> cost =
        CostModel::Create(running);
    EXPECT_TRUE(cost.ok()) << cost.status();
    if (!cost.ok()) return -1.0;
    EXPECT_TRUE((*cost)->ValidatePlan(plan).ok());
    RunningDeployment d;
    d.problem = running;
    d.plan = plan;
    d.kv_cache_bytes_per_gpu = (*cost)->Evaluate(plan).kv_cache_bytes;
    d.removed_nodes = {removed_node};
    auto model = TransitionModel::Create(d, next);
    EXPECT_TRUE(model.ok()) << model.status();
    if (!model.ok()) return -1.0;
    return static_cast<double>(
        (*model)->Diff(Degrees(1, 1, 8, 1), true).storage_bytes);
  };
  const double mixed =
      storage_bytes(problem(12, 8, true), problem(8, 8, true), 1);
  const double uniform =
      storage_bytes(problem(12, 4, false), problem(8, 4, false), 2);
  EXPECT_GT(uniform, 0);
  EXPECT_NEAR(mixed, uniform, 1);
}

TEST(TransitionTest, BadRemovedNodesNameTheField) {
  const Problem p = MakeProblem("llama-3.1-8b", 16);
  RunningDeployment d;
  d.problem = p;
  d.plan = Degrees(2, 1, 8, 1);
  d.removed_nodes = {5};
  absl::StatusOr<std::unique_ptr<const TransitionModel>> m =
      TransitionModel::Create(d, MakeProblem("llama-3.1-8b", 8));
  ASSERT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(m.status().message(), HasSubstr("current.removed_nodes[0]"));
  d.removed_nodes = {0, 0};
  m = TransitionModel::Create(d, MakeProblem("llama-3.1-8b", 8));
  EXPECT_THAT(m.status().message(), HasSubstr("repeats node 0"));
  // Nothing removed but fewer nodes than survive is not an error: the last
  // nodes go. More survivors than nodes only happens with explicit lists.
  d.removed_nodes = {};
  EXPECT_TRUE(TransitionModel::Create(d, MakeProblem("llama-3.1-8b", 8)).ok());
}

TEST(TransitionTest, DeeperPipelineLoadsOnlyTheLayersAStageLacks) {
  // 405B tp 8 pp 4 on 4 nodes -> tp 8 pp 3 on 3 nodes: stage 0 held layers
  // 0-31 and now holds 0-41, so node 0 loads layers 32-41 only.
  const Problem old_problem = MakeProblem("llama-3.1-405b", 32);
  const Problem next = MakeProblem("llama-3.1-405b", 24);
  auto model = MakeModel(old_problem, Degrees(1, 1, 8, 4), next);
  const TransitionCost c = model->Diff(Degrees(1, 1, 8, 3), true);
  ASSERT_FALSE(c.node_loads.empty());
  EXPECT_EQ(c.node_loads[0].node, 0);
  EXPECT_THAT(c.node_loads[0].what,
              HasSubstr("replica 0 stage 0 layers 32-41 tp slices 0-7/8"));
  // Node 0 loads 10 of its stage's 42 layers: well under a third of the
  // model (what a node holds in a fresh pp 3 plan).
  EXPECT_LT(c.node_loads[0].bytes, 0.3 * next.model.TotalParams() * 2 / 3);
  EXPECT_GT(c.node_loads[0].bytes, 0);
  EXPECT_FALSE(c.rolling);  // one replica, reshaped
  EXPECT_GT(c.kv_bytes_lost, 0);
  // Layers 95-125 (old stage 3, on the removed node) come from storage.
  EXPECT_GT(c.storage_bytes, 0);
  EXPECT_GT(c.estimated_seconds,
            c.storage_bytes / 3 / kStorageBytesPerSPerNode);
}

TEST(TransitionTest, ExpertsAreReHomedAndNamed) {
  // DeepSeek-V3 (FP8) as one EP32 instance on 4 H200 nodes; one node goes and
  // the 3 left run 3 EP8 instances: every GPU holds 32 experts instead of 8.
  const Problem old_problem =
      MakeProblem("deepseek-v3", 32, "h200-sxm-141gb", "fp8");
  const Problem next = MakeProblem("deepseek-v3", 24, "h200-sxm-141gb", "fp8");
  PlanDims running = Degrees(1, 32, 1, 1, 32);
  auto model = MakeModel(old_problem, running, next);
  PlanDims adapted = Degrees(3, 8, 1, 1, 8);
  absl::StatusOr<std::unique_ptr<const CostModel>> next_cost =
      CostModel::Create(next);
  ASSERT_TRUE(next_cost.ok());
  ASSERT_TRUE((*next_cost)->ValidatePlan(adapted).ok());
  const TransitionCost c = model->Diff(adapted, true);
  ASSERT_EQ(c.node_loads.size(), 3u);
  // Node 0 GPU 0 held experts 0-7 and now needs 0-31; the node as a whole
  // loads all 256 experts of its instance.
  EXPECT_THAT(c.node_loads[0].what, HasSubstr("experts 0-255"));
  EXPECT_GT(c.total_bytes, 0);
  EXPECT_EQ(c.gpus_unchanged, 0);
  EXPECT_FALSE(c.rolling);
  // The experts of the removed node (224-255) are on no surviving GPU: some
  // bytes come from storage... unless a complete stage survives, which with
  // one EP32 stage it does not.
  EXPECT_GT(c.storage_bytes, 0);
}

TEST(TransitionTest, AddedNodeLoadsFromPeers) {
  const Problem old_problem = MakeProblem("llama-3.1-70b", 16);
  const Problem next = MakeProblem("llama-3.1-70b", 24);
  auto model = MakeModel(old_problem, Degrees(2, 1, 8, 1), next);
  EXPECT_THAT(model->old_node_of(), ::testing::ElementsAre(0, 1, -1));
  const TransitionCost c = model->Diff(Degrees(3, 1, 8, 1), true);
  EXPECT_EQ(c.gpus_unchanged, 16);
  ASSERT_EQ(c.node_loads.size(), 1u);
  EXPECT_EQ(c.node_loads[0].node, 2);
  EXPECT_EQ(c.storage_bytes, 0);
  EXPECT_TRUE(c.rolling);
  EXPECT_EQ(c.kv_bytes_lost, 0);
}

TEST(TransitionTest, ObjectiveLimitAndDefaultRule) {
  const Problem p = MakeProblem("llama-3.1-8b", 8);
  TransitionObjective objective;
  objective.model = MakeModel(p, Degrees(1, 1, 8, 1), p);
  absl::StatusOr<std::unique_ptr<const CostModel>> cost = CostModel::Create(p);
  ASSERT_TRUE(cost.ok());
  const PlanDims same = Degrees(1, 1, 8, 1);
  const PlanDims moved = Degrees(2, 1, 4, 1);
  Evaluation e = (*cost)->Evaluate(same);
  ASSERT_TRUE(e.feasible);
  EXPECT_EQ(ApplyTransitionObjective(objective, same, &e), 0);
  Evaluation f = (*cost)->Evaluate(moved);
  ASSERT_TRUE(f.feasible);
  const double penalty = ApplyTransitionObjective(objective, moved, &f);
  EXPECT_GT(penalty, 0);
  EXPECT_LE(penalty, -std::log1p(-kDefaultTransitionShare) + 1e-12);
  objective.max_seconds = 1e-6;
  ApplyTransitionObjective(objective, moved, &f);
  EXPECT_FALSE(f.feasible);
  EXPECT_EQ(f.reason, InfeasibleReason::kTransitionTooSlow);
  EXPECT_THAT(InfeasibleReasonText(f), HasSubstr("max_transition_seconds"));
}

TEST(TransitionTest, DefaultRuleHasOneScaleAndBreaksTiesByBytes) {
  const Problem old_problem = MakeProblem("llama-3.1-70b", 16);
  const Problem next = MakeProblem("llama-3.1-70b", 8);
  const PlanDims running = Degrees(1, 1, 8, 2);
  TransitionObjective objective;
  objective.model = MakeModel(old_problem, running, next);
  // The scale is the running plan deployed from nothing on its cluster: what
  // a diff from nothing (the same plan, the same cluster, no survivor) says.
  RunningDeployment nothing;
  nothing.problem = old_problem;
  nothing.plan = running;
  nothing.removed_nodes = {0, 1};
  auto from_nothing = TransitionModel::Create(nothing, old_problem);
  ASSERT_TRUE(from_nothing.ok()) << from_nothing.status();
  const TransitionCost full = (*from_nothing)->Diff(running);
  EXPECT_DOUBLE_EQ(objective.model->running_fresh_seconds(),
                   full.estimated_seconds);
  EXPECT_DOUBLE_EQ(objective.model->running_bytes(), full.total_bytes);
  EXPECT_DOUBLE_EQ(
      DefaultTransitionWeight(*objective.model),
      -std::log1p(-kDefaultTransitionShare) / full.estimated_seconds);
  // Linear in seconds with that one weight, whatever the plan's own deploy
  // time; at equal seconds the plan that loads fewer bytes pays less.
  TransitionCost a;
  a.estimated_seconds = 10;
  a.total_bytes = 100e9;
  TransitionCost b = a;
  b.estimated_seconds = 20;
  b.fresh_seconds = 1e6;  // plan-dependent figures do not enter the rule
  TransitionCost c = a;
  c.total_bytes = 50e9;
  const double pa = TransitionPenalty(objective, a);
  EXPECT_NEAR(TransitionPenalty(objective, b) - pa,
              10 * DefaultTransitionWeight(*objective.model), 1e-12);
  EXPECT_LT(TransitionPenalty(objective, c), pa);
  EXPECT_LT(pa - TransitionPenalty(objective, c),
            1e-2 * DefaultTransitionWeight(*objective.model));
}

TEST(TransitionTest, AdaptRunningPlanFitsTheNewGpus) {
  const std::vector<PlanDims> a = AdaptRunningPlan(Degrees(4, 1, 8, 1), 24);
  ASSERT_GE(a.size(), 2u);
  EXPECT_EQ(a[1].replicas, 3);
  const std::vector<PlanDims> b = AdaptRunningPlan(Degrees(1, 1, 8, 4), 24);
  bool has_pp3 = false;
  for (const PlanDims& p : b) has_pp3 |= p.pp == 3 && p.replicas == 1;
  EXPECT_TRUE(has_pp3);
}

}  // namespace
}  // namespace shardplan::simulator
