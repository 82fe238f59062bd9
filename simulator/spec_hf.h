// The Hugging Face config.json import (part of the API adapter: it yields the
// API's ModelSpec).
#ifndef SHARDPLAN_SIMULATOR_SPEC_HF_H_
#define SHARDPLAN_SIMULATOR_SPEC_HF_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shardplan/v1/shardplan.pb.h"

namespace shardplan::simulator {

// Imports a Hugging Face config.json (model_type llama, mistral, mixtral,
// qwen2, qwen3, qwen3_moe, deepseek_v3, gpt_oss). INVALID_ARGUMENT naming an
// unsupported model_type or a missing/invalid key.
absl::StatusOr<shardplan::v1::ModelSpec> ModelSpecFromHfConfig(
    absl::string_view config_json);

}  // namespace shardplan::simulator

#endif  // SHARDPLAN_SIMULATOR_SPEC_HF_H_
