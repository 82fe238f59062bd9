// Placement (simulator/placement.h) and what it means for the cost model:
// replicas, node-aware expert domains, partial nodes, measured expert
// all-to-all across nodes, FP4 on Hopper.
#include "simulator/placement.h"

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/cost_model.h"
#include "simulator/spec.h"
#include "simulator/spec_catalog.h"

namespace shardplan::simulator {
namespace {

std::unique_ptr<const CostModel> Make(
    const std::string& model, int gpus, int gpus_per_node,
    const std::string& dtype = "fp8", int concurrency = 32,
    const std::string& hardware = "h100-sxm-80gb") {
  shardplan::v1::ModelSource source;
  source.set_catalog_name(model);
  shardplan::v1::ClusterSpec cluster;
  cluster.set_hardware(hardware);
  cluster.set_num_gpus(gpus);
  cluster.set_gpus_per_node(gpus_per_node);
  shardplan::v1::Workload workload;
  workload.set_input_tokens(2048);
  workload.set_output_tokens(512);
  workload.set_concurrency(concurrency);
  workload.set_weight_dtype(dtype);
  absl::StatusOr<Problem> problem = ProblemFromProto(source, cluster, workload);
  EXPECT_TRUE(problem.ok()) << problem.status();
  if (!problem.ok()) return nullptr;
  auto m = CostModel::Create(*problem);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(*m) : nullptr;
}

PlanDims Degrees(int replicas, int dp, int tp, int pp, int ep) {
  PlanDims p;
  p.replicas = replicas;
  p.dp = dp;
  p.tp = tp;
  p.pp = pp;
  p.ep = ep;
  return p;
}

TEST(PlacementTest, BlocksThatDivideANodeStayInside) {
  const GroupShape s = ContiguousBlockShape(4, 16, 8);
  EXPECT_EQ(s.nodes, 1);
  EXPECT_EQ(s.per_node, 4);
  const GroupShape wide = ContiguousBlockShape(16, 32, 8);
  EXPECT_EQ(wide.nodes, 2);
  EXPECT_EQ(wide.per_node, 8);
}

// The closed form for blocks that tile whole nodes (the hot path's shortcut)
// against the general scan over listed nodes (ClusterDims::node_gpus), on
// every block size of clusters of 1 to 5 nodes, tiling or not.
TEST(PlacementTest, UniformNodeShapesMatchTheScanOverListedNodes) {
  for (int g : {1, 2, 4, 6, 8, 72}) {
    for (int nodes = 1; nodes <= 5; ++nodes) {
      ClusterDims listed;
      listed.num_gpus = g * nodes;
      listed.gpus_per_node = g;
      listed.node_gpus.assign(nodes, g);
      for (int size = 1; size <= listed.num_gpus; ++size) {
        const GroupShape fast = ContiguousBlockShape(size, listed.num_gpus, g);
        const GroupShape scan = ContiguousBlockShape(size, listed);
        EXPECT_EQ(fast.n, scan.n)
            << "g " << g << " nodes " << nodes << " size " << size;
        EXPECT_EQ(fast.per_node, scan.per_node)
            << "g " << g << " nodes " << nodes << " size " << size;
        EXPECT_EQ(fast.nodes, scan.nodes)
            << "g " << g << " nodes " << nodes << " size " << size;
      }
    }
  }
}

// The cost model's table of block shapes gives the computed shape of every
// size, inside the table and beyond it, on whole, partial and NVL72 domains;
// a cluster of listed node sizes gets no table (every shape computed).
TEST(PlacementTest, BlockShapeTableMatchesTheComputedShapes) {
  for (int g : {1, 4, 8}) {
    for (int gpus : {8, 12, 64, 72, 100}) {
      for (int domain : {0, 72}) {
        if (domain != 0 && g != 4) continue;
        ClusterDims c;
        c.num_gpus = gpus;
        c.gpus_per_node = g;
        c.nvlink_domain_gpus = domain;
        const BlockShapeTable table(c, gpus / 2);
        for (int size = 1; size <= gpus; ++size) {
          const GroupShape want = ContiguousBlockShape(size, c);
          const GroupShape got = table.Shape(size, c);
          EXPECT_TRUE(got.n == want.n && got.per_node == want.per_node &&
                      got.nodes == want.nodes)
              << "g " << g << " gpus " << gpus << " domain " << domain
              << " size " << size;
        }
      }
    }
  }
  ClusterDims listed;
  listed.num_gpus = 12;
  listed.gpus_per_node = 4;
  listed.node_gpus = {8, 4};
  const BlockShapeTable none(listed, 12);
  for (int size = 1; size <= 12; ++size) {
    EXPECT_EQ(none.Shape(size, listed).per_node,
              ContiguousBlockShape(size, listed).per_node)
        << size;
  }
}

TEST(PlacementTest, PartialLastNodeAndStraddlingBlocks) {
  // 12 GPUs on 8-GPU nodes: node 0 has 8, node 1 has 4.
  EXPECT_EQ(ContiguousBlockShape(4, 12, 8).nodes, 1);
  const GroupShape six = ContiguousBlockShape(6, 12, 8);  // [6, 12) straddles
  EXPECT_EQ(six.nodes, 2);
  EXPECT_EQ(six.per_node, 2);
  const GroupShape all = ContiguousBlockShape(12, 12, 8);
  EXPECT_EQ(all.nodes, 2);
  EXPECT_EQ(all.per_node, 4);
}

TEST(PlacementTest, ReplicasKeepExpertDomainsInsideNodes) {
  ClusterDims cluster;
  cluster.num_gpus = 16;
  cluster.gpus_per_node = 8;
  // Two instances of DP-attention 8 + EP 8: each domain is one node.
  const PlanPlacement two = PlacePlan(Degrees(2, 8, 1, 1, 8), cluster, true);
  EXPECT_EQ(two.replicas, 2);
  EXPECT_FALSE(two.domain.spans_nodes());
  // One instance of dp 16: its domain spans both nodes.
  const PlanPlacement one = PlacePlan(Degrees(1, 16, 1, 1, 16), cluster, true);
  EXPECT_TRUE(one.domain.spans_nodes());
  // Stages fill whole nodes: the stage boundary is the node boundary, each
  // stage's domain inside its node.
  const PlanPlacement staged = PlacePlan(Degrees(1, 8, 1, 2, 8), cluster, true);
  EXPECT_FALSE(staged.domain.spans_nodes());
  EXPECT_TRUE(staged.p2p_inter_node);
  // Dense dp ranks are independent copies.
  const PlanPlacement dense = PlacePlan(Degrees(1, 4, 4, 1, 1), cluster, false);
  EXPECT_EQ(dense.replicas, 4);
  EXPECT_EQ(dense.dp, 1);
}

TEST(PlacementTest, ReplicasScaleThroughputExactly) {
  auto eight = Make("qwen3-235b-a22b", 8, 8);
  auto sixteen = Make("qwen3-235b-a22b", 16, 8);
  ASSERT_NE(eight, nullptr);
  ASSERT_NE(sixteen, nullptr);
  const PlanDims one = Degrees(1, 8, 1, 1, 8);
  const PlanDims two = Degrees(2, 8, 1, 1, 8);
  ASSERT_TRUE(eight->ValidatePlan(one).ok());
  ASSERT_TRUE(sixteen->ValidatePlan(two).ok());
  const Evaluation a = eight->Evaluate(one);
  const Evaluation b = sixteen->Evaluate(two);
  ASSERT_TRUE(a.feasible);
  EXPECT_NEAR(b.output_tokens_per_s, 2 * a.output_tokens_per_s,
              1e-9 * b.output_tokens_per_s);
  EXPECT_DOUBLE_EQ(b.tpot_seconds, a.tpot_seconds);
  EXPECT_EQ(b.ib_decode_bytes, 0);
}

TEST(PlacementTest, ExpertDomainAcrossNodesPaysMeasuredAllToAll) {
  auto model = Make("qwen3-235b-a22b", 16, 8);
  ASSERT_NE(model, nullptr);
  // 32 requests on each attention rank of either layout.
  PlanDims two_of_eight = Degrees(2, 8, 1, 1, 8);
  two_of_eight.batch_size = 32 * 8;
  PlanDims one_of_sixteen = Degrees(1, 16, 1, 1, 16);
  one_of_sixteen.batch_size = 32 * 16;
  const Evaluation replicated = model->Evaluate(two_of_eight);
  const Evaluation spread = model->Evaluate(one_of_sixteen);
  ASSERT_TRUE(replicated.feasible);
  EXPECT_GT(spread.ib_decode_bytes, 0);
  const auto expert_comm = [](const Evaluation& e) {
    return e.decode[static_cast<int>(OpKind::kExpertUp)].comm_seconds +
           e.decode[static_cast<int>(OpKind::kExpertDown)].comm_seconds;
  };
  // Per layer and direction at least DeepEP's low-latency floor of one
  // inter-node latency (10 us on H100, the catalog's figure): 94 layers,
  // dispatch and combine.
  EXPECT_GT(expert_comm(spread), 94 * 2 * 10e-6);
  EXPECT_GT(expert_comm(spread), 3 * expert_comm(replicated));
  EXPECT_GT(replicated.output_tokens_per_s, spread.output_tokens_per_s);
}

TEST(PlacementTest, PartialNodeClustersArePlanned) {
  auto twelve = Make("qwen3-32b", 12, 8, "bf16", 16);
  ASSERT_NE(twelve, nullptr);
  EXPECT_EQ(twelve->problem().cluster.num_nodes(), 2);
  // Three 4-GPU copies: each inside a node, so no InfiniBand traffic.
  const PlanDims three = Degrees(1, 3, 4, 1, 1);
  ASSERT_TRUE(twelve->ValidatePlan(three).ok());
  const Evaluation e = twelve->Evaluate(three);
  EXPECT_TRUE(e.feasible);
  EXPECT_EQ(e.ib_decode_bytes, 0);
  // Two 6-GPU copies would straddle the node edge: tp 6 is not offered by
  // qwen3-32b's heads, but a tp-4 x pp-3 instance of 12 GPUs crosses nodes.
  const Evaluation spanning = twelve->Evaluate(Degrees(1, 1, 4, 3, 1));
  EXPECT_GT(spanning.ib_decode_bytes, 0);
  auto part = Make("llama-3.1-8b", 4, 8, "bf16", 16);
  ASSERT_NE(part, nullptr);
  EXPECT_EQ(part->problem().cluster.num_nodes(), 1);
}

// A cluster of one 8-GPU node then two 4-GPU nodes (16 GPUs).
shardplan::v1::ClusterSpec MixedNodes() {
  shardplan::v1::ClusterSpec cluster;
  cluster.set_hardware("h100-sxm-80gb");
  cluster.set_num_gpus(16);
  cluster.set_gpus_per_node(8);
  auto* big = cluster.add_node_groups();
  big->set_name("dgx");
  big->set_num_nodes(1);
  big->set_gpus_per_node(8);
  auto* small = cluster.add_node_groups();
  small->set_name("half");
  small->set_num_nodes(2);
  small->set_gpus_per_node(4);
  return cluster;
}

TEST(PlacementTest, NodesOfDifferentSizesBoundGroups) {
  ClusterDims c;
  c.num_gpus = 16;
  c.gpus_per_node = 4;
  c.node_gpus = {8, 4, 4};
  EXPECT_EQ(c.num_nodes(), 3);
  // tp 8: ranks 0-7 fill the big node, 8-15 span the two small ones.
  const GroupShape eight = ContiguousBlockShape(8, c);
  EXPECT_EQ(eight.nodes, 2);
  EXPECT_EQ(eight.per_node, 4);
  // tp 4 fits every node.
  EXPECT_EQ(ContiguousBlockShape(4, c).nodes, 1);
  EXPECT_EQ(NodeOfRank(c, 7), 0);
  EXPECT_EQ(NodeOfRank(c, 8), 1);
  EXPECT_EQ(NodeOfRank(c, 15), 2);
  // Uniform 8-GPU nodes would keep both tp-8 groups inside a node.
  EXPECT_EQ(ContiguousBlockShape(8, 16, 8).nodes, 1);
}

TEST(PlacementTest, NodeGroupsOfDifferentSizesArePlanned) {
  shardplan::v1::ModelSource source;
  source.set_catalog_name("llama-3.1-70b");
  shardplan::v1::Workload workload;
  workload.set_input_tokens(2048);
  workload.set_output_tokens(512);
  workload.set_concurrency(16);
  absl::StatusOr<Problem> problem =
      ProblemFromProto(source, MixedNodes(), workload);
  ASSERT_TRUE(problem.ok()) << problem.status();
  EXPECT_EQ(problem->cluster.num_nodes(), 3);
  EXPECT_EQ(problem->cluster.node_gpus, (std::vector<int>{8, 4, 4}));
  auto m = CostModel::Create(*problem);
  ASSERT_TRUE(m.ok()) << m.status();
  // Four tp-4 copies: each inside a node (two on the big one).
  const Evaluation inside = (*m)->Evaluate(Degrees(4, 1, 4, 1, 1));
  EXPECT_TRUE(inside.feasible);
  EXPECT_EQ(inside.ib_decode_bytes, 0);
  // Two tp-8 copies: the second spans the two 4-GPU nodes over InfiniBand.
  const Evaluation eight = (*m)->Evaluate(Degrees(2, 1, 8, 1, 1));
  EXPECT_GT(eight.ib_decode_bytes, 0);
  // The placement listing names the nodes of each copy by their sizes.
  PlanDims plan = Degrees(2, 1, 8, 1, 1);
  plan.dims = MegatronShardDims();
  const shardplan::v1::Plan listed = PlanToProto(plan, *problem);
  ASSERT_EQ(listed.placement_size(), 2);
  EXPECT_THAT(listed.placement(0).nodes(), ::testing::ElementsAre(0));
  EXPECT_THAT(listed.placement(1).nodes(), ::testing::ElementsAre(1, 2));
  EXPECT_EQ(listed.placement(1).node_group(), "half");
}

TEST(PlacementTest, NodeGroupSizesAreValidatedWithFieldPaths) {
  shardplan::v1::ModelSource source;
  source.set_catalog_name("llama-3.1-8b");
  shardplan::v1::Workload workload;
  workload.set_input_tokens(128);
  workload.set_output_tokens(128);
  shardplan::v1::ClusterSpec wrong_total = MixedNodes();
  wrong_total.set_num_gpus(24);
  absl::StatusOr<Problem> p = ProblemFromProto(source, wrong_total, workload);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(),
              ::testing::HasSubstr("cluster.node_groups: GPUs add up to 16"));
  shardplan::v1::ClusterSpec negative = MixedNodes();
  negative.mutable_node_groups(1)->set_gpus_per_node(-4);
  p = ProblemFromProto(source, negative, workload);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(),
              ::testing::HasSubstr("cluster.node_groups[1].gpus_per_node"));
}

