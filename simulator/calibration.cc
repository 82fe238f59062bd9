// Calibration profiles, the measured-row harness, the accuracy report and the
// fit (simulator/calibration.h).
#include "simulator/calibration.h"

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
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/spec.h"
#include "simulator/status_macros.h"
#include "simulator/user_text.h"

namespace shardplan::simulator {
namespace {

// The fitted constants, produced by
//   build/bin/shardplan-calibrate --csv
//   simulator/calibration/data/h100_measured_latency.csv
//   --csv simulator/calibration/data/h100_moe_latency.csv --fit
// (coordinate descent on the absolute percentage error of TPOT and TTFT over
// the fit rows only: Llama-3.1-8B and every 4th row of the other models are
// held out; the tool prints every value exactly as written here). The shared
// parameters are the same in every profile; each engine has two of its own:
// prefill_overhead_s (fixed per-request latency before the first token: API
// server, tokenisation, scheduling) and prefill_queue_fraction (how much its
// scheduler makes concurrent requests queue behind each other's prefills
// instead of interleaving them with decode steps).
Calibration SharedFit() {
  Calibration c;
  c.gemm_efficiency = 0.662890625;
  c.gemm_half_efficiency_tokens = 46.95507812;
  c.hbm_efficiency = 0.95;  // upper bound of its fit range
  c.attention_efficiency = 0.2328125;
  // not fitted (datasheet-level NCCL bus bandwidth)
  c.intra_node_efficiency = 0.8;
  c.inter_node_efficiency = 0.8;  // not fitted (no multi-node rows)
  // Scales intra-node latency only (the fit rows are single-node).
  c.collective_latency_scale = 0.2265625;
  c.decode_step_overhead_seconds = 0.0;
  c.layer_overhead_seconds = 6.328125e-05;
  c.ttft_wait_iterations = 0.9765625;
  c.ttft_inflight_prefills = 1.5625;
  // gpt-oss-120b MXFP4 rows (vLLM, H100): the dequantising kernels cost ~1.45x
  // a pure 4-bit read.
  c.fp4_dequant_bytes_per_weight = 0.7255859375;
  return c;
}

// disagg_request_overhead_seconds and disagg_prefill_queue_fraction (the last
// two arguments) come from
//   build/bin/shardplan-calibrate --disagg-csv
//   simulator/calibration/data/h100_disagg_latency.csv --fit
// (FitDisaggregatedOverheads: TTFT MAPE of the engine's non-held-out
// disaggregated rows; vLLM's rows, without a concurrency, leave it at 0).
Calibration EngineFit(double prefill_overhead_seconds,
                      double prefill_queue_fraction,
                      double kv_reserved_output_fraction,
                      bool preempts_on_kv_overflow,
                      double disagg_request_overhead_seconds,
                      double disagg_prefill_queue_fraction) {
  Calibration c = SharedFit();
  c.preempts_on_kv_overflow = preempts_on_kv_overflow;
  c.disagg_request_overhead_seconds = disagg_request_overhead_seconds;
  c.disagg_prefill_queue_fraction = disagg_prefill_queue_fraction;
  c.prefill_overhead_seconds = prefill_overhead_seconds;
  c.prefill_queue_fraction = prefill_queue_fraction;
  c.kv_reserved_output_fraction = kv_reserved_output_fraction;
  return c;
}

// KV-cache admission per engine (engine behaviour, not fitted):
// TensorRT-LLM's default capacity scheduler, GUARANTEED_NO_EVICT, admits a
// request only when the KV cache of its whole prompt + maximum output fits
// (https://nvidia.github.io/TensorRT-LLM/performance/performance-tuning-guide/useful-runtime-flags.html,
// "Capacity Scheduler Policy"): 1. vLLM allocates KV blocks on demand as
// tokens are generated and preempts when they run out (PagedAttention,
// https://arxiv.org/abs/2309.06180, section 4.2), SGLang likewise from a
// token-level pool
// (https://docs.sglang.ai/advanced_features/hyperparameter_tuning.html,
// "new_token_ratio" / --schedule-conservativeness): in steady state a running
// request holds its prompt and, on average, half its output: 0.5.
constexpr double kTrtllmKvReservedOutput = 1.0;

// TensorRT-LLM's pipeline loop: host seconds per active request per
// micro-batch step (Calibration::pipeline_request_overhead_seconds). Fitted,
// one parameter, on the Llama-3.3-70B 1000/1000 rows of TensorRT-LLM's
// v1.0 performance overview on RTX PRO 6000 (TP1 with PP 2, 4 and 8 against
// PP 1, per-GPU throughput ratios;
// https://github.com/NVIDIA/TensorRT-LLM/blob/00f37686aa854010d68bcbd0f4ab000221541ca6/docs/source/performance/perf-overview.md),
// every other length, depth and model of those pages held out
// (tests/simulator/pipeline_parallel_measured_test.cc recomputes the fit and
// checks the held-out rows). A host-side cost, so it carries to H100 hosts;
// vLLM and SGLang overlap their pipeline scheduling with the GPU and have no
// pp rows: 0.
constexpr double kTrtllmPipelineRequestOverheadSeconds = 6.25e-6;

Calibration WithPipelineRequestOverhead(Calibration c, double seconds) {
  c.pipeline_request_overhead_seconds = seconds;
  return c;
}
constexpr double kPagedKvReservedOutput = 0.5;
// What happens when the cache runs out (Calibration::preempts_on_kv_overflow):
// vLLM admits waiting requests whenever their prompt's blocks are free and
// preempts running requests (RECOMPUTE) when a decode step finds no free block
// (https://docs.vllm.ai/en/v0.10.1.1/configuration/optimization.html,
// "Preemption"); SGLang admits a request only when the running requests'
// estimated remaining output (new_token_ratio) still fits and retracts only
// when the estimate fails
// (https://docs.sglang.ai/advanced_features/hyperparameter_tuning.html,
// "--schedule-conservativeness"), and its queueing Qwen3-32B rows keep the
// wait before the first token (TTFT 16-89 s measured with TPOT below the
// running batch's); TensorRT-LLM's GUARANTEED_NO_EVICT never evicts.
constexpr bool kVllmPreempts = true;

// Splits one CSV line (RFC 4180 quotes).
std::vector<std::string> SplitCsvLine(absl::string_view line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted) {
      if (ch == '"') {
        if (i + 1 < line.size() && line[i + 1] == '"') {
          cur.push_back('"');
          ++i;
        } else {
          quoted = false;
        }
      } else {
        cur.push_back(ch);
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur.push_back(ch);
    }
  }
  out.push_back(std::move(cur));
  return out;
}

absl::StatusOr<int> IntField(absl::string_view value, int fallback, int line,
                             absl::string_view column) {
  if (value.empty()) return fallback;
  int v = 0;
  if (!absl::SimpleAtoi(value, &v)) {
    double d = 0;
    if (!absl::SimpleAtod(value, &d) || !std::isfinite(d)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "csv line %d: column %s: not a number: \"%s\"", line, column, value));
    }
    v = static_cast<int>(d);
  }
  return v;
}

const char* CatalogNameFor(absl::string_view model_path) {
  if (model_path == "Qwen/Qwen3-32B") return "qwen3-32b";
  if (model_path == "Qwen/Qwen3-235B-A22B-FP8" ||
      model_path == "Qwen/Qwen3-235B-A22B") {
    return "qwen3-235b-a22b";
  }
  if (model_path == "meta-llama/Llama-3.1-8B-Instruct" ||
      model_path == "meta-llama/Llama-3.1-8B") {
    return "llama-3.1-8b";
  }
  if (model_path == "openai/gpt-oss-120b") return "gpt-oss-120b";
  if (model_path == "meta-llama/Llama-3.1-70B" ||
      model_path == "meta-llama/Llama-3.1-70B-Instruct") {
    return "llama-3.1-70b";
  }
  return nullptr;
}

