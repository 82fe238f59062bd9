// Hugging Face config.json import (ModelSpecFromHfConfig): maps the
// per-architecture key names of transformers' configs onto ModelSpec.
// Structural checks (positive sizes, divisibility) happen afterwards in
// ModelDimsFromSpec; here we check presence and types.
#include "simulator/spec_hf.h"

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
#include "proto/status_macros.h"
#include "simulator/user_text.h"

namespace shardplan::simulator {
namespace {

using ::nlohmann::json;
using ::shardplan::v1::ModelSpec;

constexpr absl::string_view kSupported[] = {
    "llama",        "mistral",     "mixtral",          "qwen2",
    "qwen3",        "qwen3_moe",   "deepseek_v3",      "gpt_oss",
    "deepseek_v32", "glm_moe_dsa", "kimi_k25",         "kimi_k2",
    "qwen3_next",   "qwen3_5_moe", "qwen3_5_moe_text", "minimax_m2"};
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

// DeepSeek sparse attention's indexer (deepseek_v32, glm_moe_dsa). Missing
// sizes take the transformers config classes' defaults (`default_heads`:
// DeepseekV32Config 64, GlmMoeDsaConfig 32; head dim 128).
absl::Status ReadSparseIndexer(const json& config, int default_heads,
                               ModelSpec* spec) {
  ASSIGN_OR_RETURN(const int topk, GetInt(config, "index_topk", true));
  ASSIGN_OR_RETURN(const int heads,
                   GetInt(config, "index_n_heads", false, default_heads));
  ASSIGN_OR_RETURN(const int head_dim,
                   GetInt(config, "index_head_dim", false, 128));
  // Indexers shared between layers (one top-k reused by the next layers)
  // change the indexer cost, which the cost model does not describe.
  ASSIGN_OR_RETURN(const int freq, GetInt(config, "index_topk_freq", false, 1));
  if (freq != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        KeyPath("index_topk_freq"),
        ": only 1 (an indexer in every layer) is supported, got ", freq));
  }
  if (config.contains("compress_ratios")) {
    return absl::InvalidArgumentError(absl::StrCat(
        KeyPath("compress_ratios"),
        ": compressed sparse attention is not supported (DeepSeek sparse "
        "attention with an uncompressed latent cache is)"));
  }
  spec->set_index_topk(topk);
  spec->set_index_n_heads(heads);
  spec->set_index_head_dim(head_dim);
  return absl::OkStatus();
}

// Qwen3-Next / Qwen3.5 MoE: hybrid Gated DeltaNet + full attention, MoE with
// a shared expert in every layer.
absl::Status ReadQwenHybridMoe(const json& config, ModelSpec* spec) {
  RETURN_IF_ERROR(ReadQwen3Moe(config, spec));
  ASSIGN_OR_RETURN(const int shared,
                   GetInt(config, "shared_expert_intermediate_size", false, 0));
  const int expert = spec->moe_intermediate_size();
  if (shared % expert != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(KeyPath("shared_expert_intermediate_size"), " (", shared,
                     ") must be a multiple of moe_intermediate_size (", expert,
                     "): the shared expert is modelled as whole experts"));
  }
  spec->set_num_shared_experts(shared / expert);
  ASSIGN_OR_RETURN(const int interval,
                   GetInt(config, "full_attention_interval", false, 4));
  const int layers = spec->num_layers();
  const auto types = config.find("layer_types");
  if (types != config.end() && !types->is_null()) {
    if (!types->is_array() || static_cast<int>(types->size()) != layers) {
      return absl::InvalidArgumentError(absl::StrCat(
          KeyPath("layer_types"), " must be a list of num_hidden_layers (",
          layers, ") entries, got ", Shown(*types)));
    }
    for (int i = 0; i < layers; ++i) {
      const json& t = (*types)[i];
      const bool full = interval > 0 && (i + 1) % interval == 0;
      const char* want = full ? "full_attention" : "linear_attention";
      if (!t.is_string() || t.get<std::string>() != want) {
        return absl::InvalidArgumentError(absl::StrCat(
            KeyPath(absl::StrCat("layer_types[", i, "]")), ": expected \"",
            want, "\" (every full_attention_interval = ", interval,
            "th layer is full attention; other layouts are not supported), "
            "got ",
            Shown(t)));
      }
    }
  }
  ASSIGN_OR_RETURN(const int key_heads,
                   GetInt(config, "linear_num_key_heads", true));
  ASSIGN_OR_RETURN(const int value_heads,
                   GetInt(config, "linear_num_value_heads", true));
  ASSIGN_OR_RETURN(const int key_dim,
                   GetInt(config, "linear_key_head_dim", true));
  ASSIGN_OR_RETURN(const int value_dim,
                   GetInt(config, "linear_value_head_dim", true));
  ASSIGN_OR_RETURN(const int conv,
                   GetInt(config, "linear_conv_kernel_dim", false, 4));
  ASSIGN_OR_RETURN(const bool gate, GetBool(config, "attn_output_gate", true));
  spec->set_full_attention_interval(interval);
  spec->set_linear_num_key_heads(key_heads);
  spec->set_linear_num_value_heads(value_heads);
  spec->set_linear_key_head_dim(key_dim);
  spec->set_linear_value_head_dim(value_dim);
  spec->set_linear_conv_kernel_dim(conv);
  spec->set_attention_output_gate(gate);
  return absl::OkStatus();
}

