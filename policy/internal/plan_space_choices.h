// Choice counting shared by the plan space's construction
// (plan_space_build.cc) and its decisions (plan_space.cc).
#ifndef SHARDPLAN_POLICY_INTERNAL_PLAN_SPACE_CHOICES_H_
#define SHARDPLAN_POLICY_INTERNAL_PLAN_SPACE_CHOICES_H_

#include <cstdint>

#include "simulator/cost_model.h"

namespace shardplan::policy::internal {

// The decode batch choices: BatchSizeCandidates(), then "auto" (last).
inline int NumBatchChoices() {
  return static_cast<int>(simulator::BatchSizeCandidates().size()) + 1;
}
inline int AutoBatchChoice() { return NumBatchChoices() - 1; }

inline int Popcount(uint64_t x) { return __builtin_popcountll(x); }

}  // namespace shardplan::policy::internal

#endif  // SHARDPLAN_POLICY_INTERNAL_PLAN_SPACE_CHOICES_H_
