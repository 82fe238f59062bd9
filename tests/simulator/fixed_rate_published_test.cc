// The request-rate predictions against published serving runs at fixed
// Poisson rates on H100 (MLPerf Inference Server results: LoadGen issues
// queries at target_qps with Poisson arrivals and reports TTFT and TPOT
// percentiles). Each row of tests/simulator/data/published/fixed_rate_h100.csv
// is one run with its source URL; the deployment (model, lengths, engine,
// precision, SLOs) is an EvaluateRequest file beside it, and the row sets the
// GPUs, the layout and the rate (`shardplan-sim evaluate` on that file gives
// the API-default prediction: a request cannot say where its server
// detokenises). None of these rows is fitted: they are the
// out-of-sample check of the queueing model and the closed-loop step times
// under it.
//
// Predictions per row (Variant below): the model with the run's settings,
// what a request naming only the engine gets, and two diagnostics of why
// they miss. docs/cost-model-and-calibration.md ("Fixed request rates:
// published runs") prints the table
//   build/bin/simulator_test --gtest_also_run_disabled_tests
//     --gtest_filter=FixedRatePublishedTest.DISABLED_PrintsTheDocsTable
// and says why they miss. The tests below fail when an error gets more
// than a few points worse than the figures that table reports.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/calibration.h"
#include "simulator/cost_model.h"
#include "simulator/queueing.h"
#include "simulator/spec.h"
#include "simulator/traffic_costing.h"
#include "tests/simulator/published_request.h"

