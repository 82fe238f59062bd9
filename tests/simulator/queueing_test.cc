// The closed-form queueing model (simulator/queueing.h) against a discrete-
// event simulation of the same continuous batcher (simulator/batcher_sim.h).
#include "simulator/queueing.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "gtest/gtest.h"
#include "simulator/batcher_sim.h"

namespace shardplan::simulator {
namespace {

struct Case {
  std::string name;
  StepTimes steps;
  LengthDistribution input;
  LengthDistribution output;
  // Held out when the previous formulas were chosen (the 2026-11-28 changes
  // were checked against all five cases; none fits a constant to any).
  bool held_out = false;
};

// Step times of the size the cost model gives for a 70B-class replica on
// H100s: ~10-20 ms per iteration, ~0.1 ms per running request, ~50 us per
// prompt token.
std::vector<Case> Cases() {
  std::vector<Case> cases;
  Case fixed{"fixed 1000/200, chunk 8192", {}, {}, {}};
  fixed.steps = {0.012, 0.00008, 0.00006, 8192, 0};
  fixed.input.mean = 1000;
  fixed.output.mean = 200;
  cases.push_back(fixed);
  Case uniform{"uniform 500-8000 / 100-400, chunk 2048", {}, {}, {}};
  uniform.steps = {0.015, 0.0001, 0.00005, 2048, 0};
  uniform.input = {LengthKind::kUniform, 500, 8000, 4250, 0, {}};
  uniform.output = {LengthKind::kUniform, 100, 400, 250, 0, {}};
  cases.push_back(uniform);
  Case lognormal{"lognormal 2000 (0.8) / 300 (0.6), chunk 8192", {}, {}, {}};
  lognormal.steps = {0.02, 0.00015, 0.00004, 8192, 0};
  lognormal.input = {LengthKind::kLognormal, 16, 32000, 2000, 0.8, {}};
  lognormal.output = {LengthKind::kLognormal, 2, 4000, 300, 0.6, {}};
  cases.push_back(lognormal);
  Case histogram{
      "histogram 300/1500/6000 / 50/400/1000, chunk 4096", {}, {}, {}, true};
  histogram.steps = {0.010, 0.00012, 0.00005, 4096, 0};
  histogram.input = {LengthKind::kHistogram,
                     0,
                     0,
                     0,
                     0,
                     {{300, 0.5}, {1500, 0.35}, {6000, 0.15}}};
  histogram.output = {
      LengthKind::kHistogram, 0, 0, 0, 0, {{50, 0.3}, {400, 0.5}, {1000, 0.2}}};
  cases.push_back(histogram);
  Case small_chunk{
      "uniform 100-3000 / fixed 500, chunk 1024", {}, {}, {}, true};
  small_chunk.steps = {0.008, 0.00006, 0.00003, 1024, 0};
  small_chunk.input = {LengthKind::kUniform, 100, 3000, 1550, 0, {}};
  small_chunk.output.mean = 500;
  cases.push_back(small_chunk);
  return cases;
}

// The simulation's quantiles at one rate, the samples of `seeds` runs
// pooled; `spread` is the largest deviation of one seed's quantile from the
// pooled one (the simulation's own noise).
struct Simulated {
  std::array<double, 3> ttft{}, tpot{}, ttft_spread{}, tpot_spread{};
  double mean_running = 0;
};

constexpr double kQuantiles[] = {0.5, 0.9, 0.99};

Simulated Simulate(const Case& c, double rate, int requests, int seeds) {
  Simulated s;
  std::vector<double> ttft, tpot;
  std::vector<BatcherSimResult> runs;
  for (int seed = 1; seed <= seeds; ++seed) {
    runs.push_back(
        SimulateBatcher(c.steps, c.input, c.output, rate, requests, seed));
    const BatcherSimResult& r = runs.back();
    ttft.insert(ttft.end(), r.ttft_seconds.begin(), r.ttft_seconds.end());
    tpot.insert(tpot.end(), r.tpot_seconds.begin(), r.tpot_seconds.end());
    s.mean_running += r.mean_running / seeds;
  }
  for (int k = 0; k < 3; ++k) {
    s.ttft[k] = SampleQuantile(&ttft, kQuantiles[k]);
    s.tpot[k] = SampleQuantile(&tpot, kQuantiles[k]);
    for (BatcherSimResult& r : runs) {
      s.ttft_spread[k] = std::max(
          s.ttft_spread[k],
          std::abs(SampleQuantile(&r.ttft_seconds, kQuantiles[k]) / s.ttft[k] -
                   1));
      s.tpot_spread[k] = std::max(
          s.tpot_spread[k],
          std::abs(SampleQuantile(&r.tpot_seconds, kQuantiles[k]) / s.tpot[k] -
                   1));
    }
  }
  return s;
}

double RelativeError(double predicted, double simulated) {
  return std::abs(predicted / simulated - 1);
}

// One table row: formula / simulation (error) per quantity, ms.
std::string Row(const Case& c, double load, const QueueingPrediction& q,
                const Simulated& s) {
  std::string row = absl::StrFormat("| %s | %.2f |", c.name, load);
  std::string tpot;
  for (int k = 0; k < 3; ++k) {
    absl::StrAppendFormat(&row, " %.0f / %.0f (%+.0f%%) |",
                          q.ttft_seconds[k] * 1e3, s.ttft[k] * 1e3,
                          100 * (q.ttft_seconds[k] / s.ttft[k] - 1));
    absl::StrAppendFormat(&tpot, " %.1f / %.1f (%+.0f%%) |",
                          q.tpot_seconds[k] * 1e3, s.tpot[k] * 1e3,
                          100 * (q.tpot_seconds[k] / s.tpot[k] - 1));
  }
  return row + tpot;
}

struct Load {
  double load;
  double tolerance;
  // Simulated requests per seed (4 seeds).
  int requests = 50000;
};

// Each case at each load (a share of its stability limit) against 4 x 50,000
// simulated requests: TTFT p50/p90/p99 within the load's tolerance, and with
// `decode` the running batch and TPOT p50/p90/p99 too.
using Predictor = QueueingPrediction (*)(const StepTimes&, const LengthPoints&,
                                         const LengthPoints&, double);

void ExpectAgreement(const std::vector<Case>& cases,
                     absl::Span<const Load> loads, bool decode,
                     Predictor predict = PredictQueueing) {
  for (const Case& c : cases) {
    const LengthPoints in = Discretize(c.input), out = Discretize(c.output);
    const double limit = MaxRequestRate(c.steps, in, out, 0, 0, 0);
    ASSERT_GT(limit, 0) << c.name;
    for (const auto [load, tolerance, requests] : loads) {
      SCOPED_TRACE(c.name + " at " + std::to_string(load) + " of the limit");
      const double rate = load * limit;
      const QueueingPrediction q = predict(c.steps, in, out, rate);
      ASSERT_TRUE(q.stable);
      const Simulated sim = Simulate(c, rate, requests, 4);
      std::cout << Row(c, load, q, sim) << "\n";
      if (decode) {
        EXPECT_LT(RelativeError(q.running_batch, sim.mean_running), tolerance);
      }
      for (int k = 0; k < 3; ++k) {
        if (decode) {
          EXPECT_LT(RelativeError(q.tpot_seconds[k], sim.tpot[k]), tolerance)
              << "TPOT q" << kQuantiles[k] << ": " << q.tpot_seconds[k]
              << " vs " << sim.tpot[k];
        }
        EXPECT_LT(RelativeError(q.ttft_seconds[k], sim.ttft[k]), tolerance)
            << "TTFT q" << kQuantiles[k] << ": " << q.ttft_seconds[k] << " vs "
            << sim.ttft[k];
      }
    }
  }
}

// TTFT and TPOT p50/p90/p99 and the running batch (Little's law) over a
// grid of loads, against 4 x 50,000 simulated requests (the simulation's own
// seed-to-seed spread is a few percent up to 85%, up to ~30% at 95%,
// docs/cost-model-and-calibration.md): every case, quantity and load within
// 10% up to 90% of the stability limit and 12% at 95% (measured 2026-11-29
// with the prefill capacity falling with the backlog and the backlogged
// fill from the realised wait: worst 8.8%, 9.8%, 11.9% at 85 / 90 / 95%,
// the histogram case's TPOT p99, the lognormal case's TTFT p90 and the
// small-chunk case's TTFT p90; before them 9.8%, 11.6%, 16.5%, at 95% the
// uniform case's TTFT p99). One bound per load, not per case; the docs
// state what is left near saturation.
TEST(QueueingTest, AgreesWithTheBatcherSimulation) {
  constexpr Load kLoads[] = {{0.1, 0.10}, {0.3, 0.10},  {0.5, 0.10},
                             {0.7, 0.10}, {0.85, 0.10}, {0.9, 0.10},
                             {0.95, 0.12}};
  ExpectAgreement(Cases(), kLoads, /*decode=*/true);
}

// The streamed plans' TTFT p50/p90/p99 (PredictStreamedQueueing: the prompt
// queue's bulk-service chain solved on a token grid) over the same grid of
// loads, against 4 x 50,000 simulated requests up to 85% of the limit and
// 4 x 200,000 at 90% and 95% (a 50,000-request run's warm-up tenth is too
// short there: its queue sits below a long run's, the uniform case's TTFT
// p50 at 95% 1,546 ms against 1,688 ms for 8 x 300,000). Within 10% up to
// 90% and 12% at 95% (measured 2026-11-29: worst 7.5% up to 90%, the
// histogram case's TTFT p99 at 90%; 11% at 95%, the uniform case's p50 and
// the histogram case's p99; the closed forms: 10% at 90% and 12% at 95%
// against the 50,000 draw, 13% and 15% against 8 x 300,000). TPOT is the
// closed forms' (AgreesWithTheBatcherSimulation).
TEST(QueueingTest, StreamedPercentilesAgreeWithTheBatcherSimulation) {
  constexpr Load kLoads[] = {
      {0.1, 0.10},  {0.3, 0.10},         {0.5, 0.10},         {0.7, 0.10},
      {0.85, 0.10}, {0.9, 0.10, 200000}, {0.95, 0.12, 200000}};
  ExpectAgreement(Cases(), kLoads, /*decode=*/false, PredictStreamedQueueing);
}

// A disaggregated prefill instance's engine loop: prompts only (no decode
// batch, one output token), so it stops between prompts. Step times of the
// size the cost model gives (Llama-3.1-8B on one H100: a = 6.7 ms, 68 us per
// prompt token; a 70B-class tp 8 instance: 12 ms, 40 us).
std::vector<Case> PrefillPoolCases() {
  std::vector<Case> cases;
  Case lognormal{"prefill pool, lognormal 2000 (0.8), chunk 8192", {}, {}, {}};
  lognormal.steps = {0.0067, 0, 0.000068, 8192, 0};
  lognormal.input = {LengthKind::kLognormal, 16, 16000, 2000, 0.8, {}};
  cases.push_back(lognormal);
  Case uniform{"prefill pool, uniform 500-8000, chunk 8192", {}, {}, {}};
  uniform.steps = {0.012, 0, 0.00004, 8192, 0};
  uniform.input = {LengthKind::kUniform, 500, 8000, 4250, 0, {}};
  cases.push_back(uniform);
  Case fixed{"prefill pool, fixed 1000, chunk 2048", {}, {}, {}};
  fixed.steps = {0.008, 0, 0.00003, 2048, 0};
  fixed.input.mean = 1000;
  cases.push_back(fixed);
  for (Case& c : cases) c.output.mean = 1;
  return cases;
}

// The prefill pool's TTFT p50/p90/p99 against 4 x 50,000 simulated prompts
// at 10-95% of its limit. Before the loop's idle time was modelled (the
// gated chain assumed back-to-back iterations, mostly empty ones of length
// a) the lognormal case was -29% / -27% / -11% at half the limit. Bounds as
// measured (worst case of the three, 2026-11-29): <= 8.3% up to 50% load,
// 11.6% at 70%, 4.6% at 85%, 5.0% at 90%, 10.3% at 95% (where the
// simulation's own seed spread is 15-54%). Before the backlogged fill was
// taken from the realised wait (the tokens arriving behind a prompt join
// its last iteration only until that starts) the p50 at 70% and 85% was
// +28% and +16% (bounds 30% and 20%).
TEST(QueueingTest, PrefillPoolAgreesWithTheBatcherSimulation) {
  constexpr Load kLoads[] = {{0.1, 0.10}, {0.3, 0.10},  {0.5, 0.10},
                             {0.7, 0.12}, {0.85, 0.10}, {0.9, 0.10},
                             {0.95, 0.11}};
  ExpectAgreement(PrefillPoolCases(), kLoads, /*decode=*/false);
}

// The prefill pools' TTFT on the streamed path (the chain of a loop that
// stops between prompts), against 4 x 50,000 simulated prompts up to 85%
// and 4 x 200,000 at 90-95%: within 10% up to 90% and 13% at 95%
// (measured 2026-11-29: worst 5.5% up to 90%; at 95% the lognormal pool's
// p99 -12.3%, 12.0 s against 13.7 s simulated, whose 50,000-prompt draw gave
// 12.7 s and the closed forms 11.9 s; the closed forms' worst below 95%:
// 12% at 70%, the fixed pool's p50).
TEST(QueueingTest, StreamedPrefillPoolAgreesWithTheBatcherSimulation) {
  constexpr Load kLoads[] = {
      {0.1, 0.10},  {0.3, 0.10},         {0.5, 0.10},         {0.7, 0.10},
      {0.85, 0.10}, {0.9, 0.10, 200000}, {0.95, 0.13, 200000}};
  ExpectAgreement(PrefillPoolCases(), kLoads, /*decode=*/false,
                  PredictStreamedQueueing);
}

// The docs table: every case up to 95% of the limit against 8 x 300,000
// simulated requests, with the simulation's seed-to-seed spread (the larger
// of TTFT's and TPOT's, over the three quantiles). Not part of the check
// (~1 min): build/bin/simulator_test --gtest_also_run_disabled_tests
// --gtest_filter=QueueingTest.DISABLED_PrintsTheDocsTable
TEST(QueueingTest, DISABLED_PrintsTheDocsTable) {
  for (const Case& c : Cases()) {
    const LengthPoints in = Discretize(c.input), out = Discretize(c.output);
    const double limit = MaxRequestRate(c.steps, in, out, 0, 0, 0);
    for (double load : {0.1, 0.3, 0.5, 0.7, 0.85, 0.9, 0.95}) {
      const double rate = load * limit;
      const QueueingPrediction q = PredictQueueing(c.steps, in, out, rate);
      const Simulated sim = Simulate(c, rate, 300000, 8);
      double ttft_spread = 0, tpot_spread = 0;
      for (int k = 0; k < 3; ++k) {
        ttft_spread = std::max(ttft_spread, sim.ttft_spread[k]);
        tpot_spread = std::max(tpot_spread, sim.tpot_spread[k]);
      }
      std::cout << Row(c, load, q, sim)
                << absl::StrFormat(" %.0f%% / %.0f%% | %.1f / %.1f |\n",
                                   100 * ttft_spread, 100 * tpot_spread,
                                   q.running_batch, sim.mean_running);
    }
  }
}

// The grid with the decode batch frozen at the formulas' running batch B
// (c_d = 0 and the iteration's fixed part a + c_d B, in both the formulas
// and the simulation): what is left is the prompt queue's own structure,
// and the difference to the table above is the batch's coupling to the
// queue (docs/cost-model-and-calibration.md, "Still outside 10%"). Not part
// of the check (~10 s): build/bin/simulator_test
// --gtest_also_run_disabled_tests
// --gtest_filter=QueueingTest.DISABLED_PrintsTheFrozenBatchCheck
TEST(QueueingTest, DISABLED_PrintsTheFrozenBatchCheck) {
  for (Case c : Cases()) {
    const LengthPoints in = Discretize(c.input), out = Discretize(c.output);
    const double limit = MaxRequestRate(c.steps, in, out, 0, 0, 0);
    const StepTimes live = c.steps;
    for (double load : {0.7, 0.85, 0.9, 0.95}) {
      const double rate = load * limit;
      c.steps = live;
      const double batch =
          PredictQueueing(c.steps, in, out, rate).running_batch;
      c.steps.iteration_seconds += c.steps.decode_request_seconds * batch;
      c.steps.decode_request_seconds = 0;
      const QueueingPrediction q = PredictQueueing(c.steps, in, out, rate);
      std::cout << Row(c, load, q, Simulate(c, rate, 50000, 4)) << "\n";
    }
  }
}

// CPU time per call of the closed forms (docs/benchmarks.md), the lognormal
// case at 70% of its limit. Not part of the check:
// build/bin/simulator_test --gtest_also_run_disabled_tests
// --gtest_filter=QueueingTest.DISABLED_PrintsTheCost
TEST(QueueingTest, DISABLED_PrintsTheCost) {
  const Case c = Cases()[2];
  const LengthPoints in = Discretize(c.input), out = Discretize(c.output);
  const double limit = MaxRequestRate(c.steps, in, out, 0, 0, 0);
  constexpr int kCalls = 2000;
  double sink = 0;
  std::clock_t start = std::clock();
  for (int i = 0; i < kCalls; ++i)
    sink += PredictQueueing(c.steps, in, out, 0.7 * limit).ttft_seconds[2];
  const double predict =
      static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC / kCalls;
  start = std::clock();
  for (int i = 0; i < kCalls; ++i)
    sink += MaxRequestRate(c.steps, in, out, 2.0, 0.2, 99);
  const double max_rate =
      static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC / kCalls;
  std::cout << absl::StrFormat(
      "PredictQueueing %.0f us, MaxRequestRate %.0f us per call (%g)\n",
      predict * 1e6, max_rate * 1e6, sink);
  // The streamed plans' chain, every case at 50-95% of its limit (and the
  // prefill pools'): CPU time per call, the best of three runs of 10.
  std::vector<Case> cases = Cases();
  for (const Case& pool : PrefillPoolCases()) cases.push_back(pool);
  for (const Case& k : cases) {
    const LengthPoints kin = Discretize(k.input), kout = Discretize(k.output);
    const double klimit = MaxRequestRate(k.steps, kin, kout, 0, 0, 0);
    std::string line = k.name;
    for (double load : {0.5, 0.7, 0.9, 0.95}) {
      double best = 1e9;
      for (int run = 0; run < 3; ++run) {
        const std::clock_t begin = std::clock();
        for (int i = 0; i < 10; ++i)
          sink += PredictStreamedQueueing(k.steps, kin, kout, load * klimit)
                      .ttft_seconds[2];
        best = std::min(best, static_cast<double>(std::clock() - begin) /
                                  CLOCKS_PER_SEC / 10);
      }
      absl::StrAppendFormat(&line, " | %.0f%%: %.1f ms", 100 * load,
                            best * 1e3);
    }
    std::cout << line << " (" << sink << ")\n";
  }
}

// One stage: the pipelined simulation is the batcher's loop, draw for draw.
TEST(QueueingTest, PipelinedSimulationOfOneStageIsTheBatcher) {
  for (const Case& c : Cases()) {
    const LengthPoints in = Discretize(c.input), out = Discretize(c.output);
    const double rate = 0.8 * MaxRequestRate(c.steps, in, out, 0, 0, 0);
    const BatcherSimResult plain =
        SimulateBatcher(c.steps, c.input, c.output, rate, 5000, 7);
    const BatcherSimResult staged =
        SimulatePipelinedBatcher(c.steps, 1, c.input, c.output, rate, 5000, 7,
                                 /*eager_arrivals=*/false);
    EXPECT_EQ(plain.ttft_seconds, staged.ttft_seconds) << c.name;
    EXPECT_EQ(plain.tpot_seconds, staged.tpot_seconds) << c.name;
    // Summed in another order: equal to rounding.
    EXPECT_NEAR(plain.mean_running, staged.mean_running,
                1e-9 * plain.mean_running)
        << c.name;
  }
}

// The round model of pipeline parallelism (simulator/traffic_costing.cc:
// c_p the busiest stage's, the rest of the chain a TTFT lag, a chunk
// budget per micro-batch) against the stage-by-stage simulation, with the
// cases' step times as a round of `stages` balanced stages. Not part of the
// check: build/bin/simulator_test --gtest_also_run_disabled_tests
// --gtest_filter=QueueingTest.DISABLED_PrintsThePipelineCheck
TEST(QueueingTest, DISABLED_PrintsThePipelineCheck) {
  const bool eager = std::getenv("SHARDPLAN_PIPELINE_BLOCKING") == nullptr;
  for (int stages : {2, 4}) {
    for (Case c : Cases()) {
      c.steps.chunk_tokens *= stages;
      c.steps.pipeline_lag_token_seconds =
          (stages - 1) * c.steps.prefill_token_seconds;
      c.name += absl::StrFormat(", %d stages", stages);
      const LengthPoints in = Discretize(c.input), out = Discretize(c.output);
      const double limit = MaxRequestRate(c.steps, in, out, 0, 0, 0);
      for (double load : {0.1, 0.5, 0.7, 0.85}) {
        const double rate = load * limit;
        const QueueingPrediction q = PredictQueueing(c.steps, in, out, rate);
        Simulated sim;
        std::vector<double> ttft, tpot;
        double running = 0;
        for (int seed = 1; seed <= 4; ++seed) {
          BatcherSimResult r = SimulatePipelinedBatcher(
              c.steps, stages, c.input, c.output, rate, 50000, seed, eager);
          ttft.insert(ttft.end(), r.ttft_seconds.begin(), r.ttft_seconds.end());
          tpot.insert(tpot.end(), r.tpot_seconds.begin(), r.tpot_seconds.end());
          running += r.mean_running / 4;
        }
        for (int k = 0; k < 3; ++k) {
          sim.ttft[k] = SampleQuantile(&ttft, kQuantiles[k]);
          sim.tpot[k] = SampleQuantile(&tpot, kQuantiles[k]);
        }
        std::cout << Row(c, load, q, sim)
                  << absl::StrFormat(" %.1f / %.1f |\n", q.running_batch,
                                     running);
      }
    }
  }
}

TEST(QueueingTest, SaturatedRateIsUnstable) {
  const Case c = Cases()[0];
  const LengthPoints in = Discretize(c.input), out = Discretize(c.output);
  const double limit = MaxRequestRate(c.steps, in, out, 0, 0, 0);
  EXPECT_FALSE(PredictQueueing(c.steps, in, out, 1.01 * limit).stable);
  EXPECT_TRUE(PredictQueueing(c.steps, in, out, 0.99 * limit).stable);
}

TEST(QueueingTest, KvCacheLimitBoundsTheRate) {
  Case c = Cases()[0];
  const LengthPoints in = Discretize(c.input), out = Discretize(c.output);
  const double unlimited = MaxRequestRate(c.steps, in, out, 0, 0, 0);
  c.steps.max_running = 16;
  const double limited = MaxRequestRate(c.steps, in, out, 0, 0, 0);
  EXPECT_LT(limited, 0.5 * unlimited);
  const QueueingPrediction q = PredictQueueing(c.steps, in, out, 0.9 * limited);
  ASSERT_TRUE(q.stable);
  EXPECT_LT(q.running_batch, 16);
}

// A tighter SLO or a higher percentile admits a lower rate; at the rate
// found, the percentile sits at the SLO.
TEST(QueueingTest, MaxRequestRateMeetsTheSloAtThePercentile) {
  const Case c = Cases()[1];
  const LengthPoints in = Discretize(c.input), out = Discretize(c.output);
  const double p50 = MaxRequestRate(c.steps, in, out, 2.0, 0.05, 50);
  const double p99 = MaxRequestRate(c.steps, in, out, 2.0, 0.05, 99);
  const double p99_tight = MaxRequestRate(c.steps, in, out, 1.0, 0.05, 99);
  EXPECT_GT(p50, p99);
  EXPECT_GT(p99, p99_tight);
  ASSERT_GT(p99_tight, 0);
  const QueueingPrediction q = PredictQueueing(c.steps, in, out, p99);
  const double ttft = LatencyAt(q, 99, true), tpot = LatencyAt(q, 99, false);
  // One of the two binds (within the bisection's and quantile's tolerance).
  EXPECT_TRUE(std::abs(ttft / 2.0 - 1) < 0.01 ||
              std::abs(tpot / 0.05 - 1) < 0.01)
      << ttft << " s, " << tpot << " s";
  EXPECT_LE(ttft, 2.0 * 1.001);
  EXPECT_LE(tpot, 0.05 * 1.001);
  // An SLO below an idle replica's latency admits nothing.
  EXPECT_EQ(MaxRequestRate(c.steps, in, out, 0.01, 0, 99), 0);
}

TEST(QueueingTest, DiscretizeKeepsTheMoments) {
  LengthDistribution uniform{LengthKind::kUniform, 100, 300, 200, 0, {}};
  const LengthPoints u = Discretize(uniform);
  EXPECT_NEAR(u.mean, 200, 1);
  EXPECT_NEAR(u.second_moment, 200 * 200 + 200 * 200 / 12.0, 150);
  LengthDistribution histogram{LengthKind::kHistogram,     0, 0, 0, 0,
                               {{100, 0.25}, {1000, 0.75}}};
  const LengthPoints h = Discretize(histogram);
  EXPECT_EQ(h.size, 2);
  EXPECT_DOUBLE_EQ(h.mean, 775);
}

}  // namespace
}  // namespace shardplan::simulator
