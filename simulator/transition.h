// Re-planning: what moving a running deployment to a new plan on a changed
// cluster costs. The diff is placement-aware (simulator/placement.h decides
// which GPU of which node holds which shard: the layer range of its stage, its
// tensor-parallel slice, its expert subset, its replica): a GPU that already
// holds what the new plan puts there loads nothing, a node that disappears
// loses its shards, and every node is told what it loads. See
// docs/server-and-api.md (re-planning) for the rules and the figures.
#ifndef SHARDPLAN_SIMULATOR_TRANSITION_H_
#define SHARDPLAN_SIMULATOR_TRANSITION_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "simulator/types.h"

namespace shardplan::simulator {

// Read bandwidth per node for weights no surviving GPU holds (loaded from the
// checkpoint on shared storage): 5 GB/s, the top of the NFS v4 row (1-5 GB/s)
// of the storage table at
// https://flashgenius.net/guides/storage-systems-for-ai-workloads-ncp-aii-guide
// (a DGX H100's local NVMe RAID reads ~50 GB/s by the same table; checkpoints
// usually come from the shared file system, so this is the conservative
// figure).
inline constexpr double kStorageBytesPerSPerNode = 5e9;

// The deployment that runs now.
struct RunningDeployment {
  Problem problem;  // the model, the cluster it runs on, the workload
  PlanDims plan;    // passed CostModel::ValidatePlan for `problem`
  // KV cache per GPU of the in-flight requests (Evaluation.kv_cache_bytes at
  // the running batch).
  double kv_cache_bytes_per_gpu = 0;
  // Nodes of problem.cluster that are gone. Empty: when the new cluster has
  // fewer nodes, the last ones.
  std::vector<int> removed_nodes;
};

// What one node of the new cluster loads.
struct NodeLoad {
  int node = 0;  // index in the new cluster
  std::string node_group;
  double bytes = 0;
  double seconds = 0;
  // "replica 0 stage 1 layers 42-83 tp slices 0-7/8 (12.3 GB)", pieces joined
  // by "; "; MoE pieces name their experts ("experts 64-95").
  std::string what;
};

struct TransitionCost {
  // Weight bytes to load: the busiest GPU, and all GPUs together; of the
  // total, copied from surviving GPUs and read from storage.
  double max_bytes_per_gpu = 0;
  double total_bytes = 0;
  double peer_bytes = 0;
  double storage_bytes = 0;
  // KV cache of the in-flight requests of every running replica that loses a
  // GPU or whose shards change: they must be prefilled again.
  double kv_bytes_lost = 0;
  // GPUs of the new plan that keep exactly the shard they hold.
  int gpus_unchanged = 0;
  // The slowest GPU: its peer bytes over its InfiniBand link plus its node's
  // storage bytes at kStorageBytesPerSPerNode.
  double estimated_seconds = 0;
  // The same plan deployed from nothing (every shard from storage). For
  // reference only: a scale that depends on the plan would favour plans that
  // are slow to deploy, so the default objective does not use it.
  double fresh_seconds = 0;
  double fresh_bytes = 0;  // and its bytes (every GPU's whole shard)
  // Some running replica keeps all its GPUs and shards (it serves while the
  // others reload), or nothing changes at all.
  bool rolling = false;
  std::vector<NodeLoad> node_loads;  // Diff(..., true) only; loading nodes
};

// Immutable after Create; Diff is thread-safe and costs O(GPUs) (the running
// deployment's shards are computed once, in Create).
class TransitionModel {
 public:
  // INVALID_ARGUMENT naming `current.removed_nodes` when a removed node is out
  // of range or repeated, or when the new cluster has fewer nodes than
  // survive. `next` is the new problem (same model; the new cluster).
  static absl::StatusOr<std::unique_ptr<const TransitionModel>> Create(
      RunningDeployment running, const Problem& next,
      double storage_bytes_per_s_per_node = kStorageBytesPerSPerNode);

  // The cost of moving to `plan` (valid for the new problem). With
  // `with_node_loads`, also what each node loads. With `match_gpu_order`, each
  // surviving node chooses which of its GPUs takes which local rank so that
  // GPUs keep what they hold (the node load then names the order, e.g. "GPU
  // order 0,4,1,5,2,6,3,7"); without it rank k runs on GPU k, as
  // a plan made without the running deployment would be launched.
  TransitionCost Diff(const PlanDims& plan, bool with_node_loads = false,
                      bool match_gpu_order = true) const;

