// The calibration harness of the cost model against measured H100 serving
// latency: maps each measured row to a Problem + PlanDims and predicts it, the
// accuracy report (MAPE of TPOT and TTFT per model and engine, fitted and
// held-out rows apart, Spearman rank correlation of TPOT), the fit (coordinate
// descent on log-error, fit rows only), the error-band computation and the
// code generators whose output simulator/calibration.cc ships. Offline tools
// (shardplan-calibrate) and the Calibrate RPC; never on the evaluation path.
//
// The harness does no file I/O: callers pass the CSV text.
#ifndef SHARDPLAN_SIMULATOR_CALIBRATION_HARNESS_H_
#define SHARDPLAN_SIMULATOR_CALIBRATION_HARNESS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/limits.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/calibration.h"
#include "simulator/cost_model.h"
#include "simulator/types.h"

namespace shardplan::simulator {

// --- Measured rows ---

struct MeasuredRow {
  int line = 0;  // 1-based line in the CSV (header = 1)
  std::string id;
  std::string engine;
  std::string engine_version;
  std::string model_path;     // Hugging Face id
  std::string catalog_model;  // our catalog name
  bool fp8 = false;           // FP8 weights (precision / gemm_quant_mode fp8*)
  bool fp4 = false;           // FP4 weights (precision / gemm_quant_mode *fp4)
  int isl = 0;
  int osl = 0;
  // Requests in flight in the measured instance, over all its attention dp
  // ranks (a CSV row: batch_size x attention_dp_size, ParseMeasurements).
  int concurrency = 0;
  int tp = 1;
  int pp = 1;
  int attention_dp = 1;
  int moe_tp = 1;
  int moe_ep = 1;
  // Catalog hardware the row ran on (the CSV's `system` column through
  // CatalogHardwareOfSystem; h100-sxm-80gb when the CSV has none).
  std::string hardware = "h100-sxm-80gb";
  double ttft_seconds = 0;
  double tpot_seconds = 0;
  // The run comes from InferenceMAX's benchmark CI (exported by
  // AIConfigurator with `silicon_data_source` "source_file=YYYY-MM-DD.csv";
  // InferenceMaxExport in calibration_harness_rows.cc): its harness and
  // server settings are known (RowProblem applies them).
  bool inferencemax = false;
  // The day the run was measured ("YYYY-MM-DD" of `measured=` in
  // `silicon_data_source`; empty when the row has none).
  std::string measured_date;
  // The fixed split: the held-out model (Llama-3.1-8B) entirely, and every 4th
  // row of the other models (by data-row index); every row of a
  // validation-only file (ParseMeasurements) is a held-out model's.
  bool held_out_model = false;
  bool held_out_row = false;
  bool held_out() const { return held_out_model || held_out_row; }
};

struct ParsedMeasurements {
  std::vector<MeasuredRow> rows;  // aggregated-serving rows we can model
  // Disaggregated prefill/decode rows (excluded), and "agg" rows that are a
  // disaggregated deployment's GPU count (calibration_harness_rows.cc).
  int skipped_disaggregated = 0;
  int skipped_other = 0;  // rows of unknown models or with missing numbers,
                          // or of hardware without a catalog entry
  // Rows of the held-out hardware (H200, B300, GB300): never read further.
  int skipped_held_out_hardware = 0;
  // Rows of runs that decoded speculatively (MTP) although the row does not
  // say so, known from the exported container image
  // (calibration_harness_rows.cc, SpeculativeRunOfExport).
  int skipped_speculative = 0;
  // Rows of AIConfigurator gap-analysis runs that do not measure steady
  // decoding (calibration_harness_rows.cc, UnsteadyGapAnalysisRun).
  int skipped_unsteady = 0;
  // Rows of AIConfigurator gap-analysis runs whose load was not recorded
  // (calibration_harness_rows.cc, GapAnalysisRunWithoutLoad).
  int skipped_unrecorded_load = 0;
  // Rows faster than any run of their recorded layout and load can be at the
  // datasheet peak (calibration_harness_rows.cc, BelowPeakRateFloors).
  int skipped_below_peak_floors = 0;
  // Rows whose exported layout (tp or attention dp = moe_tp x moe_ep over
  // more GPUs than a node) is read back as the single-node run it measures
  // (ParseMeasurements, calibration_harness_rows.cc).
  int exported_layouts_read_as_node = 0;
  // Rows above limits::kMaxFitConcurrency: predicted and reported apart ("above
  // 256 requests"), never fitted nor in the error bands.
  std::vector<MeasuredRow> high_concurrency_rows;
};

// Parses the calibration CSV (h100_measured_latency.csv format).
// `validation_only`: every row counts as a held-out model's (never fitted;
// h100_validation_latency.csv, models that are not in the fit data).
// INVALID_ARGUMENT on a missing column or a malformed number.
absl::StatusOr<ParsedMeasurements> ParseMeasurements(
    absl::string_view csv_text, bool validation_only = false);

// Workload.concurrency of a row: the requests its instance held
// (MeasuredRow::concurrency), per cost-model replica (a dense model's
// attention dp ranks are independent copies, each with its share).
int RowReplicaConcurrency(const MeasuredRow& row);

// The Problem (catalog model, H100 cluster of tp*pp*attention_dp GPUs, the
// row's workload) and plan (Megatron dims, the row's degrees, batch =
// RowReplicaConcurrency) of a row.
absl::StatusOr<Problem> RowProblem(const MeasuredRow& row);
PlanDims RowPlan(const MeasuredRow& row);

struct RowPrediction {
  double ttft_seconds = 0;
  double tpot_seconds = 0;
  bool feasible = false;
  double prefill_seconds = 0;     // one request's prefill through all stages
  double iteration_seconds = 0;   // the decode iteration TTFT's waits count
  double queue_wait_seconds = 0;  // KV-cache overflow wait, in ttft_seconds
  // Filled by PredictRowsForBands only: the same row as an engine-agnostic
  // request would be predicted (the profiles' TensorRT-LLM constants with the
  // engine-agnostic disaggregated overhead), for the error bars of requests
  // that name no engine.
  double agnostic_ttft_seconds = 0;
  double agnostic_tpot_seconds = 0;
  bool agnostic_feasible = false;
};

// Predicts every row with the profile of its engine (`profiles` indexed like
// CalibrationProfiles(); an engine without a profile uses the first).
absl::StatusOr<std::vector<RowPrediction>> PredictRows(
    const std::vector<MeasuredRow>& rows,
    const std::vector<CalibrationProfile>& profiles);
// The same with the agnostic_* fields too (twice the work; what
// ComputeErrorBands and ComputeBandCoverage need).
absl::StatusOr<std::vector<RowPrediction>> PredictRowsForBands(
    const std::vector<MeasuredRow>& rows,
    const std::vector<CalibrationProfile>& profiles);

// --- Accuracy report ---

struct AccuracyGroup {
  std::string model;   // catalog name
  std::string engine;  // backend
  std::string split;   // "fit", "held-out rows", "held-out model"
  int rows = 0;
  double tpot_mape = 0;  // percent
  double ttft_mape = 0;  // percent
  double tpot_spearman = 0;
};

// Held-out rows of one engine, pooled over models (the per-engine
// targets: TPOT MAPE <= 12%, TTFT <= 25%).
struct EngineAccuracy {
  std::string engine;
  int rows = 0;
  double tpot_mape = 0;  // percent
  double ttft_mape = 0;  // percent
};

struct AccuracyReport {
  std::vector<AccuracyGroup> groups;
  std::vector<EngineAccuracy> engines;  // held-out rows, by engine name
  // Over all held-out rows (held-out model and held-out rows together).
  int held_out_rows = 0;
  double held_out_tpot_mape = 0;
  double held_out_ttft_mape = 0;
  // Worst per-(model, engine) Spearman of predicted vs measured TPOT over
  // held-out rows (groups with at least 8 rows).
  double held_out_min_spearman = 0;
  // Mean per-workload layout ranking agreement: for each (model, engine, isl,
  // osl, concurrency) with >= 3 layouts, Spearman over the layouts; averaged
  // (all rows).
  double layout_spearman_mean = 0;
  int layout_groups = 0;
  int skipped_disaggregated = 0;
  // Markdown table of the groups plus the summary lines.
  std::string Markdown() const;
};

absl::StatusOr<AccuracyReport> ComputeAccuracy(
    const ParsedMeasurements& data,
    const std::vector<CalibrationProfile>& profiles);

// Spearman rank correlation (average ranks for ties); 0 for fewer than 2
// points.
double Spearman(const std::vector<double>& a, const std::vector<double>& b);

// --- Public cross-check ---

// A published H100 maximum-throughput measurement (offline, all requests
// queued), used as a cross-check only (never fitted).
struct PublicThroughputPoint {
  std::string model;  // catalog name
  std::string dtype;  // weights and KV cache
  int tp = 1;
  int ep = 1;
  int isl = 0;
  int osl = 0;
  double output_tokens_per_s = 0;  // whole deployment
  std::string source;              // URL
};
const std::vector<PublicThroughputPoint>& PublicThroughputPoints();

struct CrossCheckRow {
  PublicThroughputPoint point;
  double predicted_tokens_per_s = 0;  // best batch (concurrency 0, no SLO)
  int predicted_batch = 0;
};
absl::StatusOr<std::vector<CrossCheckRow>> CrossCheckPublicThroughput(
    const Calibration& calibration = DefaultCalibration());
// Markdown table of the cross-check.
std::string CrossCheckMarkdown(const std::vector<CrossCheckRow>& rows);

// --- Error bars (simulator/calibration.h holds the shipped table) ---

// Bands from the held-out rows of `rows` and their `predictions` (indexed like
// `rows`, from PredictRowsForBands; infeasible predictions are skipped). Cells
// (engine, moe, dtype), (engine, moe, "*") and ("*", moe, "*"), each kept when
// it has at least kMinBandRows rows, and the engine-agnostic cells
// (kEngineAgnosticBandEngine, moe, dtype) and (kEngineAgnosticBandEngine, moe,
// "*") from the predictions' agnostic_* fields; sorted by (engine, moe, dtype).
// `log_symmetric`: each band is exp(-q) to exp(q) with q the p80 of |log
// measured/predicted|, the central 80% of an error distribution symmetric in
// log space (the cross-hardware bands: ComputeTransferBands).
std::vector<ErrorBand> ComputeErrorBands(
    const std::vector<MeasuredRow>& rows,
    const std::vector<RowPrediction>& predictions, bool log_symmetric = false);

// `bands` as the C++ initialiser lines of CompiledErrorBands().
std::string ErrorBandsCpp(const std::vector<ErrorBand>& bands);

// Coverage: the fraction of held-out rows whose measured/predicted ratio lies
// inside the band their own regime gets (FindPredictionBand, pp = 1,
// single-node).
struct BandCoverage {
  // "all" for every held-out row (each with its engine's profile);
  // kEngineAgnosticBandEngine for every held-out row with the engine-agnostic
  // profile.
  std::string engine;
  int rows = 0;
  double tpot = 0;  // fraction in [0, 1]
  double ttft = 0;
  // Split halves: bands from every other held-out row, coverage on the rest,
  // and the other way round (both halves counted).
  double split_tpot = 0;
  double split_ttft = 0;
};
std::vector<BandCoverage> ComputeBandCoverage(
    const std::vector<MeasuredRow>& rows,
    const std::vector<RowPrediction>& predictions);
// Markdown tables of `bands` and `coverage`.
std::string ErrorBandsMarkdown(const std::vector<ErrorBand>& bands,
                               const std::vector<BandCoverage>& coverage);

// --- Fit ---

struct FitOptions {
  int max_rounds = 60;
  // weight of |log TTFT error| against |log TPOT error|
  double ttft_weight = 1.0;
  // Accept a step only when it worsens neither the fit rows' TPOT MAPE nor
  // their TTFT MAPE (and lowers their weighted sum). Without it the descent
  // may trade one metric for the other: from a profile whose TTFT is far off,
  // 20 rows bought TTFT with TPOT (vllm:llama-3.1-70b from h100-trtllm: TPOT
  // 7.9% -> 42.5% held out). FitProfile sets it; the shipped fit does not
  // (its constants were produced without it).
  bool pareto_steps = false;
  // Fit Calibration::gemm_efficiency. Off for the cross-hardware fit
  // (FitOnHardware): one GPU's serving rows do not identify it (B200's push it
  // to its bound, 0.95, where AIConfigurator's B200 GEMM tables measure
  // 0.28-0.75 of peak), so that fit takes the reference GPU's value.
  bool fit_gemm_efficiency = true;
  // Fit Calibration::prefill_queue_fraction of the engines that prefill the
  // waiting prompts in packed batches ahead of decode
  // (Calibration::prefill_batch_tokens > 0: SGLang). Off for the
  // cross-hardware fit (FitOnHardware), which keeps the wave position its
  // start derives: the fraction prices prompts that arrive together (closed-
  // loop clients with fixed lengths), and a GPU whose SGLang rows are
  // random-length runs (B200: all but 12 of 223) does not measure it.
  bool fit_packed_prefill_queue_fraction = true;
  // Non-empty: fit only this engine's own two constants
  // (prefill_overhead_seconds, prefill_queue_fraction), every shared one and
  // every other profile kept at its start. For a change to one engine's
  // TTFT terms, so the other profiles and the shared fit stay as shipped.
  std::string only_engine_terms;
  // Non-empty: fit only these shared parameters (by the names the tool
  // prints, e.g. collective_latency_scale), every other constant kept at its
  // start. For a change to one cost term, so the constants it interacts with
  // are refitted under it and the rest stay as shipped.
  std::vector<std::string> only_shared_terms;
};

// Fits the shared efficiency and TTFT parameters and, per engine,
// prefill_overhead_seconds and prefill_queue_fraction, on the rows that are not
// held out, starting from `start`. Deterministic (coordinate descent on the
// mean absolute percentage error of TPOT and TTFT with shrinking steps).
absl::StatusOr<std::vector<CalibrationProfile>> FitCalibration(
    const ParsedMeasurements& data,
    const std::vector<CalibrationProfile>& start,
    const FitOptions& options = FitOptions());

// --- Disaggregated rows ---
//
// The mode=disagg rows of AIConfigurator's H100 silicon sample
// (h100_disagg_latency.csv): a prefill and a decode layout, worker counts and
// the concurrency. Each is predicted as a disaggregated PlanDims
// (simulator/disaggregated.h) with the profile of its engine. Nothing is
// fitted on them: every row is a validation row; every 4th (by data-row
// index) is also reported apart as "held-out rows" for a later fit.

// One pool of a disaggregated row (the CSV's prefill_* / decode_* columns).
struct MeasuredPool {
  int batch_size = 0;  // requests per attention dp rank (0: not given)
  int workers = 1;     // instances
  int tp = 1;
  int pp = 1;
  int attention_dp = 1;
  int moe_tp = 1;
  int moe_ep = 1;
  int gpus() const { return tp * pp * attention_dp; }
};

struct DisaggregatedRow {
  int line = 0;
  std::string id;
  std::string engine;
  std::string model_path;
  std::string catalog_model;
  bool fp8 = false;
  int isl = 0;
  int osl = 0;
  int concurrency = 0;  // whole deployment (silicon_concurrency=N)
  MeasuredPool prefill;
  MeasuredPool decode;
  double ttft_seconds = 0;
  double tpot_seconds = 0;
  bool held_out_row = false;
};

struct ParsedDisaggregated {
  std::vector<DisaggregatedRow> rows;
  int skipped = 0;  // unknown model, missing layout or numbers
  // More requests per decode worker than limits::kMaxFitConcurrency: they
  // measure the engine's queue, not the batch (as for aggregated rows).
  int skipped_queueing = 0;
  // One measurement in several rows (same model, engine, ISL, OSL,
  // concurrency, TTFT and TPOT): the repeats of a measurement under one
  // layout (the first row is kept), and every row of a measurement reported
  // under different layouts (its deployment is unknown).
  int skipped_duplicates = 0;
  int skipped_conflicting_layouts = 0;
};

// Parses the mode=disagg rows of a calibration CSV (other rows are ignored).
// DeepSeek-R1 maps to the deepseek-v3 catalog entry (same architecture).
// INVALID_ARGUMENT on a missing column or a malformed number.
absl::StatusOr<ParsedDisaggregated> ParseDisaggregatedRows(
    absl::string_view csv_text);

// The Problem (H100 nodes of 8 holding both pools) and the disaggregated plan
// (Megatron dims; decode batch per attention rank from the row's per-worker
// batch, or the concurrency over the decode workers) of a row.
absl::StatusOr<Problem> DisaggregatedRowProblem(const DisaggregatedRow& row);
PlanDims DisaggregatedRowPlan(const DisaggregatedRow& row);

// Predictions of `rows` (indexed like them), each with its engine's profile.
absl::StatusOr<std::vector<RowPrediction>> PredictDisaggregatedRows(
    const std::vector<DisaggregatedRow>& rows,
    const std::vector<CalibrationProfile>& profiles);

// MAPE of TPOT and TTFT per (model, engine) over all rows ("all rows") and
// over the held-out rows; plus the totals over each split.
struct DisaggregatedAccuracy {
  std::vector<AccuracyGroup> groups;
  int rows = 0;
  double tpot_mape = 0;
  double ttft_mape = 0;
  int held_out_rows = 0;
  double held_out_tpot_mape = 0;
  double held_out_ttft_mape = 0;
  // The other rows, the only ones FitDisaggregatedOverheads looks at.
  int fit_rows = 0;
  double fit_tpot_mape = 0;
  double fit_ttft_mape = 0;
  std::string Markdown() const;
};
absl::StatusOr<DisaggregatedAccuracy> ComputeDisaggregatedAccuracy(
    const std::vector<DisaggregatedRow>& rows,
    const std::vector<CalibrationProfile>& profiles);

// Fits Calibration::disagg_request_overhead_seconds of each engine with rows:
// the value on a 1 ms grid (0 to 20 s, coarse to fine) minimising the TTFT MAPE
// of that engine's non-held-out rows. Returns `profiles` with it set; the
// shipped profiles carry the values this printed
// (shardplan-calibrate --disagg-csv ... --fit).
absl::StatusOr<std::vector<CalibrationProfile>> FitDisaggregatedOverheads(
    const std::vector<DisaggregatedRow>& rows,
    const std::vector<CalibrationProfile>& profiles);

// --- Calibration from a user's measured runs (the Calibrate RPC) ---

// The catalog name of a measured run's model: a catalog name as is, or a
// Hugging Face id the calibration data uses. NOT_FOUND naming the model
// otherwise.
absl::StatusOr<std::string> CatalogModelOfRun(absl::string_view model);

// The split of a user's rows: every third row (index 2, 5, 8, ...) held out,
// the rest fitted (held_out_row set accordingly; held_out_model cleared).
void SplitUserRows(std::vector<MeasuredRow>& rows);

struct ProfileFit {
  CalibrationProfile profile;  // the fitted one, named as asked
  int fit_rows = 0;
  int held_out_rows = 0;
  // Held-out rows, percent: with the starting profile and the fitted one.
  double tpot_mape_before = 0;
  double tpot_mape_after = 0;
  double ttft_mape_before = 0;
  double ttft_mape_after = 0;
  // The same on the fit rows (the fit never makes either worse).
  double fit_tpot_mape_before = 0;
  double fit_tpot_mape_after = 0;
  double fit_ttft_mape_before = 0;
  double fit_ttft_mape_after = 0;
  // Markdown: one line per row (split, measured, before, after).
  std::string report;
};

// Fits `start` (renamed `name`) on the rows of `rows` that are not held out
// and measures both profiles on the held-out ones. The fitted parameters are
// the few physical ones FitCalibration moves, with pareto_steps: no step
// worsens the fit rows' TPOT or TTFT MAPE. Engine behaviour
// (WithEngineBehaviour) is the rows' engine's, also when `start` is another
// engine's profile; "before" means `start` with it.
// INVALID_ARGUMENT when there are no fit or no held-out rows or a row does not
// map to a problem (message names the row's id). Deterministic; cost:
// FitCalibration on the fit rows
// (~60 rounds x parameters x rows cost-model evaluations, well under a
// second for 20 rows).
absl::StatusOr<ProfileFit> FitProfile(const std::string& name,
                                      const std::vector<MeasuredRow>& rows,
                                      const CalibrationProfile& start,
                                      const FitOptions& options = FitOptions());

// The rows of one (engine, catalog model) group of `all` that `start`
// predicts (FitProfile leaves the others out), split as a user with
// `fit_rows` measured runs would have them: every k-th row (k = rows /
// fit_rows, spread over the file's order: workloads and layouts alike) fitted,
// the others held out. INVALID_ARGUMENT when the group has no more than
// `fit_rows` such rows.
absl::StatusOr<std::vector<MeasuredRow>> UserFitRows(
    const std::vector<MeasuredRow>& all, absl::string_view engine,
    absl::string_view model, int fit_rows, const CalibrationProfile& start);

// Calibration <-> its proto form (shardplan.v1.CalibrationParameters).
shardplan::v1::CalibrationParameters CalibrationToProto(const Calibration& c);
Calibration CalibrationFromProto(const shardplan::v1::CalibrationParameters& p);

}  // namespace shardplan::simulator

#endif  // SHARDPLAN_SIMULATOR_CALIBRATION_HARNESS_H_
