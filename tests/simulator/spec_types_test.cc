// Tests for simulator/types.cc: names, parsing, Megatron dims, parameter
// counts, plan equality and the infeasibility texts.
#include <cmath>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simulator/types.h"

namespace shardplan::simulator {
namespace {

using ::testing::HasSubstr;

TEST(TypesTest, DtypeNamesRoundTrip) {
  for (int i = 0; i < kNumDtypes; ++i) {
    const Dtype dtype = static_cast<Dtype>(i);
    absl::StatusOr<Dtype> parsed =
        ParseDtype(DtypeName(dtype), "workload.weight_dtype");
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, dtype);
  }
  EXPECT_EQ(BytesPerElement(Dtype::kBf16), 2.0);
  EXPECT_EQ(BytesPerElement(Dtype::kFp8), 1.0);
  EXPECT_EQ(BytesPerElement(Dtype::kFp4), 0.5);
  EXPECT_EQ(*ParseDtype("", "x", Dtype::kFp8), Dtype::kFp8);
}

TEST(TypesTest, UnknownDtypeNamesFieldAndValue) {
  absl::StatusOr<Dtype> parsed = ParseDtype("fp16", "workload.kv_cache_dtype");
  ASSERT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(),
            "workload.kv_cache_dtype: unknown dtype \"fp16\"; expected one of "
            "bf16, fp8, fp4");
}

TEST(TypesTest, OpKindAndShardDimNamesRoundTrip) {
  for (int i = 0; i < kNumOpKinds; ++i) {
    const OpKind op = static_cast<OpKind>(i);
    EXPECT_EQ(*ParseOpKind(OpKindName(op), "x"), op);
  }
  for (int i = 0; i < kNumShardDims; ++i) {
    const ShardDim dim = static_cast<ShardDim>(i);
    EXPECT_EQ(*ParseShardDim(ShardDimName(dim), "x"), dim);
  }
  EXPECT_EQ(OpKindName(OpKind::kAttnOut), "attn_out");
  EXPECT_EQ(ShardDimName(ShardDim::kSequence), "sequence");
}

