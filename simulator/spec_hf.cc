// Hugging Face config.json import (ModelSpecFromHfConfig): maps the
// per-architecture key names of transformers' configs onto ModelSpec.
// Structural checks (positive sizes, divisibility) happen afterwards in
// ModelDimsFromSpec; here we check presence and types.
#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "simulator/spec.h"
#include "simulator/status_macros.h"
#include "simulator/user_text.h"

namespace shardplan::simulator {
namespace {

using ::nlohmann::json;
using ::shardplan::v1::ModelSpec;

constexpr absl::string_view kSupported[] = {
    "llama", "mistral",   "mixtral",     "qwen2",
    "qwen3", "qwen3_moe", "deepseek_v3", "gpt_oss"};
constexpr size_t kMaxConfigBytes = 4u << 20;

std::string KeyPath(absl::string_view key) {
  return absl::StrCat("hf_config_json.", key);
}

std::string Shown(const json& value) {
  std::string s = value.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

// The integer at `key`. Missing (or null) keys give `fallback` when `required`
// is false.
absl::StatusOr<int> GetInt(const json& config, absl::string_view key,
                           bool required, int fallback = 0) {
  const auto it = config.find(std::string(key));
  if (it == config.end() || it->is_null()) {
    if (required) {
      return absl::InvalidArgumentError(
          absl::StrCat(KeyPath(key), " is missing"));
    }
    return fallback;
  }
  double value = 0;
  if (it->is_number_integer()) {
    if (it->is_number_unsigned()) {
      const uint64_t u = it->get<uint64_t>();
      value = u > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())
                  ? static_cast<double>(std::numeric_limits<int64_t>::max())
                  : static_cast<double>(u);
    } else {
      value = static_cast<double>(it->get<int64_t>());
    }
  } else if (it->is_number_float()) {
    value = it->get<double>();
    if (!std::isfinite(value) || value != std::floor(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat(KeyPath(key), " must be an integer, got ", Shown(*it)));
    }
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(KeyPath(key), " must be an integer, got ", Shown(*it)));
  }
  if (value < std::numeric_limits<int32_t>::min() ||
      value > std::numeric_limits<int32_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat(KeyPath(key), " is out of range, got ", Shown(*it)));
  }
  // Sizes: required keys must be positive, optional ones non-negative.
  if (value < (required ? 1 : 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        KeyPath(key), required ? " must be > 0, got " : " must be >= 0, got ",
        Shown(*it)));
  }
  return static_cast<int>(value);
}

absl::StatusOr<int> GetFirstInt(const json& config,
                                std::initializer_list<absl::string_view> keys,
                                bool required, int fallback = 0) {
  for (absl::string_view key : keys) {
    const auto it = config.find(std::string(key));
    if (it != config.end() && !it->is_null()) return GetInt(config, key, true);
  }
  if (required) {
    return absl::InvalidArgumentError(
        absl::StrCat(KeyPath(*keys.begin()), " is missing (also looked for ",
                     absl::StrJoin(keys.begin() + 1, keys.end(), ", "), ")"));
  }
  return fallback;
}

absl::StatusOr<bool> GetBool(const json& config, absl::string_view key,
                             bool fallback) {
  const auto it = config.find(std::string(key));
  if (it == config.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) {
    return absl::InvalidArgumentError(
        absl::StrCat(KeyPath(key), " must be true or false, got ", Shown(*it)));
  }
  return it->get<bool>();
}

// Fields every supported decoder shares.
absl::Status ReadCommon(const json& config, ModelSpec* spec) {
  ASSIGN_OR_RETURN(const int hidden, GetInt(config, "hidden_size", true));
  ASSIGN_OR_RETURN(const int layers, GetInt(config, "num_hidden_layers", true));
  ASSIGN_OR_RETURN(const int heads,
                   GetInt(config, "num_attention_heads", true));
  ASSIGN_OR_RETURN(const int kv_heads,
                   GetInt(config, "num_key_value_heads", false, heads));
  ASSIGN_OR_RETURN(const int head_dim, GetInt(config, "head_dim", false, 0));
  ASSIGN_OR_RETURN(const int vocab, GetInt(config, "vocab_size", true));
  ASSIGN_OR_RETURN(const bool tie,
                   GetBool(config, "tie_word_embeddings", false));
  spec->set_hidden_size(hidden);
  spec->set_num_layers(layers);
  spec->set_num_attention_heads(heads);
  spec->set_num_key_value_heads(kv_heads);
  spec->set_head_dim(head_dim);
  spec->set_vocab_size(vocab);
  spec->set_tie_word_embeddings(tie);
  return absl::OkStatus();
}

