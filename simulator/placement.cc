#include "simulator/placement.h"

#include <algorithm>
#include <numeric>

namespace shardplan::simulator {
namespace {

// Shape of the block [start, start + size) with nodes of g GPUs and n GPUs in
// all (the last node holds n - (nodes - 1) * g).
GroupShape BlockShape(int64_t start, int size, int64_t n, int g) {
  GroupShape s;
  s.n = size;
  const int64_t end = start + size;  // exclusive
  const int64_t first_node = start / g;
  const int64_t last_node = (end - 1) / g;
  s.nodes = static_cast<int>(last_node - first_node + 1);
  int64_t fewest = size;
  for (int64_t node = first_node; node <= last_node; ++node) {
    const int64_t lo = std::max(start, node * g);
    const int64_t hi = std::min({end, (node + 1) * g, n});
    fewest = std::min(fewest, hi - lo);
  }
  s.per_node = static_cast<int>(std::max<int64_t>(1, fewest));
  return s;
}

GroupShape Worse(const GroupShape& a, const GroupShape& b) {
  if (b.per_node != a.per_node) return b.per_node < a.per_node ? b : a;
  return b.nodes > a.nodes ? b : a;
}

}  // namespace

GroupShape ContiguousBlockShape(int size, int num_gpus, int gpus_per_node) {
  const int g = std::max(1, gpus_per_node);
  size = std::max(1, size);
  const int64_t n = std::max(size, num_gpus);
  const int64_t blocks = n / size;
  // Block offsets modulo g repeat every g / gcd(size, g) blocks; only the
  // blocks touching the (possibly partial) last node break the pattern.
  const int64_t period = g / std::gcd(size, g);
  GroupShape worst = BlockShape(0, size, n, g);
  for (int64_t k = 1; k < std::min(blocks, period); ++k) {
    worst = Worse(worst, BlockShape(k * size, size, n, g));
  }
  const int64_t tail = std::max<int64_t>(period, blocks - (2 * g) / size - 2);
  for (int64_t k = tail; k < blocks; ++k) {
    worst = Worse(worst, BlockShape(k * size, size, n, g));
  }
  return worst;
}

GroupShape ContiguousBlockShape(int size, const ClusterDims& cluster) {
  if (cluster.node_gpus.empty()) {
    return ContiguousBlockShape(size, cluster.num_gpus, cluster.gpus_per_node);
  }
  size = std::max(1, size);
  const std::vector<int>& nodes = cluster.node_gpus;
  GroupShape worst;
  worst.n = size;
  worst.per_node = size;
  size_t node = 0;
  int64_t node_first = 0;  // first rank of `node`
  const int64_t blocks = std::max<int64_t>(1, cluster.num_gpus / size);
  for (int64_t k = 0; k < blocks; ++k) {
    const int64_t start = k * size;
    const int64_t end = start + size;
    while (node + 1 < nodes.size() && node_first + nodes[node] <= start) {
      node_first += nodes[node++];
    }
    GroupShape s;
    s.n = size;
    s.nodes = 0;
    int64_t fewest = size;
    int64_t first = node_first;
    for (size_t j = node; j < nodes.size() && first < end; ++j) {
      const int64_t lo = std::max(start, first);
      const int64_t hi = std::min(end, first + nodes[j]);
      fewest = std::min(fewest, hi - lo);
      ++s.nodes;
      first += nodes[j];
    }
    s.nodes = std::max(1, s.nodes);
    s.per_node = static_cast<int>(std::max<int64_t>(1, fewest));
    worst = k == 0 ? s : Worse(worst, s);
  }
  return worst;
}

int64_t NodeOfRank(const ClusterDims& cluster, int64_t rank) {
  const int64_t last = std::max(1, cluster.num_nodes()) - 1;
  if (cluster.node_gpus.empty()) {
    return std::min(rank / std::max(1, cluster.gpus_per_node), last);
  }
  int64_t first = 0;
  for (size_t j = 0; j < cluster.node_gpus.size(); ++j) {
    first += cluster.node_gpus[j];
    if (rank < first) return static_cast<int64_t>(j);
  }
  return last;
}

PlanPlacement PlacePlan(const PlanDims& plan, const ClusterDims& cluster,
                        bool moe) {
  PlanPlacement p;
  const int replicas = std::max(1, plan.replicas);
  const int dp = std::max(1, plan.dp);
  const int tp = std::max(1, plan.tp);
  const int pp = std::max(1, plan.pp);
  p.replicas = moe ? replicas : replicas * dp;
  p.dp = moe ? dp : 1;
  p.stage_size = p.dp * tp;
  p.tp = ContiguousBlockShape(tp, cluster);
  p.domain = ContiguousBlockShape(p.stage_size, cluster);
  p.replica = ContiguousBlockShape(p.stage_size * pp, cluster);
  // Stage s sends to stage s + 1, rank i to rank i + stage_size: it stays in
  // the node only when the whole replica does (a replica that spans nodes has
  // a boundary on or across a node edge).
  p.p2p_inter_node = pp > 1 && p.replica.spans_nodes();
  return p;
}

int64_t StageFirstRank(const PlanPlacement& placement, int pp, int replica,
                       int stage) {
  return (static_cast<int64_t>(replica) * pp + stage) * placement.stage_size;
}

int StageLayerCount(const PlanDims& plan, int layers, int stage) {
  const int pp = std::max(1, plan.pp);
  if (plan.num_stage_layers == pp) return plan.stage_layers[stage];
  return layers / pp + (stage < layers % pp ? 1 : 0);
}

}  // namespace shardplan::simulator
