// shardplan-bench-simulator: cost-model evaluations per second, one benchmark
// per catalog model. Each benchmark evaluates a varied stream of valid plans
// (different degrees, operator dims, micro-batches and batch sizes), not one
// cached plan. items_per_second is the figure to read (one core; targets: >=
// 1e6/s for llama-3.1-70b, >= 5e5/s for the slowest catalog model, issue 33).
// BM_BestBatch/* measure Evaluate with batch_size 0 and concurrency 0 (the
// batch scan). BM_SearchRun/* measure the search's hot path: decoding a batch
// of sampled decisions, evaluating it and the bookkeeping of every evaluation
// (best, elite history, frontier archive), cache off as exhaustive runs it;
// BM_FrontierOffer/* the frontier archive's part alone. BM_TransitionDiffHuge:
// one re-planning diff of a 16,384-GPU cluster of one-GPU nodes.
//
//   build/bin/shardplan-bench-simulator [--benchmark_filter=...]
//
// Table mode: `--table[=N]` evaluates N (default 200000) plans of BM_Evaluate's
// stream per catalog model, in catalog order, and prints one row per model
// (CPU seconds per evaluation, evaluations per CPU second);
// `--table_model=NAME` restricts it to one model. The loop is the function
// RunEvaluations, so that callgrind can count its instructions alone:
//   valgrind --tool=callgrind '--toggle-collect=*RunEvaluations*'
//       build/bin/shardplan-bench-simulator --table=2048 --table_model=NAME
// (one command line).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "policy/internal/pareto_archive.h"
#include "policy/internal/search_run.h"
#include "policy/plan_space.h"
#include "policy/searcher.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/cost_model.h"
#include "simulator/spec.h"
#include "simulator/transition.h"
#include "simulator/types.h"
#include "tests/bench/catalog_models.h"

