// The inference engines' command-line flags by version range, as data
// (client/engines/*.yaml, compiled in): which flag expresses each role (tensor
// parallel size, node rank, ...) for vLLM, SGLang and TensorRT-LLM, the
// benchmark tool of each engine, and the engine's own flag list the emitted
// commands are checked against. Each entry names the documentation pages it
// was checked against.
#ifndef SHARDPLAN_CLIENT_ENGINE_FLAGS_H_
#define SHARDPLAN_CLIENT_ENGINE_FLAGS_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shardplan::client {

enum class Engine { kVllm, kSglang, kTrtllm };

// "vllm", "sglang", "trtllm" (or "tensorrt-llm") → Engine; INVALID_ARGUMENT
// quoting the value otherwise.
absl::StatusOr<Engine> ParseEngine(absl::string_view name);
// "vllm", "sglang", "trtllm".
const char* EngineKey(Engine engine);

// Flags of one tool (an engine's launcher, or its benchmark) for one version
// range.
struct ToolFlags {
  std::string command;                        // e.g. "vllm serve"
  std::vector<std::string> sources;           // documentation pages checked
  std::map<std::string, std::string> flags;   // role → flag
  std::map<std::string, std::string> values;  // role → value to pass
  std::set<std::string> known_flags;  // the tool's flag list (for tests)

  // The flag of `role`, "" when this version has none.
  std::string Flag(absl::string_view role) const;
  // The value to pass for `role`, `fallback` when the table gives none.
  std::string Value(absl::string_view role,
                    absl::string_view fallback = "") const;
  bool Has(absl::string_view role) const { return !Flag(role).empty(); }
};

// Where inside a range a role exists: versions in [since, until) ("" =
// unbounded), with the source that shows each boundary.
struct VersionGate {
  std::string since;
  std::string until;
  std::vector<std::string> sources;
  // An open engine issue a launch using the role must know about (the
  // table's `openIssue`: one line for the script's header); "" = none.
  std::string open_issue;
};

// One version range of one engine.
struct EngineVersion {
  Engine engine = Engine::kVllm;
  std::string name;  // label, e.g. "0.12"
  std::string min;   // inclusive lower bound, e.g. "0.12.0"
  std::string max;   // exclusive upper bound; "" = open
  ToolFlags launch;
  // The flag naming the model (SGLang "--model-path"); "" = positional.
  std::string model_flag;
  std::map<std::string, std::string> env;     // role → environment variable
  std::map<std::string, std::string> config;  // role → LLM API config key
  std::string multi_node_wrapper;  // TensorRT-LLM: trtllm-llmapi-launch
  ToolFlags benchmark;             // shared by all ranges of the engine
  // The request router in front of disaggregated prefill and decode
  // instances; shared by all ranges.
  ToolFlags router;
  // The NVIDIA Dynamo worker of this engine (`--emit dynamo`): its own flags;
  // it passes the engine's launch flags through. Shared by all ranges.
  ToolFlags dynamo;
  // Roles (keys of the launch flags and values, env and config) that exist
  // for only part of the range; FindEngineVersion drops those outside their
  // gate for the version asked for (a gated flag leaves knownFlags too).
  std::map<std::string, VersionGate> gates;
};

// All version ranges of `engine`, newest first. The tables are parsed once;
// a malformed table is a build defect and yields an empty list (the emitter
// test fails).
const std::vector<EngineVersion>& EngineVersions(Engine engine);

// The range that contains `version` ("0.11.2", or a range's own label such as
// "0.12"); "" = the newest range checked. INVALID_ARGUMENT listing the known
// ranges otherwise. The range's gates are applied to `version` (a label: the
// range's first release; "": the newest release, above every bound), so
// roles outside their gate are absent from the result.
absl::StatusOr<EngineVersion> FindEngineVersion(Engine engine,
                                                absl::string_view version);

}  // namespace shardplan::client

#endif  // SHARDPLAN_CLIENT_ENGINE_FLAGS_H_
