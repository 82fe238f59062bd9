// Disaggregated plans: the prefill and decode pools as the engine's
// prefill/decode servers, and the router in front of them (vLLM's proxy,
// sglang-router in PD mode, `trtllm-serve disaggregated`).
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/emit/emit_internal.h"
#include "fmt/format.h"

namespace shardplan::client::emit_internal {
namespace {

// First rank of each pool of a disaggregated plan, by the server's rule
// (simulator/placement.h, DecodePoolFirst): where node sizes differ (node
// groups of different sizes, numbered bigger nodes first as NodeGpusOf does,
// or a partial last node) the pool with the bigger instances takes the lowest
// ranks, so its instances get the big nodes; otherwise prefill first. The
// commands must put each instance where the prediction placed it.
struct PoolRanks {
  int64_t prefill = 0, decode = 0;
};
PoolRanks PoolFirstRanks(const Built& built, const EmitContext& context) {
  const bool nodes_differ =
      !context.node_gpus.empty() ||
      (context.gpus_per_node > 0 && context.num_gpus > 0 &&
       context.num_gpus % context.gpus_per_node != 0);
  if (nodes_differ && built.decode_gpus > built.prefill_gpus) {
    return {built.decode_gpus * built.decode_instances, 0};
  }
  return {0, built.prefill_gpus * built.prefill_instances};
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

}  // namespace

bool IsDisaggregated(const Plan& plan) {
  return plan.has_prefill() || plan.has_decode();
}

// --- Disaggregated (xPyD): the pools on their GPUs (each pool's placement,
// else PoolFirstRanks), a router in front.
void BuildDisaggregated(Engine engine, const Plan& plan,
                        const EmitContext& context,
                        const std::string& quantization, bool k8s,
                        Built& built) {
  Script& script = built.script;
  const EngineVersion* ev = &built.ev;
  const std::string& model_id = built.model_id;
  built.disaggregated = true;
  if (!plan.has_prefill() || !plan.has_decode()) {
    script.warnings.push_back(
        "a disaggregated plan needs both plan.prefill and plan.decode; "
        "nothing to emit.");
    built.ok = false;
    return;
  }
  if (const std::string gap = DisaggregatedLaunchGap(engine, *ev);
      !gap.empty()) {
    script.warnings.push_back(gap);
    built.ok = false;
    return;
  }
  const Plan prefill = PoolPlan(plan.prefill(), plan.prefill_instances());
  const Plan decode = PoolPlan(plan.decode(), plan.decode_instances());
  built.prefill_instances = prefill.replicas();
  built.decode_instances = decode.replicas();
  built.prefill_gpus = DegreesOf(prefill).replica_gpus();
  built.decode_gpus = DegreesOf(decode).replica_gpus();
  const PoolRanks ranks = PoolFirstRanks(built, context);
  const int64_t plan_gpus = built.prefill_gpus * built.prefill_instances +
                            built.decode_gpus * built.decode_instances;
  Layout layout = ClusterLayout(context, plan_gpus, k8s);
  Script pools[2];
  std::vector<Endpoint> heads[2];
  for (int i = 0; i < 2; ++i) {
    const bool is_prefill = i == 0;
    layout.offset = is_prefill ? ranks.prefill : ranks.decode;
    layout.UsePlacement(is_prefill ? prefill : decode,
                        is_prefill
                            ? built.prefill_gpus * built.prefill_instances
                            : built.decode_gpus * built.decode_instances);
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
  script.bench_port = absl::StrCat(router_port);
  script.instances = 1;
  script.concurrency_per_instance =
      pools[1].concurrency_per_instance * pools[1].instances;
  built.plan_gpus = plan_gpus;
  built.num_nodes = layout.num_nodes();
}

}  // namespace shardplan::client::emit_internal
