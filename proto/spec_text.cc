#include "proto/spec_text.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"
#include "yaml-cpp/yaml.h"

namespace shardplan::spec_text {
namespace {

namespace pb = ::google::protobuf;
using ::nlohmann::json;

// Bytes of user text echoed in a message: field names are short, and a parser
// message quoting a 100 KB token must not come back as 100 KB of gRPC metadata.
constexpr size_t kMaxQuotedNameBytes = 64;
constexpr size_t kMaxParserMessageBytes = 256;

// `text` C-escaped (one line, no control bytes), cut after `max_bytes` input
// bytes with the full size noted.
std::string Bounded(absl::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return absl::CHexEscape(text);
  return absl::StrCat(absl::CHexEscape(text.substr(0, max_bytes)), "...(",
                      text.size(), " bytes)");
}

// The JSON parser reports field errors as "(model.spec.num_layers): invalid
// value ..."; that becomes "model.spec.num_layers: invalid value ..." (a
// top-level field's path is the message's type name), and anything else
// (syntax errors) is prefixed with `what`.
constexpr absl::string_view kUnknownField = ": Cannot find field.";

absl::Status FromProtobufStatus(const pb::util::Status& status,
                                absl::string_view what,
                                const pb::Descriptor* root) {
  if (status.ok()) return absl::OkStatus();
  const std::string message(status.message().data(), status.message().size());
  const size_t close = message.find(')');
  if (!message.empty() && message.front() == '(' &&
      close != std::string::npos) {
    std::string path = message.substr(1, close - 1);
    if (path.empty()) path = root->name();
    std::string rest(
        absl::StripLeadingAsciiWhitespace(message.substr(close + 1)));
    // "(model.spec) numLayerz: Cannot find field."
    if (absl::EndsWith(rest, kUnknownField)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: unknown field \"%s\"", path,
          Bounded(rest.substr(0, rest.size() - kUnknownField.size()),
                  kMaxQuotedNameBytes)));
    }
    if (absl::StartsWith(rest, ": ")) rest = rest.substr(2);
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", rest));
  }
  // A top-level unknown field comes without a path: "modle: Cannot find field."
  if (absl::EndsWith(message, kUnknownField)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: unknown field \"%s\"", root->name(),
        Bounded(message.substr(0, message.size() - kUnknownField.size()),
                kMaxQuotedNameBytes)));
  }
  return absl::InvalidArgumentError(absl::StrCat(what, ": ", message));
}

// A yaml-cpp exception with its position when it has one.
absl::Status FromYamlException(const YAML::Exception& e) {
  if (e.mark.is_null()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "malformed YAML: ", Bounded(e.msg, kMaxParserMessageBytes)));
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "malformed YAML at line %d, column %d: %s", e.mark.line + 1,
      e.mark.column + 1, Bounded(e.msg, kMaxParserMessageBytes)));
}

// Tag "!" marks a quoted (non-plain) scalar.
bool IsQuoted(const YAML::Node& node) { return node.Tag() == "!"; }

// YAML 1.2 core schema booleans.
bool ParseYamlBool(const std::string& s, bool* out) {
  if (s == "true" || s == "True" || s == "TRUE") {
    *out = true;
    return true;
  }
  if (s == "false" || s == "False" || s == "FALSE") {
    *out = false;
    return true;
  }
  return false;
}

// A plain YAML scalar as a JSON number when it reads as one; YAML's .inf/.nan
// spellings become the proto3 JSON strings "Infinity"/"NaN" (so that
// validation, not the parser, rejects them with the field name).
bool PlainScalarToNumber(const std::string& s, json* out) {
  if (s.empty()) return false;
  if (s == ".inf" || s == ".Inf" || s == ".INF" || s == "+.inf" ||
      s == "+.Inf" || s == "+.INF") {
    *out = "Infinity";
    return true;
  }
  if (s == "-.inf" || s == "-.Inf" || s == "-.INF") {
    *out = "-Infinity";
    return true;
  }
  if (s == ".nan" || s == ".NaN" || s == ".NAN") {
    *out = "NaN";
    return true;
  }
  const char* begin = s.c_str();
  char* end = nullptr;
  errno = 0;
  const long long i = std::strtoll(begin, &end, 10);
  if (end != begin && *end == '\0' && errno == 0) {
    *out = static_cast<int64_t>(i);
    return true;
  }
  errno = 0;
  const double d = std::strtod(begin, &end);
  if (end != begin && *end == '\0') {
    if (std::isnan(d)) {
      *out = "NaN";
    } else if (std::isinf(d)) {
      *out = d > 0 ? "Infinity" : "-Infinity";
    } else {
      *out = d;
    }
    return true;
  }
  return false;
}

