#include "simulator/traffic_costing.h"

#include <algorithm>
#include <cmath>

#include "simulator/internal/pool_costing.h"

namespace shardplan::simulator {

TrafficPrediction StepTimesOf(const CostModel& model, const PlanDims& plan) {
  TrafficPrediction t;
  if (plan.disaggregated) return t;
  PlanDims instance = plan;
  instance.replicas = 1;
  instance.batch_size = 0;
  const int dp = std::max(1, plan.dp);
  // Decode iterations (no prefill mixed in) at one request per attention
  // rank and at a working batch: the secant gives the per-iteration and the
  // per-request cost.
  const Evaluation one =
      internal::PoolCosting::DecodeInstance(model, instance, 1);
  if (one.reason == InfeasibleReason::kWeightsExceedMemory ||
      one.kv_cache_bytes <= 0)
    return t;
  const double room = one.kv_room_bytes;
  const int per_rank_limit =
      static_cast<int>(std::floor(room / one.kv_cache_bytes));
  if (per_rank_limit < 1) return t;
  t.computed = true;
  const int working = std::clamp(per_rank_limit, 2, 64);
  // DecodeInstance takes the instance's requests: `working` on each rank.
  const Evaluation many = internal::PoolCosting::DecodeInstance(
      model, instance,
      working * AttentionDpRanks(instance, model.problem().model.is_moe()));
  const double per_request = std::max(
      0.0, (many.decode_iteration_seconds - one.decode_iteration_seconds) /
               (working - 1));
  t.steps.decode_request_seconds = per_request / dp;  // MoE; dense below
  t.steps.iteration_seconds =
      std::max(0.0, one.decode_iteration_seconds - per_request);
  const internal::PrefillInstanceCost prefill =
      internal::PoolCosting::PrefillInstance(model, instance, 1);
  const WorkloadDims& w = model.problem().workload;
  // Prefix-cache hits are not prefilled.
  t.steps.prefill_token_seconds = prefill.chain_seconds /
                                  std::max(1, w.input_tokens) *
                                  (1 - w.traffic.prefix_cache_hit_rate);
  t.steps.chunk_tokens = kDefaultChunkTokens;
  t.steps.max_running = per_rank_limit;
  t.replicas = std::max(1, plan.replicas);
  if (!model.problem().model.is_moe()) {
    // A dense model's dp ranks are independent copies: each its own queue.
    t.steps.decode_request_seconds = per_request;
    t.replicas *= dp;
    return t;
  }
  // MoE attention dp ranks step together (the experts are shared): one queue
  // whose iteration carries dp ranks' requests and prompts side by side.
  t.steps.prefill_token_seconds /= dp;
  t.steps.chunk_tokens *= dp;
  t.steps.max_running *= dp;
  return t;
}

TrafficPrediction PredictTraffic(const CostModel& model, const PlanDims& plan) {
  const TrafficDims& traffic = model.problem().workload.traffic;
  if (traffic.request_rate <= 0) return {};
  TrafficPrediction t = StepTimesOf(model, plan);
  if (!t.computed) return t;
  const LengthPoints in = Discretize(traffic.input);
  const LengthPoints out = Discretize(traffic.output);
  t.rate_per_replica = traffic.request_rate / t.replicas;
  t.queueing = PredictQueueing(t.steps, in, out, t.rate_per_replica);
  const WorkloadDims& w = model.problem().workload;
  t.max_request_rate =
      t.replicas * MaxRequestRate(t.steps, in, out, w.max_ttft_seconds,
                                  w.max_tpot_seconds, traffic.slo_percentile);
  const SloShares shares = SloSharesAt(t.steps, in, out, t.rate_per_replica,
                                       w.max_ttft_seconds, w.max_tpot_seconds);
  t.goodput_requests_per_s = traffic.request_rate * shares.ttft * shares.tpot;
  return t;
}

}  // namespace shardplan::simulator
