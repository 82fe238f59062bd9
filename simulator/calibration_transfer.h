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
  int rows = 0;
  int infeasible = 0;
  double tpot_mape = 0;
  double ttft_mape = 0;
  double tpot_median_ratio = 0;
  double ttft_median_ratio = 0;
  // Share of the feasible rows whose measurement lies inside the p10-p90
  // range a request of the row's regime carries (FindPredictionBand with the
  // compiled-in bands, computed on H100 rows).
  double tpot_in_band = 0;
  double ttft_in_band = 0;
};

struct TransferReport {
  std::vector<TransferGroup> groups;  // sorted by the key
  // Every feasible row of one hardware pooled.
  // engine/model/dtype "*"; then the rows with attention dp > 1 of each
  // hardware (model "attention dp > 1").
  std::vector<TransferGroup> hardware_totals;
  std::string Markdown() const;
};

absl::StatusOr<TransferReport> ComputeTransfer(
    const std::vector<MeasuredRow>& rows,
    const std::vector<CalibrationProfile>& profiles);

}  // namespace shardplan::simulator

#endif  // SHARDPLAN_SIMULATOR_CALIBRATION_TRANSFER_H_