// MiniMax-M2: GQA attention, MoE of num_local_experts experts of
// intermediate_size in every layer.
absl::Status ReadMinimaxM2(const json& config, ModelSpec* spec) {
  ASSIGN_OR_RETURN(const int experts,
                   GetInt(config, "num_local_experts", true));
  ASSIGN_OR_RETURN(const int top_k,
                   GetInt(config, "num_experts_per_tok", true));
  ASSIGN_OR_RETURN(const int width, GetInt(config, "intermediate_size", true));
  ASSIGN_OR_RETURN(const int shared,
                   GetInt(config, "shared_intermediate_size", false, 0));
  if (shared != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        KeyPath("shared_intermediate_size"),
        ": a shared expert is not supported for minimax_m2, got ", shared));
  }
  // attn_type_list: 1 = softmax attention; 0 (lightning / linear attention
  // of MiniMax-01) is another architecture.
  const auto types = config.find("attn_type_list");
  if (types != config.end() && !types->is_null()) {
    if (!types->is_array()) {
      return absl::InvalidArgumentError(absl::StrCat(
          KeyPath("attn_type_list"), " must be a list, got ", Shown(*types)));
    }
    for (size_t i = 0; i < types->size(); ++i) {
      const json& t = (*types)[i];
      if (!t.is_number_integer() || t.get<int64_t>() != 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            KeyPath(absl::StrCat("attn_type_list[", i, "]")),
            ": only 1 (full softmax attention) is supported, got ", Shown(t)));
      }
    }
  }
  spec->set_num_experts(experts);
  spec->set_experts_per_token(top_k);
  spec->set_moe_intermediate_size(width);
  return absl::OkStatus();
}

// The architecture fields of `config` (the language model's config) by
// model_type into `spec`.
absl::Status ReadArchitecture(const std::string& model_type, const json& config,
                              ModelSpec* spec) {
  RETURN_IF_ERROR(ReadCommon(config, spec));
  if (model_type == "llama" || model_type == "mistral" ||
      model_type == "qwen2" || model_type == "qwen3") {
    ASSIGN_OR_RETURN(const int intermediate,
                     GetInt(config, "intermediate_size", true));
    spec->set_intermediate_size(intermediate);
    spec->set_family(model_type == "llama"     ? "llama"
                     : model_type == "mistral" ? "mistral"
                                               : "qwen");
  } else if (model_type == "mixtral") {
    ASSIGN_OR_RETURN(const int intermediate,
                     GetInt(config, "intermediate_size", true));
    ASSIGN_OR_RETURN(const int experts,
                     GetInt(config, "num_local_experts", true));
    ASSIGN_OR_RETURN(const int top_k,
                     GetInt(config, "num_experts_per_tok", true));
    spec->set_intermediate_size(intermediate);
    spec->set_num_experts(experts);
    spec->set_experts_per_token(top_k);
    spec->set_moe_intermediate_size(
        intermediate);  // each expert is a full-width SwiGLU
    spec->set_family("mixtral");
  } else if (model_type == "qwen3_moe") {
    RETURN_IF_ERROR(ReadQwen3Moe(config, spec));
    spec->set_family("qwen");
  } else if (model_type == "qwen3_next" || model_type == "qwen3_5_moe" ||
             model_type == "qwen3_5_moe_text") {
    RETURN_IF_ERROR(ReadQwenHybridMoe(config, spec));
    spec->set_family("qwen");
  } else if (model_type == "deepseek_v3" || model_type == "kimi_k2" ||
             model_type == "kimi_k25") {
    RETURN_IF_ERROR(ReadDeepseekV3(config, spec));
    spec->set_family(model_type == "deepseek_v3" ? "deepseek" : "kimi");
  } else if (model_type == "deepseek_v32") {
    RETURN_IF_ERROR(ReadDeepseekV3(config, spec));
    RETURN_IF_ERROR(ReadSparseIndexer(config, 64, spec));
    spec->set_family("deepseek");
  } else if (model_type == "glm_moe_dsa") {
    RETURN_IF_ERROR(ReadDeepseekV3(config, spec));
    RETURN_IF_ERROR(ReadSparseIndexer(config, 32, spec));
    spec->set_family("glm");
  } else if (model_type == "minimax_m2") {
    RETURN_IF_ERROR(ReadMinimaxM2(config, spec));
    spec->set_family("minimax");
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
    spec->set_intermediate_size(intermediate);
    spec->set_num_experts(experts);
    spec->set_experts_per_token(top_k);
    spec->set_moe_intermediate_size(intermediate);
    spec->set_family("gpt-oss");
  } else {
    return absl::InvalidArgumentError(absl::StrFormat(
        "hf_config_json: unsupported model_type %s; supported: %s",
        QuoteUserText(model_type), absl::StrJoin(kSupported, ", ")));
  }
  return absl::OkStatus();
}

