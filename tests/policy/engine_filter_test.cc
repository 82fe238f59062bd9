// With workload.engine set, the plan space and every searcher offer only
// plans that engine (and version) can launch; with no engine, only plans at
// least one engine can (simulator/engine_capability.h).
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policy/disaggregated_grid.h"
#include "policy/plan_space.h"
#include "policy/searcher.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/cost_model.h"
#include "simulator/engine_capability.h"
#include "simulator/spec.h"

namespace shardplan::policy {
namespace {

std::unique_ptr<const simulator::CostModel> Make(
    const std::string& model, int gpus, const std::string& engine,
    const std::string& version = "", int concurrency = 0) {
  shardplan::v1::ModelSource source;
  source.set_catalog_name(model);
  shardplan::v1::ClusterSpec cluster;
  cluster.set_hardware("h100-sxm-80gb");
  cluster.set_num_gpus(gpus);
  cluster.set_gpus_per_node(8);
  shardplan::v1::Workload workload;
  workload.set_input_tokens(1024);
  workload.set_output_tokens(256);
  workload.set_concurrency(concurrency);
  workload.set_engine(engine);
  workload.set_engine_version(version);
  absl::StatusOr<simulator::Problem> p =
      simulator::ProblemFromProto(source, cluster, workload);
  EXPECT_TRUE(p.ok()) << p.status();
  if (!p.ok()) return nullptr;
  auto m = simulator::CostModel::Create(*p);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(*m) : nullptr;
}

simulator::PlanDims TuplePlan(const PlanSpace& space, const Degrees& g) {
  simulator::PlanDims p;
  p.replicas = g.replicas;
  p.dp = g.dp;
  p.tp = g.tp;
  p.pp = g.pp;
  p.ep = g.ep;
  if (space.disaggregated()) {
    p.disaggregated = true;
    p.replicas = 1;
    p.decode_instances = g.replicas;
    p.prefill_instances = g.prefill_instances;
    p.prefill.dp = g.prefill_dp;
    p.prefill.tp = g.prefill_tp;
    p.prefill.pp = g.prefill_pp;
    p.prefill.ep = g.prefill_ep;
  }
  return p;
}

// Every degree tuple of `space` can be launched by the workload's engine.
void ExpectEveryTupleRuns(const PlanSpace& space) {
  const simulator::Problem& p = space.model().problem();
  ASSERT_FALSE(space.degrees().empty());
  for (const Degrees& g : space.degrees()) {
    const simulator::PlanDims plan = TuplePlan(space, g);
    EXPECT_TRUE(simulator::WorkloadEngineCanRun(p, plan))
        << "dp " << g.dp << " tp " << g.tp << " pp " << g.pp << " ep " << g.ep
        << " prefill pp " << g.prefill_pp;
  }
}

bool HasTuple(const PlanSpace& space, int dp, int tp, int pp) {
  for (const Degrees& g : space.degrees()) {
    if (g.dp == dp && g.tp == tp && g.pp == pp) return true;
  }
  return false;
}

TEST(EngineFilterTest, AggregatedSpaceKeepsOnlyWhatTheEngineRuns) {
  auto any = Make("deepseek-v3", 16, "");
  auto sglang = Make("deepseek-v3", 16, "sglang");
  auto vllm = Make("deepseek-v3", 16, "vllm");
  auto trtllm = Make("deepseek-v3", 16, "trtllm");
  ASSERT_TRUE(any && sglang && vllm && trtllm);
  auto s_any = PlanSpace::Create(*any);
  auto s_sglang = PlanSpace::Create(*sglang);
  auto s_vllm = PlanSpace::Create(*vllm);
  auto s_trtllm = PlanSpace::Create(*trtllm);
  ASSERT_TRUE(s_any.ok() && s_sglang.ok() && s_vllm.ok() && s_trtllm.ok());
  for (const auto* s : {&*s_any, &*s_sglang, &*s_vllm, &*s_trtllm}) {
    ExpectEveryTupleRuns(**s);
  }
  // DP attention 8 with two stages: TensorRT-LLM only.
  EXPECT_TRUE(HasTuple(**s_any, 8, 1, 2));
  EXPECT_TRUE(HasTuple(**s_trtllm, 8, 1, 2));
  EXPECT_FALSE(HasTuple(**s_sglang, 8, 1, 2));
  EXPECT_FALSE(HasTuple(**s_vllm, 8, 1, 2));
  // dp 2 x tp 4 attention with two stages: no engine.
  EXPECT_FALSE(HasTuple(**s_any, 2, 4, 2));
  // dp 2 x tp 8 attention: SGLang and vLLM, not TensorRT-LLM.
  EXPECT_TRUE(HasTuple(**s_sglang, 2, 8, 1));
  EXPECT_TRUE(HasTuple(**s_vllm, 2, 8, 1));
  EXPECT_FALSE(HasTuple(**s_trtllm, 2, 8, 1));
  EXPECT_LT((*s_sglang)->degrees().size(), (*s_any)->degrees().size());
}

// The disaggregated space is indexed (pool split x prefill layout x decode
// layout), not a stored tuple list, so it is not filtered by the engine: the
// search marks what the engine cannot launch infeasible (SearchRun), and the
// sweep that grid and megatron run offers only launchable plans.
TEST(EngineFilterTest, DisaggregatedSweepKeepsOnlyWhatTheEngineRuns) {
  auto vllm = Make("llama-3.1-70b", 16, "vllm");
  ASSERT_TRUE(vllm);
  CancellationToken cancel;
  const DisaggregatedSweep sweep =
      SweepDisaggregated(*vllm, 400, 0, cancel, 16);
  ASSERT_GT(sweep.candidates, 0);
  EXPECT_TRUE(
      simulator::CheckEngineCanRun("vllm", "", vllm->problem(), sweep.best.plan)
          .ok());
  for (const ScoredPlan& s : sweep.frontier) {
    EXPECT_EQ(s.plan.pp, 1);
    EXPECT_EQ(s.plan.prefill.pp, 1);
  }
}

TEST(EngineFilterTest, OldReleaseWithoutTheFeatureLeavesNoPlan) {
  // SGLang 0.4.5 has no disaggregation: the sweep offers nothing, and the
  // check names the rule.
  auto old = Make("llama-3.1-70b", 16, "sglang", "0.4.5");
  ASSERT_TRUE(old);
  CancellationToken cancel;
  const DisaggregatedSweep sweep = SweepDisaggregated(*old, 400, 0, cancel, 16);
  EXPECT_EQ(sweep.candidates, 0);
  simulator::PlanDims plan;
  plan.disaggregated = true;
  plan.prefill_instances = 1;
  plan.decode_instances = 1;
  plan.tp = 8;
  plan.prefill.tp = 8;
  const absl::Status s =
      simulator::CheckEngineCanRun("sglang", "0.4.5", old->problem(), plan);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("rule sglang-"));
  // Aggregated plans of the same release remain.
  EXPECT_TRUE(PlanSpace::Create(*old).ok());
}

class EngineFilterSearchTest : public ::testing::TestWithParam<std::string> {};

// Each searcher's best, elite and frontier are launchable by the engine,
// including a warm start that is not (it must not come back).
TEST_P(EngineFilterSearchTest, EveryResultRunsOnTheEngine) {
  const std::string method = GetParam();
  for (const std::string engine : {"sglang", "vllm", "trtllm"}) {
    SCOPED_TRACE(method + " " + engine);
    auto model = Make("deepseek-v3", 16, engine);
    ASSERT_TRUE(model);
    const simulator::Problem& p = model->problem();
    WarmStart warm;
    simulator::PlanDims blocked;
    blocked.dp = 2;
    blocked.tp = 4;
    blocked.pp = 2;
    blocked.ep = 8;  // no engine runs dp x tp attention with pp
    warm.elite_plans.push_back(blocked);
    SearchOptions options;
    options.max_evaluations = 250;
    options.max_seconds = 20;
    options.warm_start = &warm;
    auto searcher = CreateSearcher(method);
    ASSERT_TRUE(searcher.ok()) << searcher.status();
    CancellationToken cancel;
    SearchObserver observer;
    absl::StatusOr<SearchResult> r =
        (*searcher)->Search(*model, options, cancel, observer);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_TRUE(r->best.evaluation.feasible);
    std::vector<ScoredPlan> all = r->elite;
    all.insert(all.end(), r->frontier.begin(), r->frontier.end());
    all.push_back(r->best);
    for (const ScoredPlan& s : all) {
      if (!s.evaluation.feasible) continue;
      const absl::Status can =
          simulator::CheckEngineCanRun(engine, "", p, s.plan);
      EXPECT_TRUE(can.ok()) << can;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Baselines, EngineFilterSearchTest,
                         ::testing::Values("megatron", "grid", "random",
                                           "anneal", "genetic"));

}  // namespace
}  // namespace shardplan::policy