// Bounds the walk: nesting depth, and the number of nodes visited.
absl::Status Visit(int depth, int64_t* budget) {
  if (depth > kMaxYamlDepth) {
    return absl::InvalidArgumentError(absl::StrCat(
        "malformed YAML: nested deeper than ", kMaxYamlDepth, " levels"));
  }
  if (--*budget < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed YAML: expands to more than ", kMaxYamlNodes,
                     " nodes (through aliases?)"));
  }
  return absl::OkStatus();
}

// Mapping keys are names: "? [a, b]: 1" has no JSON form.
absl::Status CheckPlainKey(const YAML::Node& key) {
  if (key.IsScalar()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "line %d: mapping keys must be plain names", key.Mark().line + 1));
}

// Schema-free conversion (also for keys the schema does not know, so that the
// JSON parser can report them).
absl::StatusOr<json> YamlToJsonGeneric(const YAML::Node& node, int depth,
                                       int64_t* budget) {
  if (absl::Status s = Visit(depth, budget); !s.ok()) return s;
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return json(nullptr);
    case YAML::NodeType::Scalar: {
      const std::string& s = node.Scalar();
      if (IsQuoted(node)) return json(s);
      bool b = false;
      if (ParseYamlBool(s, &b)) return json(b);
      json number;
      if (PlainScalarToNumber(s, &number)) return number;
      return json(s);
    }
    case YAML::NodeType::Sequence: {
      json array = json::array();
      for (const YAML::Node& child : node) {
        absl::StatusOr<json> value =
            YamlToJsonGeneric(child, depth + 1, budget);
        if (!value.ok()) return value.status();
        array.push_back(*std::move(value));
      }
      return array;
    }
    case YAML::NodeType::Map: {
      json object = json::object();
      for (const auto& kv : node) {
        if (absl::Status s = CheckPlainKey(kv.first); !s.ok()) return s;
        absl::StatusOr<json> value =
            YamlToJsonGeneric(kv.second, depth + 1, budget);
        if (!value.ok()) return value.status();
        object[kv.first.Scalar()] = *std::move(value);
      }
      return object;
    }
  }
  return json(nullptr);
}

absl::StatusOr<json> YamlToJsonForMessage(const YAML::Node& node,
                                          const pb::Descriptor* desc, int depth,
                                          int64_t* budget);

// Converts one (non-repeated) value of `field`. String fields keep the scalar
// text even when it looks like a number; numeric fields get numbers; anything
// that does not fit is passed through as a string so that the JSON parser
// reports it with the field name.
absl::StatusOr<json> YamlFieldValue(const YAML::Node& node,
                                    const pb::FieldDescriptor* field, int depth,
                                    int64_t* budget) {
  if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
    return YamlToJsonForMessage(node, field->message_type(), depth + 1, budget);
  }
  if (!node.IsScalar()) return YamlToJsonGeneric(node, depth + 1, budget);
  if (absl::Status s = Visit(depth, budget); !s.ok()) return s;
  const std::string& s = node.Scalar();
  switch (field->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_STRING:
    case pb::FieldDescriptor::CPPTYPE_ENUM:
      return json(s);
    case pb::FieldDescriptor::CPPTYPE_BOOL: {
      bool b = false;
      if (!IsQuoted(node) && ParseYamlBool(s, &b)) return json(b);
      return json(s);
    }
    default: {
      json number;
      if (!IsQuoted(node) && PlainScalarToNumber(s, &number)) return number;
      return json(s);
    }
  }
}

