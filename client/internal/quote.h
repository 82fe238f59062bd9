// Text from an input file quoted in a CLI error message: a short prefix,
// escaped, so that a 5 MB field does not fill stderr and an escape sequence
// in a file cannot drive the terminal. The server quotes request text the
// same way (64 bytes, escaped, the full size when cut).
#ifndef SHARDPLAN_CLIENT_INTERNAL_QUOTE_H_
#define SHARDPLAN_CLIENT_INTERNAL_QUOTE_H_

#include <cstddef>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace shardplan::client::internal {

inline constexpr size_t kMaxQuotedInputBytes = 64;

// "\"<C-escaped prefix>\"", plus "...(N bytes)" when `text` is longer than
// kMaxQuotedInputBytes. Control characters and non-ASCII bytes come out as
// \xNN, so the result is printable ASCII.
inline std::string QuoteInputText(absl::string_view text) {
  const absl::string_view prefix = text.substr(0, kMaxQuotedInputBytes);
  std::string out = absl::StrCat("\"", absl::CHexEscape(prefix), "\"");
  if (prefix.size() < text.size()) {
    absl::StrAppend(&out, "...(", text.size(), " bytes)");
  }
  return out;
}

}  // namespace shardplan::client::internal

#endif  // SHARDPLAN_CLIENT_INTERNAL_QUOTE_H_
