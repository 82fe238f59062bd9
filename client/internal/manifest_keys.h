// The key names of the `plan --output yaml` manifest (kind ShardingPlan), in
// one table for its writer (render.cc) and its reader (`replan --current`,
// request_builder.cc): a renamed key cannot break the round trip silently.
#ifndef SHARDPLAN_CLIENT_INTERNAL_MANIFEST_KEYS_H_
#define SHARDPLAN_CLIENT_INTERNAL_MANIFEST_KEYS_H_

namespace shardplan::client::internal::manifest {

// Top level.
inline constexpr char kApiVersion[] = "apiVersion";
inline constexpr char kApiVersionValue[] = "shardplan.dev/v1";
inline constexpr char kKind[] = "kind";
inline constexpr char kKindValue[] = "ShardingPlan";
inline constexpr char kModel[] = "model";
inline constexpr char kCluster[] = "cluster";
inline constexpr char kParallelism[] = "parallelism";
inline constexpr char kOperatorSharding[] = "operatorSharding";
// Under kCluster.
inline constexpr char kHardware[] = "hardware";
inline constexpr char kGpus[] = "gpus";
inline constexpr char kGpusPerNode[] = "gpusPerNode";
// Under kParallelism.
inline constexpr char kReplicas[] = "replicas";
inline constexpr char kData[] = "data";
inline constexpr char kTensor[] = "tensor";
inline constexpr char kPipeline[] = "pipeline";
inline constexpr char kExpert[] = "expert";
inline constexpr char kMicroBatches[] = "microBatches";
inline constexpr char kBatchSizePerReplica[] = "batchSizePerReplica";
inline constexpr char kStageLayers[] = "stageLayers";

}  // namespace shardplan::client::internal::manifest

#endif  // SHARDPLAN_CLIENT_INTERNAL_MANIFEST_KEYS_H_
