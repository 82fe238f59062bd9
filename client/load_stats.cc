#include "client/load_stats.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace shardplan::client {

LatencySummary Summarize(std::vector<double>& samples) {
  LatencySummary s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  const auto rank = [&samples](double q) {
    // Nearest rank: the smallest sample with at least q of all samples at or
    // below it.
    const size_t n = samples.size();
    const size_t index =
        static_cast<size_t>(std::ceil(q * static_cast<double>(n)));
    return samples[std::min(n - 1, index == 0 ? 0 : index - 1)];
  };
  s.count = static_cast<int64_t>(samples.size());
  s.p50_seconds = rank(0.50);
  s.p99_seconds = rank(0.99);
  s.max_seconds = samples.back();
  s.mean_seconds = std::accumulate(samples.begin(), samples.end(), 0.0) /
                   static_cast<double>(samples.size());
  return s;
}

absl::StatusOr<double> ParseProcStatusBytes(absl::string_view status_text,
                                            absl::string_view key) {
  for (absl::string_view line : absl::StrSplit(status_text, '\n')) {
    absl::string_view rest = line;
    if (!absl::ConsumePrefix(&rest, key) || !absl::ConsumePrefix(&rest, ":"))
      continue;
    rest = absl::StripAsciiWhitespace(rest);
    if (!absl::ConsumeSuffix(&rest, "kB")) {
      return absl::InvalidArgumentError(
          absl::StrCat(key, ": expected \"<n> kB\", got \"", line, "\""));
    }
    int64_t kb = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(rest), &kb)) {
      return absl::InvalidArgumentError(
          absl::StrCat(key, ": not a number: \"", line, "\""));
    }
    return static_cast<double>(kb) * 1024.0;
  }
  return absl::NotFoundError(absl::StrCat(key, " not in /proc status"));
}

absl::StatusOr<double> ReadProcStatusBytes(int pid, absl::string_view key) {
  const std::string path = absl::StrCat("/proc/", pid, "/status");
  std::ifstream in(path);
  if (!in)
    return absl::NotFoundError(
        absl::StrCat("cannot read ", path, " (is pid ", pid, " running?)"));
  std::ostringstream text;
  text << in.rdbuf();
  return ParseProcStatusBytes(text.str(), key);
}

}  // namespace shardplan::client