constexpr absl::string_view kHeldOutModel = "llama-3.1-8b";

const CalibrationProfile& ProfileFor(
    const std::vector<CalibrationProfile>& profiles, absl::string_view engine) {
  for (const CalibrationProfile& p : profiles) {
    if (p.engine == engine) return p;
  }
  return profiles.front();
}

double Mape(const std::vector<double>& pred, const std::vector<double>& meas) {
  if (pred.empty()) return 0;
  double s = 0;
  for (size_t i = 0; i < pred.size(); ++i)
    s += std::abs(pred[i] - meas[i]) / meas[i];
  return 100.0 * s / pred.size();
}

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

// --- Profiles ---

const std::vector<CalibrationProfile>& CalibrationProfiles() {
  static const std::vector<CalibrationProfile>* const kProfiles =
      new std::vector<CalibrationProfile>{
          {"h100-trtllm", "trtllm",
           WithPipelineRequestOverhead(
               EngineFit(0.09296875, 0.05859375, kTrtllmKvReservedOutput, false,
                         6.77, 0.02),
               kTrtllmPipelineRequestOverheadSeconds)},
          {"h100-sglang", "sglang",
           EngineFit(0.021875, 0.48046875, kPagedKvReservedOutput, false,
                     kEngineAgnosticDisaggOverheadS, 0.16)},
          {"h100-vllm", "vllm",
           EngineFit(0.009375, 0.056640625, kPagedKvReservedOutput,
                     kVllmPreempts, 0, 0)},
      };
  return *kProfiles;
}

const CalibrationProfile& DefaultCalibrationProfile() {
  return CalibrationProfiles().front();
}

const CalibrationProfile& EngineAgnosticCalibrationProfile() {
  static const CalibrationProfile* const kProfile = new CalibrationProfile{
      kEngineAgnosticProfileName, "", DefaultCalibration()};
  return *kProfile;
}

std::vector<std::string> BuiltInProfileNames() {
  std::vector<std::string> names;
  for (const CalibrationProfile& p : CalibrationProfiles()) {
    names.push_back(p.name);
  }
  names.push_back(kEngineAgnosticProfileName);
  return names;
}

absl::StatusOr<CalibrationProfile> FindCalibrationProfile(
    absl::string_view name) {
  for (const CalibrationProfile& p : CalibrationProfiles()) {
    if (p.name == name || p.engine == name) return p;
  }
  if (name == kEngineAgnosticProfileName) {
    return EngineAgnosticCalibrationProfile();
  }
  return absl::NotFoundError(absl::StrFormat(
      "calibration profile %s not found; known: %s", QuoteUserText(name),
      absl::StrJoin(BuiltInProfileNames(), ", ")));
}

// --- Rows ---

namespace {

// A calibration CSV: column index by name and the non-empty data lines
// (1-based line number, fields).
struct CsvTable {
  std::map<std::string, int> col;
  std::vector<std::pair<int, std::vector<std::string>>> rows;
};

// INVALID_ARGUMENT on a missing `required` column or a line whose field count
// differs from the header's.
absl::StatusOr<CsvTable> ReadCsvTable(
    absl::string_view csv_text, const std::vector<std::string>& required) {
  std::vector<absl::string_view> lines = absl::StrSplit(csv_text, '\n');
  if (lines.empty()) return absl::InvalidArgumentError("csv: empty");
  const std::vector<std::string> header =
      SplitCsvLine(absl::StripSuffix(lines[0], "\r"));
  CsvTable table;
  for (size_t i = 0; i < header.size(); ++i)
    table.col[header[i]] = static_cast<int>(i);
  for (const std::string& r : required) {
    if (table.col.find(r) == table.col.end()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("csv: missing column \"%s\"", r));
    }
  }
  for (size_t li = 1; li < lines.size(); ++li) {
    absl::string_view line = absl::StripSuffix(lines[li], "\r");
    if (line.empty()) continue;
    const int line_no = static_cast<int>(li) + 1;
    std::vector<std::string> f = SplitCsvLine(line);
    if (f.size() != header.size()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("csv line %d: %d fields, header has %d", line_no,
                          f.size(), header.size()));
    }
    table.rows.emplace_back(line_no, std::move(f));
  }
  return table;
}

// A row's measured TTFT and TPOT (the CSV's milliseconds, in seconds); false
// when either is missing or not positive.
bool MeasuredLatencies(const std::string& ttft_ms_text,
                       const std::string& tpot_ms_text, double* ttft_seconds,
                       double* tpot_seconds) {
  double ttft_ms = 0, tpot_ms = 0;
  if (!absl::SimpleAtod(ttft_ms_text, &ttft_ms) ||
      !absl::SimpleAtod(tpot_ms_text, &tpot_ms) || !(ttft_ms > 0) ||
      !(tpot_ms > 0)) {
    return false;
  }
  *ttft_seconds = ttft_ms / 1e3;
  *tpot_seconds = tpot_ms / 1e3;
  return true;
}

// FP8 weights: the CSV says so in precision or in the GEMM quantisation.
bool Fp8Weights(const std::string& precision,
                const std::string& gemm_quant_mode) {
  return absl::StrContains(precision, "fp8") ||
         absl::StartsWith(gemm_quant_mode, "fp8");
}

}  // namespace

absl::StatusOr<ParsedMeasurements> ParseMeasurements(absl::string_view csv_text,
                                                     bool validation_only) {
  ASSIGN_OR_RETURN(
      CsvTable table,
      ReadCsvTable(
          csv_text,
          {"id", "backend", "backend_version", "model_path", "precision",
           "mode", "isl", "osl", "gemm_quant_mode", "batch_size", "tp_size",
           "pp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size",
           "silicon_ttft_ms", "silicon_tpot_ms"}));
  std::map<std::string, int>& col = table.col;
  ParsedMeasurements out;
  int data_index = 0;
  for (const auto& table_row : table.rows) {
    // Named copies: lambdas may not capture structured bindings (C++17).
    const int line_no = table_row.first;
    const auto& f = table_row.second;
    auto get = [&](const char* c) -> const std::string& { return f[col[c]]; };
    const int index = data_index++;
    if (get("mode") != "agg") {
      ++out.skipped_disaggregated;
      continue;
    }
    MeasuredRow row;
    row.line = line_no;
    row.id = get("id");
    row.engine = get("backend");
    row.engine_version = get("backend_version");
    row.model_path = get("model_path");
    const char* catalog = CatalogNameFor(row.model_path);
    if (catalog == nullptr ||
        !MeasuredLatencies(get("silicon_ttft_ms"), get("silicon_tpot_ms"),
                           &row.ttft_seconds, &row.tpot_seconds)) {
      ++out.skipped_other;
      continue;
    }
    row.catalog_model = catalog;
    row.fp8 = Fp8Weights(get("precision"), get("gemm_quant_mode"));
    row.fp4 = get("precision") == "fp4" ||
              absl::StrContains(get("gemm_quant_mode"), "fp4");
    ASSIGN_OR_RETURN(row.isl, IntField(get("isl"), 0, line_no, "isl"));
    ASSIGN_OR_RETURN(row.osl, IntField(get("osl"), 0, line_no, "osl"));
    ASSIGN_OR_RETURN(row.concurrency,
                     IntField(get("batch_size"), 0, line_no, "batch_size"));
    ASSIGN_OR_RETURN(row.tp, IntField(get("tp_size"), 1, line_no, "tp_size"));
    ASSIGN_OR_RETURN(row.pp, IntField(get("pp_size"), 1, line_no, "pp_size"));
    ASSIGN_OR_RETURN(row.attention_dp, IntField(get("attention_dp_size"), 1,
                                                line_no, "attention_dp_size"));
    ASSIGN_OR_RETURN(row.moe_tp,
                     IntField(get("moe_tp_size"), 1, line_no, "moe_tp_size"));
    ASSIGN_OR_RETURN(row.moe_ep,
                     IntField(get("moe_ep_size"), 1, line_no, "moe_ep_size"));
    row.tp = std::max(1, row.tp);
    row.pp = std::max(1, row.pp);
    row.attention_dp = std::max(1, row.attention_dp);
    row.moe_tp = std::max(1, row.moe_tp);
    row.moe_ep = std::max(1, row.moe_ep);
    if (row.isl <= 0 || row.osl <= 0 || row.concurrency <= 0) {
      ++out.skipped_other;
      continue;
    }
    row.held_out_model = validation_only || row.catalog_model == kHeldOutModel;
    row.held_out_row = !row.held_out_model && index % 4 == 3;
    if (row.concurrency > kMaxFitConcurrency) {
      out.high_concurrency_rows.push_back(std::move(row));
      continue;
    }
    out.rows.push_back(std::move(row));
  }
  return out;
}