absl::Status ReadQwen3Moe(const json& config, ModelSpec* spec) {
  ASSIGN_OR_RETURN(const int intermediate,
                   GetInt(config, "intermediate_size", false, 0));
  ASSIGN_OR_RETURN(const int experts, GetInt(config, "num_experts", true));
  ASSIGN_OR_RETURN(const int top_k,
                   GetInt(config, "num_experts_per_tok", true));
  ASSIGN_OR_RETURN(const int moe_intermediate,
                   GetInt(config, "moe_intermediate_size", true));
  ASSIGN_OR_RETURN(const int sparse_step,
                   GetInt(config, "decoder_sparse_step", false, 1));
  if (sparse_step != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        KeyPath("decoder_sparse_step"),
        ": only 1 (an MoE block in every layer) is supported, got ",
        sparse_step));
  }
  // mlp_only_layers must be the first k layers (k dense layers, then MoE).
  int first_k_dense = 0;
  const auto it = config.find("mlp_only_layers");
  if (it != config.end() && !it->is_null()) {
    if (!it->is_array()) {
      return absl::InvalidArgumentError(absl::StrCat(
          KeyPath("mlp_only_layers"), " must be a list, got ", Shown(*it)));
    }
    for (size_t i = 0; i < it->size(); ++i) {
      const json& v = (*it)[i];
      if (!v.is_number_integer() ||
          v.get<int64_t>() != static_cast<int64_t>(i)) {
        return absl::InvalidArgumentError(
            absl::StrCat(KeyPath("mlp_only_layers"),
                         ": only a prefix [0, 1, ..., k-1] of dense layers is "
                         "supported, got ",
                         Shown(*it)));
      }
    }
    first_k_dense = static_cast<int>(it->size());
  }
  spec->set_intermediate_size(intermediate);
  spec->set_num_experts(experts);
  spec->set_experts_per_token(top_k);
  spec->set_moe_intermediate_size(moe_intermediate);
  spec->set_first_k_dense_layers(first_k_dense);
  return absl::OkStatus();
}

