// Conversions between the API's proto messages and the simulator's compact
// types, with validation that names the offending field; the Hugging Face
// config.json import; and the built-in catalog of models and hardware. Spec
// text (JSON/YAML -> proto) is proto/spec_text.h.
#ifndef SHARDPLAN_SIMULATOR_SPEC_H_
#define SHARDPLAN_SIMULATOR_SPEC_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/types.h"

namespace shardplan::simulator {

// --- Hugging Face import ---------------------------------------------------
// Imports a Hugging Face config.json (model_type llama, mistral, mixtral,
// qwen2, qwen3, qwen3_moe, deepseek_v3, gpt_oss). INVALID_ARGUMENT naming an
// unsupported model_type or a missing/invalid key.
absl::StatusOr<shardplan::v1::ModelSpec> ModelSpecFromHfConfig(
    absl::string_view config_json);

// --- Catalog
// -----------------------------------------------------------------------------
// Built-in models and hardware, compiled in from simulator/catalog/*.yaml.
const std::vector<shardplan::v1::ModelSpec>& CatalogModels();
const std::vector<shardplan::v1::HardwareSpec>& CatalogHardware();
// NOT_FOUND listing the known names.
absl::StatusOr<shardplan::v1::ModelSpec> FindCatalogModel(
    absl::string_view name);
absl::StatusOr<shardplan::v1::HardwareSpec> FindCatalogHardware(
    absl::string_view name);
// What ListCatalog tells clients about a model (Hugging Face id, native dtype,
// total/active parameters, MoE), so that they keep no copies of their own.
// INVALID_ARGUMENT when `spec` does not validate (never for catalog entries).
absl::StatusOr<shardplan::v1::CatalogModelInfo> CatalogModelInfoFromSpec(
    const shardplan::v1::ModelSpec& spec);

// --- Proto -> compact, validated
// --------------------------------------------------------- Each returns
// INVALID_ARGUMENT with a field path relative to the request
// ("model.spec.hidden_size must be > 0, got 0"; "cluster.num_gpus (12) must be
// a multiple of cluster.gpus_per_node (8)"). NaN, infinities and absurd sizes
// are rejected.
absl::StatusOr<shardplan::v1::ModelSpec> ResolveModel(
    const shardplan::v1::ModelSource& source);
absl::StatusOr<ModelDims> ModelDimsFromSpec(
    const shardplan::v1::ModelSpec& spec, absl::string_view field_path);
absl::StatusOr<ClusterDims> ClusterDimsFromProto(
    const shardplan::v1::ClusterSpec& cluster);
absl::StatusOr<WorkloadDims> WorkloadDimsFromProto(
    const shardplan::v1::Workload& workload);
// All three of the above, as used by EvaluateRequest and PlanRequest.
absl::StatusOr<Problem> ProblemFromProto(
    const shardplan::v1::ModelSource& model,
    const shardplan::v1::ClusterSpec& cluster,
    const shardplan::v1::Workload& workload);
// Plan message -> PlanDims (unset operators take the Megatron default). Checks
// names and ranges only; CostModel::ValidatePlan checks the plan against the
// problem.
absl::StatusOr<PlanDims> PlanDimsFromProto(const shardplan::v1::Plan& plan);

// --- Compact -> proto
// --------------------------------------------------------------------
shardplan::v1::ModelSpec ModelSpecFromDims(const ModelDims& model);
// The plan with every operator listed and placement derived. micro_batches,
// batch_size and stage_layers stay as given (0 = default), so that
// PlanDimsFromProto(PlanToProto(p)) == p; the batch actually used is in the
// prediction.
shardplan::v1::Plan PlanToProto(const PlanDims& plan, const Problem& problem);
shardplan::v1::Prediction PredictionToProto(const Evaluation& evaluation,
                                            const Problem& problem);

}  // namespace shardplan::simulator

#endif  // SHARDPLAN_SIMULATOR_SPEC_H_
