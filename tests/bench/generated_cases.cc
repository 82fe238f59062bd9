#include "tests/bench/generated_cases.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "policy/baselines.h"
#include "policy/disaggregated_grid.h"
#include "policy/plan_space.h"
#include "policy/rl/rl_searcher.h"
#include "proto/status_macros.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/cost_model.h"
#include "simulator/megatron.h"
#include "simulator/spec.h"
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

namespace {

// One draw of the generator (model, GPUs, lengths, SLOs) and the model's
// native dtype; `moe` tells whether the model is a MoE.
GeneratedCase Draw(std::mt19937_64& rng, bool* moe) {
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
  *moe = m.moe;
  return c;
}

// Some plan can serve the problem: the grid reference is feasible.
bool GridFeasible(const GeneratedCase& c) {
  auto model = MakeModel(c, c.gpus);
  if (!model.ok()) return false;
  auto space = policy::PlanSpace::Create(**model);
  return space.ok() && Tps(policy::GridBest(**space)) > 0;
}

// A disaggregated plan space exists and the whole disaggregated sweep finds a
// feasible plan.
bool DisaggregatedFeasible(const GeneratedCase& c) {
  auto model = MakeModel(c, c.gpus);
  if (!model.ok()) return false;
  if (!policy::PlanSpace::CreateDisaggregated(**model).ok()) return false;
  policy::CancellationToken cancel;
  return policy::SweepDisaggregated(**model, 1 << 20, 1, cancel).found;
}

}  // namespace

// Draws from `seed` until `count` cases pass `keep` (which may change a
// case, drawing from the same generator), at most 50 draws per case.
static std::vector<GeneratedCase> DrawCases(
    uint64_t seed, int count,
    const std::function<bool(GeneratedCase&, bool, std::mt19937_64&)>& keep) {
  std::mt19937_64 rng(seed);
  std::vector<GeneratedCase> out;
  for (int attempt = 0;
       attempt < 50 * count && static_cast<int>(out.size()) < count;
       ++attempt) {
    bool moe = false;
    GeneratedCase c = Draw(rng, &moe);
    if (keep(c, moe, rng)) out.push_back(std::move(c));
  }
  return out;
}

std::vector<GeneratedCase> GenerateCases(uint64_t seed, int count,
                                         bool moe_only) {
  return DrawCases(seed, count,
                   [&](GeneratedCase& c, bool moe, std::mt19937_64&) {
                     return (!moe_only || moe) && GridFeasible(c);
                   });
}

absl::StatusOr<std::string> FamilyKey(const GeneratedCase& c) {
  ASSIGN_OR_RETURN(auto model, MakeModel(c, c.gpus));
  const simulator::Problem& p = model->problem();
  return absl::StrCat(p.model.family.empty() ? "unknown" : p.model.family, "|",
                      p.cluster.hardware.name, "|", p.cluster.num_gpus, "x",
                      p.cluster.gpus_per_node);
}

std::vector<GeneratedCase> GenerateFamilyCases(uint64_t seed, int count,
                                               const GeneratedCase& like,
                                               bool disaggregated) {
  std::vector<GeneratedCase> out;
  const absl::StatusOr<std::string> family = FamilyKey(like);
  if (!family.ok()) return out;
  std::mt19937_64 rng(seed);
  // About one draw in 30-90 is of the family (9 GPU counts, 1-3 of the 10
  // models), so the draws are many; the cheap tests come first.
  for (int attempt = 0;
       attempt < 5000 * count && static_cast<int>(out.size()) < count;
       ++attempt) {
    bool moe = false;
    GeneratedCase c = Draw(rng, &moe);
    c.hardware = like.hardware;
    c.gpus_per_node = like.gpus_per_node;
    if (c.gpus != like.gpus || c.name() == like.name()) continue;
    const absl::StatusOr<std::string> key = FamilyKey(c);
    if (!key.ok() || *key != *family) continue;
    if (!GridFeasible(c)) continue;
    if (disaggregated && !DisaggregatedFeasible(c)) continue;
    out.push_back(std::move(c));
  }
  return out;
}

