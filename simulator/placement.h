// Placement: which GPUs form each tensor-parallel group, expert domain and
// pipeline stage of a plan, and which of them cross node boundaries. The one
// owner of the rank order, used by the cost model (group shapes per
// evaluation) and by the proto conversion (which nodes host what).
//
// Rank order, outermost first: replica, pipeline stage, attention data-parallel
// rank, tensor-parallel rank. So a replica is a contiguous block of GPUs, a
// stage of a replica (an MoE expert domain: dp x tp ranks) is a contiguous
// block inside it, and a tp group is contiguous inside the stage. With nodes of
// G GPUs this keeps tp groups and expert domains inside a node whenever their
// size divides G, and puts stage boundaries on node boundaries whenever a
// stage fills whole nodes: the layouts engines deploy (vLLM/SGLang DP
// attention + EP inside one instance, one instance per replica). The last node
// may be partial (num_gpus not a multiple of G).
//
// "Node" in the group shapes below means link domain: the NVLink domain,
// which is one node except on NVL72 racks (GB200/GB300: 72 GPUs over 18 nodes
// of 4, ClusterDims::nvlink_domain_gpus), where a tp group or expert domain
// of up to 72 GPUs spanning nodes still rides NVLink. Rank-to-node listings
// (NodeOfRank, WholeNodeSizes, LargestNodeGpus) count real nodes.
//
// Dense models have no expert domain: their attention data-parallel ranks are
// independent copies, so dense dp counts as replicas here (replicas * dp
// copies, each pp x tp), which keeps every dense plan's meaning.
#ifndef SHARDPLAN_SIMULATOR_PLACEMENT_H_
#define SHARDPLAN_SIMULATOR_PLACEMENT_H_

#include <cstdint>
#include <vector>

#include "simulator/types.h"

namespace shardplan::simulator {

// The shape of the worst-placed instance of a group of ranks: `n` ranks of
// which at least `per_node` share each link domain it touches (n == per_node:
// inside one domain, on NVLink), over `nodes` link domains.
struct GroupShape {
  int n = 1;
  int per_node = 1;
  int nodes = 1;
  bool spans_nodes() const { return nodes > 1; }
};

// Group shapes of a plan on a cluster (worst instance of each kind).
struct PlanPlacement {
  int replicas = 1;    // independent copies (dense: replicas * dp)
  int dp = 1;          // attention data-parallel ranks per stage (dense: 1)
  int stage_size = 1;  // GPUs per stage of a replica: dp * tp
  GroupShape tp;       // a tensor-parallel group
  GroupShape domain;   // a stage of a replica (MoE: the expert domain)
  // An expert's tensor-parallel group: stage_size / ep consecutive ranks of a
  // domain (MoE; dense: the stage).
  GroupShape expert_tp;
  GroupShape replica;           // all GPUs of one replica
  bool p2p_inter_node = false;  // some stage boundary crosses nodes
  // Stage boundaries of the worst replica whose sends cross nodes (the others
  // stay inside a node: both stages lie in it).
  int p2p_inter_node_boundaries = 0;
};

// Replicas placed alike: `count` of them with the shapes of `placement`
// (whose `replicas` is the plan's total, as PlacePlan's).
struct ReplicaClass {
  int count = 0;
  PlanPlacement placement;
};

// Contiguous blocks of `size` ranks at offsets 0, size, 2*size, ... over
// `num_gpus` ranks in nodes of `gpus_per_node` (last node possibly partial):
// the worst block's shape (fewest members in one node).
GroupShape ContiguousBlockShape(int size, int num_gpus, int gpus_per_node);

// The same over `cluster`'s link domains: uniform nodes (or NVLink domains
// of several nodes) as above, or nodes of different sizes
// (ClusterDims::node_gpus), where every block is looked at.
GroupShape ContiguousBlockShape(int size, const ClusterDims& cluster);

// The node that holds global rank `rank` (clamped to the last node).
int64_t NodeOfRank(const ClusterDims& cluster, int64_t rank);

// The link domain that holds global rank `rank`: its NVLink domain where one
// spans several nodes (NVL72 racks), else its node. Ranks of different
// domains talk over InfiniBand.
int64_t LinkDomainOfRank(const ClusterDims& cluster, int64_t rank);

// Real nodes spanned by `count` contiguous blocks of `size` ranks from
// `first_rank`: the most any block spans, and whether some block spans nodes
// holding different numbers of its ranks (an uneven multi-node instance).
struct BlockSpan {
  int nodes = 1;
  bool uneven = false;
};
// On uniform nodes only the blocks of one period of the node pattern and
// those near the partial last node are looked at, so the cost does not grow
// with the cluster; nodes of different sizes look at every block.
BlockSpan BlocksNodeSpan(const ClusterDims& cluster, int64_t first_rank,
                         int size, int count);

// Stage boundaries whose sends cross link domains, the most of any of
// `replicas` consecutive replicas of `pp` stages of `stage_size` ranks from
// rank 0 of `cluster` (PlanPlacement::p2p_inter_node_boundaries).
int P2pInterNodeBoundaries(const ClusterDims& cluster, int stage_size, int pp,
                           int64_t replicas);

// ContiguousBlockShape(size, cluster) of every size 1..max_size, and the
// P2pInterNodeBoundaries of every replica of up to max_size GPUs that tiles
// the cluster, computed once per cluster (the cost model keeps one per
// problem, so its evaluations look them up instead of recomputing them).
// Uniform nodes only: a cluster of listed node sizes gets an empty table,
// which computes every shape. Sizes beyond the table are computed too.
class BlockShapeTable {
 public:
  BlockShapeTable() = default;
  BlockShapeTable(const ClusterDims& cluster, int max_size);
  GroupShape Shape(int size, const ClusterDims& cluster) const {
    if (size >= 1 && size < static_cast<int>(shapes_.size())) {
      return shapes_[size];
    }
    return ContiguousBlockShape(size, cluster);
  }
  // P2pInterNodeBoundaries(cluster, replica_size / pp, pp, num_gpus /
  // replica_size) for a replica of `replica_size` GPUs (dividing the
  // cluster's) in `pp` > 1 stages whose replica spans link domains; -1 when
  // the table does not hold it.
  int P2pBoundaries(int replica_size, int pp) const;

