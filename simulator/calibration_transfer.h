// Transfer across GPU generations: measured serving rows of any catalogued
// GPU (MeasuredRow::hardware, from AIConfigurator's `system` column: h100_sxm,
// b200_sxm, gb200) predicted on their own hardware with a given set of
// calibration profiles, and the error per (hardware, engine, model, weight
// dtype). The profiles shipped
// with this build are fitted on H100 rows only, so their figures on B200 and
// GB200 rows are out of sample: the "fit H100 -> test Blackwell" direction of
// the leave-one-hardware-out check.
//
// Measurements of the held-out hardware (H200, B300, GB300) are refused by
// ParseMeasurements: no path of the harness predicts, fits or reports them.
//
// No file I/O: callers pass the CSV text.
#ifndef SHARDPLAN_SIMULATOR_CALIBRATION_TRANSFER_H_
#define SHARDPLAN_SIMULATOR_CALIBRATION_TRANSFER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "simulator/calibration.h"
#include "simulator/calibration_harness.h"
#include "simulator/types.h"

namespace shardplan::simulator {

// The catalog hardware of a measured run: a catalog hardware name as is, or
// AIConfigurator's `system` name ("h100_sxm" -> "h100-sxm-80gb", "b200_sxm"
// -> "b200-sxm-180gb", "gb200" -> "gb200-nvl72", and h200_sxm, b300_sxm,
// gb300). NOT_FOUND naming the accepted names otherwise.
absl::StatusOr<std::string> CatalogHardwareOfRun(absl::string_view name);

// H200, B300 and GB300: the hardware the project's predictions are checked on
// outside the repository. The harness never reads their rows (a user's own
// runs on them may still calibrate a user profile).
bool IsHeldOutHardware(absl::string_view catalog_name);

// Error of one (hardware, engine, model, dtype) group. Ratios are
// predicted / measured; MAPE in percent over the feasible predictions.
struct TransferGroup {
  std::string hardware;
  std::string engine;
  std::string model;
  std::string dtype;  // "bf16", "fp8", "fp4"
  bool moe = false;
  int rows = 0;
  int infeasible = 0;
  double tpot_mape = 0;
  double ttft_mape = 0;
  double tpot_median_ratio = 0;
  double ttft_median_ratio = 0;
  // Share of the feasible rows whose measurement lies inside the p10-p90
  // range a request of the row's regime carries (FindPredictionBand with the
  // compiled-in bands on the profiles' own hardware, the transfer bands
  // ComputeTransfer is given on any other).
  double tpot_in_band = 0;
  double ttft_in_band = 0;
};

struct TransferReport {
  std::vector<TransferGroup> groups;  // sorted by the key
  // Every feasible row of one hardware pooled.
  // engine/model/dtype "*"; then the rows with attention dp > 1 of each
  // hardware (model "attention dp > 1").
  std::vector<TransferGroup> hardware_totals;
  // Per hardware, engine and model kind (model "dense" or "MoE", dtype "*"):
  // where the bands' coverage is read.
  std::vector<TransferGroup> kind_totals;
  // groups and hardware_totals (the documented tables).
  std::string Markdown() const;
  // Coverage of kind_totals and hardware_totals.
  std::string CoverageMarkdown() const;
};

// `profiles` were fitted on `fit_hardware`'s rows: the other rows carry
// `transfer_bands`, that hardware's rows the compiled-in ones.
absl::StatusOr<TransferReport> ComputeTransfer(
    const std::vector<MeasuredRow>& rows,
    const std::vector<CalibrationProfile>& profiles,
    absl::string_view fit_hardware = kProfileFitHardware,
    const std::vector<ErrorBand>& transfer_bands = CompiledTransferBands());

// One measurement per run. AIConfigurator's Blackwell export repeats runs
// (the same model, engine, lengths, concurrency and measured TTFT and TPOT
// to the 0.01 ms the gap-analysis files print): under one layout the first row
// is kept; a measurement reported under several layouts (e.g. 8 GPUs with ep 8
// and the same numbers as 64 GPUs with moe_tp 8 x moe_ep 8) has no known
// deployment and every copy is dropped, as ParseDisaggregatedRows does. A copy
// of an InferenceMAX run (MeasuredRow::inferencemax) in AIConfigurator's own
// database dumps, with the same layout and both latencies, is that run: it is
// read with InferenceMAX's harness and server settings, whichever copy is kept.
// A run that does not measure steady serving is dropped too: an InferenceMAX
// SGLang run measured before its harness warmed the server up whose first
// wave of prompts spans more than one chunked-prefill step
// (UnwarmedChunkedFirstWave in calibration_transfer.cc: its means carry the
// first chunked prefill's one-off stall).
struct DedupedRows {
  std::vector<MeasuredRow> rows;
  int repeats = 0;
  int conflicting_layouts = 0;
  int copies_read_as_inferencemax = 0;
  int unwarmed_first_waves = 0;
};
DedupedRows DropRepeatedRuns(const std::vector<MeasuredRow>& rows);

// The rows of `rows` that `profiles` predict (a valid plan that fits memory;
// the others are layouts the plan rules refuse, counted as infeasible).
std::vector<MeasuredRow> PredictableRows(
    const std::vector<MeasuredRow>& rows,
    const std::vector<CalibrationProfile>& profiles);

// The fit options of the other direction (the CLI's --fit-on and the test
// use the same, so the documented figures are reproducible).
FitOptions TransferFitOptions();

// The other direction of the check: the shipped fit (FitCalibration from the
// struct defaults, each engine keeping its KV-cache admission) on the rows of
// `hardware` only, all of them fitted. Deterministic.
absl::StatusOr<std::vector<CalibrationProfile>> FitOnHardware(
    const std::vector<MeasuredRow>& rows, absl::string_view hardware,
    const FitOptions& options = TransferFitOptions());

// The hardware of the other fold of the cross-hardware bands: B200 (GB200's
// 37 aggregated rows of catalogued models are too few: 19 are layouts the
// plan rules refuse and 15 contradict each other).
inline constexpr char kTransferBandHardware[] = "b200-sxm-180gb";

// Cross-hardware error bands, two folds. Each fold's residuals are
// measured / predicted of one GPU's rows predicted by profiles fitted on the
// other GPU only, so every residual is out of sample for its hardware:
// - `profiles` (fitted on kProfileFitHardware) on the kTransferBandHardware
//   rows;
// - FitOnHardware(rows, kTransferBandHardware) on the kProfileFitHardware
//   rows.
// Bands are ComputeErrorBands(..., log_symmetric = true): which way a
// transfer errs depends on its direction (a term fitted on a slower GPU
// over-predicts a faster one and the reverse), unknown for a prediction on
// an arbitrary GPU, so each band is the central 80% of a log-symmetric error
// distribution. Each fold's bands are scored on the other fold's rows (held
// out); the shipped bands (CompiledTransferBands) pool both folds' residuals.
struct TransferBands {
  std::vector<ErrorBand> from_profile_fit;  // kProfileFitHardware profiles
  std::vector<ErrorBand> from_band_hw_fit;  // kTransferBandHardware profiles
  std::vector<ErrorBand> pooled;
  // The kTransferBandHardware fit (FitOnHardware, TransferFitOptions()).
  std::vector<CalibrationProfile> band_hw_profiles;
  // Held-out coverage: the kProfileFitHardware rows predicted by
  // band_hw_profiles with from_profile_fit, and the kTransferBandHardware
  // rows predicted by `profiles` with from_band_hw_fit.
  TransferReport from_profile_fit_scored;
  TransferReport from_band_hw_fit_scored;
};
// INVALID_ARGUMENT unless `rows` hold rows of both GPUs.
absl::StatusOr<TransferBands> ComputeTransferBands(
    const std::vector<MeasuredRow>& rows,
    const std::vector<CalibrationProfile>& profiles);

}  // namespace shardplan::simulator

#endif  // SHARDPLAN_SIMULATOR_CALIBRATION_TRANSFER_H_
