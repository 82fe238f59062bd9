#include "client/render.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/internal/manifest_keys.h"
#include "fmt/format.h"
#include "google/protobuf/util/json_util.h"
#include "yaml-cpp/yaml.h"

namespace shardplan::client {

namespace manifest = internal::manifest;
namespace {

using shardplan::v1::EvaluateResponse;
using shardplan::v1::ListCatalogResponse;
using shardplan::v1::ModelSpec;
using shardplan::v1::OperatorCost;
using shardplan::v1::Plan;
using shardplan::v1::PlanUpdate;
using shardplan::v1::Prediction;

constexpr const char* kOperatorOrder[] = {
    "embedding", "qkv",    "attention", "attn_out",    "mlp_up",
    "mlp_down",  "router", "expert_up", "expert_down", "lm_head"};

std::string Ms(double ms) {
  if (ms >= 10000) return fmt::format("{:.1f} s", ms / 1e3);
  if (ms >= 1000) return fmt::format("{:.2f} s", ms / 1e3);
  return fmt::format("{:.1f} ms", ms);
}

// Rounds for the manifest, so that it reads "34475.7", not
// "34475.701439767101".
double Round(double value, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(value * scale) / scale;
}

bool IsMoeOperator(absl::string_view op) {
  return op == "router" || op == "expert_up" || op == "expert_down";
}

// Whether the plan/prediction belong to a mixture-of-experts model: expert
// parallelism, or expert operators with a cost.
bool LooksMoe(const Plan& plan, const Prediction& prediction) {
  if (plan.ep() > 1) return true;
  for (const auto& op : prediction.operators()) {
    if (IsMoeOperator(op.operator_()) && op.total_seconds() > 0) return true;
  }
  return false;
}

// Number of nodes the plan's placement uses (0 when it has none).
int PlacementNodes(const Plan& plan) {
  int max_node = -1;
  for (const auto& s : plan.placement()) {
    for (int n : s.nodes()) max_node = std::max(max_node, n);
  }
  return max_node + 1;
}
std::string Seconds(double s) {
  if (s <= 0) return "-";
  if (s >= 1) return fmt::format("{:.2f} s", s);
  if (s >= 1e-3) return fmt::format("{:.2f} ms", s * 1e3);
  return fmt::format("{:.1f} us", s * 1e6);
}

std::string DimOf(const Plan& plan, absl::string_view op) {
  for (const auto& s : plan.operator_sharding()) {
    if (s.operator_() == op) return s.dim();
  }
  return "";
}

std::string FormatParams(double params) {
  if (params >= 1e12) return fmt::format("{:.2f}T", params / 1e12);
  if (params >= 1e9) return fmt::format("{:.1f}B", params / 1e9);
  return fmt::format("{:.0f}M", params / 1e6);
}

std::string ClusterLabel(const RenderContext& c, const Plan& plan) {
  std::string out =
      absl::StrCat(c.gpus, " x ", c.hardware.empty() ? "gpu" : c.hardware);
  const int nodes = c.gpus_per_node > 0
                        ? (c.gpus + c.gpus_per_node - 1) / c.gpus_per_node
                        : PlacementNodes(plan);
  if (nodes <= 0 || c.gpus <= 0) return out;
  if (c.gpus_per_node > 0 || nodes == 1) {
    absl::StrAppend(&out, " (", nodes, nodes == 1 ? " node" : " nodes", " of ",
                    c.gpus_per_node > 0 ? c.gpus_per_node : c.gpus, ")");
    return out;
  }
  // The server took the hardware's node size, which the request does not
  // carry: the placement's GPUs per node say it (12 GPUs on nodes of 8 are
  // 8 + 4, not 2 x 6); a placement without them claims no size.
  std::vector<int> per_node(static_cast<size_t>(nodes), 0);
  bool complete = true;
  for (const auto& s : plan.placement()) {
    if (s.node_gpus_size() != s.nodes_size()) complete = false;
    for (int i = 0; complete && i < s.nodes_size(); ++i) {
      per_node[static_cast<size_t>(s.nodes(i))] += s.node_gpus(i);
    }
  }
  int total = 0;
  for (int g : per_node) total += g;
  if (!complete || total != c.gpus) {
    absl::StrAppend(&out, " (", nodes, " nodes)");
  } else if (std::all_of(per_node.begin(), per_node.end(),
                         [&](int g) { return g == per_node[0]; })) {
    absl::StrAppend(&out, " (", nodes, " nodes of ", per_node[0], ")");
  } else {
    absl::StrAppend(&out, " (", nodes,
                    " nodes: ", absl::StrJoin(per_node, " + "), ")");
  }
  return out;
}

void EmitPrediction(YAML::Emitter& out, const Prediction& p, double speedup) {
  out << YAML::Key << "predicted" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "feasible" << YAML::Value << p.feasible();
  if (!p.feasible())
    out << YAML::Key << "infeasibleReason" << YAML::Value
        << p.infeasible_reason();
  out << YAML::Key << "outputTokensPerS" << YAML::Value
      << Round(p.output_tokens_per_s(), 1);
  out << YAML::Key << "outputTokensPerSPerGpu" << YAML::Value
      << Round(p.output_tokens_per_s_per_gpu(), 2);
  out << YAML::Key << "ttftMs" << YAML::Value << Round(p.ttft_ms(), 3);
  out << YAML::Key << "tpotMs" << YAML::Value << Round(p.tpot_ms(), 3);
  out << YAML::Key << "batchSize" << YAML::Value << p.batch_size();
  if (p.batch_per_rank() > 0)
    out << YAML::Key << "batchPerRank" << YAML::Value << p.batch_per_rank();
  if (speedup > 0)
    out << YAML::Key << "speedupVsMegatron" << YAML::Value << Round(speedup, 4);
  out << YAML::Key << "bottleneck" << YAML::Value << p.bottleneck();
  const auto& m = p.memory_per_gpu();
  out << YAML::Key << "memoryPerGpuBytes" << YAML::Value << YAML::BeginMap;
  const auto bytes = [](double b) {
    return static_cast<int64_t>(std::llround(b));
  };
  out << YAML::Key << "weights" << YAML::Value << bytes(m.weights_bytes());
  out << YAML::Key << "kvCache" << YAML::Value << bytes(m.kv_cache_bytes());
  out << YAML::Key << "activations" << YAML::Value
      << bytes(m.activations_bytes());
  out << YAML::Key << "total" << YAML::Value << bytes(m.total_bytes());
  out << YAML::Key << "capacity" << YAML::Value << bytes(m.capacity_bytes());
  out << YAML::EndMap;
  out << YAML::EndMap;
}

}  // namespace

std::string ToJsonLine(const google::protobuf::Message& message) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = false;
  options.preserve_proto_field_names = false;
  // Our own messages always serialise; an error would leave `json` empty.
  (void)google::protobuf::util::MessageToJsonString(message, &json, options);
  return json;
}