absl::StatusOr<Problem> RowProblem(const MeasuredRow& row) {
  shardplan::v1::ModelSource model;
  model.set_catalog_name(row.catalog_model);
  shardplan::v1::ClusterSpec cluster;
  cluster.set_hardware("h100-sxm-80gb");
  const int gpus = row.tp * row.pp * row.attention_dp;
  cluster.set_num_gpus(gpus);
  cluster.set_gpus_per_node(std::min(8, gpus));
  shardplan::v1::Workload workload;
  workload.set_input_tokens(row.isl);
  workload.set_output_tokens(row.osl);
  workload.set_concurrency(std::max(1, row.concurrency / row.attention_dp));
  workload.set_weight_dtype(row.fp4 ? "fp4" : row.fp8 ? "fp8" : "bf16");
  // TensorRT-LLM rows with FP8 GEMMs run an FP8 KV cache: AIConfigurator's
  // per-tensor FP8 recipe for trtllm quantises every component, the KV cache
  // included (kvcache_quant_mode fp8, e.g. its Qwen3-32B-FP8 trtllm example);
  // the measured rows agree (Qwen3-32B tp 1 runs 64 requests of 4.2k tokens
  // without queueing, which a bf16 cache cannot hold). Other engines keep
  // bf16 (their FP8 checkpoints leave the KV cache in the model dtype unless
  // asked).
  workload.set_kv_cache_dtype(row.engine == "trtllm" && row.fp8 ? "fp8"
                                                                : "bf16");
  return ProblemFromProto(model, cluster, workload);
}

PlanDims RowPlan(const MeasuredRow& row) {
  PlanDims plan;
  plan.dp = row.attention_dp;
  plan.tp = row.tp;
  plan.pp = row.pp;
  plan.ep = row.moe_ep;  // 1 for dense models
  plan.dims = MegatronShardDims();
  plan.batch_size = std::max(1, row.concurrency / row.attention_dp);
  return plan;
}

