// SGLang's launch of one pool: `sglang.launch_server` per server, on each of
// its nodes.
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

// --- SGLang: --tp-size is the whole group of one server; with
// --enable-dp-attention the attention runs data-parallel in --dp-size groups
// and MoE experts are split over --ep-size ranks (expert TP = tp-size /
// ep-size). A server over several nodes: --nnodes/--node-rank/--dist-init-addr
// on each node.
void EmitSglang(const PoolArgs& a, Layout& layout, Script& out) {
  const auto& [ev, plan, d, moe, attention_dp, model_id, quantization, kvdt,
               batch, role, input_tokens, nvlink_a2a] = a;

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
  }
  const int server_gpus = s_tp * d.pp;
  // --max-running-requests is the server's: each DP-attention rank takes
  // max_running_requests // dp_size, and the server rounds it down to a
  // multiple of dp_size (client/engines/sglang.yaml cites both), so ask for
  // whole ranks.
  if (dp_attention && requests_per_server > 0) {
    requests_per_server = (requests_per_server + s_dp - 1) / s_dp * s_dp;
  }
  const int rank_batch =
      dp_attention ? requests_per_server / s_dp : requests_per_server;

  Command common;
  common.args = {absl::StrCat(f.command, " ", ev.model_flag, " ", model_id)};
  common.Flag(f.Flag("tensor_parallel"), s_tp);
  if (s_dp > 1) common.Flag(f.Flag("data_parallel"), s_dp);
  if (dp_attention) common.Switch(f.Flag("dp_attention"));
  if (d.pp > 1) common.Flag(f.Flag("pipeline_parallel"), d.pp);
  if (moe && d.ep > 1) {
    common.Flag(f.Flag("expert_parallel"), d.ep);
    // Experts not tensor-split (EP = the whole group) under DP attention:
    // DeepEP all-to-all, as SGLang recommends for DP attention + EP. Without
    // DP attention every rank already holds all tokens and the default
    // backend ("none") sums the experts' outputs by the TP all-reduce, which
    // the prediction prices (Calibration::
    // expert_parallel_all_reduces_without_dp) and InferenceMAX's SGLang EP
    // runs launch.
    if (dp_attention && d.ep == s_tp) {
      if (f.Has("moe_a2a_backend")) {
        common.Flag(f.Flag("moe_a2a_backend"), f.Value("moe_a2a_backend"));
      } else {
        common.Switch(f.Flag("deepep_switch"));
      }
    }
  }
  if (requests_per_server > 0) {
    common.Flag(f.Flag("max_batch"), requests_per_server);
    // CUDA graphs up to each rank's batch: SGLang's default capture size
    // depends on the GPU's memory, tp and release (as low as 8 or 80).
    common.Flag(f.Flag("cuda_graph_max_bs"), rank_batch);
  }
  AddDtypeAndStageFlags(a, common);

  const int servers = d.replicas * servers_per_replica;
  for (int i = 0; i < servers; ++i) {
    const std::vector<Segment> segs =
        layout.SegmentsOf(static_cast<int64_t>(i) * server_gpus, server_gpus);
    const Segment& head = segs[0];
    const int port = layout.NextPort(head.node, 30000);
    if (i == 0) {
      out.bench_host = layout.Addr(head.node);
      out.bench_port = absl::StrCat(port);
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
        // SGLang listens on 127.0.0.1 by default; the load balancer, router
        // and benchmark may run elsewhere.
        c.Flag(f.Flag("host"), "0.0.0.0");
        c.Flag(f.Flag("port"), port);
      }
      out.commands.push_back(std::move(c));
    }
  }
  out.instances = servers;
  out.concurrency_per_instance = moe ? batch * d.dp : batch;
  if (servers > 1) {
    out.header.push_back(fmt::format(
        "{} servers: put them behind sglang-router (or another load balancer).",
        servers));
  }
}

// Which servers of a disaggregated plan a pool's commands start (kNone: an
// aggregated plan).

}  // namespace shardplan::client::emit_internal
