#include "policy/disaggregated_grid.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <numeric>
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

// One pool split (x prefill instances of `prefill_gpus`, y decode instances
// of `decode_gpus`) and its valid candidates, kept compact: a split of a
// 16,000-GPU cluster has tens of thousands of siblings, and a PlanDims is
// a few hundred bytes.
struct Split {
  int x = 0, prefill_gpus = 0, y = 0, decode_gpus = 0;
  const std::vector<Layout>* prefill_layouts = nullptr;
  const std::vector<Layout>* decode_layouts = nullptr;
  struct Candidate {
    int16_t prefill_layout = 0, decode_layout = 0;
    int16_t prefill_batch = 1;
  };
  std::vector<Candidate> candidates;

  PlanDims Plan(const Candidate& c) const {
    const Layout& pl = (*prefill_layouts)[c.prefill_layout];
    const Layout& dl = (*decode_layouts)[c.decode_layout];
    PlanDims p;
    p.disaggregated = true;
    p.prefill_instances = x;
    p.decode_instances = y;
    p.prefill.dp = pl.dp;
    p.prefill.tp = pl.tp;
    p.prefill.pp = pl.pp;
    p.prefill.ep = pl.ep;
    p.prefill.batch_size = c.prefill_batch;
    p.dp = dl.dp;
    p.tp = dl.tp;
    p.pp = dl.pp;
    p.ep = dl.ep;
    return p;
  }
};

// Every pool split with at least one valid candidate the workload's engine
// can launch, in sweep order. `layouts` owns the instance layouts per size.
std::vector<Split> Splits(const simulator::CostModel& model,
                          std::map<int, std::vector<Layout>>* layouts) {
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
    if (weight_bytes <= g * model.capacity_bytes()) {
      sizes.push_back(g);
      (*layouts)[g] = InstanceLayouts(problem, g);
    }
  }
  std::vector<Split> splits;
  for (int pg : sizes) {
    for (int dg : sizes) {
      for (int x = 1; x * pg < n; ++x) {
        if ((n - x * pg) % dg != 0) continue;
        Split split;
        split.x = x;
        split.prefill_gpus = pg;
        split.y = (n - x * pg) / dg;
        split.decode_gpus = dg;
        split.prefill_layouts = &layouts->at(pg);
        split.decode_layouts = &layouts->at(dg);
        for (size_t a = 0; a < split.prefill_layouts->size(); ++a) {
          for (size_t b = 0; b < split.decode_layouts->size(); ++b) {
            for (int prefill_batch : {1, 2, 4}) {
              const Split::Candidate c{static_cast<int16_t>(a),
                                       static_cast<int16_t>(b),
                                       static_cast<int16_t>(prefill_batch)};
              const PlanDims p = split.Plan(c);
              // Only plans the workload's engine can launch, checked whole
              // (both pools together, by the rules PlanSpace applies per
              // pool and the ones it leaves to SearchRun), so every
              // candidate is also in PlanSpace::CreateDisaggregated's space.
              if (model.ValidatePlan(p).ok() &&
                  simulator::WorkloadEngineCanRun(problem, p)) {
                split.candidates.push_back(c);
              }
            }
          }
        }
        if (!split.candidates.empty()) splits.push_back(std::move(split));
      }
    }
  }
  return splits;
}

}  // namespace

std::vector<PlanDims> DisaggregatedCandidates(const simulator::CostModel& model,
                                              size_t limit) {
  std::map<int, std::vector<Layout>> layouts;
  const std::vector<Split> splits = Splits(model, &layouts);
  // Round robin over the splits, so that a budget smaller than the sweep
  // still reaches every split (the largest instances included) before it
  // tries a second layout of any.
  std::vector<PlanDims> out;
  for (size_t k = 0; out.size() < limit; ++k) {
    bool any = false;
    for (const Split& split : splits) {
      if (k >= split.candidates.size()) continue;
      any = true;
      out.push_back(split.Plan(split.candidates[k]));
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
  std::map<int, std::vector<Layout>> layouts;
  const std::vector<Split> splits = Splits(model, &layouts);
  size_t total = 0;
  for (const Split& split : splits) total += split.candidates.size();
  sweep.candidates = static_cast<int>(total);
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
  auto stop = [&] {
    return sweep.evaluations >= max_evaluations || token.cancelled();
  };
  // Round 0: the first candidate of every split, in order. A split not
  // reached scores 0 (between infeasible and feasible ones).
  std::vector<double> score(splits.size(), 0);
  std::vector<size_t> next(splits.size(), 0);  // next candidate of each split
  size_t done = 0;
  for (size_t s = 0; s < splits.size() && !stop(); ++s) {
    score[s] = evaluate(splits[s].Plan(splits[s].candidates[0]));
    next[s] = 1;
    ++done;
  }
  // The rest: splits whose first candidate did best first; among splits of
  // one score, round robin in sweep order (the candidates' round-robin order,
  // stably sorted by their split's score).
  std::vector<size_t> order(splits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return score[a] > score[b]; });
  for (size_t lo = 0; lo < order.size() && !stop();) {
    size_t hi = lo;
    while (hi < order.size() && score[order[hi]] == score[order[lo]]) ++hi;
    for (bool any = true; any && !stop();) {
      any = false;
      for (size_t i = lo; i < hi && !stop(); ++i) {
        const Split& split = splits[order[i]];
        size_t& k = next[order[i]];
        if (k >= split.candidates.size()) continue;
        any = true;
        evaluate(split.Plan(split.candidates[k++]));
        ++done;
      }
    }
    lo = hi;
  }
  sweep.complete = done == total;
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
