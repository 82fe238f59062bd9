// shardplan-calibrate: prints the cost model's accuracy against the measured
// H100 serving latency CSV as a markdown table, and with --fit re-runs the
// calibration fit on the fit rows (Llama-3.1-8B and every 4th row of the other
// models held out) and prints the fitted profiles as C++ for
// simulator/calibration.cc.
//
//   shardplan-calibrate --csv
//   simulator/calibration/data/h100_measured_latency.csv
//                       [--csv simulator/calibration/data/h100_moe_latency.csv]
//                       [--fit | --fit-engine-terms ENGINE |
//                        --fit-shared-terms A,B]
//                       (--fit-engine-terms: from the compiled-in profiles,
//                       refit only ENGINE's prefill_overhead_s and
//                       prefill_queue_fraction; --fit-shared-terms: only the
//                       shared constants named, e.g.
//                       collective_latency_scale,layer_overhead_s)
//                       [--validation-csv FILE]...  (held-out models only)
//                       [--rows]   (per-row predictions as CSV)
//                       [--bands]  (error-bar table as C++ and markdown,
//                                   coverage on the held-out rows)
//                       [--report-dir DIR]  (DIR/accuracy-report.md and
//                                   DIR/predicted-vs-measured.png via gnuplot)
//                       [--user-fit ENGINE:MODEL [--fit-rows N] [--base P]]
//                                   (a profile fitted on N rows of one group,
//                                   as the Calibrate RPC does; error on the
//                                   group's other rows before and after;
//                                   the fit starts from profile P, default
//                                   the engine's)
//   shardplan-calibrate --disagg-csv
//   simulator/calibration/data/h100_disagg_latency.csv [--rows]
//                       (accuracy on disaggregated prefill/decode rows)
//   shardplan-calibrate --transfer-csv FILE... [--rows] [--fit-on HARDWARE]
//                       [--bands]
//                       (aggregated rows of any catalogued GPU, each
//                       predicted on its own hardware with the compiled-in
//                       profiles, or with profiles fitted on HARDWARE's rows
//                       only: error per hardware, engine, model, dtype;
//                       --bands prints the cross-hardware bands, which
//                       need the H100 and the B200 rows, and their
//                       held-out coverage)
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "simulator/calibration_harness.h"
#include "simulator/calibration_transfer.h"

namespace {

int Usage() {
  std::cerr
      << "usage: shardplan-calibrate --csv FILE [--validation-csv FILE]... "
         "[--fit | --fit-engine-terms ENGINE | --fit-shared-terms A,B] "
         "[--rows] "
         "[--bands] "
         "[--report-dir DIR] [--user-fit "
         "ENGINE:MODEL [--fit-rows N] [--base PROFILE]]\n"
         "       shardplan-calibrate --disagg-csv FILE [--rows | --fit]\n"
         "       shardplan-calibrate --transfer-csv FILE... [--rows] [--fit-on "
         "HARDWARE] [--bands]\n";
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
        c.decode_step_overhead_seconds, c.prefill_overhead_seconds,
        c.layer_overhead_seconds, c.prefill_queue_fraction,
        c.ttft_wait_iterations, c.ttft_inflight_prefills,
        c.fp4_dequant_bytes_per_weight);
  }
}

// A file's text; prints the error and returns nullopt when unreadable.
std::optional<std::string> ReadText(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::cerr << "cannot read " << path << "\n";
    return std::nullopt;
  }
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Reads and parses one CSV; prints the error and returns nullopt on failure.
std::optional<shardplan::simulator::ParsedMeasurements> Load(
    const std::string& path, bool validation_only) {
  const std::optional<std::string> text = ReadText(path);
  if (!text) return std::nullopt;
  absl::StatusOr<shardplan::simulator::ParsedMeasurements> data =
      shardplan::simulator::ParseMeasurements(*text, validation_only);
  if (!data.ok()) {
    std::cerr << path << ": " << data.status() << "\n";
    return std::nullopt;
  }
  return *std::move(data);
}

