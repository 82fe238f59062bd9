#include "policy/disaggregated_grid.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include "policy/internal/pareto_archive.h"
#include "simulator/engine_capability.h"
#include "simulator/placement.h"

namespace shardplan::policy {
namespace {

using simulator::PlanDims;

// One instance's degrees on `gpus` GPUs.
struct Layout {
  int dp = 1, tp = 1, pp = 1, ep = 1;
};

std::vector<Layout> InstanceLayouts(const simulator::Problem& problem,
                                    int gpus) {
  std::vector<Layout> out;
  // tp inside a node: up to the biggest one (node groups of different sizes
  // place the pool with the bigger instances on the biggest nodes).
  const int node = simulator::LargestNodeGpus(problem.cluster);
  for (int tp = 1; tp <= std::min(gpus, node); tp *= 2) {
    if (gpus % tp != 0) continue;
    out.push_back({1, tp, gpus / tp, 1});  // tp within a node, pp across
    if (problem.model.is_moe() && tp == 1 && gpus > 1) {
      out.push_back({gpus, 1, 1, gpus});  // dp attention + EP (DeepSeek)
    }
    if (problem.model.is_moe() && gpus / tp == 1 && tp > 1) {
      out.push_back({1, tp, 1, tp});  // tp attention + EP
    }
  }
  return out;
}

}  // namespace

std::vector<PlanDims> DisaggregatedCandidates(const simulator::CostModel& model,
                                              size_t limit) {
  const simulator::Problem& problem = model.problem();
  const int n = problem.cluster.num_gpus;
  // Instance sizes whose GPUs can hold the weights at all: ValidatePlan
  // checks no memory, so smaller ones would spend the budget on plans that
  // never fit.
  const double weight_bytes =
      problem.model.TotalParams() *
      simulator::BytesPerElement(problem.workload.weight_dtype);
  std::vector<int> sizes;
  for (int g = 1; g < n; g *= 2) {
    if (weight_bytes <= g * model.capacity_bytes()) sizes.push_back(g);
  }
  // The candidates of each pool split (x, prefill size, y, decode size).
  std::vector<std::vector<PlanDims>> splits;
  for (int pg : sizes) {
    const std::vector<Layout> prefill_layouts = InstanceLayouts(problem, pg);
    for (int dg : sizes) {
      const std::vector<Layout> decode_layouts = InstanceLayouts(problem, dg);
      for (int x = 1; x * pg < n; ++x) {
        if ((n - x * pg) % dg != 0) continue;
        const int y = (n - x * pg) / dg;
        std::vector<PlanDims> split;
        for (const Layout& pl : prefill_layouts) {
          for (const Layout& dl : decode_layouts) {
            for (int prefill_batch : {1, 2, 4}) {
              PlanDims p;
              p.disaggregated = true;
              p.prefill_instances = x;
              p.decode_instances = y;
              p.prefill.dp = pl.dp;
              p.prefill.tp = pl.tp;
              p.prefill.pp = pl.pp;
              p.prefill.ep = pl.ep;
              p.prefill.batch_size = prefill_batch;
              p.dp = dl.dp;
              p.tp = dl.tp;
              p.pp = dl.pp;
              p.ep = dl.ep;
              // Only layouts the workload's engine can launch.
              if (model.ValidatePlan(p).ok() &&
                  simulator::WorkloadEngineCanRun(model.problem(), p)) {
                split.push_back(p);
              }
            }
          }
        }
        if (!split.empty()) splits.push_back(std::move(split));
      }
    }
  }
  // Round robin over the splits, so that a budget smaller than the sweep
  // still reaches every split (the largest instances included) before it
  // tries a second layout of any.
  std::vector<PlanDims> out;
  for (size_t k = 0; out.size() < limit; ++k) {
    bool any = false;
    for (const std::vector<PlanDims>& split : splits) {
      if (k >= split.size()) continue;
      any = true;
      out.push_back(split[k]);
      if (out.size() >= limit) break;
    }
    if (!any) break;
  }
  return out;
}

DisaggregatedSweep SweepDisaggregated(const simulator::CostModel& model,
                                      int max_evaluations,
                                      double baseline_tokens_per_s,
                                      const CancellationToken& token,
                                      int frontier_size) {
  DisaggregatedSweep sweep;
  internal::ParetoArchive archive(std::max(2, frontier_size));
  std::vector<PlanDims> candidates =
      DisaggregatedCandidates(model, std::numeric_limits<size_t>::max());
  sweep.candidates = static_cast<int>(candidates.size());
  // Splits by their first (round-robin) candidate: the rest of the sweep goes
  // to the splits whose first layout did best, feasible ones first.
  auto split_of = [](const PlanDims& p) {
    return std::array<int, 4>{p.prefill_instances, p.prefill.gpus(),
                              p.decode_instances, p.instance_gpus()};
  };
  std::map<std::array<int, 4>, double> split_score;
  auto evaluate = [&](const PlanDims& plan) {
    const simulator::Evaluation e = model.Evaluate(plan);
    ++sweep.evaluations;
    const double reward =
        baseline_tokens_per_s > 0 && e.output_tokens_per_s > 0
            ? std::log(e.output_tokens_per_s / baseline_tokens_per_s)
            : 0;
    if (e.feasible) archive.Offer({plan, e, reward});
    if (!sweep.found && sweep.evaluations == 1) {
      sweep.best = {plan, e, 0};
    }
    if (e.feasible &&
        (!sweep.found ||
         e.output_tokens_per_s > sweep.best.evaluation.output_tokens_per_s)) {
      sweep.best = {plan, e, reward};
      sweep.found = true;
    }
    return e.feasible ? e.output_tokens_per_s : -1.0;
  };
  size_t next = 0;
  for (; next < candidates.size(); ++next) {
    if (sweep.evaluations >= max_evaluations || token.cancelled()) break;
    const auto key = split_of(candidates[next]);
    if (split_score.count(key)) break;  // round 0 is over
    split_score[key] = evaluate(candidates[next]);
  }
  std::stable_sort(candidates.begin() + next, candidates.end(),
                   [&](const PlanDims& a, const PlanDims& b) {
                     return split_score[split_of(a)] > split_score[split_of(b)];
                   });
  for (; next < candidates.size(); ++next) {
    if (sweep.evaluations >= max_evaluations || token.cancelled()) break;
    evaluate(candidates[next]);
  }
  sweep.complete = next == candidates.size();
  sweep.frontier = archive.points();
  return sweep;
}

std::vector<ScoredPlan> MergeFrontiers(const std::vector<ScoredPlan>& a,
                                       const std::vector<ScoredPlan>& b,
                                       int capacity) {
  internal::ParetoArchive archive(std::max(2, capacity));
  for (const ScoredPlan& p : a) archive.Offer(p);
  for (const ScoredPlan& p : b) archive.Offer(p);
  return archive.points();
}

}  // namespace shardplan::policy
