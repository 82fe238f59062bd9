// Tests for the Hugging Face config.json import (simulator/spec_hf.cc): every
// supported model_type, round trips against the catalog, and errors that name
// the key.
#include <fstream>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simulator/spec.h"
#include "simulator/types.h"

namespace shardplan::simulator {
namespace {

using ::shardplan::v1::ModelSpec;
using ::testing::HasSubstr;

std::string ReadHf(const std::string& name) {
  std::ifstream in(std::string(SHARDPLAN_TEST_DATA_DIR) + "/hf/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

ModelDims Import(const std::string& file) {
  absl::StatusOr<ModelSpec> spec = ModelSpecFromHfConfig(ReadHf(file));
  EXPECT_TRUE(spec.ok()) << file << ": " << spec.status();
  if (!spec.ok()) return {};
  absl::StatusOr<ModelDims> dims =
      ModelDimsFromSpec(*spec, "model.hf_config_json");
  EXPECT_TRUE(dims.ok()) << file << ": " << dims.status();
  return dims.ok() ? *dims : ModelDims{};
}

ModelDims Catalog(const std::string& name) {
  absl::StatusOr<ModelSpec> spec = FindCatalogModel(name);
  EXPECT_TRUE(spec.ok()) << name;
  return *ModelDimsFromSpec(*spec, "");
}

// Every architectural field equal (name/family aside).
void ExpectSameArchitecture(const ModelDims& a, const ModelDims& b) {
  EXPECT_EQ(a.hidden, b.hidden);
  EXPECT_EQ(a.layers, b.layers);
  EXPECT_EQ(a.heads, b.heads);
  EXPECT_EQ(a.kv_heads, b.kv_heads);
  EXPECT_EQ(a.head_dim, b.head_dim);
  EXPECT_EQ(a.vocab, b.vocab);
  EXPECT_EQ(a.tie_embeddings, b.tie_embeddings);
  EXPECT_EQ(a.experts, b.experts);
  EXPECT_EQ(a.experts_per_token, b.experts_per_token);
  EXPECT_EQ(a.moe_intermediate, b.moe_intermediate);
  EXPECT_EQ(a.shared_experts, b.shared_experts);
  EXPECT_EQ(a.first_k_dense, b.first_k_dense);
  EXPECT_EQ(a.kv_lora_rank, b.kv_lora_rank);
  EXPECT_EQ(a.q_lora_rank, b.q_lora_rank);
  EXPECT_EQ(a.qk_rope_head_dim, b.qk_rope_head_dim);
  EXPECT_EQ(a.qk_nope_head_dim, b.qk_nope_head_dim);
  EXPECT_EQ(a.v_head_dim, b.v_head_dim);
  EXPECT_DOUBLE_EQ(a.TotalParams(), b.TotalParams());
  EXPECT_DOUBLE_EQ(a.ActiveParams(), b.ActiveParams());
}

TEST(HfConfigTest, QuantizationConfigGivesTheNativeDtype) {
  // The checkpoints' quantization_config: DeepSeek-V3 block FP8, gpt-oss
  // MXFP4; the same dtypes as their catalog entries.
  EXPECT_EQ(ModelSpecFromHfConfig(ReadHf("deepseek-v3.json"))->native_dtype(),
            "fp8");
  EXPECT_EQ(ModelSpecFromHfConfig(ReadHf("gpt-oss-120b.json"))->native_dtype(),
            "fp4");
  EXPECT_EQ(ModelSpecFromHfConfig(ReadHf("llama-3.1-70b.json"))->native_dtype(),
            "");
  for (const char* name : {"deepseek-v3", "gpt-oss-120b"}) {
    EXPECT_EQ(Import(std::string(name) + ".json").native_dtype,
              Catalog(name).native_dtype)
        << name;
  }
}

TEST(HfConfigTest, MatchesCatalog) {
  const struct {
    const char* file;
    const char* catalog;
  } cases[] = {{"llama-3.1-8b.json", "llama-3.1-8b"},
               {"llama-3.1-70b.json", "llama-3.1-70b"},
               {"qwen3-32b.json", "qwen3-32b"},
               {"qwen3-235b-a22b.json", "qwen3-235b-a22b"},
               {"mixtral-8x7b.json", "mixtral-8x7b"},
               {"deepseek-v3.json", "deepseek-v3"},
               {"gpt-oss-120b.json", "gpt-oss-120b"},
               // Trimmed from the published config.json files (sources in
               // the catalog entries).
               {"kimi-k2.5.json", "kimi-k2.5"},
               {"glm-5.json", "glm-5"},
               {"qwen3.5-397b-a17b.json", "qwen3.5-397b-a17b"},
               {"minimax-m2.5.json", "minimax-m2.5"},
               {"deepseek-v3.2.json", "deepseek-v3.2"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.file);
    ExpectSameArchitecture(Import(c.file), Catalog(c.catalog));
  }
}

TEST(HfConfigTest, NewArchitecturesKeepTheirAttentionKind) {
  const ModelDims qwen = Import("qwen3.5-397b-a17b.json");
  const ModelDims cat = Catalog("qwen3.5-397b-a17b");
  EXPECT_EQ(qwen.full_attention_interval, 4);
  EXPECT_EQ(qwen.linear_num_key_heads, cat.linear_num_key_heads);
  EXPECT_EQ(qwen.linear_num_value_heads, cat.linear_num_value_heads);
  EXPECT_EQ(qwen.linear_key_head_dim, cat.linear_key_head_dim);
  EXPECT_EQ(qwen.linear_value_head_dim, cat.linear_value_head_dim);
  EXPECT_EQ(qwen.linear_conv_kernel_dim, cat.linear_conv_kernel_dim);
  EXPECT_TRUE(qwen.attention_output_gate);
  for (const char* name : {"deepseek-v3.2", "glm-5"}) {
    const ModelDims m = Import(std::string(name) + ".json");
    const ModelDims c = Catalog(name);
    EXPECT_EQ(m.index_topk, c.index_topk) << name;
    EXPECT_EQ(m.index_n_heads, c.index_n_heads) << name;
    EXPECT_EQ(m.index_head_dim, c.index_head_dim) << name;
  }
  // Checkpoint dtypes: Kimi's INT4 experts as 4-bit, MiniMax block FP8.
  EXPECT_EQ(Import("kimi-k2.5.json").native_dtype, Dtype::kFp4);
  EXPECT_EQ(Import("minimax-m2.5.json").native_dtype, Dtype::kFp8);
  EXPECT_EQ(Import("deepseek-v3.2.json").native_dtype, Dtype::kFp8);
}

TEST(HfConfigTest, UnsupportedLayoutsOfNewArchitecturesAreNamed) {
  // Another hybrid layout than "every 4th layer full" names the entry.
  std::string qwen = ReadHf("qwen3.5-397b-a17b.json");
  const size_t at = qwen.find("\"full_attention\"");
  ASSERT_NE(at, std::string::npos);
  qwen.replace(at, std::string("\"full_attention\"").size(),
               "\"linear_attention\"");
  absl::StatusOr<ModelSpec> spec = ModelSpecFromHfConfig(qwen);
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(spec.status().message(),
              HasSubstr("hf_config_json.text_config.layer_types[3]"));
  // MiniMax-01's lightning attention layers are another architecture.
  std::string minimax = ReadHf("minimax-m2.5.json");
  const size_t list = minimax.find("\"attn_type_list\"");
  ASSERT_NE(list, std::string::npos);
  const size_t one = minimax.find('1', list);
  minimax[one] = '0';
  spec = ModelSpecFromHfConfig(minimax);
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(spec.status().message(),
              HasSubstr("hf_config_json.attn_type_list[0]"));
  // A shared indexer (one top-k reused by later layers) is refused, named.
  spec = ModelSpecFromHfConfig(
      R"({"model_type": "glm_moe_dsa", "hidden_size": 64,
          "num_hidden_layers": 4, "num_attention_heads": 4,
          "vocab_size": 100, "intermediate_size": 128,
          "n_routed_experts": 4, "num_experts_per_tok": 2,
          "moe_intermediate_size": 32, "kv_lora_rank": 16,
          "qk_rope_head_dim": 8, "qk_nope_head_dim": 8, "v_head_dim": 8,
          "index_topk": 4, "index_topk_freq": 4})");
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(spec.status().message(),
              HasSubstr("hf_config_json.index_topk_freq"));
  // A wrapper without its language model.
  spec = ModelSpecFromHfConfig(R"({"model_type": "kimi_k25"})");
  EXPECT_THAT(spec.status().message(), HasSubstr("hf_config_json.text_config"));
}

TEST(HfConfigTest, MistralAndQwen2) {
  const ModelDims mistral = Import("mistral-7b-v0.3.json");
  EXPECT_EQ(mistral.family, "mistral");
  EXPECT_EQ(mistral.head_dim, 128);
  EXPECT_EQ(mistral.vocab, 32768);
  EXPECT_FALSE(mistral.is_moe());
  EXPECT_NEAR(mistral.TotalParams() / 7.25e9, 1.0, 0.03);
  const ModelDims qwen2 = Import("qwen2.5-72b.json");
  EXPECT_EQ(qwen2.family, "qwen");
  EXPECT_EQ(qwen2.intermediate, 29568);
  EXPECT_NEAR(qwen2.TotalParams() / 72.7e9, 1.0, 0.03);
}

TEST(HfConfigTest, FamiliesAndDescriptions) {
  absl::StatusOr<ModelSpec> spec =
      ModelSpecFromHfConfig(ReadHf("deepseek-v3.json"));
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->family(), "deepseek");
  EXPECT_EQ(spec->head_dim(), 192);
  EXPECT_THAT(spec->description(), HasSubstr("deepseek_v3"));
  spec = ModelSpecFromHfConfig(ReadHf("gpt-oss-120b.json"));
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->family(), "gpt-oss");
}

TEST(HfConfigTest, NamePathUsedWhenPresent) {
  absl::StatusOr<ModelSpec> spec = ModelSpecFromHfConfig(
      R"({"_name_or_path": "org/tiny", "model_type": "llama", "hidden_size": 64,
          "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128,
          "vocab_size": 100})");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name(), "org/tiny");
  EXPECT_EQ(spec->num_key_value_heads(), 4);  // defaults to the attention heads
}

