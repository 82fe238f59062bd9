// The load a prediction is for: Workload.concurrency (and plan.batch_size) is
// requests in flight per replica, per decode instance of a disaggregated
// plan, spread over its attention dp ranks. Little's law ties the prediction
// to it: output tok/s x TPOT is the number of requests decoding, so it never
// exceeds concurrency x replicas. Checked over every plan kind on a seeded
// draw of models, GPU counts and concurrencies.
#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/cost_model.h"
#include "simulator/spec.h"

namespace shardplan::simulator {
namespace {

std::unique_ptr<const CostModel> Make(const std::string& model, int gpus,
                                      int concurrency, int isl = 1024,
                                      int osl = 512) {
  shardplan::v1::ModelSource source;
  source.set_catalog_name(model);
  shardplan::v1::ClusterSpec cluster;
  cluster.set_hardware("h100-sxm-80gb");
  cluster.set_num_gpus(gpus);
  cluster.set_gpus_per_node(std::min(gpus, 8));
  shardplan::v1::Workload workload;
  workload.set_input_tokens(isl);
  workload.set_output_tokens(osl);
  workload.set_concurrency(concurrency);
  // FP8 weights: Qwen3-235B in BF16 does not fit 8 H100s with attention dp.
  workload.set_weight_dtype("fp8");
  absl::StatusOr<Problem> problem = ProblemFromProto(source, cluster, workload);
  EXPECT_TRUE(problem.ok()) << problem.status();
  if (!problem.ok()) return nullptr;
  absl::StatusOr<std::unique_ptr<const CostModel>> m =
      CostModel::Create(*problem);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(*m) : nullptr;
}

PlanDims Agg(int replicas, int dp, int tp, int pp, int ep) {
  PlanDims p;
  p.replicas = replicas;
  p.dp = dp;
  p.tp = tp;
  p.pp = pp;
  p.ep = ep;
  return p;
}

PlanDims Disagg(int x, int prefill_dp, int prefill_tp, int prefill_ep, int y,
                int dp, int tp, int ep) {
  PlanDims p;
  p.disaggregated = true;
  p.prefill_instances = x;
  p.prefill.dp = prefill_dp;
  p.prefill.tp = prefill_tp;
  p.prefill.ep = prefill_ep;
  p.decode_instances = y;
  p.dp = dp;
  p.tp = tp;
  p.ep = ep;
  return p;
}

struct Kind {
  const char* name;
  const char* model;
  int gpus;
  PlanDims plan;
};

std::vector<Kind> Kinds() {
  return {
      {"dense tp", "llama-3.1-70b", 8, Agg(1, 1, 8, 1, 1)},
      {"dense replicas", "llama-3.1-8b", 8, Agg(4, 1, 2, 1, 1)},
      // A dense model's dp ranks are independent copies: replicas.
      {"dense dp copies", "llama-3.1-8b", 8, Agg(2, 2, 2, 1, 1)},
      {"dense pipeline", "llama-3.1-70b", 8, Agg(1, 1, 4, 2, 1)},
      {"moe tp ep", "qwen3-235b-a22b", 8, Agg(1, 1, 8, 1, 8)},
      {"moe attention dp ep", "qwen3-235b-a22b", 8, Agg(1, 8, 1, 1, 8)},
      {"moe dp x tp", "qwen3-235b-a22b", 8, Agg(1, 4, 2, 1, 8)},
      {"moe replicas of dp ep", "qwen3-235b-a22b", 16, Agg(2, 8, 1, 1, 8)},
      {"moe pipeline with dp", "qwen3-235b-a22b", 16, Agg(1, 4, 2, 2, 8)},
      {"moe wide dp over nodes", "deepseek-v3", 16, Agg(1, 16, 1, 1, 16)},
      {"disagg dense", "llama-3.1-8b", 8, Disagg(2, 1, 2, 1, 2, 1, 2, 1)},
      {"disagg dense dp copies", "llama-3.1-8b", 8,
       Disagg(2, 1, 2, 1, 1, 2, 2, 1)},
      {"disagg moe decode dp", "qwen3-235b-a22b", 16,
       Disagg(1, 1, 8, 8, 1, 8, 1, 8)},
      {"disagg moe two decode instances", "qwen3-235b-a22b", 24,
       Disagg(1, 8, 1, 8, 2, 4, 2, 8)},
  };
}

// Requests decoding by Little's law: output tok/s x TPOT.
double InFlight(const Evaluation& e) {
  return e.output_tokens_per_s * e.tpot_seconds;
}

TEST(LoadSemanticsTest, LittlesLawHoldsForEveryPlanKind) {
  std::mt19937 rng(20261127);
  const int concurrencies[] = {1, 3, 7, 16, 33, 64, 200, 1000};
  int feasible = 0, checked = 0;
  for (const Kind& kind : Kinds()) {
    for (int draw = 0; draw < 3; ++draw) {
      const int c = concurrencies[rng() % (sizeof(concurrencies) /
                                           sizeof(concurrencies[0]))];
      const int osl = (rng() % 2) ? 512 : 128;
      SCOPED_TRACE(absl::StrCat(kind.name, " concurrency ", c, " osl ", osl));
      auto model = Make(kind.model, kind.gpus, c, 1024, osl);
      ASSERT_NE(model, nullptr);
      ASSERT_TRUE(model->ValidatePlan(kind.plan).ok())
          << model->ValidatePlan(kind.plan);
      const bool moe = model->problem().model.is_moe();
      const int units = LoadReplicas(kind.plan, moe);
      const int ranks = AttentionDpRanks(kind.plan, moe);
      const Evaluation e = model->Evaluate(kind.plan);
      ++checked;
      if (!e.feasible) continue;
      ++feasible;
      EXPECT_LE(InFlight(e), 1.001 * c * units);
      EXPECT_EQ(e.batch_per_rank, RankBatch(e.batch_size, ranks));
      if (kind.plan.disaggregated) {
        // The closed loop: of the C clients of an instance some wait for or
        // are in prefill; the decode batch is the rest.
        EXPECT_LE(e.batch_size, c);
        EXPECT_GT(e.batch_size, 0);
      } else {
        EXPECT_EQ(e.batch_size, c);
        EXPECT_EQ(e.batch_per_rank, RankBatch(c, ranks));
        if (e.queued_requests == 0 && e.preemption_wait_seconds == 0) {
          // Every request decodes each iteration: equality.
          EXPECT_NEAR(InFlight(e) / (c * units), 1.0, 1e-9);
        } else {
          EXPECT_NEAR(InFlight(e) / (e.running_batch * units), 1.0, 1e-9);
          EXPECT_LT(e.running_batch, c);
        }
      }
    }
  }
  // The draw must exercise the property, not skip it.
  EXPECT_GE(feasible, checked / 2);
}

TEST(LoadSemanticsTest, ChosenLoadAndPlanBatchAreRequestsPerReplica) {
  // Concurrency 0: the scan picks a per-replica load; an explicit plan batch
  // is one too.
  for (const Kind& kind : Kinds()) {
    SCOPED_TRACE(kind.name);
    auto model = Make(kind.model, kind.gpus, 0);
    ASSERT_NE(model, nullptr);
    const bool moe = model->problem().model.is_moe();
    const int units = LoadReplicas(kind.plan, moe);
    const int ranks = AttentionDpRanks(kind.plan, moe);
    const Evaluation best = model->Evaluate(kind.plan);
    if (best.feasible) {
      EXPECT_LE(InFlight(best), 1.001 * best.batch_size * units);
      EXPECT_EQ(best.batch_per_rank, RankBatch(best.batch_size, ranks));
    }
    PlanDims fixed = kind.plan;
    fixed.batch_size = 24;
    const Evaluation e = model->Evaluate(fixed);
    EXPECT_EQ(e.batch_size, 24);
    EXPECT_EQ(e.batch_per_rank, RankBatch(24, ranks));
    if (e.feasible) {
      EXPECT_LE(InFlight(e), 1.001 * 24 * units);
    }
  }
}

// The shape: an 8-GPU MoE replica at concurrency 64, attention dp 8
// versus tensor parallel 8. Both serve 64 requests; dp 8 runs 8 per rank.
TEST(LoadSemanticsTest, AttentionDpServesTheStatedLoadNotDpTimesIt) {
  auto model = Make("qwen3-235b-a22b", 8, 64, 1024, 1024);
  ASSERT_NE(model, nullptr);
  const Evaluation dp8 = model->Evaluate(Agg(1, 8, 1, 1, 8));
  const Evaluation tp8 = model->Evaluate(Agg(1, 1, 8, 1, 8));
  ASSERT_TRUE(dp8.feasible) << InfeasibleReasonText(dp8);
  ASSERT_TRUE(tp8.feasible) << InfeasibleReasonText(tp8);
  EXPECT_NEAR(InFlight(dp8), 64, 1e-6);  // was 512
  EXPECT_NEAR(InFlight(tp8), 64, 1e-6);
  EXPECT_EQ(dp8.batch_size, 64);
  EXPECT_EQ(dp8.batch_per_rank, 8);
  EXPECT_EQ(tp8.batch_per_rank, 64);
  // Each dp rank decodes 8 requests; at the same batch per rank the replica
  // of dp 8 at concurrency 512 serves 8x the requests at the same TPOT.
  auto loaded = Make("qwen3-235b-a22b", 8, 512, 1024, 1024);
  ASSERT_NE(loaded, nullptr);
  const Evaluation dp8_full = loaded->Evaluate(Agg(1, 8, 1, 1, 8));
  EXPECT_EQ(dp8_full.batch_per_rank, 64);
  EXPECT_LT(dp8.tpot_seconds, dp8_full.tpot_seconds);
}

// Concurrency not divisible by dp: the fullest rank sets the iteration, the
// throughput counts the requests there are.
TEST(LoadSemanticsTest, UnevenSharesCountTheRequestsThereAre) {
  auto even = Make("qwen3-235b-a22b", 8, 64);
  auto uneven = Make("qwen3-235b-a22b", 8, 57);
  ASSERT_NE(even, nullptr);
  ASSERT_NE(uneven, nullptr);
  const PlanDims plan = Agg(1, 8, 1, 1, 8);
  const Evaluation a = even->Evaluate(plan);
  const Evaluation b = uneven->Evaluate(plan);
  ASSERT_TRUE(a.feasible && b.feasible);
  EXPECT_EQ(b.batch_per_rank, 8);  // ceil(57 / 8)
  EXPECT_DOUBLE_EQ(a.tpot_seconds, b.tpot_seconds);
  EXPECT_NEAR(b.output_tokens_per_s / a.output_tokens_per_s, 57.0 / 64, 1e-9);
}

// KV-cache overflow is judged per rank, each against its own share: a load
// whose per-rank share fits does not queue although the replica's total
// would not fit one rank.
TEST(LoadSemanticsTest, KvOverflowIsPerRank) {
  auto model = Make("qwen3-235b-a22b", 8, 4000, 8192, 1024);
  ASSERT_NE(model, nullptr);
  const Evaluation tp8 = model->Evaluate(Agg(1, 1, 8, 1, 8));
  const Evaluation dp8 = model->Evaluate(Agg(1, 8, 1, 1, 8));
  // tp 8 holds the whole load's KV on every rank's share of the heads;
  // dp 8 holds a share of the requests per rank.
  EXPECT_GT(tp8.queued_requests + dp8.queued_requests, 0);
  for (const Evaluation* e : {&tp8, &dp8}) {
    if (!e->feasible) continue;
    EXPECT_EQ(e->batch_size, 4000);
    EXPECT_EQ(e->running_batch + e->queued_requests, 4000);
    EXPECT_LE(InFlight(*e), 1.001 * e->running_batch);
  }
  EXPECT_EQ(dp8.batch_per_rank, 500);
}

}  // namespace
}  // namespace shardplan::simulator
