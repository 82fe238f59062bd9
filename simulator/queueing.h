// Latency percentiles of one replica under Poisson arrivals: continuous
// batching with chunked prefill, the running batch following the load. Fast
// closed forms (an M/G/1 prefill queue, shot noise for the decode batch);
// simulator/batcher_sim.h simulates the same engine loop to check them.
#ifndef SHARDPLAN_SIMULATOR_QUEUEING_H_
#define SHARDPLAN_SIMULATOR_QUEUEING_H_

#include <array>

#include "simulator/traffic.h"

namespace shardplan::simulator {

// The engine loop of one replica, as the cost model prices it: an iteration
// decodes one token for each of its B running requests and prefills P prompt
// tokens (at most chunk_tokens) in
//   iteration_seconds + B * decode_request_seconds + P * prefill_token_seconds.
// With pipeline parallelism an iteration is a round of the stages'
// micro-batches: the stages work on different micro-batches at once, so a
// prompt token occupies the loop for its busiest stage's time only, and each
// micro-batch has its own chunk budget.
struct StepTimes {
  double iteration_seconds = 0;
  double decode_request_seconds = 0;
  double prefill_token_seconds = 0;
  int chunk_tokens = 8192;
  // Requests whose KV cache fits at once; 0 = no limit.
  int max_running = 0;
  // Seconds per prompt token a prompt's own TTFT carries beyond the loop's
  // time: with pipeline parallelism its chunks pass the other stages too
  // (the chain less the busiest stage); 0 without.
  double pipeline_lag_token_seconds = 0;
};

// A length distribution as equally likely points (its quantile midpoints, or
// a histogram's buckets), with its moments.
struct LengthPoints {
  static constexpr int kMaxPoints = 32;
  std::array<double, kMaxPoints> tokens{};
  std::array<double, kMaxPoints> weight{};
  int size = 0;
  double mean = 0;
  double second_moment = 0;
};
LengthPoints Discretize(const LengthDistribution& d);

struct QueueingPrediction {
  // False when the offered rate exceeds what the replica sustains (the
  // decode work, the prefill queue or the KV cache saturate); the latencies
  // are then unbounded and left 0.
  bool stable = false;
  double utilization = 0;    // the busiest resource's load, 0-1
  double running_batch = 0;  // mean requests decoding
  double ttft_mean_seconds = 0;
  std::array<double, 3> ttft_seconds{};  // p50, p90, p99
  double tpot_mean_seconds = 0;
  std::array<double, 3> tpot_seconds{};  // p50, p90, p99
};

// One replica at `rate` requests/s. Output lengths of 1 have no TPOT.
QueueingPrediction PredictQueueing(const StepTimes& steps,
                                   const LengthPoints& input,
                                   const LengthPoints& output, double rate);

// PredictQueueing with the TTFT mean and percentiles of the prompt queue's
// exact chain (the bulk-service queue at iteration starts, solved
// numerically on a token grid, simulator/internal/bulk_chain.h) in place of
// the closed forms. Milliseconds per call, not the closed forms' hundreds of
// microseconds: for the plans the server streams back, never inside a
// search. Pipelines (a prompt lag) and unsolvable queues keep the closed
// forms; TPOT stays on them.
QueueingPrediction PredictStreamedQueueing(const StepTimes& steps,
                                           const LengthPoints& input,
                                           const LengthPoints& output,
                                           double rate);

// Probabilities that a request meets each SLO at `rate` (max_*_seconds 0 =
// none: probability 1); both 0 when unstable.
struct SloShares {
  double ttft = 0;
  double tpot = 0;
};
SloShares SloSharesAt(const StepTimes& steps, const LengthPoints& input,
                      const LengthPoints& output, double rate,
                      double max_ttft_seconds, double max_tpot_seconds);

// The TTFT or TPOT at `percentile` (0 = mean) from a prediction.
double LatencyAt(const QueueingPrediction& q, int percentile, bool ttft);

// The highest rate (requests/s, this replica) whose TTFT and TPOT at
// `percentile` (0 = their means) stay within the SLOs; 0 when even an idle
// replica misses them. Without SLOs: the stability limit.
double MaxRequestRate(const StepTimes& steps, const LengthPoints& input,
                      const LengthPoints& output, double max_ttft_seconds,
                      double max_tpot_seconds, int percentile);

}  // namespace shardplan::simulator

#endif  // SHARDPLAN_SIMULATOR_QUEUEING_H_
