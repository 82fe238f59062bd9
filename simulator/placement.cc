#include "simulator/placement.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>
#include <utility>
#include <vector>

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

bool SameShape(const GroupShape& a, const GroupShape& b) {
  return a.n == b.n && a.per_node == b.per_node && a.nodes == b.nodes;
}

// First rank of each node of `cluster`, then the end (num_gpus).
std::vector<int64_t> NodeStarts(const ClusterDims& cluster) {
  std::vector<int64_t> starts = {0};
  if (!cluster.node_gpus.empty()) {
    for (int g : cluster.node_gpus) starts.push_back(starts.back() + g);
  } else {
    const int g = std::max(1, cluster.gpus_per_node);
    while (starts.back() < cluster.num_gpus) {
      starts.push_back(std::min<int64_t>(cluster.num_gpus, starts.back() + g));
    }
  }
  return starts;
}

// GPUs of one link domain: the NVLink domain when it spans several nodes
// (validation allows that only on uniform nodes), else the node.
int LinkGpus(const ClusterDims& cluster) {
  return std::max({1, cluster.gpus_per_node, cluster.nvlink_domain_gpus});
}

bool DomainSpansNodes(const ClusterDims& cluster) {
  return cluster.node_gpus.empty() &&
         cluster.nvlink_domain_gpus > std::max(1, cluster.gpus_per_node);
}

// First rank of each link domain, then the end (num_gpus).
std::vector<int64_t> DomainStarts(const ClusterDims& cluster) {
  if (!DomainSpansNodes(cluster)) return NodeStarts(cluster);
  std::vector<int64_t> starts = {0};
  const int g = LinkGpus(cluster);
  while (starts.back() < cluster.num_gpus) {
    starts.push_back(std::min<int64_t>(cluster.num_gpus, starts.back() + g));
  }
  return starts;
}

// The link domain that holds global rank `rank` (clamped to the last one).
int64_t DomainOfRank(const ClusterDims& cluster, int64_t rank) {
  if (!DomainSpansNodes(cluster)) return NodeOfRank(cluster, rank);
  const int64_t g = LinkGpus(cluster);
  return std::min(rank / g, (cluster.num_gpus + g - 1) / g - 1);
}

// Shape of the block [start, start + size) on nodes starting at `starts`.
GroupShape BlockOn(const std::vector<int64_t>& starts, int64_t start,
                   int size) {
  GroupShape s;
  s.n = size;
  s.nodes = 0;
  int64_t fewest = size;
  const int64_t end = start + size;
  auto node = std::upper_bound(starts.begin(), starts.end() - 1, start) - 1;
  for (; node + 1 < starts.end() && *node < end; ++node) {
    const int64_t lo = std::max(start, *node);
    const int64_t hi = std::min(end, *(node + 1));
    if (hi <= lo) continue;
    fewest = std::min(fewest, hi - lo);
    ++s.nodes;
  }
  s.nodes = std::max(1, s.nodes);
  s.per_node = static_cast<int>(std::max<int64_t>(1, fewest));
  return s;
}

// The worst of `count` consecutive blocks of `size` from `start`.
GroupShape WorstBlockOn(const std::vector<int64_t>& starts, int64_t start,
                        int size, int count) {
  GroupShape worst = BlockOn(starts, start, size);
  for (int k = 1; k < count; ++k) {
    worst = Worse(worst, BlockOn(starts, start + int64_t{k} * size, size));
  }
  return worst;
}

// GPUs of an expert's tensor-parallel group: a stage's ranks over the expert
// groups (MoE; dense: the stage).
int ExpertTp(int stage_size, const PlanDims& plan, bool moe) {
  return std::max(1, stage_size / std::max(1, moe ? plan.ep : 1));
}

}  // namespace

