// Every invalid spec or plan gets INVALID_ARGUMENT naming the field
// and the value; never a crash. Each case below is a whole EvaluateRequest as a
// user would write it.
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/spec_text.h"
#include "simulator/spec.h"
#include "simulator/types.h"

namespace shardplan::simulator {
namespace {

using ::shardplan::v1::EvaluateRequest;
using ::testing::HasSubstr;

constexpr char kGoodYaml[] = R"(
model:
  spec:
    name: tiny
    hiddenSize: 512
    numLayers: 4
    numAttentionHeads: 8
    numKeyValueHeads: 2
    intermediateSize: 1024
    vocabSize: 1000
cluster:
  hardware: h100-sxm-80gb
  numGpus: 16
  gpusPerNode: 8
workload:
  inputTokens: 1024
  outputTokens: 128
  maxTtftMs: 1000
  maxTpotMs: 50
  weightDtype: bf16
  kvCacheDtype: fp8
plan:
  dp: 2
  tp: 8
  pp: 1
)";

// Parses + validates the whole request like the server and shardplan-sim do.
absl::Status Validate(const std::string& text) {
  EvaluateRequest request;
  absl::Status status = spec_text::Parse(text, &request);
  if (!status.ok()) return status;
  absl::StatusOr<Problem> problem =
      ProblemFromProto(request.model(), request.cluster(), request.workload());
  if (!problem.ok()) return problem.status();
  return PlanDimsFromProto(request.plan()).status();
}

// kGoodYaml with one line replaced.
std::string With(const std::string& from, const std::string& to) {
  const std::string yaml = kGoodYaml;
  EXPECT_NE(yaml.find(from), std::string::npos) << from;
  return absl::StrReplaceAll(yaml, {{from, to}});
}

TEST(BadInputTest, GoodRequestPasses) { EXPECT_TRUE(Validate(kGoodYaml).ok()); }

struct Case {
  const char* what;
  std::string text;
  std::string message;  // expected substring
};

TEST(BadInputTest, EachCaseNamesFieldAndValue) {
  const Case cases[] = {
      // Zero / negative sizes.
      {"zero hidden", With("hiddenSize: 512", "hiddenSize: 0"),
       "model.spec.hidden_size must be > 0, got 0"},
      {"negative layers", With("numLayers: 4", "numLayers: -3"),
       "model.spec.num_layers must be > 0, got -3"},
      {"zero vocab", With("vocabSize: 1000", "vocabSize: 0"),
       "model.spec.vocab_size must be > 0, got 0"},
      {"negative kv heads", With("numKeyValueHeads: 2", "numKeyValueHeads: -2"),
       "model.spec.num_key_value_heads must be >= 0, got -2"},
      {"zero intermediate",
       With("intermediateSize: 1024", "intermediateSize: 0"),
       "model.spec.intermediate_size must be > 0"},
      {"zero gpus", With("numGpus: 16", "numGpus: 0"),
       "cluster.num_gpus must be > 0, got 0"},
      {"negative gpus per node", With("gpusPerNode: 8", "gpusPerNode: -8"),
       "cluster.gpus_per_node must be >= 0, got -8"},
      {"zero input tokens", With("inputTokens: 1024", "inputTokens: 0"),
       "workload.input_tokens must be > 0, got 0"},
      {"negative output tokens", With("outputTokens: 128", "outputTokens: -1"),
       "workload.output_tokens must be > 0, got -1"},
      {"negative tp", With("tp: 8", "tp: -8"), "plan.tp must be >= 0, got -8"},
      {"negative batch", With("pp: 1", "pp: 1\n  batchSize: -4"),
       "plan.batch_size must be >= 0, got -4"},
      {"zero stage layers", With("pp: 1", "pp: 2\n  stageLayers: [4, 0]"),
       "plan.stage_layers[1] must be > 0, got 0"},
      // Heads not divisible.
      {"heads by kv heads", With("numKeyValueHeads: 2", "numKeyValueHeads: 3"),
       "model.spec.num_attention_heads (8) must be divisible by "
       "model.spec.num_key_value_heads (3)"},
      {"hidden by heads", With("hiddenSize: 512", "hiddenSize: 500"),
       "model.spec.hidden_size (500) must be divisible by "
       "model.spec.num_attention_heads (8)"},
      {"more kv heads than heads",
       With("numKeyValueHeads: 2", "numKeyValueHeads: 16"),
       "model.spec.num_key_value_heads (16) must be <= "
       "model.spec.num_attention_heads (8)"},
      // Unknown names.
      {"unknown dtype", With("kvCacheDtype: fp8", "kvCacheDtype: int3"),
       "workload.kv_cache_dtype: unknown dtype \"int3\"; expected one of bf16, "
       "fp8, fp4"},
      {"unknown weight dtype", With("weightDtype: bf16", "weightDtype: fp16"),
       "workload.weight_dtype: unknown dtype \"fp16\""},
      {"unknown operator",
       With("pp: 1", "pp: 1\n  operatorSharding: [{operator: ffn, dim: row}]"),
       "plan.operator_sharding[0].operator: unknown operator \"ffn\""},
      {"unknown dim",
       With("pp: 1",
            "pp: 1\n  operatorSharding: [{operator: qkv, dim: row}, {operator: "
            "mlp_up, dim: "
            "row}, {operator: attention, dim: diagonal}]"),
       "plan.operator_sharding[2].dim: unknown dim \"diagonal\"; expected one "
       "of column, row, "
       "replicate, batch, sequence"},
      {"duplicate operator",
       With("pp: 1",
            "pp: 1\n  operatorSharding: [{operator: qkv, dim: row}, {operator: "
            "qkv, dim: "
            "column}]"),
       "plan.operator_sharding[1].operator: duplicate operator \"qkv\" (also "
       "at [0])"},
      {"unknown hardware", With("hardware: h100-sxm-80gb", "hardware: a100"),
       "cluster.hardware: unknown hardware \"a100\"; known: h100-sxm-80gb, "
       "h200-sxm-141gb"},
      {"unknown catalog model",
       absl::StrCat("model: {catalogName: llama-9}\n",
                    std::string(kGoodYaml).substr(
                        std::string(kGoodYaml).find("cluster:"))),
       "model.catalog_name: unknown model \"llama-9\"; known: llama-3.1-8b"},
      // NaN and infinity.
      {"nan ttft", With("maxTtftMs: 1000", "maxTtftMs: .nan"),
       "workload.max_ttft_ms must be a finite number, got NaN"},
      {"inf tpot", With("maxTpotMs: 50", "maxTpotMs: .inf"),
       "workload.max_tpot_ms must be a finite number, got Infinity"},
      {"negative slo", With("maxTpotMs: 50", "maxTpotMs: -5"),
       "workload.max_tpot_ms must be >= 0, got -5"},
      {"inf hbm",
       With("hardware: h100-sxm-80gb",
            "hardwareSpec: {peakBf16FlopsPerS: 1e15, hbmBytes: .inf, "
            "hbmBytesPerS: 3e12, "
            "intraNodeBytesPerS: 4e11, interNodeBytesPerS: 5e10}"),
       "cluster.hardware_spec.hbm_bytes must be a finite number, got Infinity"},
      {"nan flops",
       With("hardware: h100-sxm-80gb",
            "hardwareSpec: {peakBf16FlopsPerS: nan, hbmBytes: 8e10, "
            "hbmBytesPerS: 3e12, "
            "intraNodeBytesPerS: 4e11, interNodeBytesPerS: 5e10}"),
       "cluster.hardware_spec.peak_bf16_flops_per_s must be a finite number, "
       "got NaN"},
      {"zero bandwidth",
       With("hardware: h100-sxm-80gb",
            "hardwareSpec: {peakBf16FlopsPerS: 1e15, hbmBytes: 8e10, "
            "hbmBytesPerS: 0, "
            "intraNodeBytesPerS: 4e11, interNodeBytesPerS: 5e10}"),
       "cluster.hardware_spec.hbm_bytes_per_s must be > 0, got 0"},
      {"unknown architecture",
       With("hardware: h100-sxm-80gb",
            "hardwareSpec: {peakBf16FlopsPerS: 1e15, hbmBytes: 8e10, "
            "hbmBytesPerS: 3e12, intraNodeBytesPerS: 4e11, "
            "interNodeBytesPerS: 5e10, architecture: SM_100}"),
       "cluster.hardware_spec.architecture: unknown architecture "
       "\"SM_100\"; known: sm90, sm100, sm103, sm120, or empty"},
      // Absurd sizes.
      {"10^12 layers", With("numLayers: 4", "numLayers: 1000000000000"),
       "model.spec.num_layers: invalid value 1000000000000"},
      {"2e9 layers", With("numLayers: 4", "numLayers: 2000000000"),
       "model.spec.num_layers must be <= 1024, got 2000000000"},
      {"huge hidden", With("hiddenSize: 512", "hiddenSize: 1048576"),
       "model.spec.hidden_size must be <= 131072, got 1048576"},
      {"huge gpus", With("numGpus: 16", "numGpus: 1048576"),
       "cluster.num_gpus must be <= 65536, got 1048576"},
      {"huge tokens", With("inputTokens: 1024", "inputTokens: 100000000"),
       "workload.input_tokens must be <= 1048576, got 100000000"},
      {"huge concurrency", With("pp: 1", "pp: 1\n  batchSize: 1000000"),
       "plan.batch_size must be <= 262144, got 1000000"},
      {"too many stages",
       With("pp: 1",
            absl::StrCat("pp: 1\n  stageLayers: [",
                         absl::StrJoin(std::vector<int>(200, 1), ", "), "]")),
       "plan.stage_layers has 200 entries, at most 128"},
      {"huge degree", With("dp: 2", "dp: 100000000"),
       "plan.dp must be <= 65536, got 100000000"},
      // MoE consistency.
      {"experts per token > experts",
       With("vocabSize: 1000",
            "vocabSize: 1000\n    numExperts: 4\n    expertsPerToken: 8\n"
            "    moeIntermediateSize: 256"),
       "model.spec.experts_per_token must be in [1, model.spec.num_experts "
       "(4)], got 8"},
      {"top-k without experts",
       With("vocabSize: 1000", "vocabSize: 1000\n    expertsPerToken: 2"),
       "model.spec.experts_per_token (2) requires model.spec.num_experts > 0"},
      {"too many experts",
       With("vocabSize: 1000",
            "vocabSize: 1000\n    numExperts: 100000\n    expertsPerToken: 2\n"
            "    moeIntermediateSize: 256"),
       "model.spec.num_experts must be <= 4096, got 100000"},
      // Node groups.
      {"node groups do not add up",
       With("gpusPerNode: 8",
            "gpusPerNode: 8\n  nodeGroups: "
            "[{name: a, numNodes: 1}, {name: b, "
            "numNodes: 2}]"),
       "cluster.node_groups: node counts add up to 3, expected 2"},
      // Wrong types and unknown fields (from the parser, with the field name).
      {"string for int", With("numLayers: 4", "numLayers: four"),
       "model.spec.num_layers: invalid value \"four\""},
      {"unknown field", With("numLayers: 4", "numLayers: 4\n    numLayerz: 4"),
       "model.spec: unknown field \"numLayerz\""},
      {"no model",
       std::string(kGoodYaml).substr(std::string(kGoodYaml).find("cluster:")),
       "model: one of model.catalog_name, model.spec or model.hf_config_json "
       "is required"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const absl::Status status = Validate(c.text);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.message));
  }
}

