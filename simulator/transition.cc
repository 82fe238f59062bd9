// Placement-aware transition diff (simulator/transition.h).
#include "simulator/transition.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>

#include "absl/memory/memory.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "simulator/placement.h"

namespace shardplan::simulator {
namespace {

// A fraction [lo, hi) of one weight matrix.
struct Slice {
  double lo = 0;
  double hi = 1;
  double size() const { return hi - lo; }
};

double Overlap(const Slice& a, const Slice& b) {
  return std::max(0.0, std::min(a.hi, b.hi) - std::max(a.lo, b.lo));
}

// Column/row-split weights hold slice r of n; the other dims hold it all.
Slice SliceOf(ShardDim dim, int n, int r) {
  if (dim != ShardDim::kColumn && dim != ShardDim::kRow) return {};
  return {static_cast<double>(r) / n, static_cast<double>(r + 1) / n};
}

// Key/value heads replicate once tp exceeds them (as the cost model's memory
// does): rank r holds head r * kv_heads / tp.
Slice KvSliceOf(ShardDim dim, int tp, int r, const ModelDims& m) {
  if (m.is_mla() || dim != ShardDim::kColumn || m.kv_heads <= 0 ||
      tp <= m.kv_heads) {
    return SliceOf(dim, tp, r);
  }
  const double head = std::floor(static_cast<double>(r) * m.kv_heads / tp);
  return {head / m.kv_heads, (head + 1) / m.kv_heads};
}

// What one GPU holds under a plan.
struct Shard {
  int replica = 0;  // placement replica (dense: replicas * dp copies)
  int stage = 0;
  int first_layer = 0;
  int num_layers = 0;
  int tp = 1;
  int tp_rank = 0;
  int first_expert = 0;
  int num_experts = 0;  // routed experts held (MoE)
  int tp_expert = 1;
  int expert_rank = 0;
  bool embedding = false;
  bool lm_head = false;
  ShardDims dims{};
};

// Per-plan layout, computed once per Diff.
struct Layout {
  PlanPlacement placement;
  int pp = 1;
  std::vector<int> stage_first;  // first layer of each stage, plus the end
  int ep = 1;
};

Layout LayoutOf(const PlanDims& plan, const Problem& problem) {
  Layout l;
  l.placement = PlacePlan(plan, problem.cluster, problem.model.is_moe());
  l.pp = std::max(1, plan.pp);
  l.stage_first.assign(l.pp + 1, 0);
  for (int s = 0; s < l.pp; ++s) {
    l.stage_first[s + 1] =
        l.stage_first[s] + StageLayerCount(plan, problem.model.layers, s);
  }
  l.ep = problem.model.is_moe() ? std::max(1, plan.ep) : 1;
  return l;
}

Shard ShardOf(const PlanDims& plan, const Problem& problem, const Layout& l,
              int64_t rank) {
  Shard s;
  const int stage_size = std::max(1, l.placement.stage_size);
  const int64_t replica_size = static_cast<int64_t>(stage_size) * l.pp;
  s.replica = static_cast<int>(rank / replica_size);
  const int64_t within = rank % replica_size;
  s.stage = static_cast<int>(within / stage_size);
  const int i = static_cast<int>(within % stage_size);
  s.tp = std::max(1, plan.tp);
  s.tp_rank = i % s.tp;
  s.first_layer = l.stage_first[s.stage];
  s.num_layers = l.stage_first[s.stage + 1] - s.first_layer;
  const ModelDims& m = problem.model;
  if (m.is_moe()) {
    // The stage's dp x tp ranks form the expert domain: ep groups of
    // tp_expert consecutive ranks, each with ceil(experts / ep) consecutive
    // experts (when ep does not divide them, the last groups' spare slots
    // repeat experts: the redundant copies the cost model charges).
    s.tp_expert = std::max(1, stage_size / l.ep);
    const int ep_rank = i / s.tp_expert;
    s.expert_rank = i % s.tp_expert;
    const int ep = std::max(1, l.ep);
    s.num_experts = (m.experts + ep - 1) / ep;
    s.first_expert =
        std::min(ep_rank * s.num_experts, m.experts - s.num_experts);
  }
  s.embedding = s.stage == 0;
  s.lm_head = s.stage == l.pp - 1 && !(m.tie_embeddings && l.pp == 1);
  s.dims = plan.dims;
  return s;
}

ShardDim DimOf(const Shard& s, OpKind op) {
  return s.dims[static_cast<int>(op)];
}

// Dense (non-MoE) layers in [a, b).
int DenseLayersIn(const ModelDims& m, int a, int b) {
  return std::max(0, std::min(b, m.dense_layers()) - a);
}

// Elements of shard `n` not already in `o` (null: nothing held), and the
// elements `n` holds in all.
struct Elements {
  double needed = 0;
  double missing = 0;
};

Elements Compare(const ModelDims& m, const LayerParams& p, const Shard& n,
                 const Shard* o) {
  Elements e;
  const int n_end = n.first_layer + n.num_layers;
  int k_first = 0, k_end = 0;  // layers held by both
  if (o != nullptr) {
    k_first = std::max(n.first_layer, o->first_layer);
    k_end = std::max(k_first, std::min(n_end, o->first_layer + o->num_layers));
  }
  const int n_dense = DenseLayersIn(m, n.first_layer, n_end);
  const int n_moe = n.num_layers - n_dense;
  const int k_dense = DenseLayersIn(m, k_first, k_end);
  const int k_moe = (k_end - k_first) - k_dense;
  double kept = 0;
  // One weight present in `layers` layers of n (of which `kept_layers` are
  // held by o), sliced as `sn` on n and `so` on o.
  auto add = [&](double params, int layers, int kept_layers, Slice sn,
                 Slice so) {
    e.needed += params * layers * sn.size();
    if (o != nullptr) kept += params * kept_layers * Overlap(sn, so);
  };
  auto slice = [](const Shard& s, OpKind op) {
    return SliceOf(DimOf(s, op), s.tp, s.tp_rank);
  };
  const Shard& ob = o != nullptr ? *o : n;  // slices of o (unused when null)
  const int all = n.num_layers, all_kept = k_end - k_first;
  add(p.q, all, all_kept, slice(n, OpKind::kQkv), slice(ob, OpKind::kQkv));
  add(p.kv, all, all_kept,
      KvSliceOf(DimOf(n, OpKind::kQkv), n.tp, n.tp_rank, m),
      KvSliceOf(DimOf(ob, OpKind::kQkv), ob.tp, ob.tp_rank, m));
  add(p.attn_out, all, all_kept, slice(n, OpKind::kAttnOut),
      slice(ob, OpKind::kAttnOut));
  add(p.mlp_up, n_dense, k_dense, slice(n, OpKind::kMlpUp),
      slice(ob, OpKind::kMlpUp));
  add(p.mlp_down, n_dense, k_dense, slice(n, OpKind::kMlpDown),
      slice(ob, OpKind::kMlpDown));
  if (m.is_moe() && n_moe > 0) {
    add(p.router, n_moe, k_moe, slice(n, OpKind::kRouter),
        slice(ob, OpKind::kRouter));
    auto expert_slice = [](const Shard& s, OpKind op) {
      return SliceOf(DimOf(s, op), s.tp_expert, s.expert_rank);
    };
    const int common_experts =
        o == nullptr
            ? 0
            : std::max(0, std::min(n.first_expert + n.num_experts,
                                   o->first_expert + o->num_experts) -
                              std::max(n.first_expert, o->first_expert));
    for (OpKind op : {OpKind::kExpertUp, OpKind::kExpertDown}) {
      const double params =
          op == OpKind::kExpertUp ? p.expert_up : p.expert_down;
      const Slice sn = expert_slice(n, op), so = expert_slice(ob, op);
      // Routed experts: only the common ones are kept; shared experts are on
      // every rank of the domain.
      e.needed +=
          params * n_moe * sn.size() * (n.num_experts + m.shared_experts);
      if (o != nullptr) {
        kept += params * k_moe * Overlap(sn, so) *
                (common_experts + m.shared_experts);
      }
    }
  }
  if (n.embedding) {
    add(p.embedding_table, 1, ob.embedding ? 1 : 0,
        slice(n, OpKind::kEmbedding), slice(ob, OpKind::kEmbedding));
  }
  if (n.lm_head) {
    add(p.embedding_table, 1, ob.lm_head ? 1 : 0, slice(n, OpKind::kLmHead),
        slice(ob, OpKind::kLmHead));
  }
  e.missing = std::max(0.0, e.needed - kept);
  return e;
}

std::string Gigabytes(double bytes) {
  return absl::StrFormat("%.1f GB", bytes / 1e9);
}

std::string RangeText(int first, int last) {
  return first == last ? absl::StrCat(first) : absl::StrCat(first, "-", last);
}

// What a loading GPU loads, for the per-node text: the layers it lacks (all of
// its stage's when its slices changed) and, for MoE, the experts it lacks.
struct Piece {
  int replica = 0;
  int stage = 0;
  std::string layers;
  int tp = 1;
  int min_rank = 0, max_rank = 0;
  int first_expert = -1, last_expert = -1;  // -1: no experts to load
  double bytes = 0;
};

Piece PieceOf(const Shard& n, const Shard* o, bool moe, double bytes) {
  Piece piece;
  piece.replica = n.replica;
  piece.stage = n.stage;
  piece.tp = n.tp;
  piece.min_rank = piece.max_rank = n.tp_rank;
  piece.bytes = bytes;
  const int n_end = n.first_layer + n.num_layers;  // exclusive
  const bool same_slices = o != nullptr && o->tp == n.tp &&
                           o->tp_rank == n.tp_rank && o->dims == n.dims;
  const bool same_experts =
      !moe || (o != nullptr && o->first_expert == n.first_expert &&
               o->num_experts == n.num_experts && o->tp_expert == n.tp_expert &&
               o->expert_rank == n.expert_rank);
  std::vector<std::string> ranges;
  if (same_slices && same_experts) {
    // Only the layers outside the ones it holds.
    const int o_end = o->first_layer + o->num_layers;
    if (n.first_layer < o->first_layer) {
      ranges.push_back(
          RangeText(n.first_layer, std::min(n_end, o->first_layer) - 1));
    }
    if (n_end > o_end) {
      ranges.push_back(RangeText(std::max(n.first_layer, o_end), n_end - 1));
    }
  }
  if (ranges.empty() && n.num_layers > 0) {
    ranges.push_back(RangeText(n.first_layer, n_end - 1));
  }
  piece.layers = absl::StrJoin(ranges, ",");
  if (moe && n.num_experts > 0 && !same_experts) {
    piece.first_expert = n.first_expert;
    piece.last_expert = n.first_expert + n.num_experts - 1;
  }
  return piece;
}

std::string PieceText(const Piece& p) {
  std::string text =
      absl::StrCat("replica ", p.replica, " stage ", p.stage, " layers ",
                   p.layers.empty() ? "-" : p.layers);
  if (p.tp > 1) {
    absl::StrAppend(&text,
                    p.min_rank == p.max_rank ? " tp slice " : " tp slices ",
                    RangeText(p.min_rank, p.max_rank), "/", p.tp);
  }
  if (p.first_expert >= 0) {
    absl::StrAppend(&text, "; experts ",
                    RangeText(p.first_expert, p.last_expert));
  }
  absl::StrAppend(&text, " (", Gigabytes(p.bytes), ")");
  return text;
}

// Which surviving GPU of a node takes each local rank of the new plan:
// (*gpu_of)[k] indexes `olds`, -1 for a GPU the node did not have. In order
// (rank k on GPU k) unless `match`; then greedily the pairs that keep the most
// weights, ties to the GPU in order, then to the earlier pair, so an unchanged
// plan stays in order. Engines map local ranks to GPUs through
// CUDA_VISIBLE_DEVICES, so the order is free to choose. O(GPUs^2) per node;
// `pairs` is scratch reused across nodes (a cluster of one-GPU nodes has tens
// of thousands, and a node of one GPU needs no comparison: its GPU takes its
// one rank whatever it keeps).
struct GpuPair {
  double kept;
  bool in_order;
  int k, j;
};

void MatchGpus(const ModelDims& m, const LayerParams& p,
               const std::vector<Shard>& news, const std::vector<Shard>& olds,
               bool match, std::vector<GpuPair>* pairs,
               std::vector<int>* gpu_of) {
  const int gpus = static_cast<int>(news.size());
  const int old_gpus = static_cast<int>(olds.size());
  gpu_of->assign(gpus, -1);
  if (!match || (gpus == 1 && old_gpus == 1)) {
    for (int k = 0; k < std::min(gpus, old_gpus); ++k) (*gpu_of)[k] = k;
    return;
  }
  pairs->clear();
  for (int k = 0; k < gpus; ++k) {
    for (int j = 0; j < old_gpus; ++j) {
      const Elements e = Compare(m, p, news[k], &olds[j]);
      pairs->push_back({e.needed - e.missing, k == j, k, j});
    }
  }
  // The pairs were listed by (k, j): that order breaks the remaining ties, as
  // a stable sort would.
  std::sort(pairs->begin(), pairs->end(),
            [](const GpuPair& a, const GpuPair& b) {
              if (a.kept != b.kept) return a.kept > b.kept;
              if (a.in_order != b.in_order) return a.in_order;
              return std::tie(a.k, a.j) < std::tie(b.k, b.j);
            });
  std::vector<bool> taken(old_gpus, false);
  for (const GpuPair& x : *pairs) {
    if (x.kept <= 0) break;
    if ((*gpu_of)[x.k] >= 0 || taken[x.j]) continue;
    (*gpu_of)[x.k] = x.j;
    taken[x.j] = true;
  }
  // The rest keep nothing either way: in order where free, then what is left.
  for (int k = 0; k < gpus; ++k) {
    if ((*gpu_of)[k] < 0 && k < old_gpus && !taken[k]) {
      (*gpu_of)[k] = k;
      taken[k] = true;
    }
  }
  int j = 0;
  for (int k = 0; k < gpus; ++k) {
    if ((*gpu_of)[k] >= 0) continue;
    while (j < old_gpus && taken[j]) ++j;
    if (j < old_gpus) {
      (*gpu_of)[k] = j;
      taken[j] = true;
    }
  }
}

std::string NodeGroupName(const ClusterDims& cluster, int node) {
  int first = 0;
  for (const NodeGroupDims& g : cluster.node_groups) {
    if (node < first + g.num_nodes) return g.name;
    first += g.num_nodes;
  }
  return "";
}

// GPUs on node `node` of `cluster` (the last node may be partial; node
// groups may differ in size).
int GpusOnNode(const ClusterDims& cluster, int node) {
  if (!cluster.node_gpus.empty()) {
    return node >= 0 && node < static_cast<int>(cluster.node_gpus.size())
               ? cluster.node_gpus[node]
               : 0;
  }
  const int g = std::max(1, cluster.gpus_per_node);
  return std::clamp(cluster.num_gpus - node * g, 0, g);
}

// First global rank of every node of `cluster`.
std::vector<int64_t> NodeFirstRanks(const ClusterDims& cluster) {
  std::vector<int64_t> first(std::max(0, cluster.num_nodes()), 0);
  for (size_t n = 1; n < first.size(); ++n) {
    first[n] = first[n - 1] + GpusOnNode(cluster, static_cast<int>(n - 1));
  }
  return first;
}

// Deploying `plan` on `problem`'s cluster from nothing: the weight bytes of
// all GPUs and the slowest node's storage read.
struct FreshDeploy {
  double bytes = 0;
  double seconds = 0;
};

FreshDeploy FreshDeployOf(const PlanDims& plan, const Problem& problem,
                          double storage_bytes_per_s) {
  FreshDeploy out;
  const Layout layout = LayoutOf(plan, problem);
  const LayerParams params = LayerParamsOf(problem.model);
  const double bytes_per_element =
      BytesPerElement(problem.workload.weight_dtype);
  const std::vector<int64_t> first_ranks = NodeFirstRanks(problem.cluster);
  for (int node = 0; node < problem.cluster.num_nodes(); ++node) {
    double node_bytes = 0;
    const int64_t first = first_ranks[node];
    for (int k = 0; k < GpusOnNode(problem.cluster, node); ++k) {
      const Shard s = ShardOf(plan, problem, layout, first + k);
      node_bytes +=
          Compare(problem.model, params, s, nullptr).needed * bytes_per_element;
    }
    out.bytes += node_bytes;
    out.seconds =
        std::max(out.seconds, node_bytes / std::max(1.0, storage_bytes_per_s));
  }
  return out;
}

}  // namespace

// The running deployment's side of every Diff, the same for every candidate
// plan: its layout, each GPU's shard and that shard's bytes, and the replicas
// that lose a GPU on a removed node.
struct TransitionModel::RunningGpus {
  Layout layout;
  std::vector<Shard> shards;          // by global rank of the running cluster
  std::vector<double> shard_bytes;    // each shard's weight bytes
  std::vector<uint8_t> replica_lost;  // by placement replica
};

TransitionModel::TransitionModel(RunningDeployment running, const Problem& next,
                                 double storage_bytes_per_s_per_node)
    : running_(std::move(running)),
      next_(next),
      storage_bytes_per_s_per_node_(storage_bytes_per_s_per_node) {}

TransitionModel::~TransitionModel() = default;

absl::StatusOr<std::unique_ptr<const TransitionModel>> TransitionModel::Create(
    RunningDeployment running, const Problem& next,
    double storage_bytes_per_s_per_node) {
  // `running` is moved into the model below: after that, read its cluster
  // through the model (`r`), never through this reference.
  const ClusterDims& old_cluster = running.problem.cluster;
  const int old_nodes = old_cluster.num_nodes();
  const int new_nodes = next.cluster.num_nodes();
  std::vector<bool> survives(old_nodes, true);
  if (running.removed_nodes.empty()) {
    for (int n = std::max(0, new_nodes); n < old_nodes; ++n)
      survives[n] = false;
  }
  for (size_t i = 0; i < running.removed_nodes.size(); ++i) {
    const int node = running.removed_nodes[i];
    if (node < 0 || node >= old_nodes) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "current.removed_nodes[%d] must be a node of current.cluster (0 to "
          "%d), got %d",
          i, old_nodes - 1, node));
    }
    if (!survives[node]) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "current.removed_nodes[%d] repeats node %d", i, node));
    }
    survives[node] = false;
  }
  std::vector<int> old_of(new_nodes, -1);
  const bool by_group =
      !old_cluster.node_groups.empty() && !next.cluster.node_groups.empty();
  int next_free = 0;
  for (int n = 0; n < old_nodes; ++n) {
    if (!survives[n]) continue;
    int target = -1;
    if (by_group) {
      // The first new node of the same group not yet taken.
      const std::string group = NodeGroupName(old_cluster, n);
      for (int k = 0; k < new_nodes && target < 0; ++k) {
        if (old_of[k] < 0 && NodeGroupName(next.cluster, k) == group) {
          target = k;
        }
      }
      if (target < 0) {
        survives[n] = false;  // its group is not in the new cluster
        continue;
      }
    } else {
      if (next_free >= new_nodes) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "cluster has %d nodes but %d nodes of current.cluster survive; "
            "list the nodes that are gone in current.removed_nodes",
            new_nodes,
            static_cast<int>(
                std::count(survives.begin(), survives.end(), true))));
      }
      target = next_free++;
    }
    old_of[target] = n;
  }
  auto model = absl::WrapUnique(new TransitionModel(
      std::move(running), next, storage_bytes_per_s_per_node));
  model->old_node_of_ = std::move(old_of);
  model->old_node_survives_ = std::move(survives);

  // Layers a surviving complete stage holds can be copied from a peer.
  const RunningDeployment& r = model->running_;
  const int layers = r.problem.model.layers;
  const Layout l = LayoutOf(r.plan, r.problem);
  std::vector<int> covered(layers + 2, 0);
  const int stage_size = std::max(1, l.placement.stage_size);
  for (int rep = 0; rep < l.placement.replicas; ++rep) {
    for (int s = 0; s < l.pp; ++s) {
      const int64_t first = StageFirstRank(l.placement, l.pp, rep, s);
      bool alive = true;
      for (int64_t k = first; k < first + stage_size && alive; ++k) {
        alive = model->old_node_survives_[NodeOfRank(r.problem.cluster, k)];
      }
      if (!alive) continue;
      for (int layer = l.stage_first[s]; layer < l.stage_first[s + 1];
           ++layer) {
        covered[layer + 1] = 1;
      }
      if (s == 0) covered[0] = 1;
      if (s == l.pp - 1) covered[layers + 1] = 1;
    }
  }
  const FreshDeploy running_fresh =
      FreshDeployOf(r.plan, r.problem, model->storage_bytes_per_s_per_node_);
  model->running_fresh_seconds_ = running_fresh.seconds;
  model->running_bytes_ = running_fresh.bytes;
  model->peer_layers_prefix_.assign(layers + 3, 0);
  for (int i = 0; i < layers + 2; ++i) {
    model->peer_layers_prefix_[i + 1] =
        model->peer_layers_prefix_[i] + covered[i];
  }

  // (The model's own copy: `running` was moved into it.)
  const ClusterDims& running_cluster = r.problem.cluster;
  model->old_first_rank_ = NodeFirstRanks(running_cluster);
  model->new_first_rank_ = NodeFirstRanks(model->next_.cluster);
  auto gpus = std::make_unique<RunningGpus>();
  gpus->layout = l;
  const LayerParams params = LayerParamsOf(model->next_.model);
  const double bytes_per_element =
      BytesPerElement(r.problem.workload.weight_dtype);
  gpus->shards.resize(std::max(0, running_cluster.num_gpus));
  gpus->shard_bytes.resize(gpus->shards.size());
  for (size_t rank = 0; rank < gpus->shards.size(); ++rank) {
    gpus->shards[rank] =
        ShardOf(r.plan, r.problem, l, static_cast<int64_t>(rank));
    gpus->shard_bytes[rank] =
        Compare(r.problem.model, params, gpus->shards[rank], nullptr).needed *
        bytes_per_element;
  }
  gpus->replica_lost.assign(l.placement.replicas, 0);
  for (int n = 0; n < old_nodes; ++n) {
    if (model->old_node_survives_[n]) continue;
    for (int k = 0; k < GpusOnNode(running_cluster, n); ++k) {
      gpus->replica_lost[gpus->shards[model->old_first_rank_[n] + k].replica] =
          1;
    }
  }
  model->running_gpus_ = std::move(gpus);
  return std::unique_ptr<const TransitionModel>(std::move(model));
}