GroupShape ContiguousBlockShape(int size, int num_gpus, int gpus_per_node) {
  const int g = std::max(1, gpus_per_node);
  size = std::max(1, size);
  const int64_t n = std::max(size, num_gpus);
  // Whole nodes with blocks that tile them (the search's usual case, on the
  // hot path): every block lies inside one node, or covers size / g whole
  // nodes. The scan below gives the same shape.
  if (n % g == 0) {
    if (g % size == 0) return GroupShape{size, size, 1};
    if (size % g == 0) return GroupShape{size, g, size / g};
  }
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
    return ContiguousBlockShape(size, cluster.num_gpus, LinkGpus(cluster));
  }
  size = std::max(1, size);
  return WorstBlockOn(NodeStarts(cluster), 0, size,
                      std::max(1, cluster.num_gpus / size));
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

int64_t LinkDomainOfRank(const ClusterDims& cluster, int64_t rank) {
  if (!DomainSpansNodes(cluster)) return NodeOfRank(cluster, rank);
  const int64_t last = (cluster.num_gpus - 1) / LinkGpus(cluster);
  return std::min(rank / LinkGpus(cluster), std::max<int64_t>(0, last));
}

BlockSpan BlocksNodeSpan(const ClusterDims& cluster, int64_t first_rank,
                         int size, int count) {
  BlockSpan span;
  if (size <= 0 || count <= 0) return span;
  const bool uniform = cluster.node_gpus.empty();
  const int64_t g = std::max(1, cluster.gpus_per_node);
  const int64_t nodes = std::max(1, cluster.num_nodes());
  // First rank of every node (uniform nodes: computed, not stored).
  std::vector<int64_t> starts;
  if (!uniform) {
    starts.push_back(0);
    for (int n : cluster.node_gpus) starts.push_back(starts.back() + n);
  }
  auto node_start = [&](int64_t k) -> int64_t {
    if (!uniform) return starts[static_cast<size_t>(k)];
    return std::min<int64_t>(k * g, cluster.num_gpus);
  };
  auto node_of = [&](int64_t rank) -> int64_t {
    if (uniform) return std::min(rank / g, nodes - 1);
    const auto it = std::upper_bound(starts.begin() + 1, starts.end(), rank);
    return std::min<int64_t>(it - starts.begin() - 1, nodes - 1);
  };
  auto look_at = [&](int64_t b) {
    const int64_t lo = first_rank + b * size;
    const int64_t hi = lo + size;  // exclusive
    const int64_t first_node = node_of(lo), last_node = node_of(hi - 1);
    if (first_node == last_node) return;
    span.nodes =
        std::max(span.nodes, static_cast<int>(last_node - first_node + 1));
    int64_t shared = -1;
    for (int64_t n = first_node; n <= last_node; ++n) {
      const int64_t in_node =
          std::min(hi, node_start(n + 1)) - std::max(lo, node_start(n));
      if (shared >= 0 && in_node != shared) span.uneven = true;
      shared = in_node;
    }
  };
  if (!uniform) {
    for (int64_t b = 0; b < count; ++b) look_at(b);
    return span;
  }
  // Block b starts at offset (first_rank + b*size) mod g inside its node, a
  // pattern that repeats every g / gcd(size, g) blocks on full nodes; the
  // blocks that reach the (possibly partial) last node break it.
  const int64_t period = g / std::gcd(static_cast<int64_t>(size), g);
  const int64_t head = std::min<int64_t>(count, period);
  for (int64_t b = 0; b < head; ++b) look_at(b);
  const int64_t tail = std::min<int64_t>(count, period + g / size + 2);
  for (int64_t b = std::max(head, count - tail); b < count; ++b) look_at(b);
  return span;
}

BlockShapeTable::BlockShapeTable(const ClusterDims& cluster, int max_size) {
  if (!cluster.node_gpus.empty() || max_size < 1) return;
  shapes_.resize(static_cast<size_t>(max_size) + 1);
  for (int size = 1; size <= max_size; ++size) {
    shapes_[size] = ContiguousBlockShape(size, cluster);
  }
  // Replicas that tile the cluster, in stages whose sends may cross domains
  // (PlacePlan asks only when the replica spans them).
  for (int size = 2; size <= max_size; ++size) {
    if (cluster.num_gpus % size != 0 || !shapes_[size].spans_nodes()) continue;
    for (int pp = 2; pp <= size; ++pp) {
      if (size % pp != 0) continue;
      p2p_.push_back({size, pp,
                      P2pInterNodeBoundaries(cluster, size / pp, pp,
                                             cluster.num_gpus / size)});
    }
  }
}

