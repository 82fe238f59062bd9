// Workload traffic fields: each bad value is INVALID_ARGUMENT naming the
// field and the value; good ones reach TrafficDims; a plan evaluated at a
// request rate gets percentiles and a max rate consistent with them.
#include "simulator/traffic_spec.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/spec_text.h"
#include "simulator/cost_model.h"
#include "simulator/spec.h"
#include "simulator/traffic_costing.h"
#include "tests/simulator/disaggregated_plan.h"

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

std::unique_ptr<const CostModel> ModelOf(const std::string& yaml) {
  shardplan::v1::EvaluateRequest request;
  EXPECT_TRUE(spec_text::Parse(yaml, &request).ok()) << yaml;
  absl::StatusOr<Problem> problem =
      ProblemFromProto(request.model(), request.cluster(), request.workload());
  EXPECT_TRUE(problem.ok()) << problem.status();
  if (!problem.ok()) return nullptr;
  auto model = CostModel::Create(*problem);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? std::move(*model) : nullptr;
}

constexpr char kDisaggWorkload[] = R"(
model: {catalogName: llama-3.1-8b}
cluster: {hardware: h100-sxm-80gb, numGpus: 8}
workload: {inputTokens: 2000, outputTokens: 1000, requestRate: RATE,
           inputTokensDistribution: {kind: lognormal, mean: 2000, sigma: 0.8,
                                     min: 16, max: 16000},
           sloPercentile: 99, maxTtftMs: 1500, maxTpotMs: 40}
)";

std::string DisaggYaml(double rate) {
  std::string yaml = kDisaggWorkload;
  yaml.replace(yaml.find("RATE"), 4, std::to_string(rate));
  return yaml;
}

// Each pool its own queue: the plan carries the smaller of the pools' rates,
// and moving GPUs from one pool to the other moves the limit with them.
TEST(TrafficSpecTest, DisaggregatedPoolsQueueSeparately) {
  auto model = ModelOf(DisaggYaml(5));
  ASSERT_NE(model, nullptr);
  const PlanDims prefill_light = Disagg(1, 1, 7, 1);
  const PlanDims prefill_heavy = Disagg(6, 1, 2, 1);
  for (const PlanDims& plan : {prefill_light, prefill_heavy})
    ASSERT_TRUE(model->ValidatePlan(plan).ok()) << model->ValidatePlan(plan);
  const TrafficPrediction light = PredictTraffic(*model, prefill_light);
  const TrafficPrediction heavy = PredictTraffic(*model, prefill_heavy);
  for (const TrafficPrediction* t : {&light, &heavy}) {
    ASSERT_TRUE(t->computed);
    EXPECT_TRUE(t->disaggregated);
    EXPECT_GT(t->prefill_max_request_rate, 0);
    EXPECT_GT(t->decode_max_request_rate, 0);
    EXPECT_DOUBLE_EQ(t->max_request_rate, std::min(t->prefill_max_request_rate,
                                                   t->decode_max_request_rate));
    // The decode pool takes no prompt work; the prefill pool no decode.
    EXPECT_EQ(t->steps.prefill_token_seconds, 0);
    EXPECT_EQ(t->prefill_steps.decode_request_seconds, 0);
  }
  // One prefill GPU for seven decode GPUs: the prefill pool binds; six for
  // two: the decode pool does.
  EXPECT_LT(light.prefill_max_request_rate, light.decode_max_request_rate);
  EXPECT_GT(heavy.prefill_max_request_rate, heavy.decode_max_request_rate);
  EXPECT_NEAR(heavy.prefill_max_request_rate / light.prefill_max_request_rate,
              6, 6 * 0.05);
  EXPECT_NEAR(light.decode_max_request_rate / heavy.decode_max_request_rate,
              3.5, 3.5 * 0.05);
  // TTFT = the prefill pool's + the handoff + the decode pool's first step.
  ASSERT_TRUE(light.queueing.stable);
  for (int k = 0; k < 3; ++k) {
    EXPECT_NEAR(light.queueing.ttft_seconds[k],
                light.prefill_queueing.ttft_seconds[k] + light.handoff_seconds +
                    light.decode_queueing.ttft_mean_seconds,
                1e-12);
    EXPECT_EQ(light.queueing.tpot_seconds[k],
              light.decode_queueing.tpot_seconds[k]);
  }
  EXPECT_GT(light.handoff_seconds, 0);
  // Above the prefill pool's limit: unstable.
  auto over = ModelOf(DisaggYaml(1.5 * light.prefill_max_request_rate));
  ASSERT_NE(over, nullptr);
  EXPECT_LT(PredictTraffic(*over, prefill_light).goodput_requests_per_s,
            1.5 * light.prefill_max_request_rate);
}

