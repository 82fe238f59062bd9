// Renders shardplan.v1 responses for people (tables, the live progress line)
// and for machines (one-line proto JSON, a YAML deployment manifest). Pure
// functions of their inputs: no I/O, no clock.
#ifndef SHARDPLAN_CLIENT_RENDER_H_
#define SHARDPLAN_CLIENT_RENDER_H_

#include <string>

#include "absl/strings/string_view.h"
#include "shardplan/v1/shardplan.pb.h"

namespace shardplan::client {

// What the request asked for, for headings and the manifest.
struct RenderContext {
  std::string model;     // e.g. "llama-3.1-70b"
  std::string hardware;  // e.g. "h100-sxm-80gb"
  int gpus = 0;
  int gpus_per_node = 0;  // 0 = unknown / default
};

// One message as a single line of proto3 JSON (lowerCamelCase names), no
// trailing newline.
std::string ToJsonLine(const google::protobuf::Message& message);

// The live progress line shown on a terminal while a search streams:
// "rl  1,234 evals  best 12,345 tok/s  1.07x vs Megatron  12.3 s".
// `method` names the search when the update carries no summary yet;
// `elapsed_seconds` >= 0 replaces the update's own (the line keeps ticking
// between updates).
std::string ProgressLine(const shardplan::v1::PlanUpdate& update,
                         absl::string_view method = "",
                         double elapsed_seconds = -1);

// A byte count as "12.3 GB" (powers of 1000, like GPU datasheets).
std::string FormatBytes(double bytes);
// An integer-ish quantity with thousands separators: 12345.6 → "12,346".
std::string FormatCount(double value);

// Table of the prediction: throughput, TTFT, TPOT, memory per GPU, bottleneck,
// and the top `top_n` cost contributors of the decode and prefill phases.
std::string RenderPrediction(const shardplan::v1::Prediction& prediction,
                             int top_n = 5);

// Table of a plan: degrees, per-operator dimensions, placement (replica/stage →
// nodes). `moe` false hides the expert operators (router, expert_*).
std::string RenderPlan(const shardplan::v1::Plan& plan, bool moe);

// The final plan of a search for people: heading, plan, prediction, search
// summary.
// The best aggregated and best disaggregated plans of a search
// (options.disaggregation auto) side by side; "" when the summary has neither.
std::string RenderAggregatedVsDisaggregated(
    const shardplan::v1::SearchSummary& summary);

std::string RenderPlanUpdate(const shardplan::v1::PlanUpdate& update,
                             const RenderContext& context);

// `shardplan evaluate` output.
std::string RenderEvaluateResponse(
    const shardplan::v1::EvaluateResponse& response,
    const RenderContext& context);

// `shardplan replan` output: the running plan (as the server evaluated it on
// its cluster) and the new one side by side (degrees, throughput, TTFT, TPOT,
// memory per GPU), then the transition: bytes, where from, KV lost, time,
// rolling, and what each node loads.
std::string RenderReplan(const shardplan::v1::EvaluateResponse& current,
                         const RenderContext& current_context,
                         const shardplan::v1::PlanUpdate& next,
                         const RenderContext& context);

// `shardplan catalog` output: models (with size and kind) and hardware.
std::string RenderCatalog(const shardplan::v1::ListCatalogResponse& catalog);

// `--output yaml`: a deployment manifest of the final plan (parallelism levels,
// per-operator split dimensions, placement and node groups, predicted figures).
std::string RenderYamlManifest(const shardplan::v1::PlanUpdate& update,
                               const RenderContext& context);

}  // namespace shardplan::client

#endif  // SHARDPLAN_CLIENT_RENDER_H_
