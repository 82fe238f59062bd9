// NVIDIA Dynamo graphs of a launch (`--emit dynamo`): a
// DynamoGraphDeployment with a Frontend and a worker service per pool.
#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/emit.h"
#include "client/emit/emit_internal.h"
#include "fmt/format.h"

namespace shardplan::client {
namespace emit_internal {
namespace {

// One worker service of a Dynamo graph: the first instance of a pool.
struct DynamoPool {
  std::string service;
  std::string sub_type;               // "prefill", "decode" or "" (aggregated)
  std::vector<const Command*> group;  // the nodes of instance 0
  int instances = 0;
  // Every instance on as many nodes (pods) of as many GPUs as instance 0;
  // not so on node groups of different sizes, where one instance may have a
  // big node and another two small ones.
  bool alike = true;
};

DynamoPool PoolOf(const std::vector<Command>& commands, size_t begin,
                  size_t end, std::string service, std::string sub_type) {
  DynamoPool pool{std::move(service), std::move(sub_type), {}, 0, true};
  int last = -1;
  size_t node = 0;  // the command's index among its instance's nodes
  for (size_t i = begin; i < end; ++i) {
    const Command& c = commands[i];
    if (c.instance == commands[begin].instance) pool.group.push_back(&c);
    if (c.instance != last) {
      ++pool.instances;
      if (i > begin && node != pool.group.size()) pool.alike = false;
      node = 0;
    }
    if (node >= pool.group.size() || pool.group[node]->gpus != c.gpus) {
      pool.alike = false;
    }
    ++node;
    last = c.instance;
  }
  if (node != pool.group.size()) pool.alike = false;
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
}  // namespace emit_internal

using emit_internal::AppendEnv;
using emit_internal::AppendRdmaContainer;
using emit_internal::AppendRdmaVolume;
using emit_internal::Built;
using emit_internal::Command;
using emit_internal::DynamoArgs;
using emit_internal::DynamoPool;
using emit_internal::EmitBuilt;
using emit_internal::EngineName;
using emit_internal::K8sName;
using emit_internal::PoolOf;
using emit_internal::Quoted;
using emit_internal::Script;
using emit_internal::Segment;
using emit_internal::WithServiceBenchmark;
using shardplan::v1::Plan;

namespace {

// The Dynamo graph of a launch.
EmittedCommand DynamoOf(Engine engine, const EmitContext& context,
                        Built& built) {
  Script& script = built.script;
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
  for (const DynamoPool& pool : pools) {
    if (pool.alike) continue;
    script.warnings.push_back(fmt::format(
        "the instances of {} sit on nodes of different sizes (their pods "
        "differ in number or GPUs); the graph gives every replica the first "
        "instance's, so the scheduler may place them unlike the prediction.",
        pool.service));
  }
  const std::string name =
      absl::StrCat("shardplan-", K8sName(context.model_name), "-",
                   EngineKey(engine), built.disaggregated ? "-disagg" : "");
  const std::string image = ev.dynamo.Value("image");
  const std::vector<std::string> side_channel = {
      ev.router.Value("side_channel_port_env"),
      ev.router.Value("side_channel_host_env")};

  // Pods of a component: as many nodes and GPUs per node as instance 0. An
  // instance that one command starts over several nodes (Ray) lists them.
  struct Pods {
    int nodes = 1;
    int gpus = 0;
  };
  std::vector<Pods> pods;
  for (const DynamoPool& pool : pools) {
    Pods p;
    if (pool.group.empty()) {
      pods.push_back(p);
      continue;
    }
    const Command& head = *pool.group[0];
    std::vector<int> per_node;
    for (const Command* c : pool.group) per_node.push_back(c->gpus);
    if (head.ray) {
      // Dynamo's operator starts a vLLM instance over several pods with Ray
      // only for one tensor/pipeline group larger than a pod, and its
      // data-parallel launch needs whole DP ranks in every pod
      // (client/engines/vllm.yaml cites backend_vllm.go).
      if (head.ray_dp) {
        script.warnings.push_back(fmt::format(
            "no Dynamo graph for {}: its data-parallel ranks span nodes, which "
            "Dynamo's operator cannot launch (Ray only for one "
            "tensor/pipeline group, data-parallel ranks whole in each pod); "
            "use --emit {} or a plan whose DP ranks fit a node.",
            pool.service, EngineKey(engine)));
        return EmittedCommand{"", "", script.warnings};
      }
      per_node.clear();
      for (const Segment& s : head.spans) per_node.push_back(s.gpus);
    }
    if (std::any_of(per_node.begin(), per_node.end(),
                    [&](int g) { return g != per_node[0]; })) {
      script.warnings.push_back(fmt::format(
          "no Dynamo graph for {}: an instance holds {} GPUs on its nodes, "
          "and every pod of a multinode component gets the same GPU count; "
          "use --emit {} or a plan whose instances split evenly over their "
          "nodes.",
          pool.service, absl::StrJoin(per_node, ", "), EngineKey(engine)));
      return EmittedCommand{"", "", script.warnings};
    }
    p.nodes = static_cast<int>(per_node.size());
    p.gpus = per_node[0];
    pods.push_back(p);
  }

  std::string out;
  absl::StrAppend(&out, "# ", EngineName(engine), " ", ev.name,
                  " flags as an NVIDIA Dynamo graph (client/engines/",
                  EngineKey(engine), ".yaml cites the CRD and examples), ",
                  built.plan_gpus,
                  " GPUs. Model weights: a PVC or HF_TOKEN secret as in "
                  "Dynamo's examples.\n");
  absl::StrAppend(&out,
                  "apiVersion: nvidia.com/v1beta1\n"
                  "kind: DynamoGraphDeployment\n"
                  "metadata:\n  name: ",
                  name, "\nspec:\n  backendFramework: ", EngineKey(engine),
                  "\n  components:\n"
                  "    - name: Frontend\n"
                  "      type: frontend\n"
                  "      replicas: 1\n"
                  "      podTemplate:\n"
                  "        spec:\n"
                  "          containers:\n"
                  "            - name: main\n"
                  "              image: ",
                  image, "\n");
  for (size_t k = 0; k < pools.size(); ++k) {
    const DynamoPool& pool = pools[k];
    if (pool.group.empty()) continue;
    const Command& head = *pool.group[0];
    absl::StrAppend(&out, "    - name: ", pool.service, "\n      type: ",
                    pool.sub_type.empty() ? "worker" : pool.sub_type,
                    "\n      replicas: ", pool.instances, "\n");
    if (pods[k].nodes > 1) {
      absl::StrAppend(
          &out, "      multinode:\n        nodeCount: ", pods[k].nodes, "\n");
    }
    absl::StrAppend(&out,
                    "      podTemplate:\n"
                    "        spec:\n"
                    "          containers:\n"
                    "            - name: main\n"
                    "              image: ",
                    image, "\n              command: [");
    std::vector<std::string> command;
    for (absl::string_view part :
         absl::StrSplit(ev.dynamo.command, ' ', absl::SkipEmpty())) {
      command.push_back(Quoted(part));
    }
    absl::StrAppend(&out, absl::StrJoin(command, ", "), "]\n");
    absl::StrAppend(&out, "              args:\n");
    for (const std::string& a :
         DynamoArgs(ev, head, built.model_id, pool.sub_type)) {
      absl::StrAppend(&out, "                - ", Quoted(a), "\n");
    }
    std::vector<std::string> env;
    for (const std::string& e : head.env) {
      const std::string key = e.substr(0, e.find('='));
      if (std::find(side_channel.begin(), side_channel.end(), key) ==
          side_channel.end()) {
        env.push_back(e);
      }
    }
    AppendEnv(env, "              ", out);
    // GPUs per pod (node) of one instance; an extended resource, so requests
    // equal limits.
    absl::StrAppend(&out, "              resources:\n");
    for (const char* kind : {"requests", "limits"}) {
      absl::StrAppend(&out, "                ", kind,
                      ":\n                  nvidia.com/gpu: \"", pods[k].gpus,
                      "\"\n");
    }
    if (pods[k].nodes > 1 && built.expert_all_to_all) {
      AppendRdmaContainer("              ", out);
      absl::StrAppend(&out, "          volumes:\n");
      AppendRdmaVolume("            ", out);
    }
  }
  // The benchmark through the frontend (Dynamo's OpenAI-compatible HTTP
  // service, port 8000).
  if (!built.disaggregated) {
    script.concurrency_per_instance *= script.instances;
  }
  script.instances = 1;
  script.bench_backend = ev.benchmark.Value("openai_backend");
  return WithServiceBenchmark(engine, built, context, name + "-frontend", 8000,
                              std::move(out));
}

}  // namespace

EmittedCommand EmitDynamo(Engine engine, const Plan& plan,
                          const EmitContext& context) {
  return EmitBuilt(engine, plan, context, /*k8s=*/true, &DynamoOf);
}

}  // namespace shardplan::client