// Field checks shared by the spec validators (spec_from_proto_*.cc): each
// returns INVALID_ARGUMENT naming the field path and the value.
#ifndef SHARDPLAN_SIMULATOR_INTERNAL_SPEC_CHECKS_H_
#define SHARDPLAN_SIMULATOR_INTERNAL_SPEC_CHECKS_H_

#include <cmath>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace shardplan::simulator::internal {

inline std::string Path(absl::string_view prefix, absl::string_view field) {
  if (prefix.empty()) return std::string(field);
  return absl::StrCat(prefix, ".", field);
}

inline absl::Status CheckRange(int64_t value, absl::string_view path,
                               int64_t min, int64_t max) {
  if (value < min) {
    if (min == 1)
      return absl::InvalidArgumentError(
          absl::StrCat(path, " must be > 0, got ", value));
    return absl::InvalidArgumentError(
        absl::StrCat(path, " must be >= ", min, ", got ", value));
  }
  if (value > max) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " must be <= ", max, ", got ", value));
  }
  return absl::OkStatus();
}

inline std::string FormatDouble(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return absl::StrFormat("%g", v);
}

// A finite double in [min, max]; `positive` additionally rejects 0.
inline absl::Status CheckDouble(double value, absl::string_view path,
                                double min, double max, bool positive) {
  if (!std::isfinite(value)) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, " must be a finite number, got ", FormatDouble(value)));
  }
  if (positive && value <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " must be > 0, got ", FormatDouble(value)));
  }
  if (value < min) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " must be >= ", FormatDouble(min), ", got ",
                     FormatDouble(value)));
  }
  if (value > max) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " must be <= ", FormatDouble(max), ", got ",
                     FormatDouble(value)));
  }
  return absl::OkStatus();
}

}  // namespace shardplan::simulator::internal

#endif  // SHARDPLAN_SIMULATOR_INTERNAL_SPEC_CHECKS_H_
