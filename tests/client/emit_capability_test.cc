// Launches checked against the engine-capability rules: plans drawn from the
// launch tests' seeded generator (dense and MoE catalog models on Hopper, B200
// and GB200 NVL72 clusters of 1-72 GPUs, partial nodes and node groups of
// different sizes, aggregated and disaggregated) go through the simulator's
// capability check (client/engines/capabilities.yaml as simulator/
// engine_capability.h evaluates it, on the ClusterSpec the server would plan
// on) and through every emitter with the engines the server would list as
// able to run them (and, for each older release of the flag tables, with the
// rule the server names for it). A launch of a plan its engine cannot run
// fails the test, and so does a refusal of a plan it can run. The one test
// binary that links both the client's emitters and the simulator (the CLI and
// the client library never link the simulator).
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/emit.h"
#include "client/emit/emit_internal.h"
#include "client/engine_flags.h"
#include "gtest/gtest.h"
#include "simulator/calibration.h"
#include "simulator/cost_model.h"
#include "simulator/engine_capability.h"
#include "simulator/internal/cost_layers.h"
#include "simulator/spec.h"
#include "tests/client/emit_plan_generator.h"

namespace shardplan::client {
namespace {

// The problem the server would plan `d` on: its catalog model, cluster and
// lengths, and the KV-cache dtype the prediction sized (one the launch must
// keep), and the engine the request names ("": none).
absl::StatusOr<simulator::Problem> ProblemOf(const Drawn& d,
                                             const std::string& engine = "") {
  shardplan::v1::ModelSource model;
  model.set_catalog_name(d.context.model_name);
  shardplan::v1::Workload workload;
  workload.set_input_tokens(d.context.input_tokens);
  workload.set_output_tokens(d.context.output_tokens);
  workload.set_kv_cache_dtype(d.context.kv_cache_dtype);
  workload.set_engine(engine);
  return simulator::ProblemFromProto(model, d.cluster, workload);
}

TEST(EmitCapabilityTest, NoLaunchBreaksTheEnginesCapabilityRules) {
  std::mt19937 rng(20261128);
  constexpr int kPlans = 300;
  int checked = 0, launched = 0, refused = 0, unrunnable = 0, rack = 0,
      wide_ep = 0, versioned_blocked = 0, fp4_kv = 0;
  for (int i = 0; i < kPlans; ++i) {
    Drawn d = Draw(rng);
    const absl::StatusOr<simulator::Problem> problem = ProblemOf(d);
    ASSERT_TRUE(problem.ok())
        << i << ": " << problem.status() << " " << d.cluster.ShortDebugString();
    const absl::StatusOr<simulator::PlanDims> dims =
        simulator::PlanDimsFromProto(d.plan);
    ASSERT_TRUE(dims.ok()) << i << ": " << dims.status();
    // What the server streams with each plan; it recommends none that no
    // engine can run.
    const std::vector<std::string> runnable =
        simulator::RunnableEngines(*problem, *dims);
    if (runnable.empty()) {
      ++unrunnable;
      continue;
    }
    d.context.runnable_engines = runnable;
    rack += d.context.nvlink_domain_gpus > 0;
    for (Engine engine : {Engine::kVllm, Engine::kSglang, Engine::kTrtllm}) {
      const absl::Status can =
          simulator::CheckEngineCanRun(EngineKey(engine), "", *problem, *dims);
      const std::string label =
          absl::StrCat("plan ", i, " (", d.context.model_name, " on ",
                       d.cluster.ShortDebugString(), ", ", EngineKey(engine),
                       "): ", d.plan.ShortDebugString());
      const emit_internal::Built built =
          emit_internal::Build(engine, d.plan, d.context, /*k8s=*/false);
      ++checked;
      if (built.refused) {
        ++refused;
        EXPECT_FALSE(can.ok()) << label << ": refused a plan it can run";
        continue;
      }
      ASSERT_TRUE(built.ok) << label;
      ++launched;
      EXPECT_TRUE(can.ok()) << label << ": launched, but " << can.message();
      wide_ep += built.script.nvlink_a2a;
      // An FP4 KV cache the rules let through is one the launch sets (on FP4
      // tensor cores; elsewhere the emitter warns), and the other way round:
      // a cache the table has no value for must have been refused above.
      if (d.context.kv_cache_dtype == "fp4" && d.context.fp4_tensor_cores) {
        const absl::StatusOr<EngineVersion> newest =
            FindEngineVersion(engine, "");
        ASSERT_TRUE(newest.ok());
        EXPECT_NE(
            emit_internal::KvCacheValue(engine, *newest, d.context, nullptr),
            "")
            << label << ": runs an FP4 KV cache the launch does not set";
        ++fp4_kv;
      }
      // Every target refuses what the engine cannot run.
      for (const EmittedCommand& e : {EmitCommand(engine, d.plan, d.context),
                                      EmitKubernetes(engine, d.plan, d.context),
                                      EmitDynamo(engine, d.plan, d.context)}) {
        EXPECT_FALSE(e.refused) << label;
      }
      // Each older release: planned with --engine E --engine-version V, the
      // prediction's infeasible_reason names the rule that blocks it (the
      // simulator's message) and the launch must be refused.
      for (const EngineVersion& ev : EngineVersions(engine)) {
        EmitContext versioned = d.context;
        versioned.engine_version = ev.min;
        const absl::Status at = simulator::CheckEngineCanRun(
            EngineKey(engine), ev.min, *problem, *dims);
        versioned.capability_reason = std::string(at.message());
        const bool refused_at =
            emit_internal::Build(engine, d.plan, versioned, false).refused;
        EXPECT_EQ(refused_at, !at.ok())
            << label << " at " << ev.min << ": " << at.message();
        versioned_blocked += !at.ok();
      }
    }
  }
  // The draw covers what it must.
  EXPECT_GT(launched, kPlans / 2);
  EXPECT_GT(refused, kPlans / 10);
  EXPECT_GT(rack, kPlans / 5);
  EXPECT_GT(wide_ep, 10);
  EXPECT_GT(versioned_blocked, 10);
  EXPECT_GT(fp4_kv, 5);
  RecordProperty("checked", checked);
  RecordProperty("launched", launched);
  RecordProperty("refused", refused);
  RecordProperty("unrunnable", unrunnable);
  RecordProperty("wide_ep_over_nvlink", wide_ep);
  RecordProperty("blocked_at_an_older_release", versioned_blocked);
  RecordProperty("fp4_kv_cache_launches", fp4_kv);
}

// The per-request host time the prediction spends is the one of the server
// the launch starts: a TensorRT-LLM server with postprocess workers
// detokenises off the executor's process, and the prediction of a request
// naming the engine assumes it; no vLLM or SGLang launch sets the workers.
TEST(EmitCapabilityTest, LaunchesDetokeniseWhereThePredictionAssumes) {
  std::mt19937 rng(20261129);
  int servers = 0, with_workers = 0;
  for (int i = 0; i < 80; ++i) {
    Drawn d = Draw(rng);
    for (Engine engine : {Engine::kVllm, Engine::kSglang, Engine::kTrtllm}) {
      const absl::StatusOr<simulator::Problem> problem =
          ProblemOf(d, EngineKey(engine));
      ASSERT_TRUE(problem.ok()) << problem.status();
      for (const EngineVersion& ev : EngineVersions(engine)) {
        EmitContext versioned = d.context;
        versioned.engine_version = ev.min;
        const emit_internal::Built built =
            emit_internal::Build(engine, d.plan, versioned, false);
        if (built.refused || !built.ok) continue;
        for (const emit_internal::Command& c : built.script.commands) {
          // The disaggregated router serves no tokens.
          if (c.args.empty() ||
              c.args[0].find("disaggregated") != std::string::npos) {
            continue;
          }
          bool workers = false;
          for (const std::string& arg : c.args) {
            workers |= arg.rfind("--num_postprocess_workers ", 0) == 0 &&
                       arg != "--num_postprocess_workers 0";
          }
          EXPECT_EQ(workers, problem->workload.detokenises_off_executor)
              << EngineKey(engine) << " " << ev.min << ": " << c.args[0];
          ++servers;
          with_workers += workers;
        }
      }
    }
  }
  EXPECT_GT(servers, 100);
  EXPECT_GT(with_workers, 20);
}

// The expert all-to-all a launch runs is the one its prediction prices: for
// every generated aggregated MoE plan with expert parallelism that vLLM or
// SGLang runs, the backend the emitted command selects (vLLM:
// --all2all-backend or VLLM_ALL2ALL_BACKEND, else its default
// allgather_reducescatter; SGLang: --moe-a2a-backend deepep or the
// default) against the collective the engine's calibration profile charges
// for the dispatch of a decode step's MoE layer (an all-gather over the
// attention data-parallel ranks, or an all-to-all over the expert group).
TEST(EmitCapabilityTest, ExpertAllToAllPricedAsTheLaunchRunsIt) {
  std::mt19937 rng(20261129);
  constexpr int kPlans = 400;
  int checked = 0, gathers = 0, deepep = 0, nvlink = 0, single_rank = 0,
      sglang_single_rank = 0;
  for (int i = 0; i < kPlans; ++i) {
    Drawn d = Draw(rng);
    if (d.plan.has_prefill() || d.plan.ep() <= 1) continue;
    const absl::StatusOr<simulator::Problem> problem = ProblemOf(d);
    ASSERT_TRUE(problem.ok()) << problem.status();
    if (!problem->model.is_moe()) continue;
    const absl::StatusOr<simulator::PlanDims> dims =
        simulator::PlanDimsFromProto(d.plan);
    ASSERT_TRUE(dims.ok()) << dims.status();
    d.context.runnable_engines = simulator::RunnableEngines(*problem, *dims);
    for (Engine engine : {Engine::kVllm, Engine::kSglang}) {
      if (!simulator::CheckEngineCanRun(EngineKey(engine), "", *problem, *dims)
               .ok()) {
        continue;
      }
      const EmittedCommand e = EmitCommand(engine, d.plan, d.context);
      ASSERT_FALSE(e.refused) << d.plan.ShortDebugString();
      const std::string label =
          absl::StrCat("plan ", i, " (", d.context.model_name, " on ",
                       d.cluster.ShortDebugString(), ", ", EngineKey(engine),
                       "): ", d.plan.ShortDebugString());
      const absl::StatusOr<simulator::CalibrationProfile> profile =
          simulator::FindCalibrationProfile(EngineKey(engine));
      ASSERT_TRUE(profile.ok());
      absl::StatusOr<std::unique_ptr<const simulator::CostModel>> cost =
          simulator::CostModel::Create(*problem, profile->calibration);
      ASSERT_TRUE(cost.ok()) << cost.status();
      bool priced_gather = false, priced_a2a = false, priced_reduce = false;
      for (const auto& r :
           simulator::internal::CostModelInspector::LayerCollectives(
               **cost, *dims, /*moe_layer=*/true, /*decode=*/true, 64)) {
        if (r.op == simulator::OpKind::kExpertDown) {
          priced_a2a |= r.kind == simulator::internal::Collective::kAllToAll;
          priced_reduce |=
              r.kind == simulator::internal::Collective::kAllReduce;
        }
        if (r.op != simulator::OpKind::kExpertUp) continue;
        priced_gather |= r.kind == simulator::internal::Collective::kAllGather;
        priced_a2a |= r.kind == simulator::internal::Collective::kAllToAll;
      }
      const std::string& text = e.command;
      if (engine == Engine::kVllm) {
        // vLLM's DP ranks: the plan's dp, times tp under batch-split
        // attention (the emitter's DP attention). With one DP rank vLLM runs
        // no dispatch at all (its MoE layer all-reduces over the TP group).
        const bool launch_deepep = absl::StrContains(text, "deepep_");
        const bool launch_nvlink = absl::StrContains(text, "flashinfer_");
        const bool launch_dp = absl::StrContains(text, "--data-parallel-size ");
        if (!launch_dp) {
          // One DP rank: vLLM's all-to-all kernels are off whatever
          // --all2all-backend says (use_all2all_kernels needs dp_size > 1);
          // every rank runs its experts on all tokens and the outputs are
          // all-reduced over the TP group.
          ++single_rank;
          EXPECT_FALSE(priced_gather || priced_a2a)
              << label << ": one DP rank dispatches nothing, the prediction "
              << "prices " << (priced_a2a ? "an all-to-all" : "an all-gather");
          EXPECT_TRUE(priced_reduce)
              << label << ": the experts' outputs are all-reduced";
          continue;
        }
        ++checked;
        gathers += !launch_deepep && !launch_nvlink;
        deepep += launch_deepep;
        nvlink += launch_nvlink;
        EXPECT_EQ(priced_gather, !launch_deepep && !launch_nvlink)
            << label << ": the launch runs "
            << (launch_deepep   ? "DeepEP"
                : launch_nvlink ? "FlashInfer's NVLink all-to-all"
                                : "the default all-gather/reduce-scatter")
            << ", the prediction prices "
            << (priced_gather ? "an all-gather" : "an all-to-all");
        EXPECT_EQ(priced_a2a, launch_deepep || launch_nvlink) << label;
      } else {
        // SGLang under DP attention: DeepEP where the launch selects it,
        // else an all-gather of the DP ranks' tokens. Without DP attention
        // every rank holds all tokens, the launch selects no all-to-all
        // backend and the experts' outputs are all-reduced over the TP
        // group (as in vLLM with one DP rank).
        const bool launch_deepep =
            absl::StrContains(text, "--moe-a2a-backend deepep") ||
            absl::StrContains(text, "--enable-deepep-moe");
        if (!absl::StrContains(text, "--enable-dp-attention")) {
          ++sglang_single_rank;
          EXPECT_FALSE(launch_deepep)
              << label << ": DeepEP launched without DP attention";
          EXPECT_FALSE(priced_gather || priced_a2a)
              << label << ": without DP attention nothing is dispatched, the "
              << "prediction prices "
              << (priced_a2a ? "an all-to-all" : "an all-gather");
          EXPECT_TRUE(priced_reduce)
              << label << ": the experts' outputs are all-reduced";
          continue;
        }
        ++checked;
        EXPECT_EQ(priced_a2a, launch_deepep)
            << label << ": launched " << (launch_deepep ? "with" : "without")
            << " DeepEP, priced as "
            << (priced_a2a ? "an all-to-all" : "an all-gather");
        EXPECT_EQ(priced_gather, !launch_deepep) << label;
      }
    }
  }
  EXPECT_GT(checked, 20);
  EXPECT_GT(gathers, 3);
  EXPECT_GT(deepep, 3);
  EXPECT_GT(nvlink, 3);
  EXPECT_GT(single_rank, 3);
  EXPECT_GT(sglang_single_rank, 3);
  RecordProperty("checked", checked);
}

}  // namespace
}  // namespace shardplan::client