namespace {

// Equal evaluations (options.budget), or equal wall time (options.seconds).
void EqualWork(const GeneratedOptions& options, policy::SearchOptions& so) {
  so.max_evaluations = options.seconds > 0 ? 100'000'000 : options.budget;
  so.max_seconds = options.seconds > 0 ? options.seconds : 600;
}
std::string WorkText(const GeneratedOptions& options) {
  return options.seconds > 0
             ? absl::StrFormat("%g s of wall time each", options.seconds)
             : absl::StrFormat("%d evaluations", options.budget);
}

}  // namespace

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
    EqualWork(options, so);
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
      &md, absl::StrFormat(
               "\nRL (median of %d seeds, %s) >= grid on %d/%zu cases, "
               ">= the best metaheuristic on %d/%zu; monotone in GPUs on %d/%d "
               "checked.\n",
               options.seeds, WorkText(options), rl_ge_grid, cases.size(),
               rl_ge_meta, cases.size(), monotone_ok, monotone_checked));
  absl::StrAppend(&md, plans);
  return md;
}

std::vector<GeneratedCase> GenerateDisaggregatedCases(uint64_t seed,
                                                      int count) {
  std::vector<GeneratedCase> out;
  for (GeneratedCase& c : GenerateCases(seed, count, /*moe_only=*/false)) {
    if (DisaggregatedFeasible(c)) out.push_back(std::move(c));
  }
  return out;
}

std::vector<GeneratedCase> GenerateLargeDisaggregatedCases(uint64_t seed,
                                                           int count) {
  constexpr int kLargeGpus[] = {256, 384, 512};
  return DrawCases(seed, count,
                   [&](GeneratedCase& c, bool, std::mt19937_64& rng) {
                     c.gpus = kLargeGpus[rng() % std::size(kLargeGpus)];
                     return DisaggregatedFeasible(c);
                   });
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
    EqualWork(options, so);
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
          "\nCells: median over %d seeds of the best tok/s at %s "
          "(median evaluations to 99%% of the best any method found on the "
          "case). RL >= every other method and the sweep on %d/%zu cases; > "
          "rl-no-learning on %d/%zu; >= the sweep on %d/%zu; reaches 99%% in "
          "fewer evaluations than rl-no-learning on %d/%zu, in more on "
          "%d/%zu.\n",
          options.seeds, WorkText(options), rl_ge_all, cases.size(),
          rl_gt_frozen, cases.size(), rl_ge_sweep, cases.size(), rl_faster,
          cases.size(), rl_slower, cases.size()));
  absl::StrAppend(&md, plans);
  return md;
}

namespace {

// The space a transfer search runs in: the joint space when disaggregated.
struct TransferProblem {
  std::unique_ptr<const simulator::CostModel> model;
  std::unique_ptr<const policy::PlanSpace> joint;  // disaggregated only
};

absl::StatusOr<TransferProblem> MakeProblem(const GeneratedCase& c,
                                            bool disaggregated) {
  TransferProblem p;
  ASSIGN_OR_RETURN(p.model, MakeModel(c, c.gpus));
  if (disaggregated) {
    ASSIGN_OR_RETURN(p.joint, policy::PlanSpace::CreateDisaggregated(*p.model));
  }
  return p;
}

policy::SearchOptions OptionsFor(const TransferProblem& p, int budget,
                                 uint32_t seed,
                                 const GeneratedOptions& options) {
  policy::SearchOptions so;
  so.disaggregated = p.joint != nullptr;
  so.space = p.joint.get();
  so.max_evaluations = budget;
  so.max_seconds = 600;
  so.pool = options.pool;
  so.seed = seed;
  return so;
}

// The weights a chain of rl searches leaves: each search starts from the
// previous one's weights (no elite plans) and hands its own on.
struct Chain {
  std::string weights;
  int loaded = 0;       // searches that loaded the previous weights
  int evaluations = 0;  // of all the chain's searches
  double seconds = 0;
};

bool TrainsDisaggregated(const TransferOptions& transfer) {
  return transfer.disaggregated ? !transfer.train_aggregated
                                : transfer.train_disaggregated;
}

// The chain's searches draw seeds first_seed, first_seed + 1, ...
absl::StatusOr<Chain> Train(const std::vector<GeneratedCase>& problems,
                            uint32_t first_seed,
                            const GeneratedOptions& options,
                            const TransferOptions& transfer) {
  Chain chain;
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < problems.size(); ++i) {
    ASSIGN_OR_RETURN(TransferProblem p,
                     MakeProblem(problems[i], TrainsDisaggregated(transfer)));
    policy::SearchOptions so =
        OptionsFor(p, transfer.train_budget,
                   first_seed + static_cast<uint32_t>(i), options);
    policy::WarmStart weights_only;
    weights_only.policy_weights = chain.weights;
    if (!chain.weights.empty()) so.warm_start = &weights_only;
    ASSIGN_OR_RETURN(policy::SearchResult r, ResultOf("rl", *p.model, so));
    // With no warm-start plans, warm_started says the weights were loaded.
    chain.loaded += !chain.weights.empty() && r.warm_started;
    if (r.policy_weights.empty()) {
      return absl::InternalError("an rl search returned no policy weights");
    }
    chain.weights = std::move(r.policy_weights);
    chain.evaluations += r.evaluations;
  }
  chain.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return chain;
}

