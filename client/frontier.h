// The throughput-latency frontier and top plans of a search's final update, for
// people and tools: a terminal chart, a table of the top plans, CSV, and a PNG
// drawn by gnuplot (Debian gnuplot-nox). Rendering is pure; only
// WriteFrontierPng runs a program.
#ifndef SHARDPLAN_CLIENT_FRONTIER_H_
#define SHARDPLAN_CLIENT_FRONTIER_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "shardplan/v1/shardplan.pb.h"

namespace shardplan::client {

// A `width` x `height` character scatter of update.frontier: x = tokens/s per
// user, y = output tokens/s per GPU, each point `*` (`d` when disaggregated),
// the update's own plan `@` when it lies on the frontier; axis labels and a
// legend. "" when the update has no frontier.
std::string RenderFrontierChart(const shardplan::v1::PlanUpdate& update,
                                int width = 64, int height = 16);

// Table of update.top_plans: rank, degrees, batch, tokens/s, per GPU, TTFT,
// TPOT, speedup. "" when there are none.
std::string RenderTopPlans(const shardplan::v1::PlanUpdate& update);

// One header line, then one line per frontier point (best throughput per GPU
// first): tokens_per_s_per_user, output_tokens_per_s_per_gpu,
// output_tokens_per_s, ttft_ms, tpot_ms, batch_size, replicas, dp, tp, pp, ep,
// disaggregated.
std::string FrontierCsv(const shardplan::v1::PlanUpdate& update);

// The gnuplot script WriteFrontierPng runs: reads `csv_path` (FrontierCsv),
// writes a PNG to `png_path`.
std::string FrontierGnuplotScript(absl::string_view csv_path,
                                  absl::string_view png_path,
                                  absl::string_view title);

// Draws the frontier into `png_path` with gnuplot (`gnuplot` on PATH, or
// $SHARDPLAN_GNUPLOT). FAILED_PRECONDITION naming the Debian package when
// gnuplot is missing; INVALID_ARGUMENT when the update has no frontier;
// INTERNAL when gnuplot fails (its output in the message).
absl::Status WriteFrontierPng(const shardplan::v1::PlanUpdate& update,
                              const std::string& png_path,
                              absl::string_view title);

}  // namespace shardplan::client

#endif  // SHARDPLAN_CLIENT_FRONTIER_H_
