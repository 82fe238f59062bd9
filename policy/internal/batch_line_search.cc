#include "policy/internal/batch_line_search.h"

#include <algorithm>
#include <utility>

#include "simulator/cost_model.h"

namespace shardplan::policy::internal {

void BatchLineSearch(
    SearchRun& run, std::vector<Decisions> plans,
    std::vector<ScoredPlan> scored,
    const std::function<void(const Decisions&, const ScoredPlan&)>& on_scored) {
  const PlanSpace& space = run.space();
  const int batches = static_cast<int>(simulator::BatchSizeCandidates().size());
  const size_t n = std::min(plans.size(), scored.size());
  // +1: climbing, -1: descending to a feasible batch, 0: done.
  std::vector<int> step(n);
  for (size_t i = 0; i < n; ++i)
    step[i] = scored[i].evaluation.feasible ? 1 : -1;
  while (!run.Done()) {
    std::vector<Decisions> next;
    std::vector<size_t> owner;
    for (size_t i = 0; i < n; ++i) {
      if (step[i] == 0) continue;
      Decisions candidate = plans[i];
      candidate[kBatchDecision] += step[i];
      if (plans[i][kBatchDecision] >= batches ||
          candidate[kBatchDecision] < 0 ||
          candidate[kBatchDecision] >= batches || !space.IsValid(candidate) ||
          run.IsCachedHash(PlanSpace::Hash(candidate))) {
        step[i] = 0;
        continue;
      }
      next.push_back(candidate);
      owner.push_back(i);
    }
    if (next.empty()) return;
    const std::vector<ScoredPlan> got = run.Evaluate(next);
    for (size_t j = 0; j < got.size(); ++j) {
      on_scored(next[j], got[j]);
      const size_t i = owner[j];
      const bool better = got[j].reward > scored[i].reward;
      if (step[i] < 0 || better) {
        plans[i] = next[j];
        scored[i] = got[j];
      }
      if (step[i] > 0 ? !better : got[j].evaluation.feasible) step[i] = 0;
    }
    if (got.size() < next.size()) return;  // the budget ran out
  }
}

}  // namespace shardplan::policy::internal
