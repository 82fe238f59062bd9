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
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/emit.h"
#include "client/emit/emit_internal.h"
#include "client/engine_flags.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policy/searcher.h"
#include "simulator/calibration.h"
#include "simulator/cost_model.h"
#include "simulator/engine_capability.h"
#include "simulator/internal/cost_layers.h"
#include "simulator/spec.h"
#include "simulator/spec_catalog.h"
#include "simulator/spec_to_proto.h"
#include "tests/client/emit_plan_generator.h"
#include "tests/client/emit_test_util.h"

namespace shardplan::client {
namespace {

using shardplan::v1::Plan;
using ::testing::HasSubstr;
using ::testing::Not;

// The lines of a launch script that are not comments and hold `needle`.
std::vector<std::string> CommandLinesWith(const std::string& script,
                                          const std::string& needle) {
  std::vector<std::string> out;
  for (absl::string_view line : absl::StrSplit(script, '\n')) {
    if (!absl::StartsWith(absl::StripLeadingAsciiWhitespace(line), "#") &&
        absl::StrContains(line, needle)) {
      out.emplace_back(line);
    }
  }
  return out;
}

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

// Whether `dims` is a layout `engine` launches as planned, judged here apart
// from the table the search uses: inside a group of more than one rank every
// operator split the Megatron way, or qkv, attention and attn_out all three
// batch-split on an engine running data-parallel attention for the model
// (SGLang for every model, vLLM and TensorRT-LLM for MoE models). "" or the
// first operator that is not.
std::string Unexpressible(const simulator::ModelDims& m, Engine engine,
                          const simulator::ShardDims& dims, int tp, int dp,
                          int ep) {
  using simulator::OpKind;
  using simulator::ShardDim;
  const simulator::ShardDims megatron = simulator::MegatronShardDims();
  auto dim = [&](OpKind op) { return dims[static_cast<int>(op)]; };
  const bool batch_attention = dim(OpKind::kQkv) == ShardDim::kBatch &&
                               dim(OpKind::kAttention) == ShardDim::kBatch &&
                               dim(OpKind::kAttnOut) == ShardDim::kBatch;
  const bool dp_attention =
      batch_attention && (m.is_moe() || engine == Engine::kSglang);
  for (int o = 0; o < simulator::kNumOpKinds; ++o) {
    const OpKind op = static_cast<OpKind>(o);
    const bool expert = op == OpKind::kExpertUp || op == OpKind::kExpertDown;
    const int group = expert ? dp * tp / std::max(1, ep) : tp;
    if (group <= 1 || dims[o] == megatron[o]) continue;
    const bool attention = op == OpKind::kQkv || op == OpKind::kAttention ||
                           op == OpKind::kAttnOut;
    if (attention && dp_attention) continue;
    return absl::StrCat(simulator::OpKindName(op), "=",
                        simulator::ShardDimName(dims[o]));
  }
  return "";
}

class StreamedPlans : public policy::SearchObserver {
 public:
  void OnImprovement(const policy::Improvement& improvement) override {
    plans.push_back(improvement.best.plan);
  }
  std::vector<simulator::PlanDims> plans;
};

// The plans an anneal search of `problem` streams, then its elite and best;
// the search's error when it finds none (e.g. no layout the engine runs).
absl::StatusOr<std::vector<simulator::PlanDims>> SearchedPlans(
    const simulator::Problem& problem, int max_evaluations, uint32_t seed) {
  auto model = simulator::CostModel::Create(problem);
  if (!model.ok()) return model.status();
  auto searcher = policy::CreateSearcher("anneal");
  if (!searcher.ok()) return searcher.status();
  policy::SearchOptions options;
  options.max_evaluations = max_evaluations;
  options.max_seconds = 30;
  options.seed = seed;
  policy::CancellationToken cancel;
  StreamedPlans observer;
  absl::StatusOr<policy::SearchResult> r =
      (*searcher)->Search(**model, options, cancel, observer);
  if (!r.ok()) return r.status();
  std::vector<simulator::PlanDims> all = observer.plans;
  for (const policy::ScoredPlan& s : r->elite) all.push_back(s.plan);
  all.push_back(r->best.plan);
  return all;
}

// Plans that run as planned: over seeded problems (the generator's models
// and clusters), a search naming each engine streams only operator layouts
// that engine launches, and their launch warns of no operator it shards
// otherwise. The layouts the engines cannot launch stay in the space of a
// request that names none (the next test).
TEST(EmitCapabilityTest, SearchNamingAnEngineStreamsOnlyLayoutsItLaunches) {
  std::mt19937 rng(20261129);
  int searched = 0, plans = 0, dp_attention = 0;
  for (int i = 0; i < 10; ++i) {
    Drawn d = Draw(rng);
    for (Engine engine : {Engine::kVllm, Engine::kSglang, Engine::kTrtllm}) {
      const absl::StatusOr<simulator::Problem> problem =
          ProblemOf(d, EngineKey(engine));
      ASSERT_TRUE(problem.ok()) << problem.status();
      const absl::StatusOr<std::vector<simulator::PlanDims>> all =
          SearchedPlans(*problem, 150, 1 + i);
      // No plan the engine can launch (e.g. a KV-cache dtype it lacks).
      if (!all.ok()) continue;
      ++searched;
      const simulator::ModelDims& m = problem->model;
      for (const simulator::PlanDims& plan : *all) {
        const std::string label =
            absl::StrCat(d.context.model_name, " on ",
                         d.cluster.ShortDebugString(), ", ", EngineKey(engine),
                         ": ", PlanToProto(plan, *problem).ShortDebugString());
        EXPECT_EQ(
            Unexpressible(m, engine, plan.dims, plan.tp, plan.dp, plan.ep), "")
            << label;
        if (plan.disaggregated) {
          EXPECT_EQ(Unexpressible(m, engine, plan.prefill.dims, plan.prefill.tp,
                                  plan.prefill.dp, plan.prefill.ep),
                    "")
              << label;
        }
        dp_attention +=
            plan.tp > 1 &&
            plan.dims[static_cast<int>(simulator::OpKind::kAttention)] ==
                simulator::ShardDim::kBatch;
        ++plans;
        EmitContext context = d.context;
        context.runnable_engines = {EngineKey(engine)};
        const emit_internal::Built built = emit_internal::Build(
            engine, simulator::PlanToProto(plan, *problem), context, false);
        if (built.refused || !built.ok) continue;
        for (const std::string& w : built.script.warnings) {
          EXPECT_THAT(w, Not(HasSubstr("cannot express"))) << label;
          EXPECT_THAT(w, Not(HasSubstr("has no data-parallel attention")))
              << label;
        }
      }
    }
  }
  EXPECT_GT(searched, 15);
  EXPECT_GT(plans, 100);
  RecordProperty("searched", searched);
  RecordProperty("plans", plans);
  RecordProperty("dp_attention_plans", dp_attention);
}

// A request naming no engine keeps every operator layout: the search may
// still pick a split no engine launches (priced as planned), and did on the
// problem where named-engine searches used to (Qwen3.5-397B-A17B on 16 B200).
TEST(EmitCapabilityTest, EngineAgnosticSearchKeepsTheOtherLayouts) {
  shardplan::v1::ModelSource source;
  source.set_catalog_name("qwen3.5-397b-a17b");
  shardplan::v1::ClusterSpec cluster;
  cluster.set_hardware("b200-sxm-180gb");
  cluster.set_num_gpus(16);
  shardplan::v1::Workload workload;
  workload.set_input_tokens(1024);
  workload.set_output_tokens(1024);
  int other = 0;
  for (const std::string engine : {"", "vllm", "sglang", "trtllm"}) {
    workload.set_engine(engine);
    const absl::StatusOr<simulator::Problem> problem =
        simulator::ProblemFromProto(source, cluster, workload);
    ASSERT_TRUE(problem.ok()) << problem.status();
    const absl::StatusOr<std::vector<simulator::PlanDims>> all =
        SearchedPlans(*problem, 600, 1);
    ASSERT_TRUE(all.ok()) << all.status();
    int found = 0;
    for (const simulator::PlanDims& plan : *all) {
      // Under the most permissive engine's rules (SGLang: DP attention for
      // every model).
      found += Unexpressible(problem->model, Engine::kSglang, plan.dims,
                             plan.tp, plan.dp, plan.ep) != "";
    }
    if (engine.empty()) {
      EXPECT_GT(found, 0) << "no plan of another layout among " << all->size();
      other = found;
    } else {
      EXPECT_EQ(found, 0) << engine;
    }
  }
  RecordProperty("engine_agnostic_other_layouts", other);
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

// The Blackwell GPUs and the 2026 models on every engine: for each GPU x
// model x engine x KV-cache dtype (FP8, FP4) and a set of layouts (tp 8 and
// tp 16 with DP attention and experts over the group, tp 8 x pp 2, attention
// DP 8 x pp 2, attention DP 2 x TP 4, wide EP
// over 64 GPUs (16 trays of one NVL72 NVLink domain, or 4 B200/B300 nodes on
// InfiniBand) and a disaggregated 1P1D), the engine either launches the
// plan, with a prediction that has p10-p90 ranges, every flag in its newest
// flag table (client/engines/<engine>.yaml, which cites its source) and the
// KV cache the prediction sized, or refuses it by a capability rule that
// cites its source, and the launch is refused with that reason. Every
// combination has a layout that is launched and fits with an FP8 cache; with
// an FP4 cache, exactly the models whose attention the engine keeps no FP4
// cache for are refused, by the rule that no layout avoids (also where a
// layout rule matches too).
TEST(EmitCapabilityTest, EveryBlackwellGpuModelAndEngineLaunchesOrRefuses) {
  const std::vector<std::string> kHardware = {
      "b200-sxm-180gb", "b300-sxm-288gb", "gb200-nvl72", "gb300-nvl72"};
  const std::vector<std::string> kModels = {"kimi-k2.5", "glm-5",
                                            "qwen3.5-397b-a17b", "minimax-m2.5",
                                            "deepseek-v3.2"};
  // FP4 KV caches no release checked keeps (capabilities.yaml): vLLM's and
  // TensorRT-LLM's MLA attention, SGLang's DeepSeek sparse attention.
  const std::map<std::string, std::string> kFp4Refusals = {
      {"vllm/kimi-k2.5", "vllm-kv-fp4-mla"},
      {"vllm/glm-5", "vllm-kv-fp4-mla"},
      {"vllm/deepseek-v3.2", "vllm-kv-fp4-mla"},
      {"trtllm/kimi-k2.5", "trtllm-kv-fp4-mla"},
      {"trtllm/glm-5", "trtllm-kv-fp4-mla"},
      {"trtllm/deepseek-v3.2", "trtllm-kv-fp4-mla"},
      {"sglang/glm-5", "sglang-kv-fp4-sparse-attention"},
      {"sglang/deepseek-v3.2", "sglang-kv-fp4-sparse-attention"},
  };
  auto layout = [](int dp, int tp, int pp, int ep, int batch,
                   bool dp_attention) {
    return MakePlan(1, dp, tp, pp, ep, batch, dp_attention);
  };
  std::map<std::string, int> launched_and_fits;  // hw/model/engine/kv
  int launches = 0, refusals = 0, nvlink_wide = 0, infiniband_wide = 0;
  for (const std::string& hw_name : kHardware) {
    const absl::StatusOr<shardplan::v1::HardwareSpec> hw =
        simulator::FindCatalogHardware(hw_name);
    ASSERT_TRUE(hw.ok()) << hw.status();
    const bool rack = hw->nvlink_domain_gpus() > hw->default_gpus_per_node();
    struct Layout {
      std::string name;
      Plan plan;
      int gpus;
      bool wide;
    };
    const std::vector<Layout> layouts = {
        {"tp8-dpattn", layout(1, 8, 1, 8, 256, true), 8, false},
        {"tp16-dpattn", layout(1, 16, 1, 16, 512, true), 16, false},
        {"tp8-pp2", layout(1, 8, 2, 8, 256, false), 16, false},
        // Layouts some engine cannot run whatever the model: attention DP
        // with pp (vLLM, SGLang), attention DP 2 x TP 4 (TensorRT-LLM).
        {"dp8-pp2", layout(8, 1, 2, 8, 512, false), 16, false},
        {"dp2-tp4", layout(2, 4, 1, 8, 256, false), 8, false},
        rack ? Layout{"wide-ep64", layout(1, 64, 1, 64, 2048, true), 64, true}
             : Layout{"wide-ep32", layout(1, 32, 1, 32, 1024, true), 32, true},
        {"1p1d",
         Disaggregated(layout(1, 8, 1, 8, 16, true), 1,
                       layout(1, 16, 1, 16, 512, true), 1),
         24, false},
    };
    for (const std::string& model_name : kModels) {
      const absl::StatusOr<shardplan::v1::ModelSpec> spec =
          simulator::FindCatalogModel(model_name);
      ASSERT_TRUE(spec.ok()) << spec.status();
      for (const char* kv : {"fp8", "fp4"}) {
        for (const Layout& l : layouts) {
          // The cluster the plan fills, nodes and NVLink domain left to the
          // hardware's defaults (cluster.nvlinkDomainGpus unset).
          shardplan::v1::ClusterSpec cluster;
          cluster.set_hardware(hw_name);
          cluster.set_num_gpus(l.gpus);
          shardplan::v1::ModelSource source;
          source.set_catalog_name(model_name);
          const absl::StatusOr<simulator::PlanDims> dims =
              simulator::PlanDimsFromProto(l.plan);
          ASSERT_TRUE(dims.ok()) << dims.status();
          for (Engine engine :
               {Engine::kVllm, Engine::kSglang, Engine::kTrtllm}) {
            const std::string key = EngineKey(engine);
            const std::string label =
                absl::StrCat(model_name, " on ", l.gpus, " x ", hw_name, ", ",
                             l.name, ", KV ", kv, ", ", key);
            shardplan::v1::Workload workload;
            workload.set_input_tokens(1024);
            workload.set_output_tokens(1024);
            workload.set_kv_cache_dtype(kv);
            workload.set_engine(key);
            const absl::StatusOr<simulator::Problem> problem =
                simulator::ProblemFromProto(source, cluster, workload);
            ASSERT_TRUE(problem.ok()) << label << ": " << problem.status();
            // The NVLink domain: the rack's on NVL72 (0 in the catalog for
            // B200/B300: the node).
            EXPECT_EQ(problem->cluster.nvlink_domain_gpus,
                      rack ? hw->nvlink_domain_gpus()
                           : problem->cluster.gpus_per_node)
                << label;
            // The prediction the server streams (EvaluatePlan): the
            // engine's profile, ranges, and the engines that can run it.
            const absl::StatusOr<simulator::CalibrationProfile> profile =
                simulator::FindCalibrationProfile(
                    problem->workload.calibration_profile);
            ASSERT_TRUE(profile.ok()) << label << ": " << profile.status();
            absl::StatusOr<std::unique_ptr<const simulator::CostModel>> cost =
                simulator::CostModel::Create(*problem, profile->calibration);
            ASSERT_TRUE(cost.ok()) << label << ": " << cost.status();
            ASSERT_TRUE((*cost)->ValidatePlan(*dims).ok())
                << label << ": " << (*cost)->ValidatePlan(*dims);
            shardplan::v1::Prediction prediction = simulator::PredictionToProto(
                (*cost)->Evaluate(*dims), (*cost)->problem());
            simulator::AnnotateEngineCapability(*problem, *dims, &prediction);
            const absl::Status can =
                simulator::CheckEngineCanRun(key, "", *problem, *dims);
            const auto runnable = prediction.runnable_engines();
            EXPECT_EQ(std::find(runnable.begin(), runnable.end(), key) !=
                          runnable.end(),
                      can.ok())
                << label;
            // What --emit is given (client/main.cc, EmitContextFor): the
            // resolved ModelSpec and the catalog's hardware.
            EmitContext c;
            c.model_name = model_name;
            c.hugging_face_id = spec->hugging_face_id();
            c.native_dtype = spec->native_dtype();
            c.nvfp4_hugging_face_id = spec->nvfp4_hugging_face_id();
            c.is_moe = spec->num_experts() > 0;
            c.sparse_mla = spec->index_topk() > 0 && spec->kv_lora_rank() > 0;
            c.mla = spec->kv_lora_rank() > 0;
            c.kv_cache_dtype = kv;
            c.gpus_per_node = hw->default_gpus_per_node();
            c.nvlink_domain_gpus = hw->nvlink_domain_gpus();
            c.fp4_tensor_cores = hw->peak_fp4_flops_per_s() > 0;
            c.num_gpus = l.gpus;
            c.batch_fallback = prediction.batch_per_rank();
            c.runnable_engines.assign(runnable.begin(), runnable.end());
            if (absl::StrContains(prediction.infeasible_reason(),
                                  "cannot run this plan: rule")) {
              c.capability_reason = prediction.infeasible_reason();
            }
            const std::string combo =
                absl::StrCat(hw_name, "/", model_name, "/", key, "/", kv);
            const EmittedCommand e = EmitCommand(engine, l.plan, c);
            if (!can.ok()) {
              ++refusals;
              // A rule that cites its source; the prediction says it, and
              // the launch is refused with it.
              EXPECT_THAT(std::string(can.message()),
                          HasSubstr("cannot run this plan: rule "))
                  << label;
              EXPECT_THAT(std::string(can.message()), HasSubstr("https://"))
                  << label;
              EXPECT_FALSE(prediction.feasible()) << label;
              EXPECT_EQ(prediction.infeasible_reason(), can.message()) << label;
              EXPECT_TRUE(e.refused) << label;
              ASSERT_FALSE(e.warnings.empty()) << label;
              EXPECT_THAT(e.warnings[0], HasSubstr(std::string(can.message())))
                  << label;
              const auto fp4 = kFp4Refusals.find(key + "/" + model_name);
              if (std::string(kv) == "fp4" && fp4 != kFp4Refusals.end()) {
                // No layout avoids it, so it is the reason given.
                EXPECT_THAT(std::string(can.message()),
                            HasSubstr("rule " + fp4->second + ","))
                    << label;
              }
              continue;
            }
            ++launches;
            // FP4 tensor cores: the NVFP4 checkpoint where the catalog names
            // one (Kimi-K2.5), never its INT4 release.
            if (!spec->nvfp4_hugging_face_id().empty()) {
              EXPECT_FALSE(
                  CommandLinesWith(e.command, spec->nvfp4_hugging_face_id())
                      .empty())
                  << label;
              EXPECT_THAT(
                  CommandLinesWith(e.command, spec->hugging_face_id() + " "),
                  ::testing::IsEmpty())
                  << label;
            }
            EXPECT_FALSE(std::string(kv) == "fp4" &&
                         kFp4Refusals.count(key + "/" + model_name) > 0)
                << label << ": launched an FP4 KV cache the engine keeps not";
            EXPECT_FALSE(e.refused) << label << ": " << e.warnings[0];
            const absl::StatusOr<EngineVersion> ev =
                FindEngineVersion(engine, "");
            ASSERT_TRUE(ev.ok());
            ExpectKnownFlags(e.command, *ev, label);
            // The KV cache the prediction sized is the one launched.
            const std::string kv_value =
                emit_internal::KvCacheValue(engine, *ev, c, nullptr);
            EXPECT_NE(kv_value, "") << label;
            EXPECT_THAT(e.command,
                        HasSubstr(engine == Engine::kTrtllm
                                      ? "dtype: " + kv_value
                                      : "--kv-cache-dtype " + kv_value))
                << label;
            if (l.wide) {
              // Wide EP: the engines' multi-node NVLink all-to-all inside
              // the rack, DeepEP's InfiniBand kernels between B200/B300
              // nodes (vLLM; SGLang runs DeepEP for both; TensorRT-LLM's
              // newest release picks its own, AUTO).
              if (engine == Engine::kVllm) {
                EXPECT_THAT(e.command, HasSubstr(rack ? "--all2all-backend "
                                                        "flashinfer_all2allv"
                                                      : "--all2all-backend "
                                                        "deepep_low_latency"))
                    << label;
              } else if (engine == Engine::kSglang) {
                EXPECT_THAT(e.command, HasSubstr("--moe-a2a-backend deepep"))
                    << label;
              } else {
                EXPECT_THAT(e.command, Not(HasSubstr("WIDEEP"))) << label;
              }
              nvlink_wide += rack;
              infiniband_wide += !rack;
            }
            if (!prediction.feasible()) continue;  // e.g. weights do not fit
            // p10-p90 ranges around each figure.
            EXPECT_LT(prediction.output_tokens_per_s_range().low(),
                      prediction.output_tokens_per_s_range().high())
                << label;
            EXPECT_LE(prediction.output_tokens_per_s_range().low(),
                      prediction.output_tokens_per_s())
                << label;
            EXPECT_GE(prediction.output_tokens_per_s_range().high(),
                      prediction.output_tokens_per_s())
                << label;
            EXPECT_LE(prediction.ttft_ms_range().low(), prediction.ttft_ms())
                << label;
            EXPECT_GE(prediction.ttft_ms_range().high(), prediction.ttft_ms())
                << label;
            EXPECT_LE(prediction.tpot_ms_range().low(), prediction.tpot_ms())
                << label;
            EXPECT_GE(prediction.tpot_ms_range().high(), prediction.tpot_ms())
                << label;
            EXPECT_EQ(prediction.calibration_profile(),
                      problem->workload.calibration_profile)
                << label;
            ++launched_and_fits[combo];
          }
        }
      }
    }
  }
  // Each combination launches somewhere with an FP8 cache, and with an FP4
  // one unless its engine keeps none for the model's attention.
  for (const std::string& hw : kHardware) {
    for (const std::string& model : kModels) {
      for (Engine engine : {Engine::kVllm, Engine::kSglang, Engine::kTrtllm}) {
        const std::string key = EngineKey(engine);
        EXPECT_GT(
            launched_and_fits[absl::StrCat(hw, "/", model, "/", key, "/fp8")],
            0)
            << hw << " " << model << " " << key << " FP8 KV: no layout";
        const bool fp4_refused = kFp4Refusals.count(key + "/" + model) > 0;
        EXPECT_EQ(
            launched_and_fits[absl::StrCat(hw, "/", model, "/", key, "/fp4")] >
                0,
            !fp4_refused)
            << hw << " " << model << " " << key << " FP4 KV";
      }
    }
  }
  EXPECT_GT(refusals, 0);
  EXPECT_GT(nvlink_wide, 0);
  EXPECT_GT(infiniband_wide, 0);
  RecordProperty("launches", launches);
  RecordProperty("refusals", refusals);
}

// Kimi-K2.5 on every engine, on Hopper and on B200: what is launched is what
// the prediction prices. B200 (FP4 tensor cores, fp4 weights priced at the
// NVFP4 rate): NVIDIA's NVFP4 checkpoint on every engine, no quantization
// flag (each engine reads the ModelOpt config). H100 (fp4 weights priced as
// weight-only dequantising kernels at the BF16 rate): the release's INT4
// W4A16 checkpoint, which vLLM and SGLang run on Marlin kernels and
// TensorRT-LLM cannot load, so the server lists no TensorRT-LLM and its
// launch is refused naming the rule.
TEST(EmitCapabilityTest, KimiLaunchesTheCheckpointItIsPricedFor) {
  const absl::StatusOr<shardplan::v1::ModelSpec> catalog =
      simulator::FindCatalogModel("kimi-k2.5");
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  const std::string int4 = catalog->hugging_face_id();
  const std::string nvfp4 = catalog->nvfp4_hugging_face_id();
  EXPECT_EQ(int4, "moonshotai/Kimi-K2.5");
  EXPECT_EQ(nvfp4, "nvidia/Kimi-K2.5-NVFP4");
  // Two replicas of tp 8 with DP attention and experts over the group.
  const Plan plan = MakePlan(2, 1, 8, 1, 8, 256, true);
  const absl::StatusOr<simulator::PlanDims> dims =
      simulator::PlanDimsFromProto(plan);
  ASSERT_TRUE(dims.ok()) << dims.status();
  for (const std::string hw_name : {"h100-sxm-80gb", "b200-sxm-180gb"}) {
    const absl::StatusOr<shardplan::v1::HardwareSpec> hw =
        simulator::FindCatalogHardware(hw_name);
    ASSERT_TRUE(hw.ok()) << hw.status();
    const bool fp4_cores = hw->peak_fp4_flops_per_s() > 0;
    shardplan::v1::ClusterSpec cluster;
    cluster.set_hardware(hw_name);
    cluster.set_num_gpus(16);
    shardplan::v1::ModelSource source;
    source.set_catalog_name("kimi-k2.5");
    for (Engine engine : {Engine::kVllm, Engine::kSglang, Engine::kTrtllm}) {
      const std::string key = EngineKey(engine);
      const std::string label = absl::StrCat(hw_name, " ", key);
      shardplan::v1::Workload workload;
      workload.set_input_tokens(1024);
      workload.set_output_tokens(1024);
      workload.set_kv_cache_dtype("fp8");
      workload.set_engine(key);
      const absl::StatusOr<simulator::Problem> problem =
          simulator::ProblemFromProto(source, cluster, workload);
      ASSERT_TRUE(problem.ok()) << label << ": " << problem.status();
      absl::StatusOr<std::unique_ptr<const simulator::CostModel>> cost =
          simulator::CostModel::Create(*problem);
      ASSERT_TRUE(cost.ok()) << label << ": " << cost.status();
      shardplan::v1::Prediction prediction = simulator::PredictionToProto(
          (*cost)->Evaluate(*dims), (*cost)->problem());
      simulator::AnnotateEngineCapability(*problem, *dims, &prediction);
      // What --emit is given: EvaluatePlan's resolved ModelSpec (built from
      // the problem, as the server does) and the catalog's hardware.
      const shardplan::v1::ModelSpec spec =
          simulator::ModelSpecFromDims(problem->model);
      EmitContext c;
      c.model_name = "kimi-k2.5";
      c.hugging_face_id = spec.hugging_face_id();
      c.native_dtype = spec.native_dtype();
      c.nvfp4_hugging_face_id = spec.nvfp4_hugging_face_id();
      c.is_moe = true;
      c.mla = spec.kv_lora_rank() > 0;
      c.kv_cache_dtype = "fp8";
      c.gpus_per_node = hw->default_gpus_per_node();
      c.fp4_tensor_cores = fp4_cores;
      c.num_gpus = 16;
      c.batch_fallback = prediction.batch_per_rank();
      c.runnable_engines.assign(prediction.runnable_engines().begin(),
                                prediction.runnable_engines().end());
      if (absl::StrContains(prediction.infeasible_reason(),
                            "cannot run this plan: rule")) {
        c.capability_reason = prediction.infeasible_reason();
      }
      const EmittedCommand e = EmitCommand(engine, plan, c);
      if (!fp4_cores && engine == Engine::kTrtllm) {
        EXPECT_FALSE(prediction.feasible()) << label;
        EXPECT_THAT(prediction.infeasible_reason(),
                    HasSubstr("rule trtllm-kimi-int4-checkpoint,"))
            << label;
        EXPECT_TRUE(e.refused) << label;
        ASSERT_FALSE(e.warnings.empty()) << label;
        EXPECT_THAT(e.warnings[0], HasSubstr("trtllm-kimi-int4-checkpoint"))
            << label;
        EXPECT_EQ(e.command, "") << label;
        continue;
      }
      ASSERT_FALSE(e.refused) << label << ": " << e.warnings[0];
      const std::string launched = fp4_cores ? nvfp4 : int4;
      const std::string other = fp4_cores ? int4 : nvfp4;
      // The engine's model argument and the benchmark's --model.
      EXPECT_GE(CommandLinesWith(e.command, launched).size(), 2u) << label;
      EXPECT_THAT(CommandLinesWith(e.command, other + " "),
                  ::testing::IsEmpty())
          << label << "\n"
          << e.command;
      EXPECT_THAT(CommandLinesWith(e.command, "quantization"),
                  ::testing::IsEmpty())
          << label;
      EXPECT_THAT(e.command, HasSubstr(fp4_cores ? "NVIDIA's NVFP4 checkpoint"
                                                 : "weight-only kernels"))
          << label;
      EXPECT_TRUE(e.warnings.empty())
          << label << ": " << absl::StrJoin(e.warnings, "; ");
    }
  }
}

}  // namespace
}  // namespace shardplan::client
