// proto/spec_text.h: JSON and YAML reach the same message, YAML scalars take
// the schema's types, and every error names a line or a field path.
#include "proto/spec_text.h"

#include <cmath>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardplan/v1/shardplan.pb.h"

namespace shardplan::spec_text {
namespace {

using ::shardplan::v1::ClusterSpec;
using ::shardplan::v1::EvaluateRequest;
using ::shardplan::v1::ModelSpec;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(SpecTextLibraryTest, JsonAndYamlGiveTheSameMessage) {
  ModelSpec from_json;
  ModelSpec from_yaml;
  ASSERT_TRUE(Parse(R"({"name": "m", "hiddenSize": 64, "numLayers": 2,
                        "tieWordEmbeddings": true})",
                    &from_json)
                  .ok());
  // snake_case and lowerCamelCase keys both work in YAML.
  ASSERT_TRUE(Parse("name: m\nhidden_size: 64\nnumLayers: 2\n"
                    "tieWordEmbeddings: true\n",
                    &from_yaml)
                  .ok());
  EXPECT_EQ(from_json.SerializeAsString(), from_yaml.SerializeAsString());
  EXPECT_EQ(from_yaml.hidden_size(), 64);
  EXPECT_TRUE(from_yaml.tie_word_embeddings());
}

TEST(SpecTextLibraryTest, YamlScalarsTakeTheFieldsTypes) {
  ModelSpec spec;
  // A string field keeps text that reads as a number or a boolean; a numeric
  // field takes a quoted number.
  ASSERT_TRUE(Parse("name: 1.5\nfamily: true\nhiddenSize: '64'\n", &spec).ok());
  EXPECT_EQ(spec.name(), "1.5");
  EXPECT_EQ(spec.family(), "true");
  EXPECT_EQ(spec.hidden_size(), 64);
}

TEST(SpecTextLibraryTest, EmptyValueLeavesTheFieldUnsetAndEmptyTextIsEmpty) {
  ModelSpec spec;
  ASSERT_TRUE(Parse("name:\nnumLayers: 3\n", &spec).ok());
  EXPECT_EQ(spec.name(), "");
  EXPECT_EQ(spec.num_layers(), 3);
  ASSERT_TRUE(Parse("", &spec).ok());
  EXPECT_EQ(spec.num_layers(), 0);  // replaced, not merged
}

TEST(SpecTextLibraryTest, YamlInfinityBecomesTheProtoJsonSpelling) {
  ClusterSpec cluster;
  ASSERT_TRUE(Parse("hardwareSpec: {hbmBytes: .inf}\n", &cluster).ok());
  EXPECT_TRUE(std::isinf(cluster.hardware_spec().hbm_bytes()));
}

TEST(SpecTextLibraryTest, UnknownFieldsNameTheirPath) {
  EvaluateRequest request;
  absl::Status status = Parse("model:\n  spec:\n    numLayerz: 4\n", &request);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "model.spec: unknown field \"numLayerz\"");
  // The same from JSON, and at the top level the message's type names it.
  status = Parse(R"({"model": {"spec": {"numLayerz": 4}}})", &request);
  EXPECT_EQ(status.message(), "model.spec: unknown field \"numLayerz\"");
  status = Parse("modle: {}\n", &request);
  EXPECT_EQ(status.message(), "EvaluateRequest: unknown field \"modle\"");
}

TEST(SpecTextLibraryTest, WrongTypeNamesTheField) {
  EvaluateRequest request;
  const absl::Status status = Parse("cluster: {numGpus: many}\n", &request);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), StartsWith("cluster.num_gpus"));
}

TEST(SpecTextLibraryTest, SyntaxErrorsNameLineAndColumnAndClearTheMessage) {
  ModelSpec spec;
  spec.set_name("before");
  absl::Status status = Parse("name: a\nnumLayers: [1, 2\n", &spec);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              StartsWith("malformed YAML at line 3, column"));
  EXPECT_EQ(spec.name(), "");
  status = Parse("{\"name\": ", &spec);
  EXPECT_THAT(std::string(status.message()), StartsWith("malformed JSON: "));
  status = Parse("- a\n- b\n", &spec);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("YAML mapping at the top level"));
}

TEST(SpecTextLibraryTest, AbsurdInputIsRefused) {
  ModelSpec spec;
  EXPECT_THAT(
      std::string(
          Parse(std::string(kMaxSpecTextBytes + 1, ' '), &spec).message()),
      HasSubstr("at most"));
  std::string deep = "name: x\nfamily: ";
  for (int i = 0; i <= kMaxYamlDepth; ++i) deep += "[";
  for (int i = 0; i <= kMaxYamlDepth; ++i) deep += "]";
  EXPECT_THAT(std::string(Parse(deep, &spec).message()),
              HasSubstr("nested deeper"));
  // Aliases that expand past the node budget ("billion laughs").
  std::string laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  char prev = 'a';
  for (char c = 'b'; c <= 'h'; ++c) {
    laughs += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) laughs += std::string(i ? ", *" : "*") + prev;
    laughs += "]\n";
    prev = c;
  }
  EXPECT_THAT(std::string(YamlToJson(laughs).status().message()),
              HasSubstr("more than 200000 nodes"));
}

TEST(SpecTextLibraryTest, ToJsonRoundTrips) {
  ModelSpec spec;
  spec.set_name("m");
  spec.set_num_layers(7);
  EXPECT_EQ(ToJson(spec, /*pretty=*/false), R"({"name":"m","numLayers":7})");
  ModelSpec back;
  ASSERT_TRUE(Parse(ToJson(spec), &back).ok());
  EXPECT_EQ(back.SerializeAsString(), spec.SerializeAsString());
}

TEST(SpecTextYamlToJsonTest, ScalarsKeepTheirTypes) {
  auto json = YamlToJson(
      "a: 1\nb: 2.5\nc: true\nd: hello\ne: '42'\nf: [1, x]\ng: ~\nh: -3\ni: "
      "1e3\n");
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ(
      *json,
      R"({"a":1,"b":2.5,"c":true,"d":"hello","e":"42","f":[1,"x"],"g":null,"h":-3,)"
      R"("i":1000.0})");
}

TEST(SpecTextYamlToJsonTest, SyntaxErrorNamesTheLine) {
  auto json = YamlToJson("a: 1\nb: [1, 2\nc: 3\n");
  ASSERT_FALSE(json.ok());
  EXPECT_EQ(json.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(json.status().message()), HasSubstr("line"));
}

}  // namespace
}  // namespace shardplan::spec_text