int BlockShapeTable::P2pBoundaries(int replica_size, int pp) const {
  const auto it = std::lower_bound(
      p2p_.begin(), p2p_.end(), std::make_pair(replica_size, pp),
      [](const P2pEntry& e, const std::pair<int, int>& key) {
        return std::make_pair(e.replica_size, e.pp) < key;
      });
  if (it == p2p_.end() || it->replica_size != replica_size || it->pp != pp) {
    return -1;
  }
  return it->boundaries;
}

PlanPlacement PlacePlan(const PlanDims& plan, const ClusterDims& cluster,
                        bool moe, const BlockShapeTable* shapes) {
  PlanPlacement p;
  const int replicas = std::max(1, plan.replicas);
  const int dp = std::max(1, plan.dp);
  const int tp = std::max(1, plan.tp);
  const int pp = std::max(1, plan.pp);
  p.replicas = moe ? replicas : replicas * dp;
  p.dp = moe ? dp : 1;
  p.stage_size = p.dp * tp;
  auto shape = [&](int size) {
    return shapes != nullptr ? shapes->Shape(size, cluster)
                             : ContiguousBlockShape(size, cluster);
  };
  p.tp = shape(tp);
  p.domain = shape(p.stage_size);
  p.expert_tp = shape(ExpertTp(p.stage_size, plan, moe));
  p.replica = shape(p.stage_size * pp);
  // Stage s sends to stage s + 1, rank i to rank i + stage_size. Some
  // boundary crosses nodes exactly when the replica spans nodes (a node edge
  // inside it falls on or inside a stage pair).
  p.p2p_inter_node = pp > 1 && p.replica.spans_nodes();
  if (p.p2p_inter_node) {
    const int64_t replica_size = static_cast<int64_t>(p.stage_size) * pp;
    const int tabled =
        shapes != nullptr && replica_size * p.replicas == cluster.num_gpus
            ? shapes->P2pBoundaries(static_cast<int>(replica_size), pp)
            : -1;
    p.p2p_inter_node_boundaries =
        tabled >= 0
            ? tabled
            : P2pInterNodeBoundaries(cluster, p.stage_size, pp, p.replicas);
  }
  return p;
}

int P2pInterNodeBoundaries(const ClusterDims& cluster, int stage_size, int pp,
                           int64_t replicas) {
  // A boundary stays in a node when both its stages do. Replica layouts
  // repeat with the node size, so the first node's worth of replicas and
  // the last ones (a partial or smaller last node) cover every pattern.
  // NodeOfRank is arithmetic on uniform nodes: no allocation.
  const int64_t replica_size = static_cast<int64_t>(stage_size) * pp;
  auto crossings = [&](int64_t r) {
    int n = 0;
    for (int s = 0; s + 1 < pp; ++s) {
      const int64_t first = (r * pp + s) * stage_size;
      n += DomainOfRank(cluster, first) !=
                   DomainOfRank(cluster, first + 2 * int64_t{stage_size} - 1)
               ? 1
               : 0;
    }
    return n;
  };
  int64_t period = replicas, tail = replicas;
  if (cluster.node_gpus.empty()) {
    const int64_t g = LinkGpus(cluster);
    period = std::min<int64_t>(replicas, g / std::gcd(replica_size, g));
    tail = g / replica_size + 2;  // replicas touching a partial last node
  }
  int most = 0;
  for (int64_t r = 0; r < replicas; ++r) {
    if (r >= period && r < replicas - tail) r = replicas - tail;
    most = std::max(most, crossings(r));
  }
  return most;
}

bool ReplicasMayDiffer(const ClusterDims& cluster) {
  return !cluster.node_gpus.empty() ||
         cluster.num_gpus % std::max(1, cluster.gpus_per_node) != 0;
}

