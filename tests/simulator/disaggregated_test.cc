// Disaggregated prefill/decode plans: the pools' balance, the KV transfer,
// the prefill queue and validation with field paths, on small hand-checkable
// cases.
#include "simulator/disaggregated.h"

#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/cost_model.h"
#include "simulator/spec.h"
#include "tests/simulator/disaggregated_plan.h"

namespace shardplan::simulator {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::unique_ptr<const CostModel> Make(int gpus, int isl = 4096, int osl = 512,
                                      double max_ttft_ms = 0,
                                      int concurrency = 0) {
  shardplan::v1::ModelSource source;
  source.set_catalog_name("llama-3.1-8b");
  shardplan::v1::ClusterSpec cluster;
  cluster.set_hardware("h100-sxm-80gb");
  cluster.set_num_gpus(gpus);
  cluster.set_gpus_per_node(std::min(gpus, 8));
  shardplan::v1::Workload workload;
  workload.set_input_tokens(isl);
  workload.set_output_tokens(osl);
  workload.set_max_ttft_ms(max_ttft_ms);
  workload.set_concurrency(concurrency);
  absl::StatusOr<Problem> problem = ProblemFromProto(source, cluster, workload);
  EXPECT_TRUE(problem.ok()) << problem.status();
  if (!problem.ok()) return nullptr;
  absl::StatusOr<std::unique_ptr<const CostModel>> model =
      CostModel::Create(*problem);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? std::move(*model) : nullptr;
}

TEST(DisaggregatedTest, DecodeHasNoPrefillInterleaved) {
  auto model = Make(8);
  ASSERT_NE(model, nullptr);
  const PlanDims plan = Disagg(4, 1, 4, 1, 32);
  ASSERT_TRUE(model->ValidatePlan(plan).ok()) << model->ValidatePlan(plan);
  const Evaluation d = model->Evaluate(plan);
  ASSERT_TRUE(d.disaggregated);
  // The same single-GPU instance serving aggregated spends part of every
  // iteration on prefills; the decode instance does not.
  PlanDims agg;
  agg.replicas = 8;
  agg.batch_size = 32;
  const Evaluation a = model->Evaluate(agg);
  EXPECT_LT(d.tpot_seconds, a.tpot_seconds);
  EXPECT_GT(d.tpot_seconds, 0);
  EXPECT_GT(d.ttft_seconds,
            d.prefill_seconds);  // queue + transfer on top of the prefill
}

TEST(DisaggregatedTest, ThroughputIsTheSlowerPool) {
  auto model = Make(8);
  ASSERT_NE(model, nullptr);
  // One prefill GPU feeding seven decode GPUs at a large batch: prefill bound.
  const Evaluation e = model->Evaluate(Disagg(1, 1, 7, 1, 64));
  ASSERT_TRUE(e.feasible) << InfeasibleReasonText(e);
  EXPECT_LT(e.prefill_requests_per_s, e.decode_requests_per_s);
  EXPECT_NEAR(e.output_tokens_per_s, e.prefill_requests_per_s * 512,
              1e-6 * e.output_tokens_per_s);
  EXPECT_DOUBLE_EQ(e.prefill_utilization, kMaxPrefillUtilization);
  EXPECT_NEAR(e.output_tokens_per_s_per_gpu, e.output_tokens_per_s / 8, 1e-9);
  // Seven prefill GPUs for one decode GPU at batch 8: decode bound, and the
  // lightly loaded prefill pool barely queues.
  const Evaluation d = model->Evaluate(Disagg(7, 1, 1, 1, 8));
  ASSERT_TRUE(d.feasible) << InfeasibleReasonText(d);
  EXPECT_GT(d.prefill_requests_per_s, d.decode_requests_per_s);
  EXPECT_NEAR(d.output_tokens_per_s, d.decode_requests_per_s * 512,
              1e-6 * d.output_tokens_per_s);
  EXPECT_LT(d.prefill_queue_seconds, e.prefill_queue_seconds);
}

// Closed-loop clients (workload concurrency per decode instance): Little's
// law holds, clients = completion rate x (TTFT + (OSL - 1) TPOT), and a
// prefill-bound plan turns more clients into TTFT, not throughput.
TEST(DisaggregatedTest, ClosedLoopClientsObeyLittlesLaw) {
  for (int concurrency : {1, 16, 64}) {
    auto model = Make(8, 4096, 512, 0, concurrency);
    ASSERT_NE(model, nullptr);
    const Evaluation e = model->Evaluate(Disagg(1, 1, 7, 1, 0));
    ASSERT_TRUE(e.feasible) << InfeasibleReasonText(e);
    const double rate = e.output_tokens_per_s / 512;
    EXPECT_NEAR(rate * (e.ttft_seconds + 511 * e.tpot_seconds),
                7.0 * concurrency, 0.03 * 7 * concurrency)
        << concurrency;
    EXPECT_LE(rate, e.prefill_requests_per_s * (1 + 1e-9));
  }
  auto few = Make(8, 4096, 512, 0, 1);
  auto many = Make(8, 4096, 512, 0, 64);
  ASSERT_NE(few, nullptr);
  ASSERT_NE(many, nullptr);
  const Evaluation a = few->Evaluate(Disagg(1, 1, 7, 1, 0));
  const Evaluation b = many->Evaluate(Disagg(1, 1, 7, 1, 0));
  EXPECT_LT(a.prefill_queue_seconds, b.prefill_queue_seconds);
  EXPECT_GT(b.ttft_seconds, 10 * a.ttft_seconds);
}

TEST(DisaggregatedTest, KvTransferBytesAndLink) {
  // Llama-3.1-8B: 32 layers x 8 KV heads x 128 dims x K and V x 2 bytes =
  // 131072 bytes per token.
  auto one_node = Make(8, 4096);
  ASSERT_NE(one_node, nullptr);
  const Evaluation nv = one_node->Evaluate(Disagg(4, 1, 4, 1, 16));
  EXPECT_DOUBLE_EQ(nv.kv_transfer_bytes, 4096.0 * 131072);
  EXPECT_FALSE(nv.kv_transfer_inter_node);
  auto two_nodes = Make(16, 4096);
  ASSERT_NE(two_nodes, nullptr);
  const Evaluation ib = two_nodes->Evaluate(Disagg(8, 1, 8, 1, 16));
  EXPECT_TRUE(ib.kv_transfer_inter_node);
  // Layer-wise overlap hides at least all but one layer's share.
  EXPECT_GE(ib.kv_transfer_seconds, nv.kv_transfer_seconds);
  EXPECT_GT(ib.kv_transfer_seconds, 0);
}

// A prefill pass of R requests attends within each request: its attention
// is R times one request's, not the quadratic term over all R x ISL tokens of
// the pass, so batching never costs per-request throughput (at ISL 8192 the
// attention is a large share of Llama-3.1-8B's prefill).
TEST(DisaggregatedTest, BatchedPrefillPaysAttentionPerRequest) {
  auto model = Make(8, 8192);
  ASSERT_NE(model, nullptr);
  PlanDims one = Disagg(4, 1, 4, 1, 16);
  PlanDims four = one;
  four.prefill.batch_size = 4;
  const Evaluation a = model->Evaluate(one);
  const Evaluation b = model->Evaluate(four);
  ASSERT_GT(a.prefill_requests_per_s, 0);
  EXPECT_GE(b.prefill_requests_per_s, 0.95 * a.prefill_requests_per_s);
  EXPECT_LE(b.prefill_requests_per_s, 1.5 * a.prefill_requests_per_s);
}

TEST(DisaggregatedTest, BestDecodeBatchWhenNoneGiven) {
  auto model = Make(8);
  ASSERT_NE(model, nullptr);
  const Evaluation best = model->Evaluate(Disagg(2, 1, 6, 1, 0));
  ASSERT_TRUE(best.feasible);
  for (int b : {1, 8, 64}) {
    EXPECT_GE(best.output_tokens_per_s,
              model->Evaluate(Disagg(2, 1, 6, 1, b)).output_tokens_per_s);
  }
}

TEST(DisaggregatedTest, TtftSloMakesItInfeasible) {
  auto model = Make(8, 4096, 512, /*max_ttft_ms=*/1);
  ASSERT_NE(model, nullptr);
  const Evaluation e = model->Evaluate(Disagg(4, 1, 4, 1, 16));
  EXPECT_FALSE(e.feasible);
  EXPECT_EQ(e.reason, InfeasibleReason::kTtftSlo);
  EXPECT_EQ(e.output_tokens_per_s, 0);
}

TEST(DisaggregatedTest, ValidationNamesThePool) {
  auto model = Make(8);
  ASSERT_NE(model, nullptr);
  absl::Status s = model->ValidatePlan(Disagg(1, 3, 1, 5, 8));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), StartsWith("plan.prefill."));
  s = model->ValidatePlan(Disagg(2, 2, 1, 3, 8));  // 4 + 3 GPUs, 3 heads no
  EXPECT_THAT(std::string(s.message()), StartsWith("plan.decode."));
  s = model->ValidatePlan(Disagg(2, 1, 2, 1, 8));  // 4 of 8 GPUs
  EXPECT_THAT(std::string(s.message()), HasSubstr("cluster.num_gpus (8)"));
  s = model->ValidatePlan(Disagg(0, 1, 8, 1, 8));
  EXPECT_THAT(std::string(s.message()), StartsWith("plan.prefill_instances"));
  PlanDims replicated = Disagg(4, 1, 4, 1, 8);
  replicated.replicas = 2;
  s = model->ValidatePlan(replicated);
  EXPECT_THAT(std::string(s.message()), StartsWith("plan.decode.replicas"));
  // Unvalidated garbage is infeasible, never a crash.
  EXPECT_FALSE(model->Evaluate(Disagg(0, 0, 3, 0, -1)).feasible);
}

TEST(DisaggregatedTest, EqualityCoversThePools) {
  const PlanDims a = Disagg(2, 2, 4, 1, 8);
  PlanDims b = a;
  EXPECT_EQ(a, b);
  b.prefill.tp = 1;
  EXPECT_NE(a, b);
  b = a;
  b.decode_instances = 3;
  EXPECT_NE(a, b);
  b = a;
  b.disaggregated = false;
  EXPECT_NE(a, b);
  // Aggregated plans ignore the pool fields.
  PlanDims c, d;
  d.prefill.tp = 4;
  EXPECT_EQ(c, d);
}

}  // namespace
}  // namespace shardplan::simulator
