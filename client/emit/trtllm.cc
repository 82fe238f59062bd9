// TensorRT-LLM's launch of one pool: `trtllm-serve` per instance (an MPI
// world over several nodes), with its LLM API options file.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/emit/emit_internal.h"
#include "fmt/format.h"

namespace shardplan::client::emit_internal {
namespace {

// Tokens a chat template adds around a prompt (role headers, a default
// system prompt with its date line for Llama 3): the benchmark's
// chat-completions requests arrive this much longer than ISL.
constexpr int kChatTemplateMarginTokens = 256;
// TorchLlmArgs.max_num_tokens' default.
constexpr int kTrtllmDefaultMaxNumTokens = 8192;

}  // namespace

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
    // A context server must admit a whole prompt with its chat template:
    // without chunked prefill TensorRT-LLM rejects a longer one
    // (client/engines/trtllm.yaml cites the check).
    const int64_t tokens =
        prefill ? std::max<int64_t>(static_cast<int64_t>(per_rank_batch) * isl,
                                    isl + kChatTemplateMarginTokens)
                : per_rank_batch;
    out.push_back(absl::StrCat(key("max_num_tokens"), ": ", tokens));
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
void EmitTrtllm(const PoolArgs& a, Layout& layout, Script& out) {
  const auto& [ev, plan, d, moe, attention_dp, model_id, quantization, kvdt,
               batch, role, input_tokens, nvlink_a2a] = a;

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
  if (!kvdt.empty()) {
    config.push_back(ev.config.at("kv_cache_config") + ":");
    config.push_back("  dtype: " + kvdt);
  }
  // Experts over several trays of one NVLink domain: the wide-EP MoE backend,
  // whose all-to-all kernels are written for multi-node NVLink
  // (client/engines/trtllm.yaml cites examples/wide_ep/README.md). Releases
  // that refuse it (its gate in trtllm.yaml) keep the AUTO backend.
  if (nvlink_a2a && ev.config.count("moe_config") > 0 &&
      !f.Value("moe_backend_nvlink").empty()) {
    config.push_back(ev.config.at("moe_config") + ":");
    config.push_back("  backend: " + f.Value("moe_backend_nvlink"));
  }
  // CUDA graphs for every batch up to the rank's (padded to the nearest
  // captured size), whatever the release's default capture list.
  if (batch > 0 && ev.config.count("cuda_graph_config") > 0) {
    config.push_back(ev.config.at("cuda_graph_config") + ":");
    config.push_back(absl::StrCat("  max_batch_size: ", per_rank_batch));
    config.push_back("  enable_padding: true");
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
  // Detokenisation off the executor's process, as the cost model prices
  // every TensorRT-LLM server (client/engines/trtllm.yaml says why).
  common.Flag(f.Flag("postprocess_workers"), f.Value("postprocess_workers"));
  // Without chunked prefill a prompt longer than max_num_tokens (8192 by
  // default) is rejected; generation servers take no prompts.
  const int prompt_tokens = Positive(input_tokens) + kChatTemplateMarginTokens;
  if (role == DisaggRole::kNone && prompt_tokens > kTrtllmDefaultMaxNumTokens) {
    common.Flag(f.Flag("max_num_tokens"), prompt_tokens);
  }
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
      out.bench_port = absl::StrCat(port);
    }
    Command c = common;
    c.instance = i;
    c.gpus = head.gpus;
    c.node = head.node;
    c.port = port;
    c.ray = segs.size() > 1;  // one mpirun for several nodes
    // trtllm-serve listens on localhost by default; the load balancer,
    // router and benchmark may run elsewhere.
    c.Flag(f.Flag("host"), "0.0.0.0");
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
      c.spans = segs;
      for (const Segment& s : segs) {
        if (!layout.Pin(s)) continue;
        // One MPI world takes the same devices on every host it names.
        out.warnings.push_back(fmt::format(
            "instance {} uses GPUs {}-{} of node {} only: restrict the MPI "
            "ranks there to them (CUDA_VISIBLE_DEVICES in that host's "
            "environment) or the world takes the node's first GPUs.",
            i, s.first_gpu, s.first_gpu + s.gpus - 1, s.node));
      }
      // Open MPI refuses to start as root without --allow-run-as-root (the
      // engines' containers run as root) and passes the environment to the
      // other nodes only for the variables named with -x.
      std::vector<std::string> exports = {"-x PATH", "-x LD_LIBRARY_PATH"};
      for (const std::string& e : c.env) exports.push_back("-x " + e);
      c.env.clear();
      c.args[0] = absl::StrCat("mpirun --allow-run-as-root -np ", server_gpus,
                               " -H ", absl::StrJoin(hosts, ","), " ",
                               absl::StrJoin(exports, " "), " ",
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

}  // namespace shardplan::client::emit_internal
