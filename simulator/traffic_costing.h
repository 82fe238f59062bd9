// Open-loop predictions of a plan: the cost model's step times for one
// replica (simulator/queueing.h StepTimes) and the queueing model at the
// workload's request rate: TTFT/TPOT percentiles, the highest rate within the
// SLOs, goodput. Costs a few cost-model evaluations and a few hundred
// microseconds: computed for streamed plans, not inside the search.
#ifndef SHARDPLAN_SIMULATOR_TRAFFIC_COSTING_H_
#define SHARDPLAN_SIMULATOR_TRAFFIC_COSTING_H_

#include "simulator/cost_model.h"
#include "simulator/queueing.h"
#include "simulator/types.h"

namespace shardplan::simulator {

// Prompt tokens one iteration takes (chunked prefill): vLLM's default token
// budget for the OpenAI server on GPUs of 70 GiB and more (max_num_batched_
// tokens, EngineArgs._set_default_args in vllm/engine/arg_utils.py of
// https://github.com/vllm-project/vllm). Other engines' budgets are not
// modelled separately.
inline constexpr int kDefaultChunkTokens = 8192;

struct TrafficPrediction {
  // False without a request rate, for plans the model does not cover yet
  // (disaggregated), or when one request does not fit.
  bool computed = false;
  StepTimes steps;  // one replica
  int replicas = 0;
  double rate_per_replica = 0;
  QueueingPrediction queueing;
  // Whole deployment, requests/s.
  double max_request_rate = 0;
  double goodput_requests_per_s = 0;
};

// The step times of one replica of an aggregated `plan` (validated).
// `computed` false when the plan is disaggregated or one request's KV cache
// does not fit.
TrafficPrediction StepTimesOf(const CostModel& model, const PlanDims& plan);

// StepTimesOf plus the queueing model at the workload's request rate.
TrafficPrediction PredictTraffic(const CostModel& model, const PlanDims& plan);

}  // namespace shardplan::simulator

#endif  // SHARDPLAN_SIMULATOR_TRAFFIC_COSTING_H_
