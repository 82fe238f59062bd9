#include "simulator/calibration_transfer.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "proto/status_macros.h"
#include "simulator/cost_model.h"
#include "simulator/spec.h"
#include "simulator/spec_catalog.h"

namespace shardplan::simulator {

absl::StatusOr<std::string> CatalogHardwareOfRun(absl::string_view name) {
  static constexpr std::pair<absl::string_view, absl::string_view> kSystems[] =
      {{"h100_sxm", "h100-sxm-80gb"},  {"h200_sxm", "h200-sxm-141gb"},
       {"b200_sxm", "b200-sxm-180gb"}, {"b300_sxm", "b300-sxm-288gb"},
       {"gb200", "gb200-nvl72"},       {"gb300", "gb300-nvl72"}};
  for (const auto& [system, catalog] : kSystems) {
    if (name == system) return std::string(catalog);
  }
  if (FindCatalogHardware(name).ok()) return std::string(name);
  return absl::NotFoundError(absl::StrCat(
      "hardware \"", name,
      "\" is neither a catalog hardware name nor an AIConfigurator system "
      "(h100_sxm, h200_sxm, b200_sxm, b300_sxm, gb200, gb300)"));
}

bool IsHeldOutHardware(absl::string_view catalog_name) {
  return catalog_name == "h200-sxm-141gb" || catalog_name == "b300-sxm-288gb" ||
         catalog_name == "gb300-nvl72";
}

namespace {

// A row's prediction and the p10-p90 band a request of its regime carries.
struct BandedPrediction {
  RowPrediction prediction;
  PredictionBand band;
};

absl::StatusOr<std::vector<BandedPrediction>> PredictWithBands(
    const std::vector<MeasuredRow>& rows,
    const std::vector<CalibrationProfile>& profiles,
    absl::string_view fit_hardware,
    const std::vector<ErrorBand>& transfer_bands) {
  if (profiles.empty())
    return absl::InvalidArgumentError("no calibration profiles");
  std::vector<BandedPrediction> out(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const MeasuredRow& r = rows[i];
    const CalibrationProfile* profile = &profiles.front();
    for (const CalibrationProfile& p : profiles) {
      if (p.engine == r.engine) profile = &p;
    }
    ASSIGN_OR_RETURN(Problem problem, RowProblem(r));
    ASSIGN_OR_RETURN(std::unique_ptr<const CostModel> model,
                     CostModel::Create(problem, profile->calibration));
    const PlanDims plan = RowPlan(r);
    if (!model->ValidatePlan(plan).ok()) continue;  // infeasible
    const Evaluation e = model->Evaluate(plan);
    out[i].prediction.feasible = e.feasible;
    out[i].prediction.ttft_seconds = e.ttft_seconds;
    out[i].prediction.tpot_seconds = e.tpot_seconds;
    BandRegime regime = RegimeOf(e, problem);
    regime.profile = profile->name;
    regime.engine_given = true;
    regime.across_hardware = r.hardware != fit_hardware;
    out[i].band =
        FindPredictionBand(regime, CompiledErrorBands(), transfer_bands);
  }
  return out;
}

}  // namespace

namespace {

std::string DtypeOf(const MeasuredRow& r) {
  return r.fp4 ? "fp4" : r.fp8 ? "fp8" : "bf16";
}

bool IsMoe(const std::string& catalog_model) {
  absl::StatusOr<shardplan::v1::ModelSpec> spec =
      FindCatalogModel(catalog_model);
  return spec.ok() && spec->num_experts() > 0;
}

struct Ratios {
  std::vector<double> tpot, ttft;
  int rows = 0;
  int tpot_in_band = 0, ttft_in_band = 0;
  TransferGroup Summary(TransferGroup g) const {
    g.rows = rows;
    g.infeasible = rows - static_cast<int>(tpot.size());
    auto mape = [](const std::vector<double>& v) {
      double s = 0;
      for (double x : v) s += std::abs(x - 1);
      return v.empty() ? 0 : 100 * s / v.size();
    };
    auto median = [](std::vector<double> v) {
      if (v.empty()) return 0.0;
      std::sort(v.begin(), v.end());
      const size_t n = v.size();
      return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    };
    g.tpot_mape = mape(tpot);
    g.ttft_mape = mape(ttft);
    g.tpot_median_ratio = median(tpot);
    g.ttft_median_ratio = median(ttft);
    if (!tpot.empty()) {
      g.tpot_in_band = static_cast<double>(tpot_in_band) / tpot.size();
      g.ttft_in_band = static_cast<double>(ttft_in_band) / ttft.size();
    }
    return g;
  }
};

}  // namespace

absl::StatusOr<TransferReport> ComputeTransfer(
    const std::vector<MeasuredRow>& rows,
    const std::vector<CalibrationProfile>& profiles,
    absl::string_view fit_hardware,
    const std::vector<ErrorBand>& transfer_bands) {
  ASSIGN_OR_RETURN(
      std::vector<BandedPrediction> pred,
      PredictWithBands(rows, profiles, fit_hardware, transfer_bands));
  using Key = std::tuple<std::string, std::string, std::string, std::string>;
  std::map<Key, Ratios> groups;
  std::map<std::string, Ratios> totals;
  // Rows with attention data parallelism, apart: their load per rank is
  // where the meaning of the concurrency matters.
  std::map<std::string, Ratios> dp_totals;
  std::map<std::tuple<std::string, std::string, bool>, Ratios> kinds;
  for (size_t i = 0; i < rows.size(); ++i) {
    const MeasuredRow& r = rows[i];
    Ratios& g = groups[{r.hardware, r.engine, r.catalog_model, DtypeOf(r)}];
    Ratios& t = totals[r.hardware];
    Ratios unused;
    Ratios& dp = r.attention_dp > 1 ? dp_totals[r.hardware] : unused;
    Ratios& kind = kinds[{r.hardware, r.engine, IsMoe(r.catalog_model)}];
    ++g.rows;
    ++t.rows;
    ++dp.rows;
    ++kind.rows;
    const RowPrediction& p = pred[i].prediction;
    if (!p.feasible) continue;
    // The band holds the measurement when measured / predicted lies in it.
    const PredictionBand& band = pred[i].band;
    const double tpot_m = r.tpot_seconds / p.tpot_seconds;
    const double ttft_m = r.ttft_seconds / p.ttft_seconds;
    for (Ratios* x : {&g, &t, &dp, &kind}) {
      x->tpot.push_back(1 / tpot_m);
      x->ttft.push_back(1 / ttft_m);
      x->tpot_in_band += tpot_m >= band.tpot_low && tpot_m <= band.tpot_high;
      x->ttft_in_band += ttft_m >= band.ttft_low && ttft_m <= band.ttft_high;
    }
  }
  TransferReport report;
  for (const auto& [key, ratios] : groups) {
    TransferGroup g;
    std::tie(g.hardware, g.engine, g.model, g.dtype) = key;
    g.moe = IsMoe(g.model);
    report.groups.push_back(ratios.Summary(g));
  }
  for (const auto& [hardware, ratios] : totals) {
    TransferGroup g;
    g.hardware = hardware;
    g.engine = g.model = g.dtype = "*";
    report.hardware_totals.push_back(ratios.Summary(g));
  }
  for (const auto& [hardware, ratios] : dp_totals) {
    TransferGroup g;
    g.hardware = hardware;
    g.engine = g.dtype = "*";
    g.model = "attention dp > 1";
    report.hardware_totals.push_back(ratios.Summary(g));
  }
  for (const auto& [key, ratios] : kinds) {
    TransferGroup g;
    std::tie(g.hardware, g.engine, g.moe) = key;
    g.model = g.moe ? "MoE" : "dense";
    g.dtype = "*";
    report.kind_totals.push_back(ratios.Summary(g));
  }
  return report;
}

namespace {

// InferenceMAX's benchmark client warms the server up with two requests per
// client before it measures since 2026-01-21 (`--num-warmups "$((2 *
// max_concurrency))"`, benchmarks/benchmark_lib.sh, commit d053ae24e of
// https://github.com/SemiAnalysisAI/InferenceX); the runs before start
// measuring on a fresh server, and its B200 runners keep no FlashInfer JIT
// cache between launches since 2025-10-06 (commit 15b7c00b0, "removing
// persistent cache from b200").
constexpr absl::string_view kInferenceMaxWarmupSince = "2026-01-21";

// --chunked-prefill-size of InferenceMAX's SGLang DeepSeek-R1 scripts on
// B200 in those months: 16,384 for NVFP4 (benchmarks/dsr1_fp4_b200_docker.sh
// from 2025-09-21 on), 32,768 for FP8 (dsr1_fp8_b200_docker.sh until
// 2026-01-12); 0 for a run of another script.
int UnwarmedSglangChunkTokens(const MeasuredRow& r) {
  if (r.engine != "sglang" || r.hardware != "b200-sxm-180gb" ||
      r.catalog_model != "deepseek-v3") {
    return 0;
  }
  return r.fp4 ? 16384 : r.fp8 ? 32768 : 0;
}

}  // namespace

// An InferenceMAX SGLang run measured without the warm-up whose first wave
// (the clients' first prompts, sent at once; lengths uniform in [0.8 L, L],
// 0.9 L on average) holds more tokens than one chunked-prefill step: the
// server's first chunked prefill, the first batch that extends a cached
// prefix (SGLang splits a prompt over steps at the chunk size and runs the
// rest against the cached part), falls inside the measurement. The rows
// show a one-off stall, not a steady wait. DeepSeek-R1 NVFP4, tp 4 and 8:
// at 1k prompts 365-890 ms up to 16 clients (one chunk), 7.1-8.8 s from 32
// to 128 clients and the same 7.3-9.2 s with 8k outputs (arrivals 6x
// rarer), at 8k prompts 5.5-9.2 s from 4 clients up: a surplus flat in the
// load and the output length, what one stall of the first wave spread over
// the run's 10 prompts per client gives, where a queue grows with both.
// Their TPOT carries part of it (the first wave's prompts that finished
// prefill decode through the stall): +2.7 to +9.1 ms over SGLang 0.5.9's
// runs of the same layouts with 1k outputs, against +0.1 to +3.4 ms for
// the one-chunk runs. The FP8 script's runs (chunk 32,768) stall where
// the wave passes it (1k prompts at 64 clients, 8k from 8) and not below.
// SGLang takes every waiting prompt at its next poll (max-running-requests
// 256 and 128 above the clients), so no steady state holds a prompt for
// seconds while the batch decodes at 15-25 ms per token.
bool UnwarmedChunkedFirstWave(const MeasuredRow& r) {
  const int chunk = UnwarmedSglangChunkTokens(r);
  return chunk > 0 && r.inferencemax && !r.measured_date.empty() &&
         r.measured_date < kInferenceMaxWarmupSince &&
         0.9 * r.isl * r.concurrency > chunk;
}

DedupedRows DropRepeatedRuns(const std::vector<MeasuredRow>& rows) {
  using Layout = std::tuple<int, int, int, int, int>;
  // The latencies in ms to the 0.01 ms the gap-analysis files print: their
  // rows copy runs of the other files rounded to two decimals (Qwen3.5 FP8
  // at 4 clients, TTFT 338.3364140507183 ms and TPOT 6.332719125474412 ms in
  // InferenceMAX's file of 2026-03-25, 338.34 and 6.33 in
  // qwen3.5-397b-gap-analysis.csv). The first row is kept: the files come
  // before the gap analyses that copy them. AIConfigurator's database also
  // exports InferenceMAX's runs (DeepSeek-R1 FP8 on TensorRT-LLM
  // 1.2.0rc6.post2, tp 8 at 64 clients: 642.504 ms / 21.50 ms in db-dump's
  // cfg75 and in InferenceMAX's file of 2026-03-25): a copy of the same
  // layout is read as InferenceMAX's run, with the harness and the script
  // it was served with (InferenceMaxSettingsOf), whichever copy is kept.
  auto key = [](const MeasuredRow& r) {
    return absl::StrFormat("%s|%s|%s|%d|%d|%d|%d|%d|%.2f|%.2f", r.hardware,
                           r.catalog_model, r.engine, r.fp4, r.fp8, r.isl,
                           r.osl, r.concurrency, r.ttft_seconds * 1e3,
                           r.tpot_seconds * 1e3);
  };
  auto layout = [](const MeasuredRow& r) {
    return Layout{r.tp, r.pp, r.attention_dp, r.moe_tp, r.moe_ep};
  };
  DedupedRows out;
  std::set<std::pair<std::string, Layout>> inferencemax_runs;
  for (const MeasuredRow& r : rows) {
    if (r.inferencemax) inferencemax_runs.insert({key(r), layout(r)});
  }
  std::vector<MeasuredRow> read = rows;
  for (MeasuredRow& r : read) {
    if (!r.inferencemax && inferencemax_runs.count({key(r), layout(r)}) > 0) {
      r.inferencemax = true;
      ++out.copies_read_as_inferencemax;
    }
  }
  std::map<std::string, std::vector<Layout>> layouts;
  for (const MeasuredRow& r : read) layouts[key(r)].push_back(layout(r));
  std::map<std::string, bool> kept;
  for (const MeasuredRow& r : read) {
    const std::string k = key(r);
    const std::vector<Layout>& l = layouts[k];
    if (std::any_of(l.begin(), l.end(),
                    [&](const Layout& x) { return x != l.front(); })) {
      ++out.conflicting_layouts;
      continue;
    }
    if (kept[k]) {
      ++out.repeats;
      continue;
    }
    kept[k] = true;
    if (UnwarmedChunkedFirstWave(r)) {
      ++out.unwarmed_first_waves;
      continue;
    }
    out.rows.push_back(r);
  }
  return out;
}

namespace {

// A prompt's mean position in a wave of prompts that arrive together, as the
// share of the others' prefills it waits for (FitOnHardware).
constexpr double kLockstepWaveQueueFraction = 0.5;

}  // namespace

FitOptions TransferFitOptions() {
  FitOptions options;
  options.fit_gemm_efficiency = false;
  options.fit_packed_prefill_queue_fraction = false;
  return options;
}

std::vector<MeasuredRow> PredictableRows(
    const std::vector<MeasuredRow>& rows,
    const std::vector<CalibrationProfile>& profiles) {
  std::vector<MeasuredRow> out;
  for (const MeasuredRow& r : rows) {
    absl::StatusOr<std::vector<RowPrediction>> p = PredictRows({r}, profiles);
    if (p.ok() && p->front().feasible) out.push_back(r);
  }
  return out;
}

absl::StatusOr<std::vector<CalibrationProfile>> FitOnHardware(
    const std::vector<MeasuredRow>& rows, absl::string_view hardware,
    const FitOptions& options) {
  std::vector<CalibrationProfile> start = CalibrationProfiles();
  for (CalibrationProfile& p : start) {
    // The fitted parameters restart from the struct defaults; engine
    // behaviour (admission, preemption, host terms not fitted here) stays.
    p.calibration = WithEngineBehaviour(Calibration(), p.engine);
    // Only rows of FP4 weights on hardware without FP4 tensor cores (Hopper)
    // move the dequantising-kernel term; a fit on Blackwell rows leaves it
    // at its start. Start from what published weight-only kernels reach:
    // Marlin's "close to ideal (4x) speedups up to batchsizes of 16-32
    // tokens" (https://github.com/IST-DASLab/marlin, README), i.e. a 4-bit
    // read with its MXFP4 scales (one E8M0 byte per 32 weights).
    p.calibration.fp4_dequant_bytes_per_weight = 0.5 + 1.0 / 32;
    // The GEMM curve is not fitted here (FitCalibration,
    // FitOptions::fit_gemm_efficiency): the profiles' own. AIConfigurator's
    // GEMM tables measure B200's large-GEMM fraction of peak at 0.92x
    // H100's in BF16 and 0.85x in FP8/FP4; that factor made TTFT worse in
    // both directions and moved TPOT by 0.1 point
    // (docs/cost-model-and-calibration.md), so both GPUs keep one fraction.
    p.calibration.gemm_efficiency = DefaultCalibration().gemm_efficiency;
    p.calibration.gemm_half_efficiency_tokens =
        DefaultCalibration().gemm_half_efficiency_tokens;
    // An engine that prefills the waiting prompts in packed batches ahead of
    // decode (SGLang: "Run prefill first if possible",
    // Scheduler.get_next_batch_to_run in python/sglang/srt/managers/
    // scheduler.py) serves a wave of B prompts that arrive together in
    // arrival order, so the k-th waits for the k - 1 before it: (B - 1) / 2
    // packed shares on average, a queue fraction of 1/2. Closed-loop clients
    // with fixed lengths arrive in such waves (they start, decode and
    // resubmit together); the H100 fit, on AIConfigurator's fixed-length
    // SGLang runs, finds 0.488. The B200 SGLang rows are InferenceMAX's
    // random-length runs but for 12 and do not measure the wave
    // (FitOptions::fit_packed_prefill_queue_fraction): fitted there, the
    // fraction fell to 0.23 and priced H100's lockstep runs with half their
    // queue (TTFT median 0.57) and 1.5 times the prefill share in their
    // decode steps, (1 - 0.23) / (1 - 0.49) (TPOT median 1.25).
    if (p.calibration.prefill_batch_tokens > 0) {
      p.calibration.prefill_queue_fraction = kLockstepWaveQueueFraction;
    }
  }
  ParsedMeasurements data;
  for (MeasuredRow r : PredictableRows(rows, start)) {
    if (r.hardware != hardware) continue;
    r.held_out_model = r.held_out_row = false;
    data.rows.push_back(std::move(r));
  }
  if (data.rows.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("no rows of hardware ", hardware, " to fit on"));
  }
  return FitCalibration(data, start, options);
}

