// The pieces the per-target emitters of client/emit.h share: where each
// engine instance's GPUs are (from the plan's placement), the commands of a
// launch before rendering, and the per-engine and per-target builders. Not a
// public interface: only client/emit/*.cc include it.
#ifndef SHARDPLAN_CLIENT_EMIT_EMIT_INTERNAL_H_
#define SHARDPLAN_CLIENT_EMIT_EMIT_INTERNAL_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "client/emit.h"
#include "client/engine_flags.h"
#include "proto/engine_layouts.h"
#include "shardplan/v1/shardplan.pb.h"

namespace shardplan::client::emit_internal {

using shardplan::v1::Plan;

// The operator dimensions every engine implements inside a tensor-parallel
// group (Megatron's pattern, proto/engine_layouts.h, the table the plan space
// restricts a named engine's plans to): what a plan's own dimensions are
// compared with to warn about what an engine cannot express.
using OpDefault = EngineOpLayout;
inline constexpr const auto& kEnginePattern = kEngineOpLayouts;
inline constexpr const auto& kAttentionOps = kAttentionDpOps;

inline bool IsExpertOp(absl::string_view op) {
  return absl::StartsWith(op, "expert_");
}
inline int Positive(int v) { return v > 0 ? v : 1; }

const char* EngineName(Engine engine);
std::string DimPhrase(const Plan& plan, absl::string_view op,
                      absl::string_view dim);

// Degrees with defaults applied.
struct Degrees {
  int replicas, dp, tp, pp, ep;
  int replica_gpus() const { return dp * tp * pp; }
};
Degrees DegreesOf(const Plan& plan);

bool AllAttentionBatch(const Plan& plan);
// The plan's stage split when it names one per stage (else the engines' own
// even split applies and nothing is passed).
std::vector<int> ExplicitStages(const Plan& plan, int pp);

// The GPUs of one engine instance on one node.
struct Segment {
  int node = 0;
  int first_gpu = 0;  // local index on the node
  int gpus = 0;
  bool whole_node = false;
};

// Where the engine instances go. The GPUs of the pool being laid out come
// from the plan's placement (what the server placed, UsePlacement); a plan
// without one (built by hand, or beyond the server's placement cap) is laid
// out by the same rank order over the nodes.
class Layout {
 public:
  // Nodes of `node_gpus` GPUs each in rank order (node groups of different
  // sizes), then of `gpus_per_node` up to `num_gpus` (the last possibly
  // partial).
  Layout(int gpus_per_node, int64_t num_gpus,
         const std::vector<int>& node_gpus = {});

  // Takes the pool's GPUs from `plan.placement` (one entry per stage of each
  // of the pool's instances, each with its nodes and GPUs on them). False,
  // and the computed layout stays, when the placement is absent, incomplete
  // or does not fit these nodes.
  bool UsePlacement(const Plan& plan, int64_t pool_gpus);
  bool placed() const { return !placed_.empty(); }

  int num_nodes() const { return static_cast<int>(starts_.size()) - 1; }
  int NodeGpus(int node) const {
    return static_cast<int>(starts_[node + 1] - starts_[node]);
  }
  // The GPUs of pool ranks [first_rank, first_rank + gpus), node by node.
  std::vector<Segment> SegmentsOf(int64_t first_rank, int64_t gpus) const;
  // The address placeholder of a node; "localhost" on a one-node cluster.
  // On Kubernetes (LeaderWorkerSet) every pod of an instance reaches the
  // leader through $(LWS_LEADER_ADDRESS).
  std::string Addr(int node) const;
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
  std::string StartRank(int j, int start, int first, int local) const;
  // Whether to pin an instance to its GPUs (Kubernetes assigns them).
  bool Pin(const Segment& s) const { return !k8s && !s.whole_node; }

  bool k8s = false;
  // First rank of the pool being laid out when it is computed (decode
  // instances follow the prefill instances of a disaggregated plan).
  int64_t offset = 0;

 private:
  std::vector<int64_t> starts_;  // first rank of each node, then the end
  // GPUs each node has: a cluster's last node may be partly used (num_gpus
  // not a multiple of gpus_per_node), and the unused GPUs must stay free.
  std::vector<int> physical_;
  std::map<int, int> used_ports_;
  // (node, GPU on the node) of each rank of the pool, from the placement.
  std::vector<std::pair<int, int>> placed_;
};

std::string VisibleDevices(const Segment& s);

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
  // A command that starts a whole instance over several nodes (Ray, or one
  // MPI world): its GPUs on each of them, and whether its data-parallel ranks
  // are placed by Ray.
  std::vector<Segment> spans;
  bool ray_dp = false;
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
  std::string Render() const;
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
  std::string bench_port;
  int instances = 0;
  int concurrency_per_instance = 0;
  // The benchmark's request format when not the engine's own (Dynamo's
  // frontend speaks only the OpenAI API).
  std::string bench_backend;
  // Some instance's expert all-to-all runs over multi-node NVLink.
  bool nvlink_a2a = false;
};

std::string NodeList(const std::vector<Segment>& segments);
std::string NodeComment(int instance, int instances, const Segment& s,
                        absl::string_view role);
std::string RayComment(const Layout& layout,
                       const std::vector<Segment>& segments);
bool EqualSegments(const std::vector<Segment>& segments);

// Which servers of a disaggregated plan a pool's commands start (kNone: an
// aggregated plan).
enum class DisaggRole { kNone, kPrefill, kDecode };