// Where a test search's starting weights come from.
enum class Weights { kFresh, kOwnFamily, kOtherFamily };

struct TransferMethod {
  const char* label;
  const char* method;
  Weights weights;
};
// The first two are compared throughout; the third is the control: weights
// trained just as long on another family's problems.
constexpr TransferMethod kTransferMethods[] = {
    {"rl transferred", "rl", Weights::kOwnFamily},
    {"rl fresh", "rl", Weights::kFresh},
    {"rl other family's weights", "rl", Weights::kOtherFamily},
    {"rl-no-learning transferred", "rl-no-learning", Weights::kOwnFamily},
    {"rl-no-learning fresh", "rl-no-learning", Weights::kFresh},
    {"anneal", "anneal", Weights::kFresh},
    {"genetic", "genetic", Weights::kFresh},
    {"random", "random", Weights::kFresh},
};
constexpr size_t kNumTransferMethods = std::size(kTransferMethods);

}  // namespace

absl::StatusOr<std::string> RunTransferCases(
    const std::vector<GeneratedCase>& held_out, const GeneratedOptions& options,
    const TransferOptions& transfer) {
  // By family key (or "all"): the training problems, and one chain per test
  // seed (seed s trains with seeds 1000 s, 1000 s + 1, ...), so that the
  // medians cover the training's randomness too.
  std::map<std::string, std::vector<GeneratedCase>> problems_of;
  std::map<std::string, std::vector<Chain>> chains;
  std::vector<std::string> chain_keys;
  const bool train_disaggregated = TrainsDisaggregated(transfer);
  std::string training =
      "| held-out case | family | training problems (generator seed " +
      absl::StrCat(transfer.train_seed) +
      ", in order) | weights loaded | training evaluations | training s "
      "|\n|---|---|---|---|---|---|\n";
  for (const GeneratedCase& c : held_out) {
    ASSIGN_OR_RETURN(const std::string family, FamilyKey(c));
    const std::string key = transfer.across_families ? "all" : family;
    chain_keys.push_back(key);
    if (!chains.count(key)) {
      std::vector<GeneratedCase>& problems = problems_of[key];
      problems = transfer.across_families
                     ? (train_disaggregated
                            ? GenerateDisaggregatedCases(
                                  transfer.train_seed, transfer.train_problems)
                            : GenerateCases(transfer.train_seed,
                                            transfer.train_problems, false))
                     : GenerateFamilyCases(transfer.train_seed,
                                           transfer.train_problems, c,
                                           train_disaggregated);
      std::vector<Chain>& seed_chains = chains[key];
      for (int s = 1; s <= options.seeds && !problems.empty(); ++s) {
        if (transfer.one_chain && s > 1) {
          seed_chains.push_back(seed_chains.front());
          continue;
        }
        ASSIGN_OR_RETURN(
            Chain chain,
            Train(problems,
                  static_cast<uint32_t>(transfer.one_chain ? 1 : 1000 * s),
                  options, transfer));
        seed_chains.push_back(std::move(chain));
      }
    }
    std::vector<std::string> names;
    for (const GeneratedCase& t : problems_of[key]) names.push_back(t.name());
    int loaded = 0, evaluations = 0;
    double seconds = 0;
    for (const Chain& chain : chains[key]) {
      loaded += chain.loaded;
      evaluations += chain.evaluations;
      seconds += chain.seconds;
    }
    absl::StrAppend(
        &training,
        absl::StrFormat("| %s | %s | %s | %d/%d | %d | %.1f |\n", c.name(),
                        family,
                        names.empty() ? "none found"
                        : transfer.across_families && chain_keys.size() > 1
                            ? "the same"
                            : absl::StrJoin(names, "; "),
                        loaded,
                        static_cast<int>(chains[key].size() *
                                         std::max<int>(0, names.size() - 1)),
                        evaluations, seconds));
  }

  // Per budget: the table rows and the summary counts.
  struct Tally {
    std::string rows;
    int cases = 0, gt_fresh = 0, lt_fresh = 0, ge_others = 0, faster = 0,
        slower = 0, pairs_ahead = 0, pairs_behind = 0, other_ahead = 0,
        other_behind = 0, other_cases = 0;
    double log_ratio = 0, log_other = 0;
    double worst_pair = 0;  // the lowest transferred / fresh of a pair
    double best_pair = 0;   // the highest (the same lottery the other way)
    // Searches that ended below half the best any run found on the case:
    // transferred, fresh (a pair's ratio compares two such lotteries).
    int below_half_transferred = 0, below_half_fresh = 0;
  };
  std::map<int, Tally> tallies;
  int transfer_runs = 0, transfer_loaded = 0;
  std::string sampling = absl::StrFormat(
      "\nAt %d evaluations, median over the seeds: rl iterations (sampled "
      "batches) and the first sampled batch's mean reward (the searcher's "
      "reward: log of throughput over Megatron's, penalties for infeasible "
      "plans):\n\n| case | iterations fresh | iterations transferred | "
      "first batch fresh | first batch transferred | first batch other "
      "family's |\n|---|---|---|---|---|---|\n",
      transfer.budgets.empty() ? 0 : transfer.budgets.back());
  for (size_t i = 0; i < held_out.size(); ++i) {
    const GeneratedCase& c = held_out[i];
    const std::vector<Chain>& own = chains[chain_keys[i]];
    if (own.empty()) continue;
    // The control's weights: the next held-out case's family that differs
    // (none when one chain serves every case).
    const std::vector<Chain>* other = nullptr;
    for (size_t k = 1; k < held_out.size() && other == nullptr; ++k) {
      const std::string& key = chain_keys[(i + k) % held_out.size()];
      if (key != chain_keys[i] && !chains[key].empty()) other = &chains[key];
    }
    ASSIGN_OR_RETURN(TransferProblem p, MakeProblem(c, transfer.disaggregated));
    // Per budget, method and seed: the final best and its trace.
    std::map<int, std::vector<std::vector<double>>> finals;
    std::map<int, std::vector<std::vector<EvalTrace>>> traces;
    // At the last budget, per rl method (the first three): iterations and
    // the first sampled batch's mean reward, per seed.
    std::vector<std::vector<double>> iterations(3), first_reward(3);
    double best_known = 0;
    for (int budget : transfer.budgets) {
      finals[budget].resize(kNumTransferMethods);
      traces[budget].resize(kNumTransferMethods);
      for (size_t m = 0; m < kNumTransferMethods; ++m) {
        const Weights from = kTransferMethods[m].weights;
        if (from == Weights::kOtherFamily && other == nullptr) continue;
        for (int s = 1; s <= options.seeds; ++s) {
          policy::SearchOptions so =
              OptionsFor(p, budget, static_cast<uint32_t>(s), options);
          policy::WarmStart weights_only;
          if (from != Weights::kFresh) {
            weights_only.policy_weights =
                (from == Weights::kOwnFamily ? own : *other)[s - 1].weights;
            so.warm_start = &weights_only;
          }
          traces[budget][m].emplace_back();
          policy::RlStats stats;
          ASSIGN_OR_RETURN(
              policy::SearchResult r,
              ResultOf(kTransferMethods[m].method, *p.model, so,
                       &traces[budget][m].back(), m < 3 ? &stats : nullptr));
          if (m < 3 && budget == transfer.budgets.back()) {
            iterations[m].push_back(stats.iterations);
            if (!stats.mean_rewards.empty())
              first_reward[m].push_back(stats.mean_rewards[0]);
          }
          if (from != Weights::kFresh) {
            ++transfer_runs;
            transfer_loaded += r.warm_started;
          }
          finals[budget][m].push_back(Tps(r.best));
          best_known = std::max(best_known, Tps(r.best));
        }
      }
    }
    for (int budget : transfer.budgets) {
      const int never = budget + 1;
      const std::vector<std::vector<double>>& f = finals[budget];
      std::vector<double> medians, to_99;
      for (size_t m = 0; m < kNumTransferMethods; ++m) {
        medians.push_back(Median(f[m]));
        std::vector<double> e;
        for (const EvalTrace& t : traces[budget][m])
          e.push_back(t.EvalsTo(0.99 * best_known, never));
        to_99.push_back(e.empty() ? never : Median(e));
      }
      // Against everything that starts from fresh weights.
      double best_other = 0;
      for (size_t m = 0; m < kNumTransferMethods; ++m) {
        if (kTransferMethods[m].weights == Weights::kFresh)
          best_other = std::max(best_other, medians[m]);
      }
      Tally& t = tallies[budget];
      for (int s = 0; s < options.seeds; ++s) {
        if (f[1][s] > 0 &&
            (t.worst_pair == 0 || f[0][s] / f[1][s] < t.worst_pair))
          t.worst_pair = f[0][s] / f[1][s];
        // The pairs far behind, named, so that they can be searched again
        // alone (the table shows medians only).
        if (f[1][s] > 0 && f[0][s] < 0.5 * f[1][s])
          std::fprintf(stderr,
                       "pair behind: %s seed %d at %d evaluations: "
                       "transferred %.0f, fresh %.0f (%.3f)\n",
                       c.name().c_str(), s + 1, budget, f[0][s], f[1][s],
                       f[0][s] / f[1][s]);
        if (!f[2].empty() && f[1][s] > 0 && f[2][s] < 0.5 * f[1][s])
          std::fprintf(stderr,
                       "other family's pair behind: %s seed %d at %d "
                       "evaluations: %.0f, fresh %.0f (%.3f)\n",
                       c.name().c_str(), s + 1, budget, f[2][s], f[1][s],
                       f[2][s] / f[1][s]);
        if (f[1][s] > 0) t.best_pair = std::max(t.best_pair, f[0][s] / f[1][s]);
        t.below_half_transferred += f[0][s] < 0.5 * best_known;
        t.below_half_fresh += f[1][s] < 0.5 * best_known;
        t.pairs_ahead += f[0][s] > f[1][s] * (1 + 1e-9);
        t.pairs_behind += f[0][s] < f[1][s] * (1 - 1e-9);
        if (!f[2].empty()) {
          t.other_ahead += f[2][s] > f[1][s] * (1 + 1e-9);
          t.other_behind += f[2][s] < f[1][s] * (1 - 1e-9);
        }
      }
      ++t.cases;
      t.gt_fresh += medians[0] > medians[1] * (1 + 1e-9);
      t.lt_fresh += medians[0] < medians[1] * (1 - 1e-9);
      t.ge_others += medians[0] >= best_other * (1 - 1e-9);
      t.faster += to_99[0] < to_99[1];
      t.slower += to_99[0] > to_99[1];
      if (medians[0] > 0 && medians[1] > 0)
        t.log_ratio += std::log(medians[0] / medians[1]);
      if (!f[2].empty()) {
        ++t.other_cases;
        if (medians[2] > 0 && medians[1] > 0)
          t.log_other += std::log(medians[2] / medians[1]);
      }
      std::vector<std::string> cells;
      for (size_t m = 0; m < kNumTransferMethods; ++m) {
        cells.push_back(
            f[m].empty()
                ? "n/a"
                : absl::StrFormat("%.0f (%s)", medians[m],
                                  to_99[m] >= never
                                      ? "-"
                                      : absl::StrFormat("%.0f", to_99[m])));
      }
      absl::StrAppend(
          &t.rows,
          absl::StrFormat(
              "| %s | %s | %s |\n", c.name(), absl::StrJoin(cells, " | "),
              medians[1] > 0 ? absl::StrFormat("%.3f", medians[0] / medians[1])
                             : "-"));
    }
    auto median_or_na = [](const std::vector<double>& v) {
      return v.empty() ? std::string("n/a")
                       : absl::StrFormat("%.3f", Median(v));
    };
    absl::StrAppend(
        &sampling,
        absl::StrFormat("| %s | %.0f | %.0f | %s | %s | %s |\n", c.name(),
                        Median(iterations[1]), Median(iterations[0]),
                        median_or_na(first_reward[1]),
                        median_or_na(first_reward[0]),
                        median_or_na(first_reward[2])));
    std::fprintf(stderr, "%s done\n", c.name().c_str());
  }
  std::vector<std::string> labels;
  for (const TransferMethod& m : kTransferMethods) labels.push_back(m.label);
  std::string md;
  for (const auto& [budget, t] : tallies) {
    absl::StrAppend(&md,
                    absl::StrFormat("\nAt %d evaluations:\n\n| case | %s | "
                                    "transferred / fresh rl |\n|---|",
                                    budget, absl::StrJoin(labels, " | ")));
    for (size_t m = 0; m <= kNumTransferMethods; ++m) md += "---|";
    const int n = t.cases * options.seeds;
    absl::StrAppend(
        &md, "\n", t.rows,
        absl::StrFormat(
            "\nrl transferred > rl fresh on %d/%d cases, < on %d/%d "
            "(geometric mean of the ratio %.4f; other family's weights: "
            "%s); >= every method from fresh weights on %d/%d; reaches 99%% "
            "in fewer evaluations than rl fresh on %d/%d, in more on %d/%d. "
            "Per (case, seed) pair with the same search seed: transferred "
            "ahead of fresh on %d/%d, behind on %d/%d (the worst pair %.3f, "
            "the best %.3f)%s. Searches below half the best any run found on "
            "their case: rl "
            "transferred %d/%d, rl fresh %d/%d.\n",
            t.gt_fresh, t.cases, t.lt_fresh, t.cases,
            t.cases > 0 ? std::exp(t.log_ratio / t.cases) : 0.0,
            t.other_cases == 0
                ? std::string("n/a")
                : absl::StrFormat("%.4f (%d cases)",
                                  std::exp(t.log_other / t.other_cases),
                                  t.other_cases),
            t.ge_others, t.cases, t.faster, t.cases, t.slower, t.cases,
            t.pairs_ahead, n, t.pairs_behind, n, t.worst_pair, t.best_pair,
            t.other_cases == 0
                ? ""
                : absl::StrFormat("; other family's weights ahead on %d/%d, "
                                  "behind on %d/%d",
                                  t.other_ahead, n, t.other_behind, n),
            t.below_half_transferred, n, t.below_half_fresh, n));
  }
  absl::StrAppend(
      &md,
      absl::StrFormat(
          "\nCells: median over %d seeds of the best tok/s (median "
          "evaluations to 99%% of the best any run found on the case, at any "
          "budget; \"-\" when the median run never got there). Stored weights "
          "loaded in %d/%d runs. Training: rl searches of %d evaluations, %s, "
          "each starting from the previous search's weights (no elite plans); "
          "the training searches in the %s space; "
          "%s; \"other family's weights\": the chain of the next held-out "
          "case of another family:\n\n",
          options.seeds, transfer_loaded, transfer_runs, transfer.train_budget,
          transfer.across_families
              ? "one chain over the training seed's first problems for every "
                "held-out case"
              : "one chain per family (model family, hardware, nodes x GPUs "
                "per node, as the server's elite store)",
          train_disaggregated ? "disaggregated (as the server stores them "
                                "with options.disaggregation \"only\")"
                              : "aggregated (as the server stores them with "
                                "\"auto\" and \"off\")",
          transfer.one_chain
              ? "one chain (seeds 1, 2, ...) for all test seeds, as the "
                "server keeps one set of weights per family"
              : "test seed s uses the chain trained with seeds 1000 s, "
                "1000 s + 1, ..."),
      training);
  absl::StrAppend(&md, sampling);
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