TEST(TypesTest, UnknownDimMessage) {
  absl::StatusOr<ShardDim> dim =
      ParseShardDim("diagonal", "plan.operator_sharding[2].dim");
  ASSERT_EQ(dim.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(dim.status().message(),
            "plan.operator_sharding[2].dim: unknown dim \"diagonal\"; expected "
            "one of column, "
            "row, replicate, batch, sequence");
  absl::StatusOr<OpKind> op =
      ParseOpKind("ffn", "plan.operator_sharding[0].operator");
  ASSERT_EQ(op.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(op.status().message(), HasSubstr("unknown operator \"ffn\""));
  EXPECT_THAT(op.status().message(), HasSubstr("expert_down"));
}

TEST(TypesTest, MegatronShardDims) {
  const ShardDims dims = MegatronShardDims();
  EXPECT_EQ(dims[static_cast<int>(OpKind::kEmbedding)], ShardDim::kRow);
  EXPECT_EQ(dims[static_cast<int>(OpKind::kQkv)], ShardDim::kColumn);
  EXPECT_EQ(dims[static_cast<int>(OpKind::kAttention)], ShardDim::kColumn);
  EXPECT_EQ(dims[static_cast<int>(OpKind::kAttnOut)], ShardDim::kRow);
  EXPECT_EQ(dims[static_cast<int>(OpKind::kMlpUp)], ShardDim::kColumn);
  EXPECT_EQ(dims[static_cast<int>(OpKind::kMlpDown)], ShardDim::kRow);
  EXPECT_EQ(dims[static_cast<int>(OpKind::kRouter)], ShardDim::kReplicate);
  EXPECT_EQ(dims[static_cast<int>(OpKind::kExpertUp)], ShardDim::kColumn);
  EXPECT_EQ(dims[static_cast<int>(OpKind::kExpertDown)], ShardDim::kRow);
  EXPECT_EQ(dims[static_cast<int>(OpKind::kLmHead)], ShardDim::kColumn);
  EXPECT_EQ(PlanDims{}.dims, dims);
}

// Hand count for a tiny dense model: h=8, 2 layers, 2 heads of 4, 1 KV head,
// ffn 16, vocab 10, untied.
TEST(TypesTest, DenseParamsByHand) {
  ModelDims m;
  m.hidden = 8;
  m.layers = 2;
  m.heads = 2;
  m.kv_heads = 1;
  m.head_dim = 4;
  m.intermediate = 16;
  m.vocab = 10;
  // attention: q 8*8 + k,v 2*8*4 + o 8*8 = 192; mlp 3*8*16 = 384; per layer
  // 576.
  EXPECT_DOUBLE_EQ(m.TotalParams(), 2 * 576 + 2 * 80);
  EXPECT_DOUBLE_EQ(m.ActiveParams(), m.TotalParams());
  m.tie_embeddings = true;
  EXPECT_DOUBLE_EQ(m.TotalParams(), 2 * 576 + 80);
}

// Tiny MoE with MLA: counts routed, shared and dense layers separately.
TEST(TypesTest, MoeMlaParamsByHand) {
  ModelDims m;
  m.hidden = 8;
  m.layers = 3;
  m.heads = 2;
  m.kv_heads = 2;
  m.head_dim = 6;
  m.intermediate = 16;
  m.vocab = 10;
  m.experts = 4;
  m.experts_per_token = 2;
  m.moe_intermediate = 4;
  m.shared_experts = 1;
  m.first_k_dense = 1;
  m.kv_lora_rank = 3;
  m.q_lora_rank = 5;
  m.qk_rope_head_dim = 2;
  m.qk_nope_head_dim = 4;
  m.v_head_dim = 4;
  // q: 8*5 + 5*2*6 = 100; kv down 8*(3+2) = 40; kv up 3*2*(4+4) = 48; o 2*4*8
  // = 64.
  const double attention = 100 + 40 + 48 + 64;
  const double dense = 3 * 8 * 16;
  const double expert = 3 * 8 * 4;
  const double router = 8 * 4;
  const double embeddings = 2 * 10 * 8;
  EXPECT_DOUBLE_EQ(
      m.TotalParams(),
      3 * attention + dense + 2 * ((4 + 1) * expert + router) + embeddings);
  EXPECT_DOUBLE_EQ(
      m.ActiveParams(),
      3 * attention + dense + 2 * ((2 + 1) * expert + router) + embeddings);
  EXPECT_EQ(m.dense_layers(), 1);
  EXPECT_EQ(m.moe_layers(), 2);
}

TEST(TypesTest, PlanEqualityIgnoresUnusedStageEntries) {
  PlanDims a;
  PlanDims b;
  EXPECT_EQ(a, b);
  a.pp = b.pp = 2;
  a.num_stage_layers = b.num_stage_layers = 2;
  a.stage_layers[0] = b.stage_layers[0] = 30;
  a.stage_layers[1] = b.stage_layers[1] = 50;
  a.stage_layers[5] = 7;  // beyond num_stage_layers: ignored
  EXPECT_EQ(a, b);
  b.stage_layers[1] = 49;
  EXPECT_NE(a, b);
  b = a;
  b.dims[static_cast<int>(OpKind::kQkv)] = ShardDim::kBatch;
  EXPECT_NE(a, b);
  b = a;
  b.batch_size = 64;
  EXPECT_NE(a, b);
}

TEST(TypesTest, InfeasibleReasonTexts) {
  Evaluation e;
  e.feasible = true;
  EXPECT_EQ(InfeasibleReasonText(e), "");
  e.feasible = false;
  e.reason = InfeasibleReason::kWeightsExceedMemory;
  e.reason_value = 141.2e9;
  e.reason_limit = 80e9;
  EXPECT_EQ(InfeasibleReasonText(e),
            "weights need 141.2 GB per GPU, 80.0 GB available");
  e.reason = InfeasibleReason::kKvCacheExceedsMemory;
  e.batch_size = 256;
  e.weights_bytes = 60.1e9;
  e.reason_value = 35.5e9;
  EXPECT_EQ(InfeasibleReasonText(e),
            "KV cache for batch 256 needs 35.5 GB per GPU beside 60.1 GB of "
            "weights, 80.0 GB "
            "available");
  e.reason = InfeasibleReason::kTtftSlo;
  e.reason_value = 0.812;
  e.reason_limit = 0.5;
  EXPECT_EQ(InfeasibleReasonText(e), "TTFT 812 ms exceeds the 500 ms SLO");
  e.reason = InfeasibleReason::kTpotSlo;
  e.reason_value = 0.0625;
  e.reason_limit = 0.05;
  EXPECT_EQ(InfeasibleReasonText(e), "TPOT 62.5 ms exceeds the 50.0 ms SLO");
  e.reason = InfeasibleReason::kNoBatchFits;
  EXPECT_THAT(InfeasibleReasonText(e), HasSubstr("no decode batch size"));
}

TEST(TypesTest, BottleneckNames) {
  EXPECT_EQ(BottleneckName(Bottleneck::kCompute), "compute");
  EXPECT_EQ(BottleneckName(Bottleneck::kMemory), "memory");
  EXPECT_EQ(BottleneckName(Bottleneck::kCommunication), "communication");
  EXPECT_EQ(BottleneckName(Bottleneck::kPipeline), "pipeline");
}

}  // namespace
}  // namespace shardplan::simulator
