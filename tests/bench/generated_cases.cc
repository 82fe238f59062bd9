#include "tests/bench/generated_cases.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "policy/baselines.h"
#include "policy/disaggregated_grid.h"
#include "policy/plan_space.h"
#include "policy/rl/rl_searcher.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/cost_model.h"
#include "simulator/megatron.h"
#include "simulator/spec.h"
#include "simulator/status_macros.h"
#include "tests/bench/plan_text.h"

namespace shardplan::bench {
namespace {

struct ModelChoice {
  const char* name;
  bool moe;
  const char* dtype;  // the checkpoint's native weights
};
constexpr ModelChoice kModels[] = {
    {"llama-3.1-8b", false, "bf16"},  {"llama-3.1-70b", false, "bf16"},
    {"llama-3.1-405b", false, "fp8"}, {"qwen3-32b", false, "bf16"},
    {"mixtral-8x7b", true, "bf16"},   {"mixtral-8x22b", true, "bf16"},
    {"qwen3-235b-a22b", true, "fp8"}, {"deepseek-v3", true, "fp8"},
    {"gpt-oss-120b", true, "fp4"},    {"moe-1.6t", true, "fp8"},
};
// 12 = a node and a half; 48 and 96 = 6 and 12 nodes.
constexpr int kGpus[] = {4, 8, 12, 16, 24, 32, 48, 64, 96};
constexpr std::pair<int, int> kLengths[] = {
    {128, 2048}, {1024, 1024}, {2048, 512}, {4096, 1024}, {8192, 1024}};
constexpr double kTpotMs[] = {0, 20, 40, 80};
constexpr double kTtftMs[] = {0, 1000, 3000};

absl::StatusOr<std::unique_ptr<const simulator::CostModel>> MakeModel(
    const GeneratedCase& c, int gpus) {
  shardplan::v1::ModelSource source;
  source.set_catalog_name(c.model);
  shardplan::v1::ClusterSpec cluster;
  cluster.set_hardware(c.hardware);
  cluster.set_num_gpus(gpus);
  cluster.set_gpus_per_node(std::min(gpus, c.gpus_per_node));
  shardplan::v1::Workload workload;
  workload.set_input_tokens(c.isl);
  workload.set_output_tokens(c.osl);
  workload.set_max_ttft_ms(c.max_ttft_ms);
  workload.set_max_tpot_ms(c.max_tpot_ms);
  workload.set_weight_dtype(c.weight_dtype);
  ASSIGN_OR_RETURN(simulator::Problem problem,
                   simulator::ProblemFromProto(source, cluster, workload));
  return simulator::CostModel::Create(std::move(problem));
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double Tps(const policy::ScoredPlan& s) {
  return s.evaluation.feasible ? s.evaluation.output_tokens_per_s : 0;
}

// `rl_stats` (optional): the RL searcher's timing, when the method is one.
absl::StatusOr<policy::SearchResult> ResultOf(
    const std::string& method, const simulator::CostModel& model,
    const policy::SearchOptions& options,
    policy::SearchObserver* observer = nullptr,
    policy::RlStats* rl_stats = nullptr) {
  ASSIGN_OR_RETURN(std::unique_ptr<policy::Searcher> searcher,
                   policy::CreateSearcher(method));
  policy::CancellationToken cancel;
  policy::SearchObserver none;
  absl::StatusOr<policy::SearchResult> r = searcher->Search(
      model, options, cancel, observer != nullptr ? *observer : none);
  if (auto* rl = dynamic_cast<policy::RlSearcher*>(searcher.get());
      rl != nullptr && rl_stats != nullptr) {
    *rl_stats = rl->last_stats();
  }
  return r;
}

absl::StatusOr<policy::ScoredPlan> BestOf(
    const std::string& method, const simulator::CostModel& model,
    const policy::SearchOptions& options) {
  ASSIGN_OR_RETURN(policy::SearchResult r, ResultOf(method, model, options));
  return r.best;
}

// "r2 dp8 tp1 pp1 ep8 | col col bat ..." with the batch and the share of
// communication in the decode step: enough to see why one plan beats another.
std::string Describe(const policy::ScoredPlan& s) {
  const simulator::PlanDims& p = s.plan;
  return absl::StrFormat("r%d dp%d tp%d pp%d ep%d [%s] batch %d, comm %.0f%%",
                         p.replicas, p.dp, p.tp, p.pp, p.ep,
                         ShortOperatorDims(p), s.evaluation.batch_size,
                         DecodeCommPercent(s.evaluation));
}

}  // namespace

std::string GeneratedCase::name() const {
  std::string slo;
  if (max_ttft_ms > 0) absl::StrAppend(&slo, " ttft<", max_ttft_ms);
  if (max_tpot_ms > 0) absl::StrAppend(&slo, " tpot<", max_tpot_ms);
  return absl::StrFormat("%s@%d%s %s %d/%d%s", model, gpus,
                         hardware == "h100-sxm-80gb" ? "" : " " + hardware,
                         weight_dtype, isl, osl, slo);
}

std::vector<GeneratedCase> GenerateCases(uint64_t seed, int count,
                                         bool moe_only) {
  std::mt19937_64 rng(seed);
  std::vector<GeneratedCase> out;
  for (int attempt = 0;
       attempt < 50 * count && static_cast<int>(out.size()) < count;
       ++attempt) {
    const ModelChoice& m = kModels[rng() % std::size(kModels)];
    GeneratedCase c;
    c.model = m.name;
    c.gpus = kGpus[rng() % std::size(kGpus)];
    const auto& [isl, osl] = kLengths[rng() % std::size(kLengths)];
    c.isl = isl;
    c.osl = osl;
    c.max_tpot_ms = kTpotMs[rng() % std::size(kTpotMs)];
    c.max_ttft_ms = kTtftMs[rng() % std::size(kTtftMs)];
    c.weight_dtype = m.dtype;
    if (moe_only && !m.moe) continue;
    auto model = MakeModel(c, c.gpus);
    if (!model.ok()) continue;
    auto space = policy::PlanSpace::Create(**model);
    if (!space.ok()) continue;
    // Keep problems some plan can serve: the grid reference is feasible.
    if (Tps(policy::GridBest(**space)) <= 0) continue;
    out.push_back(std::move(c));
  }
  return out;
}

absl::StatusOr<std::string> RunGeneratedCases(
    const std::vector<GeneratedCase>& cases, const GeneratedOptions& options) {
  std::string md =
      "| case | megatron | grid | rl | best metaheuristic | rl / grid | rl / "
      "best meta | best/GPU vs half the GPUs "
      "|\n|---|---|---|---|---|---|---|---"
      "|\n";
  std::string plans =
      "\n| case | grid's best plan | rl's best plan (seed 1) "
      "|\n|---|---|---|\n";
  int rl_ge_grid = 0, rl_ge_meta = 0, monotone_ok = 0, monotone_checked = 0;
  for (const GeneratedCase& c : cases) {
    ASSIGN_OR_RETURN(auto model, MakeModel(c, c.gpus));
    ASSIGN_OR_RETURN(auto space, policy::PlanSpace::Create(*model));
    const double megatron =
        Tps({simulator::MegatronPlan(*model),
             model->Evaluate(simulator::MegatronPlan(*model)), 0});
    const policy::ScoredPlan grid_plan = policy::GridBest(*space);
    const double grid = Tps(grid_plan);
    policy::SearchOptions so;
    so.max_evaluations = options.budget;
    so.max_seconds = 600;
    so.pool = options.pool;
    std::vector<double> rl;
    policy::ScoredPlan rl_first;
    double best_meta = 0;
    for (int s = 1; s <= options.seeds; ++s) {
      so.seed = static_cast<uint32_t>(s);
      ASSIGN_OR_RETURN(policy::ScoredPlan best, BestOf("rl", *model, so));
      if (s == 1) rl_first = best;
      rl.push_back(Tps(best));
    }
    for (const std::string& meta : options.metaheuristics) {
      std::vector<double> v;
      for (int s = 1; s <= options.seeds; ++s) {
        so.seed = static_cast<uint32_t>(s);
        ASSIGN_OR_RETURN(policy::ScoredPlan best, BestOf(meta, *model, so));
        v.push_back(Tps(best));
      }
      best_meta = std::max(best_meta, Median(v));
    }
    const double rl_median = Median(rl);
    // Monotone in GPUs: the best per GPU here against the grid's best on
    // half the GPUs (k = 2 copies of that plan fit here).
    std::string monotone = "n/a";
    if (c.gpus % 2 == 0 && c.gpus >= 2) {
      auto half = MakeModel(c, c.gpus / 2);
      auto half_space =
          half.ok() ? policy::PlanSpace::Create(**half)
                    : absl::StatusOr<std::unique_ptr<const policy::PlanSpace>>(
                          half.status());
      if (half_space.ok()) {
        const double half_per_gpu =
            Tps(policy::GridBest(**half_space)) / (c.gpus / 2);
        const double here_per_gpu = std::max(rl_median, grid) / c.gpus;
        ++monotone_checked;
        const bool ok = here_per_gpu >= half_per_gpu * (1 - 1e-9);
        monotone_ok += ok;
        monotone = absl::StrFormat("%.0f vs %.0f %s", here_per_gpu,
                                   half_per_gpu, ok ? "ok" : "VIOLATED");
      }
    }
    rl_ge_grid += rl_median >= grid * (1 - 1e-9);
    rl_ge_meta += rl_median >= best_meta * (1 - 1e-9);
    absl::StrAppend(
        &md, absl::StrFormat(
                 "| %s | %.0f | %.0f | %.0f | %.0f | %.3f | %.3f | %s |\n",
                 c.name(), megatron, grid, rl_median, best_meta,
                 grid > 0 ? rl_median / grid : 0,
                 best_meta > 0 ? rl_median / best_meta : 0, monotone));
    absl::StrAppend(&plans,
                    absl::StrFormat("| %s | %s | %s |\n", c.name(),
                                    Describe(grid_plan), Describe(rl_first)));
    std::fprintf(stderr, "%s: rl %.0f grid %.0f meta %.0f\n", c.name().c_str(),
                 rl_median, grid, best_meta);
  }
  absl::StrAppend(
      &md,
      absl::StrFormat(
          "\nRL (median of %d seeds, %d evaluations) >= grid on %d/%zu cases, "
          ">= the best metaheuristic on %d/%zu; monotone in GPUs on %d/%d "
          "checked.\n",
          options.seeds, options.budget, rl_ge_grid, cases.size(), rl_ge_meta,
          cases.size(), monotone_ok, monotone_checked));
  absl::StrAppend(&md, plans);
  return md;
}

std::vector<GeneratedCase> GenerateDisaggregatedCases(uint64_t seed,
                                                      int count) {
  std::vector<GeneratedCase> out;
  for (GeneratedCase& c : GenerateCases(seed, count, /*moe_only=*/false)) {
    auto model = MakeModel(c, c.gpus);
    if (!model.ok()) continue;
    if (!policy::PlanSpace::CreateDisaggregated(**model).ok()) continue;
    policy::CancellationToken cancel;
    if (!policy::SweepDisaggregated(**model, 1 << 20, 1, cancel).found) {
      continue;
    }
    out.push_back(std::move(c));
  }
  return out;
}

namespace {

// The best throughput after each improvement, by evaluations.
class EvalTrace : public policy::SearchObserver {
 public:
  void OnImprovement(const policy::Improvement& imp) override {
    trace.emplace_back(imp.evaluations, Tps(imp.best));
  }
  // Evaluations until the best reached `level`; `never` when it did not.
  int EvalsTo(double level, int never) const {
    for (const auto& [evals, tps] : trace)
      if (tps >= level) return evals;
    return never;
  }
  std::vector<std::pair<int, double>> trace;
};

}  // namespace

absl::StatusOr<std::string> RunDisaggregatedCases(
    const std::vector<GeneratedCase>& cases, const GeneratedOptions& options) {
  const std::vector<std::string> methods = {
      "rl", "rl-no-learning", "rl-policy-only", "anneal", "genetic", "random"};
  std::string md = "| case | joint tuples | sweep (grid) | " +
                   absl::StrJoin(methods, " | ") +
                   " | rl / best other |\n|---|---|---|" +
                   "---|---|---|---|---|---|---|\n";
  std::string plans =
      "\n| case | rl's best plan (seed 1) | its tok/s | its prefill dims | "
      "tok/s with Megatron's prefill dims |\n|---|---|---|---|---|\n";
  int rl_ge_all = 0, rl_gt_frozen = 0, rl_ge_sweep = 0, rl_faster = 0,
      rl_slower = 0;
  const int never = options.budget + 1;
  for (const GeneratedCase& c : cases) {
    ASSIGN_OR_RETURN(auto model, MakeModel(c, c.gpus));
    ASSIGN_OR_RETURN(auto space,
                     policy::PlanSpace::CreateDisaggregated(*model));
    policy::CancellationToken cancel;
    const double sweep =
        Tps(policy::SweepDisaggregated(*model, options.budget, 1, cancel).best);
    policy::SearchOptions so;
    so.disaggregated = true;
    so.space = space.get();
    so.max_evaluations = options.budget;
    so.max_seconds = 600;
    so.pool = options.pool;
    // Per method and seed: the final best and its trace.
    std::vector<std::vector<double>> finals(methods.size());
    std::vector<std::vector<EvalTrace>> traces(methods.size());
    policy::ScoredPlan rl_first;
    double best_known = sweep;
    for (size_t m = 0; m < methods.size(); ++m) {
      for (int s = 1; s <= options.seeds; ++s) {
        so.seed = static_cast<uint32_t>(s);
        traces[m].emplace_back();
        ASSIGN_OR_RETURN(policy::SearchResult r,
                         ResultOf(methods[m], *model, so, &traces[m].back()));
        if (m == 0 && s == 1) rl_first = r.best;
        finals[m].push_back(Tps(r.best));
        best_known = std::max(best_known, Tps(r.best));
      }
    }
    // Evaluations to 99% of the best any method found on the case (median
    // over seeds; "-" when the median run never got there).
    std::vector<double> medians, to_99;
    for (size_t m = 0; m < methods.size(); ++m) {
      medians.push_back(Median(finals[m]));
      std::vector<double> e;
      for (const EvalTrace& t : traces[m])
        e.push_back(t.EvalsTo(0.99 * best_known, never));
      to_99.push_back(Median(e));
    }
    const double rl = medians[0];
    double best_other = sweep;
    for (size_t i = 1; i < medians.size(); ++i)
      best_other = std::max(best_other, medians[i]);
    rl_ge_all += rl >= best_other * (1 - 1e-9);
    rl_gt_frozen += rl > medians[1] * (1 + 1e-9);
    rl_ge_sweep += rl >= sweep * (1 - 1e-9);
    rl_faster += to_99[0] < to_99[1];
    rl_slower += to_99[0] > to_99[1];
    std::vector<std::string> cells;
    for (size_t m = 0; m < methods.size(); ++m) {
      cells.push_back(absl::StrFormat(
          "%.0f (%s)", medians[m],
          to_99[m] >= never ? "-" : absl::StrFormat("%.0f", to_99[m])));
    }
    absl::StrAppend(
        &md, absl::StrFormat("| %s | %d | %.0f | %s | %.3f |\n", c.name(),
                             space->NumChoices(policy::kDegreesDecision), sweep,
                             absl::StrJoin(cells, " | "),
                             best_other > 0 ? rl / best_other : 0));
    const simulator::PlanDims& p = rl_first.plan;
    // The prefill dims the search chose, and what the plan would do with
    // Megatron's instead (the space before they were searched).
    simulator::PlanDims prefill_dims;
    prefill_dims.dims = p.prefill.dims;
    simulator::PlanDims megatron_prefill = p;
    megatron_prefill.prefill.dims = simulator::MegatronShardDims();
    const simulator::Evaluation megatron_eval =
        model->Evaluate(megatron_prefill);
    absl::StrAppend(
        &plans,
        absl::StrFormat(
            "| %s | %dx prefill (dp%d tp%d pp%d ep%d, batch %d) + "
            "%dx decode (dp%d tp%d pp%d ep%d, batch %d) | %.0f | %s | %s |\n",
            c.name(), p.prefill_instances, p.prefill.dp, p.prefill.tp,
            p.prefill.pp, p.prefill.ep, p.prefill.batch_size,
            p.decode_instances, p.dp, p.tp, p.pp, p.ep,
            rl_first.evaluation.batch_size, Tps(rl_first),
            p.prefill.dims == simulator::MegatronShardDims()
                ? std::string("Megatron's")
                : ShortOperatorDims(prefill_dims),
            megatron_eval.feasible
                ? absl::StrFormat("%.0f", megatron_eval.output_tokens_per_s)
                : std::string("infeasible")));
    std::fprintf(stderr, "%s: rl %.0f best other %.0f\n", c.name().c_str(), rl,
                 best_other);
  }
  absl::StrAppend(
      &md,
      absl::StrFormat(
          "\nCells: median over %d seeds of the best tok/s at %d evaluations "
          "(median evaluations to 99%% of the best any method found on the "
          "case). RL >= every other method and the sweep on %d/%zu cases; > "
          "rl-no-learning on %d/%zu; >= the sweep on %d/%zu; reaches 99%% in "
          "fewer evaluations than rl-no-learning on %d/%zu, in more on "
          "%d/%zu.\n",
          options.seeds, options.budget, rl_ge_all, cases.size(), rl_gt_frozen,
          cases.size(), rl_ge_sweep, cases.size(), rl_faster, cases.size(),
          rl_slower, cases.size()));
  absl::StrAppend(&md, plans);
  return md;
}

namespace {

// Records the best throughput over wall time and evaluations.
class TimedObserver : public policy::SearchObserver {
 public:
  TimedObserver(std::chrono::steady_clock::time_point start, int offset)
      : start_(start), offset_(offset) {}
  void OnImprovement(const policy::Improvement& imp) override {
    trace.push_back({std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start_)
                         .count(),
                     offset_ + imp.evaluations, Tps(imp.best)});
  }
  struct Point {
    double seconds;
    int evaluations;
    double tokens_per_s;
  };
  std::vector<Point> trace;