namespace {

// Rows of `hardware` that `profiles` predict, held out, with their
// predictions (and the engine-agnostic ones), appended to `residuals`.
absl::Status AppendResiduals(const std::vector<MeasuredRow>& rows,
                             const std::vector<CalibrationProfile>& profiles,
                             absl::string_view hardware,
                             std::vector<MeasuredRow>* residual_rows,
                             std::vector<RowPrediction>* residuals) {
  std::vector<MeasuredRow> held_out;
  for (MeasuredRow r : PredictableRows(rows, profiles)) {
    if (r.hardware != hardware) continue;
    r.held_out_model = true;
    held_out.push_back(std::move(r));
  }
  if (held_out.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cross-hardware bands need measured rows of ", hardware));
  }
  ASSIGN_OR_RETURN(std::vector<RowPrediction> pred,
                   PredictRowsForBands(held_out, profiles));
  residual_rows->insert(residual_rows->end(), held_out.begin(), held_out.end());
  residuals->insert(residuals->end(), pred.begin(), pred.end());
  return absl::OkStatus();
}

std::vector<MeasuredRow> RowsOf(const std::vector<MeasuredRow>& rows,
                                absl::string_view hardware) {
  std::vector<MeasuredRow> out;
  for (const MeasuredRow& r : rows) {
    if (r.hardware == hardware) out.push_back(r);
  }
  return out;
}

}  // namespace