namespace {

// Predicts each row (aggregated or disaggregated) with its engine's profile.
template <typename Row, typename ProblemOf, typename PlanOf>
absl::StatusOr<std::vector<RowPrediction>> PredictEachRow(
    const std::vector<Row>& rows,
    const std::vector<CalibrationProfile>& profiles, ProblemOf problem_of,
    PlanOf plan_of, bool engine_agnostic_too = false) {
  if (profiles.empty())
    return absl::InvalidArgumentError("no calibration profiles");
  // As DefaultCalibration() is made from the compiled-in profiles.
  Calibration agnostic = ProfileFor(profiles, "trtllm").calibration;
  agnostic.disagg_request_overhead_seconds = kEngineAgnosticDisaggOverheadS;
  std::vector<RowPrediction> out;
  out.reserve(rows.size());
  for (const Row& row : rows) {
    ASSIGN_OR_RETURN(Problem problem, problem_of(row));
    ASSIGN_OR_RETURN(
        std::unique_ptr<const CostModel> model,
        CostModel::Create(problem,
                          ProfileFor(profiles, row.engine).calibration));
    const PlanDims plan = plan_of(row);
    RETURN_IF_ERROR(Annotate(model->ValidatePlan(plan),
                             absl::StrCat("csv line ", row.line)));
    const Evaluation e = model->Evaluate(plan);
    RowPrediction p{e.ttft_seconds, e.tpot_seconds, e.feasible,
                    e.prefill_seconds};
    if (engine_agnostic_too) {
      ASSIGN_OR_RETURN(std::unique_ptr<const CostModel> agnostic_model,
                       CostModel::Create(std::move(problem), agnostic));
      const Evaluation a = agnostic_model->Evaluate(plan);
      p.agnostic_ttft_seconds = a.ttft_seconds;
      p.agnostic_tpot_seconds = a.tpot_seconds;
      p.agnostic_feasible = a.feasible;
    }
    out.push_back(p);
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<RowPrediction>> PredictRows(
    const std::vector<MeasuredRow>& rows,
    const std::vector<CalibrationProfile>& profiles) {
  return PredictEachRow(rows, profiles, RowProblem, RowPlan);
}

absl::StatusOr<std::vector<RowPrediction>> PredictRowsForBands(
    const std::vector<MeasuredRow>& rows,
    const std::vector<CalibrationProfile>& profiles) {
  return PredictEachRow(rows, profiles, RowProblem, RowPlan,
                        /*engine_agnostic_too=*/true);
}

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

absl::StatusOr<AccuracyReport> ComputeAccuracy(
    const ParsedMeasurements& data,
    const std::vector<CalibrationProfile>& profiles) {
  ASSIGN_OR_RETURN(std::vector<RowPrediction> pred,
                   PredictRows(data.rows, profiles));
  AccuracyReport report;
  report.skipped_disaggregated = data.skipped_disaggregated;
  struct Acc {
    std::vector<double> pt, mt, pf, mf;
  };
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
      if (x == nullptr) continue;
      x->pt.push_back(p.tpot_seconds);
      x->mt.push_back(r.tpot_seconds);
      x->pf.push_back(p.ttft_seconds);
      x->mf.push_back(r.ttft_seconds);
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
        absl::StrCat("above ", kMaxFitConcurrency, " requests (not fitted)"),
        false);
  }
  report.held_out_min_spearman = 1;
  for (const auto& [key, a] : groups) {
    AccuracyGroup g;
    std::tie(g.model, g.engine, g.split) = key;
    g.rows = static_cast<int>(a.pt.size());
    g.tpot_mape = Mape(a.pt, a.mt);
    g.ttft_mape = Mape(a.pf, a.mf);
    g.tpot_spearman = Spearman(a.pt, a.mt);
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

std::string AccuracyReport::Markdown() const {
  std::string s =
      "| model | engine | rows | split | TPOT MAPE | TTFT MAPE | TPOT Spearman "
      "|\n"
      "|---|---|---|---|---|---|---|\n";
  for (const AccuracyGroup& g : groups) {
    absl::StrAppendFormat(
        &s, "| %s | %s | %d | %s | %.1f%% | %.1f%% | %.3f |\n", g.model,
        g.engine, g.rows, g.split, g.tpot_mape, g.ttft_mape, g.tpot_spearman);
  }
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

// --- Disaggregated rows ---

namespace {

const char* DisaggregatedCatalogNameFor(absl::string_view model_path) {
  // DeepSeek-R1 is DeepSeek-V3's architecture with other weights.
  if (model_path == "deepseek-ai/DeepSeek-R1" ||
      model_path == "deepseek-ai/DeepSeek-V3") {
    return "deepseek-v3";
  }
  return CatalogNameFor(model_path);
}

// A pool's layout; the vLLM quirk (tp_size 1 beside moe_tp 2 or 4, see the
// CSV's README) resolved as tp = moe_tp * moe_ep / attention_dp.
MeasuredPool ResolvePool(MeasuredPool pool) {
  pool.batch_size = std::max(0, pool.batch_size);
  pool.workers = std::max(1, pool.workers);
  pool.tp = std::max(1, pool.tp);
  pool.pp = std::max(1, pool.pp);
  pool.attention_dp = std::max(1, pool.attention_dp);
  pool.moe_tp = std::max(1, pool.moe_tp);
  pool.moe_ep = std::max(1, pool.moe_ep);
  const int moe_ranks = pool.moe_tp * pool.moe_ep;
  if (pool.tp == 1 && moe_ranks > pool.attention_dp &&
      moe_ranks % pool.attention_dp == 0) {
    pool.tp = moe_ranks / pool.attention_dp;
  }
  return pool;
}

bool SamePool(const MeasuredPool& a, const MeasuredPool& b) {
  return a.batch_size == b.batch_size && a.workers == b.workers &&
         a.tp == b.tp && a.pp == b.pp && a.attention_dp == b.attention_dp &&
         a.moe_tp == b.moe_tp && a.moe_ep == b.moe_ep;
}

// Equal to the last digits a re-export changes (13693.258112009305 and
// ...304 are one number).
bool SameMeasuredValue(double a, double b) {
  return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b));
}

// The same run exported more than once (the source merges database dumps
// and CSV exports): rows with the same model, engine, ISL, OSL, concurrency
// and the same measured TTFT and TPOT to the last digits are one
// measurement. Under one layout it is kept once (the first row; the split
// flag of that row stays, so a measurement is never on both sides of the
// split). Under different layouts the deployment that produced it is
// unknown (e.g. one TensorRT-LLM run reported both as 1 prefill worker of
// dp16 + 3 decode workers of tp16 and as 1 + 1 workers of tp16): every copy
// is dropped, since no layout can be predicted for it.
void DropRepeatedMeasurements(ParsedDisaggregated& out) {
  std::vector<DisaggregatedRow> kept;
  std::vector<bool> used(out.rows.size(), false);
  for (size_t i = 0; i < out.rows.size(); ++i) {
    if (used[i]) continue;
    const DisaggregatedRow& a = out.rows[i];
    std::vector<size_t> copies = {i};
    bool conflicting = false;
    for (size_t j = i + 1; j < out.rows.size(); ++j) {
      const DisaggregatedRow& b = out.rows[j];
      if (used[j] || a.catalog_model != b.catalog_model ||
          a.engine != b.engine || a.isl != b.isl || a.osl != b.osl ||
          a.concurrency != b.concurrency ||
          !SameMeasuredValue(a.ttft_seconds, b.ttft_seconds) ||
          !SameMeasuredValue(a.tpot_seconds, b.tpot_seconds)) {
        continue;
      }
      copies.push_back(j);
      conflicting = conflicting || !SamePool(a.prefill, b.prefill) ||
                    !SamePool(a.decode, b.decode);
    }
    for (size_t j : copies) used[j] = true;
    if (conflicting) {
      out.skipped_conflicting_layouts += static_cast<int>(copies.size());
      continue;
    }
    out.skipped_duplicates += static_cast<int>(copies.size()) - 1;
    kept.push_back(a);
  }
  out.rows = std::move(kept);
}

}  // namespace

absl::StatusOr<ParsedDisaggregated> ParseDisaggregatedRows(
    absl::string_view csv_text) {
  std::vector<std::string> required = {"id",
                                       "silicon_data_source",
                                       "backend",
                                       "model_path",
                                       "precision",
                                       "mode",
                                       "isl",
                                       "osl",
                                       "gemm_quant_mode",
                                       "silicon_ttft_ms",
                                       "silicon_tpot_ms"};
  for (const char* pool : {"prefill_", "decode_"}) {
    for (const char* f : {"batch_size", "num_workers", "tp_size", "pp_size",
                          "attention_dp_size", "moe_tp_size", "moe_ep_size"}) {
      required.push_back(absl::StrCat(pool, f));
    }
  }
  ASSIGN_OR_RETURN(CsvTable table, ReadCsvTable(csv_text, required));
  std::map<std::string, int>& col = table.col;
  ParsedDisaggregated out;
  int data_index = 0;
  for (const auto& table_row : table.rows) {
    // Named copies: lambdas may not capture structured bindings (C++17).
    const int line_no = table_row.first;
    const auto& f = table_row.second;
    auto get = [&](const std::string& c) -> const std::string& {
      return f[col[c]];
    };
    if (get("mode") != "disagg") continue;
    const int index = data_index++;
    DisaggregatedRow row;
    row.line = line_no;
    row.id = get("id");
    row.engine = get("backend");
    row.model_path = get("model_path");
    const char* catalog = DisaggregatedCatalogNameFor(row.model_path);
    if (catalog == nullptr ||
        !MeasuredLatencies(get("silicon_ttft_ms"), get("silicon_tpot_ms"),
                           &row.ttft_seconds, &row.tpot_seconds)) {
      ++out.skipped;
      continue;
    }
    row.catalog_model = catalog;
    row.fp8 = Fp8Weights(get("precision"), get("gemm_quant_mode"));
    ASSIGN_OR_RETURN(row.isl, IntField(get("isl"), 0, line_no, "isl"));
    ASSIGN_OR_RETURN(row.osl, IntField(get("osl"), 0, line_no, "osl"));
    const std::string& source = get("silicon_data_source");
    const size_t at = source.find("silicon_concurrency=");
    if (at != std::string::npos) {
      const absl::string_view rest =
          absl::string_view(source).substr(at + strlen("silicon_concurrency="));
      ASSIGN_OR_RETURN(row.concurrency,
                       IntField(rest.substr(0, rest.find(';')), 0, line_no,
                                "silicon_data_source"));
    }
    for (const std::pair<const char*, MeasuredPool*>& side :
         {std::pair<const char*, MeasuredPool*>{"prefill_", &row.prefill},
          {"decode_", &row.decode}}) {
      const char* const prefix = side.first;
      MeasuredPool* const pool = side.second;
      auto field = [&](const char* name, int fallback) {
        const std::string c = absl::StrCat(prefix, name);
        return IntField(get(c), fallback, line_no, c);
      };
      ASSIGN_OR_RETURN(pool->batch_size, field("batch_size", 0));
      ASSIGN_OR_RETURN(pool->workers, field("num_workers", 1));
      ASSIGN_OR_RETURN(pool->tp, field("tp_size", 1));
      ASSIGN_OR_RETURN(pool->pp, field("pp_size", 1));
      ASSIGN_OR_RETURN(pool->attention_dp, field("attention_dp_size", 1));
      ASSIGN_OR_RETURN(pool->moe_tp, field("moe_tp_size", 1));
      ASSIGN_OR_RETURN(pool->moe_ep, field("moe_ep_size", 1));
      *pool = ResolvePool(*pool);
    }
    if (row.isl <= 0 || row.osl <= 0 ||
        (row.concurrency <= 0 && row.decode.batch_size <= 0)) {
      ++out.skipped;
      continue;
    }
    const int per_worker = row.decode.batch_size > 0
                               ? row.decode.batch_size
                               : row.concurrency / row.decode.workers;
    if (per_worker > kMaxFitConcurrency) {
      ++out.skipped_queueing;
      continue;
    }
    row.held_out_row = index % 4 == 3;
    out.rows.push_back(std::move(row));
  }
  DropRepeatedMeasurements(out);
  return out;
}

absl::StatusOr<Problem> DisaggregatedRowProblem(const DisaggregatedRow& row) {
  shardplan::v1::ModelSource model;
  model.set_catalog_name(row.catalog_model);
  shardplan::v1::ClusterSpec cluster;
  cluster.set_hardware("h100-sxm-80gb");
  const int gpus = row.prefill.workers * row.prefill.gpus() +
                   row.decode.workers * row.decode.gpus();
  cluster.set_num_gpus(gpus);
  cluster.set_gpus_per_node(std::min(8, gpus));
  shardplan::v1::Workload workload;
  workload.set_input_tokens(row.isl);
  workload.set_output_tokens(row.osl);
  workload.set_weight_dtype(row.fp8 ? "fp8" : "bf16");
  workload.set_kv_cache_dtype("bf16");
  // The benchmark's closed-loop clients, per decode instance (the replica
  // unit of Workload.concurrency); every row's concurrency divides evenly.
  if (row.concurrency > 0) {
    workload.set_concurrency((row.concurrency + row.decode.workers - 1) /
                             row.decode.workers);
  }
  return ProblemFromProto(model, cluster, workload);
}

PlanDims DisaggregatedRowPlan(const DisaggregatedRow& row) {
  PlanDims plan;
  plan.disaggregated = true;
  plan.prefill_instances = row.prefill.workers;
  plan.decode_instances = row.decode.workers;
  plan.prefill.dp = row.prefill.attention_dp;
  plan.prefill.tp = row.prefill.tp;
  plan.prefill.pp = row.prefill.pp;
  plan.prefill.ep = row.prefill.moe_ep;
  plan.prefill.batch_size = std::max(1, row.prefill.batch_size);
  plan.dp = row.decode.attention_dp;
  plan.tp = row.decode.tp;
  plan.pp = row.decode.pp;
  plan.ep = row.decode.moe_ep;
  // With a concurrency, the closed-loop model derives the decode batch
  // (Little's law, simulator/disaggregated.h). Else requests per decode
  // worker, then per attention rank.
  if (row.concurrency > 0) return plan;
  const int per_worker = row.decode.batch_size > 0
                             ? row.decode.batch_size
                             : row.concurrency / row.decode.workers;
  plan.batch_size = std::max(
      1, (per_worker + row.decode.attention_dp - 1) / row.decode.attention_dp);
  return plan;
}

absl::StatusOr<std::vector<RowPrediction>> PredictDisaggregatedRows(
    const std::vector<DisaggregatedRow>& rows,
    const std::vector<CalibrationProfile>& profiles) {
  return PredictEachRow(rows, profiles, DisaggregatedRowProblem,
                        DisaggregatedRowPlan);
}

absl::StatusOr<DisaggregatedAccuracy> ComputeDisaggregatedAccuracy(
    const std::vector<DisaggregatedRow>& rows,
    const std::vector<CalibrationProfile>& profiles) {
  ASSIGN_OR_RETURN(std::vector<RowPrediction> pred,
                   PredictDisaggregatedRows(rows, profiles));
  struct Acc {
    std::vector<double> pt, mt, pf, mf;
    void Add(const RowPrediction& p, const DisaggregatedRow& r) {
      pt.push_back(p.tpot_seconds);
      mt.push_back(r.tpot_seconds);
      pf.push_back(p.ttft_seconds);
      mf.push_back(r.ttft_seconds);
    }
  };
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
    AccuracyGroup g;
    std::tie(g.model, g.engine, g.split) = key;
    g.rows = static_cast<int>(a.pt.size());
    g.tpot_mape = Mape(a.pt, a.mt);
    g.ttft_mape = Mape(a.pf, a.mf);
    g.tpot_spearman = Spearman(a.pt, a.mt);
    report.groups.push_back(std::move(g));
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

absl::StatusOr<std::vector<CalibrationProfile>> FitDisaggregatedOverheads(
    const std::vector<DisaggregatedRow>& rows,
    const std::vector<CalibrationProfile>& profiles) {
  std::vector<CalibrationProfile> out = profiles;
  for (CalibrationProfile& profile : out) {
    std::vector<DisaggregatedRow> fit;
    for (const DisaggregatedRow& r : rows) {
      if (!r.held_out_row && r.engine == profile.engine) fit.push_back(r);
    }
    if (fit.empty()) continue;
    auto ttft_mape = [&](const Calibration& c) -> absl::StatusOr<double> {
      CalibrationProfile p = profile;
      p.calibration = c;
      ASSIGN_OR_RETURN(std::vector<RowPrediction> pred,
                       PredictDisaggregatedRows(fit, {p}));
      std::vector<double> predicted, measured;
      for (size_t i = 0; i < fit.size(); ++i) {
        predicted.push_back(pred[i].ttft_seconds);
        measured.push_back(fit[i].ttft_seconds);
      }
      return Mape(predicted, measured);
    };
    // Coordinate descent: each parameter scanned coarse to fine (to 1e-3)
    // over [0, upper] with the other fixed; three rounds.
    Calibration c = profile.calibration;
    c.disagg_request_overhead_seconds = 0;
    c.disagg_prefill_queue_fraction = 0;
    ASSIGN_OR_RETURN(double best_mape, ttft_mape(c));
    for (int round = 0; round < 3; ++round) {
      for (auto [field, upper] :
           {std::pair<double Calibration::*, double>{
                &Calibration::disagg_request_overhead_seconds, 20.0},
            {&Calibration::disagg_prefill_queue_fraction, 1.0}}) {
        double best = c.*field, lo = 0, hi = upper, step = upper / 40;
        while (step >= 0.001) {
          for (double v = lo; v <= hi + 1e-12; v += step) {
            Calibration t = c;
            t.*field = v;
            ASSIGN_OR_RETURN(double m, ttft_mape(t));
            if (m < best_mape) {
              best_mape = m;
              best = v;
            }
          }
          lo = std::max(0.0, best - step);
          hi = best + step;
          step /= 10;
        }
        c.*field = best;
      }
    }
    profile.calibration.disagg_request_overhead_seconds =
        c.disagg_request_overhead_seconds;
    profile.calibration.disagg_prefill_queue_fraction =
        c.disagg_prefill_queue_fraction;
  }
  return out;
}

std::string DisaggregatedAccuracy::Markdown() const {
  std::string s =
      "| model | engine | split | rows | TPOT MAPE | TTFT MAPE | TPOT Spearman "
      "|\n|---|---|---|---|---|---|---|\n";
  for (const AccuracyGroup& g : groups) {
    absl::StrAppendFormat(
        &s, "| %s | %s | %s | %d | %.1f%% | %.1f%% | %.3f |\n", g.model,
        g.engine, g.split, g.rows, g.tpot_mape, g.ttft_mape, g.tpot_spearman);
  }
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

// --- Fit ---

namespace {

struct Param {
  double* (*field)(Calibration*);
  double lo;
  double hi;
  int engine;  // -1: shared by all profiles
};

template <double Calibration::*F>
double* FieldOf(Calibration* c) {
  return &(c->*F);
}

}  // namespace

absl::StatusOr<std::vector<CalibrationProfile>> FitCalibration(
    const ParsedMeasurements& data,
    const std::vector<CalibrationProfile>& start, const FitOptions& options) {
  if (start.empty()) return absl::InvalidArgumentError("no starting profiles");
  std::vector<CalibrationProfile> profiles = start;
  // Fit rows and their problems, built once.
  struct FitRow {
    const MeasuredRow* row;
    Problem problem;
    PlanDims plan;
    int profile;
  };
  std::vector<FitRow> rows;
  for (const MeasuredRow& r : data.rows) {
    if (r.held_out()) continue;
    ASSIGN_OR_RETURN(Problem problem, RowProblem(r));
    int profile = 0;
    for (size_t i = 0; i < profiles.size(); ++i) {
      if (profiles[i].engine == r.engine) profile = static_cast<int>(i);
    }
    rows.push_back({&r, std::move(problem), RowPlan(r), profile});
  }
  if (rows.empty()) return absl::InvalidArgumentError("no fit rows");

  std::vector<Param> params = {
      {&FieldOf<&Calibration::gemm_efficiency>, 0.2, 0.95, -1},
      {&FieldOf<&Calibration::gemm_half_efficiency_tokens>, 1, 1024, -1},
      {&FieldOf<&Calibration::hbm_efficiency>, 0.4, 0.95, -1},
      {&FieldOf<&Calibration::attention_efficiency>, 0.1, 0.9, -1},
      {&FieldOf<&Calibration::collective_latency_scale>, 0.05, 5, -1},
      {&FieldOf<&Calibration::layer_overhead_seconds>, 0, 3e-4, -1},
      {&FieldOf<&Calibration::ttft_wait_iterations>, 0, 20, -1},
      {&FieldOf<&Calibration::ttft_inflight_prefills>, 0, 4, -1},
      // Only FP4 rows (gpt-oss-120b, MXFP4 on H100) move it.
      {&FieldOf<&Calibration::fp4_dequant_bytes_per_weight>, 0.5, 6, -1},
  };
  for (size_t e = 0; e < profiles.size(); ++e) {
    params.push_back({&FieldOf<&Calibration::prefill_overhead_seconds>, 0, 0.4,
                      static_cast<int>(e)});
    params.push_back({&FieldOf<&Calibration::prefill_queue_fraction>, 0, 1,
                      static_cast<int>(e)});
  }
  auto set = [&](const Param& p, double v) {
    if (p.engine >= 0) {
      *p.field(&profiles[p.engine].calibration) = v;
    } else {
      for (CalibrationProfile& prof : profiles) *p.field(&prof.calibration) = v;
    }
  };
  auto get = [&](const Param& p) {
    return *p.field(&profiles[p.engine >= 0 ? p.engine : 0].calibration);
  };
  // Shared parameters start from the first profile's values.
  for (const Param& p : params) {
    if (p.engine < 0) set(p, get(p));
  }
  // The reported metrics themselves: mean absolute percentage error of TPOT
  // and of TTFT over the fit rows (as fractions); infinite when a row cannot
  // be predicted.
  struct Errors {
    double tpot = 0;
    double ttft = 0;
    double Weighted(double ttft_weight) const {
      return tpot + ttft_weight * ttft;
    }
  };
  auto objective = [&]() -> Errors {
    Errors s;
    for (const FitRow& r : rows) {
      absl::StatusOr<std::unique_ptr<const CostModel>> model =
          CostModel::Create(r.problem, profiles[r.profile].calibration);
      if (!model.ok()) return {1e30, 1e30};
      const Evaluation e = (*model)->Evaluate(r.plan);
      if (!(e.tpot_seconds > 0) || !(e.ttft_seconds > 0)) return {1e30, 1e30};
      s.tpot += std::abs(e.tpot_seconds / r.row->tpot_seconds - 1);
      s.ttft += std::abs(e.ttft_seconds / r.row->ttft_seconds - 1);
    }
    s.tpot /= rows.size();
    s.ttft /= rows.size();
    return s;
  };
  auto better = [&](const Errors& f, const Errors& best) {
    if (options.pareto_steps &&
        (f.tpot > best.tpot + 1e-12 || f.ttft > best.ttft + 1e-12)) {
      return false;
    }
    return f.Weighted(options.ttft_weight) <
           best.Weighted(options.ttft_weight) - 1e-12;
  };
  Errors best = objective();
  double step = 0.125;
  for (int round = 0; round < options.max_rounds && step > 1e-3; ++round) {
    bool improved = false;
    for (const Param& p : params) {
      const double range = p.hi - p.lo;
      for (double dir : {+1.0, -1.0}) {
        const double old = get(p);
        const double v = std::clamp(old + dir * step * range, p.lo, p.hi);
        if (v == old) continue;
        set(p, v);
        const Errors f = objective();
        if (better(f, best)) {
          best = f;
          improved = true;
          break;
        }
        set(p, old);
      }
    }
    if (!improved) step /= 2;
  }
  return profiles;
}

}  // namespace shardplan::simulator

// --- Error bars ---

namespace shardplan::simulator {
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

const ErrorBand* FindBand(const std::vector<ErrorBand>& bands,
                          absl::string_view engine, bool moe,
                          absl::string_view dtype) {
  for (const ErrorBand& b : bands) {
    if (b.engine == engine && b.moe == moe && b.dtype == dtype) return &b;
  }
  return nullptr;
}

bool Inside(double ratio, double low, double high) {
  return ratio >= low && ratio <= high;
}

}  // namespace

std::vector<ErrorBand> ComputeErrorBands(
    const std::vector<MeasuredRow>& rows,
    const std::vector<RowPrediction>& predictions) {
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
    b.ttft_low = Quantile(c.ttft, 0.1);
    b.ttft_high = Quantile(c.ttft, 0.9);
    b.tpot_low = Quantile(c.tpot, 0.1);
    b.tpot_high = Quantile(c.tpot, 0.9);
    out.push_back(std::move(b));
  }
  return out;
}

const std::vector<ErrorBand>& CompiledErrorBands() {
  // Produced by
  //   build/bin/shardplan-calibrate --csv
  //   simulator/calibration/data/h100_measured_latency.csv --csv
  //   simulator/calibration/data/h100_moe_latency.csv --validation-csv
  //   simulator/calibration/data/h100_validation_latency.csv --bands
  // with the compiled-in profiles; calibration_test recomputes it.
  // engine, moe, weight dtype, held-out rows, TTFT p10, p90, TPOT p10, p90
  // of measured / predicted ("any": engine-agnostic predictions).
  static const std::vector<ErrorBand>* const kBands =
      new std::vector<ErrorBand>{
          {"*", false, "*", 311, 0.664763, 2.14664, 0.89026, 1.186},
          {"*", true, "*", 47, 0.840553, 1.40878, 0.793413, 1.17636},
          {"any", false, "*", 311, 0.543168, 3.04398, 0.850997, 1.2037},
          {"any", false, "bf16", 220, 0.671357, 4.13606, 0.824792, 1.10923},
          {"any", false, "fp8", 91, 0.41341, 1.20313, 0.950783, 1.22381},
          {"any", true, "*", 47, 0.406324, 1.33868, 0.793424, 1.17639},
          {"any", true, "fp4", 15, 0.282921, 0.870046, 0.82925, 1.14434},
          {"any", true, "fp8", 32, 0.832452, 1.44238, 0.785611, 1.17656},
          {"sglang", false, "*", 21, 0.847166, 1.31809, 0.897134, 1.09373},
          {"sglang", false, "bf16", 21, 0.847166, 1.31809, 0.897134, 1.09373},
          {"trtllm", false, "*", 222, 0.69955, 2.60446, 0.876273, 1.21286},
          {"trtllm", false, "bf16", 177, 0.677929, 2.92021, 0.871942, 1.10978},
          {"trtllm", false, "fp8", 45, 0.843788, 1.26525, 0.952203, 1.25154},
          {"trtllm", true, "*", 32, 0.832452, 1.44238, 0.785611, 1.17656},
          {"trtllm", true, "fp8", 32, 0.832452, 1.44238, 0.785611, 1.17656},
          {"vllm", false, "*", 68, 0.505898, 1.06811, 0.950411, 1.13765},
          {"vllm", false, "bf16", 22, 0.908057, 1.18738, 0.987863, 1.16494},
          {"vllm", false, "fp8", 46, 0.472175, 0.830643, 0.950166, 1.12217},
          {"vllm", true, "*", 15, 0.84857, 1.12727, 0.829239, 1.1443},
          {"vllm", true, "fp4", 15, 0.84857, 1.12727, 0.829239, 1.1443},
      };
  return *kBands;
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

PredictionBand FindPredictionBand(const BandRegime& regime,
                                  const std::vector<ErrorBand>& bands) {
  PredictionBand out;
  const std::string profile_name =
      regime.profile.empty() ? kEngineAgnosticProfileName : regime.profile;
  // An engine-agnostic prediction is measured against every engine's rows.
  std::string engine = regime.profile.empty() ? kEngineAgnosticBandEngine : "";
  for (const CalibrationProfile& p : CalibrationProfiles()) {
    if (p.name == profile_name) engine = p.engine;
  }
  const std::string engine_label =
      engine == kEngineAgnosticBandEngine ? "every engine" : engine;
  const absl::string_view kind = regime.moe ? "MoE" : "dense";
  const std::string dtype(DtypeName(regime.weight_dtype));
  const ErrorBand* band = nullptr;
  if (!engine.empty()) {
    band = FindBand(bands, engine, regime.moe, dtype);
    if (band == nullptr) {
      band = FindBand(bands, engine, regime.moe, "*");
      if (band != nullptr) {
        out.notes.push_back(absl::StrFormat(
            "%s %s weights on %s: fewer than %d held-out rows; range from all "
            "held-out %s rows of %s",
            kind, dtype, engine_label, kMinBandRows, kind, engine_label));
      }
    }
  }
  if (band == nullptr) {
    band = FindBand(bands, "*", regime.moe, "*");
    out.notes.push_back(absl::StrFormat(
        "%s models on profile %s: no held-out rows of this engine; range "
        "pooled over the held-out %s rows of every engine",
        kind, profile_name, kind));
  }
  if (band != nullptr) {
    out.ttft_low = band->ttft_low;
    out.ttft_high = band->ttft_high;
    out.tpot_low = band->tpot_low;
    out.tpot_high = band->tpot_high;
  }
  if (!regime.engine_given) {
    out.notes.push_back(absl::StrFormat(
        "engine not set: predicted with the engine-agnostic profile %s "
        "(TensorRT-LLM's fitted constants); the range covers every engine's "
        "held-out measurements (set workload.engine for a narrower one)",
        profile_name));
  }
  // Terms no measured row exercises. Each is taken to be as uncertain as the
  // validated model and independent of it: log-errors add in quadrature.
  // Pipelines stay widened although public pp rows now exist: per-GPU
  // throughput ratios on another GPU (RTX PRO 6000) and one engine, from
  // maximum-throughput runs whose batches hide the sends and bubbles
  // (tests/simulator/pipeline_parallel_measured_test.cc), with no TTFT or
  // TPOT; they support the stage and host terms, not a band.
  int unvalidated = 0;
  if (regime.pipeline_stages > 1) {
    ++unvalidated;
    out.notes.push_back(
        "pipeline parallelism: no H100 rows; TensorRT-LLM's RTX PRO 6000 "
        "rows (2-8 stages against 1, per-GPU throughput at maximum load) are "
        "predicted within 3% (median, held out); sends, small-batch bubbles "
        "and other engines untested; range widened");
  }
  if (regime.replica_nodes > 1) {
    ++unvalidated;
    out.notes.push_back(
        regime.expert_domain_spans_nodes
            ? "multi-node collectives: no measured serving rows; DeepEP "
              "kernel figures only; range widened"
            : "multi-node collectives: no measured serving rows; InfiniBand "
              "datasheet figures only; range widened");
  }
  const double widen = std::sqrt(1.0 + unvalidated);
  auto apply = [&](double* low, double* high) {
    if (unvalidated > 0 && *low > 0 && *high > 0) {
      const double center = 0.5 * (std::log(*low) + std::log(*high));
      const double half = 0.5 * (std::log(*high) - std::log(*low));
      *low = std::exp(center - widen * half);
      *high = std::exp(center + widen * half);
    }
    // The band always contains the prediction itself.
    *low = std::min(*low, 1.0);
    *high = std::max(*high, 1.0);
  };
  apply(&out.ttft_low, &out.ttft_high);
  apply(&out.tpot_low, &out.tpot_high);
  return out;
}

BandRegime RegimeOf(const Evaluation& e, const Problem& problem) {
  BandRegime regime;
  regime.profile = problem.workload.calibration_profile;
  // WorkloadDimsFromProto leaves the profile empty only when neither the
  // engine nor a profile was named.
  regime.engine_given = !problem.workload.calibration_profile.empty();
  regime.moe = problem.model.is_moe();
  regime.weight_dtype = problem.workload.weight_dtype;
  regime.pipeline_stages = e.pipeline_stages;
  regime.replica_nodes = e.replica_nodes;
  regime.expert_domain_spans_nodes = e.ep_nodes > 1;
  return regime;
}

double ConservativeOutputTokensPerS(const Evaluation& e,
                                    const Problem& problem) {
  if (!e.feasible) return 0;
  return e.output_tokens_per_s /
         FindPredictionBand(RegimeOf(e, problem)).tpot_high;
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

// --- Calibration from a user's measured runs ---

absl::StatusOr<std::string> CatalogModelOfRun(absl::string_view model) {
  if (const char* catalog = CatalogNameFor(model); catalog != nullptr) {
    return std::string(catalog);
  }
  if (FindCatalogModel(model).ok()) return std::string(model);
  return absl::NotFoundError(absl::StrFormat(
      "model %s is neither a catalog name nor a Hugging Face id the "
      "calibration knows",
      QuoteUserText(model)));
}

void SplitUserRows(std::vector<MeasuredRow>& rows) {
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i].held_out_model = false;
    rows[i].held_out_row = i % 3 == 2;
  }
}

absl::StatusOr<ProfileFit> FitProfile(const std::string& name,
                                      const std::vector<MeasuredRow>& rows,
                                      const CalibrationProfile& start,
                                      const FitOptions& options) {
  for (const MeasuredRow& row : rows) {
    if (absl::Status s = RowProblem(row).status(); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("run ", row.id, ": ", s.message()));
    }
  }
  CalibrationProfile base = start;
  // The rows' engine selects the profile inside the fit.
  base.engine = rows.empty() ? start.engine : rows.front().engine;
  // How much KV cache a running request holds is the engine's admission
  // policy (not fitted, sources at kTrtllmKvReservedOutput): runs of one
  // engine started from another engine's profile (e.g. the engine-agnostic
  // default) keep their own engine's. Without this, vLLM or SGLang runs
  // started from h100-trtllm are costed with TensorRT-LLM's whole-output
  // reservation: batches that run unqueued on the engine are predicted to
  // queue (sglang:qwen3-32b held-out TPOT 34.4% instead of 8%), and the fit
  // bends the efficiency parameters to undo a queue that is not there.
  base.calibration = WithEngineBehaviour(base.calibration, base.engine);
  ASSIGN_OR_RETURN(std::vector<RowPrediction> base_predictions,
                   PredictRows(rows, {base}));
  // A run the cost model finds infeasible (its batch's KV cache does not fit,
  // so the engine queued requests) has no prediction to fit: left out.
  // A fit on a user's few runs must leave neither metric worse on those runs.
  FitOptions pareto = options;
  pareto.pareto_steps = true;
  ParsedMeasurements data;
  ProfileFit fit;
  std::vector<std::string> infeasible;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!base_predictions[i].feasible) {
      infeasible.push_back(rows[i].id);
      continue;
    }
    data.rows.push_back(rows[i]);
    (rows[i].held_out() ? fit.held_out_rows : fit.fit_rows) += 1;
  }
  if (fit.fit_rows == 0 || fit.held_out_rows == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "calibration needs fitted and held-out runs; got ", fit.fit_rows,
        " fitted and ", fit.held_out_rows, " held out"));
  }
  ASSIGN_OR_RETURN(std::vector<CalibrationProfile> fitted,
                   FitCalibration(data, {base}, pareto));
  fit.profile = fitted.front();
  fit.profile.name = name;
  const std::vector<MeasuredRow>& used = data.rows;
  ASSIGN_OR_RETURN(std::vector<RowPrediction> before,
                   PredictRows(used, {base}));
  ASSIGN_OR_RETURN(std::vector<RowPrediction> after,
                   PredictRows(used, {fit.profile}));
  // Predictions before and after, and the measurements, of one split.
  struct Split {
    std::vector<double> tpot_before, tpot_after, tpot, ttft_before, ttft_after,
        ttft;
  };
  Split held, fit_runs;
  fit.report =
      absl::StrCat("| run | split | measured TPOT ms | ", start.name, " | ",
                   name, " | measured TTFT ms | ", start.name, " | ", name,
                   " |\n|---|---|---:|---:|---:|---:|---:|---:|\n");
  for (size_t i = 0; i < used.size(); ++i) {
    const MeasuredRow& r = used[i];
    absl::StrAppendFormat(
        &fit.report, "| %s | %s | %.2f | %.2f | %.2f | %.1f | %.1f | %.1f |\n",
        r.id, r.held_out() ? "held out" : "fit", r.tpot_seconds * 1e3,
        before[i].tpot_seconds * 1e3, after[i].tpot_seconds * 1e3,
        r.ttft_seconds * 1e3, before[i].ttft_seconds * 1e3,
        after[i].ttft_seconds * 1e3);
    if (!before[i].feasible || !after[i].feasible) continue;
    Split& split = r.held_out() ? held : fit_runs;
    split.tpot_before.push_back(before[i].tpot_seconds);
    split.tpot_after.push_back(after[i].tpot_seconds);
    split.tpot.push_back(r.tpot_seconds);
    split.ttft_before.push_back(before[i].ttft_seconds);
    split.ttft_after.push_back(after[i].ttft_seconds);
    split.ttft.push_back(r.ttft_seconds);
  }
  fit.tpot_mape_before = Mape(held.tpot_before, held.tpot);
  fit.tpot_mape_after = Mape(held.tpot_after, held.tpot);
  fit.ttft_mape_before = Mape(held.ttft_before, held.ttft);
  fit.ttft_mape_after = Mape(held.ttft_after, held.ttft);
  fit.fit_tpot_mape_before = Mape(fit_runs.tpot_before, fit_runs.tpot);
  fit.fit_tpot_mape_after = Mape(fit_runs.tpot_after, fit_runs.tpot);
  fit.fit_ttft_mape_before = Mape(fit_runs.ttft_before, fit_runs.ttft);
  fit.fit_ttft_mape_after = Mape(fit_runs.ttft_after, fit_runs.ttft);
  absl::StrAppendFormat(
      &fit.report,
      "\nHeld-out runs (%d): TPOT MAPE %.1f%% -> %.1f%%, TTFT MAPE %.1f%% -> "
      "%.1f%% (%s -> %s); fitted on %d runs (TPOT MAPE %.1f%% -> %.1f%%, "
      "TTFT MAPE %.1f%% -> %.1f%%).\n",
      static_cast<int>(held.tpot.size()), fit.tpot_mape_before,
      fit.tpot_mape_after, fit.ttft_mape_before, fit.ttft_mape_after,
      start.name, name, fit.fit_rows, fit.fit_tpot_mape_before,
      fit.fit_tpot_mape_after, fit.fit_ttft_mape_before,
      fit.fit_ttft_mape_after);
  if (!infeasible.empty()) {
    absl::StrAppend(&fit.report, "Left out (infeasible for the cost model: ",
                    "the batch's KV cache does not fit): ",
                    absl::StrJoin(infeasible, ", "), ".\n");
  }
  return fit;
}