TEST(BadInputTest, MalformedJsonAndYaml) {
  const std::pair<const char*, const char*> cases[] = {
      {"{\"model\": {\"catalogName\": \"llama-3.1-8b\"", "malformed JSON"},
      {"{\"model\": }", "malformed JSON"},
      {"{\"cluster\": {\"numGpus\": \"many\"}}",
       "cluster.num_gpus: invalid value \"many\""},
      {"model: [unclosed", "malformed YAML"},
      {"model:\n  catalogName: a\n bad-indent: 1\n", "malformed YAML"},
      {"- just\n- a list\n", "expected a JSON object or a YAML mapping"},
      {"plain text", "expected a JSON object or a YAML mapping"},
      {"cluster: {numGpus: 1e400}", "cluster.num_gpus: invalid value"},
      {"\t\x01\x02garbage: [", "malformed YAML"},
  };
  for (const auto& [text, message] : cases) {
    SCOPED_TRACE(text);
    EvaluateRequest request;
    const absl::Status status = spec_text::Parse(text, &request);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_THAT(std::string(status.message()), HasSubstr(message));
  }
}

TEST(BadInputTest, DeeplyNestedYamlIsRejectedNotOverflowed) {
  std::string deep = "model: ";
  for (int i = 0; i < 5000; ++i) deep += "[";
  EvaluateRequest request;
  EXPECT_EQ(spec_text::Parse(deep, &request).code(),
            absl::StatusCode::kInvalidArgument);
  std::string deep_json = "{\"model\": ";
  for (int i = 0; i < 5000; ++i) deep_json += "[";
  EXPECT_EQ(spec_text::Parse(deep_json, &request).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(BadInputTest, ModelSpecDirectNaNFreeAndLimits) {
  shardplan::v1::ModelSpec spec;
  spec.set_hidden_size(131072);
  spec.set_num_layers(1024);
  spec.set_num_attention_heads(1024);
  spec.set_intermediate_size(1 << 20);
  spec.set_vocab_size(1 << 23);
  spec.set_num_experts(4096);
  spec.set_experts_per_token(8);
  spec.set_moe_intermediate_size(1 << 20);
  spec.set_first_k_dense_layers(1);
  // Each field within its cap, but the product is ~1.8e18 parameters.
  absl::StatusOr<ModelDims> dims = ModelDimsFromSpec(spec, "model.spec");
  ASSERT_EQ(dims.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(dims.status().message(),
              HasSubstr("parameters exceeds the limit"));
}

TEST(BadInputTest, MlaNeedsItsHeadDims) {
  shardplan::v1::ModelSpec spec = *FindCatalogModel("deepseek-v3");
  spec.set_v_head_dim(0);
  absl::StatusOr<ModelDims> dims = ModelDimsFromSpec(spec, "model.spec");
  ASSERT_EQ(dims.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(dims.status().message(),
              HasSubstr("model.spec.v_head_dim must be > 0 for MLA"));
}

// Fields that only mean something for MLA (kv_lora_rank > 0) or MoE
// (num_experts > 0) are errors on other models, never silently dropped.
TEST(BadInputTest, MlaOnlyFieldsWithoutMlaAreRejected) {
  shardplan::v1::ModelSpec dense = *FindCatalogModel("llama-3.1-8b");
  ASSERT_EQ(dense.kv_lora_rank(), 0);
  ASSERT_TRUE(ModelDimsFromSpec(dense, "model.spec").ok());
  struct Case {
    const char* field;
    void (shardplan::v1::ModelSpec::*set)(int32_t);
  } cases[] = {
      {"q_lora_rank", &shardplan::v1::ModelSpec::set_q_lora_rank},
      {"qk_rope_head_dim", &shardplan::v1::ModelSpec::set_qk_rope_head_dim},
      {"qk_nope_head_dim", &shardplan::v1::ModelSpec::set_qk_nope_head_dim},
      {"v_head_dim", &shardplan::v1::ModelSpec::set_v_head_dim},
  };
  for (const Case& c : cases) {
    shardplan::v1::ModelSpec spec = dense;
    (spec.*c.set)(64);
    absl::StatusOr<ModelDims> dims = ModelDimsFromSpec(spec, "model.spec");
    ASSERT_EQ(dims.status().code(), absl::StatusCode::kInvalidArgument)
        << c.field;
    EXPECT_THAT(dims.status().message(),
                HasSubstr(absl::StrCat("model.spec.", c.field,
                                       " (64) requires model.spec.kv_lora_rank "
                                       "> 0")));
  }
  // The probe's case: all three head dims set, kv_lora_rank 0.
  shardplan::v1::ModelSpec spec = dense;
  spec.set_qk_rope_head_dim(64);
  spec.set_qk_nope_head_dim(128);
  spec.set_v_head_dim(128);
  EXPECT_EQ(ModelDimsFromSpec(spec, "model.spec").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(BadInputTest, MoeOnlyFieldsOnADenseModelAreRejected) {
  shardplan::v1::ModelSpec spec = *FindCatalogModel("llama-3.1-8b");
  spec.set_num_shared_experts(1);
  absl::StatusOr<ModelDims> dims = ModelDimsFromSpec(spec, "model.spec");
  ASSERT_EQ(dims.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(dims.status().message(),
              HasSubstr("model.spec.num_shared_experts (1) requires "
                        "model.spec.num_experts > 0"));
}

}  // namespace
}  // namespace shardplan::simulator