// The checkpoint's dtype from a quantization_config object: block-FP8
// (DeepSeek, MiniMax), MXFP4 (gpt-oss), ModelOpt FP8/NVFP4, 4-bit integer
// (compressed-tensors pack-quantized, Kimi: planned as 4-bit weights). ""
// when it does not say.
std::string QuantizedDtype(const json& quant) {
  std::string method;
  for (const char* key : {"quant_method", "quant_algo", "format"}) {
    const auto it = quant.find(key);
    if (it != quant.end() && it->is_string()) {
      absl::StrAppend(&method, absl::AsciiStrToLower(it->get<std::string>()),
                      " ");
    }
  }
  if (absl::StrContains(method, "fp4")) return "fp4";
  if (absl::StrContains(method, "fp8")) return "fp8";
  if (absl::StrContains(method, "pack-quantized")) {
    const auto groups = quant.find("config_groups");
    if (groups != quant.end() && groups->is_object()) {
      for (const auto& group : groups->items()) {
        if (!group.value().is_object()) continue;
        const auto weights = group.value().find("weights");
        if (weights == group.value().end() || !weights->is_object()) continue;
        const auto bits = weights->find("num_bits");
        if (bits != weights->end() && bits->is_number_integer() &&
            bits->get<int64_t>() == 4) {
          return "fp4";
        }
      }
    }
  }
  return "";
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
  // Multimodal wrappers (Kimi-K2.5, Qwen3.5) keep the language model in
  // text_config; the vision tower is not planned.
  const json* text = &config;
  const bool wrapped = model_type == "kimi_k25" || model_type == "qwen3_5_moe";
  if (wrapped) {
    const auto it = config.find("text_config");
    if (it == config.end() || !it->is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "hf_config_json.text_config is missing or not an object (model_type ",
          model_type, " keeps its language model there)"));
    }
    text = &*it;
  }

  ModelSpec spec;
  try {
    const absl::Status read = ReadArchitecture(model_type, *text, &spec);
    if (!read.ok()) {
      if (!wrapped) return read;
      // Name the nested field: hf_config_json.text_config.<key>.
      std::string message(read.message());
      const std::string root = "hf_config_json.";
      if (absl::StartsWith(message, root)) {
        message =
            absl::StrCat(root, "text_config.", message.substr(root.size()));
      }
      return absl::Status(read.code(), message);
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
  // loads. Wrappers may keep quantization_config at either level.
  for (const json* level : {static_cast<const json*>(&config), text}) {
    const auto quant_it = level->find("quantization_config");
    if (quant_it != level->end() && quant_it->is_object()) {
      const std::string dtype = QuantizedDtype(*quant_it);
      if (!dtype.empty()) {
        spec.set_native_dtype(dtype);
        break;
      }
    }
  }
  spec.set_description(
      absl::StrCat("imported from a Hugging Face config.json (model_type ",
                   model_type, ")"));
  return spec;
}

}  // namespace shardplan::simulator
