// Disaggregated plans on clusters whose node groups have different GPUs per
// node: each pool instance is placed on the nodes it really occupies (the pool
// with the bigger instances first, on the bigger nodes) and priced there, and
// the KV transfer rides NVLink only for the instance pairs inside one node.
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/cost_model.h"
#include "simulator/disaggregated.h"
#include "simulator/placement.h"
#include "simulator/spec.h"

namespace shardplan::simulator {
namespace {

using ::testing::ElementsAre;

// Node groups of `sizes` (consecutive equal sizes form one group).
shardplan::v1::ClusterSpec Nodes(const std::vector<int>& sizes) {
  shardplan::v1::ClusterSpec cluster;
  cluster.set_hardware("h100-sxm-80gb");
  int gpus = 0;
  for (int g : sizes) gpus += g;
  cluster.set_num_gpus(gpus);
  cluster.set_gpus_per_node(sizes.front());
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i > 0 && sizes[i] == sizes[i - 1]) {
      auto* last = cluster.mutable_node_groups(cluster.node_groups_size() - 1);
      last->set_num_nodes(last->num_nodes() + 1);
      continue;
    }
    auto* group = cluster.add_node_groups();
    group->set_name("g" + std::to_string(i));
    group->set_num_nodes(1);
    group->set_gpus_per_node(sizes[i]);
  }
  return cluster;
}

struct Made {
  Problem problem;
  std::unique_ptr<const CostModel> model;
};

Made Make(const std::string& model_name, const shardplan::v1::ClusterSpec& c,
          const std::string& weight_dtype = "bf16") {
  shardplan::v1::ModelSource source;
  source.set_catalog_name(model_name);
  shardplan::v1::Workload workload;
  workload.set_input_tokens(4096);
  workload.set_output_tokens(1024);
  workload.set_weight_dtype(weight_dtype);
  Made out;
  absl::StatusOr<Problem> problem = ProblemFromProto(source, c, workload);
  EXPECT_TRUE(problem.ok()) << problem.status();
  if (!problem.ok()) return out;
  out.problem = *problem;
  absl::StatusOr<std::unique_ptr<const CostModel>> model =
      CostModel::Create(*problem);
  EXPECT_TRUE(model.ok()) << model.status();
  if (model.ok()) out.model = std::move(*model);
  return out;
}

// x prefill instances of tp `ptp`, y decode instances of tp `dtp`.
PlanDims Disagg(int x, int ptp, int y, int dtp, int decode_batch) {
  PlanDims p;
  p.disaggregated = true;
  p.prefill_instances = x;
  p.prefill.tp = ptp;
  p.prefill.batch_size = 1;
  p.decode_instances = y;
  p.tp = dtp;
  p.batch_size = decode_batch;
  return p;
}

// Qwen3-235B (FP8) on 8, 8, 4, 4 GPUs and on three 8-GPU nodes.
struct MixedAndUniform {
  Made mixed = Make("qwen3-235b-a22b", Nodes({8, 8, 4, 4}), "fp8");
  Made uniform = Make("qwen3-235b-a22b", Nodes({8, 8, 8}), "fp8");
  bool ok() const { return mixed.model != nullptr && uniform.model != nullptr; }
};

TEST(DisaggregatedNodesTest, PoolWithBiggerInstancesGoesFirst) {
  ClusterDims mixed;
  mixed.num_gpus = 24;
  mixed.gpus_per_node = 4;
  mixed.node_gpus = {8, 8, 4, 4};
  const PlanDims bigger_decode = Disagg(2, 4, 2, 8, 32);
  EXPECT_TRUE(DecodePoolFirst(bigger_decode, mixed));
  EXPECT_EQ(DecodePoolFirstRank(bigger_decode, mixed), 0);
  EXPECT_EQ(PrefillPoolFirstRank(bigger_decode, mixed), 16);
  // Equal instances: prefill first.
  const PlanDims tie = Disagg(1, 8, 2, 8, 32);
  EXPECT_FALSE(DecodePoolFirst(tie, mixed));
  EXPECT_EQ(PrefillPoolFirstRank(tie, mixed), 0);
  EXPECT_EQ(DecodePoolFirstRank(tie, mixed), 8);
  // Uniform whole nodes: prefill first whatever the sizes; a partial last
  // node counts as nodes of different sizes.
  ClusterDims uniform;
  uniform.num_gpus = 24;
  uniform.gpus_per_node = 8;
  EXPECT_FALSE(DecodePoolFirst(bigger_decode, uniform));
  EXPECT_EQ(DecodePoolFirstRank(bigger_decode, uniform), 8);
  ClusterDims partial;
  partial.num_gpus = 20;
  partial.gpus_per_node = 8;
  EXPECT_TRUE(DecodePoolFirst(Disagg(1, 4, 2, 8, 32), partial));
}