absl::Status ReadDeepseekV3(const json& config, ModelSpec* spec) {
  ASSIGN_OR_RETURN(const int intermediate,
                   GetInt(config, "intermediate_size", true));
  ASSIGN_OR_RETURN(const int experts, GetInt(config, "n_routed_experts", true));
  ASSIGN_OR_RETURN(const int top_k,
                   GetInt(config, "num_experts_per_tok", true));
  ASSIGN_OR_RETURN(const int moe_intermediate,
                   GetInt(config, "moe_intermediate_size", true));
  ASSIGN_OR_RETURN(const int shared,
                   GetInt(config, "n_shared_experts", false, 0));
  ASSIGN_OR_RETURN(const int first_k_dense,
                   GetInt(config, "first_k_dense_replace", false, 0));
  ASSIGN_OR_RETURN(const int layer_freq,
                   GetInt(config, "moe_layer_freq", false, 1));
  if (layer_freq != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(KeyPath("moe_layer_freq"),
                     ": only 1 (an MoE block in every layer after the first "
                     "first_k_dense_replace) is supported, got ",
                     layer_freq));
  }
  ASSIGN_OR_RETURN(const int kv_lora_rank,
                   GetInt(config, "kv_lora_rank", true));
  ASSIGN_OR_RETURN(const int q_lora_rank,
                   GetInt(config, "q_lora_rank", false, 0));
  ASSIGN_OR_RETURN(const int rope, GetInt(config, "qk_rope_head_dim", true));
  ASSIGN_OR_RETURN(const int nope, GetInt(config, "qk_nope_head_dim", true));
  ASSIGN_OR_RETURN(const int v_head_dim, GetInt(config, "v_head_dim", true));
  spec->set_intermediate_size(intermediate);
  spec->set_num_experts(experts);
  spec->set_experts_per_token(top_k);
  spec->set_moe_intermediate_size(moe_intermediate);
  spec->set_num_shared_experts(shared);
  spec->set_first_k_dense_layers(first_k_dense);
  spec->set_kv_lora_rank(kv_lora_rank);
  spec->set_q_lora_rank(q_lora_rank);
  spec->set_qk_rope_head_dim(rope);
  spec->set_qk_nope_head_dim(nope);
  spec->set_v_head_dim(v_head_dim);
  // The query/key head width; the KV cache holds the compressed latent instead.
  if (spec->head_dim() == 0) spec->set_head_dim(nope + rope);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ModelSpec> ModelSpecFromHfConfig(absl::string_view config_json) {
  if (config_json.size() > kMaxConfigBytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("hf_config_json is %d bytes, at most %d accepted",
                        config_json.size(), kMaxConfigBytes));
  }
  // nlohmann's lexer takes a NUL byte for the end of the input, so whatever
  // follows one would be silently ignored. JSON text cannot hold a raw NUL
  // (inside strings it is written \u0000), so any NUL is an error.
  const size_t nul = config_json.find('\0');
  if (nul != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "hf_config_json: NUL byte at offset %d of %d; JSON text cannot "
        "contain one (write \\u0000 inside a string)",
        nul, config_json.size()));
  }
  json config;
  try {
    config = json::parse(config_json.begin(), config_json.end());
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("hf_config_json: malformed JSON: ",
                     EscapeBounded(e.what(), kMaxQuotedBytes * 4)));
  }
  if (!config.is_object()) {
    return absl::InvalidArgumentError("hf_config_json: expected a JSON object");
  }
  const auto type_it = config.find("model_type");
  if (type_it == config.end() || !type_it->is_string()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "hf_config_json.model_type is missing or not a string; supported: ",
        absl::StrJoin(kSupported, ", ")));
  }
  const std::string model_type = type_it->get<std::string>();

  ModelSpec spec;
  try {
    RETURN_IF_ERROR(ReadCommon(config, &spec));
    if (model_type == "llama" || model_type == "mistral" ||
        model_type == "qwen2" || model_type == "qwen3") {
      ASSIGN_OR_RETURN(const int intermediate,
                       GetInt(config, "intermediate_size", true));
      spec.set_intermediate_size(intermediate);
      spec.set_family(model_type == "llama"     ? "llama"
                      : model_type == "mistral" ? "mistral"
                                                : "qwen");
    } else if (model_type == "mixtral") {
      ASSIGN_OR_RETURN(const int intermediate,
                       GetInt(config, "intermediate_size", true));
      ASSIGN_OR_RETURN(const int experts,
                       GetInt(config, "num_local_experts", true));
      ASSIGN_OR_RETURN(const int top_k,
                       GetInt(config, "num_experts_per_tok", true));
      spec.set_intermediate_size(intermediate);
      spec.set_num_experts(experts);
      spec.set_experts_per_token(top_k);
      spec.set_moe_intermediate_size(
          intermediate);  // each expert is a full-width SwiGLU
      spec.set_family("mixtral");
    } else if (model_type == "qwen3_moe") {
      RETURN_IF_ERROR(ReadQwen3Moe(config, &spec));
      spec.set_family("qwen");
    } else if (model_type == "deepseek_v3") {
      RETURN_IF_ERROR(ReadDeepseekV3(config, &spec));
      spec.set_family("deepseek");
    } else if (model_type == "gpt_oss") {
      ASSIGN_OR_RETURN(const int intermediate,
                       GetInt(config, "intermediate_size", true));
      ASSIGN_OR_RETURN(
          const int experts,
          GetFirstInt(config, {"num_local_experts", "num_experts"}, true));
      ASSIGN_OR_RETURN(
          const int top_k,
          GetFirstInt(config, {"num_experts_per_tok", "experts_per_token"},
                      true));
      spec.set_intermediate_size(intermediate);
      spec.set_num_experts(experts);
      spec.set_experts_per_token(top_k);
      spec.set_moe_intermediate_size(intermediate);
      spec.set_family("gpt-oss");
    } else {
      return absl::InvalidArgumentError(absl::StrFormat(
          "hf_config_json: unsupported model_type %s; supported: %s",
          QuoteUserText(model_type), absl::StrJoin(kSupported, ", ")));
    }
  } catch (const std::exception& e) {
    // nlohmann accessors are type-checked above; this only guards against
    // surprises.
    return absl::InvalidArgumentError(
        absl::StrCat("hf_config_json: ", e.what()));
  }

  std::string name = model_type;
  const auto name_it = config.find("_name_or_path");
  if (name_it != config.end() && name_it->is_string() &&
      !name_it->get<std::string>().empty()) {
    name = name_it->get<std::string>();
  }
  spec.set_name(name);
  if (absl::StrContains(name, '/')) spec.set_hugging_face_id(name);
  // The checkpoint's own dtype, so that a plan is sized for what an engine
  // loads: block-FP8 (DeepSeek), MXFP4 (gpt-oss), ModelOpt FP8/NVFP4.
  const auto quant_it = config.find("quantization_config");
  if (quant_it != config.end() && quant_it->is_object()) {
    std::string method;
    for (const char* key : {"quant_method", "quant_algo"}) {
      const auto it = quant_it->find(key);
      if (it != quant_it->end() && it->is_string()) {
        absl::StrAppend(&method, absl::AsciiStrToLower(it->get<std::string>()),
                        " ");
      }
    }
    if (absl::StrContains(method, "fp4")) {
      spec.set_native_dtype("fp4");
    } else if (absl::StrContains(method, "fp8")) {
      spec.set_native_dtype("fp8");
    }
  }
  spec.set_description(
      absl::StrCat("imported from a Hugging Face config.json (model_type ",
                   model_type, ")"));
  return spec;
}

}  // namespace shardplan::simulator