Calibration WithEngineBehaviour(Calibration c, absl::string_view engine) {
  absl::StatusOr<CalibrationProfile> own = FindCalibrationProfile(engine);
  if (!own.ok()) return c;
  const Calibration& e = own->calibration;
  c.kv_reserved_output_fraction = e.kv_reserved_output_fraction;
  c.preempts_on_kv_overflow = e.preempts_on_kv_overflow;
  c.pipeline_request_overhead_seconds = e.pipeline_request_overhead_seconds;
  c.disagg_request_overhead_seconds = e.disagg_request_overhead_seconds;
  c.disagg_prefill_queue_fraction = e.disagg_prefill_queue_fraction;
  return c;
}

absl::StatusOr<std::vector<MeasuredRow>> UserFitRows(
    const std::vector<MeasuredRow>& all, absl::string_view engine,
    absl::string_view model, int fit_rows, const CalibrationProfile& start) {
  std::vector<MeasuredRow> group;
  for (const MeasuredRow& r : all) {
    if (r.engine == engine && r.catalog_model == model) group.push_back(r);
  }
  CalibrationProfile base = start;
  base.engine = std::string(engine);
  ASSIGN_OR_RETURN(std::vector<RowPrediction> predicted,
                   PredictRows(group, {base}));
  std::vector<MeasuredRow> rows;
  for (size_t i = 0; i < group.size(); ++i) {
    if (predicted[i].feasible) rows.push_back(group[i]);
  }
  if (fit_rows <= 0 || static_cast<int>(rows.size()) <= fit_rows) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s:%s: %d predictable rows, need more than %d", engine,
                        model, rows.size(), fit_rows));
  }
  const double stride = static_cast<double>(rows.size()) / fit_rows;
  std::vector<bool> fitted(rows.size(), false);
  for (int i = 0; i < fit_rows; ++i) {
    fitted[static_cast<size_t>(std::floor(i * stride))] = true;
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i].held_out_model = false;
    rows[i].held_out_row = !fitted[i];
  }
  return rows;
}

