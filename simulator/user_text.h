// Bounded, escaped renderings of text that came from a request, for error
// messages (QuoteUserText) and log lines (EscapeForLog). Every message that
// echoes a user string goes through these: a client's 100 KB name must not
// come back as 100 KB of gRPC metadata (clients cap it near 8 KiB), and a
// newline in a name must not start a forged log line.
#ifndef SHARDPLAN_SIMULATOR_USER_TEXT_H_
#define SHARDPLAN_SIMULATOR_USER_TEXT_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace shardplan::simulator {

// Bytes of a user string quoted in an error message.
inline constexpr size_t kMaxQuotedBytes = 64;
// Bytes of one request-derived field in a log line.
inline constexpr size_t kMaxLoggedBytes = 256;

// `text` C-escaped (control characters, quotes, backslashes and non-ASCII
// bytes as \n, \", \\, \xNN) and cut after `max_bytes` input bytes; a cut
// string ends in "...(N bytes)" with N the full size. Pure, thread-safe,
// O(max_bytes).
std::string EscapeBounded(absl::string_view text, size_t max_bytes);

// The user string `text` for an error message: "\"<escaped prefix>\"" plus
// "...(N bytes)" when longer than kMaxQuotedBytes.
std::string QuoteUserText(absl::string_view text);

// Any request-derived text (names, error messages that quote them) for a log
// line: escaped so it stays on one line, at most kMaxLoggedBytes input bytes.
std::string EscapeForLog(absl::string_view text);

}  // namespace shardplan::simulator

#endif  // SHARDPLAN_SIMULATOR_USER_TEXT_H_
