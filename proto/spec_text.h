// Spec text: proto3 JSON or YAML (with the same field names) to any proto
// message, and messages back to JSON. The one converter behind the client's
// --model-file/--cluster-file/--current, the simulator's catalog and
// shardplan-sim, and the server's stored rows. Links protobuf, yaml-cpp and
// Abseil only (nlohmann/json is header-only), so the client needs no simulator.
#ifndef SHARDPLAN_PROTO_SPEC_TEXT_H_
#define SHARDPLAN_PROTO_SPEC_TEXT_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace shardplan::spec_text {

// Largest text Parse accepts.
inline constexpr size_t kMaxSpecTextBytes = 16u << 20;
// Deepest YAML nesting, and most YAML nodes visited (aliases can make a small
// document expand exponentially: "billion laughs").
inline constexpr int kMaxYamlDepth = 64;
inline constexpr int64_t kMaxYamlNodes = 200000;

// Parses `text` into `message`, replacing its contents: proto3 JSON when the
// first non-blank character is '{' (its errors read better from the JSON
// parser), YAML otherwise. YAML scalars are typed by the message's schema: a
// string field keeps "42" or "true" as text, numeric fields take numbers, and
// YAML's .inf/.nan become the proto3 JSON strings so that validation names the
// field. `key:` with no value leaves the field unset. Unknown fields are
// rejected.
// INVALID_ARGUMENT, `message` cleared, with a field path or line:
//   "model.spec: unknown field \"numLayerz\"", "malformed JSON: ...",
//   "malformed YAML at line 2, column 3: ...", "spec text is N bytes, ...".
// Thread-safe; O(size of text) under the limits above.
absl::Status Parse(absl::string_view text, google::protobuf::Message* message);

// `message` as proto3 JSON (lowerCamelCase names, defaults omitted); "{}" if
// protobuf refuses (never for our messages).
std::string ToJson(const google::protobuf::Message& message,
                   bool pretty = true);

// YAML text as JSON text without a schema (mapping -> object, sequence ->
// array; plain scalars that read as bool/int/float become JSON booleans and
// numbers, null spellings null, quoted scalars stay strings). INVALID_ARGUMENT
// with the line on a syntax error, or past the depth and node limits.
absl::StatusOr<std::string> YamlToJson(absl::string_view yaml_text);

}  // namespace shardplan::spec_text

#endif  // SHARDPLAN_PROTO_SPEC_TEXT_H_
