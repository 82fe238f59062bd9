// Turns a shardplan plan into the launch command of an inference engine (vLLM,
// SGLang, TensorRT-LLM) in that engine's own flags, with warnings for what the
// engine cannot express.
#ifndef SHARDPLAN_CLIENT_EMIT_H_
#define SHARDPLAN_CLIENT_EMIT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shardplan/v1/shardplan.pb.h"

namespace shardplan::client {

enum class Engine { kVllm, kSglang, kTrtllm };

// "vllm", "sglang", "trtllm" → Engine; INVALID_ARGUMENT quoting the value
// otherwise.
absl::StatusOr<Engine> ParseEngine(absl::string_view name);

// What the emitter needs besides the plan.
struct EmitContext {
  // Catalog name or spec name; mapped to a Hugging Face id by HuggingFaceId().
  std::string model_name;
  bool is_moe = false;
  std::string weight_dtype;    // "", "bf16", "fp8", "fp4"
  std::string kv_cache_dtype;  // same
  int gpus_per_node = 8;
};

struct EmittedCommand {
  // A shell command (possibly several lines joined with " \\\n  "), preceded by
  // "# ..." comment lines where the engine needs more than one process or a
  // config file.
  std::string command;
  // One line each, for stderr: plan features the engine cannot express, and
  // what the command does instead.
  std::vector<std::string> warnings;
};

// The Hugging Face repository id of a catalog model ("llama-3.1-70b" →
// "meta-llama/Llama-3.1-70B-Instruct"); "" when unknown.
std::string HuggingFaceId(absl::string_view catalog_name);

// Whether `model_name` looks like a mixture-of-experts model by its catalog
// name.
bool CatalogModelIsMoe(absl::string_view catalog_name);

// The Megatron default dimension of an operator ("qkv" → "column"); "" when
// unknown.
std::string MegatronDim(absl::string_view op);

// The plan's dimension for `op`: its operator_sharding entry, else the Megatron
// default.
std::string PlanDim(const shardplan::v1::Plan& plan, absl::string_view op);

// Builds the launch command for `plan` (as returned by the server: degrees,
// operator dimensions, batch size, placement). Pure function; never fails: what
// it cannot express becomes a warning.
EmittedCommand EmitCommand(Engine engine, const shardplan::v1::Plan& plan,
                           const EmitContext& context);

}  // namespace shardplan::client

#endif  // SHARDPLAN_CLIENT_EMIT_H_
