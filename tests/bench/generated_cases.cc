#include "tests/bench/generated_cases.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "policy/baselines.h"
#include "policy/plan_space.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/cost_model.h"
#include "simulator/megatron.h"
#include "simulator/spec.h"
#include "simulator/status_macros.h"

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
  cluster.set_hardware("h100-sxm-80gb");
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

absl::StatusOr<policy::ScoredPlan> BestOf(
    const std::string& method, const simulator::CostModel& model,
    const policy::SearchOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<policy::Searcher> searcher,
                   policy::CreateSearcher(method));
  policy::CancellationToken cancel;
  policy::SearchObserver observer;
  ASSIGN_OR_RETURN(policy::SearchResult r,
                   searcher->Search(model, options, cancel, observer));
  return r.best;
}

// "r2 dp8 tp1 pp1 ep8 | col col bat ..." with the batch and the share of
// communication in the decode step: enough to see why one plan beats another.
std::string Describe(const policy::ScoredPlan& s) {
  const simulator::PlanDims& p = s.plan;
  std::vector<std::string> dims;
  for (int o = 0; o < simulator::kNumOpKinds; ++o) {
    dims.push_back(
        std::string(simulator::ShardDimName(p.dims[o])).substr(0, 3));
  }
  double comm = 0, total = 0;
  for (const simulator::OpCost& c : s.evaluation.decode) {
    comm += c.comm_s;
    total += c.comm_s + std::max(c.compute_s, c.memory_s);
  }
  return absl::StrFormat("r%d dp%d tp%d pp%d ep%d [%s] batch %d, comm %.0f%%",
                         p.replicas, p.dp, p.tp, p.pp, p.ep,
                         absl::StrJoin(dims, " "), s.evaluation.batch_size,
                         total > 0 ? 100 * comm / total : 0.0);
}

}  // namespace

std::string GeneratedCase::name() const {
  std::string slo;
  if (max_ttft_ms > 0) absl::StrAppend(&slo, " ttft<", max_ttft_ms);
  if (max_tpot_ms > 0) absl::StrAppend(&slo, " tpot<", max_tpot_ms);
  return absl::StrFormat("%s@%d %s %d/%d%s", model, gpus, weight_dtype, isl,
                         osl, slo);
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

}  // namespace shardplan::bench
