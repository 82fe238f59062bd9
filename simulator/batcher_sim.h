// A discrete-event simulation of one replica's continuous batcher: Poisson
// arrivals, a FCFS prefill queue drained chunk_tokens per iteration (chunked
// prefill sharing the iteration with the decode batch), one token per
// running request per iteration, iteration times from StepTimes. The
// reference the closed forms of simulator/queueing.h are checked against;
// not used to answer requests.
#ifndef SHARDPLAN_SIMULATOR_BATCHER_SIM_H_
#define SHARDPLAN_SIMULATOR_BATCHER_SIM_H_

#include <cstdint>
#include <vector>

#include "simulator/queueing.h"
#include "simulator/traffic.h"

namespace shardplan::simulator {

struct BatcherSimResult {
  // Per measured request (the first and last tenth of the arrivals are
  // warm-up and drain, not measured); TPOT only for outputs over 1 token.
  std::vector<double> ttft_seconds;
  std::vector<double> tpot_seconds;
  // Time-average requests decoding.
  double mean_running = 0;
};

BatcherSimResult SimulateBatcher(const StepTimes& steps,
                                 const LengthDistribution& input,
                                 const LengthDistribution& output, double rate,
                                 int requests, uint64_t seed);

// The same loop split over `stages` pipeline stages, as vLLM V1 runs it
// (EngineCore.step_with_batch_queue): up to `stages` scheduled batches in
// flight; when the oldest returns its outputs are applied and new batches are
// scheduled from the requests not in flight (FCFS prompt chunks within
// chunk_tokens / stages per batch, every decoding request), until the queue
// is full or nothing is left; an arrival to an idle engine is scheduled at
// once, else at the next return. Each stage takes a batch of b decodes and p
// prompt tokens in iteration_seconds / stages + b decode_request_seconds +
// p prefill_token_seconds (balanced stages: `steps` are the round's, as
// simulator/traffic_costing.cc makes them); the stages are FIFO. A prompt's
// first token comes when the batch holding its last chunk leaves the last
// stage. stages 1 is SimulateBatcher's loop. `eager_arrivals`: an arrival
// while fewer than `stages` batches are in flight is scheduled at once (a
// loop that keeps polling for work, as TensorRT-LLM's
// PyExecutor._executor_loop_pp moves on when a micro-batch is empty);
// without it the engine blocks on the oldest batch once nothing is left to
// schedule (vLLM V1), and the running requests stay in the cohorts their
// batches formed.
BatcherSimResult SimulatePipelinedBatcher(const StepTimes& steps, int stages,
                                          const LengthDistribution& input,
                                          const LengthDistribution& output,
                                          double rate, int requests,
                                          uint64_t seed, bool eager_arrivals);

// The q-quantile (0-1) of `values` (sorted in place).
double SampleQuantile(std::vector<double>* values, double q);

}  // namespace shardplan::simulator

#endif  // SHARDPLAN_SIMULATOR_BATCHER_SIM_H_
