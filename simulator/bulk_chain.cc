#include "simulator/internal/bulk_chain.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

namespace shardplan::simulator::internal {
namespace {

// What bounds one solve's time: the states of the grid, the state
// reduction's multiply-adds (states x upward reach x chunk bins), the
// residual's cells and the TTFT grid's bins.
constexpr int kMaxStates = 2000;
constexpr double kMaxEliminationOps = 4e6;
constexpr int kResidualCells = 4;
constexpr int kTimeBins = 16384;
// Bins per chunk tried, finest first.
constexpr int kChunkBins[] = {64, 32, 16, 8, 4};
// Iteration lengths within 2% share one arrival distribution in the chain,
// within 10% one arrival situation (the residual and the tokens ahead).
constexpr double kLengthStep = 1.02;
constexpr double kSituationStep = 1.1;

// The prompt lengths on a grid of `h` tokens, each point split between its
// two neighbouring grid points so that the mean is kept.
std::vector<double> PromptPmf(const LengthPoints& p, double h) {
  int top = 1;
  for (int i = 0; i < p.size; ++i)
    top = std::max(top, static_cast<int>(std::floor(p.tokens[i] / h)) + 2);
  std::vector<double> f(top, 0.0);
  for (int i = 0; i < p.size; ++i) {
    const double x = p.tokens[i] / h;
    const int lo = static_cast<int>(std::floor(x));
    f[lo] += p.weight[i] * (1 - (x - lo));
    f[lo + 1] += p.weight[i] * (x - lo);
  }
  return f;
}

// The compound-Poisson prompt tokens of `arrivals` (mean count) prompts on
// the grid (Panjer's recursion), at most `max_len` points, the last one
// holding the rest of the mass.
std::vector<double> CompoundPoisson(const std::vector<double>& f,
                                    double arrivals, int max_len) {
  std::vector<double> g;
  g.reserve(max_len);
  g.push_back(std::exp(-arrivals * (1 - f[0])));
  double total = g[0];
  const int support = static_cast<int>(f.size()) - 1;
  for (int k = 1; k < max_len && total < 1 - 1e-10; ++k) {
    double sum = 0;
    for (int j = 1, top = std::min(k, support); j <= top; ++j)
      sum += j * f[j] * g[k - j];
    g.push_back(arrivals / k * sum);
    total += g.back();
  }
  g.back() += std::max(0.0, 1 - total);
  return g;
}

// A CDF built from uniform pieces of mass on a time grid: each piece adds a
// ramp from t0 to t1 (a step when t0 = t1), summed as slope and offset
// changes and integrated once.
class RampCdf {
 public:
  RampCdf(double t_max) : dt_(t_max / kTimeBins) {
    offset_.assign(kTimeBins + 2, 0.0);
    slope_.assign(kTimeBins + 2, 0.0);
  }
  void Add(double t0, double t1, double mass) {
    if (t1 - t0 <= 1e-9 * dt_) {
      const int b = Index(t0);
      offset_[b] += mass;
      return;
    }
    const double rate = mass / (t1 - t0);
    Ramp(t0, rate);
    Ramp(t1, -rate);
  }
  // P(TTFT <= t) at the grid points.
  std::vector<double> Values() const {
    std::vector<double> v(kTimeBins + 2);
    double constant = 0, slope = 0, linear = 0;
    for (int b = 0; b < kTimeBins + 2; ++b) {
      linear += slope * dt_;
      constant += offset_[b];
      slope += slope_[b];
      v[b] = constant + linear;
    }
    return v;
  }
  double dt() const { return dt_; }

