// The throughput-latency frontier of a search: a bounded archive of the
// non-dominated feasible plans in (output tokens/s per GPU, tokens/s per user),
// both maximised. Tokens/s per user is 1 / TPOT, the decode speed one request
// sees. Infeasible plans (memory or SLOs) never enter: the cost model zeroes
// their throughput, and a plan that breaks the request's SLOs is not a choice
// the user asked for.
#ifndef SHARDPLAN_POLICY_INTERNAL_PARETO_ARCHIVE_H_
#define SHARDPLAN_POLICY_INTERNAL_PARETO_ARCHIVE_H_

#include <vector>

#include "policy/searcher.h"

namespace shardplan::policy::internal {

class ParetoArchive {
 public:
  // Keeps at most `capacity` (>= 2) points; beyond it the most crowded interior
  // point goes (the two ends of the curve always stay).
  explicit ParetoArchive(int capacity);

  // Adds `scored` if it is feasible and no kept point dominates or equals it;
  // drops the points it dominates. O(log n) for a dominated plan (the common
  // case on the hot path), O(n) when the frontier changes. Returns whether it
  // was kept.
  bool Offer(const ScoredPlan& scored);

  // Best throughput per GPU first (so tokens/s per user ascending).
  const std::vector<ScoredPlan>& points() const { return points_; }
  int size() const { return static_cast<int>(points_.size()); }

 private:
  void DropMostCrowded();

  int capacity_;
  // Sorted by throughput per GPU descending, hence per-user speed ascending.
  std::vector<ScoredPlan> points_;
};

}  // namespace shardplan::policy::internal

#endif  // SHARDPLAN_POLICY_INTERNAL_PARETO_ARCHIVE_H_
