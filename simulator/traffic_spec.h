// Workload traffic fields (request rate, length distributions, prefix-cache
// hit rate, SLO percentile) -> TrafficDims, validated.
#ifndef SHARDPLAN_SIMULATOR_TRAFFIC_SPEC_H_
#define SHARDPLAN_SIMULATOR_TRAFFIC_SPEC_H_

#include <functional>

#include "absl/status/statusor.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/cost_model.h"
#include "simulator/traffic.h"
#include "simulator/types.h"

namespace shardplan::simulator {

// INVALID_ARGUMENT naming the field and the value: a negative, NaN or
// infinite rate; an unknown kind, an empty or inverted distribution, lengths
// outside 1..max_tokens; a hit rate outside [0, 1); a percentile other than
// 0, 50, 90, 95, 99; a rate together with a concurrency, or traffic fields
// without a rate. Absent distributions are fixed at input_tokens /
// output_tokens (`input_tokens`, `output_tokens`: the workload's, resolved).
absl::StatusOr<TrafficDims> TrafficDimsFromProto(
    const shardplan::v1::Workload& workload, int input_tokens,
    int output_tokens, int max_tokens);

// Fills the open-loop fields of `prediction` (percentiles, max_request_rate,
// goodput; ttft_ms / tpot_ms become the means at the rate) when the workload
// has a request rate, and marks a feasible plan infeasible when it does not
// carry the rate within the SLOs at the percentile. `price_per_gpu_hour` > 0
// also fills cost_per_hour and cost_per_million_output_tokens. The
// streamed model (PredictStreamedTraffic): tens of milliseconds to about a
// second, asking `stop` (may be empty) between its chains; returns false
// when `stop` cut it short (`prediction` is then incomplete), else true.
bool AddTrafficPrediction(const CostModel& model, const PlanDims& plan,
                          double price_per_gpu_hour,
                          shardplan::v1::Prediction* prediction,
                          const std::function<bool()>& stop = {});

// The mean of a validated distribution message, in tokens; 0 when absent.
double DistributionMean(const shardplan::v1::TokenDistribution& d);

}  // namespace shardplan::simulator

#endif  // SHARDPLAN_SIMULATOR_TRAFFIC_SPEC_H_
