// The cost model's attention kinds (simulator/types.h ModelDims): hybrid
// linear attention keeps a fixed state per request instead of a growing KV
// cache; DeepSeek sparse attention stops the decode attention from growing
// with the context beyond the top-k tokens, except for its light indexer.
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/calibration.h"
#include "simulator/cost_model.h"
#include "simulator/spec.h"

namespace shardplan::simulator {
namespace {

std::unique_ptr<const CostModel> Make(const shardplan::v1::ModelSpec& spec,
                                      int gpus, int isl, int concurrency,
                                      const std::string& hardware) {
  shardplan::v1::ModelSource source;
  *source.mutable_spec() = spec;
  shardplan::v1::ClusterSpec cluster;
  cluster.set_hardware(hardware);
  cluster.set_num_gpus(gpus);
  shardplan::v1::Workload workload;
  workload.set_input_tokens(isl);
  workload.set_output_tokens(256);
  workload.set_concurrency(concurrency);
  workload.set_kv_cache_dtype("fp8");
  absl::StatusOr<Problem> problem = ProblemFromProto(source, cluster, workload);
  EXPECT_TRUE(problem.ok()) << problem.status();
  if (!problem.ok()) return nullptr;
  auto model = CostModel::Create(*problem);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? std::move(*model) : nullptr;
}

shardplan::v1::ModelSpec Catalog(const std::string& name) {
  return *FindCatalogModel(name);
}

PlanDims Layout(int dp, int tp, int ep) {
  PlanDims p;
  p.dp = dp;
  p.tp = tp;
  p.ep = ep;
  return p;
}

double AttentionDecodeSeconds(const Evaluation& e) {
  const OpCost& c = e.decode[static_cast<int>(OpKind::kAttention)];
  return std::max(c.compute_seconds, c.memory_seconds);
}

TEST(AttentionKindsTest, LinearAttentionStateDoesNotGrowWithContext) {
  // Qwen3.5-397B-A17B on 8 B200 (tp 8, FP8 KV): of its 60 layers only the
  // 15 full-attention ones grow a KV cache (2 KV heads x 256 x 2 x 1 byte per
  // token each, replicated over tp 8 since tp > 2 KV heads: 15 x 1024 B per
  // token per GPU); the 45 linear layers hold a fixed 4.2 MB state per request
  // (FP32 recurrent state + BF16 convolution window), split over tp 8.
  const auto spec = Catalog("qwen3.5-397b-a17b");
  const PlanDims plan = Layout(1, 8, 8);
  auto short_ctx = Make(spec, 8, 1024, 16, "b200-sxm-180gb");
  auto long_ctx = Make(spec, 8, 1024 + 8192, 16, "b200-sxm-180gb");
  ASSERT_NE(short_ctx, nullptr);
  ASSERT_NE(long_ctx, nullptr);
  const Evaluation a = short_ctx->Evaluate(plan);
  const Evaluation b = long_ctx->Evaluate(plan);
  ASSERT_TRUE(a.feasible) << InfeasibleReasonText(a);
  ASSERT_TRUE(b.feasible) << InfeasibleReasonText(b);
  const double per_token_per_gpu = 15 * 2.0 * 2 * 256 * 1.0 / 2;  // tp 8
  EXPECT_NEAR(b.kv_cache_bytes - a.kv_cache_bytes,
              16 * 8192 * per_token_per_gpu, 1e-6 * b.kv_cache_bytes);
  const double state_per_request_per_gpu =
      45 * (4.0 * 64 * 128 * 128 + 2.0 * (2 * 16 * 128 + 64 * 128) * 3) / 8;
  // A running request's KV tokens: the prompt and the reserved output share.
  const double ctx_a =
      1024 + DefaultCalibration().kv_reserved_output_fraction * 256;
  EXPECT_NEAR(a.kv_cache_bytes,
              16 * (ctx_a * per_token_per_gpu + state_per_request_per_gpu),
              0.01 * a.kv_cache_bytes);
}

TEST(AttentionKindsTest, SparseAttentionDecodeStopsGrowingPastTopK) {
  // DeepSeek-V3.2 and DeepSeek-V3 (same shapes, V3.2 adds the indexer) on 8
  // B200, DP attention + EP 8: from 8k to 64k tokens of context V3's decode
  // attention grows with the context, V3.2's only by its indexer's scan
  // (132 bytes per cached token per layer beside the 576-byte FP8 latent
  // that attention reads, and 64 x 128 FP8 multiply-adds per token).
  const PlanDims plan = Layout(8, 1, 8);
  auto v3_8k = Make(Catalog("deepseek-v3"), 8, 8192, 8, "b200-sxm-180gb");
  auto v3_64k = Make(Catalog("deepseek-v3"), 8, 65536, 8, "b200-sxm-180gb");
  auto v32_8k = Make(Catalog("deepseek-v3.2"), 8, 8192, 8, "b200-sxm-180gb");
  auto v32_64k = Make(Catalog("deepseek-v3.2"), 8, 65536, 8, "b200-sxm-180gb");
  ASSERT_TRUE(v3_8k && v3_64k && v32_8k && v32_64k);
  const double v3_growth = AttentionDecodeSeconds(v3_64k->Evaluate(plan)) -
                           AttentionDecodeSeconds(v3_8k->Evaluate(plan));
  const double v32_growth = AttentionDecodeSeconds(v32_64k->Evaluate(plan)) -
                            AttentionDecodeSeconds(v32_8k->Evaluate(plan));
  EXPECT_GT(v3_growth, 0);
  EXPECT_GT(v32_growth, 0);  // the indexer still scans every token
  EXPECT_LT(v32_growth, 0.35 * v3_growth);
  // Below the top-k the two attend to the same tokens; V3.2 pays the indexer
  // on top.
  auto v3_1k = Make(Catalog("deepseek-v3"), 8, 1024, 8, "b200-sxm-180gb");
  auto v32_1k = Make(Catalog("deepseek-v3.2"), 8, 1024, 8, "b200-sxm-180gb");
  EXPECT_GE(AttentionDecodeSeconds(v32_1k->Evaluate(plan)),
            AttentionDecodeSeconds(v3_1k->Evaluate(plan)));
}

TEST(AttentionKindsTest, SparseAttentionPrefillIsLinearPastTopK) {
  // Prefill attention over 64k tokens: quadratic for V3, about k x S for
  // V3.2 (plus the indexer's light quadratic scan).
  const PlanDims plan = Layout(8, 1, 8);
  auto v3 = Make(Catalog("deepseek-v3"), 8, 65536, 1, "b200-sxm-180gb");
  auto v32 = Make(Catalog("deepseek-v3.2"), 8, 65536, 1, "b200-sxm-180gb");
  ASSERT_TRUE(v3 && v32);
  const Evaluation a = v3->Evaluate(plan);
  const Evaluation b = v32->Evaluate(plan);
  const int ia = static_cast<int>(OpKind::kAttention);
  EXPECT_LT(b.prefill[ia].compute_seconds, 0.5 * a.prefill[ia].compute_seconds);
  EXPECT_LT(b.ttft_seconds, a.ttft_seconds);
}

}  // namespace
}  // namespace shardplan::simulator