namespace {

// `blocks` consecutive blocks from `first_rank`, each `copies` replicas of
// `all`'s shapes (pp stages of all.stage_size ranks), grouped by the worst
// shapes inside each block; worst class first.
std::vector<ReplicaClass> ClassesOfBlocks(const PlanPlacement& all, int pp,
                                          int tp, int expert_tp,
                                          const ClusterDims& cluster,
                                          int64_t first_rank, int blocks,
                                          int copies) {
  const std::vector<int64_t> starts = DomainStarts(cluster);
  const int64_t replica_size = static_cast<int64_t>(all.stage_size) * pp;
  const int64_t block_size = replica_size * copies;
  std::vector<ReplicaClass> out;
  for (int r = 0; r < blocks; ++r) {
    const int64_t first = first_rank + r * block_size;
    PlanPlacement p = all;
    p.tp = WorstBlockOn(starts, first, tp, static_cast<int>(block_size / tp));
    p.expert_tp = WorstBlockOn(starts, first, expert_tp,
                               static_cast<int>(block_size / expert_tp));
    p.domain = WorstBlockOn(starts, first, all.stage_size, pp * copies);
    p.replica =
        WorstBlockOn(starts, first, static_cast<int>(replica_size), copies);
    p.p2p_inter_node = pp > 1 && p.replica.spans_nodes();
    p.p2p_inter_node_boundaries = 0;
    for (int c = 0; p.p2p_inter_node && c < copies; ++c) {
      int crossings = 0;
      for (int s = 0; s + 1 < pp; ++s) {
        crossings +=
            BlockOn(starts,
                    first + c * replica_size + int64_t{s} * all.stage_size,
                    2 * all.stage_size)
                    .spans_nodes()
                ? 1
                : 0;
      }
      p.p2p_inter_node_boundaries =
          std::max(p.p2p_inter_node_boundaries, crossings);
    }
    auto same = [&p](const ReplicaClass& c) {
      return SameShape(c.placement.tp, p.tp) &&
             SameShape(c.placement.expert_tp, p.expert_tp) &&
             SameShape(c.placement.domain, p.domain) &&
             SameShape(c.placement.replica, p.replica) &&
             c.placement.p2p_inter_node_boundaries ==
                 p.p2p_inter_node_boundaries;
    };
    auto it = std::find_if(out.begin(), out.end(), same);
    if (it != out.end()) {
      ++it->count;
    } else {
      out.push_back({1, p});
    }
  }
  // Worst first: fewest GPUs per node in a tp group, then expert domain,
  // then the most inter-node stage boundaries.
  std::stable_sort(
      out.begin(), out.end(), [](const ReplicaClass& a, const ReplicaClass& b) {
        const PlanPlacement& x = a.placement;
        const PlanPlacement& y = b.placement;
        return std::make_tuple(x.tp.per_node, -x.tp.nodes, x.domain.per_node,
                               -x.domain.nodes, -x.p2p_inter_node_boundaries) <
               std::make_tuple(y.tp.per_node, -y.tp.nodes, y.domain.per_node,
                               -y.domain.nodes, -y.p2p_inter_node_boundaries);
      });
  return out;
}

// Global ranks [first, first + size) all in one link domain: that domain,
// else -1.
int64_t DomainHolding(const ClusterDims& cluster, int64_t first, int64_t size) {
  const int64_t domain = DomainOfRank(cluster, first);
  return DomainOfRank(cluster, first + size - 1) == domain ? domain : -1;
}

}  // namespace

std::vector<ReplicaClass> ReplicaClasses(const PlanDims& plan,
                                         const ClusterDims& cluster, bool moe) {
  const PlanPlacement all = PlacePlan(plan, cluster, moe);
  return ClassesOfBlocks(all, std::max(1, plan.pp), std::max(1, plan.tp),
                         ExpertTp(all.stage_size, plan, moe), cluster, 0,
                         all.replicas, 1);
}

bool DecodePoolFirst(const PlanDims& plan, const ClusterDims& cluster) {
  return ReplicasMayDiffer(cluster) &&
         plan.instance_gpus() > plan.prefill.gpus();
}

