// Dotted engine versions ("0.11.2", "0.5.0rc1"), compared the same way by the
// server's capability rules and the client's flag tables. Header-only; Abseil
// only.
#ifndef SHARDPLAN_PROTO_ENGINE_VERSION_H_
#define SHARDPLAN_PROTO_ENGINE_VERSION_H_

#include <algorithm>
#include <cstddef>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace shardplan {

// Leading-digit components of a dotted version ("0.5.0rc1" -> 0, 5, 0).
inline std::vector<long> VersionParts(absl::string_view version) {
  std::vector<long> out;
  for (absl::string_view part : absl::StrSplit(version, '.')) {
    long n = 0;
    size_t i = 0;
    while (i < part.size() && absl::ascii_isdigit(part[i])) {
      n = std::min(n * 10 + (part[i] - '0'), 1000000L);
      ++i;
    }
    out.push_back(n);
    if (i < part.size()) break;  // "0rc1": the rest is a pre-release tag
  }
  return out;
}

// -1, 0, 1 as a < b, ==, >; missing components are 0.
inline int CompareVersions(absl::string_view a, absl::string_view b) {
  const std::vector<long> x = VersionParts(a), y = VersionParts(b);
  for (size_t i = 0; i < std::max(x.size(), y.size()); ++i) {
    const long p = i < x.size() ? x[i] : 0, q = i < y.size() ? y[i] : 0;
    if (p != q) return p < q ? -1 : 1;
  }
  return 0;
}

}  // namespace shardplan

#endif  // SHARDPLAN_PROTO_ENGINE_VERSION_H_
