// vLLM's launch of one pool: `vllm serve` per instance, or per node of an
// instance (multiprocessing multi-node launcher, per-node DP ranks, or Ray).
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

// --- vLLM: DP ranks each run attention with TP; MoE layers use one group of
// DP x TP ranks, expert-parallel with --enable-expert-parallel (EP = DP x TP).
// Several nodes: the multiprocessing launcher (--nnodes/--node-rank/
// --master-addr, --headless on the others) for one TP/PP group, per-node DP
// ranks (--data-parallel-size-local/--data-parallel-start-rank) for data
// parallelism, Ray where a group does not split evenly over its nodes.
void EmitVllm(const PoolArgs& a, Layout& layout, Script& out) {
  const auto& [ev, plan, d, moe, attention_dp, model_id, quantization, kvdt,
               batch, role, input_tokens, nvlink_a2a] = a;

  const ToolFlags& f = ev.launch;
  const int v_dp = attention_dp ? d.dp * d.tp : d.dp;
  const int v_tp = attention_dp ? 1 : d.tp;
  const int rank_gpus = v_tp * d.pp;  // one DP rank
  const int instance_gpus = v_dp * rank_gpus;

  Command common;
  common.args = {absl::StrCat(f.command, " ", model_id)};
  common.Flag(f.Flag("tensor_parallel"), v_tp);
  common.Flag(f.Flag("pipeline_parallel"), d.pp);
  if (v_dp > 1) common.Flag(f.Flag("data_parallel"), v_dp);
  if (moe && d.ep > 1) {
    common.Switch(f.Flag("expert_parallel"));
    if (d.ep != d.dp * d.tp) {
      out.warnings.push_back(fmt::format(
          "vLLM's expert-parallel size is always data x tensor = {}; the "
          "plan's ep={} (experts tensor-split {} ways inside each expert "
          "group) cannot be expressed, the command uses EP={}.",
          d.dp * d.tp, d.ep, std::max(1, d.dp * d.tp / d.ep), d.dp * d.tp));
    }
  }
  // Experts over several trays of one NVLink domain: FlashInfer's multi-node
  // NVLink all-to-all instead of the default all-gather/reduce-scatter
  // (client/engines/vllm.yaml cites vllm/config/parallel.py). vLLM runs an
  // all-to-all backend only with data parallelism: one DP rank keeps its
  // experts' tokens in the tensor-parallel group, where the flag is inert.
  const bool fi_a2a = nvlink_a2a && v_dp > 1;
  if (fi_a2a && f.Has("all2all_backend")) {
    common.Flag(f.Flag("all2all_backend"), f.Value("all2all_backend_nvlink"));
  } else if (fi_a2a) {
    out.warnings.push_back(
        "this vLLM release has no --all2all-backend (0.11.1 and later, vLLM PR "
        "26732): the experts' all-to-all over the trays keeps vLLM's default "
        "all-gather/reduce-scatter instead of FlashInfer's multi-node NVLink "
        "kernels the prediction assumes.");
  }
  // Experts over several nodes on InfiniBand (vLLM's all-to-all kernels run
  // only with data parallelism): DeepEP, as vLLM's expert-parallel guide
  // deploys it across nodes and as the prediction prices it; the default
  // all-gather/reduce-scatter would move every token to every rank over the
  // NICs. Prefill servers take the high-throughput kernels, the others the
  // low-latency ones, the only DeepEP mode with CUDA graphs
  // (client/engines/vllm.yaml cites the backend list and the image).
  const bool deepep = moe && d.ep > 1 && v_dp > 1 && !nvlink_a2a;
  const std::string deepep_value =
      f.Value(role == DisaggRole::kPrefill ? "all2all_backend_internode_prefill"
                                           : "all2all_backend_internode");
  // Per replica: only an instance whose GPUs span nodes needs it.
  auto with_deepep = [&](Command c) {
    if (f.Has("all2all_backend")) {
      c.Flag(f.Flag("all2all_backend"), deepep_value);
    } else if (ev.env.count("all2all_backend_env") > 0) {
      c.env.push_back(ev.env.at("all2all_backend_env") + "=" + deepep_value);
    }
    return c;
  };
  // --max-num-seqs applies per DP rank: each runs its own engine core and
  // scheduler (client/engines/vllm.yaml).
  const int rank_batch = attention_dp ? (batch + d.tp - 1) / d.tp : batch;
  if (batch > 0) common.Flag(f.Flag("max_batch"), rank_batch);
  // vLLM captures CUDA graphs up to min(2 x max_num_seqs, 512) sequences by
  // default; a bigger batch would run eagerly.
  constexpr int kVllmDefaultMaxCapture = 512;
  if (rank_batch > kVllmDefaultMaxCapture) {
    if (f.Has("cuda_graph_max")) {
      common.Flag(f.Flag("cuda_graph_max"), rank_batch);
    } else {
      out.warnings.push_back(fmt::format(
          "this vLLM release captures CUDA graphs up to {} sequences; the "
          "batch of {} per rank runs partly without them.",
          kVllmDefaultMaxCapture, rank_batch));
    }
  }
  AddDtypeAndStageFlags(a, common);

  if (v_dp > 1 && d.pp > 1 && layout.SegmentsOf(0, instance_gpus).size() > 1) {
    // vLLM gives each DP rank its tp x pp GPUs side by side; the plan keeps a
    // stage of all DP ranks together (rank order replica, stage, dp, tp).
    out.warnings.push_back(
        "vLLM places the pipeline stages of one data-parallel rank on "
        "neighbouring GPUs, while the plan groups each stage of all DP ranks; "
        "across nodes the stage-to-node mapping, and so the cross-node "
        "traffic, differs from the prediction.");
  }
  for (int r = 0; r < d.replicas; ++r) {
    const std::vector<Segment> segs = layout.SegmentsOf(
        static_cast<int64_t>(r) * instance_gpus, instance_gpus);
    const Segment& head = segs[0];
    const Command base =
        deepep && segs.size() > 1 ? with_deepep(common) : common;
    const int port = layout.NextPort(head.node, 8000);
    const int slot = port - 8000;
    if (r == 0) {
      out.bench_host = layout.Addr(head.node);
      out.bench_port = absl::StrCat(port);
    }
    auto with_devices = [&](Command c, const Segment& s) {
      if (layout.Pin(s)) c.env.insert(c.env.begin(), VisibleDevices(s));
      c.instance = r;
      c.gpus = s.gpus;
      c.node = s.node;
      c.port = port;
      return c;
    };
    if (segs.size() == 1) {
      Command c = with_devices(base, head);
      c.comments.push_back(NodeComment(r, d.replicas, head, ""));
      c.Flag(f.Flag("port"), port);
      out.commands.push_back(std::move(c));
      continue;
    }
    const bool aligned =
        std::all_of(segs.begin(), segs.end(),
                    [&](const Segment& s) { return s.gpus % rank_gpus == 0; });
    if (v_dp > 1 && aligned) {
      // Each node runs its own DP ranks; one API server on the head node.
      int start = 0;
      for (size_t j = 0; j < segs.size(); ++j) {
        Command c = with_devices(base, segs[j]);
        c.comments.push_back(
            NodeComment(r, d.replicas, segs[j], j == 0 ? "head" : "headless"));
        const int local = segs[j].gpus / rank_gpus;
        c.Flag(f.Flag("data_parallel_local"), local);
        if (j > 0) {
          c.Flag(f.Flag("data_parallel_start_rank"),
                 layout.StartRank(static_cast<int>(j), start,
                                  segs[0].gpus / rank_gpus, local));
        }
        c.Flag(f.Flag("data_parallel_address"), layout.Addr(head.node));
        c.Flag(f.Flag("data_parallel_rpc_port"), 13345 + slot);
        if (j == 0) {
          c.Flag(f.Flag("port"), port);
        } else {
          c.Switch(f.Flag("headless"));
        }
        start += local;
        out.commands.push_back(std::move(c));
      }
      continue;
    }
    if (v_dp == 1 && EqualSegments(segs) && f.Has("nnodes")) {
      // One TP/PP group over equal shares of several nodes.
      for (size_t j = 0; j < segs.size(); ++j) {
        Command c = with_devices(base, segs[j]);
        c.comments.push_back(
            NodeComment(r, d.replicas, segs[j], j == 0 ? "head" : "headless"));
        c.Flag(f.Flag("nnodes"), static_cast<int>(segs.size()));
        c.Flag(f.Flag("node_rank"), layout.NodeRank(static_cast<int>(j)));
        c.Flag(f.Flag("master_addr"), layout.Addr(head.node));
        if (j == 0) {
          c.Flag(f.Flag("port"), port);
        } else {
          c.Switch(f.Flag("headless"));
        }
        out.commands.push_back(std::move(c));
      }
      continue;
    }
    // Ray places the workers: a group that does not split evenly over its
    // nodes (a partial node), DP ranks that span nodes, or a release without
    // the multiprocessing multi-node launcher.
    Command c = base;
    c.instance = r;
    c.gpus = head.gpus;
    c.node = head.node;
    c.port = port;
    c.ray = true;
    c.spans = segs;
    c.ray_dp = v_dp > 1;
    c.comments.push_back(RayComment(layout, segs));
    if (v_dp > 1) {
      if (f.Has("data_parallel_backend")) {
        if (ev.env.count("ray_dp_pack_strategy") > 0) {
          // A DP rank larger than a node must be packed across nodes.
          c.env.insert(c.env.begin(),
                       ev.env.at("ray_dp_pack_strategy") + "=span");
        }
        c.Flag(f.Flag("data_parallel_backend"), "ray");
      } else {
        out.warnings.push_back(
            "this vLLM release cannot place data-parallel ranks that span "
            "nodes; use a newer release (--engine-version) or a plan whose DP "
            "ranks fit a node.");
      }
    } else {
      c.Flag(f.Flag("distributed_executor_backend"), "ray");
    }
    c.Flag(f.Flag("port"), port);
    out.commands.push_back(std::move(c));
  }
  out.instances = d.replicas;
  if (d.replicas > 1) {
    out.header.push_back(fmt::format(
        "{} servers: put them behind a load balancer.", d.replicas));
  }
}

}  // namespace shardplan::client::emit_internal
