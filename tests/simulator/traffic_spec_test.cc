// Workload traffic fields: each bad value is INVALID_ARGUMENT naming the
// field and the value; good ones reach TrafficDims; a plan evaluated at a
// request rate gets percentiles and a max rate consistent with them.
#include "simulator/traffic_spec.h"

#include <cmath>
#include <limits>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/spec_text.h"
#include "simulator/cost_model.h"
#include "simulator/spec.h"

namespace shardplan::simulator {
namespace {

using ::shardplan::v1::Workload;
using ::testing::HasSubstr;

Workload Parse(const std::string& yaml) {
  Workload w;
  EXPECT_TRUE(
      spec_text::Parse("inputTokens: 1000\noutputTokens: 200\n" + yaml, &w)
          .ok())
      << yaml;
  return w;
}

absl::Status Check(const Workload& w) {
  return WorkloadDimsFromProto(w).status();
}

void ExpectInvalid(const Workload& w, const std::string& field,
                   const std::string& value) {
  const absl::Status s = Check(w);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(field));
  EXPECT_THAT(std::string(s.message()), HasSubstr(value));
}

TEST(TrafficSpecTest, RejectsBadRates) {
  ExpectInvalid(Parse("requestRate: -1\n"), "workload.request_rate", "-1");
  Workload nan = Parse("");
  nan.set_request_rate(std::numeric_limits<double>::quiet_NaN());
  ExpectInvalid(nan, "workload.request_rate", "NaN");
  Workload inf = Parse("");
  inf.set_request_rate(std::numeric_limits<double>::infinity());
  ExpectInvalid(inf, "workload.request_rate", "Infinity");
  ExpectInvalid(Parse("requestRate: 5\nconcurrency: 8\n"),
                "workload.request_rate", "alternatives");
  ExpectInvalid(Parse("requestRate: 5\nprefixCacheHitRate: 1.5\n"),
                "workload.prefix_cache_hit_rate", "1.5");
}

TEST(TrafficSpecTest, RejectsUnknownPercentiles) {
  ExpectInvalid(Parse("requestRate: 5\nsloPercentile: 42\n"),
                "workload.slo_percentile", "42");
  ExpectInvalid(Parse("sloPercentile: 99\n"), "workload.slo_percentile",
                "request_rate");
}

TEST(TrafficSpecTest, RejectsEmptyAndInvertedDistributions) {
  ExpectInvalid(
      Parse("requestRate: 5\ninputTokensDistribution: {kind: uniform, min: "
            "8000, max: 500}\n"),
      "workload.input_tokens_distribution.max", "500");
  ExpectInvalid(Parse("requestRate: 5\noutputTokensDistribution: {kind: "
                      "histogram}\n"),
                "workload.output_tokens_distribution.buckets", "empty");
  ExpectInvalid(Parse("requestRate: 5\ninputTokensDistribution: {kind: "
                      "histogram, buckets: [{tokens: 100, weight: 0}]}\n"),
                "workload.input_tokens_distribution.buckets", "0");
  ExpectInvalid(Parse("requestRate: 5\ninputTokensDistribution: {kind: "
                      "zipf}\n"),
                "workload.input_tokens_distribution.kind", "zipf");
  ExpectInvalid(Parse("requestRate: 5\ninputTokensDistribution: {kind: "
                      "lognormal, mean: 1000, sigma: -1}\n"),
                "workload.input_tokens_distribution.sigma", "-1");
  ExpectInvalid(Parse("inputTokensDistribution: {kind: fixed, mean: 10}\n"),
                "workload.input_tokens_distribution", "request_rate");
}

TEST(TrafficSpecTest, AcceptsDistributionsAndKeepsTheClosedLoop) {
  Workload w = Parse(
      "requestRate: 40\nsloPercentile: 99\ninputTokensDistribution: {kind: "
      "uniform, min: 500, max: 8000}\noutputTokensDistribution: {kind: "
      "histogram, buckets: [{tokens: 100, weight: 1}, {tokens: 300, weight: "
      "3}]}\n");
  w.clear_input_tokens();  // the distribution's mean stands in
  absl::StatusOr<WorkloadDims> dims = WorkloadDimsFromProto(w);
  ASSERT_TRUE(dims.ok()) << dims.status();
  EXPECT_EQ(dims->input_tokens, 4250);
  EXPECT_EQ(dims->traffic.request_rate, 40);
  EXPECT_EQ(dims->traffic.slo_percentile, 99);
  EXPECT_EQ(dims->traffic.input.kind, LengthKind::kUniform);
  ASSERT_EQ(dims->traffic.output.buckets.size(), 2u);
  EXPECT_DOUBLE_EQ(dims->traffic.output.buckets[1].second, 0.75);
  // A workload without the new fields means what it meant.
  absl::StatusOr<WorkloadDims> closed = WorkloadDimsFromProto(Parse(""));
  ASSERT_TRUE(closed.ok());
  EXPECT_EQ(closed->traffic.request_rate, 0);
  EXPECT_EQ(closed->traffic.input.kind, LengthKind::kFixed);
  EXPECT_EQ(closed->traffic.input.mean, 1000);
}

// Llama-3.1-70B, tp 8 on 8 H100s, 1000/200 tokens: percentiles ordered,
// p99 TTFT at max_request_rate at the SLO, a rate above it infeasible.
TEST(TrafficSpecTest, PredictionAtARate) {
  shardplan::v1::EvaluateRequest request;
  ASSERT_TRUE(spec_text::Parse(R"(
model: {catalogName: llama-3.1-70b}
cluster: {hardware: h100-sxm-80gb, numGpus: 8}
workload: {inputTokens: 1000, outputTokens: 200, requestRate: 2,
           sloPercentile: 99, maxTtftMs: 2000, maxTpotMs: 60}
plan: {tp: 8}
)",
                               &request)
                  .ok());
  absl::StatusOr<Problem> problem =
      ProblemFromProto(request.model(), request.cluster(), request.workload());
  ASSERT_TRUE(problem.ok()) << problem.status();
  auto model = CostModel::Create(*problem);
  ASSERT_TRUE(model.ok());
  absl::StatusOr<PlanDims> plan = PlanDimsFromProto(request.plan());
  ASSERT_TRUE(plan.ok());
  const Evaluation e = (*model)->Evaluate(*plan);
  shardplan::v1::Prediction p = PredictionToProto(e, (*model)->problem());
  ASSERT_TRUE(p.feasible()) << p.infeasible_reason();
  AddTrafficPrediction(**model, *plan, 2.5, &p);
  EXPECT_TRUE(p.feasible()) << p.infeasible_reason();
  EXPECT_LT(p.ttft_ms_p50(), p.ttft_ms_p90());
  EXPECT_LT(p.ttft_ms_p90(), p.ttft_ms_p99());
  EXPECT_LE(p.tpot_ms_p50(), p.tpot_ms_p99());
  EXPECT_GT(p.max_request_rate(), 2);
  EXPECT_DOUBLE_EQ(p.cost_per_hour(), 20);
  // 2 req/s x 200 tokens = 1.44M tokens/hour at $20/hour.
  EXPECT_NEAR(p.cost_per_million_output_tokens(), 20 / 1.44, 1e-9);
  EXPECT_NEAR(p.goodput_requests_per_s(), 2, 0.05);

  // Just above the plan's capacity: infeasible, naming the rate it carries.
  request.mutable_workload()->set_request_rate(p.max_request_rate() * 1.2);
  problem =
      ProblemFromProto(request.model(), request.cluster(), request.workload());
  model = CostModel::Create(*problem);
  shardplan::v1::Prediction over =
      PredictionToProto((*model)->Evaluate(*plan), (*model)->problem());
  AddTrafficPrediction(**model, *plan, 0, &over);
  EXPECT_FALSE(over.feasible());
  EXPECT_THAT(over.infeasible_reason(), HasSubstr("at p99"));
}

}  // namespace
}  // namespace shardplan::simulator