shardplan::v1::CalibrationParameters CalibrationToProto(const Calibration& c) {
  shardplan::v1::CalibrationParameters p;
  p.set_gemm_efficiency(c.gemm_efficiency);
  p.set_gemm_half_efficiency_tokens(c.gemm_half_efficiency_tokens);
  p.set_hbm_efficiency(c.hbm_efficiency);
  p.set_attention_efficiency(c.attention_efficiency);
  p.set_intra_node_efficiency(c.intra_node_efficiency);
  p.set_inter_node_efficiency(c.inter_node_efficiency);
  p.set_collective_latency_scale(c.collective_latency_scale);
  p.set_decode_step_overhead_s(c.decode_step_overhead_seconds);
  p.set_layer_overhead_s(c.layer_overhead_seconds);
  p.set_prefill_overhead_s(c.prefill_overhead_seconds);
  p.set_prefill_queue_fraction(c.prefill_queue_fraction);
  p.set_ttft_wait_iterations(c.ttft_wait_iterations);
  p.set_ttft_inflight_prefills(c.ttft_inflight_prefills);
  p.set_fp4_dequant_bytes_per_weight(c.fp4_dequant_bytes_per_weight);
  return p;
}

Calibration CalibrationFromProto(
    const shardplan::v1::CalibrationParameters& p) {
  Calibration c;
  c.gemm_efficiency = p.gemm_efficiency();
  c.gemm_half_efficiency_tokens = p.gemm_half_efficiency_tokens();
  c.hbm_efficiency = p.hbm_efficiency();
  c.attention_efficiency = p.attention_efficiency();
  c.intra_node_efficiency = p.intra_node_efficiency();
  c.inter_node_efficiency = p.inter_node_efficiency();
  c.collective_latency_scale = p.collective_latency_scale();
  c.decode_step_overhead_seconds = p.decode_step_overhead_s();
  c.layer_overhead_seconds = p.layer_overhead_s();
  c.prefill_overhead_seconds = p.prefill_overhead_s();
  c.prefill_queue_fraction = p.prefill_queue_fraction();
  c.ttft_wait_iterations = p.ttft_wait_iterations();
  c.ttft_inflight_prefills = p.ttft_inflight_prefills();
  c.fp4_dequant_bytes_per_weight = p.fp4_dequant_bytes_per_weight();
  return c;
}

}  // namespace shardplan::simulator
