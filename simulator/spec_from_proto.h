// API messages -> the simulator's compact types, validated: one validator per
// message, each returning the checked internal value or INVALID_ARGUMENT with
// a field path relative to the request ("model.spec.hidden_size must be > 0,
// got 0"; "cluster.num_gpus (12) must be a multiple of cluster.gpus_per_node
// (8)"). NaN, infinities and absurd sizes (proto/limits.h) are rejected.
#ifndef SHARDPLAN_SIMULATOR_SPEC_FROM_PROTO_H_
#define SHARDPLAN_SIMULATOR_SPEC_FROM_PROTO_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/types.h"

namespace shardplan::simulator {

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

}  // namespace shardplan::simulator

#endif  // SHARDPLAN_SIMULATOR_SPEC_FROM_PROTO_H_
