// Re-planning in the PlanSharding stream: the transition each update carries,
// the warm start from the running plan, and what "best" means when moving
// costs something. The diff itself is simulator/transition.h.
#ifndef SHARDPLAN_SERVER_REPLAN_H_
#define SHARDPLAN_SERVER_REPLAN_H_

#include <vector>

#include "policy/searcher.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/transition.h"
#include "simulator/types.h"

namespace shardplan::server {

// The cost of moving from the running plan to `plan`, with what each node
// loads. O(GPUs); thread-safe.
shardplan::v1::Transition TransitionToProto(
    const simulator::TransitionObjective& objective,
    const simulator::PlanDims& plan);

// The warm start of a re-planning search: the running plan adapted to the new
// cluster (`current_plans`, first), then the plans of `found` (the elite
// history's, may be null), whose policy weights and source it keeps.
policy::WarmStart ReplanWarmStart(
    const std::vector<simulator::PlanDims>& current_plans,
    const policy::WarmStart* found);

// How the stream ranks `scored` (whose throughput by the request's objective
// is `throughput`) when re-planning: throughput * exp(-penalty), 0 when the
// transition is over options.max_transition_seconds.
double ReplanScore(const simulator::TransitionObjective& objective,
                   const policy::ScoredPlan& scored, double throughput);

}  // namespace shardplan::server

#endif  // SHARDPLAN_SERVER_REPLAN_H_
