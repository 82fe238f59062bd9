#include "client/emit.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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

// The command under construction: comment lines, environment, argv.
struct Builder {
  std::vector<std::string> comments;
  std::vector<std::string>
      preamble;  // shell lines before the command (config files)
  std::vector<std::string> env;
  std::vector<std::string> args;
  std::vector<std::string> warnings;

  void Flag(absl::string_view name, int value) {
    args.push_back(absl::StrCat(name, " ", value));
  }
  void Flag(absl::string_view name, absl::string_view value) {
    args.push_back(absl::StrCat(name, " ", value));
  }
  void Switch(absl::string_view name) { args.emplace_back(name); }

  std::string Render() const {
    std::string out;
    for (const std::string& c : comments) absl::StrAppend(&out, "# ", c, "\n");
    for (const std::string& p : preamble) absl::StrAppend(&out, p, "\n");
    std::string line;
    if (!env.empty()) absl::StrAppend(&line, absl::StrJoin(env, " "), " ");
    absl::StrAppend(&line, absl::StrJoin(args, " \\\n  "));
    absl::StrAppend(&out, line, "\n");
    return out;
  }
};

int Positive(int v) { return v > 0 ? v : 1; }

// Degrees with defaults applied.
struct Degrees {
  int dp, tp, pp, ep;
  int gpus() const { return dp * tp * pp; }
};

bool AllAttentionBatch(const Plan& plan) {
  for (const char* op : kAttentionOps) {
    if (PlanDim(plan, op) != "batch") return false;
  }
  return true;
}

// Nodes that `gpus` GPUs occupy.
int NodesFor(int gpus, const EmitContext& context) {
  const int per_node = Positive(context.gpus_per_node);
  return std::max(1, (gpus + per_node - 1) / per_node);
}

int NumNodes(const Degrees& d, const EmitContext& context) {
  return NodesFor(d.gpus(), context);
}

bool UnevenStages(const Plan& plan) {
  if (plan.stage_layers_size() < 2) return false;
  const auto [lo, hi] = std::minmax_element(plan.stage_layers().begin(),
                                            plan.stage_layers().end());
  return *hi - *lo > 1;
}

// For engines that always split pipeline stages evenly.
void WarnUnevenStages(const Plan& plan, absl::string_view engine, Builder& b) {
  if (!UnevenStages(plan)) return;
  b.warnings.push_back(absl::StrCat(
      engine,
      " splits pipeline stages evenly; the plan's uneven stage_layers (",
      absl::StrJoin(plan.stage_layers(), ","), ") are not expressed."));
}

// One command serves one replica of `replica_gpus` GPUs.
void CommentReplicaCopies(int copies, int replica_gpus,
                          absl::string_view balancer, Builder& b) {
  if (copies <= 1) return;
  b.comments.push_back(
      fmt::format("Run {} copies of this command (one per replica, {} GPUs "
                  "each) behind {}.",
                  copies, replica_gpus, std::string(balancer)));
}

}  // namespace

absl::StatusOr<Engine> ParseEngine(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower == "vllm") return Engine::kVllm;
  if (lower == "sglang") return Engine::kSglang;
  if (lower == "trtllm" || lower == "tensorrt-llm") return Engine::kTrtllm;
  return absl::InvalidArgumentError(absl::StrCat(
      "--emit must be vllm, sglang or trtllm, got \"", name, "\""));
}