TEST(PlacementTest, Fp4OnHopperIsDequantisedNotAPureFourBitRead) {
  auto fp4 = Make("gpt-oss-120b", 4, 8, "fp4", 16);
  auto fp8 = Make("gpt-oss-120b", 4, 8, "fp8", 16);
  ASSERT_NE(fp4, nullptr);
  ASSERT_NE(fp8, nullptr);
  const PlanDims plan = Degrees(1, 1, 4, 1, 1);
  const Evaluation a = fp4->Evaluate(plan);
  const Evaluation b = fp8->Evaluate(plan);
  const int up = static_cast<int>(OpKind::kExpertUp);
  // A pure 4-bit read would take half the FP8 read; the dequantising kernels
  // take ~1.45x that (fitted on the gpt-oss-120b vLLM rows).
  EXPECT_GT(a.decode[up].memory_seconds,
            1.3 * 0.5 * b.decode[up].memory_seconds);
  // Their math runs at the bf16 rate (W4A16), slower than FP8 math.
  EXPECT_GT(a.decode[up].compute_seconds, 1.5 * b.decode[up].compute_seconds);
  // Memory still holds 4-bit weights.
  EXPECT_LT(a.weights_bytes, 0.6 * b.weights_bytes);
}

// Kimi-K2.5's 4-bit weights are launched as the release's INT4 checkpoint on
// Hopper (compressed-tensors W4A16: vLLM's and SGLang's Marlin kernels) and as
// NVIDIA's NVFP4 checkpoint on Blackwell (client/emit/script.cc): the prices
// must be those kernels'.
TEST(PlacementTest, KimiIsPricedAsTheCheckpointEachGpuLaunches) {
  // 32 GPUs and 8 requests: 4-bit and FP8 weights run the same batch.
  const PlanDims plan = Degrees(1, 1, 32, 1, 32);
  const int up = static_cast<int>(OpKind::kExpertUp);
  const absl::StatusOr<shardplan::v1::HardwareSpec> h100 =
      FindCatalogHardware("h100-sxm-80gb");
  ASSERT_TRUE(h100.ok()) << h100.status();
  auto int4 = Make("kimi-k2.5", 32, 8, "", 8);
  auto fp8 = Make("kimi-k2.5", 32, 8, "fp8", 8);
  ASSERT_NE(int4, nullptr);
  ASSERT_NE(fp8, nullptr);
  const Evaluation w4a16 = int4->Evaluate(plan);
  const Evaluation w8 = fp8->Evaluate(plan);
  ASSERT_EQ(w4a16.running_batch, w8.running_batch);
  // W4A16: the experts' math at the BF16 peak, where FP8 weights take the FP8
  // peak.
  const double peaks =
      h100->peak_fp8_flops_per_s() / h100->peak_bf16_flops_per_s();
  EXPECT_NEAR(w4a16.decode[up].compute_seconds / w8.decode[up].compute_seconds,
              peaks, 1e-6);
  EXPECT_NEAR(
      w4a16.prefill[up].compute_seconds / w8.prefill[up].compute_seconds, peaks,
      1e-6);
  // 4-bit weights in memory; the dequantising kernels read more than half
  // the FP8 bytes (group scales and unpacking), less than the FP8 read.
  EXPECT_LT(w4a16.weights_bytes, 0.6 * w8.weights_bytes);
  EXPECT_GT(w4a16.decode[up].memory_seconds,
            0.5 * w8.decode[up].memory_seconds);
  EXPECT_LT(w4a16.decode[up].memory_seconds, w8.decode[up].memory_seconds);
  // On B200 the NVFP4 checkpoint's experts multiply at the FP4 peak, twice
  // the FP8 one.
  auto nvfp4 = Make("kimi-k2.5", 32, 8, "", 8, "b200-sxm-180gb");
  auto b200_fp8 = Make("kimi-k2.5", 32, 8, "fp8", 8, "b200-sxm-180gb");
  ASSERT_NE(nvfp4, nullptr);
  ASSERT_NE(b200_fp8, nullptr);
  EXPECT_LT(nvfp4->Evaluate(plan).prefill[up].compute_seconds,
            0.6 * b200_fp8->Evaluate(plan).prefill[up].compute_seconds);
}

}  // namespace
}  // namespace shardplan::simulator