TEST(HfConfigTest, UnsupportedModelTypeIsNamed) {
  absl::StatusOr<ModelSpec> spec =
      ModelSpecFromHfConfig(ReadHf("bert-base-uncased.json"));
  ASSERT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      spec.status().message(),
      HasSubstr(
          "hf_config_json: unsupported model_type \"bert\"; supported: llama, "
          "mistral, mixtral, qwen2, qwen3, qwen3_moe, deepseek_v3, gpt_oss, "
          "deepseek_v32, glm_moe_dsa, kimi_k25, kimi_k2, qwen3_next, "
          "qwen3_5_moe, qwen3_5_moe_text, minimax_m2"));
}

TEST(HfConfigTest, MissingAndMistypedKeysAreNamed) {
  absl::StatusOr<ModelSpec> spec = ModelSpecFromHfConfig(
      R"({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
          "intermediate_size": 128, "vocab_size": 100})");
  ASSERT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(spec.status().message(),
            "hf_config_json.num_hidden_layers is missing");

  spec = ModelSpecFromHfConfig(
      R"({"model_type": "llama", "hidden_size": "big", "num_hidden_layers": 2,
          "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100})");
  ASSERT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(spec.status().message(),
            "hf_config_json.hidden_size must be an integer, got \"big\"");

  spec = ModelSpecFromHfConfig(
      R"({"model_type": "llama", "hidden_size": 1e12, "num_hidden_layers": 2,
          "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100})");
  ASSERT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(spec.status().message(),
              HasSubstr("hf_config_json.hidden_size is out of range"));

  spec = ModelSpecFromHfConfig(
      R"({"model_type": "mixtral", "hidden_size": 64, "num_hidden_layers": 2,
          "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100,
          "num_experts_per_tok": 2})");
  ASSERT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(spec.status().message(),
            "hf_config_json.num_local_experts is missing");

  spec = ModelSpecFromHfConfig(
      R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
          "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100,
          "tie_word_embeddings": "yes"})");
  ASSERT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(spec.status().message(),
              HasSubstr("hf_config_json.tie_word_embeddings"));
}