absl::StatusOr<TransferBands> ComputeTransferBands(
    const std::vector<MeasuredRow>& rows,
    const std::vector<CalibrationProfile>& profiles) {
  TransferBands out;
  ASSIGN_OR_RETURN(out.band_hw_profiles,
                   FitOnHardware(rows, kTransferBandHardware));
  std::vector<MeasuredRow> fold_rows[2];
  std::vector<RowPrediction> fold_pred[2];
  RETURN_IF_ERROR(AppendResiduals(rows, profiles, kTransferBandHardware,
                                  &fold_rows[0], &fold_pred[0]));
  RETURN_IF_ERROR(AppendResiduals(rows, out.band_hw_profiles,
                                  kProfileFitHardware, &fold_rows[1],
                                  &fold_pred[1]));
  out.from_profile_fit =
      ComputeErrorBands(fold_rows[0], fold_pred[0], /*log_symmetric=*/true);
  out.from_band_hw_fit =
      ComputeErrorBands(fold_rows[1], fold_pred[1], /*log_symmetric=*/true);
  std::vector<MeasuredRow> pooled_rows = fold_rows[0];
  std::vector<RowPrediction> pooled_pred = fold_pred[0];
  pooled_rows.insert(pooled_rows.end(), fold_rows[1].begin(),
                     fold_rows[1].end());
  pooled_pred.insert(pooled_pred.end(), fold_pred[1].begin(),
                     fold_pred[1].end());
  out.pooled =
      ComputeErrorBands(pooled_rows, pooled_pred, /*log_symmetric=*/true);
  // Each fold's bands on the rows of the other.
  ASSIGN_OR_RETURN(
      out.from_profile_fit_scored,
      ComputeTransfer(RowsOf(rows, kProfileFitHardware), out.band_hw_profiles,
                      kTransferBandHardware, out.from_profile_fit));
  ASSIGN_OR_RETURN(
      out.from_band_hw_fit_scored,
      ComputeTransfer(RowsOf(rows, kTransferBandHardware), profiles,
                      kProfileFitHardware, out.from_band_hw_fit));
  return out;
}