std::string HuggingFaceId(absl::string_view catalog_name) {
  static constexpr std::pair<const char*, const char*> kIds[] = {
      {"llama-3.1-8b", "meta-llama/Llama-3.1-8B-Instruct"},
      {"llama-3.1-70b", "meta-llama/Llama-3.1-70B-Instruct"},
      {"llama-3.1-405b", "meta-llama/Llama-3.1-405B-Instruct"},
      {"llama-3.3-70b", "meta-llama/Llama-3.3-70B-Instruct"},
      {"qwen3-32b", "Qwen/Qwen3-32B"},
      {"qwen3-235b-a22b", "Qwen/Qwen3-235B-A22B"},
      {"mixtral-8x7b", "mistralai/Mixtral-8x7B-Instruct-v0.1"},
      {"mixtral-8x22b", "mistralai/Mixtral-8x22B-Instruct-v0.1"},
      {"deepseek-v3", "deepseek-ai/DeepSeek-V3"},
      {"deepseek-r1", "deepseek-ai/DeepSeek-R1"},
      {"gpt-oss-120b", "openai/gpt-oss-120b"},
      {"gpt-oss-20b", "openai/gpt-oss-20b"},
  };
  // A name that already looks like "org/repo" (e.g. an HF config's
  // _name_or_path) is one.
  if (absl::StrContains(catalog_name, '/')) return std::string(catalog_name);
  const std::string lower = absl::AsciiStrToLower(catalog_name);
  for (const auto& [name, id] : kIds) {
    if (lower == name) return id;
  }
  return "";
}

bool CatalogModelIsMoe(absl::string_view catalog_name) {
  const std::string lower = absl::AsciiStrToLower(catalog_name);
  for (const char* marker : {"mixtral", "deepseek", "gpt-oss", "moe", "-a22b",
                             "1.6t", "switch", "kimi", "dbrx", "grok"}) {
    if (absl::StrContains(lower, marker)) return true;
  }
  return false;
}

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