namespace shardplan::simulator {
namespace {

// A cluster of `groups` (name, nodes, GPUs per node) in the order listed.
shardplan::v1::ClusterSpec Groups(
    int gpus_per_node,
    const std::vector<std::tuple<std::string, int, int>>& groups) {
  shardplan::v1::ClusterSpec cluster;
  cluster.set_hardware("h100-sxm-80gb");
  cluster.set_gpus_per_node(gpus_per_node);
  int gpus = 0;
  for (const auto& [name, nodes, size] : groups) {
    auto* g = cluster.add_node_groups();
    g->set_name(name);
    g->set_num_nodes(nodes);
    g->set_gpus_per_node(size);
    gpus += nodes * size;
  }
  cluster.set_num_gpus(gpus);
  return cluster;
}

std::unique_ptr<const CostModel> ModelOn(const std::string& name,
                                         const shardplan::v1::ClusterSpec& c,
                                         const std::string& dtype = "bf16") {
  shardplan::v1::ModelSource source;
  source.set_catalog_name(name);
  shardplan::v1::Workload workload;
  workload.set_input_tokens(2048);
  workload.set_output_tokens(512);
  workload.set_concurrency(16);
  workload.set_weight_dtype(dtype);
  absl::StatusOr<Problem> problem = ProblemFromProto(source, c, workload);
  EXPECT_TRUE(problem.ok()) << problem.status();
  if (!problem.ok()) return nullptr;
  auto m = CostModel::Create(*problem);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(*m) : nullptr;
}

shardplan::v1::ClusterSpec Uniform(int gpus, int gpus_per_node) {
  shardplan::v1::ClusterSpec cluster;
  cluster.set_hardware("h100-sxm-80gb");
  cluster.set_num_gpus(gpus);
  cluster.set_gpus_per_node(gpus_per_node);
  return cluster;
}

TEST(PlacementTest, BigNodesFirstAndEachReplicaCostedOnItsOwnNodes) {
  // Listed small, big, big, small: placed big first, so two of three tp-8
  // copies of Llama-3.1-70B stay inside an 8-GPU node.
  const auto listed =
      Groups(8, {{"small-a", 1, 4}, {"big", 2, 8}, {"small-b", 1, 4}});
  auto mixed = ModelOn("llama-3.1-70b", listed);
  ASSERT_NE(mixed, nullptr);
  const ClusterDims& c = mixed->problem().cluster;
  EXPECT_EQ(c.node_gpus, (std::vector<int>{8, 8, 4, 4}));
  EXPECT_EQ(c.node_groups[0].name, "big");
  PlanDims plan = Degrees(1, 3, 8, 1, 1);
  plan.dims = MegatronShardDims();
  ASSERT_TRUE(mixed->ValidatePlan(plan).ok());
  const std::vector<ReplicaClass> classes = ReplicaClasses(plan, c, false);
  ASSERT_EQ(classes.size(), 2u);
  // Worst first: the copy over the two 4-GPU nodes.
  EXPECT_EQ(classes[0].count, 1);
  EXPECT_EQ(classes[0].placement.tp.nodes, 2);
  EXPECT_EQ(classes[0].placement.tp.per_node, 4);
  // The other two keep their tp group inside one node.
  EXPECT_EQ(classes[1].count, 2);
  EXPECT_EQ(classes[1].placement.tp.nodes, 1);
  const shardplan::v1::Plan listed_plan = PlanToProto(plan, mixed->problem());
  ASSERT_EQ(listed_plan.placement_size(), 3);
  EXPECT_THAT(listed_plan.placement(0).nodes(), ::testing::ElementsAre(0));
  EXPECT_THAT(listed_plan.placement(1).nodes(), ::testing::ElementsAre(1));
  EXPECT_THAT(listed_plan.placement(2).nodes(), ::testing::ElementsAre(2, 3));
  EXPECT_EQ(listed_plan.placement(2).node_group(), "small-a+small-b");
  EXPECT_FALSE(listed_plan.placement(0).tp_spans_nodes());
  EXPECT_TRUE(listed_plan.placement(2).tp_spans_nodes());

  // The smallest-node model (24 GPUs on 4-GPU nodes) splits every copy over
  // InfiniBand; 8-GPU nodes split none. The real cluster is priced copy by
  // copy: two at the 8-GPU price, one at the 4-GPU price (same batch, fixed
  // concurrency), and its latency is the slow copy's.
  auto smallest = ModelOn("llama-3.1-70b", Uniform(24, 4));
  auto big = ModelOn("llama-3.1-70b", Uniform(24, 8));
  const Evaluation m = mixed->Evaluate(plan);
  const Evaluation s = smallest->Evaluate(plan);
  const Evaluation b = big->Evaluate(plan);
  ASSERT_TRUE(m.feasible && s.feasible && b.feasible);
  ASSERT_EQ(m.batch_size, s.batch_size);
  ASSERT_EQ(m.batch_size, b.batch_size);
  EXPECT_GT(m.output_tokens_per_s, 1.1 * s.output_tokens_per_s);
  EXPECT_LT(m.output_tokens_per_s, b.output_tokens_per_s);
  EXPECT_NEAR(m.output_tokens_per_s,
              (2 * b.output_tokens_per_s + s.output_tokens_per_s) / 3,
              1e-9 * m.output_tokens_per_s);
  EXPECT_DOUBLE_EQ(m.tpot_seconds, s.tpot_seconds);
}

TEST(PlacementTest, StageBoundariesInsideABigNodeRideNvlink) {
  // 8 + 8 + 4 GPUs, Llama-3.1-405B FP8 as tp 4 x pp 5: stages 0-1 share the
  // first node, 2-3 the second, 4 is the 4-GPU node. Two of the four stage
  // boundaries stay on NVLink; on 4-GPU nodes (the smallest-node model) all
  // four would cross InfiniBand.
  const auto groups = Groups(8, {{"big", 2, 8}, {"small", 1, 4}});
  auto mixed = ModelOn("llama-3.1-405b", groups, "fp8");
  auto smallest = ModelOn("llama-3.1-405b", Uniform(20, 4), "fp8");
  ASSERT_NE(mixed, nullptr);
  ASSERT_NE(smallest, nullptr);
  PlanDims plan = Degrees(1, 1, 4, 5, 1);
  plan.dims = MegatronShardDims();
  ASSERT_TRUE(mixed->ValidatePlan(plan).ok());
  const PlanPlacement real = PlacePlan(plan, mixed->problem().cluster, false);
  EXPECT_FALSE(real.tp.spans_nodes());
  EXPECT_TRUE(real.p2p_inter_node);
  EXPECT_EQ(real.p2p_inter_node_boundaries, 2);
  EXPECT_EQ(PlacePlan(plan, smallest->problem().cluster, false)
                .p2p_inter_node_boundaries,
            4);
  const Evaluation m = mixed->Evaluate(plan);
  const Evaluation s = smallest->Evaluate(plan);
  ASSERT_TRUE(m.feasible && s.feasible);
  EXPECT_LT(m.prefill_seconds, s.prefill_seconds);
  EXPECT_GE(m.output_tokens_per_s, s.output_tokens_per_s);
}

// NVL72 racks (GB200/GB300): nodes of 4 GPUs, one 72-GPU NVLink domain.
std::unique_ptr<const CostModel> Nvl72(const std::string& model, int gpus,
                                       int nvlink_domain_gpus,
                                       const std::string& dtype = "fp8") {
  shardplan::v1::ModelSource source;
  source.set_catalog_name(model);
  shardplan::v1::ClusterSpec cluster;
  cluster.set_hardware("gb200-nvl72");
  cluster.set_num_gpus(gpus);
  cluster.set_nvlink_domain_gpus(nvlink_domain_gpus);
  shardplan::v1::Workload workload;
  workload.set_input_tokens(2048);
  workload.set_output_tokens(512);
  workload.set_concurrency(64);
  workload.set_weight_dtype(dtype);
  absl::StatusOr<Problem> problem = ProblemFromProto(source, cluster, workload);
  EXPECT_TRUE(problem.ok()) << problem.status();
  if (!problem.ok()) return nullptr;
  auto m = CostModel::Create(*problem);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(*m) : nullptr;
}

TEST(PlacementTest, Nvl72GroupsSpanningTraysRideNvlink) {
  auto rack = Nvl72("llama-3.1-70b", 144, 0);
  ASSERT_NE(rack, nullptr);
  const ClusterDims& c = rack->problem().cluster;
  EXPECT_EQ(c.gpus_per_node, 4);
  EXPECT_EQ(c.nvlink_domain_gpus, 72);
  EXPECT_EQ(c.num_nodes(), 36);
  // tp 8 spans two 4-GPU trays but one NVLink domain.
  PlanDims plan = Degrees(1, 18, 8, 1, 1);
  const PlanPlacement p = PlacePlan(plan, c, false);
  EXPECT_FALSE(p.tp.spans_nodes());
  EXPECT_NE(NodeOfRank(c, 0), NodeOfRank(c, 7));
  // A tp 4 x pp 2 replica: each stage is one tray, the stage boundary
  // crosses trays but stays on NVLink; a block of 96 GPUs from rank 0 spans
  // both racks.
  EXPECT_FALSE(PlacePlan(Degrees(18, 1, 4, 2, 1), c, false).p2p_inter_node);
  EXPECT_EQ(PlacePlan(Degrees(18, 1, 4, 2, 1), c, false).replica.per_node, 8);
  EXPECT_EQ(ContiguousBlockShape(96, c).nodes, 2);
  EXPECT_EQ(ContiguousBlockShape(72, c).nodes, 1);
  const Evaluation e = rack->Evaluate(plan);
  ASSERT_TRUE(e.feasible) << InfeasibleReasonText(e);
  EXPECT_EQ(e.ib_decode_bytes, 0);
  EXPECT_GT(e.nvlink_decode_bytes, 0);
}

TEST(PlacementTest, Nvl72WideExpertParallelismNeedsNoInfiniBand) {
  // DeepSeek-V3 with an expert domain of 72 GPUs (DP attention + EP 72, two
  // instances on two racks): all-to-all on NVLink. The same plan with the
  // NVLink domain cut to one tray pays InfiniBand for every dispatch.
  auto rack = Nvl72("deepseek-v3", 144, 0);
  auto trays = Nvl72("deepseek-v3", 144, 4);
  ASSERT_NE(rack, nullptr);
  ASSERT_NE(trays, nullptr);
  PlanDims wide = Degrees(2, 72, 1, 1, 72);
  wide.batch_size = 64 * 72;  // 64 requests on each attention rank
  ASSERT_TRUE(rack->ValidatePlan(wide).ok());
  const Evaluation on_nvlink = rack->Evaluate(wide);
  const Evaluation on_ib = trays->Evaluate(wide);
  ASSERT_TRUE(on_nvlink.feasible) << InfeasibleReasonText(on_nvlink);
  EXPECT_EQ(on_nvlink.ep_nodes, 1);
  EXPECT_EQ(on_nvlink.ib_decode_bytes, 0);
  EXPECT_GT(on_ib.ib_decode_bytes, 0);
  EXPECT_EQ(on_ib.ep_nodes, 18);
  EXPECT_GT(on_nvlink.output_tokens_per_s, on_ib.output_tokens_per_s);
}

// The placement the API lists says which groups leave NVLink: a group over
// several trays of one rack does not (tp_spans_nodes and
// expert_domain_spans_nodes read "rides InfiniBand"), one over two racks, or
// over trays cut into NVLink domains of their own, does.
TEST(PlacementTest, Nvl72ListedPlacementSaysWhatRidesInfiniBand) {
  auto rack = Nvl72("deepseek-v3", 144, 0);
  auto trays = Nvl72("deepseek-v3", 144, 4);
  ASSERT_NE(rack, nullptr);
  ASSERT_NE(trays, nullptr);
  const ClusterDims& c = rack->problem().cluster;
  EXPECT_EQ(LinkDomainOfRank(c, 71), 0);
  EXPECT_EQ(LinkDomainOfRank(c, 72), 1);
  EXPECT_EQ(LinkDomainOfRank(trays->problem().cluster, 72), 18);
  // Two instances of tp 72 (experts over 72): one per rack.
  PlanDims wide = Degrees(2, 1, 72, 1, 72);
  const shardplan::v1::Plan on_racks = PlanToProto(wide, rack->problem());
  ASSERT_EQ(on_racks.placement_size(), 2);
  for (const auto& s : on_racks.placement()) {
    EXPECT_EQ(s.nodes_size(), 18);
    EXPECT_FALSE(s.tp_spans_nodes());
    EXPECT_FALSE(s.expert_domain_spans_nodes());
  }
  const shardplan::v1::Plan on_trays = PlanToProto(wide, trays->problem());
  EXPECT_TRUE(on_trays.placement(0).tp_spans_nodes());
  EXPECT_TRUE(on_trays.placement(0).expert_domain_spans_nodes());
  // One instance of tp 144 spans both racks.
  const shardplan::v1::Plan both =
      PlanToProto(Degrees(1, 1, 144, 1, 144), rack->problem());
  EXPECT_TRUE(both.placement(0).tp_spans_nodes());
  EXPECT_TRUE(both.placement(0).expert_domain_spans_nodes());
}

TEST(PlacementTest, NvlinkDomainIsValidatedWithFieldPaths) {
  shardplan::v1::ClusterSpec cluster;
  cluster.set_hardware("gb200-nvl72");
  cluster.set_num_gpus(72);
  cluster.set_nvlink_domain_gpus(6);
  absl::StatusOr<ClusterDims> bad = ClusterDimsFromProto(cluster);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(),
              ::testing::HasSubstr("cluster.nvlink_domain_gpus must be a "
                                   "multiple of cluster.gpus_per_node (4), "
                                   "got 6"));
  cluster.set_nvlink_domain_gpus(-1);
  EXPECT_EQ(ClusterDimsFromProto(cluster).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Hopper nodes: the domain is the node.
  cluster.set_hardware("h100-sxm-80gb");
  cluster.set_num_gpus(16);
  cluster.set_nvlink_domain_gpus(0);
  absl::StatusOr<ClusterDims> h100 = ClusterDimsFromProto(cluster);
  ASSERT_TRUE(h100.ok());
  EXPECT_EQ(h100->nvlink_domain_gpus, 8);
}

}  // namespace
}  // namespace shardplan::simulator

