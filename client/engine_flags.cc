#include "client/engine_flags.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/internal/engine_data.h"
#include "proto/engine_version.h"
#include "proto/enum_names.h"
#include "yaml-cpp/yaml.h"

namespace shardplan::client {
namespace {

std::map<std::string, std::string> StringMap(const YAML::Node& node) {
  std::map<std::string, std::string> out;
  if (!node || !node.IsMap()) return out;
  for (const auto& kv : node) {
    out[kv.first.as<std::string>()] = kv.second.as<std::string>();
  }
  return out;
}

std::vector<std::string> StringList(const YAML::Node& node) {
  std::vector<std::string> out;
  if (!node || !node.IsSequence()) return out;
  for (const auto& item : node) out.push_back(item.as<std::string>());
  return out;
}

ToolFlags ParseTool(const YAML::Node& node, const std::string& command_key) {
  ToolFlags t;
  t.command = node[command_key].as<std::string>("");
  t.sources = StringList(node["sources"]);
  t.flags = StringMap(node["flags"]);
  t.values = StringMap(node["values"]);
  for (std::string& f : StringList(node["knownFlags"])) {
    t.known_flags.insert(std::move(f));
  }
  return t;
}

// yaml-cpp throws on malformed input; the tables are compiled in, so a throw
// is a defect of the repository, reported as an empty table.
std::vector<EngineVersion> ParseEngineFile(Engine engine, const char* text) {
  std::vector<EngineVersion> out;
  try {
    const YAML::Node root = YAML::Load(text);
    const ToolFlags benchmark = ParseTool(root["benchmark"], "command");
    // Optional tables: an engine without them gets none.
    const ToolFlags router =
        root["router"] ? ParseTool(root["router"], "command") : ToolFlags();
    const ToolFlags dynamo =
        root["dynamo"] ? ParseTool(root["dynamo"], "command") : ToolFlags();
    for (const auto& v : root["versions"]) {
      EngineVersion e;
      e.engine = engine;
      e.name = v["name"].as<std::string>();
      e.min = v["min"].as<std::string>("");
      e.max = v["max"].as<std::string>("");
      e.launch = ParseTool(v, "launch");
      e.model_flag = v["model"].as<std::string>("");
      e.env = StringMap(v["env"]);
      e.config = StringMap(v["config"]);
      e.multi_node_wrapper = v["multiNodeWrapper"].as<std::string>("");
      if (v["gates"] && v["gates"].IsMap()) {
        for (const auto& kv : v["gates"]) {
          VersionGate gate;
          gate.since = kv.second["since"].as<std::string>("");
          gate.until = kv.second["until"].as<std::string>("");
          gate.sources = StringList(kv.second["sources"]);
          gate.open_issue = kv.second["openIssue"].as<std::string>("");
          e.gates[kv.first.as<std::string>()] = std::move(gate);
        }
      }
      e.benchmark = benchmark;
      e.router = router;
      e.dynamo = dynamo;
      out.push_back(std::move(e));
    }
  } catch (const std::exception&) {
    out.clear();
  }
  return out;
}

bool InRange(const EngineVersion& e, absl::string_view version) {
  if (!e.min.empty() && CompareVersions(version, e.min) < 0) return false;
  if (!e.max.empty() && CompareVersions(version, e.max) >= 0) return false;
  return true;
}

// Whether `version` ("" = the newest release) lies inside `gate`.
bool InGate(const VersionGate& gate, absl::string_view version) {
  if (version.empty()) return gate.until.empty();
  if (!gate.since.empty() && CompareVersions(version, gate.since) < 0) {
    return false;
  }
  return gate.until.empty() || CompareVersions(version, gate.until) < 0;
}

// `e` as `version` has it: the roles outside their gates dropped.
EngineVersion ApplyGates(EngineVersion e, absl::string_view version) {
  for (const auto& [role, gate] : e.gates) {
    if (InGate(gate, version)) continue;
    const auto flag = e.launch.flags.find(role);
    if (flag != e.launch.flags.end()) {
      e.launch.known_flags.erase(flag->second);
      e.launch.flags.erase(flag);
    }
    e.launch.values.erase(role);
    e.env.erase(role);
    e.config.erase(role);
  }
  return e;
}

}  // namespace

absl::StatusOr<Engine> ParseEngine(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower == "vllm") return Engine::kVllm;
  if (lower == "sglang") return Engine::kSglang;
  if (lower == "trtllm" || lower == "tensorrt-llm") return Engine::kTrtllm;
  return absl::InvalidArgumentError(absl::StrCat(
      "--emit must be vllm, sglang or trtllm, got \"", name, "\""));
}

const char* EngineKey(Engine engine) {
  // Indexed by Engine.
  static constexpr const char* kKeys[] = {"vllm", "sglang", "trtllm"};
  return EnumName(engine, kKeys, "");
}

std::string ToolFlags::Flag(absl::string_view role) const {
  const auto it = flags.find(std::string(role));
  return it == flags.end() ? "" : it->second;
}

std::string ToolFlags::Value(absl::string_view role,
                             absl::string_view fallback) const {
  const auto it = values.find(std::string(role));
  return it == values.end() ? std::string(fallback) : it->second;
}

const std::vector<EngineVersion>& EngineVersions(Engine engine) {
  static const auto* const tables = [] {
    auto* t = new std::map<Engine, std::vector<EngineVersion>>();
    for (int i = 0; i < internal::kNumEngineFiles; ++i) {
      const std::string file = internal::kEngineFiles[i].name;
      const std::string key = file.substr(0, file.find('.'));
      absl::StatusOr<Engine> e = ParseEngine(key);
      if (!e.ok()) continue;
      (*t)[*e] = ParseEngineFile(*e, internal::kEngineFiles[i].text);
    }
    return t;
  }();
  static const std::vector<EngineVersion>* const empty =
      new std::vector<EngineVersion>();
  const auto it = tables->find(engine);
  return it == tables->end() ? *empty : it->second;
}

absl::StatusOr<EngineVersion> FindEngineVersion(Engine engine,
                                                absl::string_view version) {
  const std::vector<EngineVersion>& versions = EngineVersions(engine);
  if (versions.empty()) {
    return absl::InternalError(
        absl::StrCat("no flag table for ", EngineKey(engine)));
  }
  if (version.empty()) return ApplyGates(versions.front(), "");
  for (const EngineVersion& e : versions) {
    if (e.name == version) return ApplyGates(e, e.min);
  }
  const bool numeric = absl::ascii_isdigit(version.front());
  if (numeric) {
    for (const EngineVersion& e : versions) {
      if (InRange(e, version)) return ApplyGates(e, version);
    }
  }
  std::vector<std::string> ranges;
  for (const EngineVersion& e : versions) {
    ranges.push_back(e.max.empty() ? absl::StrCat(">= ", e.min)
                                   : absl::StrCat(e.min, " to <", e.max));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--engine-version: no ", EngineKey(engine), " flag table covers \"",
      version, "\"; checked: ", absl::StrJoin(ranges, ", ")));
}

}  // namespace shardplan::client
