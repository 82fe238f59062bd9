// Parsing of measured runs for `shardplan calibrate`: vLLM --save-result JSON,
// SGLang bench_serving JSONL and the calibration CSV, on sample files, and
// errors that name file:line and the field.
#include "client/measurements.h"

#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shardplan::client {
namespace {

using ::testing::HasSubstr;

std::string ReadSample(const std::string& name) {
  std::ifstream in(std::string(SHARDPLAN_CLIENT_TEST_DATA) + "/calibration/" +
                   name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(MeasurementsTest, VllmSaveResultJson) {
  RunDefaults defaults;
  defaults.tp = 4;
  defaults.weight_dtype = "fp8";
  absl::StatusOr<ParsedResults> parsed =
      ParseResults("r.json", ReadSample("vllm_result.json"), defaults);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->runs.size(), 1u);
  const shardplan::v1::MeasuredRun& run = parsed->runs[0];
  EXPECT_EQ(run.source(), "r.json:1");
  EXPECT_EQ(run.engine(), "vllm");
  EXPECT_EQ(run.model(), "meta-llama/Llama-3.1-70B") << "from model_id";
  EXPECT_EQ(run.concurrency(), 16);
  EXPECT_EQ(run.input_tokens(), 1024) << "total_input_tokens / completed";
  EXPECT_EQ(run.output_tokens(), 1024);
  EXPECT_EQ(run.tp(), 4);
  EXPECT_EQ(run.weight_dtype(), "fp8");
  EXPECT_NEAR(run.ttft_ms(), 121.413, 1e-3);
  EXPECT_NEAR(run.tpot_ms(), 13.192, 1e-3);
}

TEST(MeasurementsTest, SglangBenchServingJsonl) {
  RunDefaults defaults;
  defaults.model = "qwen3-32b";
  defaults.tp = 2;
  absl::StatusOr<ParsedResults> parsed =
      ParseResults("s.jsonl", ReadSample("sglang_results.jsonl"), defaults);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->runs.size(), 3u);
  EXPECT_EQ(parsed->runs[0].engine(), "sglang");
  EXPECT_EQ(parsed->runs[0].model(), "qwen3-32b");
  EXPECT_EQ(parsed->runs[0].input_tokens(), 1024);
  EXPECT_EQ(parsed->runs[0].output_tokens(), 128);
  EXPECT_EQ(parsed->runs[0].concurrency(), 16);
  EXPECT_NEAR(parsed->runs[1].tpot_ms(), 10.5506, 1e-3);
  EXPECT_EQ(parsed->runs[2].source(), "s.jsonl:3");
}

TEST(MeasurementsTest, SglangWithoutModelNamesTheFlag) {
  absl::StatusOr<ParsedResults> parsed =
      ParseResults("s.jsonl", ReadSample("sglang_results.jsonl"), {});
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.status().message(), HasSubstr("s.jsonl:1: model"));
  EXPECT_THAT(parsed.status().message(), HasSubstr("--model"));
}

TEST(MeasurementsTest, CalibrationCsvSkipsDisaggregatedAndQueueBoundRows) {
  absl::StatusOr<ParsedResults> parsed =
      ParseResults("runs.csv", ReadSample("runs.csv"), {});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->runs.size(), 4u);
  EXPECT_EQ(parsed->skipped_disaggregated, 1);
  EXPECT_EQ(parsed->skipped_queueing, 1);
  const shardplan::v1::MeasuredRun& run = parsed->runs[3];
  EXPECT_EQ(run.source(), "runs.csv:5");
  EXPECT_EQ(run.engine(), "vllm");
  EXPECT_EQ(run.model(), "meta-llama/Llama-3.1-70B");
  EXPECT_EQ(run.weight_dtype(), "fp8");
  EXPECT_EQ(run.input_tokens(), 1024);
  EXPECT_EQ(run.output_tokens(), 8192);
  EXPECT_EQ(run.concurrency(), 64);
  EXPECT_EQ(run.tp(), 2);
}

TEST(MeasurementsTest, ErrorsNameFileLineAndField) {
  struct Case {
    std::string text;
    std::string message;
  };
  const std::string header =
      "backend,model_path,isl,osl,batch_size,tp_size,silicon_ttft_ms,"
      "silicon_tpot_ms\n";
  const Case cases[] = {
      {header + "vllm,qwen3-32b,1024,128,16,2,abc,10\n",
       "x:2: silicon_ttft_ms: not a number: \"abc\""},
      {header + "vllm,qwen3-32b,1024,128,16,2,100\n",
       "x:2: 7 fields, the header has 8"},
      {"backend,model_path\nvllm,qwen3-32b\n", "x:1: isl: missing column"},
      {"{\"model_id\": \"m\", \"completed\": 4}\n",
       "x:1: max_concurrency: missing"},
      {"{\"model_id\": \"m\", \"completed\": 4, \"max_concurrency\": 2, "
       "\"total_input_tokens\": 8, \"total_output_tokens\": 8, "
       "\"mean_ttft_ms\": \"fast\", \"mean_tpot_ms\": 1}\n",
       "x:1: mean_ttft_ms: not a number"},
      {"{\"backend\": \"sglang\"}\nnot json\n", "x:1"},
      {"", "x: empty file"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<ParsedResults> parsed = ParseResults("x", c.text, {});
    ASSERT_FALSE(parsed.ok()) << c.text;
    EXPECT_TRUE(absl::IsInvalidArgument(parsed.status()));
    EXPECT_THAT(std::string(parsed.status().message()), HasSubstr(c.message))
        << c.text;
  }
}

// A field is echoed as a short escaped prefix: a 5 MB field does not fill
// stderr, and terminal escape sequences come out as text.
TEST(MeasurementsTest, ErrorsQuoteAShortEscapedPrefixOfTheField) {
  const std::string header =
      "backend,model_path,isl,osl,batch_size,tp_size,silicon_ttft_ms,"
      "silicon_tpot_ms\n";
  const std::string huge(5 << 20, '7');
  for (const std::string& field :
       {huge + "x", std::string("\x1b]0;title\x07\x1b[2J")}) {
    absl::StatusOr<ParsedResults> parsed = ParseResults(
        "x", header + "vllm,qwen3-32b,1024,128,16,2," + field + ",10\n", {});
    ASSERT_FALSE(parsed.ok());
    const std::string message(parsed.status().message());
    EXPECT_LT(message.size(), 300u);
    EXPECT_EQ(message.find('\x1b'), std::string::npos) << message;
    EXPECT_EQ(message.find('\x07'), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace shardplan::client