// The pools' queues are the single-queue model of each pool's engine loop at
// the pool's share of the rate (the closed forms checked against the batcher
// simulation in queueing_test.cc).
TEST(TrafficSpecTest, DisaggregatedPoolsAreTheQueueingModelPerInstance) {
  auto model = ModelOf(DisaggYaml(3));
  ASSERT_NE(model, nullptr);
  const PlanDims plan = Disagg(2, 1, 6, 1);
  const TrafficPrediction t = PredictTraffic(*model, plan);
  ASSERT_TRUE(t.computed);
  ASSERT_EQ(t.prefill_queues, 2);
  ASSERT_EQ(t.replicas, 6);
  const TrafficDims& traffic = model->problem().workload.traffic;
  LengthDistribution one, none;
  one.mean = 1;
  const QueueingPrediction prefill =
      PredictQueueing(t.prefill_steps, Discretize(traffic.input),
                      Discretize(one), traffic.request_rate / 2);
  const QueueingPrediction decode =
      PredictQueueing(t.steps, Discretize(none), Discretize(traffic.output),
                      traffic.request_rate / 6);
  ASSERT_TRUE(prefill.stable && decode.stable);
  for (int k = 0; k < 3; ++k) {
    EXPECT_DOUBLE_EQ(t.prefill_queueing.ttft_seconds[k],
                     prefill.ttft_seconds[k]);
    EXPECT_DOUBLE_EQ(t.queueing.tpot_seconds[k], decode.tpot_seconds[k]);
  }
  EXPECT_DOUBLE_EQ(t.queueing.running_batch, decode.running_batch);
}

// The chunked-prefill budget follows the engine and the GPU's memory.
TEST(TrafficSpecTest, ChunkedPrefillBudgetFollowsTheEngine) {
  const auto budget = [](const std::string& engine,
                         const std::string& hardware) {
    std::string yaml =
        "model: {catalogName: llama-3.1-8b}\ncluster: {hardware: " + hardware +
        ", numGpus: 8}\nworkload: {inputTokens: 12000, "
        "outputTokens: 200, requestRate: 1";
    if (!engine.empty()) yaml += ", engine: " + engine;
    yaml += "}\n";
    auto model = ModelOf(yaml);
    return model == nullptr ? -1 : ChunkedPrefillTokens(model->problem());
  };
  EXPECT_EQ(budget("", "h100-sxm-80gb"), 8192);
  EXPECT_EQ(budget("vllm", "b200-sxm-180gb"), 8192);
  EXPECT_EQ(budget("sglang", "h100-sxm-80gb"), 8192);
  EXPECT_EQ(budget("sglang", "h200-sxm-141gb"), 8192);
  EXPECT_EQ(budget("sglang", "b200-sxm-180gb"), 16384);
  // TensorRT-LLM does not split a prompt: the budget admits the 12,000-token
  // prompt with its chat template.
  EXPECT_EQ(budget("trtllm", "h100-sxm-80gb"), 12000 + 256);
  // And the queueing model uses it.
  auto sglang = ModelOf(
      "model: {catalogName: llama-3.1-8b}\ncluster: {hardware: "
      "b200-sxm-180gb, numGpus: 8}\nworkload: {inputTokens: 2000, "
      "outputTokens: 200, requestRate: 1, engine: sglang}\n");
  ASSERT_NE(sglang, nullptr);
  PlanDims tp1;
  tp1.replicas = 8;
  const TrafficPrediction t = StepTimesOf(*sglang, tp1);
  ASSERT_TRUE(t.computed);
  EXPECT_EQ(t.steps.chunk_tokens, 16384);
}