// Load of one more CSV, its rows and counts added to `data`; false (error
// printed) on failure.
bool LoadMore(const std::string& path, bool validation_only,
              shardplan::simulator::ParsedMeasurements& data) {
  std::optional<shardplan::simulator::ParsedMeasurements> more =
      Load(path, validation_only);
  if (!more) return false;
  data.rows.insert(data.rows.end(), more->rows.begin(), more->rows.end());
  data.skipped_disaggregated += more->skipped_disaggregated;
  data.skipped_other += more->skipped_other;
  data.skipped_speculative += more->skipped_speculative;
  data.skipped_unsteady += more->skipped_unsteady;
  data.skipped_unrecorded_load += more->skipped_unrecorded_load;
  data.skipped_below_peak_floors += more->skipped_below_peak_floors;
  data.high_concurrency_rows.insert(data.high_concurrency_rows.end(),
                                    more->high_concurrency_rows.begin(),
                                    more->high_concurrency_rows.end());
  return true;
}

// Prints the error of `value` if it has one.
template <typename T>
bool Failed(const absl::StatusOr<T>& value) {
  if (value.ok()) return false;
  std::cerr << value.status() << "\n";
  return true;
}

// The accuracy on disaggregated rows (and with `rows` each row's
// prediction as CSV). Exit code as main's.
int ReportDisaggregated(const std::string& path, bool rows, bool fit) {
  namespace sim = shardplan::simulator;
  const std::optional<std::string> text = ReadText(path);
  if (!text) return 1;
  absl::StatusOr<sim::ParsedDisaggregated> data =
      sim::ParseDisaggregatedRows(*text);
  if (data.ok() && fit) {
    absl::StatusOr<std::vector<sim::CalibrationProfile>> fitted =
        sim::FitDisaggregatedOverheads(data->rows, sim::CalibrationProfiles());
    if (Failed(fitted)) return 1;
    for (const sim::CalibrationProfile& p : *fitted) {
      std::cout << absl::StrFormat(
          "%s: disagg_request_overhead_s %.10g, "
          "disagg_prefill_queue_fraction %.10g\n",
          p.name, p.calibration.disagg_request_overhead_seconds,
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
                   "than %d requests per decode worker (engine queue), %d "
                   "repeats of a measurement, %d rows of measurements "
                   "reported under different layouts.\n",
                   data->skipped, data->skipped_queueing,
                   shardplan::limits::kMaxFitConcurrency,
                   data->skipped_duplicates, data->skipped_conflicting_layouts);
  if (rows) {
    absl::StatusOr<std::vector<sim::RowPrediction>> pred =
        sim::PredictDisaggregatedRows(data->rows, sim::CalibrationProfiles());
    if (Failed(pred)) return 1;
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
          r.ttft_seconds * 1e3, (*pred)[i].ttft_seconds * 1e3,
          r.tpot_seconds * 1e3, (*pred)[i].tpot_seconds * 1e3);
    }
  }
  return 0;
}

namespace sim = shardplan::simulator;

