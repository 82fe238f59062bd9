// Statistics for `shardplan-load`: latency percentiles and the server's memory
// from /proc/<pid>/status.
#ifndef SHARDPLAN_CLIENT_LOAD_STATS_H_
#define SHARDPLAN_CLIENT_LOAD_STATS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shardplan::client {

// Latency summary of one call kind, in seconds.
struct LatencySummary {
  int64_t count = 0;
  double p50_seconds = 0;
  double p99_seconds = 0;
  double max_seconds = 0;
  double mean_seconds = 0;
};

// Summarises `samples` (sorted in place). Nearest-rank percentiles; all zero
// when empty.
LatencySummary Summarize(std::vector<double>& samples);

// The value of `key` ("VmHWM", "VmRSS") in the text of /proc/<pid>/status, in
// bytes. NOT_FOUND when the key is missing, INVALID_ARGUMENT when its value is
// not "<n> kB".
absl::StatusOr<double> ParseProcStatusBytes(absl::string_view status_text,
                                            absl::string_view key);

// Reads /proc/<pid>/status and returns ParseProcStatusBytes(text, key).
absl::StatusOr<double> ReadProcStatusBytes(int pid, absl::string_view key);

}  // namespace shardplan::client

#endif  // SHARDPLAN_CLIENT_LOAD_STATS_H_