 private:
  // The first grid point at or after t.
  int Index(double t) const {
    return std::clamp(static_cast<int>(std::ceil(t / dt_)), 0, kTimeBins + 1);
  }
  // rate x max(0, t - t0) at the grid points.
  void Ramp(double t0, double rate) {
    const int b = Index(t0);
    offset_[b] += rate * (b * dt_ - t0);
    slope_[b] += rate;
  }
  double dt_;
  std::vector<double> offset_, slope_;
};

// One level of the loop on its token grid: state i is i h prompt tokens
// queued at an iteration's start; the iteration takes min(C, Q) of them and
// lasts tau_i. Rows of similar length share one arrival distribution (a
// group).
struct Grid {
  double h = 0;  // tokens per state
  int c = 0;     // states per chunk
  int states = 0;
  int reach = 0;  // upward reach of one iteration's arrivals, states
  double v_empty = 0, v_full = 0;
  std::vector<double> prompt;  // prompt-length pmf on the grid
  std::vector<double> tau;
  std::vector<int> group;
  std::vector<double> group_tau;
  std::vector<std::vector<double>> arrivals;  // per group
  std::vector<double> pi;                     // at iteration starts
  double idle_at_empty = 0;  // P(the loop stops at an empty queue)
  double longest = 0;
};

// The fixed part of an iteration that starts with `queued` prompt tokens:
// the batch follows the backlog, the tokens beyond the iteration's chunk.
double FixedPart(const BulkChainLoop& loop, const Grid& g, double queued) {
  if (!(loop.content_scale > 0) || !(g.v_full > g.v_empty)) return g.v_empty;
  const double backlog = std::max(0.0, queued - std::max(1, loop.chunk_tokens));
  return g.v_empty +
         (g.v_full - g.v_empty) * (1 - std::exp(-backlog / loop.content_scale));
}

bool BuildGrid(const BulkChainLoop& loop, double v_empty,
               const LengthPoints& prompts, Grid* g) {
  const double chunk = std::max(1, loop.chunk_tokens);
  const double cp = loop.prefill_token_seconds;
  const double rate = loop.rate;
  const double inflow = rate * prompts.mean;
  g->v_empty = v_empty;
  g->v_full = std::max(loop.v_full, v_empty);
  // The backlog's batch must leave the queue stable; else no rise (as the
  // closed forms).
  if (!(chunk / (g->v_full + cp * chunk) > inflow)) g->v_full = v_empty;
  const double full_iteration = g->v_full + cp * chunk;
  const double mu = chunk / full_iteration;
  if (!(inflow < mu)) return false;
  for (int i = 0; i < prompts.size; ++i)
    g->longest = std::max(g->longest, prompts.tokens[i]);
  // The grid: the M/G/1 mean content at the backlog's capacity sizes the
  // queue's range (its tail beyond 12 means is below 1e-5); the arrivals of
  // one full iteration its upward reach. The finest grid within the bounds.
  const double rho = inflow / mu;
  const double content = rate * prompts.second_moment / (2 * mu * (1 - rho));
  const double full_arrivals = rate * full_iteration;
  const double reach_tokens =
      prompts.mean * full_arrivals +
      10 * std::sqrt(full_arrivals * prompts.second_moment) + 2 * g->longest;
  const double range = chunk + g->longest + 12 * content + reach_tokens;
  for (int bins : kChunkBins) {
    g->c = bins;
    g->h = chunk / bins;
    g->states = static_cast<int>(std::ceil(range / g->h)) + 1;
    g->reach = static_cast<int>(std::ceil(reach_tokens / g->h)) + 2;
    if (g->states <= kMaxStates &&
        static_cast<double>(g->states) * g->reach * bins <= kMaxEliminationOps)
      break;
  }
  g->states = std::min(g->states, kMaxStates);
  g->reach = std::min(
      g->reach, static_cast<int>(kMaxEliminationOps / (g->states * g->c)));
  g->prompt = PromptPmf(prompts, g->h);
  g->reach = std::max(g->reach, static_cast<int>(g->prompt.size()));
  g->tau.resize(g->states);
  g->group.resize(g->states);
  std::map<long, int> group_of_key;
  std::vector<int> rows;
  for (int i = 0; i < g->states; ++i) {
    const double q = i * g->h;
    g->tau[i] = FixedPart(loop, *g, q) + cp * std::min(chunk, q);
    const long key = std::lround(std::log(g->tau[i]) / std::log(kLengthStep));
    auto [it, inserted] =
        group_of_key.emplace(key, static_cast<int>(g->group_tau.size()));
    if (inserted) {
      g->group_tau.push_back(0);
      rows.push_back(0);
    }
    g->group[i] = it->second;
    g->group_tau[it->second] += g->tau[i];
    ++rows[it->second];
  }
  g->arrivals.resize(g->group_tau.size());
  for (size_t k = 0; k < g->group_tau.size(); ++k) {
    g->group_tau[k] /= rows[k];
    // Beyond the recursion's range (exp underflows).
    if (rate * g->group_tau[k] > 600) return false;
    g->arrivals[k] =
        CompoundPoisson(g->prompt, rate * g->group_tau[k], g->reach);
  }
  return true;
}

// The stationary distribution at iteration starts.
void Stationary(Grid* g) {
  // The transition matrix in a band: row i reaches columns i - c .. i +
  // reach - 1 (down by at most a chunk, up by the arrivals); the top state
  // holds what would leave the grid.
  const int states = g->states, c = g->c, reach = g->reach;
  const int width = c + reach;
  std::vector<double> band(static_cast<size_t>(states) * width, 0.0);
  const auto at = [&](int i, int j) -> double& {
    return band[static_cast<size_t>(i) * width + (j - i + c)];
  };
  for (int i = 0; i < states; ++i) {
    const int base = std::max(0, i - c);
    const std::vector<double>& a = g->arrivals[g->group[i]];
    const double busy = i == 0 ? 1 - g->idle_at_empty : 1.0;
    for (size_t k = 0; k < a.size(); ++k)
      at(i, std::min(base + static_cast<int>(k), states - 1)) += busy * a[k];
  }
  // A stopped loop: the next arrival's prompt starts an iteration.
  for (size_t k = 0; k < g->prompt.size(); ++k)
    at(0, std::min(static_cast<int>(k), states - 1)) +=
        g->idle_at_empty * g->prompt[k];
  // State reduction (Grassmann, Taksar and Heyman, "Regenerative analysis
  // and steady state distributions for Markov chains", Operations Research
  // 33 (1985) 1107-1116): no subtraction, so no cancellation near
  // saturation; the band is kept.
  std::vector<double> down(states, 0.0);
  for (int n = states - 1; n >= 1; --n) {
    const int lo = std::max(0, n - c);
    double s = 0;
    for (int j = lo; j < n; ++j) s += at(n, j);
    down[n] = s;
    if (!(s > 0)) continue;
    for (int i = std::max(0, n - reach + 1); i < n; ++i) {
      const double p = at(i, n);
      if (p == 0) continue;
      const double scale = p / s;
      for (int j = lo; j < n; ++j) at(i, j) += scale * at(n, j);
    }
  }
  g->pi.assign(states, 0.0);
  g->pi[0] = 1;
  double total = 1;
  for (int n = 1; n < states; ++n) {
    double sum = 0;
    for (int i = std::max(0, n - reach + 1); i < n; ++i)
      sum += g->pi[i] * at(i, n);
    g->pi[n] = down[n] > 0 ? sum / down[n] : 0;
    total += g->pi[n];
  }
  for (double& p : g->pi) p /= total;
}

// The longest TTFT the grid can give.
double LongestTtft(const BulkChainLoop& loop, const Grid& g) {
  const double chunk = std::max(1, loop.chunk_tokens);
  double tau_max = 0;
  for (double t : g.tau) tau_max = std::max(tau_max, t);
  const int max_m =
      static_cast<int>(std::ceil((g.states * g.h + g.longest) / chunk)) + 1;
  return tau_max + (max_m + 1) * (std::max(g.v_empty, g.v_full) +
                                  loop.prefill_token_seconds * chunk);
}

// Adds the level's TTFT distribution with `level_weight` to `cdf` (and its
// mean to `mean`).
void AddTtft(const BulkChainLoop& loop, const Grid& g,
             const LengthPoints& prompts, double level_weight, RampCdf* cdf,
             double* mean) {
  const double chunk = std::max(1, loop.chunk_tokens);
  const double cp = loop.prefill_token_seconds, rate = loop.rate, h = g.h;
  const int states = g.states, c = g.c;
  // An arrival finds an iteration from state i with probability in
  // proportion to pi_i tau_i (the loop stopped at an empty queue:
  // pi_0 P(stop) / rate). In an iteration from state i, at the share u of
  // it, the tokens ahead of it are max(Q - C, 0) plus those that arrived
  // before it in the iteration, and it waits the rest (1 - u) tau_i.
  struct Situation {
    double weight = 0;
    double residual_lo = 0, residual_hi = 0;
    std::vector<double> ahead;  // pmf on the grid
  };
  std::vector<Situation> situations;
  double weight_total = 0;
  {
    Situation idle;
    idle.weight = g.pi[0] * g.idle_at_empty / rate;
    idle.ahead = {1.0};
    weight_total += idle.weight;
    if (idle.weight > 0) situations.push_back(std::move(idle));
  }
  std::map<long, int> situation_of_key;
  std::vector<std::vector<double>> start;
  std::vector<double> group_weight, group_time;
  for (int i = 0; i < states; ++i) {
    const double busy = i == 0 ? 1 - g.idle_at_empty : 1.0;
    const double w = g.pi[i] * g.tau[i] * busy;
    if (!(w > 0)) continue;
    const long key = std::lround(std::log(g.tau[i]) / std::log(kSituationStep));
    auto [it, inserted] = situation_of_key.emplace(key, start.size());
    if (inserted) {
      start.emplace_back();
      group_weight.push_back(0);
      group_time.push_back(0);
    }
    std::vector<double>& s = start[it->second];
    const int base = std::max(0, i - c);
    if (static_cast<int>(s.size()) <= base) s.resize(base + 1, 0.0);
    s[base] += w;
    group_weight[it->second] += w;
    group_time[it->second] += w * g.tau[i];
  }
  const int groups = static_cast<int>(start.size());
  for (int k = 0; k < groups; ++k) weight_total += group_weight[k];
  for (int k = 0; k < groups; ++k) {
    if (!(group_weight[k] > 1e-12 * weight_total)) continue;
    const double length = group_time[k] / group_weight[k];
    const std::vector<double>& b = start[k];
    for (int cell = 0; cell < kResidualCells; ++cell) {
      const double u = (cell + 0.5) / kResidualCells;
      const std::vector<double> a =
          CompoundPoisson(g.prompt, rate * u * length, g.reach);
      Situation s;
      s.weight = group_weight[k] / kResidualCells;
      s.residual_lo = (1 - (cell + 1.0) / kResidualCells) * length;
      s.residual_hi = (1 - static_cast<double>(cell) / kResidualCells) * length;
      s.ahead.assign(std::min<size_t>(states, b.size() + a.size()), 0.0);
      for (size_t x = 0; x < b.size(); ++x) {
        if (b[x] == 0) continue;
        const double wx = b[x] / group_weight[k];
        for (size_t y = 0; y < a.size(); ++y)
          s.ahead[std::min(x + y, s.ahead.size() - 1)] += wx * a[y];
      }
      situations.push_back(std::move(s));
    }
  }
  // The tagged prompt of s tokens: R = ahead + s tokens before its first
  // token, served a chunk per iteration from the next iteration on, so m =
  // ceil(R / C) iterations, the first m - 1 full; its last takes the R -
  // (m - 1) C left and, in the room C - that, the prompts that arrived
  // behind it before the last iteration started (their tokens Y over the
  // residual and the full iterations). TTFT = residual + (m - 1) full
  // iterations + the last one, the fixed part of each at R tokens queued.
  const int max_m =
      static_cast<int>(std::ceil((states * h + g.longest) / chunk)) + 1;
  std::vector<double> cells(static_cast<size_t>(max_m + 1) * (c + 1));
  for (const Situation& s : situations) {
    std::fill(cells.begin(), cells.end(), 0.0);
    int top_m = 0;
    for (size_t x = 0; x < s.ahead.size(); ++x) {
      if (!(s.ahead[x] > 0)) continue;
      for (int p = 0; p < prompts.size; ++p) {
        const double r = x * h + prompts.tokens[p];
        const int m = std::clamp(static_cast<int>(std::ceil(r / chunk - 1e-12)),
                                 1, max_m);
        const double room = std::max(0.0, (m * chunk - r) / h);  // bins
        const int lo = std::min(c - 1, static_cast<int>(std::floor(room)));
        const double frac = std::min(1.0, room - lo);
        const double w = s.ahead[x] * prompts.weight[p];
        cells[static_cast<size_t>(m) * (c + 1) + lo] += w * (1 - frac);
        cells[static_cast<size_t>(m) * (c + 1) + lo + 1] += w * frac;
        top_m = std::max(top_m, m);
      }
    }
    const double weight = level_weight * s.weight / weight_total;
    const double residual_mid = 0.5 * (s.residual_lo + s.residual_hi);
    for (int m = 1; m <= top_m; ++m) {
      const double* row = &cells[static_cast<size_t>(m) * (c + 1)];
      bool any = false;
      for (int b = 0; b <= c; ++b) any = any || row[b] > 0;
      if (!any) continue;
      const double joining_full =
          FixedPart(loop, g, m * chunk - chunk / 2) + cp * chunk;
      const std::vector<double> y = CompoundPoisson(
          g.prompt, rate * (residual_mid + (m - 1) * joining_full), c + 1);
      for (int b = 0; b <= c; ++b) {
        if (!(row[b] > 0)) continue;
        const double v = FixedPart(loop, g, m * chunk - b * h);
        const double base =
            (m - 1) * (v + cp * chunk) + v + cp * (chunk - b * h);
        const double w = weight * row[b];
        double tail = 1;
        for (int k = 0; k < b && k < static_cast<int>(y.size()); ++k) {
          const double t = base + cp * k * h;
          cdf->Add(s.residual_lo + t, s.residual_hi + t, w * y[k]);
          *mean += w * y[k] * (residual_mid + t);
          tail -= y[k];
        }
        if (tail > 0) {
          const double t = base + cp * b * h;
          cdf->Add(s.residual_lo + t, s.residual_hi + t, w * tail);
          *mean += w * tail * (residual_mid + t);
        }
      }
    }
  }
}

}  // namespace

BulkChainTtft SolveBulkChainTtft(const BulkChainLoop& loop,
                                 const LengthPoints& prompts) {
  BulkChainTtft out;
  if (!(loop.rate > 0) || prompts.size == 0 || !(prompts.mean > 0) ||
      loop.level_count < 1)
    return out;
  std::vector<Grid> grids(loop.level_count);
  double longest_ttft = 0;
  const auto solve = [&](double shift) {
    longest_ttft = 0;
    for (int k = 0; k < loop.level_count; ++k) {
      Grid& g = grids[k];
      g = Grid();
      if (!BuildGrid(loop, loop.levels[k].v_empty + shift, prompts, &g))
        return false;
      g.idle_at_empty = loop.prompts_only ? 1.0 : 0.0;
      Stationary(&g);
      if (!loop.prompts_only && loop.idle_share > 0) {
        // The loop stands still for the share theta of the time: per
        // iteration start at an empty queue it stops with the probability
        // p that gives pi_0 p / rate = theta (pi_0 p / rate + sum pi_i
        // tau_i - pi_0 p tau_0), the chain solved again with it.
        const double theta = std::min(loop.idle_share, 0.999);
        double busy = 0;
        for (int i = 0; i < g.states; ++i) busy += g.pi[i] * g.tau[i];
        const double p = std::min(
            1.0, theta * busy /
                     (g.pi[0] * ((1 - theta) / loop.rate + theta * g.tau[0])));
        if (p > 1e-4) {
          g.idle_at_empty = p;
          Stationary(&g);
        }
      }
      longest_ttft = std::max(longest_ttft, LongestTtft(loop, g));
      out.states = std::max(out.states, g.states);
    }
    return true;
  };
  if (!solve(0)) return out;
  double weights = 0;
  for (int k = 0; k < loop.level_count; ++k) weights += loop.levels[k].weight;
  const double cd = loop.decode_request_seconds;
  if (loop.content_scale > 0 && cd > 0 && loop.running_batch > 0) {
    // The batch B(Q) = B_full - (B_full - B_0) d(Q) averaged over time:
    // shift the levels' B_0 by delta so that its mean is the running batch,
    // with each level's E[d] at the first solve; then solve again.
    const double full = (loop.v_full - loop.iteration_seconds) / cd;
    double mean_batch = 0, mean_decay = 0;
    for (int k = 0; k < loop.level_count; ++k) {
      const Grid& g = grids[k];
      if (!(g.v_full > g.v_empty)) continue;
      double time = 0, decay = 0;
      for (int i = 0; i < g.states; ++i) {
        const double w = g.pi[i] * g.tau[i];
        time += w;
        decay += w * (g.v_full - FixedPart(loop, g, i * g.h)) /
                 (g.v_full - g.v_empty);
      }
      decay /= time;
      const double empty = (g.v_empty - loop.iteration_seconds) / cd;
      const double share = loop.levels[k].weight / weights;
      mean_batch += share * (full - (full - empty) * decay);
      mean_decay += share * decay;
    }
    if (mean_decay > 0) {
      const double delta = (loop.running_batch - mean_batch) / mean_decay;
      if (std::abs(delta) > 1e-3 * loop.running_batch && !solve(cd * delta))
        return out;
    }
  }
  RampCdf cdf(longest_ttft);
  double mean = 0;
  for (int k = 0; k < loop.level_count; ++k)
    AddTtft(loop, grids[k], prompts, loop.levels[k].weight / weights, &cdf,
            &mean);
  const std::vector<double> values = cdf.Values();
  constexpr double kQuantiles[] = {0.5, 0.9, 0.99};
  for (int k = 0; k < 3; ++k) {
    int b = 1;
    while (b < static_cast<int>(values.size()) && values[b] < kQuantiles[k])
      ++b;
    if (b >= static_cast<int>(values.size())) return out;
    const double lo = values[b - 1], hi = values[b];
    const double frac = hi > lo ? (kQuantiles[k] - lo) / (hi - lo) : 1.0;
    out.seconds[k] = (b - 1 + std::clamp(frac, 0.0, 1.0)) * cdf.dt();
  }
  out.mean_seconds = mean;
  out.solved = true;
  return out;
}

}  // namespace shardplan::simulator::internal
