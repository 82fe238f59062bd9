// The network's inputs, private to policy/rl/: the context token (model,
// cluster and workload of a problem) and the token of an elite plan, as fixed
// size float vectors. Sizes do not depend on the problem, so the weights that
// read them transfer across problems. No LibTorch here.
#ifndef SHARDPLAN_POLICY_RL_FEATURES_H_
#define SHARDPLAN_POLICY_RL_FEATURES_H_

#include <array>
#include <vector>

#include "policy/plan_space.h"
#include "policy/searcher.h"
#include "simulator/types.h"

namespace shardplan::policy::rl {

inline constexpr int kContextFeatures = 32;
inline constexpr int kPlanFeatures =
    PlanSpace::kDegreeFeatures + simulator::kNumOpKinds * 5 + 3 + 2 + 3;

// Disaggregated spaces: the prefill instance's operator dims, one-hot.
inline constexpr int kPrefillDimFeatures =
    simulator::kNumOpKinds * simulator::kNumShardDims;

// kContextFeatures values, mostly log2 of sizes scaled to about [0, 1];
// non-finite values become 0.
std::vector<float> ContextFeatures(const simulator::Problem& problem);

// An elite plan `d` (scored `s`) as a token: its degree-tuple features,
// one-hot operator dimensions and micro-batch choice, its batch, its reward
// normalised over the elite (`norm_reward`), its rank in [0, 1) and
// feasibility.
std::array<float, kPlanFeatures> PlanFeatures(const PlanSpace& space,
                                              const Decisions& d,
                                              const ScoredPlan& s,
                                              float norm_reward, float rank);

// The prefill operator dims of `d` (kFirstPrefillOpDecision + o), one-hot;
// an elite token adds them in a disaggregated space.
std::array<float, kPrefillDimFeatures> PrefillDimFeatures(const Decisions& d);

}  // namespace shardplan::policy::rl

#endif  // SHARDPLAN_POLICY_RL_FEATURES_H_