// Per (split, engine, model, regime) accuracy of `predictions`: MAPE and bias
// (mean signed error, predicted/measured - 1) of TPOT and TTFT, and how many
// measurements fall inside the p10-p90 range a prediction of that regime
// carries (FindPredictionBand: the shipped bands).
std::string AccuracyMarkdown(
    const std::vector<sim::MeasuredRow>& rows,
    const std::vector<sim::RowPrediction>& predictions) {
  struct Acc {
    int n = 0;
    double tpot_ape = 0, tpot_bias = 0, ttft_ape = 0, ttft_bias = 0;
    int tpot_in = 0, ttft_in = 0;
  };
  std::map<std::tuple<std::string, std::string, std::string, std::string>, Acc>
      groups;
  for (size_t i = 0; i < rows.size(); ++i) {
    const sim::MeasuredRow& r = rows[i];
    const sim::RowPrediction& p = predictions[i];
    if (!p.feasible || !(p.tpot_seconds > 0) || !(p.ttft_seconds > 0)) continue;
    absl::StatusOr<sim::Problem> problem = sim::RowProblem(r);
    if (!problem.ok()) continue;
    sim::BandRegime regime;
    for (const sim::CalibrationProfile& profile : sim::CalibrationProfiles()) {
      if (profile.engine == r.engine) regime.profile = profile.name;
    }
    regime.moe = problem->model.is_moe();
    regime.weight_dtype = problem->workload.weight_dtype;
    regime.pipeline_stages = r.pp;
    const sim::PredictionBand band = sim::FindPredictionBand(regime);
    const std::string split = r.held_out_model ? "held-out model"
                              : r.held_out_row ? "held-out rows"
                                               : "fit";
    const std::string regime_name = absl::StrCat(
        regime.moe ? "MoE" : "dense", " ", sim::DtypeName(regime.weight_dtype),
        r.pp > 1 ? " pp>1" : "");
    Acc& a = groups[{split, r.engine, r.catalog_model, regime_name}];
    const double tpot_ratio =
        r.tpot_seconds / p.tpot_seconds;  // measured / predicted
    const double ttft_ratio = r.ttft_seconds / p.ttft_seconds;
    ++a.n;
    a.tpot_ape += std::abs(p.tpot_seconds / r.tpot_seconds - 1);
    a.tpot_bias += p.tpot_seconds / r.tpot_seconds - 1;
    a.ttft_ape += std::abs(p.ttft_seconds / r.ttft_seconds - 1);
    a.ttft_bias += p.ttft_seconds / r.ttft_seconds - 1;
    a.tpot_in += tpot_ratio >= band.tpot_low && tpot_ratio <= band.tpot_high;
    a.ttft_in += ttft_ratio >= band.ttft_low && ttft_ratio <= band.ttft_high;
  }
  std::string out =
      "| split | engine | model | regime | rows | TPOT MAPE | TPOT bias | TTFT "
      "MAPE | TTFT bias | in TPOT p10-p90 | in TTFT p10-p90 |\n"
      "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& [key, a] : groups) {
    const auto& [split, engine, model, regime] = key;
    absl::StrAppendFormat(
        &out,
        "| %s | %s | %s | %s | %d | %.1f%% | %+.1f%% | %.1f%% | %+.1f%% "
        "| %.0f%% | %.0f%% |\n",
        split, engine, model, regime, a.n, 100 * a.tpot_ape / a.n,
        100 * a.tpot_bias / a.n, 100 * a.ttft_ape / a.n,
        100 * a.ttft_bias / a.n, 100.0 * a.tpot_in / a.n,
        100.0 * a.ttft_in / a.n);
  }
  return out;
}

// Writes DIR/accuracy-report.md, DIR/predicted-vs-measured.dat and .gp, and
// runs gnuplot (Debian gnuplot-nox) for DIR/predicted-vs-measured.png.
int WriteReport(const std::string& dir,
                const std::vector<sim::MeasuredRow>& rows,
                const std::vector<sim::RowPrediction>& predictions,
                const std::string& summary) {
  {
    std::ofstream md(dir + "/accuracy-report.md");
    md << "# Cost-model accuracy on measured H100 serving runs\n\n"
       << "Generated by `shardplan-calibrate --report-dir` (see "
          "docs/cost-model-and-calibration.md for the command). Bias is the "
          "mean of predicted/measured - 1 (positive: the model predicts "
          "slower than measured). \"In p10-p90\" is the share of "
          "measurements inside the range a prediction of that regime "
          "carries (target 75-85% on held-out rows). Fit rows were used "
          "by the fit; held-out rows and models never were.\n\n"
       << AccuracyMarkdown(rows, predictions) << "\n"
       << summary;
    if (!md) {
      std::cerr << "cannot write " << dir << "/accuracy-report.md\n";
      return 1;
    }
  }
  std::ofstream data(dir + "/predicted-vs-measured.dat");
  // gnuplot data blocks: 0 fit TPOT, 1 held-out TPOT, 2 fit TTFT, 3 held-out
  // TTFT (measured, predicted, in ms).
  for (int block = 0; block < 4; ++block) {
    const bool ttft = block >= 2;
    const bool held = block % 2 == 1;
    data << "# " << (held ? "held-out" : "fit") << (ttft ? " TTFT" : " TPOT")
         << "\n";
    for (size_t i = 0; i < rows.size(); ++i) {
      const sim::RowPrediction& p = predictions[i];
      if (rows[i].held_out() != held || !p.feasible) continue;
      data << (ttft ? rows[i].ttft_seconds : rows[i].tpot_seconds) * 1e3 << " "
           << (ttft ? p.ttft_seconds : p.tpot_seconds) * 1e3 << "\n";
    }
    data << "\n\n";
  }
  data.close();
  std::ofstream gp(dir + "/predicted-vs-measured.gp");
  gp << "set terminal pngcairo size 1200,540 font ',10'\n"
     << "set output '" << dir << "/predicted-vs-measured.png'\n"
     << "set multiplot layout 1,2 title 'shardplan cost model vs measured "
        "H100 serving (log-log; dashed: +-25%)'\n"
     << "set logscale xy\nset grid\nset key top left\n"
     << "set xlabel 'measured (ms)'\nset ylabel 'predicted (ms)'\n"
     << "set title 'TPOT'\n"
     << "plot '" << dir
     << "/predicted-vs-measured.dat' index 0 using 1:2 "
        "with points pt 7 ps 0.5 lc rgb '#9ecae1' title 'fit rows', '' index "
        "1 using 1:2 with points pt 7 ps 0.6 lc rgb '#d62728' title "
        "'held-out', x with lines lc rgb 'black' notitle, 1.25*x with lines "
        "dt 2 lc rgb 'gray' notitle, 0.75*x with lines dt 2 lc rgb 'gray' "
        "notitle\n"
     << "set title 'TTFT'\n"
     << "plot '" << dir
     << "/predicted-vs-measured.dat' index 2 using 1:2 "
        "with points pt 7 ps 0.5 lc rgb '#9ecae1' title 'fit rows', '' index "
        "3 using 1:2 with points pt 7 ps 0.6 lc rgb '#d62728' title "
        "'held-out', x with lines lc rgb 'black' notitle, 1.25*x with lines "
        "dt 2 lc rgb 'gray' notitle, 0.75*x with lines dt 2 lc rgb 'gray' "
        "notitle\n"
     << "unset multiplot\n";
  gp.close();
  const std::string command =
      absl::StrCat("gnuplot '", dir, "/predicted-vs-measured.gp'");
  if (std::system(command.c_str()) != 0) {
    std::cerr << "gnuplot failed (install gnuplot-nox: scripts/install-deps); "
                 "the report is written, the PNG is not\n";
    return 1;
  }
  return 0;
}

