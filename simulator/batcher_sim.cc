#include "simulator/batcher_sim.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <random>

namespace shardplan::simulator {
namespace {

struct Request {
  double arrival = 0;
  double first_token = 0;
  int prompt_left = 0;
  int prompt = 0;
  int output = 0;
  int decode_left = 0;
};

int SampleLength(const LengthDistribution& d, std::mt19937_64* rng) {
  std::uniform_real_distribution<double> u(0, 1);
  return std::max(1, static_cast<int>(std::lround(LengthQuantile(d, u(*rng)))));
}

}  // namespace

BatcherSimResult SimulateBatcher(const StepTimes& steps,
                                 const LengthDistribution& input,
                                 const LengthDistribution& output, double rate,
                                 int requests, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(rate);
  std::vector<Request> all(requests);
  double t = 0;
  for (Request& r : all) {
    t += gap(rng);
    r.arrival = t;
    r.prompt = r.prompt_left = SampleLength(input, &rng);
    r.output = SampleLength(output, &rng);
    r.decode_left = r.output - 1;
  }
  const int first_measured = requests / 10;
  const int last_measured = requests - requests / 10;
  BatcherSimResult result;
  std::deque<int> waiting;    // prompt not finished, FCFS
  std::vector<int> decoding;  // first token out, more to come
  std::vector<int> finished_prefill;
  int next = 0, done = 0;
  double now = 0, running_area = 0;
  const int chunk = std::max(1, steps.chunk_tokens);
  while (done < requests) {
    while (next < requests && all[next].arrival <= now)
      waiting.push_back(next++);
    if (waiting.empty() && decoding.empty()) {
      now = all[next].arrival;
      continue;
    }
    // Chunked prefill: FCFS prompt tokens up to the budget, admitting a
    // request only while its KV cache fits beside the running ones.
    int budget = chunk, in_flight = static_cast<int>(decoding.size());
    int prefill_tokens = 0;
    finished_prefill.clear();
    for (int id : waiting) {
      if (budget == 0) break;
      if (steps.max_running > 0 && in_flight >= steps.max_running) break;
      ++in_flight;
      Request& r = all[id];
      const int take = std::min(budget, r.prompt_left);
      r.prompt_left -= take;
      budget -= take;
      prefill_tokens += take;
      if (r.prompt_left == 0) finished_prefill.push_back(id);
    }
    const double batch = static_cast<double>(decoding.size());
    const double dt = steps.iteration_seconds +
                      steps.decode_request_seconds * batch +
                      steps.prefill_token_seconds * prefill_tokens;
    now += dt;
    running_area += batch * dt;
    // Decode: one token each; the finished leave.
    size_t kept = 0;
    for (size_t i = 0; i < decoding.size(); ++i) {
      Request& r = all[decoding[i]];
      if (--r.decode_left > 0) {
        decoding[kept++] = decoding[i];
        continue;
      }
      ++done;
      if (decoding[i] >= first_measured && decoding[i] < last_measured)
        result.tpot_seconds.push_back((now - r.first_token) / (r.output - 1));
    }
    decoding.resize(kept);
    // The iteration that finishes a prompt samples its first token.
    for (int id : finished_prefill) {
      Request& r = all[id];
      r.first_token = now;
      if (id >= first_measured && id < last_measured)
        result.ttft_seconds.push_back(now - r.arrival);
      if (r.decode_left > 0) {
        decoding.push_back(id);
      } else {
        ++done;
      }
    }
    while (!waiting.empty() && all[waiting.front()].prompt_left == 0)
      waiting.pop_front();
  }
  result.mean_running = now > 0 ? running_area / now : 0;
  return result;
}

double SampleQuantile(std::vector<double>* values, double q) {
  if (values->empty()) return 0;
  const size_t k =
      std::min(values->size() - 1, static_cast<size_t>(q * values->size()));
  std::nth_element(values->begin(), values->begin() + k, values->end());
  return (*values)[k];
}

}  // namespace shardplan::simulator
