// Open-loop predictions of a plan: the cost model's step times for one
// replica (simulator/queueing.h StepTimes) and the queueing model at the
// workload's request rate: TTFT/TPOT percentiles, the highest rate within the
// SLOs, goodput. Costs a few cost-model evaluations and a few hundred
// microseconds (PredictStreamedTraffic: milliseconds): computed for streamed
// plans, not inside the search.
#ifndef SHARDPLAN_SIMULATOR_TRAFFIC_COSTING_H_
#define SHARDPLAN_SIMULATOR_TRAFFIC_COSTING_H_

#include <functional>

#include "simulator/cost_model.h"
#include "simulator/queueing.h"
#include "simulator/types.h"

namespace shardplan::simulator {

// Prompt tokens one iteration takes (chunked prefill), by the workload's
// engine on the cluster's GPUs (ChunkedPrefillTokens). vLLM's token budget
// for the OpenAI server on GPUs of 70 GiB and more (max_num_batched_tokens,
// EngineArgs.get_batch_defaults in vllm/engine/arg_utils.py, https://github.
// com/vllm-project/vllm/blob/99d7eb5d6a512cfcc5a2b104f24ebf2d6cda772b/vllm/
// engine/arg_utils.py), the default when no engine is named.
inline constexpr int kDefaultChunkTokens = 8192;
// TensorRT-LLM's max_num_tokens default (BaseLlmArgs / TorchLlmArgs in
// tensorrt_llm/llmapi/llm_args.py, https://nvidia.github.io/TensorRT-LLM/
// llm-api/reference/TorchLlmArgs.html), and the chat template's tokens the
// emitter adds to a prompt (client/emit/trtllm.cc).
inline constexpr int kTrtllmMaxNumTokens = 8192;
inline constexpr int kChatTemplateTokens = 256;

// The chunked-prefill budget of the workload's engine (workload.engine; ""
// = vLLM's) on the cluster's hardware, in tokens per iteration:
//  - vLLM: max_num_batched_tokens, 8192 on GPUs of >= 70 GiB other than
//    A100, else 2048 (EngineArgs.get_batch_defaults, above);
//  - SGLang: --chunked-prefill-size, 2048 under 35 GiB, 8192 under 160 GiB
//    (H100, H200), 16384 above (B200, B300, GB200): ServerArgs.
//    _handle_gpu_memory_settings in python/sglang/srt/server_args.py,
//    https://github.com/sgl-project/sglang/blob/469c63e54e7d94591617ef9590c6aa26d54dc1bb/python/sglang/srt/server_args.py;
//  - TensorRT-LLM: max_num_tokens (8192), chunked prefill off by default,
//    so at least the emitted ISL + 256.
int ChunkedPrefillTokens(const Problem& problem);

struct TrafficPrediction {
  // False without a request rate, or when one request does not fit.
  bool computed = false;
  // Aggregated: one replica's (one queue's) engine loop. Disaggregated: one
  // decode instance's (no prefill work; its TTFT is the wait for the next
  // iteration and the first decode step).
  StepTimes steps;
  int replicas = 0;  // queues: replicas (x dense dp); decode instances
  double rate_per_replica = 0;
  // The whole request: aggregated, the replica's queue; disaggregated, the
  // prefill pool's TTFT + the KV transfer + the decode pool's first step,
  // and the decode pool's TPOT.
  QueueingPrediction queueing;
  // Disaggregated plans: the prefill pool, each instance its own queue
  // (prompts only: no decode, so no TPOT), and what lies between the pools.
  bool disaggregated = false;
  StepTimes prefill_steps;
  int prefill_queues = 0;
  QueueingPrediction prefill_queueing;
  QueueingPrediction decode_queueing;
  double handoff_seconds = 0;  // exposed KV transfer + per-request overhead
  // Each pool's highest rate within the SLOs (whole pool, requests/s): the
  // plan's max_request_rate is the smaller.
  double prefill_max_request_rate = 0;
  double decode_max_request_rate = 0;
  // Whole deployment, requests/s.
  double max_request_rate = 0;
  double goodput_requests_per_s = 0;
  // PredictStreamedTraffic: queueing predictions its bisection of
  // max_request_rate made, and whether `stop` cut it short.
  int streamed_rate_probes = 0;
  bool stopped = false;
};

// The step times of one replica of an aggregated `plan` (validated), or of
// one decode instance and one prefill instance of a disaggregated one.
// `computed` false when one request's KV cache does not fit.
TrafficPrediction StepTimesOf(const CostModel& model, const PlanDims& plan);

// Multipliers on the step times, to carry a calibration band (the p10 or
// p90 ratio of measured to predicted) through the queue: `decode` on the
// per-iteration and per-request decode costs (TPOT's band), `prefill` on the
// prefill costs (TTFT's band).
struct StepScale {
  double decode = 1;
  double prefill = 1;
};

// StepTimesOf plus the queueing model at the workload's request rate (each
// pool its own queue for a disaggregated plan), with the step times scaled.
TrafficPrediction PredictTraffic(const CostModel& model, const PlanDims& plan,
                                 StepScale scale = {});

// PredictStreamedTraffic's bisection of max_request_rate: it stops when the
// bracket is within this share of its upper end, or after this many
// queueing predictions at trial rates (each a chain per prompt queue), and
// widens a one-sided bracket by this factor per trial.
inline constexpr double kStreamedRateTolerance = 0.01;
inline constexpr int kStreamedRateMaxProbes = 16;
inline constexpr double kStreamedRateBracket = 1.25;

// PredictTraffic for a plan the server answers with (streamed updates,
// EvaluatePlan, a capacity search's picks): the TTFT mean and percentiles
// of each prompt queue (the replica's; a disaggregated plan's prefill pool)
// from the queue's exact chain (PredictStreamedQueueing), milliseconds per
// queue. max_request_rate is the highest rate whose streamed percentiles
// (TTFT from the chain, TPOT from the closed forms, at the SLO percentile)
// meet the SLOs, by bisection within kStreamedRateTolerance (a few more
// chains; 0 when even an idle plan misses them), so that the offered rate
// is within max_request_rate exactly when the reported percentiles are
// within the SLOs. Goodput is the closed forms' share of requests within
// the SLOs, held inside the bracket the reported percentiles give it. The
// search ranks on the closed forms (PredictTraffic). `stop` (may be empty)
// is asked between the bisection's chains; once it says true the rest is
// skipped and `stopped` is set (the answer is then incomplete).
TrafficPrediction PredictStreamedTraffic(
    const CostModel& model, const PlanDims& plan,
    const std::function<bool()>& stop = {});

}  // namespace shardplan::simulator

#endif  // SHARDPLAN_SIMULATOR_TRAFFIC_COSTING_H_
