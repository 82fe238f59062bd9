// The Megatron-style heuristic plan people deploy today; the baseline every
// search reports its speedup against. Rules (documented in
// docs/cost-model-and-calibration.md):
//  (the exact rules are in MegatronPlan's comment in megatron.cc and in
//  docs/cost-model-and-calibration.md, "Megatron heuristic").
#ifndef SHARDPLAN_SIMULATOR_MEGATRON_H_
#define SHARDPLAN_SIMULATOR_MEGATRON_H_

#include "absl/status/statusor.h"
#include "simulator/cost_model.h"
#include "simulator/types.h"

namespace shardplan::simulator {

// The heuristic plan for `model`'s problem; always passes ValidatePlan. The
// plan may still be infeasible (e.g. the model does not fit the cluster at
// all): the Evaluation says why.
PlanDims MegatronPlan(const CostModel& model);

}  // namespace shardplan::simulator

#endif  // SHARDPLAN_SIMULATOR_MEGATRON_H_