namespace shardplan::simulator {
namespace {

// Every block looked at, node by node: what BlocksNodeSpan must equal.
BlockSpan SpanByWalkingEveryBlock(const ClusterDims& c, int64_t first_rank,
                                  int size, int count) {
  std::vector<int64_t> starts = {0};
  for (int n = 0; n < c.num_nodes(); ++n) {
    starts.push_back(
        c.node_gpus.empty()
            ? std::min<int64_t>(starts.back() + c.gpus_per_node, c.num_gpus)
            : starts.back() + c.node_gpus[n]);
  }
  BlockSpan span;
  for (int b = 0; b < count; ++b) {
    const int64_t lo = first_rank + int64_t{b} * size, hi = lo + size;
    std::vector<int64_t> shares;
    for (size_t n = 0; n + 1 < starts.size(); ++n) {
      const int64_t in = std::min(hi, starts[n + 1]) - std::max(lo, starts[n]);
      if (in > 0) shares.push_back(in);
    }
    if (shares.size() <= 1) continue;
    span.nodes = std::max(span.nodes, static_cast<int>(shares.size()));
    for (int64_t s : shares) span.uneven |= s != shares.front();
  }
  return span;
}

TEST(PlacementTest, BlocksNodeSpanMatchesAWalkOverEveryBlock) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 3000; ++trial) {
    ClusterDims c;
    c.gpus_per_node = 1 + static_cast<int>(rng() % 9);
    c.num_gpus = 1 + static_cast<int>(rng() % 200);
    if (trial % 3 == 0) {  // nodes of different sizes
      c.num_gpus = 0;
      const int nodes = 1 + static_cast<int>(rng() % 12);
      for (int n = 0; n < nodes; ++n) {
        c.node_gpus.push_back(1 + static_cast<int>(rng() % 8));
        c.num_gpus += c.node_gpus.back();
      }
      c.gpus_per_node =
          *std::min_element(c.node_gpus.begin(), c.node_gpus.end());
    }
    const int size = 1 + static_cast<int>(rng() % c.num_gpus);
    const int64_t first = rng() % (c.num_gpus - size + 1);
    const int count =
        1 + static_cast<int>(rng() % ((c.num_gpus - first) / size));
    const BlockSpan want = SpanByWalkingEveryBlock(c, first, size, count);
    const BlockSpan got = BlocksNodeSpan(c, first, size, count);
    ASSERT_EQ(got.nodes, want.nodes)
        << "trial " << trial << ": " << c.num_gpus << " GPUs, nodes of "
        << c.gpus_per_node << ", " << count << " blocks of " << size << " from "
        << first;
    ASSERT_EQ(got.uneven, want.uneven) << "trial " << trial;
  }
}

// A 16,376-node cluster: the span of 16,376 one-GPU instances is found
// without walking them (the capability rules ask for it per candidate plan).
TEST(PlacementTest, BlocksNodeSpanOnAHugeUniformClusterIsExact) {
  ClusterDims c;
  c.num_gpus = 16376;
  c.gpus_per_node = 1;
  const BlockSpan one = BlocksNodeSpan(c, 0, 1, 16376);
  EXPECT_EQ(one.nodes, 1);
  EXPECT_FALSE(one.uneven);
  c.gpus_per_node = 8;  // 2,047 full nodes
  const BlockSpan twelve = BlocksNodeSpan(c, 4, 12, 1364);
  EXPECT_EQ(twelve.nodes, 2);
  EXPECT_TRUE(twelve.uneven);  // 4 + 8 ranks, then 8 + 4
}

}  // namespace
}  // namespace shardplan::simulator