TEST(HfConfigTest, NonPositiveSizesUseHfKeyNames) {
  absl::StatusOr<ModelSpec> spec = ModelSpecFromHfConfig(
      R"({"model_type": "qwen3", "hidden_size": 64, "num_hidden_layers": 0,
          "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100})");
  ASSERT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(spec.status().message(),
            "hf_config_json.num_hidden_layers must be > 0, got 0");
  spec = ModelSpecFromHfConfig(
      R"({"model_type": "qwen3", "hidden_size": 64, "num_hidden_layers": 2,
          "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100,
          "head_dim": -16})");
  ASSERT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(spec.status().message(),
            "hf_config_json.head_dim must be >= 0, got -16");
}

TEST(HfConfigTest, MalformedJson) {
  for (const char* text : {"", "{", "[1, 2]", "{\"model_type\": 3}", "nul"}) {
    absl::StatusOr<ModelSpec> spec = ModelSpecFromHfConfig(text);
    ASSERT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(spec.status().message(), HasSubstr("hf_config_json")) << text;
  }
}

TEST(HfConfigTest, Qwen3MoeDenseLayerPrefix) {
  const std::string base =
      R"({"model_type": "qwen3_moe", "hidden_size": 64, "num_hidden_layers": 4,
          "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
          "intermediate_size": 128, "moe_intermediate_size": 32, "num_experts": 8,
          "num_experts_per_tok": 2, "vocab_size": 100, )";
  absl::StatusOr<ModelSpec> spec =
      ModelSpecFromHfConfig(base + R"("mlp_only_layers": [0, 1]})");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->first_k_dense_layers(), 2);
  spec = ModelSpecFromHfConfig(base + R"("mlp_only_layers": [3]})");
  ASSERT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(spec.status().message(),
              HasSubstr("hf_config_json.mlp_only_layers"));
  spec = ModelSpecFromHfConfig(base + R"("decoder_sparse_step": 2})");
  ASSERT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(spec.status().message(),
              HasSubstr("hf_config_json.decoder_sparse_step"));
}