absl::StatusOr<json> YamlToJsonForMessage(const YAML::Node& node,
                                          const pb::Descriptor* desc, int depth,
                                          int64_t* budget) {
  if (absl::Status s = Visit(depth, budget); !s.ok()) return s;
  if (!node.IsMap()) return YamlToJsonGeneric(node, depth + 1, budget);
  json object = json::object();
  for (const auto& kv : node) {
    if (absl::Status s = CheckPlainKey(kv.first); !s.ok()) return s;
    const std::string key = kv.first.Scalar();
    const pb::FieldDescriptor* field = desc->FindFieldByName(key);
    if (field == nullptr) field = desc->FindFieldByCamelcaseName(key);
    if (field == nullptr) {
      absl::StatusOr<json> value =
          YamlToJsonGeneric(kv.second, depth + 1, budget);
      if (!value.ok()) return value.status();
      object[key] = *std::move(value);
      continue;
    }
    if (kv.second.IsNull()) continue;  // `key:` with no value = unset
    if (field->is_repeated() && kv.second.IsSequence()) {
      json array = json::array();
      for (const YAML::Node& child : kv.second) {
        absl::StatusOr<json> value =
            YamlFieldValue(child, field, depth, budget);
        if (!value.ok()) return value.status();
        array.push_back(*std::move(value));
      }
      object[key] = std::move(array);
    } else {
      absl::StatusOr<json> value =
          YamlFieldValue(kv.second, field, depth, budget);
      if (!value.ok()) return value.status();
      object[key] = *std::move(value);
    }
  }
  return object;
}

// Loads `text` and hands the root to `convert` (root -> StatusOr<json>);
// yaml-cpp and nlohmann::json report errors by throwing, and nothing escapes.
template <typename Convert>
absl::StatusOr<std::string> LoadYamlAsJson(absl::string_view text,
                                           Convert convert) {
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    absl::StatusOr<json> j = convert(root);
    if (!j.ok()) return j.status();
    return j->dump();
  } catch (const YAML::Exception& e) {
    return FromYamlException(e);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(
        "malformed YAML: ", Bounded(e.what(), kMaxParserMessageBytes)));
  }
}

}  // namespace

absl::Status Parse(absl::string_view text, google::protobuf::Message* message) {
  message->Clear();
  if (text.size() > kMaxSpecTextBytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("spec text is %d bytes, at most %d accepted",
                        text.size(), kMaxSpecTextBytes));
  }
  const absl::string_view stripped = absl::StripLeadingAsciiWhitespace(text);
  pb::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  if (!stripped.empty() && stripped.front() == '{') {
    const pb::util::Status status = pb::util::JsonStringToMessage(
        pb::StringPiece(text.data(), text.size()), message, options);
    if (!status.ok()) message->Clear();
    return FromProtobufStatus(status, "malformed JSON",
                              message->GetDescriptor());
  }
  const pb::Descriptor* desc = message->GetDescriptor();
  absl::StatusOr<std::string> json_text = LoadYamlAsJson(
      text, [desc](const YAML::Node& root) -> absl::StatusOr<json> {
        if (root.IsNull()) return json::object();
        if (!root.IsMap()) {
          return absl::InvalidArgumentError(
              "malformed spec: expected a JSON object or a YAML mapping at "
              "the top level");
        }
        int64_t budget = kMaxYamlNodes;
        return YamlToJsonForMessage(root, desc, 0, &budget);
      });
  if (!json_text.ok()) return json_text.status();
  const pb::util::Status status =
      pb::util::JsonStringToMessage(*json_text, message, options);
  if (!status.ok()) message->Clear();
  return FromProtobufStatus(status, "invalid spec", desc);
}

std::string ToJson(const google::protobuf::Message& message, bool pretty) {
  pb::util::JsonPrintOptions options;
  options.add_whitespace = pretty;
  options.preserve_proto_field_names = false;
  std::string out;
  const pb::util::Status status =
      pb::util::MessageToJsonString(message, &out, options);
  if (!status.ok()) return "{}";
  return out;
}

absl::StatusOr<std::string> YamlToJson(absl::string_view yaml_text) {
  if (yaml_text.size() > kMaxSpecTextBytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("YAML text is %d bytes, at most %d accepted",
                        yaml_text.size(), kMaxSpecTextBytes));
  }
  return LoadYamlAsJson(yaml_text, [](const YAML::Node& root) {
    int64_t budget = kMaxYamlNodes;
    return YamlToJsonGeneric(root, 0, &budget);
  });
}

}  // namespace shardplan::spec_text
