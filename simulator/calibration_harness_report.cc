// Calibration harness: the accuracy report, the public cross-check, the
// error-band computation and coverage, and the generators of the shipped
// error-band table.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "proto/status_macros.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/calibration.h"
#include "simulator/calibration_harness.h"
#include "simulator/cost_model.h"
#include "simulator/internal/calibration_harness.h"
#include "simulator/spec.h"
#include "simulator/user_text.h"

namespace shardplan::simulator {
namespace internal {

double Mape(const std::vector<double>& pred, const std::vector<double>& meas) {
  if (pred.empty()) return 0;
  double s = 0;
  for (size_t i = 0; i < pred.size(); ++i)
    s += std::abs(pred[i] - meas[i]) / meas[i];
  return 100.0 * s / pred.size();
}

}  // namespace internal

namespace {

std::vector<double> Ranks(const std::vector<double>& v) {
  std::vector<int> idx(v.size());
  for (size_t i = 0; i < v.size(); ++i) idx[i] = static_cast<int>(i);
  std::sort(idx.begin(), idx.end(), [&](int a, int b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  size_t i = 0;
  while (i < idx.size()) {
    size_t j = i;
    while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
    const double avg = (i + j) / 2.0 + 1;
    for (size_t t = i; t <= j; ++t) r[idx[t]] = avg;
    i = j + 1;
  }
  return r;
}

}  // namespace

using internal::CatalogNameFor;
using internal::Mape;

double Spearman(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() < 2 || a.size() != b.size()) return 0;
  const std::vector<double> ra = Ranks(a), rb = Ranks(b);
  const double n = a.size();
  double ma = 0, mb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ma += ra[i];
    mb += rb[i];
  }
  ma /= n;
  mb /= n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  if (saa <= 0 || sbb <= 0) return 0;
  return sab / std::sqrt(saa * sbb);
}

namespace {

// Predicted (p) and measured (m) TPOT (t) and TTFT (f) of a group of rows.
struct AccuracyAcc {
  std::vector<double> pt, mt, pf, mf;
  template <typename Row>
  void Add(const RowPrediction& p, const Row& r) {
    pt.push_back(p.tpot_seconds);
    mt.push_back(r.tpot_seconds);
    pf.push_back(p.ttft_seconds);
    mf.push_back(r.ttft_seconds);
  }
  // The group's errors, keyed by (model, engine, split).
  AccuracyGroup Group(
      const std::tuple<std::string, std::string, std::string>& key) const {
    AccuracyGroup g;
    std::tie(g.model, g.engine, g.split) = key;
    g.rows = static_cast<int>(pt.size());
    g.tpot_mape = Mape(pt, mt);
    g.ttft_mape = Mape(pf, mf);
    g.tpot_spearman = Spearman(pt, mt);
    return g;
  }
};

}  // namespace

absl::StatusOr<AccuracyReport> ComputeAccuracy(
    const ParsedMeasurements& data,
    const std::vector<CalibrationProfile>& profiles) {
  ASSIGN_OR_RETURN(std::vector<RowPrediction> pred,
                   PredictRows(data.rows, profiles));
  AccuracyReport report;
  report.skipped_disaggregated = data.skipped_disaggregated;
  using Acc = AccuracyAcc;
  ASSIGN_OR_RETURN(std::vector<RowPrediction> high_pred,
                   PredictRows(data.high_concurrency_rows, profiles));
  std::map<std::tuple<std::string, std::string, std::string>, Acc> groups;
  std::map<std::string, Acc> engines;
  Acc held;
  const auto add = [&](const MeasuredRow& r, const RowPrediction& p,
                       const std::string& split, bool held_out) {
    Acc& a = groups[{r.catalog_model, r.engine, split}];
    for (Acc* x : {&a, held_out ? &held : nullptr,
                   held_out ? &engines[r.engine] : nullptr}) {
      if (x != nullptr) x->Add(p, r);
    }
  };
  for (size_t i = 0; i < data.rows.size(); ++i) {
    const MeasuredRow& r = data.rows[i];
    add(r, pred[i],
        r.held_out_model ? "held-out model"
        : r.held_out_row ? "held-out rows"
                         : "fit",
        r.held_out());
  }
  for (size_t i = 0; i < data.high_concurrency_rows.size(); ++i) {
    add(data.high_concurrency_rows[i], high_pred[i],
        absl::StrCat("above ", limits::kMaxFitConcurrency,
                     " requests (not fitted)"),
        false);
  }
  report.held_out_min_spearman = 1;
  for (const auto& [key, a] : groups) {
    AccuracyGroup g = a.Group(key);
    if (absl::StartsWith(g.split, "held-out") && g.rows >= 8) {
      report.held_out_min_spearman =
          std::min(report.held_out_min_spearman, g.tpot_spearman);
    }
    report.groups.push_back(std::move(g));
  }
  for (const auto& [engine, a] : engines) {
    report.engines.push_back({engine, static_cast<int>(a.pt.size()),
                              Mape(a.pt, a.mt), Mape(a.pf, a.mf)});
  }
  report.held_out_rows = static_cast<int>(held.pt.size());
  report.held_out_tpot_mape = Mape(held.pt, held.mt);
  report.held_out_ttft_mape = Mape(held.pf, held.mf);
  // Layout ranking within one workload.
  std::map<std::tuple<std::string, std::string, std::string, int, int, int>,
           std::pair<std::vector<double>, std::vector<double>>>
      layouts;
  for (size_t i = 0; i < data.rows.size(); ++i) {
    const MeasuredRow& r = data.rows[i];
    auto& l = layouts[{r.catalog_model, r.engine, r.engine_version, r.isl,
                       r.osl, r.concurrency}];
    l.first.push_back(pred[i].tpot_seconds);
    l.second.push_back(r.tpot_seconds);
  }
  double sum = 0;
  for (const auto& [key, l] : layouts) {
    if (l.first.size() < 3) continue;
    sum += Spearman(l.first, l.second);
    ++report.layout_groups;
  }
  report.layout_spearman_mean =
      report.layout_groups > 0 ? sum / report.layout_groups : 0;
  return report;
}

namespace {

// The per-group table; `split_first`: the split column before the rows
// column (the disaggregated report's order).
std::string GroupsTable(const std::vector<AccuracyGroup>& groups,
                        bool split_first) {
  std::string s = absl::StrCat("| model | engine | ",
                               split_first ? "split | rows" : "rows | split",
                               " | TPOT MAPE | TTFT MAPE | TPOT Spearman |\n"
                               "|---|---|---|---|---|---|---|\n");
  for (const AccuracyGroup& g : groups) {
    const std::string rows = absl::StrCat(g.rows);
    absl::StrAppendFormat(
        &s, "| %s | %s | %s | %s | %.1f%% | %.1f%% | %.3f |\n", g.model,
        g.engine, split_first ? g.split : rows, split_first ? rows : g.split,
        g.tpot_mape, g.ttft_mape, g.tpot_spearman);
  }
  return s;
}

}  // namespace

std::string AccuracyReport::Markdown() const {
  std::string s = GroupsTable(groups, /*split_first=*/false);
  s += "\n| engine | held-out rows | TPOT MAPE | TTFT MAPE "
       "|\n|---|---|---|---|\n";
  for (const EngineAccuracy& e : engines) {
    absl::StrAppendFormat(&s, "| %s | %d | %.1f%% | %.1f%% |\n", e.engine,
                          e.rows, e.tpot_mape, e.ttft_mape);
  }
  absl::StrAppendFormat(
      &s,
      "\nAll held-out rows (%d): TPOT MAPE %.1f%%, TTFT MAPE %.1f%%; worst "
      "held-out TPOT Spearman per model/engine %.3f.\n",
      held_out_rows, held_out_tpot_mape, held_out_ttft_mape,
      held_out_min_spearman);
  absl::StrAppendFormat(
      &s,
      "Layout ranking within one workload (model, engine, ISL, OSL, "
      "concurrency; >= 3 layouts): mean TPOT Spearman %.3f over %d groups.\n",
      layout_spearman_mean, layout_groups);
  absl::StrAppendFormat(&s, "Disaggregated rows excluded: %d.\n",
                        skipped_disaggregated);
  return s;
}

absl::StatusOr<DisaggregatedAccuracy> ComputeDisaggregatedAccuracy(
    const std::vector<DisaggregatedRow>& rows,
    const std::vector<CalibrationProfile>& profiles) {
  ASSIGN_OR_RETURN(std::vector<RowPrediction> pred,
                   PredictDisaggregatedRows(rows, profiles));
  using Acc = AccuracyAcc;
  std::map<std::tuple<std::string, std::string, std::string>, Acc> groups;
  Acc all, held, fit;
  for (size_t i = 0; i < rows.size(); ++i) {
    const DisaggregatedRow& r = rows[i];
    groups[{r.catalog_model, r.engine, "all rows"}].Add(pred[i], r);
    all.Add(pred[i], r);
    if (r.held_out_row) {
      groups[{r.catalog_model, r.engine, "held-out rows"}].Add(pred[i], r);
      held.Add(pred[i], r);
    } else {
      groups[{r.catalog_model, r.engine, "fit rows"}].Add(pred[i], r);
      fit.Add(pred[i], r);
    }
  }
  DisaggregatedAccuracy report;
  for (const auto& [key, a] : groups) {
    report.groups.push_back(a.Group(key));
  }
  report.rows = static_cast<int>(all.pt.size());
  report.tpot_mape = Mape(all.pt, all.mt);
  report.ttft_mape = Mape(all.pf, all.mf);
  report.held_out_rows = static_cast<int>(held.pt.size());
  report.held_out_tpot_mape = Mape(held.pt, held.mt);
  report.held_out_ttft_mape = Mape(held.pf, held.mf);
  report.fit_rows = static_cast<int>(fit.pt.size());
  report.fit_tpot_mape = Mape(fit.pt, fit.mt);
  report.fit_ttft_mape = Mape(fit.pf, fit.mf);
  return report;
}

std::string DisaggregatedAccuracy::Markdown() const {
  std::string s = GroupsTable(groups, /*split_first=*/true);
  absl::StrAppendFormat(&s,
                        "\nAll %d rows: TPOT MAPE %.1f%%, TTFT MAPE %.1f%%. "
                        "Held-out rows (%d): TPOT MAPE %.1f%%, TTFT MAPE "
                        "%.1f%%.\n",
                        rows, tpot_mape, ttft_mape, held_out_rows,
                        held_out_tpot_mape, held_out_ttft_mape);
  absl::StrAppendFormat(&s,
                        "Fit rows (%d): TPOT MAPE %.1f%%, TTFT MAPE %.1f%%.\n",
                        fit_rows, fit_tpot_mape, fit_ttft_mape);
  return s;
}

// --- Public cross-check ---

const std::vector<PublicThroughputPoint>& PublicThroughputPoints() {
  // TensorRT-LLM performance overview, H100 SXM 80GB, FP8 ModelOpt checkpoints,
  // offline maximum throughput (trtllm-bench throughput, all requests queued),
  // total output tok/s.
  static const char* const kUrl =
      "https://github.com/NVIDIA/TensorRT-LLM/blob/"
      "00f37686aa854010d68bcbd0f4ab000221541ca6/docs/source/performance/"
      "perf-overview.md";
  static const std::vector<PublicThroughputPoint>* const kPoints =
      new std::vector<PublicThroughputPoint>{
          {"llama-3.1-8b", "fp8", 1, 1, 128, 2048, 22714, kUrl},
          {"llama-3.1-8b", "fp8", 1, 1, 1000, 1000, 15220, kUrl},
          {"llama-3.1-8b", "fp8", 1, 1, 2048, 128, 3450, kUrl},
          {"llama-3.1-8b", "fp8", 1, 1, 5000, 500, 3459, kUrl},
          {"llama-3.3-70b", "fp8", 2, 1, 128, 2048, 6651, kUrl},
          {"llama-3.3-70b", "fp8", 2, 1, 1000, 1000, 4205, kUrl},
          {"llama-3.3-70b", "fp8", 2, 1, 2048, 128, 762, kUrl},
          {"llama-3.3-70b", "fp8", 2, 1, 5000, 500, 898, kUrl},
          {"llama-3.1-405b", "fp8", 8, 1, 128, 2048, 4340, kUrl},
          {"llama-3.1-405b", "fp8", 8, 1, 1000, 1000, 2919, kUrl},
          {"llama-3.1-405b", "fp8", 8, 1, 2048, 128, 453, kUrl},
          {"qwen3-235b-a22b", "fp8", 8, 8, 128, 2048, 19658, kUrl},
          {"qwen3-235b-a22b", "fp8", 8, 8, 1000, 1000, 14898, kUrl},
          {"qwen3-235b-a22b", "fp8", 8, 8, 5000, 500, 3225, kUrl},
      };
  return *kPoints;
}

absl::StatusOr<std::vector<CrossCheckRow>> CrossCheckPublicThroughput(
    const Calibration& calibration) {
  std::vector<CrossCheckRow> out;
  for (const PublicThroughputPoint& p : PublicThroughputPoints()) {
    shardplan::v1::ModelSource model;
    model.set_catalog_name(p.model);
    shardplan::v1::ClusterSpec cluster;
    cluster.set_hardware("h100-sxm-80gb");
    cluster.set_num_gpus(p.tp);
    cluster.set_gpus_per_node(std::min(8, p.tp));
    shardplan::v1::Workload workload;
    workload.set_input_tokens(p.isl);
    workload.set_output_tokens(p.osl);
    workload.set_concurrency(0);
    workload.set_weight_dtype(p.dtype);
    workload.set_kv_cache_dtype(p.dtype);
    ASSIGN_OR_RETURN(Problem problem,
                     ProblemFromProto(model, cluster, workload));
    ASSIGN_OR_RETURN(std::unique_ptr<const CostModel> cost,
                     CostModel::Create(std::move(problem), calibration));
    PlanDims plan;
    plan.tp = p.tp;
    plan.ep = p.ep;
    RETURN_IF_ERROR(cost->ValidatePlan(plan));
    const Evaluation e = cost->Evaluate(plan);
    out.push_back({p, e.output_tokens_per_s, e.batch_size});
  }
  return out;
}

std::string CrossCheckMarkdown(const std::vector<CrossCheckRow>& rows) {
  std::string s =
      "| model | H100s | dtype | ISL/OSL | published tok/s | predicted tok/s | "
      "ratio | batch |\n|---|---|---|---|---|---|---|---|\n";
  for (const CrossCheckRow& r : rows) {
    absl::StrAppendFormat(
        &s, "| %s | %d | %s | %d/%d | %.0f | %.0f | %.2f | %d |\n",
        r.point.model, r.point.tp, r.point.dtype, r.point.isl, r.point.osl,
        r.point.output_tokens_per_s, r.predicted_tokens_per_s,
        r.predicted_tokens_per_s / r.point.output_tokens_per_s,
        r.predicted_batch);
  }
  absl::StrAppend(&s, "\nSource of every published figure: ",
                  PublicThroughputPoints().front().source, "\n");
  return s;
}

// --- Error bars ---

namespace {

// Linear interpolation between order statistics (the common "type 7"
// quantile); `v` sorted ascending and non-empty.
double Quantile(const std::vector<double>& v, double q) {
  const double pos = q * (v.size() - 1);
  const size_t i = static_cast<size_t>(pos);
  if (i + 1 >= v.size()) return v.back();
  return v[i] + (pos - i) * (v[i + 1] - v[i]);
}

bool UsableForBands(const MeasuredRow& row, const RowPrediction& p) {
  return row.held_out() && p.feasible && p.ttft_seconds > 0 &&
         p.tpot_seconds > 0 && row.ttft_seconds > 0 && row.tpot_seconds > 0;
}

bool UsableForAgnosticBands(const MeasuredRow& row, const RowPrediction& p) {
  return row.held_out() && p.agnostic_feasible && p.agnostic_ttft_seconds > 0 &&
         p.agnostic_tpot_seconds > 0 && row.ttft_seconds > 0 &&
         row.tpot_seconds > 0;
}

bool RowIsMoe(const MeasuredRow& row) {
  absl::StatusOr<shardplan::v1::ModelSpec> spec =
      FindCatalogModel(row.catalog_model);
  return spec.ok() && spec->num_experts() > 0;
}

const char* RowDtype(const MeasuredRow& row) {
  return row.fp4 ? "fp4" : row.fp8 ? "fp8" : "bf16";
}

bool Inside(double ratio, double low, double high) {
  return ratio >= low && ratio <= high;
}

}  // namespace

std::vector<ErrorBand> ComputeErrorBands(
    const std::vector<MeasuredRow>& rows,
    const std::vector<RowPrediction>& predictions, bool log_symmetric) {
  struct Cell {
    std::vector<double> ttft, tpot;
  };
  std::map<std::tuple<std::string, bool, std::string>, Cell> cells;
  for (size_t i = 0; i < rows.size() && i < predictions.size(); ++i) {
    const MeasuredRow& r = rows[i];
    const RowPrediction& p = predictions[i];
    const bool moe = RowIsMoe(r);
    if (UsableForBands(r, p)) {
      for (const auto& key :
           {std::make_tuple(r.engine, moe, std::string(RowDtype(r))),
            std::make_tuple(r.engine, moe, std::string("*")),
            std::make_tuple(std::string("*"), moe, std::string("*"))}) {
        Cell& c = cells[key];
        c.ttft.push_back(r.ttft_seconds / p.ttft_seconds);
        c.tpot.push_back(r.tpot_seconds / p.tpot_seconds);
      }
    }
    if (UsableForAgnosticBands(r, p)) {
      const std::string any = kEngineAgnosticBandEngine;
      for (const auto& key :
           {std::make_tuple(any, moe, std::string(RowDtype(r))),
            std::make_tuple(any, moe, std::string("*"))}) {
        Cell& c = cells[key];
        c.ttft.push_back(r.ttft_seconds / p.agnostic_ttft_seconds);
        c.tpot.push_back(r.tpot_seconds / p.agnostic_tpot_seconds);
      }
    }
  }
  std::vector<ErrorBand> out;
  for (auto& [key, c] : cells) {
    if (static_cast<int>(c.ttft.size()) < kMinBandRows) continue;
    std::sort(c.ttft.begin(), c.ttft.end());
    std::sort(c.tpot.begin(), c.tpot.end());
    ErrorBand b;
    std::tie(b.engine, b.moe, b.dtype) = key;
    b.rows = static_cast<int>(c.ttft.size());
    if (log_symmetric) {
      // Fold the ratios onto |log r|: 80% of them lie within exp(+-p80).
      auto half_width = [](const std::vector<double>& ratios) {
        std::vector<double> folded;
        for (double r : ratios) folded.push_back(std::abs(std::log(r)));
        std::sort(folded.begin(), folded.end());
        return Quantile(folded, 0.8);
      };
      const double ttft = half_width(c.ttft), tpot = half_width(c.tpot);
      b.ttft_low = std::exp(-ttft);
      b.ttft_high = std::exp(ttft);
      b.tpot_low = std::exp(-tpot);
      b.tpot_high = std::exp(tpot);
      out.push_back(std::move(b));
      continue;
    }
    b.ttft_low = Quantile(c.ttft, 0.1);
    b.ttft_high = Quantile(c.ttft, 0.9);
    b.tpot_low = Quantile(c.tpot, 0.1);
    b.tpot_high = Quantile(c.tpot, 0.9);
    out.push_back(std::move(b));
  }
  return out;
}

std::string ErrorBandsCpp(const std::vector<ErrorBand>& bands) {
  std::string s;
  for (const ErrorBand& b : bands) {
    absl::StrAppendFormat(&s,
                          "{\"%s\", %s, \"%s\", %d, %.6g, %.6g, %.6g, %.6g},\n",
                          b.engine, b.moe ? "true" : "false", b.dtype, b.rows,
                          b.ttft_low, b.ttft_high, b.tpot_low, b.tpot_high);
  }
  return s;
}

namespace {

struct CoverageCount {
  int rows = 0, tpot = 0, ttft = 0, split_rows = 0, split_tpot = 0,
      split_ttft = 0;
};

BandRegime RowRegime(const MeasuredRow& r) {
  BandRegime regime;
  for (const CalibrationProfile& p : CalibrationProfiles()) {
    if (p.engine == r.engine) regime.profile = p.name;
  }
  regime.moe = RowIsMoe(r);
  regime.weight_dtype = r.fp4   ? Dtype::kFp4
                        : r.fp8 ? Dtype::kFp8
                                : Dtype::kBf16;
  return regime;
}

}  // namespace

std::vector<BandCoverage> ComputeBandCoverage(
    const std::vector<MeasuredRow>& rows,
    const std::vector<RowPrediction>& predictions) {
  const std::vector<ErrorBand> full = ComputeErrorBands(rows, predictions);
  // The two halves: alternate usable held-out rows.
  std::vector<MeasuredRow> half[2];
  std::vector<RowPrediction> half_pred[2];
  int n = 0;
  for (size_t i = 0; i < rows.size() && i < predictions.size(); ++i) {
    if (!UsableForBands(rows[i], predictions[i])) continue;
    half[n % 2].push_back(rows[i]);
    half_pred[n % 2].push_back(predictions[i]);
    ++n;
  }
  const std::vector<ErrorBand> half_bands[2] = {
      ComputeErrorBands(half[0], half_pred[0]),
      ComputeErrorBands(half[1], half_pred[1])};
  std::map<std::string, CoverageCount> counts;
  // `tpot_ratio` and `ttft_ratio`: measured / predicted.
  auto count = [](CoverageCount& c, bool split, const PredictionBand& b,
                  double tpot_ratio, double ttft_ratio) {
    const bool tpot = Inside(tpot_ratio, b.tpot_low, b.tpot_high);
    const bool ttft = Inside(ttft_ratio, b.ttft_low, b.ttft_high);
    if (split) {
      ++c.split_rows;
      c.split_tpot += tpot;
      c.split_ttft += ttft;
    } else {
      ++c.rows;
      c.tpot += tpot;
      c.ttft += ttft;
    }
  };
  for (int h = 0; h < 2; ++h) {
    for (size_t i = 0; i < half[h].size(); ++i) {
      const MeasuredRow& r = half[h][i];
      const RowPrediction& p = half_pred[h][i];
      const BandRegime regime = RowRegime(r);
      const PredictionBand in_sample = FindPredictionBand(regime, full);
      // Bands of the other half.
      const PredictionBand other =
          FindPredictionBand(regime, half_bands[1 - h]);
      const double tpot = r.tpot_seconds / p.tpot_seconds;
      const double ttft = r.ttft_seconds / p.ttft_seconds;
      for (const std::string& key : {r.engine, std::string("all")}) {
        count(counts[key], false, in_sample, tpot, ttft);
        count(counts[key], true, other, tpot, ttft);
      }
      // The same row as a request that names no engine would see it.
      if (!UsableForAgnosticBands(r, p)) continue;
      BandRegime agnostic = regime;
      agnostic.profile.clear();
      agnostic.engine_given = false;
      const double agnostic_tpot = r.tpot_seconds / p.agnostic_tpot_seconds;
      const double agnostic_ttft = r.ttft_seconds / p.agnostic_ttft_seconds;
      CoverageCount& any = counts[kEngineAgnosticBandEngine];
      count(any, false, FindPredictionBand(agnostic, full), agnostic_tpot,
            agnostic_ttft);
      count(any, true, FindPredictionBand(agnostic, half_bands[1 - h]),
            agnostic_tpot, agnostic_ttft);
    }
  }
  std::vector<BandCoverage> out;
  for (const auto& [engine, c] : counts) {
    BandCoverage b;
    b.engine = engine;
    b.rows = c.rows;
    b.tpot = c.rows > 0 ? static_cast<double>(c.tpot) / c.rows : 0;
    b.ttft = c.rows > 0 ? static_cast<double>(c.ttft) / c.rows : 0;
    b.split_tpot =
        c.split_rows > 0 ? static_cast<double>(c.split_tpot) / c.split_rows : 0;
    b.split_ttft =
        c.split_rows > 0 ? static_cast<double>(c.split_ttft) / c.split_rows : 0;
    out.push_back(std::move(b));
  }
  return out;
}

std::string ErrorBandsMarkdown(const std::vector<ErrorBand>& bands,
                               const std::vector<BandCoverage>& coverage) {
  std::string s =
      "| engine | model kind | weight dtype | held-out rows | TTFT band | "
      "TPOT band | throughput band |\n|---|---|---|---|---|---|---|\n";
  auto engine_label = [](const std::string& engine) -> std::string {
    if (engine == "*") return "all (each its own profile)";
    if (engine == kEngineAgnosticBandEngine) {
      return absl::StrCat("all, engine not named (", kEngineAgnosticProfileName,
                          ")");
    }
    return engine;
  };
  for (const ErrorBand& b : bands) {
    absl::StrAppendFormat(
        &s, "| %s | %s | %s | %d | %.2f-%.2fx | %.2f-%.2fx | %.2f-%.2fx |\n",
        engine_label(b.engine), b.moe ? "MoE" : "dense",
        b.dtype == "*" ? "any" : b.dtype, b.rows, b.ttft_low, b.ttft_high,
        b.tpot_low, b.tpot_high, 1.0 / b.tpot_high, 1.0 / b.tpot_low);
  }
  absl::StrAppend(
      &s,
      "\n| engine | held-out rows | TPOT coverage | TTFT coverage | TPOT "
      "coverage, split halves | TTFT coverage, split halves |\n"
      "|---|---|---|---|---|---|\n");
  for (const BandCoverage& c : coverage) {
    absl::StrAppendFormat(
        &s, "| %s | %d | %.1f%% | %.1f%% | %.1f%% | %.1f%% |\n",
        c.engine == "all" ? c.engine : engine_label(c.engine), c.rows,
        100 * c.tpot, 100 * c.ttft, 100 * c.split_tpot, 100 * c.split_ttft);
  }
  return s;
}

}  // namespace shardplan::simulator