TransitionCost TransitionModel::Diff(const PlanDims& plan, bool with_node_loads,
                                     bool match_gpu_order) const {
  TransitionCost cost;
  const ModelDims& m = next_.model;
  const LayerParams params = LayerParamsOf(m);
  const ClusterDims& old_cluster = running_.problem.cluster;
  const ClusterDims& new_cluster = next_.cluster;
  const RunningGpus& running_gpus = *running_gpus_;
  const Layout& old_layout = running_gpus.layout;
  const Layout new_layout = LayoutOf(plan, next_);
  // Weights kept only when their dtype is the same.
  const bool same_dtype =
      running_.problem.workload.weight_dtype == next_.workload.weight_dtype;
  const double bytes_per_element = BytesPerElement(next_.workload.weight_dtype);
  const int new_nodes = new_cluster.num_nodes();
  const double ib = std::max(1.0, new_cluster.hardware.inter_node_bytes_per_s);
  const double storage = std::max(1.0, storage_bytes_per_s_per_node_);

  std::vector<uint8_t> old_replica_changed = running_gpus.replica_lost;
  std::vector<double> peer_bytes(new_cluster.num_gpus, 0);
  std::vector<double> node_storage_bytes(new_nodes, 0);
  std::vector<double> node_fresh_bytes(new_nodes, 0);
  std::vector<std::vector<Piece>> pieces(with_node_loads ? new_nodes : 0);
  const int layers = m.layers;
  std::vector<std::string> gpu_orders(with_node_loads ? new_nodes : 0);
  // Reused across nodes: a cluster of one-GPU nodes has tens of thousands.
  std::vector<Shard> news, olds;
  std::vector<bool> taken;
  std::vector<GpuPair> pairs;
  std::vector<int> gpu_of;
  for (int node = 0; node < new_nodes; ++node) {
    const int old_node = old_node_of_[node];
    const int gpus = GpusOnNode(new_cluster, node);
    const int old_gpus = old_node >= 0 ? GpusOnNode(old_cluster, old_node) : 0;
    news.resize(gpus);
    olds.resize(old_gpus);
    const int64_t first = new_first_rank_[node];
    const int64_t old_first = old_node >= 0 ? old_first_rank_[old_node] : 0;
    for (int k = 0; k < gpus; ++k) {
      news[k] = ShardOf(plan, next_, new_layout, first + k);
    }
    for (int j = 0; j < old_gpus; ++j) {
      olds[j] = running_gpus.shards[old_first + j];
    }
    MatchGpus(m, params, news, olds, match_gpu_order && same_dtype, &pairs,
              &gpu_of);
    taken.assign(old_gpus, false);
    bool identity = true;
    for (int k = 0; k < gpus; ++k) {
      if (gpu_of[k] >= 0) taken[gpu_of[k]] = true;
      identity = identity && (gpu_of[k] == k || gpu_of[k] < 0);
    }
    for (int j = 0; j < old_gpus; ++j) {
      if (!taken[j]) old_replica_changed[olds[j].replica] = 1;
    }
    if (with_node_loads && !identity) {
      std::vector<std::string> order;
      for (int k = 0; k < gpus; ++k) {
        order.push_back(gpu_of[k] >= 0 ? absl::StrCat(gpu_of[k]) : "new");
      }
      gpu_orders[node] =
          absl::StrCat("GPU order ", absl::StrJoin(order, ","),
                       " (CUDA_VISIBLE_DEVICES: local rank k on the k-th); ");
    }
    for (int k = 0; k < gpus; ++k) {
      const int64_t rank = first + k;
      const Shard& n = news[k];
      const bool held = gpu_of[k] >= 0;
      const Shard o = held ? olds[gpu_of[k]] : Shard{};
      const Elements e =
          Compare(m, params, n, held && same_dtype ? &o : nullptr);
      const double load = e.missing * bytes_per_element;
      node_fresh_bytes[node] += e.needed * bytes_per_element;
      if (held) {
        const double old_size = running_gpus.shard_bytes[old_first + gpu_of[k]];
        const bool unchanged =
            same_dtype && load <= 1.0 &&
            std::abs(old_size - e.needed * bytes_per_element) <= 1.0;
        if (unchanged) {
          ++cost.gpus_unchanged;
        } else {
          old_replica_changed[o.replica] = 1;
        }
      }
      if (load <= 1.0) continue;
      // From a peer when a surviving complete stage holds the layers.
      const int lo = n.embedding ? n.first_layer : n.first_layer + 1;
      const int hi = n.first_layer + n.num_layers + (n.lm_head ? 2 : 1);
      const int span = std::max(1, hi - lo);
      const double covered =
          static_cast<double>(peer_layers_prefix_[std::min(hi, layers + 2)] -
                              peer_layers_prefix_[std::max(0, lo)]) /
          span;
      // Layers no surviving stage holds come from storage whole (what the GPU
      // keeps lies in layers it held, so in covered ones).
      const double from_storage =
          std::min(load, e.needed * bytes_per_element * (1 - covered));
      peer_bytes[rank] = load - from_storage;
      node_storage_bytes[node] += from_storage;
      cost.total_bytes += load;
      cost.peer_bytes += load - from_storage;
      cost.storage_bytes += from_storage;
      cost.max_bytes_per_gpu = std::max(cost.max_bytes_per_gpu, load);
      if (with_node_loads) {
        Piece piece = PieceOf(n, held ? &o : nullptr, m.is_moe(), load);
        std::vector<Piece>& list = pieces[node];
        if (!list.empty() && list.back().replica == piece.replica &&
            list.back().stage == piece.stage &&
            list.back().layers == piece.layers &&
            (piece.tp == 1 || list.back().max_rank + 1 == piece.min_rank)) {
          Piece& last = list.back();
          last.max_rank = piece.max_rank;
          last.bytes += piece.bytes;
          if (piece.first_expert >= 0) {
            last.first_expert =
                last.first_expert < 0
                    ? piece.first_expert
                    : std::min(last.first_expert, piece.first_expert);
            last.last_expert = std::max(last.last_expert, piece.last_expert);
          }
        } else {
          list.push_back(std::move(piece));
        }
      }
    }
  }
  for (int node = 0; node < new_nodes; ++node) {
    const double storage_seconds = node_storage_bytes[node] / storage;
    cost.fresh_seconds =
        std::max(cost.fresh_seconds, node_fresh_bytes[node] / storage);
    cost.fresh_bytes += node_fresh_bytes[node];
    const int gpus = GpusOnNode(new_cluster, node);
    double node_seconds = 0, node_bytes = 0;
    for (int k = 0; k < gpus; ++k) {
      const int64_t rank = new_first_rank_[node] + k;
      node_seconds =
          std::max(node_seconds, peer_bytes[rank] / ib + storage_seconds);
    }
    if (node_storage_bytes[node] > 0)
      node_seconds = std::max(node_seconds, storage_seconds);
    cost.estimated_seconds = std::max(cost.estimated_seconds, node_seconds);
    if (with_node_loads && !pieces[node].empty()) {
      NodeLoad nl;
      nl.node = node;
      nl.node_group = NodeGroupName(new_cluster, node);
      std::vector<std::string> texts;
      for (const Piece& p : pieces[node]) {
        node_bytes += p.bytes;
        texts.push_back(PieceText(p));
      }
      nl.bytes = node_bytes;
      nl.seconds = node_seconds;
      nl.what = absl::StrCat(gpu_orders[node], absl::StrJoin(texts, "; "));
      cost.node_loads.push_back(std::move(nl));
    }
  }
  bool some_replica_serves = false;
  for (int rep = 0; rep < old_layout.placement.replicas; ++rep) {
    if (old_replica_changed[rep]) {
      cost.kv_bytes_lost += running_.kv_cache_bytes_per_gpu *
                            old_layout.placement.stage_size * old_layout.pp;
    } else {
      some_replica_serves = true;
    }
  }
  cost.rolling =
      some_replica_serves || (cost.total_bytes == 0 && cost.kv_bytes_lost == 0);
  return cost;
}

