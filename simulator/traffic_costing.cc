#include "simulator/traffic_costing.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "simulator/disaggregated.h"
#include "simulator/internal/pool_costing.h"

namespace shardplan::simulator {
namespace {

// A prompt's prefill through a pipeline of `pp` stages, as the engines run
// it: pp micro-batches in flight, each stage on a different one (vLLM V1's
// batch queue of max_concurrent_batches = pipeline_parallel_size scheduled
// batches, EngineCore.step_with_batch_queue in vllm/v1/engine/core.py,
// vllm-project/vllm#11945; V0's pp virtual engines, each its own scheduler,
// vllm-project/vllm#4461; TensorRT-LLM's PyExecutor._executor_loop_pp over
// pp_size micro-batches, tensorrt_llm/_torch/pyexecutor/py_executor.py;
// SGLang's Scheduler.event_loop_pp over pp_size micro-batches,
// python/sglang/srt/managers/scheduler_pp_mixin.py). A chunk occupies the
// loop for its busiest stage; the rest of the chain is latency its own prompt
// waits (a request in flight is not scheduled again until its micro-batch
// returns, so a prompt's chunks are not pipelined: vllm-project/vllm#41682).
struct PipelineSplit {
  double busiest_seconds = 0;
  double lag_seconds = 0;
};
PipelineSplit SplitPipeline(const internal::PrefillInstanceCost& prefill,
                            int pp) {
  PipelineSplit split;
  if (pp <= 1 || !(prefill.max_stage_seconds > 0)) {
    split.busiest_seconds = prefill.chain_seconds;
    return split;
  }
  // The per-request overhead stays in the loop, as without stages.
  split.busiest_seconds =
      std::min(prefill.chain_seconds,
               prefill.max_stage_seconds + prefill.overhead_seconds);
  split.lag_seconds = prefill.chain_seconds - split.busiest_seconds;
  return split;
}

// The engine loop of one instance (`instance`: an aggregated layout,
// replicas 1): the secant of its pure decode iteration between one request
// per attention rank and a working batch gives the per-iteration and the
// per-request cost; `with_prefill` adds its prefill per prompt token.
// `queues` is how many independent queues the instance is (a dense model's
// dp ranks each one; an MoE instance's dp ranks step together). False when
// one request's KV cache does not fit.
bool InstanceSteps(const CostModel& model, const PlanDims& plan,
                   bool with_prefill, StepTimes* steps, int* queues) {
  PlanDims instance = plan;
  instance.replicas = 1;
  instance.batch_size = 0;
  const int dp = std::max(1, plan.dp);
  const Evaluation one =
      internal::PoolCosting::DecodeInstance(model, instance, 1);
  if (one.reason == InfeasibleReason::kWeightsExceedMemory ||
      one.kv_cache_bytes <= 0)
    return false;
  const double room = one.kv_room_bytes;
  const int per_rank_limit =
      static_cast<int>(std::floor(room / one.kv_cache_bytes));
  if (per_rank_limit < 1) return false;
  const int working = std::clamp(per_rank_limit, 2, 64);
  // DecodeInstance takes the instance's requests: `working` on each rank.
  const Evaluation many = internal::PoolCosting::DecodeInstance(
      model, instance,
      working * AttentionDpRanks(instance, model.problem().model.is_moe()));
  const double per_request = std::max(
      0.0, (many.decode_iteration_seconds - one.decode_iteration_seconds) /
               (working - 1));
  steps->decode_request_seconds = per_request / dp;  // MoE; dense below
  steps->iteration_seconds =
      std::max(0.0, one.decode_iteration_seconds - per_request);
  const WorkloadDims& w = model.problem().workload;
  steps->prefill_token_seconds = 0;
  steps->pipeline_lag_token_seconds = 0;
  if (with_prefill) {
    const internal::PrefillInstanceCost prefill =
        internal::PoolCosting::PrefillInstance(model, instance, 1);
    // Prefix-cache hits are not prefilled.
    const double per_token =
        (1 - w.traffic.prefix_cache_hit_rate) / std::max(1, w.input_tokens);
    const PipelineSplit split = SplitPipeline(prefill, plan.pp);
    steps->prefill_token_seconds = split.busiest_seconds * per_token;
    steps->pipeline_lag_token_seconds = split.lag_seconds * per_token;
  }
  steps->chunk_tokens =
      ChunkedPrefillTokens(model.problem()) * std::max(1, plan.pp);
  steps->max_running = per_rank_limit;
  *queues = 1;
  if (!model.problem().model.is_moe()) {
    // A dense model's dp ranks are independent copies: each its own queue.
    steps->decode_request_seconds = per_request;
    *queues = dp;
    return true;
  }
  // MoE attention dp ranks step together (the experts are shared): one queue
  // whose iteration carries dp ranks' requests and prompts side by side.
  steps->prefill_token_seconds /= dp;
  steps->chunk_tokens *= dp;
  steps->max_running *= dp;
  return true;
}

// A prefill instance's engine loop: prompts only. An iteration costs at
// least one forward pass's fixed part (the per-iteration cost of its decode
// secant: weights read, launches, collectives' latency) and each prompt
// token the rest of the prefill's cost.
bool PrefillInstanceSteps(const CostModel& model, const PlanDims& plan,
                          StepTimes* steps, int* queues) {
  const PlanDims instance = PrefillInstancePlan(plan);
  if (!InstanceSteps(model, instance, /*with_prefill=*/false, steps, queues))
    return false;
  const internal::PrefillInstanceCost prefill =
      internal::PoolCosting::PrefillInstance(model, instance, 1);
  const WorkloadDims& w = model.problem().workload;
  const int dp = model.problem().model.is_moe() ? std::max(1, instance.dp) : 1;
  // With pipeline stages the iteration's fixed part is spread over them as
  // the prompt's work is: the busiest stage carries its share of both.
  const int pp = std::max(1, instance.pp);
  const PipelineSplit split = SplitPipeline(prefill, pp);
  const double per_token =
      (1 - w.traffic.prefix_cache_hit_rate) / std::max(1, w.input_tokens) / dp;
  steps->prefill_token_seconds =
      std::max(0.0, split.busiest_seconds - steps->iteration_seconds / pp) *
      per_token;
  steps->pipeline_lag_token_seconds = split.lag_seconds * per_token;
  steps->decode_request_seconds = 0;
  // The KV cache of the prompts being prefilled leaves for the decode pool:
  // the prefill pool's memory does not bound the requests in flight here.
  steps->max_running = 0;
  return true;
}

// `iteration_scale`: the decode band for an engine loop that decodes, the
// prefill band for a prefill instance's.
void Scale(StepScale scale, double iteration_scale, StepTimes* s) {
  s->iteration_seconds *= iteration_scale;
  s->decode_request_seconds *= scale.decode;
  s->prefill_token_seconds *= scale.prefill;
}

LengthPoints Fixed(double tokens) {
  LengthDistribution d;
  d.mean = tokens;
  return Discretize(d);
}

using Predictor = QueueingPrediction (*)(const StepTimes&, const LengthPoints&,
                                         const LengthPoints&, double);

// A disaggregated plan's pools at `rate` requests/s (the whole deployment),
// from its step times: each pool's queue and the whole request's in
// t->queueing. Returns what follows the prefill pool's TTFT (the handoff and
// the decode pool's first step).
double ComposeDisaggregated(const LengthPoints& in, const LengthPoints& out,
                            double rate, Predictor predict,
                            TrafficPrediction* t) {
  const LengthPoints one_token = Fixed(1), no_prompt = Fixed(0);
  t->prefill_queueing =
      predict(t->prefill_steps, in, one_token, rate / t->prefill_queues);
  t->decode_queueing =
      PredictQueueing(t->steps, no_prompt, out, rate / t->replicas);
  // The decode pool's first step: the wait for its next iteration and the
  // iteration (its TTFT with no prompt), at the offered load.
  const double first_step =
      t->decode_queueing.stable
          ? t->decode_queueing.ttft_mean_seconds
          : t->steps.iteration_seconds + t->steps.decode_request_seconds;
  const double after_prefill = t->handoff_seconds + first_step;
  QueueingPrediction& q = t->queueing;
  q = t->decode_queueing;
  q.stable = t->prefill_queueing.stable && t->decode_queueing.stable;
  q.utilization =
      std::max(t->prefill_queueing.utilization, t->decode_queueing.utilization);
  q.ttft_mean_seconds = t->prefill_queueing.ttft_mean_seconds + after_prefill;
  for (int k = 0; k < 3; ++k)
    q.ttft_seconds[k] = t->prefill_queueing.ttft_seconds[k] + after_prefill;
  if (!q.stable) {
    q.ttft_mean_seconds = 0;
    q.ttft_seconds = {};
  }
  return after_prefill;
}

TrafficPrediction PredictDisaggregatedTraffic(const CostModel& model,
                                              const PlanDims& plan,
                                              StepScale scale,
                                              Predictor predict) {
  TrafficPrediction t;
  t.disaggregated = true;
  if (!InstanceSteps(model, DecodeInstancePlan(plan), /*with_prefill=*/false,
                     &t.steps, &t.replicas) ||
      !PrefillInstanceSteps(model, plan, &t.prefill_steps, &t.prefill_queues))
    return t;
  t.computed = true;
  t.replicas *= std::max(1, plan.decode_instances);
  t.prefill_queues *= std::max(1, plan.prefill_instances);
  Scale(scale, scale.decode, &t.steps);
  Scale(scale, scale.prefill, &t.prefill_steps);
  const Evaluation e = model.Evaluate(plan);
  t.handoff_seconds = e.kv_transfer_seconds +
                      model.calibration().disagg_request_overhead_seconds;
  const Problem& problem = model.problem();
  const TrafficDims& traffic = problem.workload.traffic;
  const WorkloadDims& w = problem.workload;
  const LengthPoints in = Discretize(traffic.input);
  const LengthPoints out = Discretize(traffic.output);
  // The prefill pool produces the first token; the decode pool takes no
  // prompt work (its arrivals' KV cache is already there).
  const LengthPoints one_token = Fixed(1), no_prompt = Fixed(0);
  const double rate = traffic.request_rate;
  t.rate_per_replica = rate / t.replicas;
  const double prefill_rate = rate / t.prefill_queues;
  const double after_prefill = ComposeDisaggregated(in, out, rate, predict, &t);
  // Each pool's highest rate: the prefill pool within what the TTFT SLO
  // leaves after the handoff and the first step, the decode pool within the
  // TPOT SLO.
  const double prefill_ttft =
      w.max_ttft_seconds > 0 ? w.max_ttft_seconds - after_prefill : 0;
  t.prefill_max_request_rate =
      w.max_ttft_seconds > 0 && prefill_ttft <= 0
          ? 0
          : t.prefill_queues * MaxRequestRate(t.prefill_steps, in, one_token,
                                              prefill_ttft, 0,
                                              traffic.slo_percentile);
  t.decode_max_request_rate =
      t.replicas * MaxRequestRate(t.steps, no_prompt, out, 0,
                                  w.max_tpot_seconds, traffic.slo_percentile);
  t.max_request_rate =
      std::min(t.prefill_max_request_rate, t.decode_max_request_rate);
  if (w.max_ttft_seconds > 0 && prefill_ttft <= 0) {
    t.goodput_requests_per_s = 0;
    return t;
  }
  const SloShares prefill_shares = SloSharesAt(t.prefill_steps, in, one_token,
                                               prefill_rate, prefill_ttft, 0);
  const SloShares decode_shares = SloSharesAt(
      t.steps, no_prompt, out, t.rate_per_replica, 0, w.max_tpot_seconds);
  t.goodput_requests_per_s = rate * prefill_shares.ttft * decode_shares.tpot;
  return t;
}

}  // namespace

int ChunkedPrefillTokens(const Problem& problem) {
  const std::string& engine = problem.workload.engine;
  const HardwareDims& hw = problem.cluster.hardware;
  const double mib = hw.hbm_bytes / (1024.0 * 1024.0);
  if (engine == "sglang") {
    // ServerArgs' --chunked-prefill-size default by GPU memory (MiB):
    // 2048 below 35 GiB, 8192 below 160 GiB (H100, H200), 16384 above
    // (B200, B300, GB200).
    if (mib < 35 * 1024) return 2048;
    return mib < 160 * 1024 ? 8192 : 16384;
  }
  if (engine == "trtllm") {
    // max_num_tokens (8192 by default) bounds the tokens of an iteration;
    // chunked prefill is off by default, so a prompt is never split and the
    // emitted servers raise max_num_tokens to ISL + the chat template's
    // tokens when that is larger (client/emit/trtllm.cc).
    return std::max(kTrtllmMaxNumTokens,
                    problem.workload.input_tokens + kChatTemplateTokens);
  }
  // vLLM (and no engine named): max_num_batched_tokens for the OpenAI
  // server, 8192 on GPUs of 70 GiB and more except A100s, else 2048.
  const bool a100 = absl::StrContains(absl::AsciiStrToLower(hw.name), "a100");
  return mib >= 70 * 1024 && !a100 ? kDefaultChunkTokens : 2048;
}

TrafficPrediction StepTimesOf(const CostModel& model, const PlanDims& plan) {
  TrafficPrediction t;
  // A disaggregated plan's pools: PredictTraffic.
  if (plan.disaggregated) return t;
  if (!InstanceSteps(model, plan, /*with_prefill=*/true, &t.steps, &t.replicas))
    return t;
  t.computed = true;
  t.replicas *= std::max(1, plan.replicas);
  return t;
}

namespace {

TrafficPrediction PredictTrafficWith(const CostModel& model,
                                     const PlanDims& plan, StepScale scale,
                                     Predictor predict) {
  const TrafficDims& traffic = model.problem().workload.traffic;
  if (traffic.request_rate <= 0) return {};
  if (plan.disaggregated)
    return PredictDisaggregatedTraffic(model, plan, scale, predict);
  TrafficPrediction t = StepTimesOf(model, plan);
  if (!t.computed) return t;
  Scale(scale, scale.decode, &t.steps);
  const LengthPoints in = Discretize(traffic.input);
  const LengthPoints out = Discretize(traffic.output);
  t.rate_per_replica = traffic.request_rate / t.replicas;
  t.queueing = predict(t.steps, in, out, t.rate_per_replica);
  const WorkloadDims& w = model.problem().workload;
  t.max_request_rate =
      t.replicas * MaxRequestRate(t.steps, in, out, w.max_ttft_seconds,
                                  w.max_tpot_seconds, traffic.slo_percentile);
  const SloShares shares = SloSharesAt(t.steps, in, out, t.rate_per_replica,
                                       w.max_ttft_seconds, w.max_tpot_seconds);
  t.goodput_requests_per_s = traffic.request_rate * shares.ttft * shares.tpot;
  return t;
}

}  // namespace

TrafficPrediction PredictTraffic(const CostModel& model, const PlanDims& plan,
                                 StepScale scale) {
  return PredictTrafficWith(model, plan, scale, PredictQueueing);
}

namespace {

// The whole deployment's queueing at `rate` requests/s, streamed (the
// prompt queues' chains), from `t`'s step times; `t` is a scratch copy.
QueueingPrediction StreamedQueueAt(const LengthPoints& in,
                                   const LengthPoints& out, double rate,
                                   TrafficPrediction t) {
  if (t.disaggregated) {
    ComposeDisaggregated(in, out, rate, PredictStreamedQueueing, &t);
    return t.queueing;
  }
  return PredictStreamedQueueing(t.steps, in, out, rate / t.replicas);
}

bool MeetsStreamedSlos(const QueueingPrediction& q, const WorkloadDims& w) {
  const int p = w.traffic.slo_percentile;
  return q.stable &&
         (w.max_ttft_seconds <= 0 ||
          LatencyAt(q, p, /*ttft=*/true) <= w.max_ttft_seconds) &&
         (w.max_tpot_seconds <= 0 ||
          LatencyAt(q, p, /*ttft=*/false) <= w.max_tpot_seconds);
}

// The share of requests within `slo` seconds, the closed forms' `share` held
// inside the bracket the reported percentiles give it (p50, p90, the p95
// LatencyAt interpolates, p99), so that the share reaches a percentile
// exactly when that percentile is within the SLO.
double ShareWithin(const QueueingPrediction& q, bool ttft, double slo,
                   double share) {
  if (slo <= 0 || !q.stable) return share;
  const std::pair<int, double> points[] = {
      {50, 0.50}, {90, 0.90}, {95, 0.95}, {99, 0.99}};
  double low = 0, high = 1;
  for (const auto& [percentile, probability] : points) {
    if (LatencyAt(q, percentile, ttft) <= slo) {
      low = std::max(low, probability);
    } else {
      high = std::min(high, probability);
    }
  }
  // Below `high` strictly: a share of exactly 0.99 meets p99.
  const double below_high = std::nextafter(high, 0.0);
  return std::clamp(share, low, std::max(low, below_high));
}

}  // namespace

TrafficPrediction PredictStreamedTraffic(const CostModel& model,
                                         const PlanDims& plan,
                                         const std::function<bool()>& stop) {
  TrafficPrediction t =
      PredictTrafficWith(model, plan, {}, PredictStreamedQueueing);
  if (!t.computed) return t;
  const WorkloadDims& w = model.problem().workload;
  const TrafficDims& traffic = w.traffic;
  const LengthPoints in = Discretize(traffic.input);
  const LengthPoints out = Discretize(traffic.output);
  const double offered = traffic.request_rate;
  // Goodput: the closed forms' shares held to the reported percentiles.
  if (t.queueing.stable && offered > 0 &&
      (w.max_ttft_seconds > 0 || w.max_tpot_seconds > 0)) {
    const double share = t.goodput_requests_per_s / offered;
    // The closed forms' shares multiply; split their product back by the
    // TPOT share alone (TTFT's absorbs the rest).
    // (A disaggregated plan's decode pool takes no prompts.)
    const SloShares decode =
        SloSharesAt(t.steps, t.disaggregated ? Fixed(0) : in, out,
                    t.rate_per_replica, 0, w.max_tpot_seconds);
    const double tpot_share = decode.tpot;
    const double ttft_share = tpot_share > 0 ? share / tpot_share : 0;
    t.goodput_requests_per_s =
        offered *
        ShareWithin(t.queueing, true, w.max_ttft_seconds, ttft_share) *
        ShareWithin(t.queueing, false, w.max_tpot_seconds, tpot_share);
  }
  // max_request_rate: the highest rate whose streamed percentiles (those
  // reported) meet the SLOs, by bracketing from the offered rate (known
  // already) and the closed forms' limit, then bisection.
  int probes = 0;
  const auto meets = [&](double rate) {
    ++probes;
    return MeetsStreamedSlos(StreamedQueueAt(in, out, rate, t), w);
  };
  const auto stopped = [&] {
    return probes >= kStreamedRateMaxProbes || (stop && stop());
  };
  const double closed_form = t.max_request_rate;
  double lo = 0, hi = std::numeric_limits<double>::infinity();
  (MeetsStreamedSlos(t.queueing, w) ? lo : hi) = offered;
  if (closed_form > lo && closed_form < hi && !stopped())
    (meets(closed_form) ? lo : hi) = closed_form;
  while (std::isinf(hi) && !stopped()) {
    const double r = lo * kStreamedRateBracket;
    (meets(r) ? lo : hi) = r;
  }
  // Nothing meets yet: an idle plan may miss the SLOs outright.
  if (lo == 0 && !stopped()) {
    const double idle = hi * 1e-6;
    if (!meets(idle)) {
      t.max_request_rate = 0;
      t.streamed_rate_probes = probes;
      return t;
    }
    lo = idle;
    while (hi > lo * kStreamedRateBracket && !stopped()) {
      const double r = hi / kStreamedRateBracket;
      (meets(r) ? lo : hi) = r;
    }
  }
  while (hi - lo > kStreamedRateTolerance * hi && !stopped()) {
    const double mid = 0.5 * (lo + hi);
    (meets(mid) ? lo : hi) = mid;
  }
  t.max_request_rate = lo;
  t.streamed_rate_probes = probes;
  t.stopped = stop && stop();
  return t;
}

}  // namespace shardplan::simulator
