// shardplan-bench-search: every search method on the same cases, seeds and
// evaluation budget. Prints a markdown table (medians over seeds), writes CSV
// rows and a convergence PNG (gnuplot), plus the warm-start experiment and the
// policy-vs-cost-model time split.
//
//   shardplan-bench-search [--cases llama-3.1-70b@16,deepseek-v3@32] [--seeds
//   5]
//       [--budget 3000] [--csv FILE] [--md FILE] [--png FILE]
//   shardplan-bench-search --generated 8 --generator_seed 2 [--disaggregated
//       true] --transfer true [--transfer_train_seed 3]: the policy weights
//       of earlier searches of a family on new problems (docs/benchmarks.md)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "policy/eval_pool.h"
#include "policy/plan_space.h"
#include "policy/rl/rl_searcher.h"
#include "policy/searcher.h"
#include "proto/status_macros.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/cost_model.h"
#include "simulator/spec.h"
#include "tests/bench/generated_cases.h"
#include "tests/bench/plan_text.h"

namespace shardplan::bench {
namespace {

using policy::CancellationToken;
using policy::Improvement;
using policy::SearchObserver;
using policy::SearchOptions;
using policy::SearchResult;

const char* const kDefaultCases =
    "llama-3.1-8b@4,llama-3.1-8b@8,llama-3.1-70b@8,llama-3.1-70b@16,llama-3.1-"
    "70b@32,"
    "llama-3.1-405b@32,llama-3.1-405b@64,mixtral-8x22b@16,mixtral-8x22b@64,"
    "qwen3-235b-a22b@16,qwen3-235b-a22b@64,deepseek-v3@32,deepseek-v3@128,moe-"
    "1.6t@256,"
    "moe-1.6t@1024";
const std::vector<std::string> kMetaheuristics = {"random", "anneal",
                                                  "genetic"};

struct Case {
  std::string model;
  int gpus = 0;
  std::string name() const { return absl::StrCat(model, "@", gpus); }
};

class TraceObserver : public SearchObserver {
 public:
  void OnImprovement(const Improvement& imp) override {
    trace.emplace_back(imp.evaluations,
                       imp.best.evaluation.output_tokens_per_s);
  }
  std::vector<std::pair<int, double>> trace;  // (evaluations, best tokens/s)
};

struct Run {
  std::string method;
  uint32_t seed = 0;
  double best = 0;  // tokens/s, 0 if nothing feasible
  int evaluations = 0;
  int evals_to_99 = 0;
  double wall_seconds = 0;
  std::vector<std::pair<int, double>> trace;
  SearchResult result;
  policy::RlStats rl_stats;
};

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int EvalsTo(const std::vector<std::pair<int, double>>& trace, double level) {
  for (const auto& [e, t] : trace) {
    if (t >= level) return e;
  }
  return -1;
}

double BestAt(const std::vector<std::pair<int, double>>& trace, int evals) {
  double best = 0;
  for (const auto& [e, t] : trace) {
    if (e > evals) break;
    best = t;
  }
  return best;
}

absl::StatusOr<std::unique_ptr<const simulator::CostModel>> MakeModel(
    const Case& c, int isl, int osl, int concurrency) {
  shardplan::v1::ModelSource source;
  source.set_catalog_name(c.model);
  shardplan::v1::ClusterSpec cluster;
  cluster.set_hardware("h100-sxm-80gb");
  cluster.set_num_gpus(c.gpus);
  cluster.set_gpus_per_node(std::min(8, c.gpus));
  shardplan::v1::Workload workload;
  workload.set_input_tokens(isl);
  workload.set_output_tokens(osl);
  workload.set_concurrency(concurrency);
  ASSIGN_OR_RETURN(simulator::Problem problem,
                   simulator::ProblemFromProto(source, cluster, workload));
  return simulator::CostModel::Create(std::move(problem));
}

absl::StatusOr<Run> RunOne(const std::string& method,
                           const simulator::CostModel& model,
                           SearchOptions options,
                           policy::RlOptions* rl_options = nullptr) {
  std::unique_ptr<policy::Searcher> searcher;
  const std::vector<std::string>& rl_methods = policy::RlMethods();
  if (rl_options != nullptr && std::find(rl_methods.begin(), rl_methods.end(),
                                         method) != rl_methods.end()) {
    searcher = std::make_unique<policy::RlSearcher>(
        policy::RlMethodOptions(method, *rl_options), method);
  } else {
    ASSIGN_OR_RETURN(searcher, policy::CreateSearcher(method));
  }
  CancellationToken cancel;
  TraceObserver observer;
  const auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(SearchResult result,
                   searcher->Search(model, options, cancel, observer));
  Run run;
  run.method = method;
  run.seed = options.seed;
  run.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  run.best = result.best.evaluation.feasible
                 ? result.best.evaluation.output_tokens_per_s
                 : 0;
  run.evaluations = result.evaluations;
  run.trace = observer.trace;
  run.evals_to_99 = run.best > 0 ? EvalsTo(run.trace, 0.99 * run.best) : -1;
  if (auto* rl = dynamic_cast<policy::RlSearcher*>(searcher.get())) {
    run.rl_stats = rl->last_stats();
  }
  run.result = std::move(result);
  return run;
}

struct Row {
  std::string case_name;
  bool moe = false;
  std::string method;
  double best = 0;  // median over seeds
  double ratio_megatron = 0;
  double ratio_meta = 0;
  double evals_to_99 = 0;   // median
  double wall_seconds = 0;  // median
  double gap_optimum = -1;  // 1 - best/optimum, when known
};

std::string DescribePlan(const policy::ScoredPlan& s) {
  const simulator::PlanDims& p = s.plan;
  const simulator::Evaluation& e = s.evaluation;
  return absl::StrFormat(
      "r%d dp%d tp%d pp%d ep%d mb%d [%s] | %d | %.1f | %.1f | %.1f%% | %s | "
      "%.0f",
      p.replicas, p.dp, p.tp, p.pp, p.ep, p.micro_batches, ShortOperatorDims(p),
      e.batch_size, e.weights_bytes / 1e9, e.kv_cache_bytes / 1e9,
      DecodeCommPercent(e),
      std::string(simulator::BottleneckName(e.bottleneck)),
      e.output_tokens_per_s);
}

// Prints a report (and writes it to `md_path` when set); the exit code.
int Emit(const absl::StatusOr<std::string>& report,
         const std::string& md_path) {
  if (!report.ok()) {
    std::fprintf(stderr, "%s\n", report.status().ToString().c_str());
    return 1;
  }
  std::printf("%s", report->c_str());
  if (!md_path.empty()) std::ofstream(md_path) << *report;
  return 0;
}

int Main(int argc, char** argv) {
  policy::RegisterRlSearchers();
  CLI::App app(
      "shardplan-bench-search: search methods on the same cost model and "
      "budget");
  std::string cases_flag = kDefaultCases;
  std::string methods_flag =
      "megatron,random,anneal,genetic,rl,rl-no-elite,rl-no-learning,"
      "rl-policy-only";
  int seeds = 5;
  int first_seed = 1;
  int budget = 3000;
  double seconds = 0;
  int pool_threads = 1;
  int isl = 2048, osl = 512, concurrency = 0;
  double exhaustive_limit = 2e7;
  std::string csv_path, md_path, png_path;
  bool warm = true;
  int timing_batch = 256;
  app.add_option("--cases", cases_flag, "comma list of model@gpus");
  app.add_option("--methods", methods_flag, "comma list of methods");
  app.add_option("--seeds", seeds, "seeds per method");
  app.add_option("--first_seed", first_seed,
                 "first seed (seeds first_seed .. first_seed + seeds - 1)");
  app.add_option("--budget", budget,
                 "evaluations per search, baseline included");
  app.add_option("--seconds", seconds,
                 "> 0: compare at equal wall time (seconds per search, no "
                 "evaluation limit) instead of --budget evaluations");
  app.add_option("--pool_threads", pool_threads, "extra evaluation threads");
  app.add_option("--isl", isl, "input tokens");
  app.add_option("--osl", osl, "output tokens");
  app.add_option("--concurrency", concurrency, "0: best batch");
  app.add_option("--exhaustive_limit", exhaustive_limit,
                 "largest space to enumerate");
  app.add_option("--csv", csv_path, "write per-run rows as CSV");
  app.add_option("--md", md_path, "write the markdown report");
  app.add_option("--png", png_path, "draw convergence curves with gnuplot");
  app.add_option("--warm", warm, "run the warm-start experiment");
  app.add_option("--timing_batch", timing_batch,
                 "RL batch for the time split (0: skip)");
  policy::RlOptions rl;
  app.add_option("--rl_batch", rl.policy.batch_size, "RL plans per iteration");
  app.add_option("--rl_lr", rl.policy.learning_rate, "RL learning rate");
  app.add_option("--rl_entropy", rl.policy.entropy_coef, "RL entropy bonus");
  app.add_option("--rl_epsilon", rl.policy.explore_epsilon,
                 "RL uniform exploration per decision");
  app.add_option("--rl_sil", rl.policy.self_imitation_coef,
                 "RL self-imitation weight");
  app.add_option("--rl_epochs", rl.policy.ppo_epochs,
                 "RL epochs per batch (>1: PPO clip)");
  app.add_option("--rl_layers", rl.policy.encoder_layers, "RL encoder layers");
  app.add_option("--rl_d_model", rl.policy.d_model, "RL encoder width");
  app.add_option("--rl_copy_bias", rl.policy.copy_gate_bias,
                 "RL initial copy-gate logit");
  app.add_option("--rl_move_bias", rl.policy.copy_gate_bias_after_move,
                 "RL initial copy-gate logit after a tuple move");
  app.add_option("--rl_anchors", rl.policy.anchors,
                 "RL elite plans attended over (0: the search's elite size)");
  app.add_option("--rl_free_anchor", rl.policy.free_anchor_logit,
                 "RL initial logit of sampling without an anchor");
  app.add_option("--rl_per_tuple", rl.policy.anchors_per_tuple,
                 "RL elite plans per degree tuple (0: no cap)");
  app.add_option("--rl_locality", rl.policy.tuple_locality,
                 "RL initial degree-tuple locality weight");
  app.add_option("--rl_crossover", rl.policy.crossover,
                 "RL takes decisions from a second elite plan");
  app.add_option("--rl_cross_bias", rl.policy.crossover_gate_bias,
                 "RL initial crossover-gate logit");
  app.add_option("--rl_imitation", rl.policy.imitation_steps,
                 "RL initial elite-cloning steps");
  app.add_option("--rl_tuple_sweep", rl.moves.tuple_sweep,
                 "RL: first sweep every other degree tuple when there are at "
                 "most this many, else this many at random (0: never)");
  app.add_option("--rl_neighbour_sweep", rl.moves.neighbour_sweep,
                 "RL: move each new best plan to this many nearest tuples");
  app.add_option("--rl_batch_line_search", rl.moves.batch_line_search,
                 "RL: batch line search on swept plans and new tuple bests");
  int generated = 0;
  uint64_t generator_seed = 1;
  bool moe_only = false;
  app.add_option("--generated", generated,
                 "instead of --cases: this many seeded problems (models, GPU "
                 "counts, ISL/OSL, SLOs) with grid and the monotone check");
  app.add_option("--generator_seed", generator_seed,
                 "seed of the generated problems (1: tuning set, 2: held out)");
  app.add_option("--moe_only", moe_only, "generate MoE problems only");
  bool disaggregated = false;
  app.add_option("--disaggregated", disaggregated,
                 "with --generated: search the disaggregated plan space of "
                 "the generated problems that have one (rl, rl-no-learning, "
                 "anneal, genetic, random against the disaggregated sweep)");
  bool large = false;
  app.add_option("--large", large,
                 "with --generated --disaggregated: the problems on 256, 384 "
                 "or 512 GPUs");
  bool transfer = false;
  TransferOptions transfer_options;
  std::string transfer_budgets = "100,300,600";
  app.add_option("--transfer", transfer,
                 "with --generated: cross-problem transfer of the RL policy "
                 "weights, trained by chained rl searches on problems of "
                 "--transfer_train_seed, tested on the generated problems at "
                 "the --transfer_budgets (with --disaggregated: the joint "
                 "space)");
  app.add_option("--transfer_train_seed", transfer_options.train_seed,
                 "generator seed of the training problems (never the "
                 "held-out 2)");
  app.add_option("--transfer_train_problems", transfer_options.train_problems,
                 "training searches per chain");
  app.add_option("--transfer_train_budget", transfer_options.train_budget,
                 "evaluations per training search");
  app.add_option("--transfer_across_families", transfer_options.across_families,
                 "one chain over the training seed's first problems for "
                 "every case, instead of one per family as the server");
  app.add_option("--transfer_train_aggregated",
                 transfer_options.train_aggregated,
                 "with --disaggregated: train in the aggregated space (the "
                 "weights the server keeps with disaggregation auto)");
  app.add_option("--transfer_train_disaggregated",
                 transfer_options.train_disaggregated,
                 "without --disaggregated: train in the joint space "
                 "(aggregated searches from a disaggregated search's weights)");
  app.add_option("--transfer_one_chain", transfer_options.one_chain,
                 "one training chain for every test seed (default: one per "
                 "test seed)");
  app.add_option("--transfer_budgets", transfer_budgets,
                 "comma list of test budgets");
  std::string time_auto;
  app.add_option("--time_auto", time_auto,
                 "time the server's auto search (aggregated then "
                 "disaggregated, the budget halved) of MODEL@GPUS on H200 "
                 "(FP8, ISL 4096, OSL 1024, TTFT <= 2 s, TPOT <= 50 ms) to "
                 "99% of its final best, --seeds runs of --budget");
  CLI11_PARSE(app, argc, argv);
  if (!time_auto.empty()) {
    std::vector<std::string> parts = absl::StrSplit(time_auto, '@');
    if (parts.size() != 2) {
      std::fprintf(stderr, "bad --time_auto %s (want model@gpus)\n",
                   time_auto.c_str());
      return 1;
    }
    GeneratedCase c;
    c.model = parts[0];
    c.gpus = std::atoi(parts[1].c_str());
    c.hardware = "h200-sxm-141gb";
    c.weight_dtype = "fp8";
    c.isl = 4096;
    c.osl = 1024;
    c.max_ttft_ms = 2000;
    c.max_tpot_ms = 50;
    policy::EvalPool timed_pool(pool_threads);
    GeneratedOptions go;
    go.seeds = seeds;
    go.budget = budget;
    go.seconds = seconds;
    go.pool = &timed_pool;
    return Emit(TimeAutoSearch(c, "rl", go), md_path);
  }
  if (generated > 0) {
    policy::EvalPool generated_pool(pool_threads);
    GeneratedOptions go;
    go.seeds = seeds;
    go.budget = budget;
    go.seconds = seconds;
    go.pool = &generated_pool;
    if (transfer) {
      transfer_options.disaggregated = disaggregated;
      transfer_options.budgets.clear();
      for (absl::string_view b :
           absl::StrSplit(transfer_budgets, ',', absl::SkipEmpty())) {
        transfer_options.budgets.push_back(std::atoi(std::string(b).c_str()));
      }
      return Emit(
          RunTransferCases(
              disaggregated
                  ? GenerateDisaggregatedCases(generator_seed, generated)
                  : GenerateCases(generator_seed, generated, moe_only),
              go, transfer_options),
          md_path);
    }
    auto report =
        disaggregated
            ? RunDisaggregatedCases(
                  large ? GenerateLargeDisaggregatedCases(generator_seed,
                                                          generated)
                        : GenerateDisaggregatedCases(generator_seed, generated),
                  go)
            : RunGeneratedCases(
                  GenerateCases(generator_seed, generated, moe_only), go);
    return Emit(report, md_path);
  }

  std::vector<Case> cases;
  for (absl::string_view item :
       absl::StrSplit(cases_flag, ',', absl::SkipEmpty())) {
    std::vector<std::string> parts = absl::StrSplit(item, '@');
    if (parts.size() != 2) {
      std::fprintf(stderr, "bad case %s (want model@gpus)\n",
                   std::string(item).c_str());
      return 2;
    }
    cases.push_back(Case{parts[0], std::atoi(parts[1].c_str())});
  }
  std::vector<std::string> methods =
      absl::StrSplit(methods_flag, ',', absl::SkipEmpty());
  policy::EvalPool pool(pool_threads);
  std::string md;
  std::ofstream csv;
  if (!csv_path.empty()) {
    csv.open(csv_path);
    csv << "case,model,gpus,moe,method,seed,best_tokens_per_s,ratio_megatron,"
           "evaluations,"
           "evals_to_99,wall_s,space_size,optimum_tokens_per_s\n";
  }
  std::vector<Row> rows;
  // Convergence data: per case, per method, median best-so-far/megatron on a
  // grid.
  std::map<std::string, std::map<std::string, std::vector<double>>> curves;
  const int grid_step = std::max(1, budget / 100);
  std::vector<std::string> warm_lines;
  std::vector<std::string> space_lines;
  std::vector<std::string> plan_lines;
  const auto bench_start = std::chrono::steady_clock::now();

  for (const Case& c : cases) {
    auto model = MakeModel(c, isl, osl, concurrency);
    if (!model.ok()) {
      std::fprintf(stderr, "%s: %s\n", c.name().c_str(),
                   model.status().ToString().c_str());
      return 1;
    }
    const bool moe = (*model)->problem().model.is_moe();
    auto space = policy::PlanSpace::Create(**model);
    if (!space.ok()) {
      std::fprintf(stderr, "%s: %s\n", c.name().c_str(),
                   space.status().ToString().c_str());
      return 1;
    }
    const double size = (*space)->Size();
    space_lines.push_back(
        absl::StrFormat("| %s | %d | %.4g |", c.name(),
                        (*space)->NumChoices(policy::kDegreesDecision), size));
    std::fprintf(stderr, "%s: space %.4g plans, %d degree tuples\n",
                 c.name().c_str(), size,
                 (*space)->NumChoices(policy::kDegreesDecision));
    SearchOptions options;
    options.max_evaluations = seconds > 0 ? 100'000'000 : budget;
    options.max_seconds = seconds > 0 ? seconds : 600;
    options.pool = &pool;
    options.exhaustive_limit = exhaustive_limit;

    double optimum = -1;
    if (size <= exhaustive_limit) {
      SearchOptions ex = options;
      ex.max_evaluations = static_cast<int>(size) + 2;
      auto run = RunOne("exhaustive", **model, ex);
      if (run.ok()) {
        optimum = run->best;
        Row row{c.name(), moe, "exhaustive",      run->best, 0,
                0,        0,   run->wall_seconds, 0.0};
        row.evals_to_99 = run->evals_to_99;
        rows.push_back(row);
        if (csv.is_open()) {
          csv << absl::StrFormat(
              "%s,%s,%d,%d,exhaustive,0,%.6g,,%d,%d,%.3f,%.6g,%.6g\n", c.name(),
              c.model, c.gpus, moe, run->best, run->evaluations,
              run->evals_to_99, run->wall_seconds, size, optimum);
        }
      } else {
        std::fprintf(stderr, "exhaustive: %s\n",
                     run.status().ToString().c_str());
      }
    }

    std::map<std::string, std::vector<Run>> by_method;
    double megatron = 0;
    for (const std::string& method : methods) {
      const int n = method == "megatron" ? 1 : seeds;
      for (int s = first_seed; s < first_seed + n; ++s) {
        options.seed = static_cast<uint32_t>(s);
        auto run = RunOne(method, **model, options, &rl);
        if (!run.ok()) {
          std::fprintf(stderr, "%s %s seed %d: %s\n", c.name().c_str(),
                       method.c_str(), s, run.status().ToString().c_str());
          return 1;
        }
        if (method == "megatron") megatron = run->best;
        by_method[method].push_back(std::move(*run));
      }
    }
    if (megatron <= 0) {
      megatron = by_method.count("megatron")
                     ? by_method["megatron"][0]
                           .result.baseline.evaluation.output_tokens_per_s
                     : 0;
    }
    if (megatron <= 0 && !by_method.empty()) {
      megatron = by_method.begin()
                     ->second[0]
                     .result.baseline.evaluation.output_tokens_per_s;
    }
    double best_meta = 0;
    for (const std::string& m : kMetaheuristics) {
      if (!by_method.count(m)) continue;
      std::vector<double> b;
      for (const Run& r : by_method[m]) b.push_back(r.best);
      best_meta = std::max(best_meta, Median(b));
    }
    for (const std::string& method : methods) {
      const std::vector<Run>& runs = by_method[method];
      std::vector<double> best, e99, wall;
      for (const Run& r : runs) {
        best.push_back(r.best);
        e99.push_back(r.evals_to_99);
        wall.push_back(r.wall_seconds);
        if (csv.is_open()) {
          csv << absl::StrFormat(
              "%s,%s,%d,%d,%s,%u,%.6g,%.6g,%d,%d,%.3f,%.6g,%s\n", c.name(),
              c.model, c.gpus, moe, method, r.seed, r.best,
              megatron > 0 ? r.best / megatron : 0, r.evaluations,
              r.evals_to_99, r.wall_seconds, size,
              optimum > 0 ? absl::StrFormat("%.6g", optimum) : "");
        }
      }
      Row row;
      row.case_name = c.name();
      row.moe = moe;
      row.method = method;
      row.best = Median(best);
      row.ratio_megatron = megatron > 0 ? row.best / megatron : 0;
      row.ratio_meta = best_meta > 0 ? row.best / best_meta : 0;
      row.evals_to_99 = Median(e99);
      row.wall_seconds = Median(wall);
      row.gap_optimum = optimum > 0 ? 1 - row.best / optimum : -1;
      rows.push_back(row);
      // Convergence curve: median over seeds of best-so-far / megatron.
      std::vector<double> curve;
      for (int e = grid_step; e <= budget; e += grid_step) {
        std::vector<double> at;
        for (const Run& r : runs) at.push_back(BestAt(r.trace, e));
        curve.push_back(megatron > 0 ? Median(at) / megatron : 0);
      }
      curves[c.name()][method] = curve;
    }

    if (by_method.count("rl") && by_method.count("megatron")) {
      plan_lines.push_back(
          absl::StrFormat("| %s | megatron | %s |", c.name(),
                          DescribePlan(by_method["megatron"][0].result.best)));
      plan_lines.push_back(
          absl::StrFormat("| %s | rl (first seed) | %s |", c.name(),
                          DescribePlan(by_method["rl"][0].result.best)));
      for (const char* m : {"anneal", "genetic"}) {
        if (by_method.count(m) == 0) continue;
        plan_lines.push_back(
            absl::StrFormat("| %s | %s (first seed) | %s |", c.name(), m,
                            DescribePlan(by_method[m][0].result.best)));
      }
    }

    // Warm start: the first seed's cold RL run leaves its elite and weights; a
    // warm run with another seed must reach 99% of the cold final best within
    // 20% of the cold run's evaluations.
    if (warm && by_method.count("rl")) {
      const Run& cold = by_method["rl"][0];
      policy::WarmStart ws;
      for (const policy::ScoredPlan& p : cold.result.elite)
        ws.elite_plans.push_back(p.plan);
      ws.policy_weights = cold.result.policy_weights;
      ws.source = "exact";
      SearchOptions wo = options;
      wo.seed = 1001;
      wo.warm_start = &ws;
      auto run = RunOne("rl", **model, wo, &rl);
      // What the weights alone carry: the same seed warm-started with the
      // weights but no elite plans, against a cold run of that seed.
      policy::WarmStart weights_only;
      weights_only.policy_weights = ws.policy_weights;
      SearchOptions weights_options = wo;
      weights_options.warm_start = &weights_only;
      auto by_weights = RunOne("rl", **model, weights_options, &rl);
      SearchOptions cold_options = wo;
      cold_options.warm_start = nullptr;
      auto cold_again = RunOne("rl", **model, cold_options, &rl);
      if (run.ok() && by_weights.ok() && cold_again.ok()) {
        const int e = EvalsTo(run->trace, 0.99 * cold.best);
        const double frac =
            e > 0 ? static_cast<double>(e) / cold.evaluations : -1;
        warm_lines.push_back(absl::StrFormat(
            "| %s | %.6g | %d | %.6g | %d | %.1f%% | %s | %d | %d |", c.name(),
            cold.best, cold.evaluations, run->best, e, 100 * frac,
            e > 0 && frac <= 0.2 ? "yes" : "no",
            EvalsTo(by_weights->trace, 0.99 * cold.best),
            EvalsTo(cold_again->trace, 0.99 * cold.best)));
        rows.push_back(Row{c.name(), moe, "rl-warm", run->best,
                           megatron > 0 ? run->best / megatron : 0,
                           best_meta > 0 ? run->best / best_meta : 0,
                           static_cast<double>(run->evals_to_99),
                           run->wall_seconds,
                           optimum > 0 ? 1 - run->best / optimum : -1});
        if (csv.is_open()) {
          csv << absl::StrFormat(
              "%s,%s,%d,%d,rl-warm,1001,%.6g,%.6g,%d,%d,%.3f,%.6g,%s\n",
              c.name(), c.model, c.gpus, moe, run->best,
              megatron > 0 ? run->best / megatron : 0, run->evaluations,
              run->evals_to_99, run->wall_seconds, size,
              optimum > 0 ? absl::StrFormat("%.6g", optimum) : "");
        }
      }
    }
    std::fprintf(stderr, "%s done (%.0f s so far)\n", c.name().c_str(),
                 std::chrono::duration<double>(
                     std::chrono::steady_clock::now() - bench_start)
                     .count());
  }

  // --- Report
  // ---------------------------------------------------------------------------
  md += absl::StrFormat(
      "Budget %d evaluations per search (baseline included), %d seeds "
      "(%d..%d, medians), workload "
      "isl %d osl %d concurrency %d, H100 SXM 80 GB nodes of 8.\n\n",
      budget, seeds, first_seed, first_seed + seeds - 1, isl, osl, concurrency);
  md +=
      "| case | method | best tok/s | x megatron | x best metaheuristic | "
      "evals to 99% | "
      "wall s | gap to optimum |\n|---|---|---:|---:|---:|---:|---:|---:|\n";
  for (const Row& r : rows) {
    md += absl::StrFormat(
        "| %s | %s | %.0f | %s | %s | %.0f | %.2f | %s |\n", r.case_name,
        r.method, r.best,
        r.ratio_megatron > 0 ? absl::StrFormat("%.3f", r.ratio_megatron) : "-",
        r.ratio_meta > 0 ? absl::StrFormat("%.3f", r.ratio_meta) : "-",
        r.evals_to_99, r.wall_seconds,
        r.gap_optimum >= 0 ? absl::StrFormat("%.2f%%", 100 * r.gap_optimum)
                           : "-");
  }
  // Summary against the targets.
  double log_moe = 0, log_all = 0;
  int n_moe = 0, n_all = 0, rl_ge_megatron = 0, rl_ge_meta = 0, rl_faster = 0,
      n_meta = 0;
  std::map<std::string, std::map<std::string, const Row*>> index;
  for (const Row& r : rows) index[r.case_name][r.method] = &r;
  for (auto& [name, m] : index) {
    if (!m.count("rl")) continue;
    const Row& rl = *m["rl"];
    if (rl.ratio_megatron > 0) {
      log_all += std::log(rl.ratio_megatron);
      ++n_all;
      if (rl.moe) {
        log_moe += std::log(rl.ratio_megatron);
        ++n_moe;
      }
      if (rl.ratio_megatron >= 1 - 1e-9) ++rl_ge_megatron;
    }
    bool ge = true;
    bool any = false;
    for (const std::string& meta : kMetaheuristics) {
      if (!m.count(meta)) continue;
      any = true;
      if (rl.best < m[meta]->best * (1 - 1e-9)) ge = false;
    }
    if (any) {
      ++n_meta;
      if (ge) ++rl_ge_meta;
    }
  }
  // Evaluations for RL to reach each metaheuristic's final (median) level, from
  // the curves.
  std::string speed_lines;
  for (auto& [name, per_method] : curves) {
    if (!per_method.count("rl")) continue;
    const std::vector<double>& rl = per_method["rl"];
    std::vector<std::string> parts;
    bool all_faster = true;
    for (const std::string& meta : kMetaheuristics) {
      if (!per_method.count(meta)) continue;
      const std::vector<double>& mc = per_method[meta];
      const double final_level = mc.empty() ? 0 : mc.back();
      auto first_at = [&](const std::vector<double>& v) {
        for (size_t i = 0; i < v.size(); ++i) {
          if (v[i] >= final_level * (1 - 1e-9))
            return static_cast<int>((i + 1) * grid_step);
        }
        return -1;
      };
      const int e_rl = first_at(rl), e_meta = first_at(mc);
      if (e_rl < 0 || (e_meta >= 0 && e_rl > e_meta)) all_faster = false;
      parts.push_back(absl::StrFormat("%s %d vs %d", meta, e_rl, e_meta));
    }
    if (all_faster) ++rl_faster;
    speed_lines +=
        absl::StrFormat("| %s | %s | %s |\n", name, absl::StrJoin(parts, "; "),
                        all_faster ? "yes" : "no");
  }
  md += "\n**Targets.** ";
  md += absl::StrFormat(
      "RL >= megatron on %d of %d cases; geometric mean RL/megatron %.3fx over "
      "MoE cases "
      "(%d), %.3fx over all (%d); RL median >= every metaheuristic median on "
      "%d of %d "
      "cases; RL reaches each metaheuristic's final level first on %d of %d "
      "cases.\n",
      rl_ge_megatron, n_all, n_moe ? std::exp(log_moe / n_moe) : 0.0, n_moe,
      n_all ? std::exp(log_all / n_all) : 0.0, n_all, rl_ge_meta, n_meta,
      rl_faster, static_cast<int>(curves.size()));
  md += "\nEvaluations (grid of " + std::to_string(grid_step) +
        ") for the median RL curve vs the metaheuristic's own median curve to "
        "reach that "
        "metaheuristic's final median level:\n\n| case | rl vs metaheuristic | "
        "rl first |\n"
        "|---|---|---|\n" +
        speed_lines;
  md +=
      "\nPlan-space size per case:\n\n| case | degree tuples | plans "
      "|\n|---|---:|---:|\n";
  for (const std::string& l : space_lines) md += l + "\n";
  if (!plan_lines.empty()) {
    md +=
        "\nBest plans (dims: embedding qkv attention attn_out mlp_up mlp_down "
        "router expert_up expert_down lm_head; decode: batch per replica, "
        "weights and KV GB per GPU, communication share of a decode step):\n\n"
        "| case | method | plan | batch | weights GB | KV GB | decode comm | "
        "bottleneck | tok/s |\n|---|---|---|---:|---:|---:|---:|---|---:|\n";
    for (const std::string& l : plan_lines) md += l + "\n";
  }
  if (!warm_lines.empty()) {
    md +=
        "\nWarm start (cold rl first seed -> warm rl seed 1001 with its elite "
        "and "
        "weights):\n\n"
        "| case | cold best | cold evals | warm best | warm evals to 99% of "
        "cold | "
        "fraction | <= 20% | weights only: evals to 99% | cold seed 1001: "
        "evals to 99% |\n|---|---:|---:|---:|---:|---:|---|---:|---:|\n";
    for (const std::string& l : warm_lines) md += l + "\n";
    md += "\n(-1: never reached 99% of the cold best within the budget.)\n";
  }

  // Policy network vs cost model time per iteration at batch `timing_batch`.
  if (timing_batch > 0) {
    md += absl::StrFormat(
        "\nRL time per iteration at batch %d (%d evaluation thread(s) + "
        "caller; LibTorch one "
        "thread):\n\n| case | iterations | policy ms/iter | of which network "
        "(LibTorch) | cost model ms/iter | evaluations/s "
        "|\n|---|---:|---:|---:|---:|---:|\n",
        timing_batch, pool_threads);
    for (const Case& c : cases) {
      if (!(c.name() == "llama-3.1-70b@16" || c.name() == "deepseek-v3@32" ||
            c.name() == "moe-1.6t@1024" || cases.size() == 1)) {
        continue;
      }
      auto model = MakeModel(c, isl, osl, concurrency);
      if (!model.ok()) continue;
      policy::RlOptions o = rl;
      o.policy.batch_size = timing_batch;
      SearchOptions to;
      // At least 40 iterations, so that one-off first-call costs do not
      // dominate.
      to.max_evaluations = std::max(budget, 40 * timing_batch);
      to.pool = &pool;
      to.seed = 1;
      auto run = RunOne("rl", **model, to, &o);
      if (!run.ok()) continue;
      const policy::RlStats& st = run->rl_stats;
      const int it = std::max(1, st.iterations);
      md += absl::StrFormat(
          "| %s | %d | %.2f | %.2f | %.2f | %.0f |\n", c.name(), st.iterations,
          1e3 * st.policy_seconds / it, 1e3 * st.network_seconds / it,
          1e3 * st.cost_model_seconds / it,
          run->evaluations / std::max(1e-9, st.total_seconds));
    }
  }
  const double total = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - bench_start)
                           .count();
  md += absl::StrFormat("\nTotal wall time %.0f s.\n", total);
  std::fputs(md.c_str(), stdout);
  if (!md_path.empty()) std::ofstream(md_path) << md;

