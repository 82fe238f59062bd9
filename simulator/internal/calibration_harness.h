// Helpers the calibration harness's files share. Not part of the public API.
#ifndef SHARDPLAN_SIMULATOR_INTERNAL_CALIBRATION_HARNESS_H_
#define SHARDPLAN_SIMULATOR_INTERNAL_CALIBRATION_HARNESS_H_

#include <vector>

#include "absl/strings/string_view.h"

namespace shardplan::simulator::internal {

// Our catalog name of a Hugging Face model id of the calibration data;
// nullptr when the calibration does not know it.
const char* CatalogNameFor(absl::string_view model_path);

// Mean absolute percentage error of `pred` against `meas` (same size), in
// percent; 0 when empty.
double Mape(const std::vector<double>& pred, const std::vector<double>& meas);

}  // namespace shardplan::simulator::internal

#endif  // SHARDPLAN_SIMULATOR_INTERNAL_CALIBRATION_HARNESS_H_