TEST(HfConfigTest, ThroughResolveModel) {
  shardplan::v1::ModelSource source;
  source.set_hf_config_json(ReadHf("bert-base-uncased.json"));
  absl::StatusOr<ModelSpec> spec = ResolveModel(source);
  ASSERT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      spec.status().message(),
      HasSubstr("model.hf_config_json: unsupported model_type \"bert\""));
  source.set_hf_config_json(ReadHf("qwen3-32b.json"));
  spec = ResolveModel(source);
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->hidden_size(), 5120);
}

// nlohmann stops at a NUL byte; what follows it must not be ignored.
TEST(HfConfigTest, NulByteAndTrailingTextAreRejected) {
  const std::string valid = ReadHf("qwen3-32b.json");
  ASSERT_TRUE(ModelSpecFromHfConfig(valid).ok());
  shardplan::v1::ModelSource source;
  source.set_hf_config_json(valid + std::string(1, '\0') +
                            "{\"garbage\": [1,2");
  absl::StatusOr<ModelSpec> spec = ResolveModel(source);
  ASSERT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(spec.status().message(),
              HasSubstr(absl::StrCat(
                  "model.hf_config_json: NUL byte at offset ", valid.size())));
  // A lone NUL at the end is rejected too: it is not JSON whitespace.
  spec = ModelSpecFromHfConfig(valid + std::string(1, '\0'));
  ASSERT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(spec.status().message(), HasSubstr("NUL byte"));
}

}  // namespace
}  // namespace shardplan::simulator
