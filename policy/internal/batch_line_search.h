// Line search over the decode batch of given plans, used by the RL searcher
// on the tuple sweep's plans and on each sampled plan that becomes the best
// of its degree tuple. A plan moved to another tuple keeps its batch per GPU
// of a replica (TranslateBatch), but the tuple also changes the weights per
// GPU and so the memory left for the KV cache: the batch that tuple affords
// is usually a few candidates away, and throughput rises with the batch up
// to it. The policy's samples reach it only by chance (one batch decision out
// of ~20 per step); this finds it in a few evaluations.
#ifndef SHARDPLAN_POLICY_INTERNAL_BATCH_LINE_SEARCH_H_
#define SHARDPLAN_POLICY_INTERNAL_BATCH_LINE_SEARCH_H_

#include <functional>
#include <vector>

#include "policy/internal/search_run.h"
#include "policy/plan_space.h"
#include "policy/searcher.h"

namespace shardplan::policy::internal {

// For each plan (with its score): a feasible plan steps to the next larger
// batch candidate while that raises the reward; an infeasible one to the next
// smaller until one is feasible. The candidates of all plans at one step are
// evaluated together through `run` (counted against the budget; plans it has
// scored before end that plan's search). Stops early when the run is done.
// `on_scored` sees every evaluated plan. Plans whose batch is the workload's
// fixed concurrency are left alone.
void BatchLineSearch(
    SearchRun& run, std::vector<Decisions> plans,
    std::vector<ScoredPlan> scored,
    const std::function<void(const Decisions&, const ScoredPlan&)>& on_scored);

}  // namespace shardplan::policy::internal

#endif  // SHARDPLAN_POLICY_INTERNAL_BATCH_LINE_SEARCH_H_
