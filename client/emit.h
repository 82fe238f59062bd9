// Turns a shardplan plan into the launch commands of an inference engine
// (vLLM, SGLang, TensorRT-LLM) in that engine's own flags — one command per
// node or per model instance, each with every flag it needs — with the
// benchmark command that checks the prediction, and warnings for what the
// engine cannot express. The flags come from the engine's table for the chosen
// version (client/engine_flags.h); docs/cli-and-emit.md describes the mapping.
#ifndef SHARDPLAN_CLIENT_EMIT_H_
#define SHARDPLAN_CLIENT_EMIT_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "client/engine_flags.h"
#include "shardplan/v1/shardplan.pb.h"

namespace shardplan::client {

// What the emitter needs besides the plan. The model fields come from the
// server (the resolved ModelSpec of EvaluatePlan, or ListCatalog), never from
// tables of the client's own.
struct EmitContext {
  std::string model_name;
  // What the engine loads; "" = unknown (a placeholder and a warning).
  std::string hugging_face_id;
  // The checkpoint's dtype ("bf16", "fp8", "fp4"; "" = bf16).
  std::string native_dtype;
  // ModelSpec.nvfp4_hugging_face_id: NVIDIA's NVFP4 checkpoint of the model,
  // launched instead of hugging_face_id where the GPU has FP4 tensor cores and
  // the weights are planned as fp4 (what the prediction prices there); "" =
  // none.
  std::string nvfp4_hugging_face_id;
  bool is_moe = false;
  // The workload's dtypes as requested; weight "" = the checkpoint's (what the
  // server planned for).
  std::string weight_dtype;
  std::string kv_cache_dtype;
  int gpus_per_node = 8;
  // GPUs sharing one NVLink domain (cluster.nvlink_domain_gpus, else the
  // hardware's): GB200/GB300 NVL72 put 72 GPUs over nodes of 4 on one NVLink
  // fabric; 0 = one node.
  int nvlink_domain_gpus = 0;
  // The GPU runs FP4 (NVFP4/MXFP4) on its tensor cores (Blackwell:
  // HardwareSpec.peak_fp4_flops_per_s > 0); FP4 KV caches need it.
  bool fp4_tensor_cores = false;
  // DeepSeek sparse attention over MLA (ModelSpec.index_topk > 0:
  // DeepSeek-V3.2, GLM-5): engines keep its KV cache in their own formats.
  bool sparse_mla = false;
  // Multi-head latent attention (ModelSpec.kv_lora_rank > 0: DeepSeek-V3/V3.2,
  // Kimi-K2.5, GLM-5), sparse or not: engines keep its latent cache apart
  // from standard attention's, in fewer dtypes.
  bool mla = false;
  // GPUs of each node in rank order when node groups differ in size
  // (NodeGpusOf); empty = nodes of gpus_per_node.
  std::vector<int> node_gpus;
  // GPUs of the cluster (the last node may be partial); 0 = the plan's.
  int num_gpus = 0;
  // Engine release whose flags to use ("0.11.2" or a table label); "" = the
  // newest checked.
  std::string engine_version;
  // The workload the prediction is for, for the benchmark command.
  int input_tokens = 1024;
  int output_tokens = 1024;
  // The decode batch of each attention data-parallel rank when the plan
  // carries none: the prediction's batch_per_rank.
  int batch_fallback = 0;
  // workload.concurrency: requests in flight per replica (per instance of
  // each pool of a disaggregated plan), spread over its data-parallel ranks;
  // the batch when neither the plan nor the prediction gives one.
  int concurrency = 0;
  // The engines that can launch the plan's layout, as the server's
  // prediction lists them; empty = not known (every engine is tried).
  std::vector<std::string> runnable_engines;
  // The server's reason the workload's engine cannot run the plan (the
  // capability rule and its source, from the prediction's
  // infeasible_reason), quoted when the emitter refuses; "" = none given.
  std::string capability_reason;
};

struct EmittedCommand {
  // A shell script: comment lines, per-node or per-instance launch commands
  // (lines joined with " \\\n  "), then the benchmark command.
  std::string command;
  // The benchmark part of `command` alone.
  std::string benchmark;
  // One line each, for stderr: plan features the engine cannot express, and
  // what the command does instead.
  std::vector<std::string> warnings;
  // The named engine cannot run the plan (by the server's capability rules):
  // nothing was emitted and the first warning says why (CLI exit 2).
  bool refused = false;
};

// The Megatron default dimension of an operator ("qkv" → "column"); "" when
// unknown.
std::string MegatronDim(absl::string_view op);

// The plan's dimension for `op`: its operator_sharding entry, else the Megatron
// default.
std::string PlanDim(const shardplan::v1::Plan& plan, absl::string_view op);

// Per-node GPU counts of a cluster whose node groups set gpus_per_node
// (num_nodes each, bigger nodes first: the server's placement order); empty
// when all nodes have cluster.gpus_per_node.
std::vector<int> NodeGpusOf(const shardplan::v1::ClusterSpec& cluster);

// The weight dtype the server planned for: `weight_dtype` when given, else the
// checkpoint's `native_dtype`, else "bf16".
std::string EffectiveWeightDtype(const EmitContext& context);

// Builds the launch commands for `plan` (as returned by the server: degrees,
// operator dimensions, batch size, stage split). A disaggregated plan becomes
// its prefill and decode servers plus the engine's router (TensorRT-LLM: a
// context/generation options file per role and the `trtllm-serve
// disaggregated` config, 1.1 and later). Pure function; never fails: what it
// cannot express becomes a warning (so does an unknown engine version, which
// falls back to the newest table).
EmittedCommand EmitCommand(Engine engine, const shardplan::v1::Plan& plan,
                           const EmitContext& context);

// `--emit k8s-vllm|k8s-sglang`: the same launch as a Kubernetes
// LeaderWorkerSet (one group of pods per instance: the leader runs the first
// node's command, the workers the others', ranks from LWS_WORKER_INDEX) and a
// Service on the leaders; the benchmark as a trailing comment. TensorRT-LLM
// and launches that need Ray get no manifest, only a warning saying why.
EmittedCommand EmitKubernetes(Engine engine, const shardplan::v1::Plan& plan,
                              const EmitContext& context);

// `--emit dynamo`: an NVIDIA Dynamo DynamoGraphDeployment (nvidia.com/v1beta1)
// with a Frontend and one worker service per pool: the engine's Dynamo worker
// (python3 -m dynamo.vllm|dynamo.sglang) with the launch's parallelism flags
// (Dynamo sets up the nodes, ports and KV transfer), `replicas` = instances,
// `multinode.nodeCount` and GPUs per node. Disaggregated plans get a prefill
// and a decode worker service. TensorRT-LLM (engine config files) gets no
// manifest, only a warning.
EmittedCommand EmitDynamo(Engine engine, const shardplan::v1::Plan& plan,
                          const EmitContext& context);

}  // namespace shardplan::client

#endif  // SHARDPLAN_CLIENT_EMIT_H_