namespace shardplan::simulator {
namespace {

std::unique_ptr<const CostModel> MakeModel(const std::string& name,
                                           int concurrency) {
  absl::StatusOr<CatalogModel> catalog = ResolveCatalogModel(name);
  if (!catalog.ok()) return nullptr;
  const shardplan::v1::ModelSource& source = catalog->source;
  shardplan::v1::ClusterSpec cluster;
  cluster.set_hardware("h100-sxm-80gb");
  cluster.set_num_gpus(BenchGpusFor(catalog->dims));
  cluster.set_gpus_per_node(8);
  shardplan::v1::Workload workload;
  workload.set_input_tokens(1024);
  workload.set_output_tokens(256);
  workload.set_concurrency(concurrency);
  workload.set_weight_dtype("bf16");
  workload.set_kv_cache_dtype("bf16");
  absl::StatusOr<Problem> problem = ProblemFromProto(source, cluster, workload);
  if (!problem.ok()) return nullptr;
  absl::StatusOr<std::unique_ptr<const CostModel>> model =
      CostModel::Create(*problem);
  if (!model.ok()) return nullptr;
  return std::move(*model);
}

// A deterministic stream of valid plans: every (dp, tp, pp, ep) factorisation,
// random dims, micro-batches and batch sizes (seed 42).
std::vector<PlanDims> PlanStream(const CostModel& model, bool explicit_batch,
                                 int count) {
  const int n = model.problem().cluster.num_gpus;
  std::mt19937 rng(42);
  std::vector<PlanDims> degrees;
  for (int tp = 1; tp <= n; tp *= 2) {
    for (int pp = 1; tp * pp <= n; pp *= 2) {
      const int dp = n / (tp * pp);
      for (int ep = 1; ep <= dp * tp; ep *= 2) {
        PlanDims p;
        p.dp = dp;
        p.tp = tp;
        p.pp = pp;
        p.ep = ep;
        degrees.push_back(p);
        if (!model.problem().model.is_moe()) break;
      }
    }
  }
  const std::vector<int>& batches = BatchSizeCandidates();
  std::vector<PlanDims> plans;
  for (int attempt = 0;
       attempt < count * 50 && static_cast<int>(plans.size()) < count;
       ++attempt) {
    PlanDims p = degrees[rng() % degrees.size()];
    RandomDimsAndMicroBatches(rng, &p);
    p.batch_size = explicit_batch ? batches[rng() % 14] : 0;
    if (model.ValidatePlan(p).ok()) plans.push_back(p);
  }
  return plans;
}

void BM_Evaluate(benchmark::State& state, const std::string& name,
                 bool explicit_batch, int concurrency = 0) {
  std::unique_ptr<const CostModel> model = MakeModel(name, concurrency);
  if (model == nullptr) {
    state.SkipWithError("cannot build the problem");
    return;
  }
  const std::vector<PlanDims> plans = PlanStream(*model, explicit_batch, 512);
  if (plans.empty()) {
    state.SkipWithError("no valid plans");
    return;
  }
  size_t i = 0;
  int feasible = 0;
  for (auto _ : state) {
    const Evaluation e = model->Evaluate(plans[i]);
    feasible += e.feasible ? 1 : 0;
    benchmark::DoNotOptimize(e);
    if (++i == plans.size()) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["plans"] = static_cast<double>(plans.size());
  state.counters["feasible_ratio"] =
      state.iterations() > 0
          ? static_cast<double>(feasible) / state.iterations()
          : 0;
}

// `count` evaluations of `plans`, cycling; returns how many were feasible.
// Not inlined: the callgrind command above collects this function only.
__attribute__((noinline)) int RunEvaluations(const CostModel& model,
                                             const std::vector<PlanDims>& plans,
                                             int count) {
  int feasible = 0;
  size_t i = 0;
  for (int n = 0; n < count; ++n) {
    const Evaluation e = model.Evaluate(plans[i]);
    feasible += e.feasible ? 1 : 0;
    benchmark::DoNotOptimize(e);
    if (++i == plans.size()) i = 0;
  }
  return feasible;
}

double CpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// The table mode (see the top of this file). Returns main's exit code.
int PrintTable(int count, const std::string& only) {
  std::printf(
      "| model | GPUs | plans | feasible | ns/eval (CPU) | evals/s |\n"
      "|---|---:|---:|---:|---:|---:|\n");
  for (const shardplan::v1::ModelSpec& spec : CatalogModels()) {
    if (!only.empty() && spec.name() != only) continue;
    std::unique_ptr<const CostModel> model = MakeModel(spec.name(), 0);
    if (model == nullptr) {
      std::fprintf(stderr, "%s: cannot build the problem\n",
                   spec.name().c_str());
      return 1;
    }
    const std::vector<PlanDims> plans = PlanStream(*model, true, 512);
    if (plans.empty()) {
      std::fprintf(stderr, "%s: no valid plans\n", spec.name().c_str());
      return 1;
    }
    const double start = CpuSeconds();
    const int feasible = RunEvaluations(*model, plans, count);
    const double seconds = CpuSeconds() - start;
    std::printf("| %s | %d | %zu | %.2f | %.0f | %.0fk |\n",
                spec.name().c_str(), model->problem().cluster.num_gpus,
                plans.size(), static_cast<double>(feasible) / count,
                1e9 * seconds / count, count / seconds / 1e3);
  }
  return 0;
}

void BM_SearchRun(benchmark::State& state, const std::string& name) {
  std::unique_ptr<const CostModel> model = MakeModel(name, 0);
  if (model == nullptr) {
    state.SkipWithError("cannot build the problem");
    return;
  }
  policy::SearchOptions options;
  options.max_evaluations = std::numeric_limits<int>::max();
  options.max_seconds = 1e9;
  policy::CancellationToken cancel;
  policy::SearchObserver observer;
  policy::internal::SearchRun run(*model, options, cancel, observer);
  if (!run.Start().ok()) {
    state.SkipWithError("cannot build the plan space");
    return;
  }
  run.DisableCache();
  std::mt19937_64 rng(42);
  std::vector<policy::Decisions> batch(256);
  for (policy::Decisions& d : batch) d = run.space().SampleUniform(rng);
  for (auto _ : state) {
    benchmark::DoNotOptimize(run.Evaluate(batch));
  }
  state.SetItemsProcessed(state.iterations() * batch.size());
}

// The frontier archive's share of the hot path: one Offer per evaluated plan,
// on the evaluations of a real stream of plans (most are dominated).
void BM_FrontierOffer(benchmark::State& state, const std::string& name) {
  std::unique_ptr<const CostModel> model = MakeModel(name, 0);
  if (model == nullptr) {
    state.SkipWithError("cannot build the problem");
    return;
  }
  std::vector<policy::ScoredPlan> scored;
  for (const PlanDims& plan : PlanStream(*model, false, 4096)) {
    policy::ScoredPlan s;
    s.plan = plan;
    s.evaluation = model->Evaluate(plan);
    scored.push_back(s);
  }
  policy::internal::ParetoArchive archive(64);
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(archive.Offer(scored[i]));
    if (++i == scored.size()) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["frontier"] = archive.size();
}

// Re-planning a cluster of 16,384 one-GPU nodes (llama-3.1-8b, 16,384
// replicas of one GPU) after 8 nodes are gone: TransitionModel::Diff of
// plans on the 16,376 left, as the search prices each candidate (no node
// loads). One iteration = one Diff, the plans in turn.
void BM_TransitionDiffHuge(benchmark::State& state) {
  auto problem_on = [](int gpus) -> absl::StatusOr<Problem> {
    shardplan::v1::ModelSource source;
    source.set_catalog_name("llama-3.1-8b");
    shardplan::v1::ClusterSpec cluster;
    cluster.set_hardware("h100-sxm-80gb");
    cluster.set_num_gpus(gpus);
    cluster.set_gpus_per_node(1);
    shardplan::v1::Workload workload;
    workload.set_input_tokens(1024);
    workload.set_output_tokens(128);
    return ProblemFromProto(source, cluster, workload);
  };
  absl::StatusOr<Problem> old_problem = problem_on(16384);
  absl::StatusOr<Problem> new_problem = problem_on(16376);
  if (!old_problem.ok() || !new_problem.ok()) {
    state.SkipWithError("cannot build the problems");
    return;
  }
  RunningDeployment running;
  running.problem = *old_problem;
  running.plan.replicas = 16384;
  for (int node = 16376; node < 16384; ++node) {
    running.removed_nodes.push_back(node);
  }
  absl::StatusOr<std::unique_ptr<const TransitionModel>> model =
      TransitionModel::Create(running, *new_problem);
  if (!model.ok()) {
    state.SkipWithError("cannot build the transition model");
    return;
  }
  // 16,376 = 8 x 2,047: every tp and pp of up to 8 GPUs per replica.
  std::vector<PlanDims> plans;
  for (int tp : {1, 2, 4, 8}) {
    for (int pp = 1; tp * pp <= 8; pp *= 2) {
      PlanDims p;
      p.tp = tp;
      p.pp = pp;
      p.replicas = 16376 / (tp * pp);
      plans.push_back(p);
    }
  }
  size_t i = 0;
  for (auto _ : state) {
    const TransitionCost cost = (*model)->Diff(plans[i]);
    benchmark::DoNotOptimize(cost);
    if (++i == plans.size()) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
}

void RegisterAll() {
  for (const shardplan::v1::ModelSpec& spec : CatalogModels()) {
    const std::string name = spec.name();
    benchmark::RegisterBenchmark(
        ("BM_Evaluate/" + name).c_str(),
        [name](benchmark::State& s) { BM_Evaluate(s, name, true); });
  }
  for (const char* name : {"llama-3.1-70b", "deepseek-v3"}) {
    const std::string n = name;
    benchmark::RegisterBenchmark(
        ("BM_BestBatch/" + n).c_str(),
        [n](benchmark::State& s) { BM_Evaluate(s, n, false); });
    benchmark::RegisterBenchmark(
        ("BM_SearchRun/" + n).c_str(),
        [n](benchmark::State& s) { BM_SearchRun(s, n); });
    benchmark::RegisterBenchmark(
        ("BM_FrontierOffer/" + n).c_str(),
        [n](benchmark::State& s) { BM_FrontierOffer(s, n); });
  }
  // The workload's fixed concurrency (batch 0): the search's usual case; at
  // 512 requests per replica many plans overflow the KV cache and queue
  // (a second pass at the running batch).
  benchmark::RegisterBenchmark(
      "BM_FixedConcurrency512/llama-3.1-70b",
      [](benchmark::State& s) { BM_Evaluate(s, "llama-3.1-70b", false, 512); });
  benchmark::RegisterBenchmark("BM_TransitionDiffHuge", BM_TransitionDiffHuge);
}

}  // namespace
}  // namespace shardplan::simulator

int main(int argc, char** argv) {
  int table = 0;
  std::string table_model;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--table") == 0) {
      table = 200000;
    } else if (std::strncmp(argv[i], "--table=", 8) == 0) {
      table = std::atoi(argv[i] + 8);
    } else if (std::strncmp(argv[i], "--table_model=", 14) == 0) {
      table_model = argv[i] + 14;
      if (table == 0) table = 200000;
    }
  }
  if (table > 0) return shardplan::simulator::PrintTable(table, table_model);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  shardplan::simulator::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
