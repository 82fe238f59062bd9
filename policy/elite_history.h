// The elite history: the top-K distinct plans seen by a search, ordered by
// reward. The RL policy attends over it; searches return it for persistence
// (warm start).
#ifndef SHARDPLAN_POLICY_ELITE_HISTORY_H_
#define SHARDPLAN_POLICY_ELITE_HISTORY_H_

#include <cstdint>
#include <vector>

#include "policy/plan_space.h"
#include "policy/searcher.h"

namespace shardplan::policy {

struct EliteEntry {
  ScoredPlan scored;
  Decisions decisions{};
  uint64_t hash = 0;
};

// Not thread-safe (owned by one search). Ordering is deterministic: reward
// descending, then hash ascending.
class EliteHistory {
 public:
  explicit EliteHistory(int capacity)
      : capacity_(capacity < 1 ? 1 : capacity) {}

  // Inserts the plan unless an equal plan (same hash) is present or it ranks
  // below a full history. Returns whether the history changed.
  bool Insert(const ScoredPlan& scored, const Decisions& decisions);

  int capacity() const { return capacity_; }
  int size() const { return static_cast<int>(entries_.size()); }
  bool empty() const { return entries_.empty(); }
  // Best first.
  const std::vector<EliteEntry>& entries() const { return entries_; }
  std::vector<ScoredPlan> Plans() const;

 private:
  int capacity_;
  std::vector<EliteEntry> entries_;
};

}  // namespace shardplan::policy

#endif  // SHARDPLAN_POLICY_ELITE_HISTORY_H_
