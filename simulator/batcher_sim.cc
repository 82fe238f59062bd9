#include "simulator/batcher_sim.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
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

// Poisson arrivals at `rate` with their prompt and output lengths.
std::vector<Request> DrawRequests(const LengthDistribution& input,
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
  return all;
}

// Request `id`'s prompt is done at `now`: its first token; it decodes on,
// or is done when its output is one token.
void FirstToken(int id, double now, bool measured, Request* r,
                BatcherSimResult* result, std::vector<int>* decoding,
                int* done) {
  r->first_token = now;
  if (measured) result->ttft_seconds.push_back(now - r->arrival);
  if (r->decode_left > 0) {
    decoding->push_back(id);
  } else {
    ++*done;
  }
}

}  // namespace

BatcherSimResult SimulateBatcher(const StepTimes& steps,
                                 const LengthDistribution& input,
                                 const LengthDistribution& output, double rate,
                                 int requests, uint64_t seed) {
  std::vector<Request> all = DrawRequests(input, output, rate, requests, seed);
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
    for (int id : finished_prefill)
      FirstToken(id, now, id >= first_measured && id < last_measured, &all[id],
                 &result, &decoding, &done);
    while (!waiting.empty() && all[waiting.front()].prompt_left == 0)
      waiting.pop_front();
  }
  result.mean_running = now > 0 ? running_area / now : 0;
  return result;
}

BatcherSimResult SimulatePipelinedBatcher(const StepTimes& steps, int stages,
                                          const LengthDistribution& input,
                                          const LengthDistribution& output,
                                          double rate, int requests,
                                          uint64_t seed, bool eager_arrivals) {
  std::vector<Request> all = DrawRequests(input, output, rate, requests, seed);
  const int pp = std::max(1, stages);
  const int first_measured = requests / 10;
  const int last_measured = requests - requests / 10;
  struct Batch {
    std::vector<int> decode;
    std::vector<int> prompts;  // requests with a chunk in this batch
    double done = 0;           // leaves the last stage
  };
  BatcherSimResult result;
  std::vector<char> in_flight(requests, 0);
  std::deque<int> waiting;    // prompt not finished, FCFS
  std::vector<int> decoding;  // first token out, more to come
  std::deque<Batch> queue;    // in flight, oldest first
  std::vector<double> stage_free(pp, 0);
  int next = 0, done = 0;
  double now = 0, running_area = 0, last_area = 0;
  const int budget_per_batch = std::max(1, steps.chunk_tokens / pp);
  const auto account = [&](double until) {
    running_area += static_cast<double>(decoding.size()) * (until - last_area);
    last_area = until;
  };
  // Schedules batches from the requests not in flight while the queue has
  // room; false when nothing was scheduled.
  const auto schedule = [&]() {
    bool any = false;
    while (static_cast<int>(queue.size()) < pp) {
      Batch b;
      for (int id : decoding)
        if (!in_flight[id]) b.decode.push_back(id);
      int budget = budget_per_batch, tokens = 0;
      int held = static_cast<int>(decoding.size());
      for (int id : waiting) {
        if (budget == 0) break;
        Request& r = all[id];
        // Prompts in flight (or whose last chunk is) hold their KV cache.
        if (in_flight[id] || r.prompt_left == 0) {
          ++held;
          continue;
        }
        if (steps.max_running > 0 && held >= steps.max_running) break;
        ++held;
        const int take = std::min(budget, r.prompt_left);
        r.prompt_left -= take;
        budget -= take;
        tokens += take;
        b.prompts.push_back(id);
      }
      if (b.decode.empty() && b.prompts.empty()) break;
      for (int id : b.decode) in_flight[id] = 1;
      for (int id : b.prompts) in_flight[id] = 1;
      const double dt = steps.iteration_seconds / pp +
                        steps.decode_request_seconds * b.decode.size() +
                        steps.prefill_token_seconds * tokens;
      double ready = now;
      for (int st = 0; st < pp; ++st) {
        ready = std::max(ready, stage_free[st]) + dt;
        stage_free[st] = ready;
      }
      b.done = ready;
      queue.push_back(std::move(b));
      any = true;
    }
    return any;
  };
  while (done < requests) {
    const double arrival = next < requests ? all[next].arrival
                                           : std::numeric_limits<double>::max();
    if (queue.empty()) {
      now = std::max(now, arrival);
      account(now);
      while (next < requests && all[next].arrival <= now)
        waiting.push_back(next++);
      schedule();
      continue;
    }
    // With room in the queue an arrival starts a batch of its own at once
    // (eager); else it waits for the oldest batch's return.
    if (eager_arrivals && static_cast<int>(queue.size()) < pp &&
        arrival < queue.front().done) {
      now = arrival;
      account(now);
      while (next < requests && all[next].arrival <= now)
        waiting.push_back(next++);
      schedule();
      continue;
    }
    Batch b = std::move(queue.front());
    queue.pop_front();
    now = b.done;
    account(now);
    while (next < requests && all[next].arrival <= now)
      waiting.push_back(next++);
    for (int id : b.decode) {
      in_flight[id] = 0;
      Request& r = all[id];
      if (--r.decode_left > 0) continue;
      ++done;
      if (id >= first_measured && id < last_measured)
        result.tpot_seconds.push_back((now - r.first_token) / (r.output - 1));
    }
    decoding.erase(
        std::remove_if(
            decoding.begin(), decoding.end(),
            [&](int id) { return all[id].decode_left <= 0 && !in_flight[id]; }),
        decoding.end());
    for (int id : b.prompts) {
      in_flight[id] = 0;
      Request& r = all[id];
      if (r.prompt_left > 0) continue;
      FirstToken(id, now, id >= first_measured && id < last_measured, &r,
                 &result, &decoding, &done);
    }
    while (!waiting.empty() && all[waiting.front()].prompt_left == 0 &&
           !in_flight[waiting.front()])
      waiting.pop_front();
    schedule();
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