EmittedCommand EmitCommand(Engine engine, const Plan& plan,
                           const EmitContext& context) {
  const Degrees d{Positive(plan.dp()), Positive(plan.tp()), Positive(plan.pp()),
                  Positive(plan.ep())};
  const bool moe = context.is_moe || d.ep > 1;
  // Independent model instances: one engine instance (command) each.
  const int replicas = Positive(plan.replicas());
  const char* engine_name = EngineName(engine);
  Builder b;

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
    if (group <= 1)
      continue;  // nothing is split; the dimension does not matter
    const std::string dim = PlanDim(plan, op);
    if (dim == def.dim) continue;
    const bool is_attention =
        std::find(std::begin(kAttentionOps), std::end(kAttentionOps), op) !=
        std::end(kAttentionOps);
    if (is_attention && attention_dp) continue;
    if (op == "router")
      continue;  // tiny; engines replicate it, the cost difference is noise
    b.warnings.push_back(
        fmt::format("{} cannot express {}; the command shards {} the Megatron "
                    "way ({}={}), so the "
                    "predicted figures apply only approximately.",
                    engine_name, DimPhrase(plan, op, dim), op, op, def.dim));
  }
  if (d.tp > 1 && AllAttentionBatch(plan) && !attention_dp) {
    b.warnings.push_back(
        fmt::format("{} has no data-parallel attention for dense models; the "
                    "plan's batch-split "
                    "attention becomes head-split tensor parallelism "
                    "(qkv=column, attention=column, "
                    "attn_out=row).",
                    engine_name));
  }

  // --- Model id.
  std::string model_id = HuggingFaceId(context.model_name);
  if (model_id.empty()) {
    model_id = "<path-or-hf-id-of-" +
               (context.model_name.empty() ? std::string("model")
                                           : context.model_name) +
               ">";
    b.warnings.push_back(
        fmt::format("no Hugging Face id known for \"{}\"; replace {} with the "
                    "checkpoint's path or id.",
                    context.model_name, model_id));
  }

  const int nodes = NumNodes(d, context);
  const int batch = plan.batch_size();
  const std::string& wdt = context.weight_dtype;
  const std::string& kvdt = context.kv_cache_dtype;

  switch (engine) {
    case Engine::kVllm: {
      // vLLM: DP ranks each run attention with TP; MoE layers use one group of
      // DP x TP ranks, expert-parallel when --enable-expert-parallel (EP size =
      // DP x TP), else tensor-parallel over all of them.
      const int v_dp = attention_dp ? d.dp * d.tp : d.dp;
      const int v_tp = attention_dp ? 1 : d.tp;
      b.args = {"vllm serve " + model_id};
      b.Flag("--tensor-parallel-size", v_tp);
      b.Flag("--pipeline-parallel-size", d.pp);
      if (v_dp > 1) b.Flag("--data-parallel-size", v_dp);
      if (moe && d.ep > 1) {
        b.Switch("--enable-expert-parallel");
        if (d.ep != d.dp * d.tp) {
          b.warnings.push_back(
              fmt::format("vLLM's expert-parallel size is always data x tensor "
                          "= {}; the plan's ep={} "
                          "(experts tensor-split {} ways inside each expert "
                          "group) cannot be expressed, "
                          "the command uses EP={}.",
                          d.dp * d.tp, d.ep, expert_group, d.dp * d.tp));
        }
      }
      if (batch > 0)
        b.Flag("--max-num-seqs",
               attention_dp ? (batch + d.tp - 1) / d.tp : batch);
      if (wdt == "fp8") b.Flag("--quantization", "fp8");
      if (kvdt == "fp8") b.Flag("--kv-cache-dtype", "fp8");
      CommentReplicaCopies(replicas, d.dp * d.tp * d.pp, "a load balancer", b);
      if (UnevenStages(plan)) {
        b.env.push_back("VLLM_PP_LAYER_PARTITION=" +
                        absl::StrJoin(plan.stage_layers(), ","));
      }
      if (nodes > 1) {
        b.comments.push_back(
            fmt::format("The plan spans {} nodes of {} GPUs: start a Ray "
                        "cluster over them first "
                        "(`ray start --head` on one node, `ray start "
                        "--address=<head>:6379` on the others),",
                        nodes, context.gpus_per_node));
        b.comments.push_back("then run this on the head node.");
      }
      break;
    }
    case Engine::kSglang: {
      // SGLang: --tp-size is the whole group of one server; with
      // --enable-dp-attention the attention runs data-parallel in --dp-size
      // groups and MoE experts are split over
      // --ep-size ranks (expert TP = tp-size / ep-size).
      int s_tp = d.tp;
      int s_dp = d.dp;
      bool dp_attention = false;
      int copies = 1;
      if (moe) {
        s_tp = d.dp * d.tp;
        s_dp = attention_dp ? d.dp * d.tp : d.dp;
        dp_attention = s_dp > 1;
      } else if (attention_dp) {
        // Dense with batch-split attention: one server per replica with DP
        // attention.
        s_dp = d.tp;
        dp_attention = true;
        copies = d.dp;
      }
      b.args = {"python -m sglang.launch_server --model-path " + model_id};
      b.Flag("--tp-size", s_tp);
      if (s_dp > 1) b.Flag("--dp-size", s_dp);
      if (dp_attention) b.Switch("--enable-dp-attention");
      if (d.pp > 1) b.Flag("--pp-size", d.pp);
      if (moe && d.ep > 1) b.Flag("--ep-size", d.ep);
      if (batch > 0) b.Flag("--max-running-requests", batch * (moe ? d.dp : 1));
      if (wdt == "fp8") b.Flag("--quantization", "fp8");
      if (kvdt == "fp8") b.Flag("--kv-cache-dtype", "fp8_e4m3");
      WarnUnevenStages(plan, "SGLang", b);
      CommentReplicaCopies(copies * replicas, (moe ? d.dp : 1) * d.tp * d.pp,
                           "sglang_router or another load balancer", b);
      const int server_gpus = s_tp * d.pp;
      const int server_nodes = NodesFor(server_gpus, context);
      if (server_nodes > 1) {
        b.Flag("--nnodes", server_nodes);
        b.Flag("--node-rank", "$NODE_RANK");
        b.Flag("--dist-init-addr", "$HEAD_ADDR:5000");
        b.comments.push_back(
            fmt::format("Run on each of the {} nodes with NODE_RANK=0..{} and "
                        "HEAD_ADDR = node 0's address.",
                        server_nodes, server_nodes - 1));
      }
      break;
    }
    case Engine::kTrtllm: {
      // TensorRT-LLM (PyTorch backend): --tp_size is the whole group; MoE
      // experts split over --ep_size; attention either tensor-parallel over
      // tp_size or fully data-parallel (enable_attention_dp) — nothing in
      // between.
      int t_tp = d.tp;
      bool attention_dp_flag = false;
      int copies = 1;
      if (moe) {
        t_tp = d.dp * d.tp;
        attention_dp_flag = attention_dp || d.dp > 1;
        if (d.dp > 1 && d.tp > 1 && !attention_dp) {
          b.warnings.push_back(
              fmt::format("TensorRT-LLM runs attention either tensor-parallel "
                          "over all {} ranks or fully "
                          "data-parallel; the plan's dp={} x tp={} attention "
                          "cannot be expressed, the "
                          "command uses enable_attention_dp (attention DP {}).",
                          t_tp, d.dp, d.tp, t_tp));
        }
      } else {
        copies = d.dp;
      }
      std::vector<std::string> config;
      if (attention_dp_flag) config.push_back("enable_attention_dp: true");
      if (kvdt == "fp8") {
        config.push_back("kv_cache_config:");
        config.push_back("  dtype: fp8");
      }
      b.args = {"trtllm-serve " + model_id};
      b.Flag("--backend", "pytorch");
      b.Flag("--tp_size", t_tp);
      b.Flag("--pp_size", d.pp);
      if (moe && d.ep > 1) b.Flag("--ep_size", d.ep);
      if (batch > 0) b.Flag("--max_batch_size", batch * (moe ? d.dp : 1));
      if (!config.empty()) {
        b.comments.push_back(
            "Extra LLM API options (--config; --extra_llm_api_options on "
            "TensorRT-LLM < 1.1):");
        b.preamble.push_back("cat > shardplan-trtllm.yaml <<'EOF'");
        for (const std::string& line : config) b.preamble.push_back(line);
        b.preamble.push_back("EOF");
        b.Flag("--config", "shardplan-trtllm.yaml");
      }
      if (wdt == "fp8" || wdt == "fp4") {
        b.warnings.push_back(fmt::format(
            "TensorRT-LLM takes the weight dtype from the checkpoint: serve an "
            "{}-quantized "
            "checkpoint (e.g. one made with NVIDIA ModelOpt) instead of {}.",
            wdt == "fp8" ? "FP8" : "NVFP4", model_id));
      }
      WarnUnevenStages(plan, "TensorRT-LLM", b);
      CommentReplicaCopies(copies * replicas, (moe ? d.dp : 1) * d.tp * d.pp,
                           "a load balancer", b);
      const int server_gpus = t_tp * d.pp;
      const int server_nodes = NodesFor(server_gpus, context);
      if (server_nodes > 1) {
        b.comments.push_back(
            fmt::format("Spans {} nodes: launch under MPI, e.g. `mpirun -n {} "
                        "--hostfile hosts "
                        "trtllm-llmapi-launch <command>` (or srun on Slurm).",
                        server_nodes, server_gpus));
      }
      break;
    }
  }
  if (wdt == "fp4" && engine != Engine::kTrtllm) {
    b.warnings.push_back(
        fmt::format("FP4 weights need a pre-quantized (NVFP4/MXFP4) "
                    "checkpoint: pass its path or id "
                    "instead of {}; H100 computes FP4 weights at FP8.",
                    model_id));
  }
  if (kvdt == "fp4") {
    b.warnings.push_back(
        fmt::format("{} has no FP4 KV cache; the command keeps the engine's "
                    "default KV-cache dtype.",
                    engine_name));
  }
  return EmittedCommand{b.Render(), std::move(b.warnings)};
}

}  // namespace shardplan::client