  const RunningDeployment& running() const { return running_; }
  // Seconds the running plan takes to deploy from nothing on its own cluster
  // (every shard from storage, the slowest node): the time scale of the
  // default objective, the same for every candidate plan of a request.
  double running_fresh_seconds() const { return running_fresh_seconds_; }
  // Weight bytes the running deployment holds over all its GPUs: the scale of
  // the default objective's byte tie-break.
  double running_bytes() const { return running_bytes_; }
  // Per node of the new cluster: the node of the running cluster it is, or -1
  // for an added node. Nodes match by index (survivors keep their order), or
  // by node-group name and order inside the group when both clusters name
  // their groups.
  const std::vector<int>& old_node_of() const { return old_node_of_; }

  ~TransitionModel();

 private:
  // What every GPU of the running deployment holds, computed once
  // (transition.cc).
  struct RunningGpus;

  TransitionModel(RunningDeployment running, const Problem& next,
                  double storage_bytes_per_s_per_node);
  RunningDeployment running_;
  Problem next_;
  double storage_bytes_per_s_per_node_;
  std::vector<int> old_node_of_;
  std::vector<bool> old_node_survives_;
  // First global rank of each node of the running cluster and of the new one.
  std::vector<int64_t> old_first_rank_, new_first_rank_;
  std::unique_ptr<const RunningGpus> running_gpus_;
  // Layer l (embedding 0, layers 1..L, LM head L+1) is held by a surviving,
  // complete stage of a running replica: prefix sums of that indicator.
  std::vector<int> peer_layers_prefix_;
  double running_fresh_seconds_ = 0;
  double running_bytes_ = 0;
};

// Fraction of throughput the default objective trades for a transition that
// takes as long as deploying the running plan from nothing
// (TransitionModel::running_fresh_seconds).
inline constexpr double kDefaultTransitionShare = 0.05;

// The default objective's tie-break: moving as many bytes as the running
// deployment holds costs as much as this fraction of the time scale in extra
// seconds. Small enough to decide only between plans whose throughput and
// transition seconds (nearly) tie, e.g. when both are bound by the same
// storage read; then the plan that keeps more shards wins.
inline constexpr double kDefaultBytesTieBreak = 1e-3;

// The re-planning objective of one request.
struct TransitionObjective {
  std::shared_ptr<const TransitionModel> model;
  double max_seconds = 0;  // > 0: plans slower to reach are infeasible
  // Log-throughput traded per second of transition; unset: the default rule
  // (DefaultTransitionWeight plus the byte tie-break).
  std::optional<double> weight_per_s;
};

// The default rule's log-throughput per second of transition:
// -ln(1 - kDefaultTransitionShare) / model.running_fresh_seconds(), one
// number per request (0 when the running plan holds no bytes).
double DefaultTransitionWeight(const TransitionModel& model);

// The log-throughput penalty of `cost` under `objective` (>= 0). With
// weight_per_s: weight_per_s * estimated_seconds. Default rule: w *
// (estimated_seconds + kDefaultBytesTieBreak * running_fresh_seconds *
// total_bytes / running_bytes), w = DefaultTransitionWeight; linear, so a
// transition twice as long costs twice as much for every plan alike.
double TransitionPenalty(const TransitionObjective& objective,
                         const TransitionCost& cost);

// Applies `objective` to `plan`'s `evaluation`: marks it infeasible
// (kTransitionTooSlow) when the transition exceeds max_seconds, and returns
// the penalty (0 for plans already infeasible).
double ApplyTransitionObjective(const TransitionObjective& objective,
                                const PlanDims& plan, Evaluation* evaluation);

// Candidate warm starts on the new problem derived from the running plan: the
// plan itself, then the same replica shape with as many replicas as the new
// GPUs allow, then the same stage shape with the pipeline depth that fills
// them. Unvalidated; callers keep the ones CostModel::ValidatePlan accepts.
std::vector<PlanDims> AdaptRunningPlan(const PlanDims& running,
                                       int new_num_gpus);

}  // namespace shardplan::simulator

#endif  // SHARDPLAN_SIMULATOR_TRANSITION_H_