 private:
  std::vector<GroupShape> shapes_;  // [size]; [0] unused
  struct P2pEntry {
    int replica_size;
    int pp;
    int boundaries;
  };
  std::vector<P2pEntry> p2p_;  // ascending (replica_size, pp)
};

// Placement of `plan` (degrees already validated) on `cluster`. `shapes`:
// a table built for this `cluster`, or null.
PlanPlacement PlacePlan(const PlanDims& plan, const ClusterDims& cluster,
                        bool moe, const BlockShapeTable* shapes = nullptr);

// True when replicas of one plan can be placed differently on `cluster`: node
// groups of different sizes or a partial last node. Cheap; lets callers skip
// ReplicaClasses on uniform clusters.
bool ReplicasMayDiffer(const ClusterDims& cluster);

// The replicas of `plan` on `cluster` grouped by their own shapes (a replica
// on an 8-GPU node keeps tp 8 on NVLink while one over two 4-GPU nodes does
// not), worst class first. Cost O(replicas * (pp + blocks)); call only when
// ReplicasMayDiffer.
std::vector<ReplicaClass> ReplicaClasses(const PlanDims& plan,
                                         const ClusterDims& cluster, bool moe);

// Disaggregated plans (simulator/disaggregated.h): each pool is a contiguous
// block of ranks, its instances contiguous blocks inside it. Where nodes
// differ in size (node groups of different sizes, placed bigger nodes first,
// or a partial last node) the pool whose instances have more GPUs takes the
// lowest ranks: the instances that need a big node get one, and the smaller
// instances of the other pool fill the small nodes, where they fit as well
// (8, 8, 4, 4 GPUs: two tp-8 decode and two tp-4 prefill instances all stay
// inside a node; prefill first would split a decode instance over the two
// 4-GPU nodes). Otherwise, and on a tie, prefill first: on uniform whole
// nodes the order moves no instance off its nodes when instance sizes divide
// or are multiples of the node size, so the long-standing layout is kept.
// The plan's placement (StagePlacement) carries the result to the client.
bool DecodePoolFirst(const PlanDims& plan, const ClusterDims& cluster);
// First global rank of each pool of a disaggregated plan.
int64_t PrefillPoolFirstRank(const PlanDims& plan, const ClusterDims& cluster);
int64_t DecodePoolFirstRank(const PlanDims& plan, const ClusterDims& cluster);

// The `count` instances of `instance` (an aggregated plan with replicas 1,
// e.g. a pool instance of a disaggregated plan) laid out one after another
// from global rank `first_rank` of `cluster`, grouped by their own shapes
// (worst class first, as ReplicaClasses). Each class's placement describes
// one instance (its `replicas`: 1, or a dense instance's dp copies).
std::vector<ReplicaClass> InstanceClasses(const PlanDims& instance, int count,
                                          int64_t first_rank,
                                          const ClusterDims& cluster, bool moe);

// Of the pairs (prefill instance, decode instance) of a disaggregated plan,
// the fraction whose two instances lie inside one common link domain (their KV
// transfer rides NVLink; every other pair's crosses nodes over InfiniBand).
// Routers pair any prefill with any decode instance, so this is the share of
// requests whose transfer stays inside a node.
double PoolPairsInsideOneNode(const PlanDims& plan, const ClusterDims& cluster);

// Instance sizes made of whole nodes of `cluster` (every sum of some of its
// nodes, the partial last node included), ascending, up to num_gpus.
std::vector<int> WholeNodeSizes(const ClusterDims& cluster);

// GPUs of the cluster's biggest node.
int LargestNodeGpus(const ClusterDims& cluster);

// First global rank of stage `stage` of replica `replica` (and its size) in the
// rank order above, for listing which nodes host what.
int64_t StageFirstRank(const PlanPlacement& placement, int pp, int replica,
                       int stage);

// Layers of pipeline stage `stage` of `plan` for a model of `layers` layers:
// plan.stage_layers when it lists every stage, else as uniform as possible
// (the first layers % pp stages take one more).
int StageLayerCount(const PlanDims& plan, int layers, int stage);

}  // namespace shardplan::simulator

#endif  // SHARDPLAN_SIMULATOR_PLACEMENT_H_
