// Top-K distinct plans by reward (policy/elite_history.h).
#include "policy/elite_history.h"

#include <algorithm>

namespace shardplan::policy {

bool EliteHistory::Insert(const ScoredPlan& scored,
                          const Decisions& decisions) {
  const uint64_t hash = PlanSpace::Hash(decisions);
  for (const EliteEntry& e : entries_) {
    if (e.hash == hash && e.decisions == decisions) return false;
  }
  auto better = [](double reward_a, uint64_t hash_a, double reward_b,
                   uint64_t hash_b) {
    if (reward_a != reward_b) return reward_a > reward_b;
    return hash_a < hash_b;
  };
  if (static_cast<int>(entries_.size()) >= capacity_ &&
      !better(scored.reward, hash, entries_.back().scored.reward,
              entries_.back().hash)) {
    return false;
  }
  auto it =
      std::find_if(entries_.begin(), entries_.end(), [&](const EliteEntry& e) {
        return better(scored.reward, hash, e.scored.reward, e.hash);
      });
  entries_.insert(it, EliteEntry{scored, decisions, hash});
  if (static_cast<int>(entries_.size()) > capacity_) entries_.pop_back();
  return true;
}

std::vector<ScoredPlan> EliteHistory::Plans() const {
  std::vector<ScoredPlan> plans;
  plans.reserve(entries_.size());
  for (const EliteEntry& e : entries_) plans.push_back(e.scored);
  return plans;
}

}  // namespace shardplan::policy