namespace shardplan::simulator {
namespace {

// One published run: fixed_rate_h100.csv's columns.
struct PublishedRun {
  std::string id;
  std::string url;         // the run's mlperf_log_summary.txt
  std::string config_url;  // where its layout is stated
  std::string request;     // EvaluateRequest file in published/
  std::string engine_version;
  // The run's server never detokenises in the process of the engine loop
  // (MLPerf's C++ harnesses hand token ids to LoadGen).
  bool detokenises_off_executor = false;
  int gpus = 0;
  int tp = 0;
  int pp = 0;
  int replicas = 0;
  double rate = 0;  // scheduled (Poisson) requests/s, whole deployment
  double completed_rate = 0;
  double output_tokens_per_s = 0;
  double ttft_limit_ms = 0;
  double tpot_limit_ms = 0;
  std::array<double, 3> ttft_ms{};  // p50, p90, p99
  std::array<double, 3> tpot_ms{};
  double ttft_mean_ms = 0;
  double tpot_mean_ms = 0;
  double latency_mean_ms = 0;
  // Requests in flight on one instance (Little's law on the run's means).
  double InFlightPerInstance() const {
    return rate * latency_mean_ms / 1e3 / replicas;
  }
};

std::vector<PublishedRun> ReadRuns() {
  std::vector<PublishedRun> runs;
  std::istringstream csv(ReadPublishedText("fixed_rate_h100.csv"));
  std::string line;
  std::vector<std::string> header;
  while (std::getline(csv, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> cells = absl::StrSplit(line, ',');
    if (header.empty()) {
      header = cells;
      continue;
    }
    EXPECT_EQ(cells.size(), header.size()) << line;
    if (cells.size() != header.size()) continue;
    const auto cell = [&](const char* name) -> const std::string& {
      const auto it = std::find(header.begin(), header.end(), name);
      EXPECT_NE(it, header.end()) << name;
      return cells[it - header.begin()];
    };
    const auto number = [&](const char* name) {
      double v = 0;
      EXPECT_TRUE(absl::SimpleAtod(cell(name), &v)) << name << ": " << line;
      return v;
    };
    PublishedRun r;
    r.id = cell("id");
    r.url = cell("url");
    r.config_url = cell("config_url");
    r.request = cell("request");
    r.engine_version = cell("engine_version");
    r.detokenises_off_executor = cell("detokenises_off_executor") == "1";
    r.gpus = static_cast<int>(number("gpus"));
    r.tp = static_cast<int>(number("tp"));
    r.pp = static_cast<int>(number("pp"));
    r.replicas = static_cast<int>(number("replicas"));
    r.rate = number("scheduled_rps");
    r.completed_rate = number("completed_rps");
    r.output_tokens_per_s = number("output_tokens_per_s");
    r.ttft_limit_ms = number("ttft_limit_ms");
    r.tpot_limit_ms = number("tpot_limit_ms");
    r.ttft_ms = {number("ttft_p50_ms"), number("ttft_p90_ms"),
                 number("ttft_p99_ms")};
    r.tpot_ms = {number("tpot_p50_ms"), number("tpot_p90_ms"),
                 number("tpot_p99_ms")};
    r.ttft_mean_ms = number("ttft_mean_ms");
    r.tpot_mean_ms = number("tpot_mean_ms");
    r.latency_mean_ms = number("latency_mean_ms");
    runs.push_back(r);
  }
  return runs;
}

// kAsRun: the model with the run's settings (its engine's profile; its
// server's detokenisation as the row says). kApiDefault: what a request
// naming only the engine gets (a TensorRT-LLM server detokenises in
// postprocess workers, as shardplan's launches start it). Two diagnostics of
// kAsRun: kOverheadOffGpu, the per-request prefill overhead as latency outside
// the engine loop; kSecantAtLoad, the queue's decode line through the cost
// model's closed-loop decode iteration at one request and at the running batch
// the load makes (a fixed point), instead of the secant up to 64 requests.
enum class Variant { kAsRun, kApiDefault, kOverheadOffGpu, kSecantAtLoad };

struct Predicted {
  bool ok = false;      // the request and plan were valid
  bool stable = false;  // the plan carries the rate at all
  std::string model;
  std::string weight_dtype;
  std::string engine;
  double max_rate = 0;  // within the run's p99 limits, whole deployment
  double utilization = 0;
  double running_batch = 0;
  int max_running = 0;  // per queue, from the KV cache
  double overhead_ms = 0;
  std::array<double, 3> ttft_ms{};
  std::array<double, 3> tpot_ms{};
  // The queue's engine loop (StepTimes) and, at the run's measured requests
  // in flight B, the loop's decode iteration a + c_d B against the cost
  // model's own closed-loop decode iteration at B.
  StepTimes steps;
  double line_at_measured_batch_ms = 0;
  double closed_loop_at_measured_batch_ms = 0;
};

// The cost model's closed-loop decode iteration of one instance running
// `batch` requests (plan.batch_size is per replica), seconds.
double DecodeIteration(const CostModel& model, const PlanDims& plan,
                       double batch) {
  PlanDims at = plan;
  at.batch_size = std::max(1, static_cast<int>(std::lround(batch)));
  return model.Evaluate(at).decode_iteration_seconds;
}

// kSecantAtLoad: the decode line through T(1) and T(B) with B the running
// batch that line makes at the rate (damped fixed-point iteration from the
// model's own prediction), then the queue again with it.
void SecantAtLoad(const CostModel& model, const PlanDims& plan,
                  TrafficPrediction* t) {
  const TrafficDims& traffic = model.problem().workload.traffic;
  const LengthPoints in = Discretize(traffic.input);
  const LengthPoints out = Discretize(traffic.output);
  const double limit = std::max(2, t->steps.max_running);
  const double one = DecodeIteration(model, plan, 1);
  double batch =
      t->queueing.stable ? std::max(2.0, t->queueing.running_batch) : limit;
  StepTimes steps = t->steps;
  for (int i = 0; i < 40; ++i) {
    batch = std::clamp(batch, 2.0, limit);
    const double slope = std::max(
        0.0, (DecodeIteration(model, plan, batch) - one) / (batch - 1));
    steps.decode_request_seconds = slope;
    steps.iteration_seconds = std::max(0.0, one - slope);
    const QueueingPrediction q =
        PredictQueueing(steps, in, out, t->rate_per_replica);
    const double next = q.stable ? q.running_batch : limit;
    if (std::abs(next - batch) < 0.5) break;
    batch = 0.5 * (batch + next);
  }
  t->steps = steps;
  t->queueing = PredictQueueing(steps, in, out, t->rate_per_replica);
  const WorkloadDims& w = model.problem().workload;
  t->max_request_rate =
      MaxRequestRate(steps, in, out, w.max_ttft_seconds, w.max_tpot_seconds,
                     traffic.slo_percentile) *
      t->replicas;
}

// The row's request as `shardplan-sim evaluate` would read it with the row's
// GPUs, layout and rate, predicted as `variant` says.
Predicted Predict(const PublishedRun& run, Variant variant) {
  const bool overhead_off_gpu = variant == Variant::kOverheadOffGpu;
  Predicted out;
  shardplan::v1::EvaluateRequest request = ReadPublishedRequest(run.request);
  request.mutable_cluster()->set_num_gpus(run.gpus);
  request.mutable_plan()->set_tp(run.tp);
  request.mutable_plan()->set_pp(run.pp);
  request.mutable_plan()->set_replicas(run.replicas);
  shardplan::v1::Workload* w = request.mutable_workload();
  w->set_request_rate(run.rate);
  w->set_slo_percentile(99);
  w->set_max_ttft_ms(run.ttft_limit_ms);
  w->set_max_tpot_ms(run.tpot_limit_ms);
  absl::StatusOr<Problem> problem =
      ProblemFromProto(request.model(), request.cluster(), request.workload());
  EXPECT_TRUE(problem.ok()) << run.id << ": " << problem.status();
  if (!problem.ok()) return out;
  // The API default keeps what the request implies (a TensorRT-LLM server
  // with postprocess workers, as shardplan launches it); the other variants
  // the run's own server.
  if (variant != Variant::kApiDefault) {
    problem->workload.detokenises_off_executor = run.detokenises_off_executor;
  }
  const bool detokenises_off_executor =
      problem->workload.detokenises_off_executor;
  absl::StatusOr<CalibrationProfile> profile =
      problem->workload.calibration_profile.empty()
          ? absl::StatusOr<CalibrationProfile>(
                EngineAgnosticCalibrationProfile())
          : FindCalibrationProfile(problem->workload.calibration_profile);
  EXPECT_TRUE(profile.ok()) << profile.status();
  if (!profile.ok()) return out;
  Calibration cal = profile->calibration;
  // The per-request time the cost model spends before the first token
  // (simulator/cost_context.cc picks the offloaded-detokenisation value for
  // a server that detokenises off the executor).
  const double overhead_seconds =
      detokenises_off_executor &&
              cal.offloaded_detokenisation_request_overhead_seconds > 0
          ? cal.offloaded_detokenisation_request_overhead_seconds
          : cal.prefill_overhead_seconds;
  if (overhead_off_gpu) {
    cal.prefill_overhead_seconds = 0;
    cal.offloaded_detokenisation_request_overhead_seconds = 0;
  }
  out.model = problem->model.name;
  out.weight_dtype = request.workload().weight_dtype();
  out.engine = request.workload().engine();
  std::optional<ModelAndPlan> built =
      ModelAndPlanOf(*problem, cal, request.plan(), run.id);
  if (!built) return out;
  const CostModel& model = *built->model;
  const PlanDims& plan = built->plan;
  // As the server answers with the plan (EvaluatePlan, streamed updates):
  // the TTFT from the prompt queue's chain.
  TrafficPrediction t = PredictStreamedTraffic(model, plan);
  EXPECT_TRUE(t.computed) << run.id;
  if (!t.computed) return out;
  if (variant == Variant::kSecantAtLoad) SecantAtLoad(model, plan, &t);
  out.ok = true;
  out.max_running = t.steps.max_running;
  const QueueingPrediction& q = t.queueing;
  out.stable = q.stable;
  out.utilization = q.utilization;
  out.running_batch = q.running_batch;
  out.max_rate = t.max_request_rate;
  const double added = overhead_off_gpu ? overhead_seconds : 0;
  out.overhead_ms = overhead_seconds * 1e3;
  if (overhead_off_gpu) {
    const TrafficDims& traffic = model.problem().workload.traffic;
    out.max_rate = MaxRequestRate(t.steps, Discretize(traffic.input),
                                  Discretize(traffic.output),
                                  run.ttft_limit_ms / 1e3 - overhead_seconds,
                                  run.tpot_limit_ms / 1e3, 99) *
                   t.replicas;
  }
  for (int i = 0; i < 3; ++i) {
    out.ttft_ms[i] = q.stable ? (q.ttft_seconds[i] + added) * 1e3 : 0;
    out.tpot_ms[i] = q.stable ? q.tpot_seconds[i] * 1e3 : 0;
  }
  out.steps = t.steps;
  const double batch = run.InFlightPerInstance();
  out.line_at_measured_batch_ms =
      (t.steps.iteration_seconds + t.steps.decode_request_seconds * batch) *
      1e3;
  out.closed_loop_at_measured_batch_ms =
      DecodeIteration(model, plan, batch) * 1e3;
  return out;
}

double Error(double predicted, double measured) {
  return (predicted - measured) / measured;
}

// The accuracy over the rows: `capacity_ratio` is the geometric mean of
// predicted maxRequestRate / the published rate (a run passes its limits at
// that rate, so its own highest rate is a little above it: 1.0 is the
// lowest a right prediction gives); the MAPEs are over the rows the model
// predicts stable at the published rate.
struct Accuracy {
  int rows = 0;
  int stable_rows = 0;
  double capacity_ratio = 0;
  double capacity_log_error = 0;    // mean |ln(predicted / published)|
  double worst_capacity_ratio = 0;  // furthest from 1 in log terms
  std::array<double, 3> ttft_mape{};
  std::array<double, 3> tpot_mape{};
};

Accuracy AccuracyOf(const std::vector<PublishedRun>& runs, Variant variant) {
  Accuracy a;
  double log_sum = 0;
  double worst_log = 0;
  for (const PublishedRun& run : runs) {
    const Predicted p = Predict(run, variant);
    if (!p.ok) continue;
    ++a.rows;
    const double log_ratio = std::log(std::max(1e-9, p.max_rate / run.rate));
    log_sum += log_ratio;
    a.capacity_log_error += std::abs(log_ratio);
    if (std::abs(log_ratio) > std::abs(worst_log)) worst_log = log_ratio;
    if (!p.stable) continue;
    ++a.stable_rows;
    for (int i = 0; i < 3; ++i) {
      a.ttft_mape[i] += std::abs(Error(p.ttft_ms[i], run.ttft_ms[i]));
      a.tpot_mape[i] += std::abs(Error(p.tpot_ms[i], run.tpot_ms[i]));
    }
  }
  if (a.rows > 0) {
    a.capacity_ratio = std::exp(log_sum / a.rows);
    a.capacity_log_error /= a.rows;
  }
  a.worst_capacity_ratio = std::exp(worst_log);
  for (int i = 0; i < 3 && a.stable_rows > 0; ++i) {
    a.ttft_mape[i] /= a.stable_rows;
    a.tpot_mape[i] /= a.stable_rows;
  }
  return a;
}

TEST(FixedRatePublishedTest, RowsAreH100RunsWithSources) {
  const std::vector<PublishedRun> runs = ReadRuns();
  ASSERT_GE(runs.size(), 9u);
  for (const PublishedRun& r : runs) {
    SCOPED_TRACE(r.id);
    EXPECT_TRUE(absl::StartsWith(r.url, "https://github.com/")) << r.url;
    EXPECT_TRUE(absl::StartsWith(r.config_url, "https://")) << r.config_url;
    for (const std::string& text : {r.id, r.url, r.config_url}) {
      const std::string lower = absl::AsciiStrToLower(text);
      for (const char* held_out : {"h200", "b300", "gb300"})
        EXPECT_FALSE(absl::StrContains(lower, held_out)) << text;
    }
    const shardplan::v1::EvaluateRequest request =
        ReadPublishedRequest(r.request);
    EXPECT_EQ(request.cluster().hardware(), "h100-sxm-80gb");
    EXPECT_EQ(r.gpus, r.tp * r.pp * r.replicas);
    // The published rate is what LoadGen scheduled; it completes about as
    // many (a run that fell behind would not be VALID).
    EXPECT_NEAR(r.completed_rate / r.rate, 1.0, 0.03);
    for (int i = 0; i < 3; ++i) {
      EXPECT_LE(r.ttft_ms[i], r.ttft_limit_ms);
      EXPECT_LE(r.tpot_ms[i], r.tpot_limit_ms);
    }
  }
}

// The figures the docs table reports, each bound a few points above them: a
// change to the cost model or the queueing model that takes the predictions
// further from the published runs fails here. The bounds are what the model
// reaches today, stated rather than hidden (docs: TPOT is far too low at
// these loads because the queue's decode line is the secant of small
// batches); they may only tighten. Cost model v25 loosened them once (as run:
// capacity 0.25 -> 0.31, TPOT p50 0.67 -> 0.72): the measured all-reduce is
// flat at small batches (its launch and barrier), so that secant rises more
// slowly with the batch than with the ring formula's bandwidth term.
TEST(FixedRatePublishedTest, AsRunNoWorseThanTheDocs) {
  const Accuracy a = AccuracyOf(ReadRuns(), Variant::kAsRun);
  ASSERT_GE(a.rows, 9);
  EXPECT_GE(a.stable_rows, 7);
  // The pipeline-parallel row's stages prefill different micro-batches at
  // once (its capacity 0.58x of the published rate when the queue charged
  // the whole chain per prompt, 0.89x since): without that, the mean and
  // the furthest ratio were 0.31 and 0.58x.
  EXPECT_LE(a.capacity_log_error, 0.26 + 0.03) << a.capacity_log_error;
  EXPECT_LE(std::abs(std::log(a.worst_capacity_ratio)), 0.36 + 0.03)
      << a.worst_capacity_ratio;
  // TTFT p90 / p99 0.41 -> 0.39 with the streamed plans' chain (cost model
  // v32); its p50 is 0.63 (kept at 0.62: bounds only tighten).
  const std::array<double, 3> ttft = {0.62, 0.39, 0.39};
  const std::array<double, 3> tpot = {0.72, 0.68, 0.57};
  for (int i = 0; i < 3; ++i) {
    EXPECT_LE(a.ttft_mape[i], ttft[i] + 0.03) << "TTFT quantile " << i;
    EXPECT_LE(a.tpot_mape[i], tpot[i] + 0.03) << "TPOT quantile " << i;
  }
}

// What a request naming only the engine gets for these runs is the server
// they ran: every one detokenises off the executor (MLPerf's harnesses hand
// token ids to LoadGen), as a TensorRT-LLM server that shardplan launches
// does, so the API default predicts each run as run.
TEST(FixedRatePublishedTest, ApiDefaultIsTheRunsOwnServer) {
  const std::vector<PublishedRun> runs = ReadRuns();
  for (const PublishedRun& r : runs) ASSERT_TRUE(r.detokenises_off_executor);
  const Accuracy api = AccuracyOf(runs, Variant::kApiDefault);
  const Accuracy as_run = AccuracyOf(runs, Variant::kAsRun);
  ASSERT_GE(api.rows, 9);
  EXPECT_EQ(api.stable_rows, as_run.stable_rows);
  EXPECT_DOUBLE_EQ(api.capacity_log_error, as_run.capacity_log_error);
}

TEST(FixedRatePublishedTest, SecantAtLoadNoWorseThanTheDocs) {
  const Accuracy a = AccuracyOf(ReadRuns(), Variant::kSecantAtLoad);
  ASSERT_GE(a.rows, 9);
  EXPECT_LE(a.capacity_log_error, 0.41 + 0.03) << a.capacity_log_error;
}

TEST(FixedRatePublishedTest, OverheadOffTheGpuNoWorseThanTheDocs) {
  const Accuracy a = AccuracyOf(ReadRuns(), Variant::kOverheadOffGpu);
  ASSERT_GE(a.rows, 9);
  EXPECT_LE(a.capacity_log_error, 0.53 + 0.03) << a.capacity_log_error;
  const std::array<double, 3> ttft = {0.74, 0.70, 0.71};
  const std::array<double, 3> tpot = {0.72, 0.69, 0.63};
  for (int i = 0; i < 3; ++i) {
    EXPECT_LE(a.ttft_mape[i], ttft[i] + 0.03) << "TTFT quantile " << i;
    EXPECT_LE(a.tpot_mape[i], tpot[i] + 0.03) << "TPOT quantile " << i;
  }
}

std::string Cell(double predicted, double measured) {
  if (predicted <= 0) return absl::StrFormat("— / %.0f", measured);
  return absl::StrFormat("%.0f / %.0f (%+.0f%%)", predicted, measured,
                         100 * Error(predicted, measured));
}

std::string Rate(const Predicted& p, double rate) {
  return absl::StrFormat("%.1f (%.2fx)%s", p.max_rate, p.max_rate / rate,
                         p.stable ? "" : " unstable");
}

void PrintSummary(const char* name, const Accuracy& a) {
  std::printf(
      "%s: rows %d, stable at the published rate %d; capacity: geometric "
      "mean ratio %.2f, mean |ln ratio| %.2f, furthest %.2f",
      name, a.rows, a.stable_rows, a.capacity_ratio, a.capacity_log_error,
      a.worst_capacity_ratio);
  if (a.stable_rows == 0) {
    std::printf("\n");
    return;
  }
  std::printf(
      "; MAPE over the stable rows: TTFT p50/p90/p99 %.0f / %.0f / %.0f%%, "
      "TPOT p50/p90/p99 %.0f / %.0f / %.0f%%\n",
      100 * a.ttft_mape[0], 100 * a.ttft_mape[1], 100 * a.ttft_mape[2],
      100 * a.tpot_mape[0], 100 * a.tpot_mape[1], 100 * a.tpot_mape[2]);
}

// The six percentile cells of a row, predicted / measured.
std::string Percentiles(const Predicted& p, const PublishedRun& r) {
  std::string cells;
  for (int i = 0; i < 3; ++i)
    cells += Cell(p.ttft_ms[i], r.ttft_ms[i]) + (i < 2 ? " | " : "");
  for (int i = 0; i < 3; ++i) cells += " | " + Cell(p.tpot_ms[i], r.tpot_ms[i]);
  return cells;
}

std::string Batch(const Predicted& p) {
  return p.stable ? absl::StrFormat("%.0f", p.running_batch) : "unstable";
}

// A markdown table's header row and rule.
void PrintHeader(const std::vector<std::string>& columns) {
  std::string rule = "|";
  std::printf("\n|");
  for (const std::string& c : columns) {
    std::printf(" %s |", c.c_str());
    rule += "---|";
  }
  std::printf("\n%s\n", rule.c_str());
}

TEST(FixedRatePublishedTest, DISABLED_PrintsTheDocsTable) {
  const std::vector<PublishedRun> runs = ReadRuns();
  const std::vector<std::string> percentiles = {
      "TTFT p50", "TTFT p90", "TTFT p99", "TPOT p50", "TPOT p90", "TPOT p99"};
  std::vector<std::string> columns = {"run",          "model, precision",
                                      "engine",       "layout",
                                      "rate (req/s)", "max rate: as run",
                                      "API default",  "overhead off the GPU"};
  columns.insert(columns.end(), percentiles.begin(), percentiles.end());
  PrintHeader(columns);
  for (const PublishedRun& r : runs) {
    const Predicted p = Predict(r, Variant::kAsRun);
    const Predicted api = Predict(r, Variant::kApiDefault);
    const Predicted off = Predict(r, Variant::kOverheadOffGpu);
    std::printf(
        "| [%s](%s) | %s, %s | %s | TP%d PP%d x %d ([config](%s)) | %.2f | %s "
        "| "
        "%s | %s | %s |\n",
        r.id.c_str(), r.url.c_str(), p.model.c_str(), p.weight_dtype.c_str(),
        r.engine_version.c_str(), r.tp, r.pp, r.replicas, r.config_url.c_str(),
        r.rate, Rate(p, r.rate).c_str(), Rate(api, r.rate).c_str(),
        Rate(off, r.rate).c_str(), Percentiles(p, r).c_str());
  }
  std::printf("\n");
  PrintSummary("as run", AccuracyOf(runs, Variant::kAsRun));
  PrintSummary("API default", AccuracyOf(runs, Variant::kApiDefault));
  PrintSummary("overhead off the GPU",
               AccuracyOf(runs, Variant::kOverheadOffGpu));
  PrintSummary("secant at the load's batch",
               AccuracyOf(runs, Variant::kSecantAtLoad));
  columns = {"run", "rate", "max rate, secant at the load's batch"};
  columns.insert(columns.end(), percentiles.begin(), percentiles.end());
  columns.push_back("in flight: measured / predicted");
  PrintHeader(columns);
  for (const PublishedRun& r : runs) {
    const Predicted p = Predict(r, Variant::kSecantAtLoad);
    std::printf("| %s | %.2f | %s | %s | %.0f / %s |\n", r.id.c_str(), r.rate,
                Rate(p, r.rate).c_str(), Percentiles(p, r).c_str(),
                r.InFlightPerInstance(), Batch(p).c_str());
  }
  PrintHeader({"run", "in flight per instance: measured / predicted",
               "TPOT mean (ms)", "queue's line a + c_d B at the measured B",
               "cost model's decode iteration at B", "a (ms)", "c_d (us)",
               "c_p (us/token)", "load"});
  for (const PublishedRun& r : runs) {
    const Predicted p = Predict(r, Variant::kAsRun);
    std::printf(
        "| %s | %.0f / %s (KV limit %d) | %.1f | %.1f | %.1f | %.1f | %.0f "
        "| %.0f | %.2f |\n",
        r.id.c_str(), r.InFlightPerInstance(), Batch(p).c_str(), p.max_running,
        r.tpot_mean_ms, p.line_at_measured_batch_ms,
        p.closed_loop_at_measured_batch_ms, p.steps.iteration_seconds * 1e3,
        p.steps.decode_request_seconds * 1e6,
        p.steps.prefill_token_seconds * 1e6, p.utilization);
  }
}

}  // namespace
}  // namespace shardplan::simulator
