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

// The q-quantile (0-1) of `values` (sorted in place).
double SampleQuantile(std::vector<double>* values, double q);

}  // namespace shardplan::simulator

#endif  // SHARDPLAN_SIMULATOR_BATCHER_SIM_H_
