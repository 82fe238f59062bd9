// Engine capability rules (simulator/engine_capability.h): the compiled-in
// table parses, each rule blocks the layout it names (and not its neighbour),
// versions select rules, and the Megatron baseline avoids blocked layouts.
#include "simulator/engine_capability.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/cost_model.h"
#include "simulator/megatron.h"
#include "simulator/spec.h"

namespace shardplan::simulator {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Problem MakeProblem(const std::string& model, int gpus = 8,
                    int gpus_per_node = 8, const std::string& engine = "",
                    const std::string& version = "",
                    const std::string& dtype = "",
                    const std::string& hardware = "h100-sxm-80gb") {
  shardplan::v1::ModelSource source;
  source.set_catalog_name(model);
  shardplan::v1::ClusterSpec cluster;
  cluster.set_hardware(hardware);
  cluster.set_num_gpus(gpus);
  cluster.set_gpus_per_node(gpus_per_node);
  shardplan::v1::Workload workload;
  workload.set_input_tokens(1024);
  workload.set_output_tokens(256);
  workload.set_concurrency(16);
  workload.set_weight_dtype(dtype);
  workload.set_engine(engine);
  workload.set_engine_version(version);
  absl::StatusOr<Problem> p = ProblemFromProto(source, cluster, workload);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : Problem();
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

// `prefill_instances` prefill instances of (dp, tp, pp, ep) = `pre`, and
// `decode_instances` decode instances of `dec`.
PlanDims Disagg(int prefill_instances, PlanDims pre, int decode_instances,
                PlanDims dec) {
  PlanDims p = dec;
  p.replicas = 1;
  p.disaggregated = true;
  p.prefill_instances = prefill_instances;
  p.decode_instances = decode_instances;
  p.prefill.dp = pre.dp;
  p.prefill.tp = pre.tp;
  p.prefill.pp = pre.pp;
  p.prefill.ep = pre.ep;
  return p;
}

void BatchSplitAttention(ShardDims& dims) {
  for (OpKind op : {OpKind::kQkv, OpKind::kAttention, OpKind::kAttnOut}) {
    dims[static_cast<int>(op)] = ShardDim::kBatch;
  }
}

// Expects `engine` at `version` to refuse `plan` by rule `id`, citing
// `source`.
void ExpectBlocked(const std::string& engine, const std::string& version,
                   const Problem& p, const PlanDims& plan,
                   const std::string& id, const std::string& source) {
  const absl::Status s = CheckEngineCanRun(engine, version, p, plan);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("rule " + id + ","));
  EXPECT_THAT(s.message(), HasSubstr(source));
}

void ExpectRuns(const std::string& engine, const std::string& version,
                const Problem& p, const PlanDims& plan) {
  const absl::Status s = CheckEngineCanRun(engine, version, p, plan);
  EXPECT_TRUE(s.ok()) << s;
}

// Expects `engine` to refuse `plan` by rule `id` (citing `source`) at
// `last_blocked`, and to run it from `first_running` and in the newest release.
void ExpectBlockedUntil(const std::string& engine,
                        const std::string& last_blocked,
                        const std::string& first_running, const Problem& p,
                        const PlanDims& plan, const std::string& id,
                        const std::string& source) {
  ExpectBlocked(engine, last_blocked, p, plan, id, source);
  ExpectRuns(engine, first_running, p, plan);
  ExpectRuns(engine, "", p, plan);
}

TEST(EngineCapabilityTest, CompiledTableParsesWithSourcesForEveryRule) {
  const std::vector<EngineRule>& rules = EngineRules();
  ASSERT_GE(rules.size(), 13u);
  for (const EngineRule& r : rules) {
    EXPECT_FALSE(r.sources.empty()) << r.id;
    for (const std::string& s : r.sources) {
      EXPECT_THAT(s, HasSubstr("https://")) << r.id;
    }
    EXPECT_FALSE(r.when.empty()) << r.id;
  }
}

TEST(EngineCapabilityTest, BadTablesAreRefusedNamingTheField) {
  const char* kUnknownVariable = R"(rules:
  - id: x
    engine: vllm
    effect: block
    when: ["pipeline > 1"]
    message: m
    sources: [https://example.com]
)";
  absl::StatusOr<std::vector<EngineRule>> r =
      ParseEngineRules(kUnknownVariable);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("unknown variable"));
  const char* kNoSources = R"(rules:
  - id: x
    engine: vllm
    effect: block
    when: ["pp > 1"]
    message: m
)";
  r = ParseEngineRules(kNoSources);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("sources"));
  const char* kBadOp = R"(rules:
  - id: x
    engine: vllm
    effect: block
    when: ["pp => 1"]
    message: m
    sources: [https://example.com]
)";
  r = ParseEngineRules(kBadOp);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  const char* kUnknownEngine = R"(rules:
  - id: x
    engine: tgi
    effect: block
    when: ["pp > 1"]
    message: m
    sources: [https://example.com]
)";
  r = ParseEngineRules(kUnknownEngine);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(EngineCapabilityTest, VersionsCompareNumerically) {
  EXPECT_TRUE(VersionInRange("0.4.10", "0.4.9", ""));
  EXPECT_FALSE(VersionInRange("0.4.9", "", "0.4.9"));
  EXPECT_TRUE(VersionInRange("0.4.9", "", "0.4.10"));
  EXPECT_TRUE(VersionInRange("0.5.0rc1", "0.5.0", "0.5.1"));
  EXPECT_TRUE(VersionInRange("0.12", "0.12.0", ""));
  // The newest release is above every bound.
  EXPECT_TRUE(VersionInRange("", "0.12.0", ""));
  EXPECT_FALSE(VersionInRange("", "", "0.12.0"));
  EXPECT_TRUE(ValidateEngineVersion("1.1.0rc2", "v").ok());
  EXPECT_EQ(ValidateEngineVersion("latest", "workload.engine_version").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckEngineCanRun("tgi", "", MakeProblem("llama-3.1-8b"),
                              Agg(1, 8, 1, 1, 1))
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(EngineCapabilityTest, SglangPipelineWithDpAttention) {
  const Problem p = MakeProblem("deepseek-v3", 16, 8);
  ExpectBlocked("sglang", "", p, Agg(1, 8, 1, 2, 8),
                "sglang-pp-with-dp-attention", "sglang/issues/9805");
  ExpectRuns("sglang", "", p, Agg(1, 1, 8, 2, 8));
  // Batch-split attention inside a tp group is DP attention too.
  PlanDims split = Agg(1, 1, 8, 2, 8);
  BatchSplitAttention(split.dims);
  ExpectBlocked("sglang", "", p, split, "sglang-pp-with-dp-attention", "9805");
}

TEST(EngineCapabilityTest, SglangPipelineNeedsARecentRelease) {
  const Problem p = MakeProblem("llama-3.1-70b", 16, 8);
  ExpectBlocked("sglang", "0.4.9", p, Agg(1, 1, 8, 2, 1),
                "sglang-pp-before-0.4.10", "sglang/issues/4059");
  ExpectRuns("sglang", "0.4.10", p, Agg(1, 1, 8, 2, 1));
}

TEST(EngineCapabilityTest, SglangHybridLinearAttentionPipelineFrom0510) {
  // Qwen3.5 (Gated DeltaNet layers between full-attention ones) crashed
  // under pipeline parallelism in SGLang until PR 19670.
  const Problem qwen35 = MakeProblem("qwen3.5-397b-a17b", 16, 8);
  const PlanDims pp2 = Agg(1, 1, 8, 2, 8);
  ExpectBlockedUntil("sglang", "0.5.9", "0.5.10", qwen35, pp2,
                     "sglang-linear-attention-pp-before-0.5.10",
                     "sglang/pull/19670");
  ExpectRuns("sglang", "0.5.9", qwen35, Agg(2, 1, 8, 1, 8));
  // A full-attention Qwen model of the same family keeps its pipeline.
  ExpectRuns("sglang", "0.5.9", MakeProblem("qwen3-235b-a22b", 16, 8), pp2);
}

TEST(EngineCapabilityTest, SglangSparseAttentionWasDpAttentionOnlyBefore057) {
  // Before PR 13646 SGLang set dp_size = tp_size with DP attention for every
  // DeepSeek sparse-attention model, whatever the launch asked for.
  const Problem v32 = MakeProblem("deepseek-v3.2", 8, 8);
  for (const PlanDims& head_split : {Agg(1, 1, 8, 1, 8), Agg(1, 2, 4, 1, 8)}) {
    ExpectBlockedUntil(
        "sglang", "0.5.6", "0.5.7", v32, head_split,
        "sglang-sparse-attention-forces-dp-attention-before-0.5.7",
        "sglang/pull/13646");
  }
  // What those releases ran: DP attention over the whole group.
  ExpectRuns("sglang", "0.5.6", v32, Agg(1, 8, 1, 1, 8));
  PlanDims batch_split = Agg(1, 1, 8, 1, 8);
  BatchSplitAttention(batch_split.dims);
  ExpectRuns("sglang", "0.5.6", v32, batch_split);
  // Dense-attention DeepSeek-V3 keeps head-split attention there.
  ExpectRuns("sglang", "0.5.6", MakeProblem("deepseek-v3", 8, 8),
             Agg(1, 1, 8, 1, 8));
  // Other engines are not affected.
  ExpectRuns("vllm", "", v32, Agg(1, 1, 8, 1, 8));
}

TEST(EngineCapabilityTest, SglangDecodeServerWithPipeline) {
  const Problem p = MakeProblem("llama-3.1-70b", 16, 8);
  const PlanDims plan = Disagg(2, Agg(1, 1, 4, 1, 1), 1, Agg(1, 1, 4, 2, 1));
  ExpectBlocked("sglang", "", p, plan, "sglang-decode-pp",
                "sglang/issues/8424");
  // The same pools the other way round: a pipelined prefill server runs.
  ExpectRuns("sglang", "", p,
             Disagg(1, Agg(1, 1, 4, 2, 1), 2, Agg(1, 1, 4, 1, 1)));
}

TEST(EngineCapabilityTest, SglangPrefillPipelineBefore05) {
  const Problem p = MakeProblem("llama-3.1-70b", 16, 8);
  const PlanDims plan = Disagg(1, Agg(1, 1, 4, 2, 1), 2, Agg(1, 1, 4, 1, 1));
  ExpectBlocked("sglang", "0.4.10", p, plan, "sglang-prefill-pp-before-0.5",
                "sglang/pull/8846");
  ExpectRuns("sglang", "0.5.0", p, plan);
}

TEST(EngineCapabilityTest, SglangDisaggregationFrom046) {
  const Problem p = MakeProblem("llama-3.1-70b", 16, 8);
  const PlanDims plan = Disagg(2, Agg(1, 1, 4, 1, 1), 2, Agg(1, 1, 4, 1, 1));
  ExpectBlocked("sglang", "0.4.5", p, plan,
                "sglang-disaggregation-before-0.4.6", "sglang/issues/4655");
  ExpectRuns("sglang", "0.4.6", p, plan);
}

TEST(EngineCapabilityTest, SglangGptOssHasNoDpAttention) {
  const Problem p = MakeProblem("gpt-oss-120b", 4, 8);
  ExpectBlocked("sglang", "", p, Agg(1, 4, 1, 1, 4),
                "sglang-gpt-oss-dp-attention", "sglang/pull/9308");
  ExpectRuns("sglang", "", p, Agg(1, 1, 4, 1, 4));
  // Another MoE model with the same layout runs.
  ExpectRuns("sglang", "", MakeProblem("qwen3-235b-a22b", 8, 8, "", "", "fp8"),
             Agg(1, 8, 1, 1, 8));
}

TEST(EngineCapabilityTest, SglangServerMustSplitEvenlyOverItsNodes) {
  // 12 GPUs on nodes of 8: the last node is partial, so a 12-GPU server has
  // 8 GPUs on one node and 4 on the other.
  const Problem p = MakeProblem("llama-3.1-70b", 12, 8);
  ExpectBlocked("sglang", "", p, Agg(1, 1, 4, 3, 1), "sglang-uneven-nodes",
                "entrypoints/engine.py");
  // Three 4-GPU copies never span a node boundary unevenly (0-3, 4-7, 8-11).
  ExpectRuns("sglang", "", p, Agg(1, 3, 4, 1, 1));
  ExpectRuns("vllm", "", p, Agg(1, 1, 4, 3, 1));
  ExpectRuns("sglang", "", MakeProblem("llama-3.1-70b", 16, 8),
             Agg(1, 1, 8, 2, 1));
}

TEST(EngineCapabilityTest, SglangDeepEpWithBf16IsAWarningNotABlock) {
  const Problem p = MakeProblem("qwen3-235b-a22b", 16, 8, "sglang", "", "bf16");
  const PlanDims plan = Agg(1, 16, 1, 1, 16);
  ExpectRuns("sglang", "", p, plan);
  const std::vector<std::string> warnings =
      EngineWarnings("sglang", "", p, plan);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("sglang-deepep-bf16"));
  EXPECT_TRUE(
      EngineWarnings("sglang", "",
                     MakeProblem("qwen3-235b-a22b", 16, 8, "", "", "fp8"), plan)
          .empty());
}

TEST(EngineCapabilityTest, VllmNixlConnectorHasNoPipeline) {
  const Problem p = MakeProblem("llama-3.1-70b", 16, 8);
  ExpectBlocked("vllm", "", p,
                Disagg(1, Agg(1, 1, 4, 2, 1), 2, Agg(1, 1, 4, 1, 1)),
                "vllm-nixl-pp", "vllm/issues/52913");
  ExpectBlocked("vllm", "0.10.0", p,
                Disagg(2, Agg(1, 1, 4, 1, 1), 1, Agg(1, 1, 4, 2, 1)),
                "vllm-nixl-pp", "vllm/pull/53360");
  ExpectRuns("vllm", "", p,
             Disagg(2, Agg(1, 1, 4, 1, 1), 2, Agg(1, 1, 4, 1, 1)));
  // Pipeline parallelism without disaggregation runs.
  ExpectRuns("vllm", "", p, Agg(1, 1, 8, 2, 1));
}

TEST(EngineCapabilityTest, VllmExpertParallelIsTheWholeGroup) {
  const Problem p = MakeProblem("deepseek-v3", 8, 8);
  ExpectBlocked("vllm", "", p, Agg(1, 8, 1, 1, 4), "vllm-ep-size",
                "fused_moe/config.py");
  ExpectRuns("vllm", "", p, Agg(1, 8, 1, 1, 8));
  ExpectRuns("vllm", "", p, Agg(1, 1, 8, 1, 1));
  // SGLang takes any --ep-size dividing its tp-size.
  ExpectRuns("sglang", "", p, Agg(1, 8, 1, 1, 4));
}

TEST(EngineCapabilityTest, VllmDataParallelWithPipeline) {
  const Problem p = MakeProblem("deepseek-v3", 16, 8);
  ExpectBlocked("vllm", "", p, Agg(1, 8, 1, 2, 8), "vllm-dp-pp",
                "vllm/issues/27778");
  ExpectRuns("vllm", "", p, Agg(1, 1, 8, 2, 8));
  // Dense dp ranks are independent copies, not DP attention.
  ExpectRuns("vllm", "", MakeProblem("llama-3.1-70b", 16, 8),
             Agg(1, 2, 4, 2, 1));
}

TEST(EngineCapabilityTest, VllmRaySpanNeedsWholeNodesPerRank) {
  // Nodes of 6 GPUs: a DP rank of tp 8 takes one and a third nodes.
  const Problem six = MakeProblem("qwen3-235b-a22b", 16, 6, "", "", "fp8");
  ExpectBlocked("vllm", "", six, Agg(1, 2, 8, 1, 16),
                "vllm-ray-span-node-multiple", "vllm/v1/engine/utils.py");
  // Nodes of 4: two whole nodes per rank, which span packing places.
  const Problem four = MakeProblem("qwen3-235b-a22b", 16, 4, "", "", "fp8");
  ExpectRuns("vllm", "", four, Agg(1, 2, 8, 1, 16));
  ExpectRuns("vllm", "0.12.0", four, Agg(1, 2, 8, 1, 16));
  // Before 0.12 a DP rank cannot span nodes at all.
  ExpectBlocked("vllm", "0.11.2", four, Agg(1, 2, 8, 1, 16),
                "vllm-dp-rank-spans-nodes-before-0.12", "v0.10.1.1");
  // A rank inside a node is fine in every release.
  ExpectRuns("vllm", "0.10.0", four, Agg(1, 4, 4, 1, 16));
}

TEST(EngineCapabilityTest, TrtllmAttentionDpWithTensorParallel) {
  const Problem p = MakeProblem("deepseek-v3", 16, 8);
  ExpectBlocked("trtllm", "", p, Agg(1, 2, 8, 1, 16),
                "trtllm-attention-dp-with-tp", "TensorRT-LLM/pull/3370");
  ExpectRuns("trtllm", "", p, Agg(1, 16, 1, 1, 16));
  ExpectRuns("trtllm", "", p, Agg(1, 1, 16, 1, 16));
  // All attention batch-split: attention is fully data-parallel.
  PlanDims split = Agg(1, 2, 8, 1, 16);
  BatchSplitAttention(split.dims);
  ExpectRuns("trtllm", "", p, split);
  // SGLang expresses dp x tp attention.
  ExpectRuns("sglang", "", p, Agg(1, 2, 8, 1, 16));
}

TEST(EngineCapabilityTest, FourBitKvCacheOnlyWhereTheLaunchKeepsIt) {
  // An FP4 KV cache the launch cannot set would leave the engine a cache two
  // or four times the size the prediction fitted.
  Problem dense = MakeProblem("llama-3.1-70b", 8, 8);
  dense.workload.kv_cache_dtype = Dtype::kFp4;
  const PlanDims tp8 = Agg(1, 1, 8, 1, 1);
  // Standard attention: SGLang from 0.5.6, vLLM from 0.21.0, TensorRT-LLM
  // from 1.4; each engine's newest release keeps it.
  ExpectRuns("sglang", "0.5.6", dense, tp8);
  ExpectRuns("sglang", "", dense, tp8);
  ExpectBlocked("sglang", "0.5.5", dense, tp8, "sglang-kv-fp4-before-0.5.6",
                "sglang/pull/10078");
  ExpectRuns("vllm", "0.21.0", dense, tp8);
  ExpectRuns("vllm", "", dense, tp8);
  ExpectBlocked("vllm", "0.20.2", dense, tp8, "vllm-kv-fp4-before-0.21",
                "vllm/pull/40177");
  ExpectBlocked("vllm", "0.12.0", dense, tp8, "vllm-kv-fp4-before-0.21",
                "config/cache.py");
  ExpectRuns("trtllm", "1.4.0", dense, tp8);
  ExpectRuns("trtllm", "", dense, tp8);
  ExpectBlocked("trtllm", "1.3.0", dense, tp8, "trtllm-kv-fp4-before-1.4",
                "TensorRT-LLM/pull/11487");
  EXPECT_THAT(RunnableEngines(dense, tp8),
              ElementsAre("vllm", "sglang", "trtllm"));
  // MLA: vLLM's MLA backends and TensorRT-LLM's MLA generation keep no FP4
  // cache in the releases checked; SGLang does (MLA first, PR 10078). On B200,
  // where TensorRT-LLM loads Kimi-K2.5's NVFP4 checkpoint.
  Problem mla = MakeProblem("kimi-k2.5", 8, 8, "", "", "", "b200-sxm-180gb");
  mla.workload.kv_cache_dtype = Dtype::kFp4;
  const PlanDims dpep = Agg(1, 8, 1, 1, 8);
  ExpectRuns("sglang", "", mla, dpep);
  ExpectBlocked("vllm", "", mla, dpep, "vllm-kv-fp4-mla", "flashinfer_mla.py");
  ExpectBlocked("trtllm", "", mla, dpep, "trtllm-kv-fp4-mla",
                "TensorRT-LLM/pull/17681");
  EXPECT_THAT(RunnableEngines(mla, dpep), ElementsAre("sglang"));
  // The same MLA model with an FP8 cache runs on every engine: the rules read
  // the KV dtype, not the attention alone.
  mla.workload.kv_cache_dtype = Dtype::kFp8;
  EXPECT_THAT(RunnableEngines(mla, dpep),
              ElementsAre("vllm", "sglang", "trtllm"));
  // DeepSeek sparse attention: no engine's checked release has an FP4 cache
  // for it (SGLang's NSA backend takes bf16 or fp8_e4m3).
  Problem sparse = MakeProblem("deepseek-v3.2", 8, 8);
  sparse.workload.kv_cache_dtype = Dtype::kFp4;
  ExpectBlocked("sglang", "", sparse, dpep, "sglang-kv-fp4-sparse-attention",
                "deepseek_v32.md");
  ExpectBlocked("vllm", "", sparse, dpep, "vllm-kv-fp4-mla", "cache.py");
  ExpectBlocked("trtllm", "", sparse, dpep, "trtllm-kv-fp4-mla",
                "blog15_Optimizing_DeepSeek_V32");
  EXPECT_TRUE(RunnableEngines(sparse, dpep).empty());
  EXPECT_FALSE(WorkloadEngineCanRun(sparse, dpep));
  sparse.workload.kv_cache_dtype = Dtype::kFp8;
  EXPECT_THAT(RunnableEngines(sparse, dpep),
              ElementsAre("vllm", "sglang", "trtllm"));
}

// A rule that reads only the model and the workload refuses every layout
// alike: a refusal names it before a layout rule that another layout would
// avoid, so the reason given (and the plan space's "no plan left" error)
// holds for the whole problem.
TEST(EngineCapabilityTest, LayoutFreeRulesAreNamedFirst) {
  for (const EngineRule& rule : EngineRules()) {
    const bool kv_or_model_only = rule.id == "vllm-kv-fp4-mla" ||
                                  rule.id == "trtllm-kv-fp4-mla" ||
                                  rule.id == "sglang-kv-fp4-sparse-attention" ||
                                  rule.id == "vllm-kv-fp4-before-0.21" ||
                                  rule.id == "sglang-kv-fp4-before-0.5.6" ||
                                  rule.id == "trtllm-kv-fp4-before-1.4" ||
                                  rule.id == "trtllm-kimi-int4-checkpoint";
    if (kv_or_model_only) {
      EXPECT_TRUE(rule.layout_free) << rule.id;
    }
    if (rule.id == "vllm-ep-size" || rule.id == "sglang-pp-with-dp-attention" ||
        rule.id == "sglang-gpt-oss-dp-attention") {
      EXPECT_FALSE(rule.layout_free) << rule.id;
    }
  }
  // Kimi-K2.5 (MLA) with an FP4 KV cache on vLLM: dp 4 x tp 2 with experts
  // over 4 ranks breaks vllm-ep-size too (listed first in the table), but no
  // layout escapes vllm-kv-fp4-mla.
  Problem mla = MakeProblem("kimi-k2.5", 8, 8, "", "", "", "b200-sxm-180gb");
  mla.workload.kv_cache_dtype = Dtype::kFp4;
  const PlanDims ep_short = Agg(1, 4, 2, 1, 4);
  ExpectBlocked("vllm", "", mla, ep_short, "vllm-kv-fp4-mla",
                "flashinfer_mla.py");
  mla.workload.kv_cache_dtype = Dtype::kFp8;
  ExpectBlocked("vllm", "", mla, ep_short, "vllm-ep-size", "fused_moe");
  // DeepSeek-V3.2 on SGLang: DP attention with pp (sglang-pp-with-dp-
  // attention) and an FP4 cache its NSA backend does not keep.
  Problem sparse = MakeProblem("deepseek-v3.2", 16, 8);
  sparse.workload.kv_cache_dtype = Dtype::kFp4;
  ExpectBlocked("sglang", "", sparse, Agg(1, 8, 1, 2, 8),
                "sglang-kv-fp4-sparse-attention", "deepseek_v32.md");
}

TEST(EngineCapabilityTest, TensorRtLlmRunsKimiOnlyFromTheNvfp4Checkpoint) {
  // Without FP4 tensor cores the launch loads Kimi-K2.5's INT4 release
  // (compressed-tensors W4A16), which TensorRT-LLM cannot read; vLLM and
  // SGLang run it on weight-only kernels. On B200 every engine loads NVIDIA's
  // NVFP4 checkpoint.
  const Problem h100 = MakeProblem("kimi-k2.5", 16, 8);
  const Problem b200 =
      MakeProblem("kimi-k2.5", 16, 8, "", "", "", "b200-sxm-180gb");
  for (const PlanDims& plan :
       {Agg(1, 16, 1, 1, 16), Agg(1, 1, 8, 2, 8), Agg(1, 1, 16, 1, 16)}) {
    ExpectBlocked("trtllm", "", h100, plan, "trtllm-kimi-int4-checkpoint",
                  "quant_config_utils.py");
    ExpectBlocked("trtllm", "1.0.0", h100, plan, "trtllm-kimi-int4-checkpoint",
                  "TensorRT-LLM/pull/11816");
    ExpectRuns("vllm", "", h100, Agg(2, 1, 8, 1, 8));
    ExpectRuns("sglang", "", h100, plan);
    ExpectRuns("trtllm", "", b200, plan);
  }
  EXPECT_THAT(RunnableEngines(h100, Agg(2, 1, 8, 1, 8)),
              ElementsAre("vllm", "sglang"));
  EXPECT_THAT(RunnableEngines(b200, Agg(2, 1, 8, 1, 8)),
              ElementsAre("vllm", "sglang", "trtllm"));
  // Weights planned wider than the release (FP8) are not the INT4 checkpoint's
  // kernels: the rule reads the weight dtype, and a model of another family
  // with 4-bit weights (gpt-oss's MXFP4) keeps TensorRT-LLM on Hopper.
  ExpectRuns("trtllm", "", MakeProblem("kimi-k2.5", 16, 8, "", "", "fp8"),
             Agg(1, 1, 16, 1, 16));
  ExpectRuns("trtllm", "", MakeProblem("gpt-oss-120b", 8, 8),
             Agg(1, 1, 8, 1, 8));
}

// An ep that does not divide the routed experts leaves redundant slots
// (the cost model prices ceil(experts / ep) per rank); SGLang starts such a
// plan only with --ep-num-redundant-experts, which the launch does not set.
// Kimi-K2.5's 384 experts over a 72-GPU NVLink domain: ep 72 is refused, ep
// 64 (6 experts per GPU) runs; vLLM spreads uneven experts and starts both.
TEST(EngineCapabilityTest, SglangRefusesAnEpThatLeavesRedundantExpertSlots) {
  const Problem rack =
      MakeProblem("kimi-k2.5", 72, 4, "", "", "", "gb200-nvl72");
  ExpectBlocked("sglang", "", rack, Agg(1, 72, 1, 1, 72),
                "sglang-ep-not-dividing-experts", "fused_moe_triton/layer.py");
  ExpectRuns("sglang", "", rack, Agg(1, 64, 1, 1, 64));
  ExpectRuns("sglang", "", rack, Agg(1, 8, 1, 1, 8));
  ExpectRuns("vllm", "", rack, Agg(1, 72, 1, 1, 72));
}

TEST(EngineCapabilityTest, RunnableEnginesListsEachEngineThatCanLaunch) {
  const Problem p = MakeProblem("deepseek-v3", 16, 8);
  // DP attention with pp: SGLang crashes, vLLM has no DP x PP; TensorRT-LLM
  // runs attention DP 8 (tp 1) with two stages.
  EXPECT_THAT(RunnableEngines(p, Agg(1, 8, 1, 2, 8)), ElementsAre("trtllm"));
  EXPECT_THAT(RunnableEngines(p, Agg(2, 1, 8, 1, 8)),
              ElementsAre("vllm", "sglang", "trtllm"));
  // dp 2 x tp 8 attention with pp 2: nobody.
  EXPECT_TRUE(RunnableEngines(p, Agg(1, 2, 4, 2, 8)).empty());
  EXPECT_FALSE(WorkloadEngineCanRun(p, Agg(1, 2, 4, 2, 8)));
  EXPECT_TRUE(WorkloadEngineCanRun(p, Agg(1, 8, 1, 2, 8)));
  EXPECT_FALSE(WorkloadEngineCanRun(MakeProblem("deepseek-v3", 16, 8, "vllm"),
                                    Agg(1, 8, 1, 2, 8)));
}

TEST(EngineCapabilityTest, AnnotatedPredictionNamesTheRule) {
  const Problem p = MakeProblem("deepseek-v3", 16, 8, "sglang", "0.5.6");
  shardplan::v1::Prediction prediction;
  prediction.set_feasible(true);
  AnnotateEngineCapability(p, Agg(1, 8, 1, 2, 8), &prediction);
  EXPECT_FALSE(prediction.feasible());
  EXPECT_THAT(prediction.infeasible_reason(),
              HasSubstr("sglang-pp-with-dp-attention"));
  EXPECT_THAT(prediction.runnable_engines(), ElementsAre("trtllm"));
  shardplan::v1::Prediction ok;
  ok.set_feasible(true);
  AnnotateEngineCapability(p, Agg(2, 1, 8, 1, 8), &ok);
  EXPECT_TRUE(ok.feasible());
  EXPECT_EQ(ok.runnable_engines_size(), 3);
}

TEST(EngineCapabilityTest, MegatronBaselineAvoidsLayoutsTheEngineCannotRun) {
  // Llama-3.1-405B in BF16 needs two stages on 16 H100; SGLang before 0.4.10
  // has no pipeline, so the baseline stays on one stage (and says it does
  // not fit) rather than offering a layout the engine cannot start.
  shardplan::v1::ModelSource source;
  source.set_catalog_name("llama-3.1-405b");
  shardplan::v1::ClusterSpec cluster;
  cluster.set_hardware("h100-sxm-80gb");
  cluster.set_num_gpus(16);
  cluster.set_gpus_per_node(8);
  shardplan::v1::Workload workload;
  workload.set_input_tokens(1024);
  workload.set_output_tokens(256);
  workload.set_concurrency(8);
  workload.set_weight_dtype("bf16");
  absl::StatusOr<Problem> any = ProblemFromProto(source, cluster, workload);
  ASSERT_TRUE(any.ok()) << any.status();
  auto any_model = CostModel::Create(*any);
  ASSERT_TRUE(any_model.ok());
  EXPECT_GT(MegatronPlan(**any_model).pp, 1);
  workload.set_engine("sglang");
  workload.set_engine_version("0.4.9");
  absl::StatusOr<Problem> old = ProblemFromProto(source, cluster, workload);
  ASSERT_TRUE(old.ok()) << old.status();
  auto old_model = CostModel::Create(*old);
  ASSERT_TRUE(old_model.ok());
  const PlanDims plan = MegatronPlan(**old_model);
  EXPECT_EQ(plan.pp, 1);
  EXPECT_TRUE(CheckEngineCanRun("sglang", "0.4.9", *old, plan).ok());
}

TEST(EngineCapabilityTest, BadEngineVersionIsInvalidArgument) {
  shardplan::v1::ModelSource source;
  source.set_catalog_name("llama-3.1-8b");
  shardplan::v1::ClusterSpec cluster;
  cluster.set_hardware("h100-sxm-80gb");
  cluster.set_num_gpus(8);
  cluster.set_gpus_per_node(8);
  shardplan::v1::Workload workload;
  workload.set_input_tokens(1024);
  workload.set_output_tokens(256);
  workload.set_engine("vllm");
  workload.set_engine_version("nightly");
  absl::StatusOr<Problem> p = ProblemFromProto(source, cluster, workload);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("workload.engine_version"));
  EXPECT_THAT(p.status().message(), HasSubstr("nightly"));
}