  if (!png_path.empty()) {
    const std::string dat = png_path + ".dat";
    std::ofstream out(dat);
    std::vector<std::string> plot_methods;
    for (const std::string& m : methods) plot_methods.push_back(m);
    for (auto& [name, per_method] : curves) {
      out << "# " << name << "\n";
      const size_t points =
          per_method.empty() ? 0 : per_method.begin()->second.size();
      for (size_t i = 0; i < points; ++i) {
        out << (i + 1) * grid_step;
        for (const std::string& m : plot_methods) {
          out << " " << (per_method.count(m) ? per_method[m][i] : 0);
        }
        out << "\n";
      }
      out << "\n\n";
    }
    out.close();
    const int n = static_cast<int>(curves.size());
    const int cols = n <= 2 ? n : (n <= 6 ? 3 : 4);
    const int rows_n = (n + cols - 1) / cols;
    std::string gp = absl::StrFormat(
        "set terminal pngcairo noenhanced size %d,%d font ',10'\n"
        "set output '%s'\n"
        "set multiplot layout %d,%d title 'best-so-far / megatron vs "
        "evaluations (median "
        "over seeds)'\nset key bottom right\nset grid\n",
        500 * cols, 380 * rows_n, png_path, rows_n, cols);
    int block = 0;
    for (auto& [name, per_method] : curves) {
      gp += absl::StrFormat("set title '%s'\nplot ", name);
      for (size_t m = 0; m < plot_methods.size(); ++m) {
        gp += absl::StrFormat(
            "%s'%s' index %d using 1:%d with lines lw 2 title '%s'",
            m ? ", " : "", dat, block, m + 2, plot_methods[m]);
      }
      gp += "\n";
      ++block;
    }
    gp += "unset multiplot\n";
    const std::string gp_path = png_path + ".gp";
    std::ofstream(gp_path) << gp;
    const int rc = std::system(("gnuplot '" + gp_path + "'").c_str());
    if (rc != 0) std::fprintf(stderr, "gnuplot failed (%d)\n", rc);
    std::remove(gp_path.c_str());
    std::remove(dat.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace shardplan::bench

int main(int argc, char** argv) { return shardplan::bench::Main(argc, argv); }