// The calibration bands carried through the queue: each percentile inside
// its band, the high end at least the step times' ratio above (slower steps
// at a fixed rate also load the queue more).
TEST(TrafficSpecTest, PercentileBandsAtARate) {
  auto model = ModelOf(R"(
model: {catalogName: llama-3.1-70b}
cluster: {hardware: h100-sxm-80gb, numGpus: 8}
workload: {inputTokens: 1000, outputTokens: 200, requestRate: 3,
           sloPercentile: 99, maxTtftMs: 4000, maxTpotMs: 100}
)");
  ASSERT_NE(model, nullptr);
  PlanDims plan;
  plan.tp = 8;
  shardplan::v1::Prediction p =
      PredictionToProto(model->Evaluate(plan), model->problem());
  ASSERT_TRUE(p.has_ttft_ms_range());
  const double ttft_low = p.ttft_ms_range().low() / p.ttft_ms();
  const double ttft_high = p.ttft_ms_range().high() / p.ttft_ms();
  AddTrafficPrediction(*model, plan, 0, &p);
  ASSERT_TRUE(p.has_ttft_ms_p99_range());
  const auto inside = [](const shardplan::v1::Range& r, double v) {
    return r.low() <= v && v <= r.high() && r.low() < r.high();
  };
  EXPECT_TRUE(inside(p.ttft_ms_range(), p.ttft_ms()));
  EXPECT_TRUE(inside(p.tpot_ms_range(), p.tpot_ms()));
  EXPECT_TRUE(inside(p.ttft_ms_p50_range(), p.ttft_ms_p50()));
  EXPECT_TRUE(inside(p.ttft_ms_p90_range(), p.ttft_ms_p90()));
  EXPECT_TRUE(inside(p.ttft_ms_p99_range(), p.ttft_ms_p99()));
  EXPECT_TRUE(inside(p.tpot_ms_p50_range(), p.tpot_ms_p50()));
  EXPECT_TRUE(inside(p.tpot_ms_p99_range(), p.tpot_ms_p99()));
  // Slower steps at a fixed rate load the queue more: the high end of the
  // p99 TTFT is at least the step-time ratio above it.
  EXPECT_GE(p.ttft_ms_p99_range().high() / p.ttft_ms_p99(), ttft_high * 0.99);
  EXPECT_LT(p.ttft_ms_p99_range().low(), p.ttft_ms_p99());
  EXPECT_LT(ttft_low, 1);
}

// Pipeline stages work on different micro-batches at once (the engines keep
// pp batches in flight): a prompt occupies the loop for its busiest stage's
// time (and the per-request overhead, in the loop as without stages), each
// micro-batch has its own chunk budget, and the rest of the chain is latency
// of that prompt alone. So a prefill-bound replica of two stages on two GPUs
// carries more prompts than one stage on one GPU, by the ratio of their
// per-token loop times, at about the same idle TTFT. Charging the whole
// chain to the loop (the model before) gave both replicas the same rate.
TEST(TrafficSpecTest, PipelineStagesPrefillDifferentMicroBatches) {
  constexpr int kInput = 4000;
  const auto model_on = [](int gpus) {
    return ModelOf(
        "model: {catalogName: llama-3.1-8b}\ncluster: {hardware: "
        "h100-sxm-80gb, numGpus: " +
        std::to_string(gpus) + "}\nworkload: {inputTokens: " +
        std::to_string(kInput) + ", outputTokens: 2, requestRate: 0.5}\n");
  };
  auto one_gpu = model_on(1), two_gpus = model_on(2);
  ASSERT_NE(one_gpu, nullptr);
  ASSERT_NE(two_gpus, nullptr);
  PlanDims pp1, pp2;
  pp2.pp = 2;
  ASSERT_TRUE(one_gpu->ValidatePlan(pp1).ok()) << one_gpu->ValidatePlan(pp1);
  ASSERT_TRUE(two_gpus->ValidatePlan(pp2).ok()) << two_gpus->ValidatePlan(pp2);
  const TrafficPrediction single = PredictTraffic(*one_gpu, pp1);
  const TrafficPrediction staged = PredictTraffic(*two_gpus, pp2);
  ASSERT_TRUE(single.computed && staged.computed);
  EXPECT_EQ(single.steps.pipeline_lag_token_seconds, 0);
  EXPECT_EQ(staged.steps.chunk_tokens, 2 * single.steps.chunk_tokens);
  // Two stages of half the layers each: the busiest carries about half the
  // chain's compute, the other half is the lag.
  const double overhead =
      two_gpus->calibration().prefill_overhead_seconds / kInput;
  const double chain = staged.steps.prefill_token_seconds +
                       staged.steps.pipeline_lag_token_seconds;
  EXPECT_NEAR(
      (staged.steps.prefill_token_seconds - overhead) / (chain - overhead), 0.5,
      0.1);
  EXPECT_NEAR(chain / single.steps.prefill_token_seconds, 1, 0.15);
  const double loop_ratio =
      single.steps.prefill_token_seconds / staged.steps.prefill_token_seconds;
  EXPECT_GT(loop_ratio, 1.2);
  EXPECT_NEAR(staged.max_request_rate / single.max_request_rate, loop_ratio,
              0.15 * loop_ratio);
  // At a low rate a prompt still passes both stages: about the one-GPU TTFT.
  ASSERT_TRUE(single.queueing.stable && staged.queueing.stable);
  EXPECT_NEAR(staged.queueing.ttft_seconds[0] / single.queueing.ttft_seconds[0],
              1, 0.15);
}

