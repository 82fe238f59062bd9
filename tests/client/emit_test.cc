#include "client/emit.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shardplan::client {
namespace {

using shardplan::v1::Plan;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

Plan MakePlan(int dp, int tp, int pp, int ep, int batch = 0) {
  Plan plan;
  plan.set_dp(dp);
  plan.set_tp(tp);
  plan.set_pp(pp);
  plan.set_ep(ep);
  plan.set_batch_size(batch);
  return plan;
}

void SetDim(Plan* plan, const std::string& op, const std::string& dim) {
  auto* s = plan->add_operator_sharding();
  s->set_operator_(op);
  s->set_dim(dim);
}

EmitContext Dense(const std::string& name = "llama-3.1-70b") {
  EmitContext c;
  c.model_name = name;
  return c;
}

EmitContext Moe(const std::string& name = "deepseek-v3") {
  EmitContext c;
  c.model_name = name;
  c.is_moe = true;
  return c;
}

TEST(EmitTest, VllmDenseMegatronPlan) {
  const EmittedCommand e =
      EmitCommand(Engine::kVllm, MakePlan(2, 4, 1, 1, 64), Dense());
  EXPECT_THAT(e.command,
              HasSubstr("vllm serve meta-llama/Llama-3.1-70B-Instruct"));
  EXPECT_THAT(e.command, HasSubstr("--tensor-parallel-size 4"));
  EXPECT_THAT(e.command, HasSubstr("--pipeline-parallel-size 1"));
  EXPECT_THAT(e.command, HasSubstr("--data-parallel-size 2"));
  EXPECT_THAT(e.command, HasSubstr("--max-num-seqs 64"));
  EXPECT_THAT(e.command, Not(HasSubstr("--enable-expert-parallel")));
  EXPECT_THAT(e.warnings, IsEmpty());
}

TEST(EmitTest, VllmMoeExpertParallelOverDataTimesTensor) {
  const EmittedCommand e =
      EmitCommand(Engine::kVllm, MakePlan(2, 4, 1, 8), Moe());
  EXPECT_THAT(e.command, HasSubstr("deepseek-ai/DeepSeek-V3"));
  EXPECT_THAT(e.command, HasSubstr("--enable-expert-parallel"));
  EXPECT_THAT(e.warnings, IsEmpty());
  // ep that is not dp*tp cannot be expressed.
  const EmittedCommand partial =
      EmitCommand(Engine::kVllm, MakePlan(2, 4, 1, 4), Moe());
  EXPECT_THAT(partial.warnings, Contains(HasSubstr("ep=4")));
}

TEST(EmitTest, SglangMoeUsesDpAttentionAndEpSize) {
  Plan plan = MakePlan(1, 8, 1, 8, 128);
  for (const char* op : {"qkv", "attention", "attn_out"})
    SetDim(&plan, op, "batch");
  const EmittedCommand e = EmitCommand(Engine::kSglang, plan, Moe());
  EXPECT_THAT(e.command,
              HasSubstr("python -m sglang.launch_server --model-path "
                        "deepseek-ai/DeepSeek-V3"));
  EXPECT_THAT(
      e.command,
      AllOf(HasSubstr("--tp-size 8"), HasSubstr("--dp-size 8"),
            HasSubstr("--enable-dp-attention"), HasSubstr("--ep-size 8")));
  EXPECT_THAT(e.warnings, IsEmpty());
}

TEST(EmitTest, TrtllmMoeAttentionDpGoesToTheConfigFile) {
  Plan plan = MakePlan(1, 8, 1, 8, 256);
  for (const char* op : {"qkv", "attention", "attn_out"})
    SetDim(&plan, op, "batch");
  EmitContext c = Moe();
  c.kv_cache_dtype = "fp8";
  const EmittedCommand e = EmitCommand(Engine::kTrtllm, plan, c);
  EXPECT_THAT(
      e.command,
      AllOf(HasSubstr("trtllm-serve deepseek-ai/DeepSeek-V3"),
            HasSubstr("--tp_size 8"), HasSubstr("--pp_size 1"),
            HasSubstr("--ep_size 8"), HasSubstr("--max_batch_size 256"),
            HasSubstr("enable_attention_dp: true"), HasSubstr("dtype: fp8"),
            HasSubstr("--config shardplan-trtllm.yaml")));
  EXPECT_THAT(e.warnings, IsEmpty());
}

TEST(EmitTest, WarnsOnSequenceSplitAttention) {
  Plan plan = MakePlan(1, 8, 1, 1);
  SetDim(&plan, "attention", "sequence");
  for (Engine engine : {Engine::kVllm, Engine::kSglang, Engine::kTrtllm}) {
    const EmittedCommand e = EmitCommand(engine, plan, Dense());
    EXPECT_THAT(
        e.warnings,
        Contains(HasSubstr("sequence-split (context-parallel) attention")));
  }
}

TEST(EmitTest, WarnsOnReplicatedAttnOutAndColumnColumnMlp) {
  Plan plan = MakePlan(1, 4, 1, 1);
  SetDim(&plan, "attn_out", "replicate");
  SetDim(&plan, "mlp_down", "column");
  const EmittedCommand e = EmitCommand(Engine::kVllm, plan, Dense());
  EXPECT_THAT(e.warnings, Contains(HasSubstr("replicated attn_out")));
  EXPECT_THAT(e.warnings, Contains(HasSubstr("column->column MLP")));
}

TEST(EmitTest, DimensionsDoNotMatterWithoutTensorParallelism) {
  Plan plan = MakePlan(8, 1, 1, 1);
  SetDim(&plan, "attention", "sequence");
  const EmittedCommand e = EmitCommand(Engine::kSglang, plan, Dense());
  EXPECT_THAT(e.warnings, IsEmpty());
  EXPECT_THAT(e.command, HasSubstr("--dp-size 8"));
}

TEST(EmitTest, DenseBatchAttentionIsOnlySglang) {
  Plan plan = MakePlan(1, 4, 1, 1);
  for (const char* op : {"qkv", "attention", "attn_out"})
    SetDim(&plan, op, "batch");
  EXPECT_THAT(EmitCommand(Engine::kSglang, plan, Dense()).warnings, IsEmpty());
  EXPECT_THAT(
      EmitCommand(Engine::kVllm, plan, Dense()).warnings,
      Contains(HasSubstr("no data-parallel attention for dense models")));
}

TEST(EmitTest, MultiNodeSglangGetsNodeFlags) {
  const EmittedCommand e =
      EmitCommand(Engine::kSglang, MakePlan(1, 8, 2, 1), Dense());
  EXPECT_THAT(e.command,
              AllOf(HasSubstr("--pp-size 2"), HasSubstr("--nnodes 2"),
                    HasSubstr("--node-rank $NODE_RANK")));
}

TEST(EmitTest, UnknownModelGetsPlaceholderAndWarning) {
  const EmittedCommand e =
      EmitCommand(Engine::kVllm, MakePlan(1, 1, 1, 1), Dense("my-model"));
  EXPECT_THAT(e.command, HasSubstr("<path-or-hf-id-of-my-model>"));
  EXPECT_THAT(e.warnings, Contains(HasSubstr("no Hugging Face id")));
}

TEST(EmitTest, HuggingFaceIdsAndMegatronDefaults) {
  EXPECT_EQ(HuggingFaceId("qwen3-235b-a22b"), "Qwen/Qwen3-235B-A22B");
  EXPECT_EQ(HuggingFaceId("org/custom"), "org/custom");
  EXPECT_EQ(HuggingFaceId("unknown"), "");
  EXPECT_EQ(MegatronDim("attn_out"), "row");
  EXPECT_EQ(MegatronDim("embedding"), "row");
  EXPECT_EQ(PlanDim(MakePlan(1, 1, 1, 1), "qkv"), "column");
  EXPECT_TRUE(CatalogModelIsMoe("mixtral-8x7b"));
  EXPECT_FALSE(CatalogModelIsMoe("llama-3.1-8b"));
  EXPECT_FALSE(ParseEngine("tgi").ok());
  EXPECT_TRUE(ParseEngine("trtllm").ok());
}

}  // namespace
}  // namespace shardplan::client