// --user-fit: the Calibrate RPC's fit (FitProfile) on `fit_rows` rows of one
// (engine, model) group, spread over the group; the group's other rows are
// held out. Prints the group's held-out errors before and after.
int UserFit(const std::vector<sim::MeasuredRow>& all, const std::string& group,
            int fit_rows, const std::string& base_name) {
  const std::vector<std::string> parts = absl::StrSplit(group, ':');
  if (parts.size() != 2) {
    std::cerr << "--user-fit wants ENGINE:MODEL, got " << group << "\n";
    return 2;
  }
  absl::StatusOr<sim::CalibrationProfile> base =
      sim::FindCalibrationProfile(base_name.empty() ? parts[0] : base_name);
  if (Failed(base)) return 1;
  absl::StatusOr<std::vector<sim::MeasuredRow>> rows =
      sim::UserFitRows(all, parts[0], parts[1], fit_rows, *base);
  if (Failed(rows)) return 1;
  absl::StatusOr<sim::ProfileFit> fit =
      sim::FitProfile("user-" + parts[0], *rows, *base);
  if (Failed(fit)) return 1;
  std::cout << absl::StrFormat(
      "| group | fit rows | held-out rows | held-out TPOT MAPE %s | "
      "fitted | held-out TTFT MAPE %s | fitted | fit-row TPOT | fit-row "
      "TTFT |\n"
      "|---|---:|---:|---:|---:|---:|---:|---|---|\n"
      "| %s | %d | %d | %.1f%% | %.1f%% | %.1f%% | %.1f%% | %.1f%% -> %.1f%% "
      "| %.1f%% -> %.1f%% |\n",
      base->name, base->name, group, fit->fit_rows, fit->held_out_rows,
      fit->tpot_mape_before, fit->tpot_mape_after, fit->ttft_mape_before,
      fit->ttft_mape_after, fit->fit_tpot_mape_before, fit->fit_tpot_mape_after,
      fit->fit_ttft_mape_before, fit->fit_ttft_mape_after);
  std::cout << "\nStarting and fitted profiles:\n";
  PrintProfiles({*base, fit->profile});
  return 0;
}

}  // namespace

