#include "client/emit.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "fmt/format.h"

namespace shardplan::client {
namespace {

using shardplan::v1::Plan;

struct OpDefault {
  const char* op;
  const char* dim;
};
// DESIGN.md / simulator/types.h MegatronShardDims(): the pattern every engine
// implements.
constexpr OpDefault kMegatron[] = {
    {"embedding", "row"},    {"qkv", "column"},       {"attention", "column"},
    {"attn_out", "row"},     {"mlp_up", "column"},    {"mlp_down", "row"},
    {"router", "replicate"}, {"expert_up", "column"}, {"expert_down", "row"},
    {"lm_head", "column"},
};

constexpr const char* kAttentionOps[] = {"qkv", "attention", "attn_out"};

bool IsExpertOp(absl::string_view op) {
  return absl::StartsWith(op, "expert_");
}

const char* EngineName(Engine engine) {
  switch (engine) {
    case Engine::kVllm:
      return "vLLM";
    case Engine::kSglang:
      return "SGLang";
    case Engine::kTrtllm:
      return "TensorRT-LLM";
  }
  return "engine";
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

int Positive(int v) { return v > 0 ? v : 1; }

// Degrees with defaults applied.
struct Degrees {
  int replicas, dp, tp, pp, ep;
  int replica_gpus() const { return dp * tp * pp; }
};

bool AllAttentionBatch(const Plan& plan) {
  for (const char* op : kAttentionOps) {
    if (PlanDim(plan, op) != "batch") return false;
  }
  return true;
}

// The plan's stage split when it names one per stage (else the engines' own
// even split applies and nothing is passed).
std::vector<int> ExplicitStages(const Plan& plan, int pp) {
  if (pp <= 1 || plan.stage_layers_size() != pp) return {};
  return {plan.stage_layers().begin(), plan.stage_layers().end()};
}

// The GPUs of one engine instance on one node (rank order: replica, stage, dp,
// tp — simulator/placement.h — so an instance is a contiguous rank range).
struct Segment {
  int node = 0;
  int first_gpu = 0;  // local index on the node
  int gpus = 0;
  bool whole_node = false;
};

// Where the engine instances go.
class Layout {
 public:
  // Nodes of `node_gpus` GPUs each in rank order (node groups of different
  // sizes), then of `gpus_per_node` up to `num_gpus` (the last possibly
  // partial).
  Layout(int gpus_per_node, int64_t num_gpus,
         const std::vector<int>& node_gpus = {}) {
    const int per_node = Positive(gpus_per_node);
    starts_.push_back(0);
    for (int n : node_gpus) {
      if (starts_.back() >= num_gpus) break;
      starts_.push_back(starts_.back() + Positive(n));
    }
    while (starts_.back() < num_gpus) {
      starts_.push_back(std::min<int64_t>(num_gpus, starts_.back() + per_node));
    }
  }

  int num_nodes() const { return static_cast<int>(starts_.size()) - 1; }
  int NodeGpus(int node) const {
    return static_cast<int>(starts_[node + 1] - starts_[node]);
  }
  std::vector<Segment> SegmentsOf(int64_t first_rank, int64_t gpus) const {
    std::vector<Segment> out;
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
      s.whole_node = s.first_gpu == 0 && s.gpus == NodeGpus(s.node);
      out.push_back(s);
      rank += s.gpus;
    }
    return out;
  }
  // The address placeholder of a node; "localhost" on a one-node cluster.
  // On Kubernetes (LeaderWorkerSet) every pod of an instance reaches the
  // leader through $(LWS_LEADER_ADDRESS).
  std::string Addr(int node) const {
    if (k8s) return "$(LWS_LEADER_ADDRESS)";
    return num_nodes() <= 1 ? "localhost"
                            : absl::StrCat("$NODE", node, "_ADDR");
  }
  // The n-th instance whose head is on `node` gets port base + n (pods have
  // their own network namespace: always base).
  int NextPort(int node, int base) {
    return k8s ? base : base + used_ports_[node]++;
  }
  // The node rank of the j-th node of an instance: on Kubernetes one worker
  // template serves all j > 0.
  std::string NodeRank(int j) const {
    return k8s && j > 0 ? "$(LWS_WORKER_INDEX)" : absl::StrCat(j);
  }
  // The first DP rank of the j-th node: `start` here; on Kubernetes computed
  // by the worker's shell from its index (leader has `first`, workers
  // `local` each).
  std::string StartRank(int j, int start, int first, int local) const {
    if (!k8s || j == 0) return absl::StrCat(start);
    return absl::StrCat("$((", first, " + (LWS_WORKER_INDEX - 1) * ", local,
                        "))");
  }
  // Whether to pin an instance to its GPUs (Kubernetes assigns them).
  bool Pin(const Segment& s) const { return !k8s && !s.whole_node; }

  bool k8s = false;
  // First rank of the pool being laid out (decode instances follow the
  // prefill instances of a disaggregated plan).
  int64_t offset = 0;

 private:
  std::vector<int64_t> starts_;  // first rank of each node, then the end
  std::map<int, int> used_ports_;
};

std::string VisibleDevices(const Segment& s) {
  std::vector<int> ids;
  for (int g = 0; g < s.gpus; ++g) ids.push_back(s.first_gpu + g);
  return absl::StrCat("CUDA_VISIBLE_DEVICES=", absl::StrJoin(ids, ","));
}

// One command line: the comment above it, environment, argv.
struct Command {
  std::vector<std::string> comments;
  std::vector<std::string> env;
  std::vector<std::string> args;
  // Which instance, how many GPUs of its node, whether Ray places it; the
  // node it runs on and its instance's HTTP port.
  int instance = 0;
  int gpus = 0;
  bool ray = false;
  int node = 0;
  int port = 0;
  // Shell lines run just before the command (a config file it reads).
  std::vector<std::string> setup;