// What every engine's pool builder gets.
struct PoolArgs {
  const EngineVersion& ev;
  const Plan& plan;
  const Degrees& d;
  bool moe;
  bool attention_dp;
  const std::string& model_id;
  const std::string& quantization;
  // The engine's KV-cache dtype value (KvCacheValue); "" = its default.
  const std::string& kvdt;
  int batch;
  DisaggRole role;
  int input_tokens;
  // The instance's expert all-to-all crosses nodes inside one NVLink domain
  // (GB200/GB300 NVL72 trays): the engine's multi-node NVLink kernels.
  bool nvlink_a2a;
};

// The value of the engine's KV-cache dtype flag for the workload's
// kv_cache_dtype ("" = the engine's default), from the version's table:
// sparse-MLA models (DeepSeek-V3.2) have their own FP8 layout in vLLM, and an
// FP4 cache needs FP4 tensor cores and an engine that has one. What cannot be
// expressed goes to `warnings` (when not null).
std::string KvCacheValue(Engine engine, const EngineVersion& ev,
                         const EmitContext& context,
                         std::vector<std::string>* warnings);

// The flag table's value role of an FP4 KV cache for the model's attention:
// "kv_cache_fp4" (standard attention), "kv_cache_fp4_mla" or
// "kv_cache_fp4_sparse_mla"; a role the table lacks is a cache the engine does
// not keep.
const char* KvCacheFp4Role(const EmitContext& context);

// vLLM's and SGLang's flags for online weight quantization and an FP8 KV
// cache, and the environment variable of an explicit stage split.
void AddDtypeAndStageFlags(const PoolArgs& a, Command& common);

// The cluster's nodes for a plan of `plan_gpus` GPUs (at least the
// cluster's), for pods when `k8s`.
Layout ClusterLayout(const EmitContext& context, int64_t plan_gpus, bool k8s);

// The commands of one pool on `layout`, per engine (client/emit/vllm.cc,
// sglang.cc, trtllm.cc).
void EmitVllm(const PoolArgs& a, Layout& layout, Script& out);
void EmitSglang(const PoolArgs& a, Layout& layout, Script& out);
void EmitTrtllm(const PoolArgs& a, Layout& layout, Script& out);

// A launch before rendering: the commands of every instance, the flag table
// used and what the header needs.
struct Built {
  Script script;
  EngineVersion ev;
  std::string model_id;
  int64_t plan_gpus = 0;
  int num_nodes = 1;
  bool ok = true;
  bool refused = false;  // the engine cannot run the plan (EmittedCommand)
  // Disaggregated plans: the pools' instance counts and GPUs per instance.
  bool disaggregated = false;
  int prefill_instances = 0, decode_instances = 0;
  int64_t prefill_gpus = 0, decode_gpus = 0;
  // Where each pool's commands start in script.commands (decode after
  // prefill); the router command is last.
  size_t decode_begin = 0;
  // Some pool spreads its experts over several ranks (all-to-all dispatch).
  bool expert_all_to_all = false;
};

// Builds the launch of `plan` (client/emit/script.cc); k8s = for pods.
Built Build(Engine engine, const Plan& plan, const EmitContext& context,
            bool k8s);

// One target's output from a launch Build could make.
using TargetEmitter = EmittedCommand (*)(Engine engine,
                                         const EmitContext& context,
                                         Built& built);
// Build, then `emit` on what it built; the refusal (warnings, refused) when
// the engine cannot launch the plan. For pods (k8s) the multi-node NVLink
// warning comes first.
EmittedCommand EmitBuilt(Engine engine, const Plan& plan,
                         const EmitContext& context, bool k8s,
                         TargetEmitter emit);

// The commands of one pool of engine instances (the whole plan when it is
// aggregated), with the warnings for what the engine cannot express.
void EmitPool(Engine engine, const EngineVersion& ev, const Plan& plan,
              const EmitContext& context, const std::string& model_id,
              const std::string& quantization, Layout& layout, Script& script,
              DisaggRole role = DisaggRole::kNone);

// Disaggregated plans (client/emit/router.cc): both pools and the router
// in front of them, into `built`.
bool IsDisaggregated(const Plan& plan);
void BuildDisaggregated(Engine engine, const Plan& plan,
                        const EmitContext& context,
                        const std::string& quantization, bool k8s,
                        Built& built);

// The benchmark command against `s`'s endpoint (client/emit/script.cc).
std::string RenderBenchmark(Engine engine, const EngineVersion& ev,
                            const std::string& model_id, const Script& s,
                            const EmitContext& context);

// Manifests (client/emit/k8s.cc): a YAML double-quoted scalar, a Kubernetes
// name, a container's `env:`, and the benchmark as comment lines.
std::string Quoted(absl::string_view text);
std::string K8sName(absl::string_view text);
void AppendEnv(const std::vector<std::string>& env, const std::string& pad,
               std::string& out);
// Expert all-to-all between pods (DeepEP, NCCL) needs the InfiniBand
// devices and pinned memory: the container's IPC_LOCK capability and a
// /dev/infiniband mount (fields under a container's key at `pad`), and the
// hostPath volume (a list item at `pad`), as SGLang's LeaderWorkerSet
// examples do.
void AppendRdmaContainer(const std::string& pad, std::string& out);
// Pods whose expert all-to-all runs over multi-node NVLink (GB200/GB300
// trays) need the rack's IMEX channel, which the manifests do not request:
// a warning when `script` has such an instance.
void WarnMultiNodeNvlinkPods(Script& script);
void AppendRdmaVolume(const std::string& pad, std::string& out);
// A pod target's output: `manifest`, then the benchmark against `service`
// (port `port`) as trailing comment lines; the warnings of `built`.
EmittedCommand WithServiceBenchmark(Engine engine, Built& built,
                                    const EmitContext& context,
                                    const std::string& service, int port,
                                    std::string manifest);

}  // namespace shardplan::client::emit_internal

#endif  // SHARDPLAN_CLIENT_EMIT_EMIT_INTERNAL_H_
