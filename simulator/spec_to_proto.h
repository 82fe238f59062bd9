// The simulator's compact types -> API messages (the other half of the API
// adapter; simulator/spec_from_proto.h reads them).
#ifndef SHARDPLAN_SIMULATOR_SPEC_TO_PROTO_H_
#define SHARDPLAN_SIMULATOR_SPEC_TO_PROTO_H_

#include "shardplan/v1/shardplan.pb.h"
#include "simulator/types.h"

namespace shardplan::simulator {

shardplan::v1::ModelSpec ModelSpecFromDims(const ModelDims& model);
// The plan with every operator listed and placement derived. micro_batches,
// batch_size and stage_layers stay as given (0 = default), so that
// PlanDimsFromProto(PlanToProto(p)) == p; the batch actually used is in the
// prediction.
shardplan::v1::Plan PlanToProto(const PlanDims& plan, const Problem& problem);
shardplan::v1::Prediction PredictionToProto(const Evaluation& evaluation,
                                            const Problem& problem);

// Sets prediction->runnable_engines (RunnableEngines), and when the
// workload names an engine that cannot launch `plan`, marks the prediction
// infeasible with CheckEngineCanRun's message as infeasible_reason (the
// figures stay, for comparison).
void AnnotateEngineCapability(const Problem& problem, const PlanDims& plan,
                              shardplan::v1::Prediction* prediction);

}  // namespace shardplan::simulator

#endif  // SHARDPLAN_SIMULATOR_SPEC_TO_PROTO_H_
