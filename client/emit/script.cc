// The launch script of a plan (`--emit vllm|sglang|trtllm`): the pools'
// commands from the engine builders, the header, and the benchmark command
// that checks the prediction.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/emit.h"
#include "client/emit/emit_internal.h"
#include "fmt/format.h"

namespace shardplan::client {
namespace emit_internal {
namespace {

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
                               const std::string& have,
                               std::vector<std::string>& warnings) {
  const std::string want = EffectiveWeightDtype(context);
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
    // No engine quantizes to FP4 at load time; each reads a ModelOpt NVFP4
    // checkpoint's own quantization config (client/engines/*.yaml).
    warnings.push_back(fmt::format(
        "FP4 weights need a pre-quantized (NVFP4/MXFP4) checkpoint, e.g. an "
        "NVIDIA ModelOpt NVFP4 export of the model: pass its path or id "
        "instead of {} ({}); the engine reads its quantization from the "
        "checkpoint.{}",
        model_id, DtypeLabel(have),
        context.fp4_tensor_cores
            ? ""
            : " GPUs without FP4 tensor cores (Hopper) compute FP4 weights at "
              "FP8."));
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

// The checkpoint to launch and its dtype: NVIDIA's NVFP4 checkpoint where the
// GPU has FP4 tensor cores and the weights are planned as fp4 (the cost model
// prices fp4 weights there at the NVFP4 rate, which another 4-bit format, e.g.
// Kimi-K2.5's INT4 release, does not reach), else the catalog's checkpoint.
std::pair<std::string, std::string> Checkpoint(const EmitContext& context) {
  if (context.fp4_tensor_cores && !context.nvfp4_hugging_face_id.empty() &&
      EffectiveWeightDtype(context) == "fp4") {
    return {context.nvfp4_hugging_face_id, "fp4"};
  }
  return {context.hugging_face_id,
          context.native_dtype.empty() ? "bf16" : context.native_dtype};
}

}  // namespace

const char* KvCacheFp4Role(const EmitContext& context) {
  if (context.sparse_mla) return "kv_cache_fp4_sparse_mla";
  return context.mla ? "kv_cache_fp4_mla" : "kv_cache_fp4";
}

std::string KvCacheValue(Engine engine, const EngineVersion& ev,
                         const EmitContext& context,
                         std::vector<std::string>* warnings) {
  const ToolFlags& f = ev.launch;
  const std::string& want = context.kv_cache_dtype;
  if (want == "fp8") {
    const std::string sparse = f.Value("kv_cache_fp8_sparse_mla");
    return context.sparse_mla && !sparse.empty() ? sparse
                                                 : f.Value("kv_cache_fp8");
  }
  if (want != "fp4") return "";
  std::string why;
  std::string value;
  if (!context.fp4_tensor_cores) {
    why = "needs FP4 tensor cores (Blackwell)";
  } else {
    value = f.Value(KvCacheFp4Role(context));
    if (value.empty()) {
      why =
          absl::StrCat("is not available in ", EngineName(engine), " ", ev.name,
                       context.sparse_mla ? " for sparse-MLA models"
                       : context.mla      ? " for MLA models"
                                          : "");
    }
  }
  if (value.empty() && warnings != nullptr) {
    warnings->push_back(
        fmt::format("an FP4 KV cache {}; the command keeps {}'s default "
                    "KV-cache dtype.",
                    why, EngineName(engine)));
  }
  return value;
}

std::string RenderBenchmark(Engine engine, const EngineVersion& ev,
                            const std::string& model_id, const Script& s,
                            const EmitContext& context) {
  const ToolFlags& b = ev.benchmark;
  // The plan's whole load: requests in flight per instance times the
  // instances behind the endpoint (a load balancer, Service or router).
  const int per_instance = Positive(s.concurrency_per_instance);
  const int c = per_instance * std::max(1, s.instances);
  const int prompts = std::max(100, 5 * c);
  Command cmd;
  if (s.instances > 1) {
    cmd.comments.push_back(fmt::format(
        "Benchmark that checks the prediction (ISL {}, OSL {}, {} requests in "
        "flight: {} per instance on {} instances) through the load balancer in "
        "front of them:",
        context.input_tokens, context.output_tokens, c, per_instance,
        s.instances));
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
      cmd.Flag(b.Flag("backend"),
               s.bench_backend.empty() ? b.Value("backend") : s.bench_backend);
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
      // aiperf sends max_tokens only: without ignore_eos and min_tokens an
      // early end of sequence shortens the output.
      cmd.Flag(b.Flag("extra_inputs"), "ignore_eos:true");
      cmd.Flag(b.Flag("extra_inputs"),
               absl::StrCat("min_tokens:", context.output_tokens));
      cmd.Flag(b.Flag("concurrency"), c);
      cmd.Flag(b.Flag("num_prompts"), prompts);
      break;
  }
  return cmd.Render();
}

// The commands of one pool of engine instances (the whole plan when it is
// aggregated), with the warnings for what the engine cannot express.
void EmitPool(Engine engine, const EngineVersion& ev, const Plan& plan,
              const EmitContext& context, const std::string& model_id,
              const std::string& quantization, Layout& layout, Script& script,
              DisaggRole role) {
  Degrees d = DegreesOf(plan);
  const bool moe = context.is_moe || d.ep > 1;
  const char* engine_name = EngineName(engine);
  // One rule for independent replicas in every engine: a dense model's
  // data-parallel ranks are independent copies (DESIGN.md), so each is a
  // server of its own behind the load balancer, never one engine's DP group.
  if (!moe && d.dp > 1) {
    d.replicas *= d.dp;
    d.dp = 1;
  }

  // --- Which per-operator dimensions the engine can express
  // (proto/engine_layouts.h): Megatron's pattern inside a tensor-parallel
  // group, and attention split by batch inside the group ("DP attention")
  // where the engine runs it for the model.
  const bool attention_dp = d.tp > 1 && AllAttentionBatch(plan) &&
                            EngineRunsAttentionDp(EngineKey(engine), moe);
  const int expert_group = moe ? std::max(1, d.dp * d.tp / d.ep) : 1;
  for (const OpDefault& def : kEnginePattern) {
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

  // The decode batch of each of the plan's data-parallel ranks: the plan's
  // requests in flight per replica (a prefill pass: per rank already) spread
  // over its ranks, else the prediction's per-rank batch, else the workload's
  // requests in flight per replica spread likewise. A replica serves
  // batch x dp requests.
  int batch = context.batch_fallback;
  if (plan.batch_size() > 0) {
    batch = role == DisaggRole::kPrefill
                ? plan.batch_size()
                : (plan.batch_size() + d.dp - 1) / d.dp;
  }
  if (batch <= 0 && context.concurrency > 0) {
    batch = (context.concurrency + d.dp - 1) / d.dp;
  }
  const std::string kvdt = KvCacheValue(engine, ev, context, nullptr);
  // Experts of one instance over several nodes of an NVLink domain
  // (GB200/GB300 NVL72: trays of 4 in a 72-GPU rack) exchange tokens over
  // NVLink, with the engines' multi-node NVLink kernels.
  const int a2a_ranks = d.dp * d.tp;
  const bool nvlink_a2a = moe && d.ep > 1 &&
                          context.nvlink_domain_gpus > context.gpus_per_node &&
                          a2a_ranks > context.gpus_per_node &&
                          a2a_ranks <= context.nvlink_domain_gpus;
  script.nvlink_a2a = script.nvlink_a2a || nvlink_a2a;
  script.concurrency_per_instance = batch * d.dp;
  const PoolArgs args{
      ev,           plan, d,     moe,  attention_dp,         model_id,
      quantization, kvdt, batch, role, context.input_tokens, nvlink_a2a};
  switch (engine) {
    case Engine::kVllm:
      EmitVllm(args, layout, script);
      break;
    case Engine::kSglang:
      EmitSglang(args, layout, script);
      break;
    case Engine::kTrtllm:
      EmitTrtllm(args, layout, script);
      break;
  }
}

Built Build(Engine engine, const Plan& plan, const EmitContext& context,
            bool k8s) {
  Built built;
  Script& script = built.script;
  const std::vector<std::string>& runnable = context.runnable_engines;
  // The server's verdict for the workload's engine and version (it names
  // the rule), or the engines whose newest release can launch the plan.
  const bool rule_blocks = absl::StartsWith(
      context.capability_reason, absl::StrCat(EngineKey(engine), " "));
  const bool not_listed =
      !runnable.empty() && std::find(runnable.begin(), runnable.end(),
                                     EngineKey(engine)) == runnable.end();
  if (rule_blocks) {
    script.warnings.push_back(fmt::format("{} cannot launch this plan: {}",
                                          EngineName(engine),
                                          context.capability_reason));
  } else if (not_listed) {
    script.warnings.push_back(fmt::format(
        "{} cannot launch this plan's layout (the server's capability rules "
        "allow: {}); plan again with --engine {}, or emit for one of those.",
        EngineName(engine), absl::StrJoin(runnable, ", "), EngineKey(engine)));
  }
  if (rule_blocks || not_listed) {
    built.ok = false;
    built.refused = true;
    return built;
  }

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
  auto [model_id, checkpoint_dtype] = Checkpoint(context);
  if (!model_id.empty() && model_id == context.nvfp4_hugging_face_id &&
      model_id != context.hugging_face_id) {
    script.header.push_back(fmt::format(
        "{} is NVIDIA's NVFP4 checkpoint of {} (the engine reads its "
        "quantization from the checkpoint): the weights the prediction prices "
        "on FP4 tensor cores.",
        model_id,
        context.hugging_face_id.empty() ? context.model_name
                                        : context.hugging_face_id));
  } else if (!context.nvfp4_hugging_face_id.empty() &&
             !context.fp4_tensor_cores && checkpoint_dtype == "fp4" &&
             EffectiveWeightDtype(context) == "fp4") {
    script.header.push_back(fmt::format(
        "{} stores 4-bit weights this GPU has no FP4 tensor cores for: the "
        "engine runs them on weight-only kernels (4-bit reads, BF16 math), as "
        "the prediction prices them; {} needs FP4 tensor cores (Blackwell).",
        model_id, context.nvfp4_hugging_face_id));
  }
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
  const std::string quantization = WeightQuantization(
      engine, context, model_id, checkpoint_dtype, script.warnings);
  const std::string kv_cache =
      KvCacheValue(engine, *ev, context, &script.warnings);
  if (context.kv_cache_dtype == "fp4" && !kv_cache.empty()) {
    // The range's first release may predate the FP4 cache: the script says
    // which release it needs.
    const auto gate = ev->gates.find(KvCacheFp4Role(context));
    if (gate != ev->gates.end() && !gate->second.since.empty()) {
      script.header.push_back(fmt::format(
          "The FP4 KV cache ({}) needs {} {} or later{}.", kv_cache,
          EngineName(engine), gate->second.since,
          gate->second.sources.empty()
              ? ""
              : absl::StrCat(" (", gate->second.sources.front(), ")")));
    }
    if (gate != ev->gates.end() && !gate->second.open_issue.empty()) {
      script.header.push_back(gate->second.open_issue);
    }
  }

  built.expert_all_to_all =
      plan.ep() > 1 || plan.prefill().ep() > 1 || plan.decode().ep() > 1;
  if (!IsDisaggregated(plan)) {
    const Degrees d = DegreesOf(plan);
    const int64_t plan_gpus =
        static_cast<int64_t>(d.replicas) * d.replica_gpus();
    Layout layout = ClusterLayout(context, plan_gpus, k8s);
    layout.UsePlacement(plan, plan_gpus);
    EmitPool(engine, *ev, plan, context, model_id, quantization, layout,
             script);
    if (!k8s && script.instances > 1) {
      // The plan's load is all instances' together, so the benchmark goes
      // through the load balancer in front of them.
      script.bench_host = "$LB_ADDR";
      script.bench_port = "$LB_PORT";
      script.header.push_back(
          "Set LB_ADDR and LB_PORT to the load balancer's address and port for "
          "the benchmark.");
    }
    built.plan_gpus = plan_gpus;
    built.num_nodes = layout.num_nodes();
    return built;
  }

  BuildDisaggregated(engine, plan, context, quantization, k8s, built);
  return built;
}

EmittedCommand EmitBuilt(Engine engine, const Plan& plan,
                         const EmitContext& context, bool k8s,
                         TargetEmitter emit) {
  Built built = Build(engine, plan, context, k8s);
  if (!built.ok) {
    return EmittedCommand{"", "", built.script.warnings, built.refused};
  }
  if (k8s) WarnMultiNodeNvlinkPods(built.script);
  return emit(engine, context, built);
}

namespace {

// The shell script of a launch.
EmittedCommand ScriptOf(Engine engine, const EmitContext& context,
                        Built& built) {
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

}  // namespace
}  // namespace emit_internal

EmittedCommand EmitCommand(Engine engine, const shardplan::v1::Plan& plan,
                           const EmitContext& context) {
  return emit_internal::EmitBuilt(engine, plan, context, /*k8s=*/false,
                                  &emit_internal::ScriptOf);
}

}  // namespace shardplan::client