TEST(EngineCapabilityTest, RuleScopeIsTheWidestVariableItReads) {
  const char* kTable = R"(rules:
  - id: one-instance
    engine: sglang
    effect: block
    when: ["role == decode", "pp > 1"]
    message: m
    sources: [https://example.com]
  - id: where-it-sits
    engine: sglang
    effect: block
    when: ["pp > 1", "instance_nodes > 1"]
    message: m
    sources: [https://example.com]
  - id: both-pools
    engine: sglang
    effect: block
    when: ["decode_pp != prefill_pp"]
    message: m
    sources: [https://example.com]
  - id: compared-to-a-placement-variable
    engine: sglang
    effect: block
    when: ["tp > instances"]
    message: m
    sources: [https://example.com]
)";
  absl::StatusOr<std::vector<EngineRule>> r = ParseEngineRules(kTable);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 4u);
  EXPECT_EQ((*r)[0].scope, RuleScope::kInstance);
  EXPECT_EQ((*r)[1].scope, RuleScope::kPlacement);
  EXPECT_EQ((*r)[2].scope, RuleScope::kPlan);
  EXPECT_EQ((*r)[3].scope, RuleScope::kPlacement);
  // The compiled-in table: SGLang's uneven-node rule reads the placement.
  for (const EngineRule& rule : EngineRules()) {
    if (rule.id == "sglang-uneven-nodes") {
      EXPECT_EQ(rule.scope, RuleScope::kPlacement);
    }
    if (rule.id == "sglang-decode-pp" || rule.id == "vllm-nixl-pp" ||
        rule.id == "trtllm-attention-dp-with-tp") {
      EXPECT_EQ(rule.scope, RuleScope::kInstance) << rule.id;
    }
  }
}

TEST(EngineCapabilityTest, EachPoolIsJudgedAlone) {
  const Problem p = MakeProblem("deepseek-v3", 32, 8, "", "", "fp8");
  // A decode pool with two stages (SGLang issue 8424) next to a prefill pool
  // of one: SGLang refuses the decode pool only, vLLM (NixlConnector with
  // pp, issue 52913) too, TensorRT-LLM runs both.
  const PlanDims plan = Disagg(2, Agg(1, 8, 1, 1, 8), 1, Agg(1, 8, 1, 2, 8));
  for (RuleScope scope : {RuleScope::kInstance, RuleScope::kPlacement}) {
    EXPECT_TRUE(
        CheckEngineCanRunPool("sglang", "", p, plan, PoolRole::kPrefill, scope)
            .ok());
    const absl::Status decode =
        CheckEngineCanRunPool("sglang", "", p, plan, PoolRole::kDecode, scope);
    EXPECT_EQ(decode.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(decode.message(), HasSubstr("rule sglang-"));
    EXPECT_THAT(decode.message(), HasSubstr("decode instance"));
    EXPECT_FALSE(
        CheckEngineCanRunPool("vllm", "", p, plan, PoolRole::kDecode, scope)
            .ok());
    EXPECT_TRUE(
        CheckEngineCanRunPool("trtllm", "", p, plan, PoolRole::kDecode, scope)
            .ok());
  }
  // With no engine named, a pool is kept when one engine runs it.
  EXPECT_TRUE(WorkloadEngineCanRunPool(p, plan, PoolRole::kDecode,
                                       RuleScope::kInstance));
  const Problem sglang = MakeProblem("deepseek-v3", 32, 8, "sglang", "", "fp8");
  EXPECT_FALSE(WorkloadEngineCanRunPool(sglang, plan, PoolRole::kDecode,
                                        RuleScope::kInstance));
  EXPECT_TRUE(WorkloadEngineCanRunPool(sglang, plan, PoolRole::kPrefill,
                                       RuleScope::kInstance));
  EXPECT_EQ(CheckEngineCanRunPool("tgi", "", p, plan, PoolRole::kDecode,
                                  RuleScope::kInstance)
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(EngineCapabilityTest, WhereAPoolSitsIsJudgedOnlyAtPlacementScope) {
  // 20 GPUs on nodes of 8, 8 and 4: one 12-GPU prefill instance (ranks 0-11:
  // 8 GPUs on the first node, 4 on the second) and one 8-GPU decode
  // instance. SGLang cannot launch an instance split unevenly over nodes.
  const Problem p = MakeProblem("llama-3.1-70b", 20, 8, "sglang");
  const PlanDims plan = Disagg(1, Agg(1, 1, 4, 3, 1), 1, Agg(1, 1, 8, 1, 1));
  EXPECT_TRUE(CheckEngineCanRunPool("sglang", "", p, plan, PoolRole::kPrefill,
                                    RuleScope::kInstance)
                  .ok());
  const absl::Status placed = CheckEngineCanRunPool(
      "sglang", "", p, plan, PoolRole::kPrefill, RuleScope::kPlacement);
  EXPECT_THAT(placed.message(), HasSubstr("rule sglang-uneven-nodes,"));
  EXPECT_TRUE(PoolPlacementMayRefuse(p, plan, PoolRole::kPrefill));
  EXPECT_FALSE(PoolPlacementMayRefuse(p, plan, PoolRole::kDecode));
  // TensorRT-LLM has no placement rule: nothing to check per split.
  const Problem trtllm = MakeProblem("llama-3.1-70b", 20, 8, "trtllm");
  EXPECT_FALSE(PoolPlacementMayRefuse(trtllm, plan, PoolRole::kPrefill));
  ExpectBlocked("sglang", "", p, plan, "sglang-uneven-nodes",
                "entrypoints/engine.py");
}

}  // namespace
}  // namespace shardplan::simulator