// --transfer-csv: rows of every catalogued GPU predicted on their own
// hardware with the compiled-in (H100-fitted) profiles.
int ReportTransfer(const std::vector<std::string>& paths, bool rows,
                   const std::string& fit_on, bool bands) {
  std::vector<sim::MeasuredRow> all;
  for (const std::string& path : paths) {
    std::optional<sim::ParsedMeasurements> parsed =
        Load(path, /*validation_only=*/true);
    if (!parsed) return 1;
    std::cout << absl::StrFormat(
        "%s: %d rows; skipped %d of held-out hardware, %d others "
        "(disaggregated, models or hardware not in the catalog, above 256 "
        "requests)\n",
        path, parsed->rows.size(), parsed->skipped_held_out_hardware,
        parsed->skipped_disaggregated + parsed->skipped_other +
            parsed->high_concurrency_rows.size());
    if (parsed->skipped_speculative > 0) {
      std::cout << absl::StrFormat(
          "  %d runs of speculative-decoding (MTP) configurations skipped\n",
          parsed->skipped_speculative);
    }
    if (parsed->skipped_unsteady > 0) {
      std::cout << absl::StrFormat(
          "  %d gap-analysis runs that do not measure steady decoding "
          "skipped\n",
          parsed->skipped_unsteady);
    }
    if (parsed->skipped_unrecorded_load > 0) {
      std::cout << absl::StrFormat(
          "  %d gap-analysis runs without their load (no "
          "silicon_concurrency) skipped\n",
          parsed->skipped_unrecorded_load);
    }
    if (parsed->skipped_below_peak_floors > 0) {
      std::cout << absl::StrFormat(
          "  %d runs faster than their layout and load allow at peak rates "
          "skipped\n",
          parsed->skipped_below_peak_floors);
    }
    if (parsed->exported_layouts_read_as_node > 0) {
      std::cout << absl::StrFormat(
          "  %d exported expert layouts read as the single-node run they "
          "measure\n",
          parsed->exported_layouts_read_as_node);
    }
    const sim::DedupedRows runs = sim::DropRepeatedRuns(parsed->rows);
    std::cout << absl::StrFormat(
        "  %d repeated runs and %d runs reported under several layouts "
        "dropped\n",
        runs.repeats, runs.conflicting_layouts);
    if (runs.unwarmed_first_waves > 0) {
      std::cout << absl::StrFormat(
          "  %d runs measured without warm-up whose first chunked prefill "
          "stalls the measurement skipped\n",
          runs.unwarmed_first_waves);
    }
    if (runs.copies_read_as_inferencemax > 0) {
      std::cout << absl::StrFormat(
          "  %d database copies of InferenceMAX runs read as those runs\n",
          runs.copies_read_as_inferencemax);
    }
    all.insert(all.end(), runs.rows.begin(), runs.rows.end());
  }
  std::vector<sim::CalibrationProfile> profiles = sim::CalibrationProfiles();
  std::string fit_hardware = sim::kProfileFitHardware;
  if (bands) {
    // Cross-hardware bands, two folds (the compiled-in profiles on the rows
    // of kTransferBandHardware, profiles fitted there on the
    // kProfileFitHardware rows), pooled; each fold scored on the other.
    absl::StatusOr<sim::TransferBands> b =
        sim::ComputeTransferBands(all, profiles);
    if (Failed(b)) return 1;
    std::cout << "Cross-hardware bands (C++ for CompiledTransferBands()):\n"
              << sim::ErrorBandsCpp(b->pooled) << "\n"
              << sim::ErrorBandsMarkdown(b->pooled, {}) << "\n"
              << "Held out: bands of the " << sim::kProfileFitHardware
              << " fit's errors on " << sim::kTransferBandHardware
              << " scored on the " << sim::kProfileFitHardware << " rows ("
              << sim::kTransferBandHardware << " fit):\n"
              << b->from_profile_fit_scored.CoverageMarkdown() << "\n"
              << "Held out: bands of the " << sim::kTransferBandHardware
              << " fit's errors on " << sim::kProfileFitHardware
              << " scored on the " << sim::kTransferBandHardware
              << " rows (compiled-in profiles):\n"
              << b->from_band_hw_fit_scored.CoverageMarkdown() << "\n"
              << "Bands of the " << sim::kProfileFitHardware
              << " fit's errors on " << sim::kTransferBandHardware << ":\n"
              << sim::ErrorBandsMarkdown(b->from_profile_fit, {}) << "\n"
              << "Bands of the " << sim::kTransferBandHardware
              << " fit's errors on " << sim::kProfileFitHardware << ":\n"
              << sim::ErrorBandsMarkdown(b->from_band_hw_fit, {}) << "\n";
  }
  if (!fit_on.empty()) {
    // Leave one hardware out the other way: fit on `fit_on`'s rows (from the
    // struct defaults, as --fit does), predict every other hardware's.
    absl::StatusOr<std::vector<sim::CalibrationProfile>> fitted =
        sim::FitOnHardware(all, fit_on);
    if (Failed(fitted)) return 1;
    profiles = *fitted;
    fit_hardware = fit_on;
    std::cout << "Fitted on the rows of " << fit_on << ":\n";
    PrintProfiles(profiles);
    std::vector<sim::MeasuredRow> test;
    for (const sim::MeasuredRow& r : all) {
      if (r.hardware != fit_on) test.push_back(r);
    }
    all = test;
  }
  if (rows) {
    const std::vector<sim::MeasuredRow> predictable =
        sim::PredictableRows(all, profiles);
    absl::StatusOr<std::vector<sim::RowPrediction>> pred =
        sim::PredictRows(predictable, profiles);
    if (Failed(pred)) return 1;
    // source: "inferencemax" for InferenceMAX's runs (their harness and
    // server settings, RowProblem), "aic" for the rest. pred_iteration_ms is
    // the decode iteration the TTFT waits are counted in, pred_kv_wait_ms the
    // KV-cache overflow wait inside pred_ttft_ms: with pred_prefill_ms they
    // split a row's TTFT error into prefill, waits and queueing.
    std::cout << "line,hardware,model,engine,version,weights,source,isl,osl,"
                 "c,tp,dp,ep,feasible,ttft_ms,pred_ttft_ms,tpot_ms,"
                 "pred_tpot_ms,pred_prefill_ms,pred_iteration_ms,"
                 "pred_kv_wait_ms\n";
    for (size_t i = 0; i < predictable.size(); ++i) {
      const sim::MeasuredRow& r = predictable[i];
      std::cout << absl::StrFormat(
          "%d,%s,%s,%s,%s,%s,%s,%d,%d,%d,%d,%d,%d,%d,%.1f,%.1f,%.2f,%.2f,%.1f,"
          "%.2f,%.1f\n",
          r.line, r.hardware, r.catalog_model, r.engine, r.engine_version,
          r.fp4   ? "fp4"
          : r.fp8 ? "fp8"
                  : "bf16",
          r.inferencemax ? "inferencemax" : "aic", r.isl, r.osl, r.concurrency,
          r.tp, r.attention_dp, r.moe_ep, (*pred)[i].feasible ? 1 : 0,
          r.ttft_seconds * 1e3, (*pred)[i].ttft_seconds * 1e3,
          r.tpot_seconds * 1e3, (*pred)[i].tpot_seconds * 1e3,
          (*pred)[i].prefill_seconds * 1e3, (*pred)[i].iteration_seconds * 1e3,
          (*pred)[i].queue_wait_seconds * 1e3);
    }
    std::cout << "\n";
  }
  absl::StatusOr<sim::TransferReport> report =
      sim::ComputeTransfer(all, profiles, fit_hardware);
  if (Failed(report)) return 1;
  std::cout << "\n" << report->Markdown();
  return 0;
}

