#include "simulator/queueing.h"

#include <algorithm>
#include <cmath>

#include "simulator/internal/bulk_chain.h"

namespace shardplan::simulator {
namespace {

constexpr std::array<double, 3> kQuantiles = {0.50, 0.90, 0.99};

// Regularized lower incomplete gamma P(a, x) (series below a + 1, Lentz's
// continued fraction above), given log_gamma_a = lgamma(a): the CDFs call it
// with a few shapes many times, so the shapes' lgamma is computed once.
double GammaP(double a, double x, double log_gamma_a) {
  if (x <= 0) return 0;
  if (a > 50) {
    // Wilson-Hilferty: (x / a)^(1/3) is close to normal for large shapes
    // (absolute error below 1e-3 here), at a fraction of the series' cost.
    const double v = 1 / (9 * a);
    const double z = (std::cbrt(x / a) - (1 - v)) / std::sqrt(v);
    return 0.5 * std::erfc(-z / std::sqrt(2.0));
  }
  const double log_prefix = a * std::log(x) - x - log_gamma_a;
  if (x < a + 1) {
    double term = 1 / a, sum = term;
    for (int n = 1; n < 500 && term > sum * 1e-12; ++n) {
      term *= x / (a + n);
      sum += term;
    }
    return std::min(1.0, sum * std::exp(log_prefix));
  }
  constexpr double kTiny = 1e-300;
  double b = x + 1 - a, c = 1 / kTiny, d = 1 / b, h = d;
  for (int i = 1; i < 500; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::abs(d) < kTiny) d = kTiny;
    c = b + an / c;
    if (std::abs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double delta = d * c;
    h *= delta;
    if (std::abs(delta - 1) < 1e-12) break;
  }
  return std::max(0.0, 1 - std::exp(log_prefix) * h);
}

// The load one replica carries at a rate, and the pieces of the latency
// distributions that follow from it.
struct Load {
  bool stable = false;
  double utilization = 0;
  // Iteration seconds as a decoding request sees them (its own token
  // included) and as the prefill queue sees them (the mean batch's decode).
  double decode_iteration = 0;
  double batch = 0;
  double prefill_iteration = 0;
  // The prefill queue (M/G/1): P(wait > 0) and the mean of a positive wait.
  double wait_probability = 0;
  double wait_mean = 0;
  // The wait as a mixture over the slow part of the decode batch's
  // fluctuation (one node when the queue does not follow it): per node its
  // weight, P(wait > 0), and the gamma of a positive wait (shape 0: a point
  // at its mean).
  struct WaitNode {
    double weight = 0;
    double probability = 0;
    double mean = 0;
    double shape = 0;
    double scale = 0;
    double log_gamma = 0;  // lgamma(shape)
    // The backlog's hold on the batch (below): a wait y is drawn as
    // y - k (y - w (1 - exp(-y / w))) of this node's gamma (k = 0: none).
    double backlog_k = 0;
    double backlog_seconds = 0;  // w
    // Seconds per prompt token in a backlog at this node's level.
    double token_seconds = 0;
  };
  std::array<WaitNode, 3> wait_nodes{};
  int wait_node_count = 0;
  // P(an arrival finds an iteration running).
  double busy_probability = 0;
  // The decode batch at an empty prompt queue and in a long backlog, and
  // the queue content (tokens) over which it rises from one to the other
  // (0: no rise); the bulk-service chain takes them.
  double batch_at_empty = 0;
  double batch_in_backlog = 0;
  double backlog_content_tokens = 0;
  // Decode load: work per second that is not the per-iteration overhead.
  double rho = 0;
  // Gated regime (a prompt and the prompts that arrive with it fit one
  // chunk): what an arrival waits beyond its own iteration, the residual of
  // the running iteration plus the prompts that join its iteration, as a
  // gamma distribution (for the iterations holding two prompts or more when
  // split below); and the prompt tokens that join.
  double gated_shape = 0;
  double gated_scale = 0;
  double gated_log_gamma = 0;  // lgamma(gated_shape)
  double gated_mean = 0;
  // The running iteration holds no prompt or exactly one (point j of
  // `join`): its length tau_j and the share of arrivals that land in it
  // (length-biased). Their wait is U tau_j, U uniform, plus the prompts
  // that join their iteration (below). The rest keeps the gamma above, with
  // its share.
  std::array<double, LengthPoints::kMaxPoints + 1> gated_tau{};
  std::array<double, LengthPoints::kMaxPoints + 1> gated_share{};
  std::array<double, LengthPoints::kMaxPoints + 1> gated_alone{};
  int gated_points = 0;
  double gated_rest_share = 1;
  double rho_c = 0;
  double batchmate_tokens = 0;
  // The prompts that join an iteration: none with probability gated_alone
  // (per class of the running iteration), else the first one drawn from
  // `join` (the prompt points merged, JoinPoints) and the rest at their
  // mean, gated_extra tokens.
  LengthPoints join;
  std::array<double, LengthPoints::kMaxPoints + 1> gated_extra{};
  // An iteration that prefills a whole chunk.
  double full_iteration = 0;
  // TPOT cannot exceed an iteration that prefills a whole chunk beside the
  // batch's 99th percentile (B + 2.33 sqrt(Var B)): a request's TPOT is the
  // mean of its iterations.
  double tpot_cap = 0;
  // TPOT standard deviation per output-length point (0: no decode).
  std::array<double, LengthPoints::kMaxPoints> tpot_sigma{};
  // The gamma shape of the TPOT shot noise per output-length point (0:
  // none) and its lgamma.
  std::array<double, LengthPoints::kMaxPoints> tpot_shape{};
  std::array<double, LengthPoints::kMaxPoints> tpot_log_gamma{};
};

double TpotSigma(const StepTimes& s, const LengthPoints& in,
                 const LengthPoints& out, const Load& l, double rate, double n);

// The prompt points merged into at most ~12 for the classes of a running
// iteration and the lengths of the prompts that join one: neighbours (in
// token order) merge while the group holds at most 1/8 of the requests and
// its longest prompt is at most 1.5x its shortest, so the long tail keeps
// its own points. Each group is one point at its mean length.
LengthPoints JoinPoints(const LengthPoints& in) {
  std::array<int, LengthPoints::kMaxPoints> order{};
  for (int i = 0; i < in.size; ++i) order[i] = i;
  std::sort(order.begin(), order.begin() + in.size,
            [&](int a, int b) { return in.tokens[a] < in.tokens[b]; });
  LengthPoints p;
  double first = 0;
  for (int k = 0; k < in.size; ++k) {
    const int i = order[k];
    const bool merge = p.size > 0 &&
                       p.weight[p.size - 1] + in.weight[i] <= 0.125 + 1e-12 &&
                       in.tokens[i] <= 1.5 * first;
    if (!merge) {
      first = in.tokens[i];
      ++p.size;
    }
    p.tokens[p.size - 1] += in.weight[i] * in.tokens[i];
    p.weight[p.size - 1] += in.weight[i];
  }
  for (int k = 0; k < p.size; ++k) {
    if (p.weight[k] > 0) p.tokens[k] /= p.weight[k];
    p.mean += p.weight[k] * p.tokens[k];
    p.second_moment += p.weight[k] * p.tokens[k] * p.tokens[k];
  }
  return p;
}

double DecodeIterations(double output_tokens) {
  return std::max(0.0, output_tokens - 1);
}

// The iterations of a loop that only prefills and stops when idle: the
// prompts of an iteration are those that arrived during the one before
// (K = N, N Poisson at rate x its length), or the one that ends the idle
// time when none did (K = 1 when N = 0), and it lasts v + c_p (their
// tokens). The stationary mean and variance of its length by fixed-point
// iteration on the first two moments (N's zero-probability from a gamma
// length: (1 + rate theta)^-k), and P(N = 0) after an iteration.
void PromptsOnlyChain(double v, double cp, const LengthPoints& in, double rate,
                      double* tau, double* var_tau, double* idle_after) {
  const double token_var = std::max(0.0, in.second_moment - in.mean * in.mean);
  double m = v + cp * in.mean, var = cp * cp * token_var, q = 0;
  for (int k = 0; k < 100; ++k) {
    q = var > 0 ? std::pow(1 + rate * var / m, -m * m / var)
                : std::exp(-rate * m);
    const double count = rate * m + q;
    const double count_second = rate * m + rate * rate * (var + m * m) + q;
    const double next_m = v + cp * in.mean * count;
    const double next_var =
        cp * cp *
        (count * token_var +
         in.mean * in.mean * std::max(0.0, count_second - count * count));
    const bool settled = std::abs(next_m - m) <= 1e-9 * m;
    m = next_m;
    var = next_var;
    if (settled) break;
  }
  *tau = m;
  *var_tau = var;
  *idle_after = q;
}

// The backlog's hold on a wait node: the node's gamma is drawn at u(y) =
// y - k (y - w (1 - exp(-y / w))) for a wait y (increasing while k < 1).
double HeldTime(const Load::WaitNode& n, double y) {
  if (!(n.backlog_k > 0)) return y;
  const double w = n.backlog_seconds;
  return y - n.backlog_k * (y - w * (1 - std::exp(-y / w)));
}

// The wait y whose HeldTime is u (Newton's method from the long-wait line).
double HeldWait(const Load::WaitNode& n, double u) {
  if (!(n.backlog_k > 0) || !(u > 0)) return u;
  const double k = n.backlog_k, w = n.backlog_seconds;
  double y = (u - k * w) / (1 - k);
  if (!(y > u)) y = u;
  for (int i = 0; i < 30; ++i) {
    const double step = (HeldTime(n, y) - u) / (1 - k + k * std::exp(-y / w));
    y -= step;
    if (std::abs(step) <= 1e-9 * y) break;
  }
  return y;
}

Load ComputeLoad(const StepTimes& s, const LengthPoints& in,
                 const LengthPoints& out, double rate) {
  Load l;
  double mean_n = 0;
  for (int i = 0; i < out.size; ++i)
    mean_n += out.weight[i] * DecodeIterations(out.tokens[i]);
  // Per second, the decode tokens and prompt tokens take this share of the
  // time; the rest pays the per-iteration overhead, whose iterations then
  // last (a + c_d) / (1 - rho) as a decoding request sees them.
  l.rho = rate * (s.decode_request_seconds * mean_n +
                  s.prefill_token_seconds * in.mean);
  if (!(l.rho < 1)) {
    l.utilization = l.rho;
    return l;
  }
  // A decoding request sees the iterations weighted by the batch they
  // carry: T = E[B tau] / E[B] = E[tau] + Cov(B, tau) / E[B], with E[tau] =
  // a / (1 - rho) (the work identity: iterations/s x a + rho = 1). The batch
  // is overdispersed: bursts of prompts lengthen the iterations (gain
  // r = rate c_p E[s] per iteration), which admits more arrivals into the
  // decode window (gain g = rate c_d E[n] / (1 - r) over it). Linearised at
  // low frequency, the arrivals per iteration carry noise of variance
  // rate E[tau] (1 + r^2 (kappa - 1)) / (1 - r)^2 (kappa = E[s^2] / E[s]^2),
  // which the decode window's feedback amplifies by 1 / (1 - g) (the
  // integral of a boxcar window's response, exact in the limit of long
  // windows): Var(B) / E[B] = (1 + r^2 (kappa - 1)) / ((1 - r)(1 - rho)).
  // The iteration follows the batch directly (c_d) and through the prompts
  // it admits (1 / (1 - r)): Cov(B, tau) = c_d Var(B) / (1 - r).
  const double r = std::min(s.prefill_token_seconds * rate * in.mean, l.rho);
  const double kappa =
      in.mean > 0 ? in.second_moment / (in.mean * in.mean) : 1.0;
  const double dispersion = (1 + r * r * (kappa - 1)) / ((1 - r) * (1 - l.rho));
  l.decode_iteration = s.iteration_seconds / (1 - l.rho) +
                       s.decode_request_seconds * dispersion / (1 - r);
  // Little's law: requests decoding = rate x decode iterations x seconds per
  // iteration.
  l.batch = rate * mean_n * l.decode_iteration;
  l.prefill_iteration =
      s.iteration_seconds + s.decode_request_seconds * l.batch;
  l.tpot_cap = s.iteration_seconds +
               s.prefill_token_seconds * std::max(1, s.chunk_tokens) +
               s.decode_request_seconds *
                   (l.batch + 2.33 * std::sqrt(dispersion * l.batch));
  // The prefill queue drains chunk_tokens per iteration when backlogged: a
  // prompt token costs its own compute plus its share of the iteration.
  const double per_token = s.prefill_token_seconds +
                           l.prefill_iteration / std::max(1, s.chunk_tokens);
  const double mean_service = per_token * in.mean;
  const double rho_prefill = rate * mean_service;
  const double kv_load = s.max_running > 0 ? l.batch / s.max_running : 0.0;
  l.utilization = std::max({l.rho, rho_prefill, kv_load});
  if (!(rho_prefill < 1) || !(kv_load < 1)) return l;
  // Pollaczek-Khinchine mean wait over P(wait > 0); its distribution a
  // gamma with the first two moments of the M/G/1 wait (Takacs: E[W^2] =
  // 2 E[W]^2 + rate E[S^3] / (3 (1 - rho))): the residual service's light
  // tail at low load, the exponential of heavy traffic near saturation.
  double third_tokens = 0;
  for (int i = 0; i < in.size; ++i)
    third_tokens += in.weight[i] * in.tokens[i] * in.tokens[i] * in.tokens[i];
  const auto mg1 = [&](double token_seconds, double rho, double scale) {
    Load::WaitNode n;
    n.probability = rho;
    if (!(rho > 0) || !(in.mean > 0)) return n;
    const double mean =
        token_seconds * in.second_moment / (2 * in.mean * (1 - rho));
    const double wait = rho * mean;
    const double wait_second =
        2 * wait * wait + rate * token_seconds * token_seconds * token_seconds *
                              third_tokens / (3 * (1 - rho));
    const double var = wait_second / rho - mean * mean;
    n.mean = scale * mean;
    if (var > 0) {
      n.shape = mean * mean / var;
      n.scale = scale * var / mean;
      n.log_gamma = std::lgamma(n.shape);
    }
    return n;
  };
  // The queue drains mu = 1 / per_token tokens/s, and mu falls as the
  // decode batch rises (d mu / dB = -(c_d / chunk) mu^2). The batch
  // wanders slowly (Var B = dispersion x B, correlation time tau_c = E[D^2]
  // / (2 E[D]) for decode durations D, as the occupancy of an M/G/inf
  // queue), so the capacity the queue sees carries variance at the rate
  // 2 Var(mu) tau_c beside the arrivals' rate E[s^2] (tokens^2/s).
  double mean_d = 0, second_d = 0;
  for (int i = 0; i < out.size; ++i) {
    const double d = DecodeIterations(out.tokens[i]) * l.decode_iteration;
    mean_d += out.weight[i] * d;
    second_d += out.weight[i] * d * d;
  }
  const double mu = 1 / per_token;
  const double slope =
      s.decode_request_seconds / std::max(1, s.chunk_tokens) * mu * mu;
  const double batch_variance = dispersion * l.batch;
  const double capacity_variance_rate =
      mean_d > 0 ? slope * slope * batch_variance * second_d / mean_d : 0;
  const double arrival_variance_rate = rate * in.second_moment;
  // The queue relaxes in T_q = variance rate / (2 spare^2) (a reflected
  // Brownian motion's). Capacity noise faster than that (the share T_q /
  // (T_q + tau_c) of its spectrum, a Lorentzian of width 1 / tau_c) adds
  // to the arrivals' variance rate: in heavy traffic the wait is the total
  // over twice the spare capacity (Kingman), so the wait scales by one
  // plus their ratio.
  const double spare = mu - rate * in.mean;
  const double relax =
      spare > 0 ? arrival_variance_rate / (2 * spare * spare) : 0;
  const double tau_c = mean_d > 0 ? second_d / (2 * mean_d) : 0;
  const double fast = tau_c > 0 ? relax / (relax + tau_c) : 0;
  const double scale =
      arrival_variance_rate > 0
          ? 1 + fast * capacity_variance_rate / arrival_variance_rate
          : 1;
  // The batch rises with the backlog: while prompt tokens are queued every
  // iteration prefills a whole chunk, so decoding slows and the batch climbs
  // towards Little's law at full iterations, B_full = rate E[n] (a + c_p
  // chunk) / (1 - rate E[n] c_d), which lowers the queue's capacity while it
  // is long. A backlog of x tokens has built up over about x / spare seconds
  // (the spare capacity mu - rate E[s]) and the batch follows in tau_c, so
  // the batch at queue content x is B_full - (B_full - B_0) exp(-x / x_c),
  // x_c = spare tau_c, with B_0 (the batch at an empty queue) such that its
  // mean over the queue content (an atom 1 - rho at 0 and an exponential of
  // the Pollaczek-Khinchine mean) is the running batch. The queue is then a
  // diffusion whose drift falls with its content; its stationary density is
  // exp(-(2 / sigma^2) integral of the spare) (the reflected Brownian motion
  // with a state-dependent drift: the speed density of a one-dimensional
  // diffusion, Karlin and Taylor, "A Second Course in Stochastic Processes",
  // Academic Press 1981, ch. 15), so the wait is the M/G/1 wait at B_0
  // with its hazard scaled by the spare at the content reached: a wait y is
  // the gamma's at u(y) = y - k (y - w (1 - exp(-y / w))), k the share of the
  // spare lost at B_full, w = x_c / mu. Before this term the batch's rise was
  // only in the exogenous mixture below, and the uniform case's TTFT p99 was
  // 10-16% light from 85% load (docs/cost-model-and-calibration.md).
  const double chunk = std::max(1, s.chunk_tokens);
  const auto capacity = [&](double batch) {
    return 1 /
           (s.prefill_token_seconds +
            (s.iteration_seconds + s.decode_request_seconds * batch) / chunk);
  };
  const double inflow = rate * in.mean;
  double batch_variance_rest = batch_variance;
  const double decode_per_second = rate * mean_n * s.decode_request_seconds;
  double base_batch = l.batch, full_capacity = 0, content_scale = 0;
  double base_rho = rho_prefill, full_batch = l.batch;
  if (tau_c > 0 && l.batch > 0 && decode_per_second < 1 && spare > 0) {
    full_batch = std::max(
        l.batch, rate * mean_n *
                     (s.iteration_seconds + s.prefill_token_seconds * chunk) /
                     (1 - decode_per_second));
    content_scale = spare * tau_c;
    const double content = mg1(per_token, rho_prefill, 1).mean * mu;
    const double decay =
        (1 - rho_prefill) + rho_prefill / (1 + content / content_scale);
    const double decay2 =
        (1 - rho_prefill) + rho_prefill / (1 + 2 * content / content_scale);
    base_batch = std::max(0.0, full_batch - (full_batch - l.batch) / decay);
    full_capacity = capacity(full_batch);
    base_rho = inflow / capacity(base_batch);
    // The part of the batch's variance the backlog explains.
    const double explained = (full_batch - base_batch) *
                             (full_batch - base_batch) *
                             std::max(0.0, decay2 - decay * decay);
    batch_variance_rest = std::max(0.0, batch_variance - explained);
  }
  // A node whose capacity mu_k would fall to full_capacity in a long
  // backlog. The loop is stable only while B_full's capacity exceeds the
  // inflow (they meet at the limit); otherwise no term.
  const auto hold = [&](Load::WaitNode* n, double node_capacity) {
    if (!(content_scale > 0) || !(full_capacity > inflow) ||
        !(node_capacity > inflow))
      return;
    n->backlog_k = std::max(
        0.0, (node_capacity - full_capacity) / (node_capacity - inflow));
    n->backlog_seconds = content_scale / node_capacity;
  };
  // The rest of the batch's fluctuation, independent of the backlog, in
  // its slow part (variance Var B tau_c / (T_q + tau_c)) the queue follows
  // when it relaxes faster than the batch changes (T_q < tau_c): the wait
  // is then the mixture of the M/G/1 waits at the batch's levels (the
  // pointwise-stationary approximation of a queue in a slowly changing
  // environment: Choudhury, Mandelbaum, Reiman and Whitt, Stochastic Models
  // 13 (1997) 121-146), at three Gauss-Hermite nodes of a gamma with that
  // variance around B_0 (Wilson-Hilferty). A level cannot load the queue
  // beyond what it fills within tau_c (that paper's point: in an overloaded
  // level the queue grows only for the level's sojourn), so its spare
  // capacity is at least the one whose relaxation time is tau_c. Each
  // node's P(wait > 0) is scaled to the loop's busy share rho.
  const double slow_variance =
      tau_c > 0 ? batch_variance_rest * tau_c / (relax + tau_c) : 0;
  if (relax < tau_c && slow_variance > 0 && base_batch > 0) {
    static constexpr double kNode[] = {-1.7320508075688772, 0,
                                       1.7320508075688772};
    static constexpr double kWeight[] = {1 / 6.0, 2 / 3.0, 1 / 6.0};
    const double v = slow_variance / (9 * base_batch * base_batch);
    const double spare_min = std::sqrt(arrival_variance_rate / (2 * tau_c));
    for (int k = 0; k < 3; ++k) {
      const double c = std::max(0.0, 1 - v + kNode[k] * std::sqrt(v));
      const double token_seconds = 1 / capacity(base_batch * c * c * c);
      const double rho =
          std::min(rate * token_seconds * in.mean,
                   std::max(base_rho, 1 - spare_min * token_seconds));
      l.wait_nodes[k] = mg1(token_seconds, rho, scale);
      l.wait_nodes[k].token_seconds = rho / (rate * in.mean);
      l.wait_nodes[k].probability *= rho_prefill / base_rho;
      l.wait_nodes[k].weight = kWeight[k];
      hold(&l.wait_nodes[k], 1 / token_seconds);
    }
    l.wait_node_count = 3;
  } else {
    const double base_capacity = capacity(base_batch);
    l.wait_nodes[0] = mg1(1 / base_capacity, base_rho, scale);
    l.wait_nodes[0].token_seconds = 1 / base_capacity;
    l.wait_nodes[0].probability = rho_prefill;
    l.wait_nodes[0].weight = 1;
    hold(&l.wait_nodes[0], base_capacity);
    l.wait_node_count = 1;
  }
  l.batch_at_empty = base_batch;
  if (content_scale > 0 && full_capacity > inflow) {
    l.batch_in_backlog = full_batch;
    l.backlog_content_tokens = content_scale;
  } else {
    l.batch_in_backlog = base_batch;
  }
  for (int k = 0; k < l.wait_node_count; ++k) {
    const Load::WaitNode& n = l.wait_nodes[k];
    l.wait_probability += n.weight * n.probability;
    l.wait_mean += n.weight * n.probability * HeldWait(n, n.mean);
  }
  if (l.wait_probability > 0) l.wait_mean /= l.wait_probability;
  l.join = JoinPoints(in);
  l.full_iteration = l.prefill_iteration +
                     s.prefill_token_seconds * std::max(1, s.chunk_tokens);
  // M/G/inf: P(no request decoding) = exp(-batch).
  l.busy_probability = 1 - std::exp(-l.batch) * (1 - rho_prefill);
  // Gated regime: iteration k prefills the prompts that arrived during
  // iteration k - 1, so tau_k = V + c_p X(tau_{k-1}) with X compound Poisson:
  // E tau = V / (1 - rho_c), Var tau = c_p^2 rate E[s^2] E tau / (1 - rho_c^2).
  // An arrival lands in a length-biased iteration (gamma(k + 1, theta) for
  // a gamma(k, theta) tau), waits its residual U tau, and shares its own
  // iteration with the X(tau) tokens that arrive in the same one.
  const double cp = s.prefill_token_seconds;
  const double rho_c = rate * cp * in.mean;
  if (rho_c < 1 && l.prefill_iteration > 0) {
    double tau = l.prefill_iteration / (1 - rho_c);
    const double token_var = rate * in.second_moment;
    double var_tau = cp * cp * token_var * tau / (1 - rho_c * rho_c);
    // With no request decoding (a disaggregated prefill pool) the loop
    // stops when no prompt arrived during its iteration and the next
    // arrival starts an iteration of its own at once: every iteration
    // holds a prompt or more (PromptsOnlyChain), and the loop runs for
    // the share tau / (tau + P(idle after one) / rate) of the time.
    const bool idles = !(l.batch > 0);
    double idle_after = 0;
    if (idles) {
      PromptsOnlyChain(l.prefill_iteration, cp, in, rate, &tau, &var_tau,
                       &idle_after);
      l.busy_probability = tau / (tau + idle_after / rate);
    }
    const double per_tau = 0.5 + rho_c;
    l.rho_c = rho_c;
    // Split the iterations by the k prompts they prefill: a gamma fitted to
    // all of them has too light a tail when a rare long prompt makes one
    // iteration many times the others. k counts the arrivals of the previous
    // iteration, whose length varies (gamma with tau's moments): negative
    // binomial rather than Poisson.
    double p0 = std::exp(-rate * tau), p1 = rate * tau * p0;
    if (var_tau > 0) {
      const double shape = tau * tau / var_tau, r = rate * var_tau / tau;
      p0 = std::pow(1 + r, -shape);
      p1 = shape * r / (1 + r) * p0;
    }
    if (idles) {
      // No empty iteration: after one in which nothing arrived, the next
      // holds the one prompt that ends the idle time.
      p1 += p0;
      p0 = 0;
    }
    const double p_rest = 1 - p0 - p1;
    double rest_mean = tau - p0 * l.prefill_iteration;
    double rest_second =
        var_tau + tau * tau - p0 * l.prefill_iteration * l.prefill_iteration;
    l.gated_tau[0] = l.prefill_iteration;
    l.gated_share[0] = p0 * l.prefill_iteration / tau;
    for (int j = 0; j < l.join.size; ++j) {
      const double t = l.prefill_iteration + cp * l.join.tokens[j];
      l.gated_tau[j + 1] = t;
      l.gated_share[j + 1] = p1 * l.join.weight[j] * t / tau;
      rest_mean -= p1 * l.join.weight[j] * t;
      rest_second -= p1 * l.join.weight[j] * t * t;
    }
    // Prompts arriving during the running iteration join the next one:
    // none with probability exp(-rate tau_j); else a first one of any
    // length (the tail of TTFT is a short prompt joined by a long one) and
    // the others at their mean.
    for (int j = 0; j <= l.join.size; ++j) {
      const double arrivals = rate * l.gated_tau[j];
      l.gated_alone[j] = std::exp(-arrivals);
      l.gated_extra[j] =
          arrivals > 0
              ? in.mean * std::max(0.0, arrivals / (1 - l.gated_alone[j]) - 1)
              : 0;
    }
    if (p_rest > 1e-9 && rest_mean > 0 && rest_second > 0) {
      l.gated_points = l.join.size + 1;
      l.gated_rest_share = rest_mean / tau;
      rest_mean /= p_rest;
      rest_second /= p_rest;
    } else {
      rest_mean = tau;
      rest_second = var_tau + tau * tau;
    }
    const double rest_var =
        std::max(rest_second - rest_mean * rest_mean, 1e-9 * tau * tau);
    const double theta = rest_var / rest_mean;
    const double lb_mean = rest_mean + theta;
    const double lb_var = rest_mean * theta + theta * theta;
    const double lb_second = lb_var + lb_mean * lb_mean;
    const double mean = per_tau * lb_mean;
    const double var = lb_second / 12 + cp * cp * token_var * lb_mean +
                       per_tau * per_tau * lb_var;
    l.gated_mean = per_tau * (tau + var_tau / tau);
    if (mean > 0 && var > 0) {
      l.gated_shape = mean * mean / var;
      l.gated_scale = var / mean;
      l.gated_log_gamma = std::lgamma(l.gated_shape);
    }
    l.batchmate_tokens = rate * in.mean * (tau + var_tau / tau);
  }
  for (int i = 0; i < out.size; ++i) {
    const double n = DecodeIterations(out.tokens[i]);
    l.tpot_sigma[i] = n > 0 ? TpotSigma(s, in, out, l, rate, n) : 0;
    const double shot_mean =
        l.decode_iteration - s.iteration_seconds - s.decode_request_seconds;
    if (l.tpot_sigma[i] > 0 && shot_mean > 0) {
      l.tpot_shape[i] =
          shot_mean * shot_mean / (l.tpot_sigma[i] * l.tpot_sigma[i]);
      l.tpot_log_gamma[i] = std::lgamma(l.tpot_shape[i]);
    }
  }
  l.stable = true;
  return l;
}

// A request's own prefill: its chunks, each in one iteration.
double OwnPrefillSeconds(const StepTimes& s, const Load& l, double tokens) {
  const double chunks =
      std::max(1.0, std::ceil(tokens / std::max(1, s.chunk_tokens)));
  return chunks * l.prefill_iteration + s.prefill_token_seconds * tokens;
}

// Whether a prompt of `tokens` is served gated: it and the prompts arriving
// with it fit one chunk. Otherwise prompts queue FCFS chunk by chunk (the
// M/G/1 wait).
bool Gated(const StepTimes& s, const Load& l, double tokens) {
  return tokens + l.batchmate_tokens <= std::max(1, s.chunk_tokens);
}

// P(U t + c_p J <= x), U uniform on (0, 1): J = 0 with probability `alone`,
// else the tokens of the prompts that join an iteration beside the request
// (a first one from l.join, `extra` more), at most `room`.
double JoinedCdf(const StepTimes& s, const Load& l, double x, double t,
                 double alone, double extra, double room) {
  if (x <= 0) return 0;
  const auto residual = [t](double y) {
    return t > 0 ? std::clamp(y / t, 0.0, 1.0) : (y >= 0 ? 1.0 : 0.0);
  };
  double joined = 0;
  if (alone < 1) {
    const double cp = s.prefill_token_seconds;
    for (int k = 0; k < l.join.size; ++k)
      joined += l.join.weight[k] *
                residual(x - cp * std::min(room, l.join.tokens[k] + extra));
  }
  return alone * residual(x) + (1 - alone) * joined;
}

// P(wait <= x) for a gated prompt with `room` tokens left in its chunk.
double GatedCdf(const StepTimes& s, const Load& l, double x, double room) {
  if (x < 0) return 0;
  double busy = l.gated_rest_share *
                (l.gated_shape > 0 ? GammaP(l.gated_shape, x / l.gated_scale,
                                            l.gated_log_gamma)
                                   : 1.0);
  for (int j = 0; j < l.gated_points; ++j)
    busy +=
        l.gated_share[j] * JoinedCdf(s, l, x, l.gated_tau[j], l.gated_alone[j],
                                     l.gated_extra[j], room);
  return l.busy_probability * busy + (1 - l.busy_probability);
}

// A prompt longer than a chunk (or arriving to a backlog): with
// probability 1 - P(wait > 0) it finds no prompt queued and starts at the
// next iteration, chunk-aligned: the residual of the running iteration, its
// own chunks, and the prompts arriving until its last chunk starts fill that
// chunk's room. Otherwise it waits the M/G/1 queue (a gamma of mean
// wait_mean) and its tokens start anywhere in an iteration, each costing its
// share of the iterations (c_p + V / chunk); their last iteration goes on
// with the prompt tokens that arrived behind them before it started (the
// fill, below).
struct Chunked {
  double aligned = 0;     // own chunks, no wait
  double window = 0;      // seconds the joining prompts arrive in
  double room = 0;        // tokens left in the last chunk
  double alone = 1;       // P(no prompt joins)
  double extra = 0;       // tokens beyond the first joining prompt
  double backlogged = 0;  // own tokens at their share of the iterations
  // The fill of a backlogged prompt's last iteration. The prompt tokens that
  // arrive behind it join that iteration only until it starts: its wait w
  // counts the tokens queued ahead at their share of the iterations, and
  // those that share its last iteration (on average half the room its last
  // chunk leaves, the chunk's tokens being FCFS from a uniform offset) are
  // served beside it, not before; its own earlier chunks come first. So the
  // tokens arrive for y = max(0, w - window_offset) seconds, and of the b =
  // rate E[s] y that arrive those fit that the room left behind it takes, a
  // share U of the chunk (U uniform): E[min(U chunk, b)] = b - b^2 / (2
  // chunk) up to a chunk, chunk / 2 beyond. Plus half an iteration's
  // overhead (the prompt's tokens end anywhere in their last iteration).
  double window_offset = 0;
  double fill_per_second = 0;  // c_p rate E[s]
  double chunk_seconds = 0;    // c_p chunk
  double overhead = 0;         // V
};

// A backlogged prompt's TTFT after a wait w: the wait, its own tokens and
// its last iteration's fill (above).
double BackloggedSeconds(const Chunked& c, double w) {
  const double y = std::max(0.0, w - c.window_offset);
  const double fill =
      c.fill_per_second * y < c.chunk_seconds
          ? c.fill_per_second * y - c.fill_per_second * c.fill_per_second * y *
                                        y / (2 * c.chunk_seconds)
          : c.chunk_seconds / 2;
  return w + c.backlogged + c.overhead / 2 + fill;
}

// The wait w whose BackloggedSeconds is x (a line, then a quadratic, then a
// line: closed form).
double BackloggedWait(const Chunked& c, double x) {
  const double target = x - c.backlogged - c.overhead / 2;
  const double start = std::max(0.0, c.window_offset);
  const double phi = c.fill_per_second, k = c.chunk_seconds;
  if (target <= start || !(phi > 0) || !(k > 0)) return target;
  // From w = start on, y = w - offset: y + fill(y) = target - offset.
  const double rest = target - c.window_offset;
  double y;
  if (rest >= k / phi + k / 2) {
    y = rest - k / 2;
  } else {
    const double disc = (1 + phi) * (1 + phi) - 2 * phi * phi * rest / k;
    y = ((1 + phi) - std::sqrt(std::max(0.0, disc))) * k / (phi * phi);
  }
  return y + c.window_offset;
}

Chunked ChunkedOf(const StepTimes& s, const Load& l, double rate,
                  double tokens) {
  Chunked c;
  const double chunk = std::max(1, s.chunk_tokens);
  const double chunks = std::max(1.0, std::ceil(tokens / chunk));
  c.aligned = chunks * l.prefill_iteration + s.prefill_token_seconds * tokens;
  c.window = l.busy_probability * l.prefill_iteration / 2 +
             (chunks - 1) * l.full_iteration;
  c.room = std::max(0.0, chunks * chunk - tokens);
  const double arrivals = rate * c.window;
  c.alone = std::exp(-arrivals);
  c.extra = arrivals > 0
                ? l.join.mean * std::max(0.0, arrivals / (1 - c.alone) - 1)
                : 0;
  const double per_token =
      s.prefill_token_seconds + l.prefill_iteration / chunk;
  c.backlogged = tokens * per_token;
  const double last = tokens - (chunks - 1) * chunk;
  c.window_offset =
      (chunk - last) * per_token / 2 - (tokens - last) * per_token;
  c.fill_per_second = s.prefill_token_seconds * rate * l.join.mean;
  c.chunk_seconds = s.prefill_token_seconds * chunk;
  c.overhead = l.prefill_iteration;
  return c;
}

// P(wait <= y | wait > 0) in the prefill queue: the nodes' gammas.
double WaitCdf(const Load& l, double y) {
  if (y <= 0 || !(l.wait_probability > 0)) return 0;
  double f = 0;
  for (int k = 0; k < l.wait_node_count; ++k) {
    const Load::WaitNode& n = l.wait_nodes[k];
    const double u = HeldTime(n, y);
    f += n.weight * n.probability *
         (n.shape > 0 ? GammaP(n.shape, u / n.scale, n.log_gamma)
                      : (u >= n.mean ? 1.0 : 0.0));
  }
  return f / l.wait_probability;
}

// P(TTFT <= x) of a prompt that finds prompt tokens queued: the wait, its
// own tokens at their share of the iterations, and its last iteration's
// fill, increasing in the wait.
double BackloggedCdf(const Load& l, const Chunked& c, double x) {
  return WaitCdf(l, BackloggedWait(c, x));
}

double ChunkedCdf(const StepTimes& s, const Load& l, const Chunked& c,
                  double x) {
  // Aligned: the residual of the running iteration (busy), then the own
  // chunks, the last one shared with the joining prompts.
  const double y = x - c.aligned;
  const double v = l.prefill_iteration;
  double aligned = 0;
  if (y > 0) {
    const double joined =
        JoinedCdf(s, l, y, 0, c.alone, c.extra, c.room);  // no residual
    const double with_residual =
        JoinedCdf(s, l, y, v, c.alone, c.extra, c.room);
    aligned =
        l.busy_probability * with_residual + (1 - l.busy_probability) * joined;
  }
  const double p = l.wait_probability;
  return (1 - p) * aligned + p * BackloggedCdf(l, c, x);
}

double TtftCdf(const StepTimes& s, const LengthPoints& in, const Load& l,
               double rate, double time) {
  double f = 0;
  for (int i = 0; i < in.size; ++i) {
    const double tokens = in.tokens[i];
    // The pipeline's other stages delay the prompt's first token but do
    // not occupy the loop: a shift of its TTFT.
    const double t = time - s.pipeline_lag_token_seconds * tokens;
    if (Gated(s, l, tokens)) {
      double gated =
          GatedCdf(s, l, t - OwnPrefillSeconds(s, l, tokens),
                   std::max(0.0, std::max(1, s.chunk_tokens) - tokens));
      // A short prompt also waits behind the FCFS backlog of prompt tokens
      // (a long prompt being chunked): at least the M/G/1 wait of the
      // chunked regime and its own tokens at their share of the iterations
      // (the backlogged TTFT, its last iteration's fill at its mean), less
      // the one iteration in which a backlog smaller than the chunk's room
      // is served beside it. Both waits grow with the same backlog
      // (comonotone), so P(TTFT <= t) is the smaller of the two CDFs. A
      // prompts-only loop (no decode batch) is left to the gated chain,
      // which holds every queued prompt there.
      const double p = l.wait_probability;
      if (l.batch > 0 && gated > 1 - p) {  // the bound is at least 1 - p
        const double wait = BackloggedCdf(l, ChunkedOf(s, l, rate, tokens),
                                          t + l.prefill_iteration);
        gated = std::min(gated, (1 - p) + p * wait);
      }
      f += in.weight[i] * gated;
    } else {
      f += in.weight[i] * ChunkedCdf(s, l, ChunkedOf(s, l, rate, tokens), t);
    }
  }
  return f;
}

// Integral over the arrival offset u of the overlap of [u, u + m] with
// [0, n] (I1: u in [0, n) only) and of its square (I2).
double OverlapIntegral(double m, double n) {
  return m >= n ? n * n / 2 : m * n - m * m / 2;
}
double OverlapSquareIntegral(double m, double n) {
  const double a = std::min(m, n), b = std::max(m, n);
  return a * a * b - a * a * a / 3;
}

// Standard deviation of the TPOT of a request decoding n iterations. The
// other requests arrive as a Poisson stream; each adds c_d per iteration it
// decodes beside this one and c_p per prompt token it prefills during this
// one's decode (shot noise: variance = rate x integral of the squared
// contribution). Time in iteration units (rate x mean iteration per
// iteration). A burst lengthens the iterations, which admits more arrivals
// into the same decode, and so on (a self-exciting stream): each arrival
// brings its prompt into the window at once but only the part of its decode
// that overlaps the rest of the window, so the burst is amplified by
// 1 / (1 - rho_window), rho_window = rate (c_p E[s] + c_d E[overlap] / n),
// between 1 / (1 - rho_prefill) and the full 1 / (1 - rho).
double TpotSigma(const StepTimes& s, const LengthPoints& in,
                 const LengthPoints& out, const Load& l, double rate,
                 double n) {
  double overlap2 = 0, overlap1 = 0;
  for (int j = 0; j < out.size; ++j) {
    const double m = DecodeIterations(out.tokens[j]);
    overlap2 += out.weight[j] * OverlapSquareIntegral(m, n);
    overlap1 += out.weight[j] * OverlapIntegral(m, n);
  }
  const double cd = s.decode_request_seconds, cp = s.prefill_token_seconds;
  const double arrivals_per_iteration = rate * l.decode_iteration;
  const double variance =
      arrivals_per_iteration *
      (cd * cd * overlap2 + 2 * cd * cp * in.mean * overlap1 +
       cp * cp * in.second_moment * n);
  const double rho_window = rate * (cp * in.mean + cd * overlap1 / n);
  return std::sqrt(std::max(0.0, variance)) / (1 - rho_window) / n;
}

// P(TPOT <= t): a request decoding n iterations pays a + c_d per iteration
// for itself plus the others' shot noise, positive and skewed: a gamma with
// the shot noise's mean (rho x the mean iteration) and variance.
double TpotCdf(const StepTimes& s, const LengthPoints& out, const Load& l,
               double t) {
  const double floor_seconds = s.iteration_seconds + s.decode_request_seconds;
  const double mean = l.decode_iteration - floor_seconds;
  double f = 0, total = 0;
  for (int i = 0; i < out.size; ++i) {
    const double n = DecodeIterations(out.tokens[i]);
    if (n <= 0) continue;
    const double sigma = l.tpot_sigma[i];
    const double x = t - floor_seconds;
    double p;
    if (t >= l.tpot_cap) {
      p = 1;
    } else if (x <= 0) {
      p = 0;
    } else if (sigma <= 0 || mean <= 0) {
      p = x >= mean ? 1 : 0;
    } else {
      p = GammaP(l.tpot_shape[i], x * mean / (sigma * sigma),
                 l.tpot_log_gamma[i]);
    }
    f += out.weight[i] * p;
    total += out.weight[i];
  }
  return total > 0 ? f / total : 1.0;
}

// The t in [lo, hi] where the increasing `cdf` reaches q, to 1e-4 of t.
template <typename Cdf>
double Quantile(const Cdf& cdf, double q, double lo, double hi) {
  for (int i = 0; i < 60 && hi - lo > 1e-4 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (cdf(mid) < q ? lo : hi) = mid;
  }
  return hi;
}

}  // namespace

LengthPoints Discretize(const LengthDistribution& d) {
  LengthPoints p;
  if (d.kind == LengthKind::kHistogram &&
      static_cast<int>(d.buckets.size()) <= LengthPoints::kMaxPoints) {
    for (const auto& [tokens, weight] : d.buckets) {
      p.tokens[p.size] = tokens;
      p.weight[p.size] = weight;
      ++p.size;
    }
  } else if (d.kind == LengthKind::kFixed) {
    p.tokens[0] = d.mean;
    p.weight[0] = 1;
    p.size = 1;
  } else {
    // Equal-probability cells up to 0.9, then ever finer ones: the p99 of
    // TTFT follows the longest prompts, which equal cells would average away.
    static constexpr double kTail[] = {
        0.9, 0.94, 0.96, 0.975, 0.985, 0.99, 0.994, 0.997, 0.9985, 0.9995, 1.0};
    constexpr int kBulk = LengthPoints::kMaxPoints - 10;
    double lo = 0;
    for (int i = 0; i < LengthPoints::kMaxPoints; ++i) {
      const double hi =
          i < kBulk ? 0.9 * (i + 1) / kBulk : kTail[i - kBulk + 1];
      p.tokens[i] = LengthQuantile(d, 0.5 * (lo + hi));
      p.weight[i] = hi - lo;
      lo = hi;
    }
    p.size = LengthPoints::kMaxPoints;
  }
  double total = 0;
  for (int i = 0; i < p.size; ++i) total += p.weight[i];
  for (int i = 0; i < p.size; ++i) {
    p.weight[i] /= total;
    p.mean += p.weight[i] * p.tokens[i];
    p.second_moment += p.weight[i] * p.tokens[i] * p.tokens[i];
  }
  return p;
}

QueueingPrediction PredictQueueing(const StepTimes& steps,
                                   const LengthPoints& input,
                                   const LengthPoints& output, double rate) {
  QueueingPrediction q;
  const Load l = ComputeLoad(steps, input, output, rate);
  q.utilization = l.utilization;
  q.stable = l.stable;
  if (!l.stable) return q;
  q.running_batch = l.batch;
  double longest = 0;
  const int chunk = std::max(1, steps.chunk_tokens);
  for (int i = 0; i < input.size; ++i) {
    const double tokens = input.tokens[i];
    double mean;
    if (Gated(steps, l, tokens)) {
      mean = OwnPrefillSeconds(steps, l, tokens) +
             l.busy_probability * l.gated_mean;
    } else {
      const Chunked c = ChunkedOf(steps, l, rate, tokens);
      double joined = 0;
      for (int k = 0; k < l.join.size; ++k)
        joined +=
            l.join.weight[k] * std::min(c.room, l.join.tokens[k] + c.extra);
      mean = (1 - l.wait_probability) *
                 (c.aligned + l.busy_probability * l.prefill_iteration / 2 +
                  steps.prefill_token_seconds * (1 - c.alone) * joined) +
             l.wait_probability * BackloggedSeconds(c, l.wait_mean);
    }
    const double lag = steps.pipeline_lag_token_seconds * tokens;
    q.ttft_mean_seconds += input.weight[i] * (mean + lag);
    longest = std::max(longest, OwnPrefillSeconds(steps, l, tokens) +
                                    tokens * l.prefill_iteration / chunk + lag);
  }
  const double ttft_hi = longest + 2 * l.full_iteration + 40 * l.wait_mean +
                         l.gated_mean + 40 * l.gated_scale;
  double sigma_max = 0;
  for (int i = 0; i < output.size; ++i)
    sigma_max = std::max(sigma_max, l.tpot_sigma[i]);
  q.tpot_mean_seconds = l.decode_iteration;
  // Each quantile's search starts at the one below it.
  for (int k = 0; k < 3; ++k) {
    q.ttft_seconds[k] =
        Quantile([&](double t) { return TtftCdf(steps, input, l, rate, t); },
                 kQuantiles[k], k > 0 ? q.ttft_seconds[k - 1] : 0, ttft_hi);
    q.tpot_seconds[k] =
        sigma_max > 0
            ? Quantile([&](double t) { return TpotCdf(steps, output, l, t); },
                       kQuantiles[k], k > 0 ? q.tpot_seconds[k - 1] : 0,
                       l.decode_iteration + 20 * sigma_max)
            : l.decode_iteration;
  }
  return q;
}

QueueingPrediction PredictStreamedQueueing(const StepTimes& steps,
                                           const LengthPoints& input,
                                           const LengthPoints& output,
                                           double rate) {
  QueueingPrediction q = PredictQueueing(steps, input, output, rate);
  // The round model of a pipeline keeps the closed forms: its prompts'
  // lag is a per-prompt shift the chain's grid does not carry.
  if (!q.stable || steps.pipeline_lag_token_seconds > 0) return q;
  const Load l = ComputeLoad(steps, input, output, rate);
  internal::BulkChainLoop loop;
  loop.rate = rate;
  loop.prefill_token_seconds = steps.prefill_token_seconds;
  loop.chunk_tokens = steps.chunk_tokens;
  // The levels of the decode batch's slow fluctuation the closed forms mix
  // the prefill wait over (one when the queue does not follow it), each
  // with its backlog capacity: the iteration's fixed part that gives it.
  const double chunk = std::max(1, steps.chunk_tokens);
  loop.level_count = l.wait_node_count;
  for (int k = 0; k < l.wait_node_count; ++k) {
    loop.levels[k].weight = l.wait_nodes[k].weight;
    loop.levels[k].v_empty = std::max(
        0.0,
        (l.wait_nodes[k].token_seconds - steps.prefill_token_seconds) * chunk);
  }
  loop.v_full = steps.iteration_seconds +
                steps.decode_request_seconds * l.batch_in_backlog;
  loop.content_scale = l.backlog_content_tokens;
  loop.iteration_seconds = steps.iteration_seconds;
  loop.decode_request_seconds = steps.decode_request_seconds;
  loop.running_batch = l.batch;
  loop.prompts_only = !(l.batch > 0);
  // M/G/inf: no request decoding with probability exp(-batch), no prompt
  // queued with 1 - P(wait > 0).
  loop.idle_share = std::exp(-l.batch) * (1 - l.wait_probability);
  const internal::BulkChainTtft chain =
      internal::SolveBulkChainTtft(loop, input);
  if (!chain.solved) return q;
  q.ttft_mean_seconds = chain.mean_seconds;
  q.ttft_seconds = chain.seconds;
  return q;
}

SloShares SloSharesAt(const StepTimes& steps, const LengthPoints& input,
                      const LengthPoints& output, double rate,
                      double max_ttft_seconds, double max_tpot_seconds) {
  SloShares shares;
  const Load l = ComputeLoad(steps, input, output, rate);
  if (!l.stable) return shares;
  shares.ttft = max_ttft_seconds > 0
                    ? TtftCdf(steps, input, l, rate, max_ttft_seconds)
                    : 1.0;
  shares.tpot =
      max_tpot_seconds > 0 ? TpotCdf(steps, output, l, max_tpot_seconds) : 1.0;
  return shares;
}

double LatencyAt(const QueueingPrediction& q, int percentile, bool ttft) {
  const std::array<double, 3>& at = ttft ? q.ttft_seconds : q.tpot_seconds;
  switch (percentile) {
    case 0:
      return ttft ? q.ttft_mean_seconds : q.tpot_mean_seconds;
    case 50:
      return at[0];
    case 90:
      return at[1];
    case 95:  // between p90 and p99, log-linear in the tail probability
      return at[1] + (at[2] - at[1]) * std::log(2.0) / std::log(10.0);
    default:
      return at[2];
  }
}

namespace {

bool MeetsSlos(const StepTimes& steps, const LengthPoints& input,
               const LengthPoints& output, double rate, double max_ttft_seconds,
               double max_tpot_seconds, int percentile) {
  if (percentile == 0) {
    const QueueingPrediction q = PredictQueueing(steps, input, output, rate);
    return q.stable &&
           (max_ttft_seconds <= 0 || q.ttft_mean_seconds <= max_ttft_seconds) &&
           (max_tpot_seconds <= 0 || q.tpot_mean_seconds <= max_tpot_seconds);
  }
  const SloShares shares = SloSharesAt(steps, input, output, rate,
                                       max_ttft_seconds, max_tpot_seconds);
  const double need = percentile / 100.0;
  return shares.ttft >= need && shares.tpot >= need;
}

}  // namespace

double MaxRequestRate(const StepTimes& steps, const LengthPoints& input,
                      const LengthPoints& output, double max_ttft_seconds,
                      double max_tpot_seconds, int percentile) {
  double mean_n = 0;
  for (int i = 0; i < output.size; ++i)
    mean_n += output.weight[i] * DecodeIterations(output.tokens[i]);
  // Upper bounds: the decode work and the prefill compute alone.
  const double work = steps.decode_request_seconds * mean_n +
                      steps.prefill_token_seconds * input.mean;
  const double prefill =
      input.mean * (steps.prefill_token_seconds +
                    steps.iteration_seconds / std::max(1, steps.chunk_tokens));
  double hi = 1e9;
  if (work > 0) hi = std::min(hi, 1 / work);
  if (prefill > 0) hi = std::min(hi, 1 / prefill);
  double lo = 0;
  if (!MeetsSlos(steps, input, output, hi * 1e-9, max_ttft_seconds,
                 max_tpot_seconds, percentile))
    return 0;
  for (int i = 0; i < 50 && hi - lo > 1e-4 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (MeetsSlos(steps, input, output, mid, max_ttft_seconds, max_tpot_seconds,
               percentile)
         ? lo
         : hi) = mid;
  }
  return lo;
}

}  // namespace shardplan::simulator