  void Flag(const std::string& name, int value) {
    if (!name.empty()) args.push_back(absl::StrCat(name, " ", value));
  }
  void Flag(const std::string& name, absl::string_view value) {
    if (!name.empty()) args.push_back(absl::StrCat(name, " ", value));
  }
  void Switch(const std::string& name) {
    if (!name.empty()) args.push_back(name);
  }
  std::string Render() const {
    std::string out;
    for (const std::string& c : comments) absl::StrAppend(&out, "# ", c, "\n");
    for (const std::string& l : setup) absl::StrAppend(&out, l, "\n");
    std::string line;
    if (!env.empty()) absl::StrAppend(&line, absl::StrJoin(env, " "), " ");
    absl::StrAppend(&line, absl::StrJoin(args, " \\\n  "));
    absl::StrAppend(&out, line, "\n");
    return out;
  }
};

// The launch of all instances: shared preamble, one command per node or
// instance, and where to point the benchmark.
struct Script {
  std::vector<std::string> header;    // comment lines
  std::vector<std::string> preamble;  // shell lines (config files)
  std::vector<Command> commands;
  std::vector<std::string> warnings;
  // Endpoint of the first instance and requests in flight per instance.
  std::string bench_host;
  int bench_port = 0;
  int instances = 0;
  int concurrency_per_instance = 0;
};

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
  return fmt::format(
      "Ray cluster over {}: `ray start --head --port=6379` on node {}, `ray "
      "start --address={}:6379` on node(s) {}; then on node {}:",
      NodeList(segments), segments[0].node, layout.Addr(segments[0].node),
      absl::StrJoin(others, ","), segments[0].node);
}

bool EqualSegments(const std::vector<Segment>& segments) {
  for (const Segment& s : segments) {
    if (s.gpus != segments[0].gpus) return false;
  }
  return true;
}

// --- vLLM: DP ranks each run attention with TP; MoE layers use one group of
// DP x TP ranks, expert-parallel with --enable-expert-parallel (EP = DP x TP).
// Several nodes: the multiprocessing launcher (--nnodes/--node-rank/
// --master-addr, --headless on the others) for one TP/PP group, per-node DP
// ranks (--data-parallel-size-local/--data-parallel-start-rank) for data
// parallelism, Ray where a group does not split evenly over its nodes.
void EmitVllm(const EngineVersion& ev, const Plan& plan, const Degrees& d,
              bool moe, bool attention_dp, const std::string& model_id,
              const std::string& quantization, const std::string& kvdt,
              int batch, Layout& layout, Script& out) {
  const ToolFlags& f = ev.launch;
  const int v_dp = attention_dp ? d.dp * d.tp : d.dp;
  const int v_tp = attention_dp ? 1 : d.tp;
  const int rank_gpus = v_tp * d.pp;  // one DP rank
  const int instance_gpus = v_dp * rank_gpus;

  Command common;
  common.args = {absl::StrCat(f.command, " ", model_id)};
  common.Flag(f.Flag("tensor_parallel"), v_tp);
  common.Flag(f.Flag("pipeline_parallel"), d.pp);
  if (v_dp > 1) common.Flag(f.Flag("data_parallel"), v_dp);
  if (moe && d.ep > 1) {
    common.Switch(f.Flag("expert_parallel"));
    if (d.ep != d.dp * d.tp) {
      out.warnings.push_back(fmt::format(
          "vLLM's expert-parallel size is always data x tensor = {}; the "
          "plan's ep={} (experts tensor-split {} ways inside each expert "
          "group) cannot be expressed, the command uses EP={}.",
          d.dp * d.tp, d.ep, std::max(1, d.dp * d.tp / d.ep), d.dp * d.tp));
    }
  }
  // --max-num-seqs applies per DP rank.
  if (batch > 0) {
    common.Flag(f.Flag("max_batch"),
                attention_dp ? (batch + d.tp - 1) / d.tp : batch);
  }
  if (!quantization.empty()) {
    common.Flag(f.Flag("quantization"),
                f.Value("quantization_" + quantization));
  }
  if (kvdt == "fp8")
    common.Flag(f.Flag("kv_cache_dtype"), f.Value("kv_cache_fp8"));
  const std::vector<int> stages = ExplicitStages(plan, d.pp);
  if (!stages.empty()) {
    common.env.push_back(absl::StrCat(ev.env.at("pp_layer_partition"), "=",
                                      absl::StrJoin(stages, ",")));
  }

  if (v_dp > 1 && d.pp > 1 && layout.SegmentsOf(0, instance_gpus).size() > 1) {
    // vLLM gives each DP rank its tp x pp GPUs side by side; the plan keeps a
    // stage of all DP ranks together (rank order replica, stage, dp, tp).
    out.warnings.push_back(
        "vLLM places the pipeline stages of one data-parallel rank on "
        "neighbouring GPUs, while the plan groups each stage of all DP ranks; "
        "across nodes the stage-to-node mapping, and so the cross-node "
        "traffic, differs from the prediction.");
  }
  for (int r = 0; r < d.replicas; ++r) {
    const std::vector<Segment> segs = layout.SegmentsOf(
        static_cast<int64_t>(r) * instance_gpus, instance_gpus);
    const Segment& head = segs[0];
    const int port = layout.NextPort(head.node, 8000);
    const int slot = port - 8000;
    if (r == 0) {
      out.bench_host = layout.Addr(head.node);
      out.bench_port = port;
    }
    auto with_devices = [&](Command c, const Segment& s) {
      if (layout.Pin(s)) c.env.insert(c.env.begin(), VisibleDevices(s));
      c.instance = r;
      c.gpus = s.gpus;
      c.node = s.node;
      c.port = port;
      return c;
    };
    if (segs.size() == 1) {
      Command c = with_devices(common, head);
      c.comments.push_back(NodeComment(r, d.replicas, head, ""));
      c.Flag(f.Flag("port"), port);
      out.commands.push_back(std::move(c));
      continue;
    }
    const bool aligned =
        std::all_of(segs.begin(), segs.end(),
                    [&](const Segment& s) { return s.gpus % rank_gpus == 0; });
    if (v_dp > 1 && aligned) {
      // Each node runs its own DP ranks; one API server on the head node.
      int start = 0;
      for (size_t j = 0; j < segs.size(); ++j) {
        Command c = with_devices(common, segs[j]);
        c.comments.push_back(
            NodeComment(r, d.replicas, segs[j], j == 0 ? "head" : "headless"));
        const int local = segs[j].gpus / rank_gpus;
        c.Flag(f.Flag("data_parallel_local"), local);
        if (j > 0) {
          c.Flag(f.Flag("data_parallel_start_rank"),
                 layout.StartRank(static_cast<int>(j), start,
                                  segs[0].gpus / rank_gpus, local));
        }
        c.Flag(f.Flag("data_parallel_address"), layout.Addr(head.node));
        c.Flag(f.Flag("data_parallel_rpc_port"), 13345 + slot);
        if (j == 0) {
          c.Flag(f.Flag("port"), port);
        } else {
          c.Switch(f.Flag("headless"));
        }
        start += local;
        out.commands.push_back(std::move(c));
      }
      continue;
    }
    if (v_dp == 1 && EqualSegments(segs) && f.Has("nnodes")) {
      // One TP/PP group over equal shares of several nodes.
      for (size_t j = 0; j < segs.size(); ++j) {
        Command c = with_devices(common, segs[j]);
        c.comments.push_back(
            NodeComment(r, d.replicas, segs[j], j == 0 ? "head" : "headless"));
        c.Flag(f.Flag("nnodes"), static_cast<int>(segs.size()));
        c.Flag(f.Flag("node_rank"), layout.NodeRank(static_cast<int>(j)));
        c.Flag(f.Flag("master_addr"), layout.Addr(head.node));
        if (j == 0) {
          c.Flag(f.Flag("port"), port);
        } else {
          c.Switch(f.Flag("headless"));
        }
        out.commands.push_back(std::move(c));
      }
      continue;
    }
    // Ray places the workers: a group that does not split evenly over its
    // nodes (a partial node), DP ranks that span nodes, or a release without
    // the multiprocessing multi-node launcher.
    Command c = common;
    c.instance = r;
    c.gpus = head.gpus;
    c.node = head.node;
    c.port = port;
    c.ray = true;
    c.comments.push_back(RayComment(layout, segs));
    if (v_dp > 1) {
      if (f.Has("data_parallel_backend")) {
        if (ev.env.count("ray_dp_pack_strategy") > 0) {
          // A DP rank larger than a node must be packed across nodes.
          c.env.insert(c.env.begin(),
                       ev.env.at("ray_dp_pack_strategy") + "=span");
        }
        c.Flag(f.Flag("data_parallel_backend"), "ray");
      } else {
        out.warnings.push_back(
            "this vLLM release cannot place data-parallel ranks that span "
            "nodes; use a newer release (--engine-version) or a plan whose DP "
            "ranks fit a node.");
      }
    } else {
      c.Flag(f.Flag("distributed_executor_backend"), "ray");
    }
    c.Flag(f.Flag("port"), port);
    out.commands.push_back(std::move(c));
  }
  out.instances = d.replicas;
  if (d.replicas > 1) {
    out.header.push_back(fmt::format(
        "{} servers: put them behind a load balancer.", d.replicas));
  }
}

// --- SGLang: --tp-size is the whole group of one server; with
// --enable-dp-attention the attention runs data-parallel in --dp-size groups
// and MoE experts are split over --ep-size ranks (expert TP = tp-size /
// ep-size). A server over several nodes: --nnodes/--node-rank/--dist-init-addr
// on each node.
void EmitSglang(const EngineVersion& ev, const Plan& plan, const Degrees& d,
                bool moe, bool attention_dp, const std::string& model_id,
                const std::string& quantization, const std::string& kvdt,
                int batch, Layout& layout, Script& out) {
  const ToolFlags& f = ev.launch;
  int s_tp = d.tp;
  int s_dp = 1;
  bool dp_attention = false;
  int servers_per_replica = 1;
  int requests_per_server = batch;
  if (moe) {
    s_tp = d.dp * d.tp;
    s_dp = attention_dp ? d.dp * d.tp : d.dp;
    dp_attention = s_dp > 1;
    requests_per_server = batch * d.dp;
  } else if (attention_dp) {
    // Dense with batch-split attention: one server per DP copy, attention DP
    // inside its TP group.
    s_dp = d.tp;
    dp_attention = true;
    servers_per_replica = d.dp;
  } else if (d.dp > 1) {
    // Dense data parallelism: one server with --dp-size when the copies share
    // a node, else one server per copy (SGLang's DP controller does not span
    // nodes), behind sglang-router.
    const bool one_node =
        layout.SegmentsOf(0, d.replica_gpus()).size() == 1 && d.replicas == 1;
    if (one_node) {
      s_dp = d.dp;
    } else {
      servers_per_replica = d.dp;
    }
  }
  const int server_gpus =
      (moe || s_dp == 1 || dp_attention ? s_tp : s_tp * s_dp) * d.pp;

  Command common;
  common.args = {absl::StrCat(f.command, " ", ev.model_flag, " ", model_id)};
  common.Flag(f.Flag("tensor_parallel"), s_tp);
  if (s_dp > 1) common.Flag(f.Flag("data_parallel"), s_dp);
  if (dp_attention) common.Switch(f.Flag("dp_attention"));
  if (d.pp > 1) common.Flag(f.Flag("pipeline_parallel"), d.pp);
  if (moe && d.ep > 1) {
    common.Flag(f.Flag("expert_parallel"), d.ep);
    // Experts not tensor-split (EP = the whole group): DeepEP all-to-all, as
    // SGLang recommends for DP attention + EP.
    if (d.ep == s_tp) {
      if (f.Has("moe_a2a_backend")) {
        common.Flag(f.Flag("moe_a2a_backend"), f.Value("moe_a2a_backend"));
      } else {
        common.Switch(f.Flag("deepep_switch"));
      }
    }
  }
  if (requests_per_server > 0)
    common.Flag(f.Flag("max_batch"), requests_per_server);
  if (!quantization.empty()) {
    common.Flag(f.Flag("quantization"),
                f.Value("quantization_" + quantization));
  }
  if (kvdt == "fp8")
    common.Flag(f.Flag("kv_cache_dtype"), f.Value("kv_cache_fp8"));
  const std::vector<int> stages = ExplicitStages(plan, d.pp);
  if (!stages.empty()) {
    common.env.push_back(absl::StrCat(ev.env.at("pp_layer_partition"), "=",
                                      absl::StrJoin(stages, ",")));
  }

  const int servers = d.replicas * servers_per_replica;
  for (int i = 0; i < servers; ++i) {
    const std::vector<Segment> segs =
        layout.SegmentsOf(static_cast<int64_t>(i) * server_gpus, server_gpus);
    const Segment& head = segs[0];
    const int port = layout.NextPort(head.node, 30000);
    if (i == 0) {
      out.bench_host = layout.Addr(head.node);
      out.bench_port = port;
    }
    if (segs.size() > 1 && !EqualSegments(segs)) {
      out.warnings.push_back(fmt::format(
          "SGLang gives every node of a server the same number of GPUs; "
          "server {} has {} of them on {} ({} on the last): the launch "
          "fails unless the plan is changed so that its GPUs split evenly.",
          i, server_gpus, NodeList(segs), segs.back().gpus));
    }
    for (size_t j = 0; j < segs.size(); ++j) {
      Command c = common;
      if (layout.Pin(segs[j]))
        c.env.insert(c.env.begin(), VisibleDevices(segs[j]));
      c.instance = i;
      c.gpus = segs[j].gpus;
      c.node = segs[j].node;
      c.port = port;
      c.comments.push_back(NodeComment(i, servers, segs[j],
                                       segs.size() == 1 ? ""
                                       : j == 0         ? "head"
                                                        : "worker"));
      if (segs.size() > 1) {
        c.Flag(f.Flag("nnodes"), static_cast<int>(segs.size()));
        c.Flag(f.Flag("node_rank"), layout.NodeRank(static_cast<int>(j)));
        c.Flag(f.Flag("dist_init_addr"),
               absl::StrCat(layout.Addr(head.node), ":", 20000 + port - 30000));
      }
      if (j == 0) {
        if (layout.num_nodes() > 1 || layout.k8s) {
          c.Flag(f.Flag("host"), "0.0.0.0");
        }
        c.Flag(f.Flag("port"), port);
      }
      out.commands.push_back(std::move(c));
    }
  }
  out.instances = servers;
  out.concurrency_per_instance =
      moe ? batch * d.dp : batch * (s_dp > 1 && !dp_attention ? s_dp : 1);
  if (servers > 1) {
    out.header.push_back(fmt::format(
        "{} servers: put them behind sglang-router (or another load balancer).",
        servers));
  }
}

// Which servers of a disaggregated plan a pool's commands start (kNone: an
// aggregated plan).
enum class DisaggRole { kNone, kPrefill, kDecode };

// --- TensorRT-LLM disaggregated serving (TensorRT-LLM's sources in
// client/engines/trtllm.yaml): each context (prefill) and generation (decode)
// server is a plain trtllm-serve whose options file
// (https://github.com/NVIDIA/TensorRT-LLM/blob/180891e14df3d9907ddb858153f1ee6eb837fffd/examples/disaggregated/slurm/benchmark/config.yaml)
// carries its role's whole layout and batch plus cache_transceiver_config
// (https://nvidia.github.io/TensorRT-LLM/llm-api/reference/CacheTransceiverConfig.html),
// and `trtllm-serve disaggregated -c FILE` routes between them.

// The options file of a role's servers.
const char* TrtllmRoleFile(DisaggRole role) {
  return role == DisaggRole::kPrefill ? "shardplan-trtllm-ctx.yaml"
                                      : "shardplan-trtllm-gen.yaml";
}

// The options-file lines of a role: its layout and batch (the same values
// as the command's flags, so the file alone describes the server), the
// tokens one iteration may hold — a context server prefills up to its batch
// of whole prompts, a generation server decodes one token per request — and
// the KV cache transfer, its buffer sized to one prompt as TensorRT-LLM's
// disaggregated-serving page recommends (max_tokens_in_buffer >= ISL).
// Context servers run without the overlap scheduler, which the page says
// disaggregated context servers do not support.
std::vector<std::string> TrtllmRoleConfig(const EngineVersion& ev,
                                          DisaggRole role, int t_tp,
                                          const Degrees& d, bool moe,
                                          int per_rank_batch,
                                          int input_tokens) {
  auto key = [&ev](const char* role_key) {
    auto it = ev.config.find(role_key);
    return it == ev.config.end() ? std::string() : it->second;
  };
  const bool prefill = role == DisaggRole::kPrefill;
  const int isl = Positive(input_tokens);
  std::vector<std::string> out = {
      absl::StrCat(key("tensor_parallel"), ": ", t_tp),
      absl::StrCat(key("pipeline_parallel"), ": ", d.pp),
  };
  if (moe && d.ep > 1) {
    out.push_back(absl::StrCat(key("expert_parallel"), ": ", d.ep));
  }
  // No batch known (neither the plan's nor a fallback): the engine's
  // defaults, as the command's flags do.
  if (per_rank_batch > 0) {
    out.push_back(absl::StrCat(key("max_batch"), ": ", per_rank_batch));
    out.push_back(absl::StrCat(
        key("max_num_tokens"), ": ",
        static_cast<int64_t>(per_rank_batch) * (prefill ? isl : 1)));
  }
  if (prefill) out.push_back(key("disable_overlap_scheduler") + ": true");
  out.push_back(key("cache_transceiver_config") + ":");
  out.push_back("  backend: " + ev.launch.Value("cache_transceiver_backend"));
  out.push_back(absl::StrCat("  max_tokens_in_buffer: ", isl));
  return out;
}

// --- TensorRT-LLM (PyTorch backend): --tp_size is the whole group; MoE
// experts split over --ep_size; attention either tensor-parallel over tp_size
// or fully data-parallel (enable_attention_dp) — nothing in between.
// --max_batch_size is per rank. A group over several nodes is one MPI world
// launched from one node. The servers of a disaggregated role read that
// role's options file and listen from the router's port + 1 up.
void EmitTrtllm(const EngineVersion& ev, const Plan& plan, const Degrees& d,
                bool moe, bool attention_dp, const std::string& model_id,
                const std::string& kvdt, int batch, DisaggRole role,
                int input_tokens, Layout& layout, Script& out) {
  const ToolFlags& f = ev.launch;
  int t_tp = d.tp;
  bool attention_dp_flag = false;
  int servers_per_replica = 1;
  if (moe) {
    t_tp = d.dp * d.tp;
    attention_dp_flag = attention_dp || d.dp > 1;
    if (d.dp > 1 && d.tp > 1 && !attention_dp) {
      out.warnings.push_back(fmt::format(
          "TensorRT-LLM runs attention either tensor-parallel over all {} "
          "ranks or fully data-parallel; the plan's dp={} x tp={} attention "
          "cannot be expressed, the command uses enable_attention_dp "
          "(attention DP {}).",
          t_tp, d.dp, d.tp, t_tp));
    }
  } else {
    servers_per_replica = d.dp;
  }
  const int server_gpus = t_tp * d.pp;
  // Per rank: with attention DP each rank schedules its own share of the
  // dp x batch requests in flight; with tensor-parallel attention every rank
  // sees the whole batch.
  const int per_rank_batch =
      attention_dp_flag ? (batch * d.dp + t_tp - 1) / t_tp : batch;

  std::vector<std::string> config;
  if (attention_dp_flag)
    config.push_back(ev.config.at("attention_dp") + ": true");
  const std::vector<int> stages = ExplicitStages(plan, d.pp);
  if (!stages.empty()) {
    config.push_back(absl::StrCat(ev.config.at("pp_partition"), ": [",
                                  absl::StrJoin(stages, ", "), "]"));
  }
  if (kvdt == "fp8") {
    config.push_back(ev.config.at("kv_cache_config") + ":");
    config.push_back("  dtype: " + f.Value("kv_cache_fp8"));
  }
  std::string config_file = "shardplan-trtllm.yaml";
  int base_port = 8000;
  if (role != DisaggRole::kNone) {
    config_file = TrtllmRoleFile(role);
    for (std::string& line : TrtllmRoleConfig(ev, role, t_tp, d, moe,
                                              per_rank_batch, input_tokens)) {
      config.push_back(std::move(line));
    }
    (void)absl::SimpleAtoi(ev.router.Value("port"), &base_port);
    ++base_port;
    out.preamble.push_back(fmt::format(
        "# {} servers' options; write this file on every node that runs one "
        "(every node of an MPI world):",
        role == DisaggRole::kPrefill ? "Context (prefill)"
                                     : "Generation (decode)"));
  }

  Command common;
  common.args = {absl::StrCat(f.command, " ", model_id)};
  common.Flag(f.Flag("backend"), f.Value("backend"));
  common.Flag(f.Flag("tensor_parallel"), t_tp);
  common.Flag(f.Flag("pipeline_parallel"), d.pp);
  if (moe && d.ep > 1) common.Flag(f.Flag("expert_parallel"), d.ep);
  if (batch > 0) common.Flag(f.Flag("max_batch"), per_rank_batch);
  if (!config.empty()) {
    out.preamble.push_back(absl::StrCat("cat > ", config_file, " <<'EOF'"));
    for (const std::string& line : config) out.preamble.push_back(line);
    out.preamble.push_back("EOF");
    common.Flag(f.Flag("config"), config_file);
  }

  const int servers = d.replicas * servers_per_replica;
  bool multi_node = false;
  for (int i = 0; i < servers; ++i) {
    const std::vector<Segment> segs =
        layout.SegmentsOf(static_cast<int64_t>(i) * server_gpus, server_gpus);
    const Segment& head = segs[0];
    const int port = layout.NextPort(head.node, base_port);
    if (i == 0) {
      out.bench_host = layout.Addr(head.node);
      out.bench_port = port;
    }
    Command c = common;
    c.instance = i;
    c.gpus = head.gpus;
    c.node = head.node;
    c.port = port;
    c.ray = segs.size() > 1;  // one mpirun for several nodes
    if (layout.num_nodes() > 1 || layout.k8s) {
      c.Flag(f.Flag("host"), "0.0.0.0");
    }
    c.Flag(f.Flag("port"), port);
    if (segs.size() == 1) {
      if (layout.Pin(head)) c.env.insert(c.env.begin(), VisibleDevices(head));
      c.comments.push_back(NodeComment(i, servers, head, ""));
    } else {
      multi_node = true;
      std::vector<std::string> hosts;
      for (const Segment& s : segs) {
        hosts.push_back(absl::StrCat(layout.Addr(s.node), ":", s.gpus));
      }
      c.comments.push_back(
          fmt::format("{}one MPI world over {}, started from node {}:",
                      servers > 1 || role != DisaggRole::kNone
                          ? absl::StrCat("Instance ", i, ", ")
                          : "",
                      NodeList(segs), head.node));
      c.args[0] = absl::StrCat("mpirun -np ", server_gpus, " -H ",
                               absl::StrJoin(hosts, ","), " ",
                               ev.multi_node_wrapper, " ", c.args[0]);
    }
    out.commands.push_back(std::move(c));
  }
  if (multi_node && !config.empty()) {
    out.header.push_back(absl::StrCat(
        config_file, " must exist at the same path on every node."));
  }
  out.instances = servers;
  out.concurrency_per_instance = moe ? batch * d.dp : batch;
  if (servers > 1) {
    out.header.push_back(
        fmt::format("{} servers: put them behind a load balancer.", servers));
  }
}

std::string RenderBenchmark(Engine engine, const EngineVersion& ev,
                            const std::string& model_id, const Script& s,
                            const EmitContext& context) {
  const ToolFlags& b = ev.benchmark;
  const int c = Positive(s.concurrency_per_instance);
  const int prompts = std::max(100, 5 * c);
  Command cmd;
  if (s.instances > 1) {
    cmd.comments.push_back(fmt::format(
        "Benchmark that checks the prediction (ISL {}, OSL {}, {} requests in "
        "flight per instance): run it against each instance, or at {} through "
        "the load balancer.",
        context.input_tokens, context.output_tokens, c,
        static_cast<int64_t>(c) * s.instances));
  } else {
    cmd.comments.push_back(fmt::format(
        "Benchmark that checks the prediction (ISL {}, OSL {}, {} requests in "
        "flight):",
        context.input_tokens, context.output_tokens, c));
  }
  cmd.args = {b.command};
  switch (engine) {
    case Engine::kVllm:
      cmd.Flag(b.Flag("model"), model_id);
      cmd.Flag(b.Flag("host"), s.bench_host);
      cmd.Flag(b.Flag("port"), s.bench_port);
      cmd.Flag(b.Flag("dataset"), b.Value("dataset"));
      cmd.Flag(b.Flag("input_len"), context.input_tokens);
      cmd.Flag(b.Flag("output_len"), context.output_tokens);
      cmd.Flag(b.Flag("concurrency"), c);
      cmd.Flag(b.Flag("num_prompts"), prompts);
      cmd.Switch(b.Flag("ignore_eos"));
      break;
    case Engine::kSglang:
      cmd.Flag(b.Flag("backend"), b.Value("backend"));
      cmd.Flag(b.Flag("host"), s.bench_host);
      cmd.Flag(b.Flag("port"), s.bench_port);
      cmd.Flag(b.Flag("model"), model_id);
      cmd.Flag(b.Flag("dataset"), b.Value("dataset"));
      cmd.Flag(b.Flag("input_len"), context.input_tokens);
      cmd.Flag(b.Flag("output_len"), context.output_tokens);
      cmd.Flag(b.Flag("range_ratio"), b.Value("range_ratio"));
      cmd.Flag(b.Flag("concurrency"), c);
      cmd.Flag(b.Flag("num_prompts"), prompts);
      break;
    case Engine::kTrtllm:
      cmd.Flag(b.Flag("model"), model_id);
      cmd.Flag(b.Flag("url"), absl::StrCat(s.bench_host, ":", s.bench_port));
      cmd.Flag(b.Flag("endpoint_type"), b.Value("endpoint_type"));
      cmd.Switch(b.Flag("streaming"));
      cmd.Flag(b.Flag("input_len"), context.input_tokens);
      cmd.Flag(b.Flag("input_stddev"), 0);
      cmd.Flag(b.Flag("output_len"), context.output_tokens);
      cmd.Flag(b.Flag("output_stddev"), 0);
      cmd.Flag(b.Flag("concurrency"), c);
      cmd.Flag(b.Flag("num_prompts"), prompts);
      break;
  }
  return cmd.Render();
}

const char* DtypeLabel(absl::string_view dtype) {
  if (dtype == "fp8") return "FP8";
  if (dtype == "fp4") return "FP4 (MXFP4/NVFP4)";
  return "BF16";
}

// Quantization flags and warnings for the weight dtype the plan is sized for
// against the dtype of the checkpoint the command loads. Returns the online
// quantization to request ("fp8" or "").
std::string WeightQuantization(Engine engine, const EmitContext& context,
                               const std::string& model_id,
                               std::vector<std::string>& warnings) {
  const std::string want = EffectiveWeightDtype(context);
  const std::string have =
      context.native_dtype.empty() ? "bf16" : context.native_dtype;
  if (want == have) return "";  // the engine reads it from the checkpoint
  if (want == "fp8" && have == "bf16" && engine != Engine::kTrtllm) {
    return "fp8";  // online FP8 quantization of BF16 weights at load time
  }
  if (want == "fp8" && have == "bf16") {
    warnings.push_back(fmt::format(
        "TensorRT-LLM takes the weight dtype from the checkpoint: serve an "
        "FP8-quantized checkpoint (e.g. one made with NVIDIA ModelOpt) "
        "instead of {}.",
        model_id));
    return "";
  }
  if (want == "fp4") {
    warnings.push_back(fmt::format(
        "FP4 weights need a pre-quantized (NVFP4/MXFP4) checkpoint: pass its "
        "path or id instead of {} ({}); H100 computes FP4 weights at FP8.",
        model_id, DtypeLabel(have)));
    return "";
  }
  // The plan asks for wider weights than the checkpoint has.
  warnings.push_back(fmt::format(
      "{} ships {} weights but the plan is sized for {} (weight dtype {}): "
      "the command loads the {} checkpoint, which needs less memory than "
      "planned; drop --weight-dtype to plan for the checkpoint, or serve a {} "
      "copy of it.",
      model_id, DtypeLabel(have), DtypeLabel(want), want, DtypeLabel(have),
      DtypeLabel(want)));
  return "";
}

}  // namespace

