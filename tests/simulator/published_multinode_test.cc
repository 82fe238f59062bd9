// The cost model against the published multi-node MoE serving figures:
// SGLang's DeepSeek-V3 deployment on 96 H100 (PD disaggregation, EP32
// prefill, EP72 decode), DeepSeek's own V3/R1 service on H800 (EP32 prefill,
// EP144 decode) and vLLM's wide-EP DeepSeek on H200 (held-out hardware:
// compared, never fitted). Each deployment is an EvaluateRequest file in
// tests/simulator/data/published/ (the conditions and sources are in its
// comments), read the way `shardplan-sim evaluate` reads it, so the CLI and
// EvaluatePlan express exactly what is checked here. Every published figure
// was measured on one pool with the other assumed unlimited, so the test
// reads each pool's own rate: input tokens/s per prefill node and output
// tokens/s per decode node. The table and the reasons for each bound are in
// docs/cost-model-and-calibration.md ("Published multi-node figures").
#include <cmath>
#include <optional>
#include <string>

#include "gtest/gtest.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/calibration.h"
#include "simulator/cost_model.h"
#include "simulator/spec.h"
#include "tests/simulator/published_request.h"

namespace shardplan::simulator {
namespace {

struct PoolRates {
  double input_tokens_per_s_per_prefill_node = 0;
  double output_tokens_per_s_per_decode_node = 0;
  double tpot_seconds = 0;
  bool feasible = false;
};

// Changes a published file's conditions the way its comments describe
// (other prompt lengths of the same deployment, a batch scan); 0 = keep.
// Decode batches are requests in flight per decode instance: per GPU x dp.
struct Overrides {
  int input_tokens = 0;
  int prefill_batch = 0;
  int decode_batch = 0;
};

// Evaluates the file's plan as shardplan-sim does (the workload's engine
// profile) and returns each pool's rate per node of that pool.
PoolRates Evaluate(const std::string& name, const Overrides& o = {}) {
  shardplan::v1::EvaluateRequest request = ReadPublishedRequest(name);
  if (o.input_tokens > 0) {
    request.mutable_workload()->set_input_tokens(o.input_tokens);
  }
  if (o.prefill_batch > 0) {
    request.mutable_plan()->mutable_prefill()->set_batch_size(o.prefill_batch);
  }
  if (o.decode_batch > 0) {
    request.mutable_plan()->mutable_decode()->set_batch_size(o.decode_batch);
  }
  PoolRates rates;
  absl::StatusOr<Problem> problem =
      ProblemFromProto(request.model(), request.cluster(), request.workload());
  EXPECT_TRUE(problem.ok()) << name << ": " << problem.status();
  if (!problem.ok()) return rates;
  absl::StatusOr<CalibrationProfile> profile =
      problem->workload.calibration_profile.empty()
          ? absl::StatusOr<CalibrationProfile>(DefaultCalibrationProfile())
          : FindCalibrationProfile(problem->workload.calibration_profile);
  EXPECT_TRUE(profile.ok()) << profile.status();
  if (!profile.ok()) return rates;
  std::optional<ModelAndPlan> built =
      ModelAndPlanOf(*problem, profile->calibration, request.plan(), name);
  if (!built) return rates;
  const CostModel* model = built->model.get();
  const PlanDims* plan = &built->plan;
  const Evaluation e = model->Evaluate(*plan);
  const Problem& p = model->problem();
  const double node = p.cluster.gpus_per_node;
  const double prefill_nodes =
      plan->prefill_instances * plan->prefill.gpus() / node;
  const double decode_nodes =
      plan->decode_instances * plan->instance_gpus() / node;
  rates.feasible = e.feasible;
  rates.tpot_seconds = e.tpot_seconds;
  rates.input_tokens_per_s_per_prefill_node =
      e.prefill_requests_per_s * p.workload.input_tokens / prefill_nodes;
  rates.output_tokens_per_s_per_decode_node =
      e.decode_requests_per_s * p.workload.output_tokens / decode_nodes;
  return rates;
}

double Error(double predicted, double published) {
  return (predicted - published) / published;
}

// SGLang, 9 decode nodes (DP72 attention + EP72, DeepEP low-latency
// kernels, two-batch overlap, EPLB with 32 redundant experts), 256 requests
// per GPU, 2000-token KV cache: 22,282 output tokens/s per node
// (https://lmsys.org/blog/2025-05-05-large-scale-ep/, "Performance Analysis
// of Prefill and Decode Phases" and the decode profile table; headline
// 22.3k). The same blog's two-batch-overlap ablation gives 22,310 with it and
// a 25.5% speedup over the run without it, so 22,310 / 1.255 = 17,777
// without overlap; the cost model has no overlap of communication with
// compute, and it is within 30% of both.
TEST(PublishedMultiNodeTest, SglangDecodeEp72On9H100NodesWithin30Percent) {
  const PoolRates r = Evaluate("sglang_deepseek_96xh100.yaml");
  ASSERT_TRUE(r.feasible);
  EXPECT_LE(std::abs(Error(r.output_tokens_per_s_per_decode_node, 22282)), 0.30)
      << r.output_tokens_per_s_per_decode_node;
  EXPECT_LE(
      std::abs(Error(r.output_tokens_per_s_per_decode_node, 22310 / 1.255)),
      0.30)
      << r.output_tokens_per_s_per_decode_node;
  // The blog's inter-token latency is ~100 ms at this scale ("Limitations").
  EXPECT_GT(r.tpot_seconds, 0.07);
  EXPECT_LT(r.tpot_seconds, 0.13);
}

// SGLang, 4 prefill nodes (DP32 + EP32, DeepEP normal kernels, two-batch
// overlap), 16,384 tokens per GPU per pass: 57,674 / 54,543 / 50,302 input
// tokens/s per node at 1K / 2K / 4K prompts (same blog, "Prefill Phase");
// the headline 52.3k is at 2000 tokens. The model predicts 21-26% less: it
// adds the all-to-all (60% of a MoE layer here) to the compute where the
// engine overlaps the two micro-batches (docs: "Published multi-node
// figures"). Within 30%, and below, as the missing overlap makes it: a
// prediction above these would mean another term moved.
TEST(PublishedMultiNodeTest, SglangPrefillEp32On4H100NodesWithin30Percent) {
  struct Case {
    int isl;
    int prompts_per_gpu;  // 16,384 tokens per GPU per pass
    double published;
  };
  for (const Case& c : {Case{1000, 16, 57674}, Case{2000, 8, 54543},
                        Case{2000, 8, 52300}, Case{4096, 4, 50302}}) {
    // At 4K the decode pool holds 128 requests per GPU (the blog's 4K decode
    // batch); the plan is only feasible when both pools fit.
    const PoolRates r = Evaluate("sglang_deepseek_96xh100.yaml",
                                 {.input_tokens = c.isl,
                                  .prefill_batch = c.prompts_per_gpu,
                                  .decode_batch = c.isl > 2000 ? 128 * 72 : 0});
    ASSERT_TRUE(r.feasible) << c.isl;
    const double error =
        Error(r.input_tokens_per_s_per_prefill_node, c.published);
    EXPECT_LE(std::abs(error), 0.30)
        << c.isl << ": " << r.input_tokens_per_s_per_prefill_node;
    EXPECT_LT(error, 0) << c.isl;
  }
}

// The balanced-routing prefill figures of the same blog's profile table (4K
// prompts, 16,384 tokens per GPU): DeepSeek's own profile 62,713 and SGLang
// with simulated perfect EPLB 59,337 input tokens/s per node. The model's
// expert load is the near-balanced Poisson maximum, so these are its
// like-for-like figures, and without two-batch overlap it is 37-41% below
// them: outside 30%. The documented bound: below, by at most 45%.
TEST(PublishedMultiNodeTest, BalancedPrefillProfilesMissOnlyTheOverlap) {
  const PoolRates r = Evaluate(
      "sglang_deepseek_96xh100.yaml",
      {.input_tokens = 4096, .prefill_batch = 4, .decode_batch = 128 * 72});
  ASSERT_TRUE(r.feasible);
  for (double published : {62713.0, 59337.0}) {
    const double error =
        Error(r.input_tokens_per_s_per_prefill_node, published);
    EXPECT_LT(error, 0) << published;
    EXPECT_GT(error, -0.45) << published;
  }
}

// DeepSeek's service on H800 (open-infra-index day 6): 14.8k output tokens/s
// per decode node (EP144 over 18 nodes, mean KV length 4,989, 128 requests
// per GPU) and 73.7k input tokens/s per prefill node (EP32 over 4 nodes)
// including the 56.3% of input tokens served from the on-disk KV cache, i.e.
// 73.7k x 0.437 = 32.2k computed. Both are 24-hour averages of a production
// service that also runs multi-token prediction (more tokens per decode step)
// and is not always at full load (fewer), which the model does not know: a
// looser comparison than SGLang's fixed-batch runs, still within 30%.
TEST(PublishedMultiNodeTest, DeepSeekH800ServiceWithin30Percent) {
  const PoolRates r = Evaluate("deepseek_h800_production.yaml");
  ASSERT_TRUE(r.feasible);
  EXPECT_LE(std::abs(Error(r.output_tokens_per_s_per_decode_node, 14800)), 0.30)
      << r.output_tokens_per_s_per_decode_node;
  EXPECT_LE(std::abs(Error(r.input_tokens_per_s_per_prefill_node,
                           73700 * (1 - 0.563))),
            0.30)
      << r.input_tokens_per_s_per_prefill_node;
}

// vLLM wide-EP on H200 (held-out hardware, compared only): 2.2k output
// tokens/s per GPU in decode (DP16 + EP16 over 2 nodes). The posts give the
// batch only in their figures, so the check is that the published rate lies
// inside what the model predicts over 32-256 requests per GPU at the guide's
// 1000/1000-token workload.
TEST(PublishedMultiNodeTest, VllmWideEpH200InsideTheModelsBatchRange) {
  const PoolRates low =
      Evaluate("vllm_wide_ep_32xh200.yaml", {.decode_batch = 32 * 16});
  const PoolRates high =
      Evaluate("vllm_wide_ep_32xh200.yaml", {.decode_batch = 256 * 16});
  ASSERT_TRUE(low.feasible);
  ASSERT_TRUE(high.feasible);
  EXPECT_LT(low.output_tokens_per_s_per_decode_node / 8, 2200);
  EXPECT_GT(high.output_tokens_per_s_per_decode_node / 8, 2200);
}

}  // namespace
}  // namespace shardplan::simulator