// A streamed plan's max_request_rate is where its reported (streamed)
// percentiles reach the SLO: at that rate the SLO percentile is within the
// SLO, and just past the bisection's bracket (max / (1 - tolerance)) it is
// not; goodput agrees (at least the percentile's share of both SLOs at the
// max, less than it above). For an aggregated and a disaggregated plan, each
// SLO percentile, the TTFT or the TPOT SLO binding.
std::string StreamedYaml(double rate, int percentile, int max_ttft_ms,
                         int max_tpot_ms) {
  return absl::StrFormat(R"(
model: {catalogName: llama-3.1-8b}
cluster: {hardware: h100-sxm-80gb, numGpus: 8}
workload: {inputTokens: 2000, outputTokens: 400, requestRate: %.17g,
           inputTokensDistribution: {kind: lognormal, mean: 2000, sigma: 0.8,
                                     min: 16, max: 16000},
           sloPercentile: %d, maxTtftMs: %d, maxTpotMs: %d}
)",
                         rate, percentile, max_ttft_ms, max_tpot_ms);
}

bool MeetsAt(const TrafficPrediction& t, const WorkloadDims& w) {
  const int p = w.traffic.slo_percentile;
  return t.queueing.stable &&
         LatencyAt(t.queueing, p, true) <= w.max_ttft_seconds &&
         LatencyAt(t.queueing, p, false) <= w.max_tpot_seconds;
}