double DefaultTransitionWeight(const TransitionModel& model) {
  if (model.running_fresh_seconds() <= 0) return 0;
  return -std::log1p(-kDefaultTransitionShare) / model.running_fresh_seconds();
}

double TransitionPenalty(const TransitionObjective& objective,
                         const TransitionCost& cost) {
  if (objective.weight_per_s.has_value()) {
    return *objective.weight_per_s * cost.estimated_seconds;
  }
  if (objective.model == nullptr) return 0;
  const TransitionModel& model = *objective.model;
  // One scale for every candidate (the running plan's own deploy time): a
  // per-plan scale would reward plans that are slow to deploy. Bytes only
  // break near-ties in seconds, which are common: the layers only a removed
  // node held come from storage whatever the new plan is.
  const double bytes_seconds =
      model.running_bytes() > 0
          ? kDefaultBytesTieBreak * model.running_fresh_seconds() *
                cost.total_bytes / model.running_bytes()
          : 0;
  return DefaultTransitionWeight(model) *
         (cost.estimated_seconds + bytes_seconds);
}

double ApplyTransitionObjective(const TransitionObjective& objective,
                                const PlanDims& plan, Evaluation* evaluation) {
  if (objective.model == nullptr || !evaluation->feasible) return 0;
  const TransitionCost cost = objective.model->Diff(plan);
  if (objective.max_seconds > 0 &&
      cost.estimated_seconds > objective.max_seconds) {
    evaluation->feasible = false;
    evaluation->reason = InfeasibleReason::kTransitionTooSlow;
    evaluation->reason_value = cost.estimated_seconds;
    evaluation->reason_limit = objective.max_seconds;
    return 0;
  }
  return TransitionPenalty(objective, cost);
}

std::vector<PlanDims> AdaptRunningPlan(const PlanDims& running,
                                       int new_num_gpus) {
  std::vector<PlanDims> out = {running};
  const int stage = std::max(1, running.dp) * std::max(1, running.tp);
  const int replica = stage * std::max(1, running.pp);
  if (new_num_gpus % replica == 0) {
    PlanDims p = running;
    p.replicas = new_num_gpus / replica;
    out.push_back(p);
  }
  if (new_num_gpus % stage == 0) {
    // One replica as deep as the GPUs allow, and the running replica count
    // with the pipeline deepened or shortened to fit.
    for (int replicas : {1, std::max(1, running.replicas)}) {
      if ((new_num_gpus / stage) % replicas != 0) continue;
      PlanDims p = running;
      p.replicas = replicas;
      p.pp = new_num_gpus / stage / replicas;
      if (p.pp < 1 || p.pp > kMaxPipelineStages) continue;
      p.num_stage_layers = 0;  // uniform split for the new depth
      p.micro_batches = 0;
      out.push_back(p);
    }
  }
  return out;
}

}  // namespace shardplan::simulator
