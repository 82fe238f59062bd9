#include "simulator/user_text.h"

#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace shardplan::simulator {

std::string EscapeBounded(absl::string_view text, size_t max_bytes) {
  // Cut before escaping so the cost is bounded by max_bytes, not by the input;
  // a cut inside a UTF-8 sequence is harmless because high bytes are escaped.
  if (text.size() <= max_bytes) return absl::CHexEscape(text);
  return absl::StrCat(absl::CHexEscape(text.substr(0, max_bytes)), "...(",
                      text.size(), " bytes)");
}

std::string QuoteUserText(absl::string_view text) {
  if (text.size() <= kMaxQuotedBytes) {
    return absl::StrCat("\"", absl::CHexEscape(text), "\"");
  }
  return absl::StrCat("\"", absl::CHexEscape(text.substr(0, kMaxQuotedBytes)),
                      "\"...(", text.size(), " bytes)");
}

std::string EscapeForLog(absl::string_view text) {
  return EscapeBounded(text, kMaxLoggedBytes);
}

}  // namespace shardplan::simulator