TEST(DisaggregatedNodesTest, WholeNodeSizesFollowTheRealNodes) {
  ClusterDims c;
  c.num_gpus = 22;
  c.gpus_per_node = 6;
  c.node_gpus = {8, 8, 6};
  EXPECT_THAT(WholeNodeSizes(c), ElementsAre(6, 8, 14, 16, 22));
  EXPECT_EQ(LargestNodeGpus(c), 8);
  ClusterDims uniform;
  uniform.num_gpus = 24;
  uniform.gpus_per_node = 8;
  EXPECT_THAT(WholeNodeSizes(uniform), ElementsAre(8, 16, 24));
  EXPECT_EQ(LargestNodeGpus(uniform), 8);
  ClusterDims partial;  // two nodes of 8 and a last one of 4
  partial.num_gpus = 20;
  partial.gpus_per_node = 8;
  EXPECT_THAT(WholeNodeSizes(partial), ElementsAre(4, 8, 12, 16, 20));
  ClusterDims large;  // 8192 nodes: one pass per node size, not per node
  large.num_gpus = 65536;
  large.gpus_per_node = 8;
  const std::vector<int> sizes = WholeNodeSizes(large);
  ASSERT_EQ(sizes.size(), 8192u);
  EXPECT_EQ(sizes.back(), 65536);
}

TEST(DisaggregatedNodesTest, PairsInsideOneNode) {
  ClusterDims two;
  two.num_gpus = 16;
  two.gpus_per_node = 8;
  // P [0,4) and the first D [4,8) share node 0; two D on node 1: 1 of 3.
  EXPECT_DOUBLE_EQ(PoolPairsInsideOneNode(Disagg(1, 4, 3, 4, 1), two), 1.0 / 3);
  // Each pool fills a node: no pair shares one.
  EXPECT_DOUBLE_EQ(PoolPairsInsideOneNode(Disagg(2, 4, 2, 4, 1), two), 0);
  ClusterDims one;
  one.num_gpus = 8;
  one.gpus_per_node = 8;
  EXPECT_DOUBLE_EQ(PoolPairsInsideOneNode(Disagg(1, 4, 2, 2, 1), one), 1);
  // 8, 4, 4: decode (tp 8) on the big node, the two prefill instances on
  // the small ones.
  ClusterDims mixed;
  mixed.num_gpus = 16;
  mixed.gpus_per_node = 4;
  mixed.node_gpus = {8, 4, 4};
  EXPECT_DOUBLE_EQ(PoolPairsInsideOneNode(Disagg(2, 4, 1, 8, 1), mixed), 0);
}

// Qwen3-235B (FP8) on 8, 8, 4, 4 GPUs: two tp-8 decode instances take the
// 8-GPU nodes and two tp-4 prefill instances the 4-GPU ones, so every instance
// is inside a node, priced as on uniform 8-GPU nodes; with the smallest node
// for every node, each tp-8 decode instance would span two 4-GPU nodes.
TEST(DisaggregatedNodesTest, InstanceFittingABigNodeIsPricedOnNvlink) {
  const MixedAndUniform models;
  ASSERT_TRUE(models.ok());
  const Made& mixed = models.mixed;
  const Made& uniform = models.uniform;
  const PlanDims plan = Disagg(2, 4, 2, 8, 32);
  ASSERT_TRUE(mixed.model->ValidatePlan(plan).ok())
      << mixed.model->ValidatePlan(plan);
  const Evaluation m = mixed.model->Evaluate(plan);
  const Evaluation u = uniform.model->Evaluate(plan);
  ASSERT_TRUE(m.feasible) << InfeasibleReasonText(m);
  EXPECT_EQ(m.tp_nodes, 1);
  EXPECT_EQ(m.ib_decode_bytes, 0);
  EXPECT_DOUBLE_EQ(m.tpot_seconds, u.tpot_seconds);
  EXPECT_DOUBLE_EQ(m.decode_requests_per_s, u.decode_requests_per_s);
  EXPECT_DOUBLE_EQ(m.prefill_requests_per_s, u.prefill_requests_per_s);
  EXPECT_DOUBLE_EQ(m.ttft_seconds, u.ttft_seconds);
  // Memory per pool: each pool's own instance.
  EXPECT_DOUBLE_EQ(m.prefill_weights_bytes, u.prefill_weights_bytes);
  EXPECT_DOUBLE_EQ(m.weights_bytes, u.weights_bytes);
  EXPECT_GT(m.prefill_weights_bytes, m.weights_bytes);  // tp 4 vs tp 8
  // The pools share no node: every KV transfer crosses nodes.
  EXPECT_TRUE(m.kv_transfer_inter_node);
  EXPECT_EQ(m.kv_transfer_nvlink_share, 0);
  // The listing names the nodes each instance runs on.
  const shardplan::v1::Plan listed = PlanToProto(plan, mixed.problem);
  ASSERT_EQ(listed.decode().placement_size(), 2);
  EXPECT_THAT(listed.decode().placement(0).nodes(), ElementsAre(0));
  EXPECT_THAT(listed.decode().placement(1).nodes(), ElementsAre(1));
  ASSERT_EQ(listed.prefill().placement_size(), 2);
  EXPECT_THAT(listed.prefill().placement(0).nodes(), ElementsAre(2));
  EXPECT_THAT(listed.prefill().placement(1).nodes(), ElementsAre(3));
  EXPECT_FALSE(listed.decode().placement(1).tp_spans_nodes());
  // And which GPUs of them: all 8 of node 1, all 4 of node 3.
  EXPECT_THAT(listed.decode().placement(1).node_gpus(), ElementsAre(8));
  EXPECT_EQ(listed.decode().placement(1).first_gpu(), 0);
  EXPECT_THAT(listed.prefill().placement(1).node_gpus(), ElementsAre(4));
}

