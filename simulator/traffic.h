// Open-loop traffic of a workload: Poisson arrivals at a request rate, prompt
// and output length distributions, the prefix-cache hit rate, and the
// percentile the SLOs bound. Proto-free; built by simulator/spec.h.
#ifndef SHARDPLAN_SIMULATOR_TRAFFIC_H_
#define SHARDPLAN_SIMULATOR_TRAFFIC_H_

#include <cstdint>
#include <utility>
#include <vector>

namespace shardplan::simulator {

enum class LengthKind : uint8_t { kFixed, kUniform, kLognormal, kHistogram };

// Request lengths in tokens. kFixed: `mean`. kUniform: min..max. kLognormal:
// `mean` of the lengths and `sigma` of their log, clipped to min..max where
// max > 0. kHistogram: `buckets` (tokens, weight; weights sum to 1).
struct LengthDistribution {
  LengthKind kind = LengthKind::kFixed;
  double min = 0;
  double max = 0;
  double mean = 0;
  double sigma = 0;
  std::vector<std::pair<double, double>> buckets;
};

// The distribution's value at quantile u in (0, 1), in tokens (not rounded).
double LengthQuantile(const LengthDistribution& d, double u);

struct TrafficDims {
  // Requests/s offered to the whole deployment; 0 = closed loop (concurrency).
  double request_rate = 0;
  LengthDistribution input;
  LengthDistribution output;
  // Share of prompt tokens the prefix cache serves (not prefilled).
  double prefix_cache_hit_rate = 0;
  // 50, 90, 95, 99; 0 = the SLOs bound the mean.
  int slo_percentile = 0;
};

}  // namespace shardplan::simulator

#endif  // SHARDPLAN_SIMULATOR_TRAFFIC_H_
