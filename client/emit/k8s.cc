// Kubernetes manifests of a launch (`--emit k8s-vllm|k8s-sglang`): a
// Deployment when every instance fits one node, else a LeaderWorkerSet; a
// Service in front.
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

namespace {

void AppendIpcLock(const std::string& pad, std::string& out) {
  absl::StrAppend(&out, pad, "securityContext:\n", pad, "  capabilities:\n",
                  pad, "    add: [\"IPC_LOCK\"]\n");
}

constexpr const char* kInfinibandMount =
    "- {name: infiniband, mountPath: /dev/infiniband}\n";

}  // namespace

// The IMEX channel device and service a multi-node NVLink job needs, as
// TensorRT-LLM's wide-EP guide says (client/engines/trtllm.yaml cites it).
void WarnMultiNodeNvlinkPods(Script& script) {
  if (!script.nvlink_a2a) return;
  script.warnings.push_back(
      "the experts of an instance span nodes of one NVLink domain (multi-node "
      "NVLink): every pod needs the rack's IMEX channel "
      "(/dev/nvidia-caps-imex-channels; "
      "https://docs.nvidia.com/multi-node-nvlink-systems/imex-guide/"
      "overview.html), which this manifest does not request; add it to the "
      "pods or the all-to-all cannot use NVLink between trays.");
}

void AppendRdmaContainer(const std::string& pad, std::string& out) {
  AppendIpcLock(pad, out);
  absl::StrAppend(&out, pad, "volumeMounts:\n", pad, "  ", kInfinibandMount);
}

void AppendRdmaVolume(const std::string& pad, std::string& out) {
  absl::StrAppend(&out, pad,
                  "- {name: infiniband, hostPath: {path: /dev/infiniband}}\n");
}

EmittedCommand WithServiceBenchmark(Engine engine, Built& built,
                                    const EmitContext& context,
                                    const std::string& service, int port,
                                    std::string manifest) {
  Script& script = built.script;
  script.bench_host = service;
  script.bench_port = absl::StrCat(port);
  std::string bench =
      RenderBenchmark(engine, built.ev, built.model_id, script, context);
  absl::StrAppend(&manifest,
                  "# From a pod in the cluster, through the Service:\n");
  for (absl::string_view line : absl::StrSplit(bench, '\n')) {
    if (line.empty()) continue;
    absl::StrAppend(&manifest, absl::StartsWith(line, "#") ? "" : "# ", line,
                    "\n");
  }
  return EmittedCommand{std::move(manifest), std::move(bench),
                        std::move(script.warnings)};
}

// Instances that each fit one node: a Deployment of identical pods (one per
// instance) and a Service over them; Kubernetes assigns each pod its GPUs.
namespace {

// A ClusterIP Service `name` on `port` over the pods that `selector` (YAML
// lines under the selector key) picks.
void AppendService(const std::string& name, int port,
                   const std::string& selector, std::string& out) {
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
                  "  selector:\n",
                  selector);
}

// A container of a pod template whose `containers:` key is indented by
// `indent` spaces; `rdma`: with the devices of expert all-to-all.
void AppendContainer(const Command& c, absl::string_view name,
                     absl::string_view image, int port, bool leader, int indent,
                     bool rdma, std::string& out) {
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
  if (rdma) AppendIpcLock(pad + "  ", out);
  absl::StrAppend(&out, pad, "  volumeMounts:\n", pad,
                  "    - {name: dshm, mountPath: /dev/shm}\n");
  if (rdma) absl::StrAppend(&out, pad, "    ", kInfinibandMount);
}

// The benchmark against a Service, as trailing comment lines.
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
  AppendContainer(c, "server", image, port, true, 6, /*rdma=*/false, out);
  absl::StrAppend(&out,
                  "      volumes:\n"
                  "        - name: dshm\n"
                  "          emptyDir: {medium: Memory}\n");
  AppendService(name, port, absl::StrCat("    app: ", name, "\n"), out);
  return WithServiceBenchmark(engine, built, context, name, port,
                              std::move(out));
}

}  // namespace
}  // namespace emit_internal

using emit_internal::AppendEnv;
using emit_internal::AppendRdmaVolume;
using emit_internal::Built;
using emit_internal::Command;
using emit_internal::EmitBuilt;
using emit_internal::EngineName;
using emit_internal::K8sName;
using emit_internal::Quoted;
using emit_internal::Script;
using emit_internal::WithServiceBenchmark;
using shardplan::v1::Plan;

using emit_internal::AppendContainer;
using emit_internal::AppendService;
using emit_internal::EmitDeployment;

namespace {

// The Kubernetes manifest of a launch.
EmittedCommand KubernetesOf(Engine engine, const EmitContext& context,
                            Built& built) {
  Script& script = built.script;
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
  // Experts spread over the pods: their all-to-all needs InfiniBand
  // (without it NCCL and DeepEP fall back to TCP or fail).
  const bool rdma = built.expert_all_to_all;
  AppendContainer(*group[0], "leader", image, port, true, 8, rdma, out);
  std::string volumes =
      "        volumes:\n"
      "          - name: dshm\n"
      "            emptyDir: {medium: Memory}\n";
  if (rdma) AppendRdmaVolume("          ", volumes);
  absl::StrAppend(&out, volumes);
  absl::StrAppend(&out,
                  "    workerTemplate:\n      spec:\n        containers:\n");
  // One pod-group of size 1 still needs a worker template; it is unused.
  AppendContainer(size > 1 ? *group[1] : *group[0], "worker", image, port,
                  false, 8, rdma, out);
  absl::StrAppend(&out, volumes);
  AppendService(name + "-leader", port,
                absl::StrCat("    leaderworkerset.sigs.k8s.io/name: ", name,
                             "\n    role: leader\n"),
                out);
  return WithServiceBenchmark(engine, built, context, name + "-leader", port,
                              std::move(out));
}
}  // namespace

EmittedCommand EmitKubernetes(Engine engine, const Plan& plan,
                              const EmitContext& context) {
  return EmitBuilt(engine, plan, context, /*k8s=*/true, &KubernetesOf);
}

}  // namespace shardplan::client
