// The baseline searchers over the shared plan space: megatron (the heuristic
// plan, evaluated), random, anneal (simulated annealing), genetic and
// exhaustive. Created through CreateSearcher (policy/searcher.h); declared here
// for tests and the benchmark.
#ifndef SHARDPLAN_POLICY_BASELINES_H_
#define SHARDPLAN_POLICY_BASELINES_H_

#include <memory>
#include <vector>

#include "policy/plan_space.h"
#include "policy/searcher.h"

namespace shardplan::policy {

// Returns simulator::MegatronPlan, evaluated (one evaluation).
std::unique_ptr<Searcher> NewMegatronSearcher();
// Batches of 256 plans sampled uniformly decision by decision under the masks.
std::unique_ptr<Searcher> NewRandomSearcher();
// 8 parallel Metropolis chains (half from the Megatron plan, half random); a
// move changes one decision under the masks and repairs the later ones;
// geometric cooling from 0.3 to 0.003 in reward units over the evaluation
// budget.
std::unique_ptr<Searcher> NewAnnealSearcher();
// Population 64, tournament selection (size 3), uniform crossover on decision
// vectors with mask repair, one-decision mutation (p = 0.5), 2 elites carried
// over.
std::unique_ptr<Searcher> NewGeneticSearcher();
// Every plan in the space, in lexicographic decision order. INVALID_ARGUMENT
// "space has N plans, limit M" when N > min(exhaustive_limit, max_evaluations -
// 1).
std::unique_ptr<Searcher> NewExhaustiveSearcher();
// "grid": every degree tuple (replicas included) with Megatron operator dims,
// every micro-batch count and batch size, within the evaluation budget.
std::unique_ptr<Searcher> NewGridSearcher();

// The grid sweep's best plan, evaluated directly (every degree tuple and
// micro-batch count of `space` with Megatron operator dims, the cost model's
// best batch under the SLOs): the AIConfigurator-style reference every
// speedup is also reported against. Not counted against any search budget;
// costs (tuples x micro-batch counts) evaluations, each scanning the batch
// sizes. Returns an infeasible plan when no grid plan is feasible.
ScoredPlan GridBest(const PlanSpace& space);

// The grid sweep's plans (every degree tuple and micro-batch count of `space`
// with Megatron operator dims, batch_size 0), not evaluated.
std::vector<simulator::PlanDims> GridPlans(const PlanSpace& space);

}  // namespace shardplan::policy

#endif  // SHARDPLAN_POLICY_BASELINES_H_
