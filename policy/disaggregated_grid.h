// A sweep of disaggregated prefill/decode plans (simulator/disaggregated.h):
// every pool split x prefill layout x decode layout x prefill batch, Megatron
// operator dims, the best decode batch under memory and the SLOs. The
// searchers of policy/searcher.h cover aggregated plans; this sweep is how
// options.disaggregation "auto" and "only" find disaggregated ones.
#ifndef SHARDPLAN_POLICY_DISAGGREGATED_GRID_H_
#define SHARDPLAN_POLICY_DISAGGREGATED_GRID_H_

#include <vector>

#include "policy/searcher.h"
#include "simulator/cost_model.h"
#include "simulator/types.h"

namespace shardplan::policy {

// The structurally valid disaggregated plans of `model`'s problem the sweep
// covers (instance layouts of 1, 2, 4, ... GPUs whose GPUs can hold the
// weights: tp a power of two up to a node, pp filling the rest; MoE: dp
// attention with ep over the instance, or tp with ep 1; prefill batch 1, 2
// or 4; decode batch 0 = best), round robin over the pool splits (the first
// layout of every split, then the second, ...). At most `limit` of them.
// Cost: one ValidatePlan per candidate of every split. Allocates.
std::vector<simulator::PlanDims> DisaggregatedCandidates(
    const simulator::CostModel& model, size_t limit);

struct DisaggregatedSweep {
  ScoredPlan best;  // infeasible (evaluation.feasible false) when none fits
  bool found = false;
  int evaluations = 0;
  int candidates = 0;
  // Whether every candidate was evaluated (else the budget or the token
  // stopped the sweep).
  bool complete = false;
  // The non-dominated feasible plans the sweep evaluated (throughput per GPU
  // vs tokens/s per user, policy/internal/pareto_archive.h), best throughput
  // first; at most the frontier_size passed.
  std::vector<ScoredPlan> frontier;
};

// Evaluates the first candidate of every split, then the others, splits
// whose first candidate did best first (feasible before infeasible); at most
// `max_evaluations`, polling `token` between evaluations; the best feasible
// plan by throughput. Returns a feasible plan whenever a candidate is
// feasible and the budget covers the candidates.
// reward = log(throughput / baseline_tokens_per_s) when both are positive.
DisaggregatedSweep SweepDisaggregated(const simulator::CostModel& model,
                                      int max_evaluations,
                                      double baseline_tokens_per_s,
                                      const CancellationToken& token,
                                      int frontier_size = 64);

// The Pareto frontier of the union of two frontiers (e.g. the aggregated
// search's and the disaggregated sweep's), at most `capacity` (>= 2) points,
// best throughput per GPU first.
std::vector<ScoredPlan> MergeFrontiers(const std::vector<ScoredPlan>& a,
                                       const std::vector<ScoredPlan>& b,
                                       int capacity);

}  // namespace shardplan::policy

#endif  // SHARDPLAN_POLICY_DISAGGREGATED_GRID_H_