int64_t PrefillPoolFirstRank(const PlanDims& plan, const ClusterDims& cluster) {
  return DecodePoolFirst(plan, cluster)
             ? int64_t{plan.decode_instances} * plan.instance_gpus()
             : 0;
}

int64_t DecodePoolFirstRank(const PlanDims& plan, const ClusterDims& cluster) {
  return DecodePoolFirst(plan, cluster)
             ? 0
             : int64_t{plan.prefill_instances} * plan.prefill.gpus();
}

std::vector<ReplicaClass> InstanceClasses(const PlanDims& instance, int count,
                                          int64_t first_rank,
                                          const ClusterDims& cluster,
                                          bool moe) {
  PlanPlacement one = PlacePlan(instance, cluster, moe);
  return ClassesOfBlocks(one, std::max(1, instance.pp),
                         std::max(1, instance.tp),
                         ExpertTp(one.stage_size, instance, moe), cluster,
                         first_rank, std::max(1, count), one.replicas);
}

double PoolPairsInsideOneNode(const PlanDims& plan,
                              const ClusterDims& cluster) {
  const int64_t x = std::max(1, plan.prefill_instances);
  const int64_t y = std::max(1, plan.decode_instances);
  const int64_t prefill_size = std::max(1, plan.prefill.gpus());
  const int64_t decode_size = std::max(1, plan.instance_gpus());
  // The pools are two contiguous blocks, so only the node holding the last
  // rank of the first pool and the first rank of the second can hold
  // instances of both; count the instances of each lying wholly in it.
  const bool decode_first = DecodePoolFirst(plan, cluster);
  const int64_t first_size = decode_first ? decode_size : prefill_size;
  const int64_t first_count = decode_first ? y : x;
  const int64_t second_size = decode_first ? prefill_size : decode_size;
  const int64_t second_count = decode_first ? x : y;
  const int64_t boundary = first_size * first_count;
  const int64_t node = DomainOfRank(cluster, boundary);
  if (DomainOfRank(cluster, boundary - 1) != node) return 0;
  int64_t a = 0, b = 0;
  for (int64_t i = first_count - 1;
       i >= 0 && DomainHolding(cluster, i * first_size, first_size) == node;
       --i) {
    ++a;
  }
  for (int64_t i = 0;
       i < second_count &&
       DomainHolding(cluster, boundary + i * second_size, second_size) == node;
       ++i) {
    ++b;
  }
  return static_cast<double>(a * b) / static_cast<double>(x * y);
}

std::vector<int> WholeNodeSizes(const ClusterDims& cluster) {
  const std::vector<int64_t> starts = NodeStarts(cluster);
  const int n = std::max(0, cluster.num_gpus);
  // Node sizes and how many nodes have each (a few distinct sizes).
  std::map<int, int> count_of;
  for (size_t j = 0; j + 1 < starts.size(); ++j) {
    ++count_of[static_cast<int>(starts[j + 1] - starts[j])];
  }
  // Sums of some of the nodes, bounded by num_gpus: per distinct size g of c
  // nodes, s is reachable when s - k g was before for some k <= c (one pass
  // per residue class: O(num_gpus) per distinct size).
  std::vector<char> reachable(n + 1, 0), next(n + 1, 0);
  reachable[0] = 1;
  for (const auto& [g, c] : count_of) {
    std::fill(next.begin(), next.end(), 0);
    for (int r = 0; r < g && r <= n; ++r) {
      int last = -1;  // step of the latest reachable sum of this residue
      for (int k = 0, s = r; s <= n; ++k, s += g) {
        if (reachable[s]) last = k;
        if (last >= 0 && k - last <= c) next[s] = 1;
      }
    }
    reachable.swap(next);
  }
  std::vector<int> out;
  for (int s = 1; s <= n; ++s) {
    if (reachable[s]) out.push_back(s);
  }
  return out;
}

int LargestNodeGpus(const ClusterDims& cluster) {
  if (cluster.node_gpus.empty()) return std::max(1, cluster.gpus_per_node);
  return std::max(
      1, *std::max_element(cluster.node_gpus.begin(), cluster.node_gpus.end()));
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
