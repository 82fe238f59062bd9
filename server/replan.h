// Re-planning in the PlanSharding stream: the transition each update carries,
// the warm start from the running plan, and what "best" means when moving
// costs something. The diff itself is simulator/transition.h.
#ifndef SHARDPLAN_SERVER_REPLAN_H_
#define SHARDPLAN_SERVER_REPLAN_H_

#include <cstddef>
#include <string>
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

// The largest PlanUpdate the stream sends: under gRPC's default 4 MiB receive
// limit (grpcurl, buf curl and the Python example keep it), with room for
// framing.
inline constexpr size_t kMaxUpdateBytes = 3u << 20;

// Shrinks `update` to at most `max_bytes` serialized, dropping in this order
// until it fits: the placements of the top plans, frontier points and summary
// plans (their degrees and dims stay; EvaluatePlan of a plan returns its
// placement), then the transition's node loads beyond the largest ones, then
// the best plan's own placement, then frontier points and top plans from the
// end. Returns what was left out ("" when it fit). O(size of the update).
std::string FitUpdate(size_t max_bytes, shardplan::v1::PlanUpdate* update);

}  // namespace shardplan::server

#endif  // SHARDPLAN_SERVER_REPLAN_H_