int main(int argc, char** argv) {
  std::vector<std::string> csv_paths, transfer_paths;
  std::vector<std::string> validation_paths;
  std::string disagg_path;
  bool fit = false, rows = false, bands = false;
  std::string report_dir, user_fit, base_profile, fit_on, fit_engine_terms,
      fit_shared_terms;
  int fit_rows = 20;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--csv" && i + 1 < argc) {
      csv_paths.push_back(argv[++i]);
    } else if (a == "--fit-on" && i + 1 < argc) {
      fit_on = argv[++i];
    } else if (a == "--transfer-csv" && i + 1 < argc) {
      transfer_paths.push_back(argv[++i]);
    } else if (a == "--disagg-csv" && i + 1 < argc) {
      disagg_path = argv[++i];
    } else if (a == "--validation-csv" && i + 1 < argc) {
      validation_paths.push_back(argv[++i]);
    } else if (a == "--fit") {
      fit = true;
    } else if (a == "--fit-engine-terms" && i + 1 < argc) {
      fit = true;
      fit_engine_terms = argv[++i];
    } else if (a == "--fit-shared-terms" && i + 1 < argc) {
      fit = true;
      fit_shared_terms = argv[++i];
    } else if (a == "--rows") {
      rows = true;
    } else if (a == "--bands") {
      bands = true;
    } else if (a == "--report-dir" && i + 1 < argc) {
      report_dir = argv[++i];
    } else if (a == "--user-fit" && i + 1 < argc) {
      user_fit = argv[++i];
    } else if (a == "--base" && i + 1 < argc) {
      base_profile = argv[++i];
    } else if (a == "--fit-rows" && i + 1 < argc) {
      fit_rows = std::atoi(argv[++i]);
      if (fit_rows < 1) return Usage();
    } else {
      return Usage();
    }
  }
  if (!disagg_path.empty()) return ReportDisaggregated(disagg_path, rows, fit);
  if (!transfer_paths.empty())
    return ReportTransfer(transfer_paths, rows, fit_on, bands);
  if (csv_paths.empty()) return Usage();
  std::optional<sim::ParsedMeasurements> data = Load(csv_paths[0], false);
  if (!data) return 1;
  // Further fit files (each with its own 1-in-4 held-out rows).
  for (size_t i = 1; i < csv_paths.size(); ++i) {
    if (!LoadMore(csv_paths[i], false, *data)) return 1;
  }
  // Validation-only rows join the report as held-out models; the fit never
  // sees them (FitCalibration skips held-out rows).
  for (const std::string& path : validation_paths) {
    if (!LoadMore(path, true, *data)) return 1;
  }
  if (!user_fit.empty())
    return UserFit(data->rows, user_fit, fit_rows, base_profile);
  std::vector<sim::CalibrationProfile> profiles = sim::CalibrationProfiles();
  if (fit) {
    // The fit starts from the Calibration struct's defaults (not from the
    // compiled-in constants), so re-running it reproduces them. With
    // --fit-engine-terms it starts from the compiled-in profiles and moves
    // only that engine's own two constants; with --fit-shared-terms A,B only
    // those shared constants.
    std::vector<sim::CalibrationProfile> start = profiles;
    sim::FitOptions options;
    options.only_engine_terms = fit_engine_terms;
    if (!fit_shared_terms.empty()) {
      options.only_shared_terms = absl::StrSplit(fit_shared_terms, ',');
    }
    for (sim::CalibrationProfile& p : start) {
      if (!fit_engine_terms.empty() || !fit_shared_terms.empty()) break;
      // Engine behaviour (KV admission) is not fitted: keep it.
      const double kv = p.calibration.kv_reserved_output_fraction;
      p.calibration = sim::Calibration();
      p.calibration.kv_reserved_output_fraction = kv;
    }
    absl::StatusOr<std::vector<sim::CalibrationProfile>> fitted =
        sim::FitCalibration(*data, start, options);
    if (Failed(fitted)) return 1;
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
    if (Failed(pred)) return 1;
    std::cout << "line,model,engine,isl,osl,c,tp,ep,held_out,ttft_ms,pred_ttft_"
                 "ms,tpot_ms,"
                 "pred_tpot_ms,pred_prefill_ms\n";
    for (size_t i = 0; i < data->rows.size(); ++i) {
      const sim::MeasuredRow& r = data->rows[i];
      std::cout << absl::StrFormat(
          "%d,%s,%s,%d,%d,%d,%d,%d,%d,%.1f,%.1f,%.2f,%.2f,%.2f\n", r.line,
          r.catalog_model, r.engine, r.isl, r.osl, r.concurrency, r.tp,
          r.moe_ep, r.held_out() ? 1 : 0, r.ttft_seconds * 1e3,
          (*pred)[i].ttft_seconds * 1e3, r.tpot_seconds * 1e3,
          (*pred)[i].tpot_seconds * 1e3, (*pred)[i].prefill_seconds * 1e3);
    }
    std::cout << "\n";
  }
  if (bands) {
    // The error bars of the profiles above (compiled-in, or just fitted),
    // from the held-out rows only.
    absl::StatusOr<std::vector<sim::RowPrediction>> pred =
        sim::PredictRowsForBands(data->rows, profiles);
    if (Failed(pred)) return 1;
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
  if (Failed(report)) return 1;
  std::cout << report->Markdown();
  absl::StatusOr<std::vector<sim::CrossCheckRow>> cross =
      sim::CrossCheckPublicThroughput(profiles.front().calibration);
  if (Failed(cross)) return 1;
  std::cout << "\nPublished maximum throughput (cross-check, not fitted):\n\n"
            << sim::CrossCheckMarkdown(*cross);
  if (!report_dir.empty()) {
    absl::StatusOr<std::vector<sim::RowPrediction>> pred =
        sim::PredictRows(data->rows, profiles);
    if (Failed(pred)) return 1;
    return WriteReport(report_dir, data->rows, *pred,
                       absl::StrCat("## Summary\n\n", report->Markdown()));
  }
  return 0;
}
