// With workload.engine set, the plan space and every searcher offer only
// plans that engine (and version) can launch; with no engine, only plans at
// least one engine can (simulator/engine_capability.h).
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
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
    const std::string& version = "", int concurrency = 0,
    const std::string& hardware = "h100-sxm-80gb",
    const std::string& weight_dtype = "") {
  shardplan::v1::ModelSource source;
  source.set_catalog_name(model);
  shardplan::v1::ClusterSpec cluster;
  cluster.set_hardware(hardware);
  cluster.set_num_gpus(gpus);
  cluster.set_gpus_per_node(8);
  shardplan::v1::Workload workload;
  workload.set_input_tokens(1024);
  workload.set_output_tokens(256);
  workload.set_concurrency(concurrency);
  workload.set_engine(engine);
  workload.set_engine_version(version);
  workload.set_weight_dtype(weight_dtype);
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

// The sweep that grid and megatron run over disaggregated plans offers only
// launchable plans (each candidate checked whole).
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

// A small disaggregated problem of each kind the rules touch: DeepSeek-V3
// (MLA, DP attention + EP) on 32 H200 with FP8 weights, Qwen3-235B-A22B on 16
// H100, gpt-oss-120b (no DP attention on SGLang) on 16 H100.
struct DisaggregatedCase {
  std::string model;
  int gpus;
  std::string hardware;
  std::string weight_dtype;
};
const std::vector<DisaggregatedCase>& DisaggregatedCases() {
  static const auto* cases = new std::vector<DisaggregatedCase>{
      {"deepseek-v3", 32, "h200-sxm-141gb", "fp8"},
      {"qwen3-235b-a22b", 16, "h100-sxm-80gb", ""},
      {"gpt-oss-120b", 16, "h100-sxm-80gb", ""}};
  return *cases;
}

// Every joint tuple of `space` (Megatron dims), checked by `check`; returns
// how many there are.
template <typename Check>
int ForEveryTuple(const PlanSpace& space, const Check& check) {
  const int tuples = space.NumChoices(kDegreesDecision);
  for (int t = 0; t < tuples; ++t) {
    check(TuplePlan(space, space.TupleDegrees(t)));
  }
  return tuples;
}

// With an engine named, the disaggregated space holds no (split, prefill
// layout, decode layout) tuple that engine refuses, and fewer tuples than the
// engine-less space wherever one of its rules applies.
TEST(EngineFilterTest, DisaggregatedSpaceHoldsOnlyWhatTheEngineRuns) {
  for (const DisaggregatedCase& c : DisaggregatedCases()) {
    SCOPED_TRACE(c.model);
    auto any = Make(c.model, c.gpus, "", "", 0, c.hardware, c.weight_dtype);
    ASSERT_TRUE(any);
    auto any_space = PlanSpace::CreateDisaggregated(*any);
    ASSERT_TRUE(any_space.ok()) << any_space.status();
    const int any_tuples = (*any_space)->NumChoices(kDegreesDecision);
    ASSERT_GT(any_tuples, 0);
    ASSERT_LT(any_tuples, 200000);  // enumerated below
    for (const std::string engine : {"sglang", "vllm", "trtllm"}) {
      SCOPED_TRACE(engine);
      auto model =
          Make(c.model, c.gpus, engine, "", 0, c.hardware, c.weight_dtype);
      ASSERT_TRUE(model);
      auto space = PlanSpace::CreateDisaggregated(*model);
      ASSERT_TRUE(space.ok()) << space.status();
      int refused = 0;
      const int tuples = ForEveryTuple(**space, [&](const auto& plan) {
        const absl::Status s =
            simulator::CheckEngineCanRun(engine, "", model->problem(), plan);
        if (!s.ok() && refused++ == 0) ADD_FAILURE() << s;
      });
      EXPECT_EQ(refused, 0);
      // The engine-less space's tuples this engine refuses are exactly the
      // ones its own space lacks.
      int refused_in_any = 0;
      ForEveryTuple(**any_space, [&](const auto& plan) {
        if (!simulator::CheckEngineCanRun(engine, "", model->problem(), plan)
                 .ok()) {
          ++refused_in_any;
        }
      });
      EXPECT_EQ(tuples, any_tuples - refused_in_any);
      // SGLang refuses pp on a decode server and vLLM pp with NixlConnector
      // on every model here; SGLang refuses gpt-oss with DP attention.
      if (engine != "trtllm") {
        EXPECT_LT(tuples, any_tuples);
      }
      EXPECT_EQ((*space)->Size() < (*any_space)->Size(), tuples < any_tuples);
    }
  }
}

TEST(EngineFilterTest, DisaggregatedSpaceHasNoDecodePipelineOnSglang) {
  auto model =
      Make("deepseek-v3", 32, "sglang", "", 0, "h200-sxm-141gb", "fp8");
  ASSERT_TRUE(model);
  auto space = PlanSpace::CreateDisaggregated(*model);
  ASSERT_TRUE(space.ok()) << space.status();
  bool prefill_pipeline = false;
  for (int t = 0; t < (*space)->NumChoices(kDegreesDecision); ++t) {
    const Degrees g = (*space)->TupleDegrees(t);
    EXPECT_EQ(g.pp, 1) << t;
    // The prefill pool may pipeline (PR 8846, 0.5 and later) without DP
    // attention (issue 9805).
    if (g.prefill_pp > 1) {
      prefill_pipeline = true;
      EXPECT_EQ(g.prefill_dp, 1) << t;
    }
  }
  EXPECT_TRUE(prefill_pipeline);
}

// Where a split places a pool decides too: on 20 GPUs (nodes of 8, 8 and 4)
// a 12-GPU prefill instance sits on 8 + 4 GPUs of two nodes, which SGLang
// cannot launch (tp-size / nnodes GPUs per node) and TensorRT-LLM can.
TEST(EngineFilterTest, DisaggregatedSpaceDropsPoolsTheEngineCannotPlace) {
  auto trtllm = Make("llama-3.1-70b", 20, "trtllm");
  auto sglang = Make("llama-3.1-70b", 20, "sglang");
  ASSERT_TRUE(trtllm && sglang);
  auto trtllm_space = PlanSpace::CreateDisaggregated(*trtllm);
  auto sglang_space = PlanSpace::CreateDisaggregated(*sglang);
  ASSERT_TRUE(trtllm_space.ok()) << trtllm_space.status();
  ASSERT_TRUE(sglang_space.ok()) << sglang_space.status();
  int uneven = 0;
  ForEveryTuple(**trtllm_space, [&](const auto& plan) {
    const absl::Status s =
        simulator::CheckEngineCanRun("sglang", "", sglang->problem(), plan);
    if (absl::StrContains(s.message(), "rule sglang-uneven-nodes,")) ++uneven;
  });
  EXPECT_GT(uneven, 0);
  int refused = 0;
  ForEveryTuple(**sglang_space, [&](const auto& plan) {
    if (!simulator::CheckEngineCanRun("sglang", "", sglang->problem(), plan)
             .ok()) {
      ++refused;
    }
  });
  EXPECT_EQ(refused, 0);
  EXPECT_LT((*sglang_space)->NumChoices(kDegreesDecision),
            (*trtllm_space)->NumChoices(kDegreesDecision));
}

TEST(EngineFilterTest, DisaggregatedSpaceOfAReleaseWithoutItIsRefused) {
  // SGLang 0.4.5 has no PD disaggregation: no pool of any layout is left,
  // and the error names the engine and the rule.
  auto old = Make("llama-3.1-70b", 16, "sglang", "0.4.5");
  ASSERT_TRUE(old);
  auto space = PlanSpace::CreateDisaggregated(*old);
  EXPECT_EQ(space.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(space.status().message()),
              ::testing::HasSubstr("that sglang can launch"));
  EXPECT_THAT(
      std::string(space.status().message()),
      ::testing::HasSubstr("sglang \"0.4.5\" cannot run this plan: rule "
                           "sglang-"));
}

class EngineFilterDisaggregatedSearchTest
    : public ::testing::TestWithParam<std::string> {};

// Records every plan a search streams.
class Streamed : public SearchObserver {
 public:
  void OnImprovement(const Improvement& improvement) override {
    plans.push_back(improvement.best.plan);
  }
  std::vector<simulator::PlanDims> plans;
};

// A search of SGLang's disaggregated space streams no decode pool with
// pipeline stages (a decode server with pp > 1 is not implemented, issue
// 8424), and each plan it streams, and its best, SGLang can run.
TEST_P(EngineFilterDisaggregatedSearchTest, SglangNeverStreamsDecodePipeline) {
  auto model =
      Make("deepseek-v3", 32, "sglang", "", 0, "h200-sxm-141gb", "fp8");
  ASSERT_TRUE(model);
  SearchOptions options;
  options.max_evaluations = 300;
  options.max_seconds = 20;
  options.disaggregated = true;
  auto searcher = CreateSearcher(GetParam());
  ASSERT_TRUE(searcher.ok()) << searcher.status();
  CancellationToken cancel;
  Streamed observer;
  absl::StatusOr<SearchResult> r =
      (*searcher)->Search(*model, options, cancel, observer);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_FALSE(observer.plans.empty());
  std::vector<simulator::PlanDims> all = observer.plans;
  for (const ScoredPlan& s : r->elite) all.push_back(s.plan);
  for (const ScoredPlan& s : r->frontier) all.push_back(s.plan);
  all.push_back(r->best.plan);
  for (const simulator::PlanDims& plan : all) {
    if (!plan.disaggregated) continue;  // the baseline reference
    EXPECT_EQ(plan.pp, 1);
    const absl::Status can =
        simulator::CheckEngineCanRun("sglang", "", model->problem(), plan);
    EXPECT_TRUE(can.ok()) << can;
  }
}

INSTANTIATE_TEST_SUITE_P(Searchers, EngineFilterDisaggregatedSearchTest,
                         ::testing::Values("grid", "random", "anneal",
                                           "genetic"));

}  // namespace
}  // namespace shardplan::policy
