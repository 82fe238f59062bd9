// Robustness of the spec path against arbitrary input: seeded random mutations
// of a valid request (JSON and YAML) and random bytes must give OK or
// INVALID_ARGUMENT, never a crash, hang or sanitizer report; conversions back
// to proto must cope with extreme plans.
#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/spec_text.h"
#include "simulator/spec.h"
#include "simulator/types.h"

namespace shardplan::simulator {
namespace {

using ::shardplan::v1::EvaluateRequest;

std::string ExampleYaml() {
  std::ifstream in(std::string(SHARDPLAN_TEST_DATA_DIR) +
                   "/llama70b_16gpu.yaml");
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Runs the whole validation path; returns the status code.
absl::StatusCode Check(const std::string& text) {
  EvaluateRequest request;
  absl::Status status = spec_text::Parse(text, &request);
  if (!status.ok()) return status.code();
  absl::StatusOr<Problem> problem =
      ProblemFromProto(request.model(), request.cluster(), request.workload());
  if (!problem.ok()) return problem.status().code();
  absl::StatusOr<PlanDims> plan = PlanDimsFromProto(request.plan());
  if (!plan.ok()) return plan.status().code();
  // The conversions back must work on whatever passed.
  const shardplan::v1::Plan proto = PlanToProto(*plan, *problem);
  EXPECT_EQ(proto.operator_sharding_size(), kNumOpKinds);
  return absl::StatusCode::kOk;
}

std::string Mutate(std::string text, std::mt19937& rng) {
  static const char* const kTokens[] = {"0",
                                        "-1",
                                        "1e12",
                                        ".nan",
                                        ".inf",
                                        "-.inf",
                                        "null",
                                        "\"\"",
                                        "[",
                                        "]",
                                        "{",
                                        "}",
                                        ":",
                                        ",",
                                        "\n",
                                        "  ",
                                        "'",
                                        "\"",
                                        "#",
                                        "&a",
                                        "*a",
                                        "!!str",
                                        "999999999999999999999",
                                        "true",
                                        "NaN",
                                        "Infinity",
                                        "\\u0000",
                                        "\xff",
                                        "- x",
                                        "? "};
  std::uniform_int_distribution<int> n_edits(1, 4);
  const int edits = n_edits(rng);
  for (int e = 0; e < edits && !text.empty(); ++e) {
    std::uniform_int_distribution<size_t> pos(0, text.size() - 1);
    const size_t at = pos(rng);
    switch (rng() % 3) {
      case 0:  // delete a span
        text.erase(at, 1 + rng() % 8);
        break;
      case 1:  // insert a token
        text.insert(at,
                    kTokens[rng() % (sizeof(kTokens) / sizeof(kTokens[0]))]);
        break;
      default:  // flip a byte
        text[at] = static_cast<char>(rng() & 0xff);
        break;
    }
  }
  return text;
}

TEST(RobustnessTest, MutatedYamlNeverCrashes) {
  const std::string yaml = ExampleYaml();
  ASSERT_EQ(Check(yaml), absl::StatusCode::kOk);
  std::mt19937 rng(12345);
  int ok = 0;
  int invalid = 0;
  for (int i = 0; i < 1500; ++i) {
    const absl::StatusCode code = Check(Mutate(yaml, rng));
    ASSERT_TRUE(code == absl::StatusCode::kOk ||
                code == absl::StatusCode::kInvalidArgument)
        << absl::StatusCodeToString(code);
    (code == absl::StatusCode::kOk ? ok : invalid)++;
  }
  EXPECT_GT(invalid, 0);
  EXPECT_GT(ok, 0);
}

TEST(RobustnessTest, MutatedJsonNeverCrashes) {
  EvaluateRequest request;
  ASSERT_TRUE(spec_text::Parse(ExampleYaml(), &request).ok());
  const std::string json = spec_text::ToJson(request);
  ASSERT_EQ(Check(json), absl::StatusCode::kOk);
  std::mt19937 rng(777);
  for (int i = 0; i < 1500; ++i) {
    const absl::StatusCode code = Check(Mutate(json, rng));
    ASSERT_TRUE(code == absl::StatusCode::kOk ||
                code == absl::StatusCode::kInvalidArgument)
        << absl::StatusCodeToString(code);
  }
}

TEST(RobustnessTest, RandomBytesNeverCrash) {
  std::mt19937 rng(42);
  for (int i = 0; i < 500; ++i) {
    std::string text(rng() % 200, '\0');
    for (char& c : text) c = static_cast<char>(rng() & 0xff);
    if (i % 2 == 0 && !text.empty()) text[0] = '{';
    const absl::StatusCode code = Check(text);
    ASSERT_TRUE(code == absl::StatusCode::kOk ||
                code == absl::StatusCode::kInvalidArgument);
    const absl::StatusOr<shardplan::v1::ModelSpec> hf =
        ModelSpecFromHfConfig(text);
    ASSERT_TRUE(hf.ok() ||
                hf.status().code() == absl::StatusCode::kInvalidArgument);
  }
}

TEST(RobustnessTest, DeeplyNestedHfConfig) {
  std::string deep = "{\"model_type\": \"llama\", \"x\": ";
  for (int i = 0; i < 100000; ++i) deep += "[";
  const absl::StatusOr<shardplan::v1::ModelSpec> spec =
      ModelSpecFromHfConfig(deep);
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
}

// "Billion laughs": aliases that expand exponentially are cut off, not
// expanded.
TEST(RobustnessTest, YamlAliasBombIsRejected) {
  std::string yaml = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    yaml += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int j = 0; j < 10; ++j)
      yaml += (j ? ", *a" : "*a") + std::to_string(i - 1);
    yaml += "]\n";
  }
  EvaluateRequest request;
  const absl::Status status = spec_text::Parse(yaml, &request);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              ::testing::HasSubstr("200000 nodes"));
}

TEST(RobustnessTest, ExtremePlansConvert) {
  EvaluateRequest request;
  ASSERT_TRUE(spec_text::Parse(ExampleYaml(), &request).ok());
  Problem problem =
      *ProblemFromProto(request.model(), request.cluster(), request.workload());
  problem.cluster.num_gpus = 65536;
  PlanDims plan;
  plan.dp =
      65536;  // one GPU per replica: placement is capped, not 65536 entries
  shardplan::v1::Plan proto = PlanToProto(plan, problem);
  EXPECT_LE(proto.placement_size(), 1024);
  EXPECT_GT(proto.placement_size(), 0);
  plan.dp = 1;
  plan.tp = 65536;  // spans every node
  proto = PlanToProto(plan, problem);
  ASSERT_EQ(proto.placement_size(), 1);
  EXPECT_TRUE(proto.placement(0).tp_spans_nodes());
  // A degenerate plan (as ValidatePlan would reject) still converts.
  plan.tp = 3;
  plan.pp = 7;
  plan.num_stage_layers =
      2;  // does not match pp: kept, placement shows a uniform split
  proto = PlanToProto(plan, problem);
  EXPECT_EQ(proto.stage_layers_size(), 2);
  EXPECT_EQ(proto.placement_size(), 7);
}

}  // namespace
}  // namespace shardplan::simulator
