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
using emit_internal::BenchmarkComment;
using emit_internal::Build;
using emit_internal::Built;
using emit_internal::Command;
using emit_internal::DynamoArgs;
using emit_internal::DynamoPool;
using emit_internal::EngineName;
using emit_internal::K8sName;
using emit_internal::PoolOf;
using emit_internal::Quoted;
using emit_internal::Script;
using shardplan::v1::Plan;

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