 private:
  std::chrono::steady_clock::time_point start_;
  int offset_;
};

}  // namespace

absl::StatusOr<std::string> TimeAutoSearch(const GeneratedCase& c,
                                           const std::string& method,
                                           const GeneratedOptions& options) {
  ASSIGN_OR_RETURN(auto model, MakeModel(c, c.gpus));
  ASSIGN_OR_RETURN(auto aggregated, policy::PlanSpace::Create(*model));
  ASSIGN_OR_RETURN(auto joint, policy::PlanSpace::CreateDisaggregated(*model));
  policy::CancellationToken never_cancelled;
  const policy::DisaggregatedSweep sweep =
      policy::SweepDisaggregated(*model, 1 << 20, 1, never_cancelled);
  // What the sweep finds on the disaggregated share of the budget.
  const policy::DisaggregatedSweep share = policy::SweepDisaggregated(
      *model, options.budget / 2, 1, never_cancelled);
  std::string md = absl::StrFormat(
      "%s%s, %s, %d evaluations: aggregated space %d degree tuples (%.3g "
      "plans), disaggregated %d joint tuples (%.3g plans); for reference the "
      "whole disaggregated sweep (%d candidates) finds %.0f tok/s (%.0f on "
      "%d evaluations, the disaggregated share) and grid (aggregated) %.0f "
      "tok/s\n\n",
      c.name(), " (engine-agnostic calibration)", method, options.budget,
      aggregated->NumChoices(policy::kDegreesDecision), aggregated->Size(),
      joint->NumChoices(policy::kDegreesDecision), joint->Size(),
      sweep.candidates, Tps(sweep.best), Tps(share.best), options.budget / 2,
      Tps(policy::GridBest(*aggregated)));
  absl::StrAppend(
      &md,
      absl::StrFormat(
          "| seed | final best tok/s | kind | seconds to 99%% | evaluations to "
          "99%% | total seconds | evaluations | cost-model seconds (RlStats) "
          "|\n|---|---|---|---|---|---|---|---|\n"));
  for (int s = 1; s <= options.seeds; ++s) {
    const auto start = std::chrono::steady_clock::now();
    policy::SearchOptions so;
    so.seed = static_cast<uint32_t>(s);
    so.pool = options.pool;
    so.max_seconds = 600;
    so.max_evaluations = options.budget - options.budget / 2;
    TimedObserver agg_obs(start, 0);
    policy::RlStats agg_stats, dis_stats;
    ASSIGN_OR_RETURN(policy::SearchResult agg,
                     ResultOf(method, *model, so, &agg_obs, &agg_stats));
    so.disaggregated = true;
    so.max_evaluations = options.budget / 2 + 1;
    so.baseline = &agg.baseline;
    TimedObserver dis_obs(start, agg.evaluations - 1);
    ASSIGN_OR_RETURN(policy::SearchResult dis,
                     ResultOf(method, *model, so, &dis_obs, &dis_stats));
    const double total_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    // The combined best over time (aggregated first, then disaggregated).
    std::vector<TimedObserver::Point> trace = agg_obs.trace;
    trace.insert(trace.end(), dis_obs.trace.begin(), dis_obs.trace.end());
    double final_best = 0;
    for (const auto& p : trace)
      final_best = std::max(final_best, p.tokens_per_s);
    double seconds_to_99 = -1;
    int evals_99 = -1;
    for (const auto& p : trace) {
      if (p.tokens_per_s >= 0.99 * final_best) {
        seconds_to_99 = p.seconds;
        evals_99 = p.evaluations;
        break;
      }
    }
    const int evaluations = agg.evaluations + dis.evaluations - 1;
    const double both_cost_model_seconds =
        agg_stats.cost_model_seconds + dis_stats.cost_model_seconds;
    const bool disagg_wins = Tps(dis.best) > Tps(agg.best);
    absl::StrAppend(
        &md, absl::StrFormat("| %d | %.0f | %s | %.2f | %d | %.2f | %d | %.2f "
                             "|\n",
                             s, final_best,
                             disagg_wins ? "disaggregated" : "aggregated",
                             seconds_to_99, evals_99, total_seconds,
                             evaluations, both_cost_model_seconds));
    std::fprintf(stderr, "seed %d: %.2f s to 99%%, %.2f s total\n", s,
                 seconds_to_99, total_seconds);
  }
  return md;
}

}  // namespace shardplan::bench