std::string FormatCount(double value) {
  const long long n = std::llround(value);
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  const int len = static_cast<int>(digits.size());
  for (int i = 0; i < len; ++i) {
    if (i > 0 && (len - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return n < 0 ? "-" + out : out;
}

std::string FormatBytes(double bytes) {
  if (bytes >= 1e12) return fmt::format("{:.2f} TB", bytes / 1e12);
  if (bytes >= 1e9) return fmt::format("{:.1f} GB", bytes / 1e9);
  if (bytes >= 1e6) return fmt::format("{:.1f} MB", bytes / 1e6);
  if (bytes >= 1e3) return fmt::format("{:.1f} kB", bytes / 1e3);
  return fmt::format("{:.0f} B", bytes);
}

std::string ProgressLine(const PlanUpdate& update, absl::string_view method,
                         double elapsed_seconds) {
  std::string name = update.summary().method();
  if (name.empty()) name = std::string(method.empty() ? "search" : method);
  const std::string best =
      update.prediction().feasible()
          ? absl::StrCat(FormatCount(update.prediction().output_tokens_per_s()),
                         " tok/s")
          : std::string("no feasible plan yet");
  return fmt::format(
      "{}  {} evals  best {}  {:.2f}x vs Megatron  {:.1f} s", name,
      FormatCount(update.evaluations()), best, update.speedup_vs_baseline(),
      elapsed_seconds >= 0 ? elapsed_seconds : update.elapsed_seconds());
}

namespace {

std::string PoolLine(const char* name, const Plan& pool, int instances) {
  return fmt::format("{:<16}{} x (dp {}  tp {}  pp {}  ep {}{})\n", name,
                     instances, std::max(1, pool.dp()), std::max(1, pool.tp()),
                     std::max(1, pool.pp()), std::max(1, pool.ep()),
                     pool.batch_size() > 0
                         ? absl::StrCat("  batch ", pool.batch_size())
                         : std::string());
}

}  // namespace

std::string RenderPlan(const Plan& plan, bool moe) {
  std::string out;
  if (plan.has_prefill() && plan.has_decode()) {
    absl::StrAppend(&out,
                    "Disaggregated   prefill and decode on separate pools\n",
                    PoolLine("Prefill pool", plan.prefill(),
                             std::max(1, plan.prefill_instances())),
                    PoolLine("Decode pool", plan.decode(),
                             std::max(1, plan.decode_instances())));
    return out;
  }
  if (plan.replicas() > 1) {
    absl::StrAppend(&out,
                    fmt::format("Replicas        {} independent instances\n",
                                plan.replicas()));
  }
  absl::StrAppend(
      &out, fmt::format("Parallelism     dp {}  tp {}  pp {}  ep {}", plan.dp(),
                        plan.tp(), plan.pp(), std::max(1, plan.ep())));
  if (plan.micro_batches() > 0)
    absl::StrAppend(&out, "  micro-batches ", plan.micro_batches());
  if (plan.batch_size() > 0)
    absl::StrAppend(&out, "  batch ", plan.batch_size());
  absl::StrAppend(&out, "\n");
  if (plan.stage_layers_size() > 0) {
    absl::StrAppend(&out, "Stage layers    ",
                    absl::StrJoin(plan.stage_layers(), " / "), "\n");
  }
  // Operator dims, in decision order; operators the server did not list are
  // omitted.
  std::vector<std::string> cells;
  for (const char* op : kOperatorOrder) {
    if (!moe && IsMoeOperator(op)) continue;
    const std::string dim = DimOf(plan, op);
    if (!dim.empty()) cells.push_back(fmt::format("{:<11} {:<9}", op, dim));
  }
  for (const auto& s : plan.operator_sharding()) {
    if (std::find(std::begin(kOperatorOrder), std::end(kOperatorOrder),
                  s.operator_()) == std::end(kOperatorOrder)) {
      cells.push_back(fmt::format("{:<11} {:<9}", s.operator_(), s.dim()));
    }
  }
  if (!cells.empty()) {
    absl::StrAppend(&out, "\nOperator sharding\n");
    for (size_t i = 0; i < cells.size(); i += 3) {
      std::string row = "  ";
      for (size_t j = i; j < std::min(cells.size(), i + 3); ++j)
        absl::StrAppend(&row, cells[j], "  ");
      while (!row.empty() && row.back() == ' ') row.pop_back();
      absl::StrAppend(&out, row, "\n");
    }
  }
  if (plan.placement_size() > 0) {
    absl::StrAppend(&out, "\nPlacement\n");
    absl::StrAppend(
        &out, fmt::format("  {:>7} {:>5} {:>12} {:<16} {:<12} {}\n", "replica",
                          "stage", "layers", "nodes", "node group", "tp link"));
    const int kMaxRows = 16;
    int rows = 0;
    for (const auto& s : plan.placement()) {
      if (++rows > kMaxRows) {
        absl::StrAppend(&out, fmt::format("  ... {} more\n",
                                          plan.placement_size() - kMaxRows));
        break;
      }
      const std::string layers = fmt::format(
          "{}-{}", s.first_layer(), s.first_layer() + s.num_layers() - 1);
      absl::StrAppend(
          &out,
          fmt::format("  {:>7} {:>5} {:>12} {:<16} {:<12} {}\n", s.replica(),
                      s.stage(), layers, absl::StrJoin(s.nodes(), ","),
                      s.node_group().empty() ? "-" : s.node_group(),
                      s.tp_spans_nodes() ? "InfiniBand" : "NVLink"));
    }
  }
  return out;
}

std::string RenderPrediction(const Prediction& p, int top_n) {
  std::string out;
  if (!p.feasible()) {
    absl::StrAppend(&out, "Feasible        NO: ", p.infeasible_reason(), "\n");
  }
  absl::StrAppend(&out,
                  fmt::format("Throughput      {} tok/s  ({} tok/s per GPU)\n",
                              FormatCount(p.output_tokens_per_s()),
                              FormatCount(p.output_tokens_per_s_per_gpu())));
  // With attention dp the replica's requests spread over its ranks.
  const std::string load =
      p.batch_per_rank() > 0 && p.batch_per_rank() != p.batch_size()
          ? fmt::format("{} in flight per {}, {} per attention rank",
                        p.batch_size(),
                        p.disaggregated() ? "decode instance" : "replica",
                        p.batch_per_rank())
          : fmt::format("batch {} per replica", p.batch_size());
  absl::StrAppend(&out, fmt::format("Latency         TTFT {}  TPOT {}  ({})\n",
                                    Ms(p.ttft_ms()), Ms(p.tpot_ms()), load));
  if (p.max_request_rate() > 0 || p.ttft_ms_p99() > 0) {
    // Open-loop traffic (workload.request_rate): percentiles at the rate.
    absl::StrAppend(
        &out, fmt::format("At the rate     TTFT p50/p90/p99 {}/{}/{}  TPOT "
                          "p50/p90/p99 {}/{}/{}\n",
                          Ms(p.ttft_ms_p50()), Ms(p.ttft_ms_p90()),
                          Ms(p.ttft_ms_p99()), Ms(p.tpot_ms_p50()),
                          Ms(p.tpot_ms_p90()), Ms(p.tpot_ms_p99())));
    if (p.has_ttft_ms_p99_range()) {
      // The calibration bands carried through the queue (newer servers).
      const auto band = [](const shardplan::v1::Range& r) {
        return fmt::format("{}-{}", Ms(r.low()), Ms(r.high()));
      };
      absl::StrAppend(
          &out, fmt::format(
                    "  p10-p90 band  TTFT p50 {}  p99 {}  TPOT p50 {}  "
                    "p99 {}\n",
                    band(p.ttft_ms_p50_range()), band(p.ttft_ms_p99_range()),
                    band(p.tpot_ms_p50_range()), band(p.tpot_ms_p99_range())));
    }
    absl::StrAppend(
        &out, fmt::format("Capacity        max {:.3g} req/s within the SLOs  "
                          "goodput {:.3g} req/s\n",
                          p.max_request_rate(), p.goodput_requests_per_s()));
  }
  if (p.cost_per_hour() > 0) {
    absl::StrAppend(
        &out,
        fmt::format("Cost            ${:.2f}/hour  ${:.3f} per "
                    "million output tokens\n",
                    p.cost_per_hour(), p.cost_per_million_output_tokens()));
  }
  if (p.has_tpot_ms_range()) {
    // Older servers send no ranges; print them only when present.
    const auto& t = p.output_tokens_per_s_range();
    absl::StrAppend(
        &out,
        fmt::format("Range p10-p90   {}-{} tok/s  TTFT {}-{}  TPOT {}-{}\n",
                    FormatCount(t.low()), FormatCount(t.high()),
                    Ms(p.ttft_ms_range().low()), Ms(p.ttft_ms_range().high()),
                    Ms(p.tpot_ms_range().low()), Ms(p.tpot_ms_range().high())));
  }
  if (p.disaggregated()) {
    absl::StrAppend(
        &out,
        fmt::format(
            "Pools           prefill {:.2f} req/s  decode {:.2f} req/s  "
            "prefill queue {} (load {:.0f}%)\n",
            p.prefill_pool().requests_per_s(), p.decode_pool().requests_per_s(),
            Ms(p.prefill_queue_ms()), 100 * p.prefill_utilization()),
        fmt::format("KV transfer     {} per request over {}, {} exposed\n",
                    FormatBytes(p.kv_transfer_bytes()), p.kv_transfer_link(),
                    Ms(p.kv_transfer_ms())),
        fmt::format(
            "Prefill memory  weights {}  KV cache {}  per GPU\n",
            FormatBytes(p.prefill_pool().memory_per_gpu().weights_bytes()),
            FormatBytes(p.prefill_pool().memory_per_gpu().kv_cache_bytes())));
  }
  if (!p.calibration_profile().empty())
    absl::StrAppend(&out, "Calibration     ", p.calibration_profile(), "\n");
  for (const std::string& note : p.validation())
    absl::StrAppend(&out, "Validation      ", note, "\n");
  const auto& m = p.memory_per_gpu();
  absl::StrAppend(
      &out, fmt::format(
                "Memory per GPU  weights {}  KV cache {}  activations {}  "
                "total {} of {}\n",
                FormatBytes(m.weights_bytes()), FormatBytes(m.kv_cache_bytes()),
                FormatBytes(m.activations_bytes()),
                FormatBytes(m.total_bytes()), FormatBytes(m.capacity_bytes())));
  if (!p.bottleneck().empty())
    absl::StrAppend(&out, "Bottleneck      ", p.bottleneck(), "\n");
  for (const std::string& link : p.cross_node())
    absl::StrAppend(&out, "Across nodes    ", link, "\n");
  if (!p.multi_node_reason().empty())
    absl::StrAppend(&out, "Multi-node      ", p.multi_node_reason(), "\n");
  for (const auto& link : p.communication()) {
    absl::StrAppend(&out,
                    fmt::format("Traffic/GPU     {:<10} decode {} per step, "
                                "prefill {} per request\n",
                                link.link(), FormatBytes(link.decode_bytes()),
                                FormatBytes(link.prefill_bytes())));
  }
  for (const char* phase : {"decode", "prefill"}) {
    std::vector<const OperatorCost*> ops;
    double sum = 0;
    for (const auto& op : p.operators()) {
      if (op.phase() == phase) {
        ops.push_back(&op);
        sum += op.total_seconds();
      }
    }
    if (ops.empty() || sum <= 0) continue;
    std::stable_sort(ops.begin(), ops.end(),
                     [](const OperatorCost* a, const OperatorCost* b) {
                       return a->total_seconds() > b->total_seconds();
                     });
    absl::StrAppend(
        &out, fmt::format("\nTop cost contributors ({}{})\n", phase,
                          std::string(phase) == "decode" ? ", one iteration"
                                                         : ", one request"));
    absl::StrAppend(
        &out,
        fmt::format("  {:<12} {:>10} {:>10} {:>10} {:>10} {:>6}\n", "operator",
                    "compute", "memory", "comm", "total", "share"));
    for (int i = 0; i < std::min<int>(top_n, ops.size()); ++i) {
      const OperatorCost& op = *ops[i];
      absl::StrAppend(
          &out, fmt::format("  {:<12} {:>10} {:>10} {:>10} {:>10} {:>5.1f}%\n",
                            op.operator_(), Seconds(op.compute_seconds()),
                            Seconds(op.memory_seconds()),
                            Seconds(op.communication_seconds()),
                            Seconds(op.total_seconds()),
                            100.0 * op.total_seconds() / sum));
    }
  }
  return out;
}

std::string RenderAggregatedVsDisaggregated(
    const shardplan::v1::SearchSummary& summary) {
  if (!summary.has_best_aggregated() && !summary.has_best_disaggregated()) {
    return "";
  }
  auto cell = [](bool has, const Prediction& p, int field) -> std::string {
    if (!has) return "-";
    switch (field) {
      case 0:
        return FormatCount(p.output_tokens_per_s_per_gpu());
      case 1:
        return Ms(p.ttft_ms());
      case 2:
        return Ms(p.tpot_ms());
      default:
        return p.feasible() ? "yes" : "no";
    }
  };
  const bool a = summary.has_best_aggregated();
  const bool d = summary.has_best_disaggregated();
  std::string out = fmt::format("\n{:<18}{:>14}{:>16}\n", "Best of each",
                                "aggregated", "disaggregated");
  const char* rows[] = {"tok/s per GPU", "TTFT", "TPOT", "feasible"};
  for (int i = 0; i < 4; ++i) {
    absl::StrAppend(&out,
                    fmt::format("{:<18}{:>14}{:>16}\n", rows[i],
                                cell(a, summary.best_aggregated(), i),
                                cell(d, summary.best_disaggregated(), i)));
  }
  return out;
}

std::string RenderPlanUpdate(const PlanUpdate& update,
                             const RenderContext& context) {
  std::string out;
  absl::StrAppend(&out, fmt::format("Plan for {} on {}\n", context.model,
                                    ClusterLabel(context, update.plan())));
  const auto& s = update.summary();
  absl::StrAppend(
      &out,
      fmt::format(
          "Search          {}  {} evaluations  {:.1f} s{}{}\n",
          s.method().empty() ? "-" : s.method(),
          FormatCount(update.evaluations()), update.elapsed_seconds(),
          s.warm_started() ? (s.warm_start_source().empty()
                                  ? std::string("  warm start")
                                  : absl::StrCat("  warm start (",
                                                 s.warm_start_source(), ")"))
                           : std::string(),
          s.stop_reason().empty() ? ""
                                  : absl::StrCat("  stop: ", s.stop_reason())));
  if (update.has_chosen_cluster()) {
    const auto& c = update.chosen_cluster();
    absl::StrAppend(
        &out, fmt::format("Chosen cluster  {} x {} GPUs ({} per node)\n\n",
                          c.hardware(), c.num_gpus(), c.gpus_per_node()));
  } else {
    absl::StrAppend(
        &out,
        fmt::format("Speedup         {:.3f}x over the Megatron baseline\n\n",
                    update.speedup_vs_baseline()));
  }
  absl::StrAppend(
      &out,
      RenderPlan(update.plan(), LooksMoe(update.plan(), update.prediction())),
      "\n");
  absl::StrAppend(&out, RenderPrediction(update.prediction()));
  absl::StrAppend(&out, RenderAggregatedVsDisaggregated(s));
  return out;
}

std::string RenderEvaluateResponse(const EvaluateResponse& response,
                                   const RenderContext& context) {
  std::string out;
  const std::string model =
      response.model().name().empty() ? context.model : response.model().name();
  absl::StrAppend(&out, fmt::format("Prediction for {} on {}\n\n", model,
                                    ClusterLabel(context, response.plan())));
  absl::StrAppend(
      &out,
      RenderPlan(response.plan(),
                 response.model().num_experts() > 0 ||
                     LooksMoe(response.plan(), response.prediction())),
      "\n");
  absl::StrAppend(&out, RenderPrediction(response.prediction()));
  return out;
}

namespace {

std::string Degrees(const Plan& plan) {
  std::string out =
      fmt::format("replicas {} dp {} tp {} pp {}", std::max(1, plan.replicas()),
                  plan.dp(), plan.tp(), plan.pp());
  if (plan.ep() > 1) absl::StrAppend(&out, " ep ", plan.ep());
  return out;
}

}  // namespace

std::string RenderReplan(const EvaluateResponse& current,
                         const RenderContext& current_context,
                         const PlanUpdate& next, const RenderContext& context) {
  const Prediction& a = current.prediction();
  const Prediction& b = next.prediction();
  std::string out = fmt::format("Re-plan of {}\n", context.model);
  const auto row = [&out](const std::string& what, const std::string& was,
                          const std::string& now) {
    absl::StrAppend(&out, fmt::format("  {:<16}{:<34}{}\n", what, was, now));
  };
  row("", "running", "new");
  row("cluster", ClusterLabel(current_context, current.plan()),
      ClusterLabel(context, next.plan()));
  row("plan", Degrees(current.plan()), Degrees(next.plan()));
  row("throughput", FormatCount(a.output_tokens_per_s()) + " tok/s",
      FormatCount(b.output_tokens_per_s()) + " tok/s");
  row("per GPU", FormatCount(a.output_tokens_per_s_per_gpu()) + " tok/s",
      FormatCount(b.output_tokens_per_s_per_gpu()) + " tok/s");
  row("TTFT", Ms(a.ttft_ms()), Ms(b.ttft_ms()));
  row("TPOT", Ms(a.tpot_ms()), Ms(b.tpot_ms()));
  row("memory per GPU",
      FormatBytes(a.memory_per_gpu().total_bytes()) + " (weights " +
          FormatBytes(a.memory_per_gpu().weights_bytes()) + ")",
      FormatBytes(b.memory_per_gpu().total_bytes()) + " (weights " +
          FormatBytes(b.memory_per_gpu().weights_bytes()) + ")");
  if (!b.feasible()) {
    absl::StrAppend(&out, "  new plan infeasible: ", b.infeasible_reason(),
                    "\n");
  }
  const shardplan::v1::Transition& t = next.transition();
  absl::StrAppend(
      &out,
      fmt::format("Transition      {} to load ({} from peers, {} from "
                  "storage), at most {} per GPU\n",
                  FormatBytes(t.total_bytes()), FormatBytes(t.peer_bytes()),
                  FormatBytes(t.storage_bytes()),
                  FormatBytes(t.max_bytes_per_gpu())));
  absl::StrAppend(
      &out, fmt::format("                {} GPUs unchanged, KV cache lost {}, "
                        "about {}, {}\n",
                        t.gpus_unchanged(), FormatBytes(t.kv_bytes_lost()),
                        t.estimated_seconds() > 0
                            ? fmt::format("{:.1f} s", t.estimated_seconds())
                            : "0 s",
                        t.rolling() ? "rolling (replica by replica)"
                                    : "not rolling (service stops)"));
  for (const shardplan::v1::NodeLoad& n : t.node_loads()) {
    absl::StrAppend(
        &out,
        fmt::format("  node {}{}: {}\n", n.node(),
                    n.node_group().empty() ? "" : " (" + n.node_group() + ")",
                    n.what()));
  }
  return out;
}

std::string RenderCatalog(const ListCatalogResponse& catalog) {
  // Sizes, dtypes and checkpoints are the server's (model_info), so a model
  // added to the catalog shows up complete without a client change.
  std::map<std::string, const shardplan::v1::CatalogModelInfo*> info;
  for (const auto& i : catalog.model_info()) info[i.name()] = &i;
  std::string out = "Models\n";
  absl::StrAppend(
      &out,
      fmt::format("  {:<20} {:<10} {:>8} {:>8} {:>7} {:>7} {:>9}  {:<9} {:<5} "
                  "{}\n",
                  "name", "family", "params", "active", "layers", "hidden",
                  "experts", "attention", "dtype", "checkpoint"));
  for (const ModelSpec& m : catalog.models()) {
    const std::string experts =
        m.num_experts() > 0
            ? fmt::format("{}/{}", m.experts_per_token(), m.num_experts())
            : "-";
    const std::string attention =
        m.kv_lora_rank() > 0 ? std::string("MLA")
                             : fmt::format("GQA {}/{}", m.num_key_value_heads(),
                                           m.num_attention_heads());
    const auto it = info.find(m.name());
    const shardplan::v1::CatalogModelInfo* i =
        it == info.end() ? nullptr : it->second;
    const std::string params = i != nullptr && i->total_params() > 0
                                   ? FormatParams(i->total_params())
                                   : "-";
    const std::string active =
        i != nullptr && i->moe() && i->active_params() > 0
            ? FormatParams(i->active_params())
            : "-";
    const std::string dtype =
        i != nullptr && !i->native_dtype().empty() ? i->native_dtype() : "-";
    std::string checkpoint = i != nullptr && !i->hugging_face_id().empty()
                                 ? i->hugging_face_id()
                                 : "-";
    // What --emit launches on GPUs with FP4 tensor cores instead.
    if (!m.nvfp4_hugging_face_id().empty()) {
      absl::StrAppend(&checkpoint,
                      " (FP4 tensor cores: ", m.nvfp4_hugging_face_id(), ")");
    }
    absl::StrAppend(
        &out,
        fmt::format("  {:<20} {:<10} {:>8} {:>8} {:>7} {:>7} {:>9}  {:<9} "
                    "{:<5} {}\n",
                    m.name(), m.family(), params, active, m.num_layers(),
                    m.hidden_size(), experts, attention, dtype, checkpoint));
  }
  absl::StrAppend(&out, "\nHardware\n");
  // FP4 "-": no FP4 tensor cores (FP4 weights are dequantised). The NVLink
  // domain is the GPUs one NVLink fabric joins: one node, or an NVL72 rack
  // of many nodes.
  absl::StrAppend(
      &out,
      fmt::format("  {:<18} {:>10} {:>10} {:>10} {:>9} {:>12} {:>12} {:>9} "
                  "{:>10}\n",
                  "name", "BF16 TF/s", "FP8 TF/s", "FP4 TF/s", "HBM", "HBM BW",
                  "NVLink/GPU", "GPUs/node", "NVL domain"));
  for (const auto& h : catalog.hardware()) {
    const std::string fp4 =
        h.peak_fp4_flops_per_s() > 0
            ? fmt::format("{:.0f}", h.peak_fp4_flops_per_s() / 1e12)
            : "-";
    const int domain = h.nvlink_domain_gpus() > 0 ? h.nvlink_domain_gpus()
                                                  : h.default_gpus_per_node();
    absl::StrAppend(
        &out,
        fmt::format("  {:<18} {:>10.0f} {:>10.0f} {:>10} {:>9} {:>10.2f}TB/s "
                    "{:>8.0f}GB/s {:>9} {:>10}\n",
                    h.name(), h.peak_bf16_flops_per_s() / 1e12,
                    h.peak_fp8_flops_per_s() / 1e12, fp4,
                    FormatBytes(h.hbm_bytes()), h.hbm_bytes_per_s() / 1e12,
                    h.intra_node_bytes_per_s() / 1e9, h.default_gpus_per_node(),
                    domain));
  }
  auto list = [&out](const char* title, const auto& values) {
    if (values.empty()) return;
    absl::StrAppend(
        &out, fmt::format("\n{:<11}{}", title, absl::StrJoin(values, ", ")));
  };
  list("Methods", catalog.methods());
  list("Dtypes", catalog.dtypes());
  list("Operators", catalog.operators());
  list("Dims", catalog.dims());
  absl::StrAppend(&out, "\n");
  return out;
}

std::string RenderYamlManifest(const PlanUpdate& update,
                               const RenderContext& context) {
  const Plan& plan = update.plan();
  YAML::Emitter out;
  out.SetDoublePrecision(15);
  out << YAML::BeginMap;
  out << YAML::Key << manifest::kApiVersion << YAML::Value
      << manifest::kApiVersionValue;
  out << YAML::Key << manifest::kKind << YAML::Value << manifest::kKindValue;
  out << YAML::Key << manifest::kModel << YAML::Value << context.model;
  out << YAML::Key << manifest::kCluster << YAML::Value << YAML::BeginMap;
  out << YAML::Key << manifest::kHardware << YAML::Value << context.hardware;
  out << YAML::Key << manifest::kGpus << YAML::Value << context.gpus;
  if (context.gpus_per_node > 0) {
    out << YAML::Key << manifest::kGpusPerNode << YAML::Value
        << context.gpus_per_node;
  }
  out << YAML::EndMap;

  // One layout (an aggregated plan, or one pool of a disaggregated plan):
  // its degrees, operator dims and placement; `unit` names its replicas in
  // the nodes listing ("replica", "prefill instance", "decode instance").
  std::map<int, std::vector<std::string>> hosted;
  std::map<int, std::string> group_of;
  auto layout = [&](const Plan& p, int batch, const std::string& unit) {
    out << YAML::Key << manifest::kParallelism << YAML::Value << YAML::BeginMap;
    out << YAML::Key << manifest::kReplicas << YAML::Value
        << std::max(1, p.replicas());
    out << YAML::Key << manifest::kData << YAML::Value << p.dp();
    out << YAML::Key << manifest::kTensor << YAML::Value << p.tp();
    out << YAML::Key << manifest::kPipeline << YAML::Value << p.pp();
    out << YAML::Key << manifest::kExpert << YAML::Value << std::max(1, p.ep());
    out << YAML::Key << manifest::kMicroBatches << YAML::Value
        << p.micro_batches();
    out << YAML::Key << manifest::kBatchSizePerReplica << YAML::Value
        << (p.batch_size() > 0 ? p.batch_size() : batch);
    if (p.stage_layers_size() > 0) {
      out << YAML::Key << manifest::kStageLayers << YAML::Value << YAML::Flow
          << YAML::BeginSeq;
      for (int l : p.stage_layers()) out << l;
      out << YAML::EndSeq;
    }
    out << YAML::EndMap;

    out << YAML::Key << manifest::kOperatorSharding << YAML::Value
        << YAML::BeginMap;
    for (const auto& s : p.operator_sharding()) {
      out << YAML::Key << s.operator_() << YAML::Value << s.dim();
    }
    out << YAML::EndMap;

    // Node groups: which nodes each (replica, stage) runs on.
    out << YAML::Key << "placement" << YAML::Value << YAML::BeginSeq;
    for (const auto& s : p.placement()) {
      out << YAML::BeginMap;
      out << YAML::Key << "replica" << YAML::Value << s.replica();
      out << YAML::Key << "stage" << YAML::Value << s.stage();
      out << YAML::Key << "layers" << YAML::Value << YAML::Flow
          << YAML::BeginSeq << s.first_layer()
          << (s.first_layer() + s.num_layers() - 1) << YAML::EndSeq;
      out << YAML::Key << "nodes" << YAML::Value << YAML::Flow
          << YAML::BeginSeq;
      for (int n : s.nodes()) out << n;
      out << YAML::EndSeq;
      if (!s.node_group().empty())
        out << YAML::Key << "nodeGroup" << YAML::Value << s.node_group();
      out << YAML::Key << "tensorParallelLink" << YAML::Value
          << (s.tp_spans_nodes() ? "infiniband" : "nvlink");
      out << YAML::EndMap;
      for (int n : s.nodes()) {
        hosted[n].push_back(
            absl::StrCat(unit, " ", s.replica(), " stage ", s.stage()));
        if (!s.node_group().empty()) group_of[n] = s.node_group();
      }
    }
    out << YAML::EndSeq;
  };
  if (plan.has_prefill() && plan.has_decode()) {
    // Disaggregated: each pool's layout under its own key (the top-level
    // parallelism of an aggregated plan would read as zeros).
    out << YAML::Key << "disaggregated" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "prefillInstances" << YAML::Value
        << plan.prefill_instances();
    out << YAML::Key << "decodeInstances" << YAML::Value
        << plan.decode_instances();
    out << YAML::Key << "prefill" << YAML::Value << YAML::BeginMap;
    layout(plan.prefill(), update.prediction().prefill_pool().batch_size(),
           "prefill instance");
    out << YAML::EndMap;
    out << YAML::Key << "decode" << YAML::Value << YAML::BeginMap;
    layout(plan.decode(), update.prediction().batch_size(), "decode instance");
    out << YAML::EndMap;
    out << YAML::EndMap;
  } else {
    layout(plan, update.prediction().batch_size(), "replica");
  }

  // Node groups: what each node hosts, for the orchestrator's node selectors.
  out << YAML::Key << "nodes" << YAML::Value << YAML::BeginSeq;
  for (const auto& [node, what] : hosted) {
    out << YAML::BeginMap;
    out << YAML::Key << "node" << YAML::Value << node;
    if (group_of.count(node)) {
      out << YAML::Key << "nodeGroup" << YAML::Value << group_of[node];
    }
    out << YAML::Key << "hosts" << YAML::Value << YAML::Flow << what;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;

  EmitPrediction(out, update.prediction(), update.speedup_vs_baseline());

  out << YAML::Key << "search" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "method" << YAML::Value << update.summary().method();
  out << YAML::Key << "evaluations" << YAML::Value << update.evaluations();
  out << YAML::Key << "elapsedSeconds" << YAML::Value
      << Round(update.elapsed_seconds(), 3);
  out << YAML::Key << "warmStarted" << YAML::Value
      << update.summary().warm_started();
  out << YAML::EndMap;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace shardplan::client