TEST(TrafficSpecTest, StreamedMaxRequestRateMatchesTheStreamedPercentiles) {
  struct Case {
    const char* name;
    PlanDims plan;
    int percentile, max_ttft_ms, max_tpot_ms;
  };
  PlanDims tp2;
  tp2.tp = 2;
  tp2.replicas = 4;
  const std::vector<Case> cases = {
      {"tp2x4 p99 ttft", tp2, 99, 1500, 1000},
      {"tp2x4 p90 ttft", tp2, 90, 800, 1000},
      {"tp2x4 p95 ttft", tp2, 95, 1000, 1000},
      {"tp2x4 p50 tpot", tp2, 50, 60000, 12},
      {"tp2x4 mean", tp2, 0, 600, 1000},
      {"disagg 2+6 p99", Disagg(2, 1, 6, 1), 99, 1500, 40},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const auto yaml = [&](double rate) {
      return StreamedYaml(rate, c.percentile, c.max_ttft_ms, c.max_tpot_ms);
    };
    auto model = ModelOf(yaml(1));
    ASSERT_NE(model, nullptr);
    ASSERT_TRUE(model->ValidatePlan(c.plan).ok())
        << model->ValidatePlan(c.plan);
    // CPU time of the pricing with and without the bisection (stopped
    // before its first trial rate), for the docs.
    std::clock_t begin = std::clock();
    const TrafficPrediction t = PredictStreamedTraffic(*model, c.plan);
    const double full_ms = 1e3 * (std::clock() - begin) / CLOCKS_PER_SEC;
    begin = std::clock();
    PredictStreamedTraffic(*model, c.plan, [] { return true; });
    const double chain_ms = 1e3 * (std::clock() - begin) / CLOCKS_PER_SEC;
    ASSERT_TRUE(t.computed);
    EXPECT_FALSE(t.stopped);
    EXPECT_LE(t.streamed_rate_probes, kStreamedRateMaxProbes);
    const double max = t.max_request_rate;
    ASSERT_GT(max, 1);
    const double closed_form = PredictTraffic(*model, c.plan).max_request_rate;
    std::printf(
        "%s: max_request_rate streamed %.4g closed forms %.4g (%+.1f%%)"
        ", %d trial rates, %.1f ms CPU (%.1f ms without them)\n",
        c.name, max, closed_form, 100 * (closed_form / max - 1),
        t.streamed_rate_probes, full_ms, chain_ms);

    auto at_max = ModelOf(yaml(max));
    ASSERT_NE(at_max, nullptr);
    const WorkloadDims& w = at_max->problem().workload;
    const TrafficPrediction at = PredictStreamedTraffic(*at_max, c.plan);
    EXPECT_TRUE(MeetsAt(at, w))
        << "TTFT " << LatencyAt(at.queueing, c.percentile, true) << " TPOT "
        << LatencyAt(at.queueing, c.percentile, false);
    // The bisection started from another offered rate finds the same limit.
    EXPECT_NEAR(at.max_request_rate, max, 2 * kStreamedRateTolerance * max);
    const double need = c.percentile > 0 ? c.percentile / 100.0 : 0.0;
    EXPECT_GE(at.goodput_requests_per_s, max * need * need * (1 - 1e-12));

    const double past = max / (1 - kStreamedRateTolerance) * 1.001;
    auto above = ModelOf(yaml(past));
    ASSERT_NE(above, nullptr);
    const TrafficPrediction over = PredictStreamedTraffic(*above, c.plan);
    EXPECT_FALSE(MeetsAt(over, above->problem().workload))
        << "TTFT " << LatencyAt(over.queueing, c.percentile, true) << " TPOT "
        << LatencyAt(over.queueing, c.percentile, false);
    if (c.percentile > 0) {
      EXPECT_LT(over.goodput_requests_per_s, past * need);
    }

    // What the API says: feasible at the max, not past it.
    shardplan::v1::Prediction p =
        PredictionToProto(at_max->Evaluate(c.plan), at_max->problem());
    ASSERT_TRUE(p.feasible()) << p.infeasible_reason();
    AddTrafficPrediction(*at_max, c.plan, 0, &p);
    EXPECT_TRUE(p.feasible()) << p.infeasible_reason();
    EXPECT_DOUBLE_EQ(p.max_request_rate(), at.max_request_rate);
    shardplan::v1::Prediction q =
        PredictionToProto(above->Evaluate(c.plan), above->problem());
    AddTrafficPrediction(*above, c.plan, 0, &q);
    EXPECT_FALSE(q.feasible());
  }
}

// The bisection asks `stop` between its chains and gives up once it says so.
TEST(TrafficSpecTest, StreamedPricingStopsWhenAsked) {
  auto model = ModelOf(StreamedYaml(5, 99, 1500, 1000));
  ASSERT_NE(model, nullptr);
  PlanDims plan;
  plan.tp = 2;
  plan.replicas = 4;
  int asked = 0;
  const TrafficPrediction t =
      PredictStreamedTraffic(*model, plan, [&] { return ++asked > 1; });
  EXPECT_TRUE(t.stopped);
  EXPECT_LE(t.streamed_rate_probes, 1);
  shardplan::v1::Prediction p =
      PredictionToProto(model->Evaluate(plan), model->problem());
  EXPECT_FALSE(AddTrafficPrediction(*model, plan, 0, &p, [] { return true; }));
  EXPECT_TRUE(AddTrafficPrediction(*model, plan, 0, &p));
}
}  // namespace
}  // namespace shardplan::simulator
