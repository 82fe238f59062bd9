// Where an emitted launch puts each engine instance: the plan's placement
// (the server's rank order over the nodes), and the naming shared by every
// target (node addresses, ports, comments).
#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/emit.h"
#include "client/emit/emit_internal.h"
#include "fmt/format.h"
#include "proto/enum_names.h"

namespace shardplan::client {
namespace emit_internal {

const char* EngineName(Engine engine) {
  // Indexed by Engine.
  static constexpr const char* kNames[] = {"vLLM", "SGLang", "TensorRT-LLM"};
  return EnumName(engine, kNames, "engine");
}

std::string DimPhrase(const Plan& plan, absl::string_view op,
                      absl::string_view dim) {
  if (op == "mlp_down" && dim == "column" &&
      PlanDim(plan, "mlp_up") == "column") {
    return "column->column MLP (mlp_up=column, mlp_down=column)";
  }
  if (op == "expert_down" && dim == "column" &&
      PlanDim(plan, "expert_up") == "column") {
    return "column->column experts (expert_up=column, expert_down=column)";
  }
  std::string what;
  if (dim == "sequence") {
    what = "sequence-split (context-parallel)";
  } else if (dim == "replicate") {
    what = "replicated";
  } else if (dim == "batch") {
    what = "batch-split";
  } else {
    what = absl::StrCat(dim, "-split");
  }
  return absl::StrCat(what, " ", op, " (", op, "=", dim, ")");
}

Degrees DegreesOf(const Plan& plan) {
  return Degrees{Positive(plan.replicas()), Positive(plan.dp()),
                 Positive(plan.tp()), Positive(plan.pp()), Positive(plan.ep())};
}

bool AllAttentionBatch(const Plan& plan) {
  for (const char* op : kAttentionOps) {
    if (PlanDim(plan, op) != "batch") return false;
  }
  return true;
}

std::vector<int> ExplicitStages(const Plan& plan, int pp) {
  if (pp <= 1 || plan.stage_layers_size() != pp) return {};
  return {plan.stage_layers().begin(), plan.stage_layers().end()};
}

Layout::Layout(int gpus_per_node, int64_t num_gpus,
               const std::vector<int>& node_gpus) {
  const int per_node = Positive(gpus_per_node);
  starts_.push_back(0);
  for (int n : node_gpus) {
    if (starts_.back() >= num_gpus) break;
    starts_.push_back(starts_.back() + Positive(n));
    physical_.push_back(Positive(n));
  }
  while (starts_.back() < num_gpus) {
    starts_.push_back(std::min<int64_t>(num_gpus, starts_.back() + per_node));
    physical_.push_back(per_node);
  }
}

bool Layout::UsePlacement(const Plan& plan, int64_t pool_gpus) {
  placed_.clear();
  std::vector<std::pair<int, int>> ranks;
  for (const shardplan::v1::StagePlacement& p : plan.placement()) {
    if (p.nodes_size() == 0 || p.node_gpus_size() != p.nodes_size()) {
      return false;
    }
    for (int i = 0; i < p.nodes_size(); ++i) {
      const int node = p.nodes(i);
      const int first = i == 0 ? p.first_gpu() : 0;
      if (node < 0 || node >= num_nodes() || first < 0 ||
          first + p.node_gpus(i) > NodeGpus(node)) {
        return false;
      }
      for (int g = 0; g < p.node_gpus(i); ++g)
        ranks.push_back({node, first + g});
    }
  }
  if (static_cast<int64_t>(ranks.size()) != pool_gpus) return false;
  placed_ = std::move(ranks);
  return true;
}

std::vector<Segment> Layout::SegmentsOf(int64_t first_rank,
                                        int64_t gpus) const {
  std::vector<Segment> out;
  if (placed() && first_rank + gpus <= static_cast<int64_t>(placed_.size())) {
    for (int64_t r = first_rank; r < first_rank + gpus; ++r) {
      const auto [node, gpu] = placed_[r];
      if (out.empty() || out.back().node != node ||
          out.back().first_gpu + out.back().gpus != gpu) {
        out.push_back(Segment{node, gpu, 0, false});
      }
      ++out.back().gpus;
    }
    for (Segment& s : out) {
      s.whole_node = s.first_gpu == 0 && s.gpus == physical_[s.node];
    }
    return out;
  }
  first_rank += offset;
  int64_t rank = first_rank;
  const int64_t end = first_rank + gpus;
  while (rank < end) {
    Segment s;
    s.node = static_cast<int>(
        std::upper_bound(starts_.begin(), starts_.end(), rank) -
        starts_.begin() - 1);
    s.node = std::min(s.node, num_nodes() - 1);
    s.first_gpu = static_cast<int>(rank - starts_[s.node]);
    s.gpus = static_cast<int>(std::max<int64_t>(
        1, std::min<int64_t>(end - rank, NodeGpus(s.node) - s.first_gpu)));
    s.whole_node = s.first_gpu == 0 && s.gpus == physical_[s.node];
    out.push_back(s);
    rank += s.gpus;
  }
  return out;
}

std::string Layout::Addr(int node) const {
  if (k8s) return "$(LWS_LEADER_ADDRESS)";
  return num_nodes() <= 1 ? "localhost" : absl::StrCat("$NODE", node, "_ADDR");
}

std::string Layout::StartRank(int j, int start, int first, int local) const {
  if (!k8s || j == 0) return absl::StrCat(start);
  return absl::StrCat("$((", first, " + (LWS_WORKER_INDEX - 1) * ", local,
                      "))");
}

Layout ClusterLayout(const EmitContext& context, int64_t plan_gpus, bool k8s) {
  Layout layout(context.gpus_per_node,
                context.num_gpus > 0
                    ? std::max<int64_t>(context.num_gpus, plan_gpus)
                    : plan_gpus,
                context.node_gpus);
  layout.k8s = k8s;
  return layout;
}

void AddDtypeAndStageFlags(const PoolArgs& a, Command& common) {
  const ToolFlags& f = a.ev.launch;
  if (!a.quantization.empty()) {
    common.Flag(f.Flag("quantization"),
                f.Value("quantization_" + a.quantization));
  }
  if (!a.kvdt.empty()) common.Flag(f.Flag("kv_cache_dtype"), a.kvdt);
  const std::vector<int> stages = ExplicitStages(a.plan, a.d.pp);
  if (!stages.empty()) {
    common.env.push_back(absl::StrCat(a.ev.env.at("pp_layer_partition"), "=",
                                      absl::StrJoin(stages, ",")));
  }
}

std::string VisibleDevices(const Segment& s) {
  std::vector<int> ids;
  for (int g = 0; g < s.gpus; ++g) ids.push_back(s.first_gpu + g);
  return absl::StrCat("CUDA_VISIBLE_DEVICES=", absl::StrJoin(ids, ","));
}

std::string Command::Render() const {
  std::string out;
  for (const std::string& c : comments) absl::StrAppend(&out, "# ", c, "\n");
  for (const std::string& l : setup) absl::StrAppend(&out, l, "\n");
  std::string line;
  if (!env.empty()) absl::StrAppend(&line, absl::StrJoin(env, " "), " ");
  absl::StrAppend(&line, absl::StrJoin(args, " \\\n  "));
  absl::StrAppend(&out, line, "\n");
  return out;
}

std::string NodeList(const std::vector<Segment>& segments) {
  if (segments.size() == 1) return absl::StrCat("node ", segments[0].node);
  return absl::StrCat("nodes ", segments.front().node, "-",
                      segments.back().node);
}

std::string NodeComment(int instance, int instances, const Segment& s,
                        absl::string_view role) {
  std::string out =
      instances > 1 ? absl::StrCat("Instance ", instance, ", ") : std::string();
  absl::StrAppend(&out, "node ", s.node);
  if (!role.empty()) absl::StrAppend(&out, " (", role, ")");
  absl::StrAppend(&out, ":");
  return out;
}

std::string RayComment(const Layout& layout,
                       const std::vector<Segment>& segments) {
  std::vector<std::string> others;
  for (size_t i = 1; i < segments.size(); ++i) {
    others.push_back(absl::StrCat(segments[i].node));
  }
  if (std::none_of(segments.begin(), segments.end(),
                   [&](const Segment& s) { return layout.Pin(s); })) {
    return fmt::format(
        "Ray cluster over {}: `ray start --head --port=6379` on node {}, `ray "
        "start --address={}:6379` on node(s) {}; then on node {}:",
        NodeList(segments), segments[0].node, layout.Addr(segments[0].node),
        absl::StrJoin(others, ","), segments[0].node);
  }
  // Part of a node: Ray must offer only the instance's GPUs there.
  std::vector<std::string> starts;
  for (size_t i = 0; i < segments.size(); ++i) {
    const Segment& s = segments[i];
    starts.push_back(fmt::format(
        "on node {} `{}ray start {}`", s.node,
        layout.Pin(s) ? VisibleDevices(s) + " " : "",
        i == 0 ? "--head --port=6379"
               : absl::StrCat("--address=", layout.Addr(segments[0].node),
                              ":6379")));
  }
  return fmt::format(
      "Ray cluster over {}: {}; then on node {}:", NodeList(segments),
      absl::StrJoin(starts, ", "), segments[0].node);
}

bool EqualSegments(const std::vector<Segment>& segments) {
  for (const Segment& s : segments) {
    if (s.gpus != segments[0].gpus) return false;
  }
  return true;
}

}  // namespace emit_internal

using emit_internal::kEnginePattern;
using emit_internal::OpDefault;
using shardplan::v1::Plan;

std::string MegatronDim(absl::string_view op) {
  for (const OpDefault& d : kEnginePattern) {
    if (op == d.op) return d.dim;
  }
  return "";
}

std::string PlanDim(const Plan& plan, absl::string_view op) {
  for (const auto& s : plan.operator_sharding()) {
    if (s.operator_() == op && !s.dim().empty()) return s.dim();
  }
  return MegatronDim(op);
}

std::vector<int> NodeGpusOf(const shardplan::v1::ClusterSpec& cluster) {
  bool sized = false;
  for (const auto& g : cluster.node_groups()) {
    sized |=
        g.gpus_per_node() > 0 && g.gpus_per_node() != cluster.gpus_per_node();
  }
  std::vector<int> out;
  if (!sized) return out;
  for (const auto& g : cluster.node_groups()) {
    const int size =
        g.gpus_per_node() > 0 ? g.gpus_per_node() : cluster.gpus_per_node();
    out.insert(out.end(), std::max(0, g.num_nodes()), size);
  }
  // The server places bigger nodes first (simulator/spec.cc); the commands
  // must number the nodes the same way.
  std::stable_sort(out.begin(), out.end(), std::greater<int>());
  return out;
}

std::string EffectiveWeightDtype(const EmitContext& context) {
  if (!context.weight_dtype.empty()) return context.weight_dtype;
  if (!context.native_dtype.empty()) return context.native_dtype;
  return "bf16";
}

}  // namespace shardplan::client
