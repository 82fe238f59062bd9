// shardplan-calibrate: prints the cost model's accuracy against the measured
// H100 serving latency CSV as a markdown table, and with --fit re-runs the
// calibration fit on the fit rows (Llama-3.1-8B and every 4th row of the other
// models held out) and prints the fitted profiles as C++ for
// simulator/calibration.cc.
//
//   shardplan-calibrate --csv
//   simulator/calibration/data/h100_measured_latency.csv
//                       [--csv simulator/calibration/data/h100_moe_latency.csv]
//                       [--fit]
//                       [--validation-csv FILE]...  (held-out models only)
//                       [--rows]   (per-row predictions as CSV)
//                       [--bands]  (error-bar table as C++ and markdown,
//                                   coverage on the held-out rows)
//   shardplan-calibrate --disagg-csv
//   simulator/calibration/data/h100_disagg_latency.csv [--rows]
//                       (accuracy on disaggregated prefill/decode rows)
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "simulator/calibration.h"

namespace {

int Usage() {
  std::cerr
      << "usage: shardplan-calibrate --csv FILE [--validation-csv FILE]... "
         "[--fit] [--rows] [--bands]\n"
         "       shardplan-calibrate --disagg-csv FILE [--rows | --fit]\n";
  return 2;
}

void PrintProfiles(
    const std::vector<shardplan::simulator::CalibrationProfile>& profiles) {
  for (const auto& p : profiles) {
    const auto& c = p.calibration;
    std::cout << absl::StrFormat(
        "%s (%s): gemm_efficiency %.10g, gemm_half_efficiency_tokens %.10g, "
        "hbm_efficiency "
        "%.10g, attention_efficiency %.10g, collective_latency_scale %.10g, "
        "decode_step_overhead_s %.10g, prefill_overhead_s %.10g, "
        "layer_overhead_s %.10g, "
        "prefill_queue_fraction %.10g, ttft_wait_iterations %.10g, "
        "ttft_inflight_prefills %.10g, fp4_dequant_bytes_per_weight %.10g\n",
        p.name, p.engine, c.gemm_efficiency, c.gemm_half_efficiency_tokens,
        c.hbm_efficiency, c.attention_efficiency, c.collective_latency_scale,
        c.decode_step_overhead_s, c.prefill_overhead_s, c.layer_overhead_s,
        c.prefill_queue_fraction, c.ttft_wait_iterations,
        c.ttft_inflight_prefills, c.fp4_dequant_bytes_per_weight);
  }
}

// Reads and parses one CSV; prints the error and returns nullopt on failure.
std::optional<shardplan::simulator::ParsedMeasurements> Load(
    const std::string& path, bool validation_only) {
  std::ifstream in(path);
  if (!in) {
    std::cerr << "cannot read " << path << "\n";
    return std::nullopt;
  }
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<shardplan::simulator::ParsedMeasurements> data =
      shardplan::simulator::ParseMeasurements(text.str(), validation_only);
  if (!data.ok()) {
    std::cerr << path << ": " << data.status() << "\n";
    return std::nullopt;
  }
  return *std::move(data);
}

// The accuracy on disaggregated rows (and with `rows` each row's
// prediction as CSV). Exit code as main's.
int ReportDisaggregated(const std::string& path, bool rows, bool fit) {
  namespace sim = shardplan::simulator;
  std::ifstream in(path);
  if (!in) {
    std::cerr << "cannot read " << path << "\n";
    return 1;
  }
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<sim::ParsedDisaggregated> data =
      sim::ParseDisaggregatedRows(text.str());
  if (data.ok() && fit) {
    absl::StatusOr<std::vector<sim::CalibrationProfile>> fitted =
        sim::FitDisaggregatedOverheads(data->rows, sim::CalibrationProfiles());
    if (!fitted.ok()) {
      std::cerr << fitted.status() << "\n";
      return 1;
    }
    for (const sim::CalibrationProfile& p : *fitted) {
      std::cout << absl::StrFormat(
          "%s: disagg_request_overhead_s %.10g, "
          "disagg_prefill_queue_fraction %.10g\n",
          p.name, p.calibration.disagg_request_overhead_s,
          p.calibration.disagg_prefill_queue_fraction);
    }
    return 0;
  }
  absl::StatusOr<sim::DisaggregatedAccuracy> report =
      data.ok() ? sim::ComputeDisaggregatedAccuracy(data->rows,
                                                    sim::CalibrationProfiles())
                : absl::StatusOr<sim::DisaggregatedAccuracy>(data.status());
  if (!report.ok()) {
    std::cerr << path << ": " << report.status() << "\n";
    return 1;
  }
  std::cout << report->Markdown()
            << absl::StrFormat(
                   "Rows skipped: %d without a model or numbers, %d with more "
                   "than %d requests per decode worker (engine queue).\n",
                   data->skipped, data->skipped_queueing,
                   sim::kMaxFitConcurrency);
  if (rows) {
    absl::StatusOr<std::vector<sim::RowPrediction>> pred =
        sim::PredictDisaggregatedRows(data->rows, sim::CalibrationProfiles());
    if (!pred.ok()) {
      std::cerr << pred.status() << "\n";
      return 1;
    }
    std::cout << "\nline,model,engine,isl,osl,concurrency,prefill,decode,"
                 "ttft_ms,predicted_ttft_ms,tpot_ms,predicted_tpot_ms\n";
    for (size_t i = 0; i < data->rows.size(); ++i) {
      const sim::DisaggregatedRow& r = data->rows[i];
      std::cout << absl::StrFormat(
          "%d,%s,%s,%d,%d,%d,%dx(tp%d dp%d ep%d b%d),%dx(tp%d dp%d ep%d "
          "b%d),%.0f,%.0f,%.1f,%.1f\n",
          r.line, r.catalog_model, r.engine, r.isl, r.osl, r.concurrency,
          r.prefill.workers, r.prefill.tp, r.prefill.attention_dp,
          r.prefill.moe_ep, r.prefill.batch_size, r.decode.workers, r.decode.tp,
          r.decode.attention_dp, r.decode.moe_ep, r.decode.batch_size,
          r.ttft_s * 1e3, (*pred)[i].ttft_s * 1e3, r.tpot_s * 1e3,
          (*pred)[i].tpot_s * 1e3);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  namespace sim = shardplan::simulator;
  std::vector<std::string> csv_paths;
  std::vector<std::string> validation_paths;
  std::string disagg_path;
  bool fit = false, rows = false, bands = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--csv" && i + 1 < argc) {
      csv_paths.push_back(argv[++i]);
    } else if (a == "--disagg-csv" && i + 1 < argc) {
      disagg_path = argv[++i];
    } else if (a == "--validation-csv" && i + 1 < argc) {
      validation_paths.push_back(argv[++i]);
    } else if (a == "--fit") {
      fit = true;
    } else if (a == "--rows") {
      rows = true;
    } else if (a == "--bands") {
      bands = true;
    } else {
      return Usage();
    }
  }
  if (!disagg_path.empty()) return ReportDisaggregated(disagg_path, rows, fit);
  if (csv_paths.empty()) return Usage();
  std::optional<sim::ParsedMeasurements> data = Load(csv_paths[0], false);
  if (!data) return 1;
  // Further fit files (each with its own 1-in-4 held-out rows).
  for (size_t i = 1; i < csv_paths.size(); ++i) {
    std::optional<sim::ParsedMeasurements> more = Load(csv_paths[i], false);
    if (!more) return 1;
    data->rows.insert(data->rows.end(), more->rows.begin(), more->rows.end());
    data->skipped_disaggregated += more->skipped_disaggregated;
    data->skipped_other += more->skipped_other;
    data->high_concurrency_rows.insert(data->high_concurrency_rows.end(),
                                       more->high_concurrency_rows.begin(),
                                       more->high_concurrency_rows.end());
  }
  // Validation-only rows join the report as held-out models; the fit never
  // sees them (FitCalibration skips held-out rows).
  for (const std::string& path : validation_paths) {
    std::optional<sim::ParsedMeasurements> more = Load(path, true);
    if (!more) return 1;
    data->rows.insert(data->rows.end(), more->rows.begin(), more->rows.end());
    data->skipped_disaggregated += more->skipped_disaggregated;
    data->skipped_other += more->skipped_other;
    data->high_concurrency_rows.insert(data->high_concurrency_rows.end(),
                                       more->high_concurrency_rows.begin(),
                                       more->high_concurrency_rows.end());
  }
  std::vector<sim::CalibrationProfile> profiles = sim::CalibrationProfiles();
  if (fit) {
    // The fit starts from the Calibration struct's defaults (not from the
    // compiled-in constants), so re-running it reproduces them.
    std::vector<sim::CalibrationProfile> start = profiles;
    for (sim::CalibrationProfile& p : start) {
      // Engine behaviour (KV admission) is not fitted: keep it.
      const double kv = p.calibration.kv_reserved_output_fraction;
      p.calibration = sim::Calibration();
      p.calibration.kv_reserved_output_fraction = kv;
    }
    absl::StatusOr<std::vector<sim::CalibrationProfile>> fitted =
        sim::FitCalibration(*data, start);
    if (!fitted.ok()) {
      std::cerr << fitted.status() << "\n";
      return 1;
    }
    profiles = *fitted;
    std::cout << "Fitted profiles:\n";
    PrintProfiles(profiles);
    std::cout << "\n";
  } else {
    std::cout << "Compiled-in profiles:\n";
    PrintProfiles(profiles);
    std::cout << "\n";
  }
  if (rows) {
    absl::StatusOr<std::vector<sim::RowPrediction>> pred =
        sim::PredictRows(data->rows, profiles);
    if (!pred.ok()) {
      std::cerr << pred.status() << "\n";
      return 1;
    }
    std::cout << "line,model,engine,isl,osl,c,tp,ep,held_out,ttft_ms,pred_ttft_"
                 "ms,tpot_ms,"
                 "pred_tpot_ms,pred_prefill_ms\n";
    for (size_t i = 0; i < data->rows.size(); ++i) {
      const sim::MeasuredRow& r = data->rows[i];
      std::cout << absl::StrFormat(
          "%d,%s,%s,%d,%d,%d,%d,%d,%d,%.1f,%.1f,%.2f,%.2f,%.2f\n", r.line,
          r.catalog_model, r.engine, r.isl, r.osl, r.concurrency, r.tp,
          r.moe_ep, r.held_out() ? 1 : 0, r.ttft_s * 1e3,
          (*pred)[i].ttft_s * 1e3, r.tpot_s * 1e3, (*pred)[i].tpot_s * 1e3,
          (*pred)[i].prefill_s * 1e3);
    }
    std::cout << "\n";
  }
  if (bands) {
    // The error bars of the profiles above (compiled-in, or just fitted),
    // from the held-out rows only.
    absl::StatusOr<std::vector<sim::RowPrediction>> pred =
        sim::PredictRows(data->rows, profiles);
    if (!pred.ok()) {
      std::cerr << pred.status() << "\n";
      return 1;
    }
    const std::vector<sim::ErrorBand> table =
        sim::ComputeErrorBands(data->rows, *pred);
    std::cout << "Error bands (C++ for CompiledErrorBands(), "
                 "simulator/calibration.cc):\n"
              << sim::ErrorBandsCpp(table) << "\n"
              << sim::ErrorBandsMarkdown(
                     table, sim::ComputeBandCoverage(data->rows, *pred))
              << "\n";
  }
  absl::StatusOr<sim::AccuracyReport> report =
      sim::ComputeAccuracy(*data, profiles);
  if (!report.ok()) {
    std::cerr << report.status() << "\n";
    return 1;
  }
  std::cout << report->Markdown();
  absl::StatusOr<std::vector<sim::CrossCheckRow>> cross =
      sim::CrossCheckPublicThroughput(profiles.front().calibration);
  if (!cross.ok()) {
    std::cerr << cross.status() << "\n";
    return 1;
  }
  std::cout << "\nPublished maximum throughput (cross-check, not fitted):\n\n"
            << sim::CrossCheckMarkdown(*cross);
  return 0;
}