std::string TransferReport::Markdown() const {
  std::string s =
      "| hardware | engine | model | weights | rows | infeasible | TPOT MAPE "
      "| TPOT median pred/meas | TTFT MAPE | TTFT median pred/meas | TPOT "
      "in p10-p90 | TTFT in p10-p90 |\n"
      "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const std::vector<TransferGroup>* list : {&groups, &hardware_totals}) {
    for (const TransferGroup& g : *list) {
      absl::StrAppendFormat(
          &s,
          "| %s | %s | %s | %s | %d | %d | %.1f%% | %.2f | %.1f%% | %.2f | "
          "%.0f%% | %.0f%% |\n",
          g.hardware, g.engine, g.model, g.dtype, g.rows, g.infeasible,
          g.tpot_mape, g.tpot_median_ratio, g.ttft_mape, g.ttft_median_ratio,
          100 * g.tpot_in_band, 100 * g.ttft_in_band);
    }
  }
  return s;
}

std::string TransferReport::CoverageMarkdown() const {
  std::string s =
      "| hardware | engine | model kind | rows | TPOT MAPE | TTFT MAPE | "
      "TPOT in p10-p90 | TTFT in p10-p90 |\n"
      "|---|---|---|---:|---:|---:|---:|---:|\n";
  for (const std::vector<TransferGroup>* list :
       {&kind_totals, &hardware_totals}) {
    for (const TransferGroup& g : *list) {
      absl::StrAppendFormat(
          &s, "| %s | %s | %s | %d | %.1f%% | %.1f%% | %.0f%% | %.0f%% |\n",
          g.hardware, g.engine, g.model, g.rows - g.infeasible, g.tpot_mape,
          g.ttft_mape, 100 * g.tpot_in_band, 100 * g.ttft_in_band);
    }
  }
  return s;
}

}  // namespace shardplan::simulator