// One tp-8 prefill and two tp-8 decode instances on 8, 8, 4, 4: prefill on
// node 0 (a tie keeps prefill first), one decode instance on node 1 and one
// over the two 4-GPU nodes. The decode pool's rate adds the two instances'
// own rates; TPOT is the slower one's.
TEST(DisaggregatedNodesTest, InstancesPlacedDifferentlyAreCostedApart) {
  const MixedAndUniform models;
  ASSERT_TRUE(models.ok());
  const Made& mixed = models.mixed;
  const Made& uniform = models.uniform;
  const PlanDims plan = Disagg(1, 8, 2, 8, 32);
  const Evaluation m = mixed.model->Evaluate(plan);
  const Evaluation u = uniform.model->Evaluate(plan);
  ASSERT_TRUE(m.feasible) << InfeasibleReasonText(m);
  ASSERT_TRUE(u.feasible) << InfeasibleReasonText(u);
  EXPECT_GT(m.tpot_seconds, u.tpot_seconds);  // tp 8 over InfiniBand
  EXPECT_GT(m.ib_decode_bytes, 0);
  EXPECT_EQ(m.tp_nodes, 2);
  // Fast instance u/2, slow one u/2 * t_fast / t_slow (same batch).
  const double expected =
      0.5 * u.decode_requests_per_s * (1 + u.tpot_seconds / m.tpot_seconds);
  EXPECT_NEAR(m.decode_requests_per_s, expected, 1e-9 * expected);
  // The prefill instance has a whole 8-GPU node, as on uniform nodes.
  EXPECT_DOUBLE_EQ(m.prefill_requests_per_s, u.prefill_requests_per_s);
  EXPECT_DOUBLE_EQ(m.prefill_seconds, u.prefill_seconds);
}

// One tp-4 prefill and three tp-4 decode instances of Llama-3.1-8B on 8, 4, 4
// GPUs: the prefill instance shares node 0 with one decode instance, so a
// third of the requests move their KV cache over NVLink, two thirds over
// InfiniBand. One 16-GPU node (all NVLink) and four 4-GPU nodes (all
// InfiniBand) bound it; the prefill itself is the same on all three.
TEST(DisaggregatedNodesTest, KvTransferOverTheLinkEachPairShares) {
  const Made mixed = Make("llama-3.1-8b", Nodes({8, 4, 4}));
  const Made one_node = Make("llama-3.1-8b", Nodes({16}));
  const Made small_nodes = Make("llama-3.1-8b", Nodes({4, 4, 4, 4}));
  ASSERT_NE(mixed.model, nullptr);
  ASSERT_NE(one_node.model, nullptr);
  ASSERT_NE(small_nodes.model, nullptr);
  PlanDims plan = Disagg(1, 4, 3, 4, 16);
  plan.prefill.batch_size = 8;  // a long transfer, not hidden by one layer
  const Evaluation m = mixed.model->Evaluate(plan);
  const Evaluation nv = one_node.model->Evaluate(plan);
  const Evaluation ib = small_nodes.model->Evaluate(plan);
  ASSERT_TRUE(m.feasible) << InfeasibleReasonText(m);
  EXPECT_DOUBLE_EQ(m.prefill_seconds, nv.prefill_seconds);
  EXPECT_DOUBLE_EQ(m.prefill_seconds, ib.prefill_seconds);
  EXPECT_FALSE(nv.kv_transfer_inter_node);
  EXPECT_TRUE(ib.kv_transfer_inter_node);
  EXPECT_TRUE(m.kv_transfer_inter_node);
  EXPECT_DOUBLE_EQ(m.kv_transfer_nvlink_share, 1.0 / 3);
  ASSERT_LT(nv.kv_transfer_seconds, ib.kv_transfer_seconds);
  EXPECT_NEAR(m.kv_transfer_seconds,
              nv.kv_transfer_seconds / 3 + 2 * ib.kv_transfer_seconds / 3,
              1e-12);
}

}  // namespace
}  // namespace shardplan::simulator
