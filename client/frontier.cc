// Frontier chart, top plans, CSV and PNG (client/frontier.h).
#include "client/frontier.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/render.h"

namespace shardplan::client {
namespace {

using shardplan::v1::FrontierPoint;
using shardplan::v1::PlanUpdate;

// Both axes of the chart are logarithmic: a frontier spans batch 1 to
// hundreds, an order of magnitude or more on each axis.
struct LogAxis {
  double lo = 0, hi = 0;  // log10 of the range, padded
  int cells = 1;
  int Cell(double value) const {
    const double t = hi > lo ? (std::log10(value) - lo) / (hi - lo) : 0.5;
    return std::clamp(static_cast<int>(std::lround(t * (cells - 1))), 0,
                      cells - 1);
  }
};

LogAxis AxisOf(const std::vector<double>& values, int cells) {
  LogAxis axis;
  axis.cells = cells;
  axis.lo = std::log10(*std::min_element(values.begin(), values.end()));
  axis.hi = std::log10(*std::max_element(values.begin(), values.end()));
  if (axis.hi - axis.lo < 1e-9) {
    axis.lo -= 0.5;
    axis.hi += 0.5;
  }
  return axis;
}

std::string Degrees(const shardplan::v1::Plan& plan) {
  if (plan.has_prefill() || plan.has_decode()) {
    return absl::StrFormat("%dP(%s) + %dD(%s)", plan.prefill_instances(),
                           Degrees(plan.prefill()), plan.decode_instances(),
                           Degrees(plan.decode()));
  }
  return absl::StrFormat("r%d dp%d tp%d pp%d ep%d",
                         std::max(1, plan.replicas()), plan.dp(), plan.tp(),
                         plan.pp(), plan.ep());
}

// Whether frontier point `p` is the update's plan: the same plan, or a variant
// with the same predicted figures (the chart cannot tell them apart).
bool IsChosen(const FrontierPoint& p, const PlanUpdate& update) {
  if (p.plan().SerializeAsString() == update.plan().SerializeAsString()) {
    return true;
  }
  const shardplan::v1::Prediction& a = p.prediction();
  const shardplan::v1::Prediction& b = update.prediction();
  return a.output_tokens_per_s() == b.output_tokens_per_s() &&
         a.tpot_ms() == b.tpot_ms() && a.ttft_ms() == b.ttft_ms() &&
         a.batch_size() == b.batch_size();
}

}  // namespace

std::string RenderFrontierChart(const PlanUpdate& update, int width,
                                int height) {
  if (update.frontier().empty()) return "";
  width = std::max(width, 16);
  height = std::max(height, 4);
  std::vector<double> xs, ys;
  for (const FrontierPoint& p : update.frontier()) {
    xs.push_back(p.tokens_per_s_per_user());
    ys.push_back(p.output_tokens_per_s_per_gpu());
  }
  const LogAxis x_axis = AxisOf(xs, width);
  const LogAxis y_axis = AxisOf(ys, height);
  std::vector<std::string> grid(height, std::string(width, ' '));
  bool chosen_on_curve = false;
  for (const FrontierPoint& p : update.frontier()) {
    const bool chosen = IsChosen(p, update);
    chosen_on_curve = chosen_on_curve || chosen;
    char& cell = grid[height - 1 - y_axis.Cell(p.output_tokens_per_s_per_gpu())]
                     [x_axis.Cell(p.tokens_per_s_per_user())];
    if (cell == '@') continue;
    cell = chosen ? '@' : (p.disaggregated() ? 'd' : '*');
  }
  const std::string y_hi = FormatCount(std::pow(10, y_axis.hi));
  const std::string y_lo = FormatCount(std::pow(10, y_axis.lo));
  const size_t label = std::max(y_hi.size(), y_lo.size());
  std::string out =
      absl::StrCat("Throughput-latency frontier (", update.frontier_size(),
                   " plans; log scales)\n", std::string(label + 1, ' '),
                   "output tok/s per GPU\n");
  for (int row = 0; row < height; ++row) {
    std::string left(label, ' ');
    if (row == 0) left = absl::StrFormat("%*s", static_cast<int>(label), y_hi);
    if (row == height - 1) {
      left = absl::StrFormat("%*s", static_cast<int>(label), y_lo);
    }
    absl::StrAppend(&out, left, " |", grid[row], "\n");
  }
  absl::StrAppend(&out, std::string(label + 1, ' '), "+",
                  std::string(width, '-'), "\n");
  const std::string x_lo = FormatCount(std::pow(10, x_axis.lo));
  const std::string x_hi = FormatCount(std::pow(10, x_axis.hi));
  const int gap = std::max(
      1, width - static_cast<int>(x_lo.size()) - static_cast<int>(x_hi.size()));
  absl::StrAppend(&out, std::string(label + 2, ' '), x_lo,
                  std::string(gap, ' '), x_hi, "\n",
                  std::string(label + 2, ' '),
                  "tokens/s per user (1000 / TPOT ms)\n");
  absl::StrAppend(&out, "  * plan on the frontier",
                  chosen_on_curve ? "   @ the best plan above" : "",
                  "   d disaggregated\n");
  return out;
}

// Capacity searches: the best option of each hardware.
std::string RenderCapacityOptions(const PlanUpdate& update) {
  // A disaggregated layout names both pools: the column fits the longest.
  int width = 32;
  for (const shardplan::v1::TopPlan& top : update.top_plans()) {
    width = std::max(width, static_cast<int>(Degrees(top.plan()).size()));
  }
  std::string out = "Best option per hardware\n";
  absl::StrAppend(
      &out, absl::StrFormat("  %-16s %5s  %-*s %9s %9s %10s %10s\n", "hardware",
                            "GPUs", width, "layout", "max req/s", "$/hour",
                            "$/M tok", "TTFT p99"));
  for (const shardplan::v1::TopPlan& top : update.top_plans()) {
    const shardplan::v1::Prediction& p = top.prediction();
    const bool winner =
        top.cluster().hardware() == update.chosen_cluster().hardware() &&
        top.cluster().num_gpus() == update.chosen_cluster().num_gpus();
    absl::StrAppend(
        &out,
        absl::StrFormat("  %-16s %5d  %-*s %9.3g %9.2f %10.3f %10.1f%s\n",
                        top.cluster().hardware(), top.cluster().num_gpus(),
                        width, Degrees(top.plan()), p.max_request_rate(),
                        p.cost_per_hour(), p.cost_per_million_output_tokens(),
                        p.ttft_ms_p99(), winner ? "  <- chosen" : ""));
  }
  return out;
}

std::string RenderTopPlans(const PlanUpdate& update) {
  if (update.top_plans().empty()) return "";
  if (update.top_plans(0).has_cluster()) return RenderCapacityOptions(update);
  std::string out = absl::StrCat("Top ", update.top_plans_size(), " plans\n");
  absl::StrAppend(
      &out, absl::StrFormat("  %-2s  %-40s %6s %12s %10s %10s %9s %8s\n", "#",
                            "layout", "batch", "tok/s", "per GPU", "TTFT ms",
                            "TPOT ms", "speedup"));
  int rank = 0;
  for (const shardplan::v1::TopPlan& top : update.top_plans()) {
    const shardplan::v1::Prediction& p = top.prediction();
    absl::StrAppend(
        &out,
        absl::StrFormat("  %-2d  %-40s %6d %12s %10s %10.1f %9.2f %7.2fx\n",
                        ++rank, Degrees(top.plan()), p.batch_size(),
                        FormatCount(p.output_tokens_per_s()),
                        FormatCount(p.output_tokens_per_s_per_gpu()),
                        p.ttft_ms(), p.tpot_ms(), top.speedup_vs_baseline()));
  }
  return out;
}

std::string FrontierCsv(const PlanUpdate& update) {
  std::string out =
      "tokens_per_s_per_user,output_tokens_per_s_per_gpu,output_tokens_per_s,"
      "ttft_ms,tpot_ms,batch_size,replicas,dp,tp,pp,ep,disaggregated\n";
  for (const FrontierPoint& p : update.frontier()) {
    const shardplan::v1::Plan& plan = p.plan();
    absl::StrAppend(
        &out,
        absl::StrFormat(
            "%.6g,%.6g,%.6g,%.6g,%.6g,%d,%d,%d,%d,%d,%d,%d\n",
            p.tokens_per_s_per_user(), p.output_tokens_per_s_per_gpu(),
            p.prediction().output_tokens_per_s(), p.prediction().ttft_ms(),
            p.prediction().tpot_ms(), p.prediction().batch_size(),
            std::max(1, plan.replicas()), plan.dp(), plan.tp(), plan.pp(),
            plan.ep(), p.disaggregated() ? 1 : 0));
  }
  return out;
}

std::string FrontierGnuplotScript(absl::string_view csv_path,
                                  absl::string_view png_path,
                                  absl::string_view title) {
  // Single quotes in gnuplot strings only end at another single quote.
  auto quoted = [](absl::string_view s) {
    std::string q;
    for (char c : s) {
      if (c == '\'') {
        q += "''";
      } else if (c != '\n') {
        q += c;
      }
    }
    return absl::StrCat("'", q, "'");
  };
  return absl::StrCat(
      "set terminal png size 900,600\n", "set output ", quoted(png_path), "\n",
      "set datafile separator ','\n", "set title ", quoted(title), "\n",
      "set xlabel 'tokens/s per user (1000 / TPOT ms)'\n",
      "set ylabel 'output tokens/s per GPU'\n", "set logscale xy\n",
      "set grid\n", "set key top right\n", "plot ", quoted(csv_path),
      " skip 1 using 1:2 with linespoints pt 7 title 'frontier (aggregated)', ",
      quoted(csv_path),
      " skip 1 using ($12 == 1 ? $1 : 1/0):2 with points pt 5 ps 1.5 "
      "title 'disaggregated'\n");
}

absl::Status WriteFrontierPng(const PlanUpdate& update,
                              const std::string& png_path,
                              absl::string_view title) {
  if (update.frontier().empty()) {
    return absl::InvalidArgumentError(
        "the final update has no frontier to draw (server older than the "
        "frontier?)");
  }
  const char* env = std::getenv("SHARDPLAN_GNUPLOT");
  const std::string gnuplot = env != nullptr && *env != '\0' ? env : "gnuplot";
  char dir_template[] = "/tmp/shardplan-frontier-XXXXXX";
  if (mkdtemp(dir_template) == nullptr) {
    return absl::InternalError("cannot create a temporary directory");
  }
  const std::string dir = dir_template;
  const std::string csv = dir + "/frontier.csv";
  const std::string script = dir + "/frontier.gp";
  const std::string log = dir + "/gnuplot.log";
  {
    std::ofstream(csv) << FrontierCsv(update);
    std::ofstream(script) << FrontierGnuplotScript(csv, png_path, title);
  }
  absl::Status status = absl::OkStatus();
  const pid_t pid = fork();
  if (pid == 0) {
    FILE* out = std::freopen(log.c_str(), "w", stderr);
    (void)out;
    execlp(gnuplot.c_str(), gnuplot.c_str(), script.c_str(),
           static_cast<char*>(nullptr));
    _exit(127);
  }
  int wait_status = 0;
  if (pid < 0 || waitpid(pid, &wait_status, 0) < 0) {
    status = absl::InternalError("cannot start gnuplot");
  } else if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 127) {
    status = absl::FailedPreconditionError(absl::StrCat(
        "--frontier-png needs gnuplot, which was not found as \"", gnuplot,
        "\"; install the Debian package gnuplot-nox (or set "
        "SHARDPLAN_GNUPLOT)"));
  } else if (!WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0) {
    std::ifstream in(log);
    const std::string output((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
    status = absl::InternalError(
        absl::StrCat("gnuplot could not write ", png_path, ": ", output));
  }
  std::remove(csv.c_str());
  std::remove(script.c_str());
  std::remove(log.c_str());
  rmdir(dir.c_str());
  return status;
}

}  // namespace shardplan::client