std::string MegatronDim(absl::string_view op) {
  for (const OpDefault& d : kMegatron) {
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

namespace {

// A launch before rendering: the commands of every instance, the flag table
// used and what the header needs.
struct Built {
  Script script;
  EngineVersion ev;
  std::string model_id;
  int64_t plan_gpus = 0;
  int num_nodes = 1;
  bool ok = true;
  // Disaggregated plans: the pools' instance counts and GPUs per instance.
  bool disaggregated = false;
  int prefill_instances = 0, decode_instances = 0;
  int64_t prefill_gpus = 0, decode_gpus = 0;
  // Where each pool's commands start in script.commands (decode after
  // prefill); the router command is last.
  size_t decode_begin = 0;
};

Degrees DegreesOf(const Plan& plan) {
  return Degrees{Positive(plan.replicas()), Positive(plan.dp()),
                 Positive(plan.tp()), Positive(plan.pp()), Positive(plan.ep())};
}

// The commands of one pool of engine instances (the whole plan when it is
// aggregated), with the warnings for what the engine cannot express.
void EmitPool(Engine engine, const EngineVersion& ev, const Plan& plan,
              const EmitContext& context, const std::string& model_id,
              const std::string& quantization, Layout& layout, Script& script,
              DisaggRole role = DisaggRole::kNone) {
  const Degrees d = DegreesOf(plan);
  const bool moe = context.is_moe || d.ep > 1;
  const char* engine_name = EngineName(engine);

  // --- Which per-operator dimensions the engine can express. Every engine
  // implements Megatron's pattern inside a tensor-parallel group; attention
  // split by batch inside the group is "DP attention" (SGLang any model; vLLM
  // and TensorRT-LLM for MoE models).
  const bool attention_dp =
      d.tp > 1 && AllAttentionBatch(plan) && (moe || engine == Engine::kSglang);
  const int expert_group = moe ? std::max(1, d.dp * d.tp / d.ep) : 1;
  for (const OpDefault& def : kMegatron) {
    const std::string op = def.op;
    if (IsExpertOp(op) && !moe) continue;
    if (op == "router" && !moe) continue;
    const int group = IsExpertOp(op) ? expert_group : d.tp;
    if (group <= 1) continue;  // nothing is split; the dimension is moot
    const std::string dim = PlanDim(plan, op);
    if (dim == def.dim) continue;
    const bool is_attention =
        std::find(std::begin(kAttentionOps), std::end(kAttentionOps), op) !=
        std::end(kAttentionOps);
    if (is_attention && attention_dp) continue;
    if (op == "router") continue;  // tiny; engines replicate it
    script.warnings.push_back(fmt::format(
        "{} cannot express {}; the command shards {} the Megatron way "
        "({}={}), so the predicted figures apply only approximately.",
        engine_name, DimPhrase(plan, op, dim), op, op, def.dim));
  }
  if (d.tp > 1 && AllAttentionBatch(plan) && !attention_dp) {
    script.warnings.push_back(fmt::format(
        "{} has no data-parallel attention for dense models; the plan's "
        "batch-split attention becomes head-split tensor parallelism "
        "(qkv=column, attention=column, attn_out=row).",
        engine_name));
  }

  const int batch =
      plan.batch_size() > 0 ? plan.batch_size() : context.batch_fallback;
  const std::string& kvdt = context.kv_cache_dtype;
  script.concurrency_per_instance = batch * d.dp;
  switch (engine) {
    case Engine::kVllm:
      EmitVllm(ev, plan, d, moe, attention_dp, model_id, quantization, kvdt,
               batch, layout, script);
      break;
    case Engine::kSglang:
      EmitSglang(ev, plan, d, moe, attention_dp, model_id, quantization, kvdt,
                 batch, layout, script);
      break;
    case Engine::kTrtllm:
      EmitTrtllm(ev, plan, d, moe, attention_dp, model_id, kvdt, batch, role,
                 context.input_tokens, layout, script);
      break;
  }
}

bool IsDisaggregated(const Plan& plan) {
  return plan.has_prefill() || plan.has_decode();
}

// A pool's sub-plan as one plan of `instances` replicas.
Plan PoolPlan(const Plan& sub, int instances) {
  Plan out = sub;
  out.set_replicas(Positive(instances));
  return out;
}

// Turns a pool's commands into prefill or decode servers: the engine's
// disaggregation flags (vLLM: NixlConnector through --kv-transfer-config and
// a NIXL side-channel port per instance on a host; SGLang:
// --disaggregation-mode with its transfer backend and, for prefill, a
// bootstrap port per instance on a host). Returns each instance's
// (address, HTTP port, bootstrap port) for the router.
struct Endpoint {
  std::string host;
  int port = 0;
  int bootstrap_port = 0;
};
std::vector<Endpoint> MakeRole(Engine engine, const EngineVersion& ev,
                               bool prefill, const Layout& layout,
                               std::vector<Command>& commands) {
  std::vector<Endpoint> heads;
  const ToolFlags& f = ev.launch;
  const ToolFlags& r = ev.router;
  int last_instance = -1;
  for (Command& c : commands) {
    Endpoint e{layout.Addr(c.node), c.port, 0};
    if (engine == Engine::kVllm) {
      const int slot = c.port - 8000;
      const std::string config =
          fmt::format("'{{\"kv_connector\":\"{}\",\"kv_role\":\"{}\"}}'",
                      r.Value("kv_connector"),
                      r.Value(prefill ? "kv_role_prefill" : "kv_role_decode"));
      c.Flag(f.Flag("kv_transfer_config"), config);
      int base = 5600;
      (void)absl::SimpleAtoi(r.Value("side_channel_port_base"), &base);
      c.env.push_back(
          absl::StrCat(r.Value("side_channel_port_env"), "=", base + 8 * slot));
      if (layout.num_nodes() > 1 && !layout.k8s) {
        c.env.push_back(absl::StrCat(r.Value("side_channel_host_env"), "=",
                                     layout.Addr(c.node)));
      }
    } else if (engine == Engine::kSglang) {
      const int slot = c.port - 30000;
      c.Flag(f.Flag("disaggregation_mode"), prefill ? "prefill" : "decode");
      c.Flag(f.Flag("disaggregation_transfer_backend"),
             f.Value("disaggregation_transfer_backend"));
      if (prefill) {
        int base = 8998;
        (void)absl::SimpleAtoi(f.Value("disaggregation_bootstrap_port"), &base);
        e.bootstrap_port = base + slot;
        c.Flag(f.Flag("disaggregation_bootstrap_port"), e.bootstrap_port);
      }
    }
    if (c.instance != last_instance) heads.push_back(e);
    last_instance = c.instance;
  }
  return heads;
}

// TensorRT-LLM's router: `trtllm-serve disaggregated -c FILE`, FILE written
// on node 0 just before it (an unquoted heredoc, so that $NODEi_ADDR expands
// there) with the router's address and the URLs ("host:port", no scheme, as
// disagg_utils.py's extract_ctx_gen_cfgs splits them) of every context and
// generation server started above, num_instances matching each list.
Command TrtllmRouterCommand(const EngineVersion& ev, const Layout& layout,
                            const std::vector<Endpoint>& prefill,
                            const std::vector<Endpoint>& decode, int port) {
  const ToolFlags& r = ev.router;
  constexpr const char* kFile = "shardplan-trtllm-disagg.yaml";
  Command c;
  c.comments.push_back(
      "Router (trtllm-serve disaggregated), on node 0: its config lists the "
      "context and generation servers above.");
  c.setup.push_back(absl::StrCat("cat > ", kFile, " <<EOF"));
  c.setup.push_back(absl::StrCat(
      "hostname: ", layout.num_nodes() > 1 ? "0.0.0.0" : "localhost"));
  c.setup.push_back(absl::StrCat("port: ", port));
  const std::pair<const char*, const std::vector<Endpoint>*> pools[] = {
      {"context_servers", &prefill}, {"generation_servers", &decode}};
  for (const auto& [key, endpoints] : pools) {
    c.setup.push_back(absl::StrCat(key, ":"));
    c.setup.push_back(absl::StrCat("  num_instances: ", endpoints->size()));
    c.setup.push_back("  urls:");
    for (const Endpoint& e : *endpoints) {
      c.setup.push_back(absl::StrCat("    - \"", e.host, ":", e.port, "\""));
    }
  }
  c.setup.push_back("EOF");
  c.args = {r.command};
  c.Flag(r.Flag("config"), kFile);
  return c;
}

// The router in front of the pools: vLLM's proxy, sglang-router in PD mode,
// or TensorRT-LLM's disaggregated server, on node 0.
Command RouterCommand(Engine engine, const EngineVersion& ev,
                      const Layout& layout,
                      const std::vector<Endpoint>& prefill,
                      const std::vector<Endpoint>& decode, int port) {
  if (engine == Engine::kTrtllm) {
    return TrtllmRouterCommand(ev, layout, prefill, decode, port);
  }
  const ToolFlags& r = ev.router;
  Command c;
  c.args = {r.command};
  if (engine == Engine::kVllm) {
    c.comments.push_back(
        "Router, on node 0 (vLLM's reference proxy: run it from a vLLM "
        "checkout):");
    std::vector<std::string> ph, pp, dh, dp;
    for (const Endpoint& e : prefill) {
      ph.push_back(e.host);
      pp.push_back(absl::StrCat(e.port));
    }
    for (const Endpoint& e : decode) {
      dh.push_back(e.host);
      dp.push_back(absl::StrCat(e.port));
    }
    c.Flag(r.Flag("prefill_hosts"), absl::StrJoin(ph, " "));
    c.Flag(r.Flag("prefill_ports"), absl::StrJoin(pp, " "));
    c.Flag(r.Flag("decode_hosts"), absl::StrJoin(dh, " "));
    c.Flag(r.Flag("decode_ports"), absl::StrJoin(dp, " "));
  } else {
    c.comments.push_back("Router (sglang-router, PD mode), on node 0:");
    c.Switch(r.Flag("pd"));
    for (const Endpoint& e : prefill) {
      c.Flag(r.Flag("prefill"), absl::StrCat("http://", e.host, ":", e.port,
                                             " ", e.bootstrap_port));
    }
    for (const Endpoint& e : decode) {
      c.Flag(r.Flag("decode"), absl::StrCat("http://", e.host, ":", e.port));
    }
  }
  if (layout.num_nodes() > 1) c.Flag(r.Flag("host"), "0.0.0.0");
  c.Flag(r.Flag("port"), port);
  return c;
}

// Why this engine version has no disaggregated launch here; "" when it has
// one (a router table, and for TensorRT-LLM the cache transceiver's key).
std::string DisaggregatedLaunchGap(Engine engine, const EngineVersion& ev) {
  if (engine == Engine::kTrtllm) {
    if (ev.router.Has("config") && ev.config.count("cache_transceiver_config"))
      return "";
    return fmt::format(
        "no disaggregated launch for TensorRT-LLM {} here: the "
        "cache_transceiver_config backend names changed during its release "
        "candidates (lowercase, then uppercase), so shardplan writes the "
        "context/generation servers and their trtllm-serve disaggregated "
        "router only for 1.1 and later (--engine-version 1.1).",
        ev.name);
  }
  if (ev.router.Has("port")) return "";
  return fmt::format("no disaggregated launch for {} here.",
                     EngineName(engine));
}

Built Build(Engine engine, const Plan& plan, const EmitContext& context,
            bool k8s) {
  Built built;
  Script& script = built.script;

  absl::StatusOr<EngineVersion> ev =
      FindEngineVersion(engine, context.engine_version);
  if (!ev.ok()) {
    script.warnings.push_back(absl::StrCat(
        ev.status().message(), "; using the newest table instead."));
    ev = FindEngineVersion(engine, "");
    if (!ev.ok()) {
      script.warnings.push_back(std::string(ev.status().message()));
      built.ok = false;
      return built;
    }
  }
  built.ev = *ev;

  // --- Model id: the server's catalog (or the spec) names the checkpoint.
  std::string model_id = context.hugging_face_id;
  if (model_id.empty()) {
    model_id = "<path-or-hf-id-of-" +
               (context.model_name.empty() ? std::string("model")
                                           : context.model_name) +
               ">";
    script.warnings.push_back(
        fmt::format("no Hugging Face id known for \"{}\"; replace {} with the "
                    "checkpoint's path or id.",
                    context.model_name, model_id));
  }
  built.model_id = model_id;
  const std::string quantization =
      WeightQuantization(engine, context, model_id, script.warnings);
  if (context.kv_cache_dtype == "fp4") {
    script.warnings.push_back(
        fmt::format("{} has no FP4 KV cache; the command keeps the engine's "
                    "default KV-cache dtype.",
                    EngineName(engine)));
  }

  if (!IsDisaggregated(plan)) {
    const Degrees d = DegreesOf(plan);
    const int64_t plan_gpus =
        static_cast<int64_t>(d.replicas) * d.replica_gpus();
    Layout layout(context.gpus_per_node,
                  context.num_gpus > 0
                      ? std::max<int64_t>(context.num_gpus, plan_gpus)
                      : plan_gpus,
                  context.node_gpus);
    layout.k8s = k8s;
    EmitPool(engine, *ev, plan, context, model_id, quantization, layout,
             script);
    built.plan_gpus = plan_gpus;
    built.num_nodes = layout.num_nodes();
    return built;
  }

  // --- Disaggregated (xPyD): the prefill instances on the first GPUs, the
  // decode instances after them, a router in front.
  built.disaggregated = true;
  if (!plan.has_prefill() || !plan.has_decode()) {
    script.warnings.push_back(
        "a disaggregated plan needs both plan.prefill and plan.decode; "
        "nothing to emit.");
    built.ok = false;
    return built;
  }
  if (const std::string gap = DisaggregatedLaunchGap(engine, *ev);
      !gap.empty()) {
    script.warnings.push_back(gap);
    built.ok = false;
    return built;
  }
  const Plan prefill = PoolPlan(plan.prefill(), plan.prefill_instances());
  const Plan decode = PoolPlan(plan.decode(), plan.decode_instances());
  built.prefill_instances = prefill.replicas();
  built.decode_instances = decode.replicas();
  built.prefill_gpus = DegreesOf(prefill).replica_gpus();
  built.decode_gpus = DegreesOf(decode).replica_gpus();
  const int64_t prefill_total = built.prefill_gpus * built.prefill_instances;
  const int64_t plan_gpus =
      prefill_total + built.decode_gpus * built.decode_instances;
  Layout layout(context.gpus_per_node,
                context.num_gpus > 0
                    ? std::max<int64_t>(context.num_gpus, plan_gpus)
                    : plan_gpus,
                context.node_gpus);
  layout.k8s = k8s;
  Script pools[2];
  std::vector<Endpoint> heads[2];
  for (int i = 0; i < 2; ++i) {
    const bool is_prefill = i == 0;
    layout.offset = is_prefill ? 0 : prefill_total;
    EmitPool(engine, *ev, is_prefill ? prefill : decode, context, model_id,
             quantization, layout, pools[i],
             is_prefill ? DisaggRole::kPrefill : DisaggRole::kDecode);
    heads[i] = MakeRole(engine, *ev, is_prefill, layout, pools[i].commands);
    const char* role = is_prefill ? "Prefill" : "Decode";
    for (Command& c : pools[i].commands) {
      if (!c.comments.empty()) {
        std::string& comment = c.comments.back();
        if (absl::StartsWith(comment, "Instance")) comment[0] = 'i';
        comment = absl::StrCat(role, " ", comment);
      }
    }
    for (const std::string& w : pools[i].warnings) {
      script.warnings.push_back(
          absl::StrCat(is_prefill ? "prefill" : "decode", " instances: ", w));
    }
    for (const std::string& p : pools[i].preamble) script.preamble.push_back(p);
  }
  built.decode_begin = pools[0].commands.size();
  for (Script& pool : pools) {
    for (Command& c : pool.commands) script.commands.push_back(std::move(c));
  }
  int router_port = 0;
  (void)absl::SimpleAtoi(ev->router.Value("port"), &router_port);
  script.commands.push_back(
      RouterCommand(engine, *ev, layout, heads[0], heads[1], router_port));
  // The benchmark goes through the router with every decode slot busy.
  script.bench_host = layout.Addr(0);
  script.bench_port = router_port;
  script.instances = 1;
  script.concurrency_per_instance =
      pools[1].concurrency_per_instance * pools[1].instances;
  built.plan_gpus = plan_gpus;
  built.num_nodes = layout.num_nodes();
  return built;
}

}  // namespace

EmittedCommand EmitCommand(Engine engine, const Plan& plan,
                           const EmitContext& context) {
  Built built = Build(engine, plan, context, /*k8s=*/false);
  if (!built.ok) return EmittedCommand{"", "", built.script.warnings};
  Script& script = built.script;
  const EngineVersion* ev = &built.ev;
  const char* engine_name = EngineName(engine);
  const std::string& model_id = built.model_id;
  const int64_t plan_gpus = built.plan_gpus;
  // --- The script.
  std::vector<std::string> header;
  const std::string shape =
      built.disaggregated
          ? fmt::format(
                "disaggregated {}P{}D ({} prefill instance{} of {} GPUs, {} "
                "decode instance{} of {} GPUs, a router)",
                built.prefill_instances, built.decode_instances,
                built.prefill_instances,
                built.prefill_instances == 1 ? "" : "s", built.prefill_gpus,
                built.decode_instances, built.decode_instances == 1 ? "" : "s",
                built.decode_gpus)
          : fmt::format("{} instance{}", script.instances,
                        script.instances == 1 ? "" : "s");
  header.push_back(fmt::format(
      "{} {} flags (releases {}{}; client/engines/{}.yaml): {} on {} GPUs.",
      engine_name, ev->name, ev->min,
      ev->max.empty() ? " and later" : absl::StrCat(" to before ", ev->max),
      EngineKey(engine), shape, plan_gpus));
  if (built.num_nodes > 1) {
    header.push_back(fmt::format(
        "Set NODE0_ADDR..NODE{}_ADDR to the nodes' addresses and run each "
        "command on the node it names.",
        built.num_nodes - 1));
  }
  for (std::string& h : script.header) header.push_back(std::move(h));
  std::string out;
  for (const std::string& h : header) absl::StrAppend(&out, "# ", h, "\n");
  for (const std::string& p : script.preamble) absl::StrAppend(&out, p, "\n");
  // Thousands of single-GPU replicas would bury the script: show the first
  // commands; the rest repeat them on the next GPUs and nodes.
  constexpr size_t kMaxCommands = 64;
  for (size_t i = 0; i < script.commands.size() && i < kMaxCommands; ++i) {
    absl::StrAppend(&out, "\n", script.commands[i].Render());
  }
  if (script.commands.size() > kMaxCommands) {
    absl::StrAppend(
        &out, "\n# ... ", script.commands.size() - kMaxCommands,
        " more commands: the same on the following GPUs and nodes.\n");
  }
  const std::string bench =
      RenderBenchmark(engine, *ev, model_id, script, context);
  absl::StrAppend(&out, "\n", bench);
  return EmittedCommand{std::move(out), bench, std::move(script.warnings)};
}

namespace {

// A YAML double-quoted scalar.
std::string Quoted(absl::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A Kubernetes name: lowercase alphanumerics and '-'.
std::string K8sName(absl::string_view text) {
  std::string out;
  for (char c : text) {
    if (absl::ascii_isalnum(c)) {
      out += absl::ascii_tolower(c);
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "model" : out;
}

// `env:` of a container from NAME=VALUE strings, its key indented by `pad`;
// nothing when there are none.
void AppendEnv(const std::vector<std::string>& env, const std::string& pad,
               std::string& out) {
  if (env.empty()) return;
  absl::StrAppend(&out, pad, "env:\n");
  for (const std::string& e : env) {
    const size_t eq = e.find('=');
    absl::StrAppend(&out, pad, "  - name: ", e.substr(0, eq), "\n", pad,
                    "    value: ", Quoted(e.substr(eq + 1)), "\n");
  }
}

// A container of a pod template whose `containers:` key is indented by
// `indent` spaces.
void AppendContainer(const Command& c, absl::string_view name,
                     absl::string_view image, int port, bool leader, int indent,
                     std::string& out) {
  const std::string pad(indent + 2, ' ');
  absl::StrAppend(&out, pad, "- name: ", name, "\n");
  absl::StrAppend(&out, pad, "  image: ", image, "\n");
  // sh -c so that a worker computes its ranks from LWS_WORKER_INDEX.
  absl::StrAppend(&out, pad, "  command: [\"sh\", \"-c\", ",
                  Quoted(absl::StrJoin(c.args, " ")), "]\n");
  AppendEnv(c.env, pad + "  ", out);
  if (leader) {
    absl::StrAppend(&out, pad, "  ports:\n", pad, "    - containerPort: ", port,
                    "\n");
  }
  // An extended resource: requests must equal limits.
  absl::StrAppend(&out, pad, "  resources:\n");
  for (const char* kind : {"requests", "limits"}) {
    absl::StrAppend(&out, pad, "    ", kind, ":\n", pad,
                    "      nvidia.com/gpu: \"", c.gpus, "\"\n");
  }
  absl::StrAppend(&out, pad, "  volumeMounts:\n", pad,
                  "    - {name: dshm, mountPath: /dev/shm}\n");
}

// The benchmark against a Service, as trailing comment lines.
std::string BenchmarkComment(Engine engine, const Built& built, Script& script,
                             const EmitContext& context,
                             const std::string& service, int port,
                             std::string* bench) {
  script.bench_host = service;
  script.bench_port = port;
  *bench = RenderBenchmark(engine, built.ev, built.model_id, script, context);
  std::string out = "# From a pod in the cluster, through the Service:\n";
  for (absl::string_view line : absl::StrSplit(*bench, '\n')) {
    if (line.empty()) continue;
    absl::StrAppend(&out, absl::StartsWith(line, "#") ? "" : "# ", line, "\n");
  }
  return out;
}

// Instances that each fit one node: a Deployment of identical pods (one per
// instance) and a Service over them; Kubernetes assigns each pod its GPUs.
EmittedCommand EmitDeployment(Engine engine, Built& built,
                              const EmitContext& context, const Command& c,
                              const std::string& name, const std::string& image,
                              int port) {
  Script& script = built.script;
  std::string out;
  absl::StrAppend(&out, "# ", EngineName(engine), " ", built.ev.name,
                  " flags as a Deployment: ", script.instances, " pod",
                  script.instances == 1 ? "" : "s", " of ", c.gpus,
                  " GPUs (one instance each), ", built.plan_gpus,
                  " GPUs. Model weights: mount or download them in every "
                  "pod.\n");
  absl::StrAppend(&out,
                  "apiVersion: apps/v1\n"
                  "kind: Deployment\n"
                  "metadata:\n  name: ",
                  name, "\nspec:\n  replicas: ", script.instances,
                  "\n  selector:\n    matchLabels:\n      app: ", name,
                  "\n  template:\n    metadata:\n      labels:\n        app: ",
                  name, "\n    spec:\n      containers:\n");
  AppendContainer(c, "server", image, port, true, 6, out);
  absl::StrAppend(&out,
                  "      volumes:\n"
                  "        - name: dshm\n"
                  "          emptyDir: {medium: Memory}\n");
  absl::StrAppend(&out,
                  "---\n"
                  "apiVersion: v1\n"
                  "kind: Service\n"
                  "metadata:\n  name: ",
                  name,
                  "\n"
                  "spec:\n  type: ClusterIP\n"
                  "  ports:\n    - {name: http, port: ",
                  port, ", targetPort: ", port,
                  ", protocol: TCP}\n"
                  "  selector:\n    app: ",
                  name, "\n");
  std::string bench;
  absl::StrAppend(&out, BenchmarkComment(engine, built, script, context, name,
                                         port, &bench));
  return EmittedCommand{std::move(out), bench, std::move(script.warnings)};
}

}  // namespace

EmittedCommand EmitKubernetes(Engine engine, const Plan& plan,
                              const EmitContext& context) {
  Built built = Build(engine, plan, context, /*k8s=*/true);
  Script& script = built.script;
  if (!built.ok) return EmittedCommand{"", "", script.warnings};
  if (built.disaggregated) {
    script.warnings.push_back(
        "no plain Kubernetes manifest for a disaggregated plan (prefill and "
        "decode pools behind a PD router): use --emit dynamo.");
    return EmittedCommand{"", "", script.warnings};
  }
  if (engine == Engine::kTrtllm) {
    script.warnings.push_back(
        "no Kubernetes manifest for TensorRT-LLM: a multi-node instance is "
        "one MPI world (mpirun/srun); use --emit trtllm.");
    return EmittedCommand{"", "", script.warnings};
  }
  std::vector<const Command*> group;
  for (const Command& c : script.commands) {
    if (c.instance == 0) group.push_back(&c);
  }
  if (group.empty() || group[0]->ray) {
    script.warnings.push_back(
        "this launch needs a Ray cluster (its GPUs do not split evenly over "
        "its nodes, or this release lacks the multi-node launcher): no "
        "LeaderWorkerSet manifest; use --emit vllm (or KubeRay).");
    return EmittedCommand{"", "", script.warnings};
  }
  for (size_t j = 2; j < group.size(); ++j) {
    if (group[j]->gpus != group[1]->gpus) {
      script.warnings.push_back(
          "the workers of an instance hold different GPU counts; the "
          "manifest gives every worker the first worker's.");
      break;
    }
  }
  const bool vllm = engine == Engine::kVllm;
  const std::string name = absl::StrCat(
      "shardplan-", K8sName(context.model_name), "-", EngineKey(engine));
  const std::string image =
      vllm ? "vllm/vllm-openai:latest" : "lmsysorg/sglang:latest";
  const int port = vllm ? 8000 : 30000;
  const int size = static_cast<int>(group.size());

  if (size == 1) {
    return EmitDeployment(engine, built, context, *group[0], name, image, port);
  }
  std::string out;
  absl::StrAppend(
      &out, "# ", EngineName(engine), " ", built.ev.name,
      " flags as a LeaderWorkerSet (https://lws.sigs.k8s.io): ",
      script.instances, " instance", script.instances == 1 ? "" : "s", " of ",
      size, " pod", size == 1 ? "" : "s", ", ", built.plan_gpus,
      " GPUs. Model weights: mount or download them in every pod.\n");
  absl::StrAppend(&out,
                  "apiVersion: leaderworkerset.x-k8s.io/v1\n"
                  "kind: LeaderWorkerSet\n"
                  "metadata:\n  name: ",
                  name,
                  "\n"
                  "spec:\n  replicas: ",
                  script.instances,
                  "\n"
                  "  leaderWorkerTemplate:\n    size: ",
                  size,
                  "\n"
                  "    restartPolicy: RecreateGroupOnPodRestart\n"
                  "    leaderTemplate:\n"
                  "      metadata:\n        labels:\n          role: leader\n"
                  "      spec:\n        containers:\n");
  AppendContainer(*group[0], "leader", image, port, true, 8, out);
  const std::string volumes =
      "        volumes:\n"
      "          - name: dshm\n"
      "            emptyDir: {medium: Memory}\n";
  absl::StrAppend(&out, volumes);
  absl::StrAppend(&out,
                  "    workerTemplate:\n      spec:\n        containers:\n");
  // One pod-group of size 1 still needs a worker template; it is unused.
  AppendContainer(size > 1 ? *group[1] : *group[0], "worker", image, port,
                  false, 8, out);
  absl::StrAppend(&out, volumes);
  absl::StrAppend(&out,
                  "---\n"
                  "apiVersion: v1\n"
                  "kind: Service\n"
                  "metadata:\n  name: ",
                  name,
                  "-leader\n"
                  "spec:\n  type: ClusterIP\n"
                  "  ports:\n    - {name: http, port: ",
                  port, ", targetPort: ", port,
                  ", protocol: TCP}\n"
                  "  selector:\n"
                  "    leaderworkerset.sigs.k8s.io/name: ",
                  name, "\n    role: leader\n");
  std::string bench;
  absl::StrAppend(&out, BenchmarkComment(engine, built, script, context,
                                         name + "-leader", port, &bench));
  return EmittedCommand{std::move(out), bench, std::move(script.warnings)};
}

namespace {

// One worker service of a Dynamo graph: the first instance of a pool.
struct DynamoPool {
  std::string service;
  std::string sub_type;               // "prefill", "decode" or "" (aggregated)
  std::vector<const Command*> group;  // the nodes of instance 0
  int instances = 0;
};

DynamoPool PoolOf(const std::vector<Command>& commands, size_t begin,
                  size_t end, std::string service, std::string sub_type) {
  DynamoPool pool{std::move(service), std::move(sub_type), {}, 0};
  int last = -1;
  for (size_t i = begin; i < end; ++i) {
    const Command& c = commands[i];
    if (c.instance == commands[begin].instance) pool.group.push_back(&c);
    if (c.instance != last) ++pool.instances;
    last = c.instance;
  }
  return pool;
}

// The worker's arguments: the launch's flags, less what Dynamo sets itself
// (ports, node ranks and addresses, KV-transfer wiring), one list item each.
std::vector<std::string> DynamoArgs(const EngineVersion& ev,
                                    const Command& head,
                                    const std::string& model_id,
                                    absl::string_view sub_type) {
  std::vector<std::string> args = {ev.dynamo.Flag("model"), model_id};
  std::set<std::string> dropped;
  for (const char* role :
       {"port", "host", "nnodes", "node_rank", "dist_init_addr", "master_addr",
        "headless", "data_parallel_local", "data_parallel_start_rank",
        "data_parallel_address", "data_parallel_rpc_port",
        "data_parallel_backend", "distributed_executor_backend",
        "kv_transfer_config", "disaggregation_bootstrap_port"}) {
    dropped.insert(ev.launch.Flag(role));
  }
  if (ev.dynamo.Has("disaggregation_mode")) {
    dropped.insert(ev.launch.Flag("disaggregation_mode"));
  }
  for (size_t i = 1; i < head.args.size(); ++i) {
    const std::string& arg = head.args[i];
    const size_t space = arg.find(' ');
    const std::string flag = arg.substr(0, space);
    if (dropped.count(flag) > 0) continue;
    args.push_back(flag);
    if (space != std::string::npos) args.push_back(arg.substr(space + 1));
  }
  if (!sub_type.empty() && ev.dynamo.Has("disaggregation_mode")) {
    args.push_back(ev.dynamo.Flag("disaggregation_mode"));
    args.push_back(std::string(sub_type));
  }
  return args;
}

}  // namespace

EmittedCommand EmitDynamo(Engine engine, const Plan& plan,
                          const EmitContext& context) {
  Built built = Build(engine, plan, context, /*k8s=*/true);
  Script& script = built.script;
  if (!built.ok) return EmittedCommand{"", "", script.warnings};
  const EngineVersion& ev = built.ev;
  if (ev.dynamo.command.empty()) {
    script.warnings.push_back(fmt::format(
        "no Dynamo graph for {}: its Dynamo worker reads engine config files "
        "that shardplan does not write; use --emit {}.",
        EngineName(engine), EngineKey(engine)));
    return EmittedCommand{"", "", script.warnings};
  }
  std::vector<DynamoPool> pools;
  if (built.disaggregated) {
    // The router command is last: Dynamo's frontend replaces it.
    pools.push_back(PoolOf(script.commands, 0, built.decode_begin,
                           ev.dynamo.Value("prefill_worker"), "prefill"));
    pools.push_back(PoolOf(script.commands, built.decode_begin,
                           script.commands.size() - 1,
                           ev.dynamo.Value("decode_worker"), "decode"));
  } else {
    pools.push_back(PoolOf(script.commands, 0, script.commands.size(),
                           ev.dynamo.Value("worker"), ""));
  }
  const std::string name =
      absl::StrCat("shardplan-", K8sName(context.model_name), "-",
                   EngineKey(engine), built.disaggregated ? "-disagg" : "");
  const std::string image = ev.dynamo.Value("image");
  const std::vector<std::string> side_channel = {
      ev.router.Value("side_channel_port_env"),
      ev.router.Value("side_channel_host_env")};

  std::string out;
  absl::StrAppend(&out, "# ", EngineName(engine), " ", ev.name,
                  " flags as an NVIDIA Dynamo graph (client/engines/",
                  EngineKey(engine), ".yaml cites the CRD and examples), ",
                  built.plan_gpus,
                  " GPUs. Model weights: a PVC or HF_TOKEN secret as in "
                  "Dynamo's examples.\n");
  absl::StrAppend(&out,
                  "apiVersion: nvidia.com/v1alpha1\n"
                  "kind: DynamoGraphDeployment\n"
                  "metadata:\n  name: ",
                  name, "\nspec:\n  backendFramework: ", EngineKey(engine),
                  "\n  services:\n"
                  "    Frontend:\n"
                  "      componentType: frontend\n"
                  "      replicas: 1\n"
                  "      extraPodSpec:\n"
                  "        mainContainer:\n"
                  "          image: ",
                  image, "\n");
  for (const DynamoPool& pool : pools) {
    if (pool.group.empty()) continue;
    const Command& head = *pool.group[0];
    const int nodes = static_cast<int>(pool.group.size());
    absl::StrAppend(&out, "    ", pool.service,
                    ":\n      componentType: worker\n");
    if (!pool.sub_type.empty()) {
      absl::StrAppend(&out, "      subComponentType: ", pool.sub_type, "\n");
    }
    absl::StrAppend(&out, "      replicas: ", pool.instances, "\n");
    if (nodes > 1) {
      absl::StrAppend(&out, "      multinode:\n        nodeCount: ", nodes,
                      "\n");
    }
    // GPUs per node (pod) of one instance.
    absl::StrAppend(&out,
                    "      resources:\n        limits:\n          gpu: \"",
                    head.gpus, "\"\n");
    absl::StrAppend(&out,
                    "      extraPodSpec:\n"
                    "        mainContainer:\n"
                    "          image: ",
                    image, "\n          command: [");
    std::vector<std::string> command;
    for (absl::string_view part :
         absl::StrSplit(ev.dynamo.command, ' ', absl::SkipEmpty())) {
      command.push_back(Quoted(part));
    }
    absl::StrAppend(&out, absl::StrJoin(command, ", "), "]\n");
    absl::StrAppend(&out, "          args:\n");
    for (const std::string& a :
         DynamoArgs(ev, head, built.model_id, pool.sub_type)) {
      absl::StrAppend(&out, "            - ", Quoted(a), "\n");
    }
    std::vector<std::string> env;
    for (const std::string& e : head.env) {
      const std::string key = e.substr(0, e.find('='));
      if (std::find(side_channel.begin(), side_channel.end(), key) ==
          side_channel.end()) {
        env.push_back(e);
      }
    }
    AppendEnv(env, "          ", out);
  }
  // The benchmark through the frontend (Dynamo's OpenAI-compatible HTTP
  // service, port 8000).
  if (!built.disaggregated) {
    script.concurrency_per_instance *= script.instances;
  }
  script.instances = 1;
  std::string bench;
  absl::StrAppend(&out, BenchmarkComment(engine, built, script, context,
                                         name + "-frontend", 8000, &bench));
  return EmittedCommand{std::move(out), bench, std::move(script.warnings)};
}

}  // namespace shardplan::client
