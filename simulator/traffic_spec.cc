#include "simulator/traffic_spec.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "proto/limits.h"
#include "proto/status_macros.h"
#include "simulator/traffic_costing.h"
#include "simulator/user_text.h"

namespace shardplan::simulator {
namespace {

using ::shardplan::v1::TokenDistribution;
using ::shardplan::v1::Workload;

std::string Number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return absl::StrFormat("%g", v);
}

absl::Status Invalid(const std::string& path, const std::string& rule,
                     double value) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, " ", rule, ", got ", Number(value)));
}

// A finite value in [lo, hi].
absl::Status InRange(double value, const std::string& path, double lo,
                     double hi) {
  if (!std::isfinite(value))
    return Invalid(path, "must be a finite number", value);
  if (value < lo) return Invalid(path, absl::StrCat("must be >= ", lo), value);
  if (value > hi) return Invalid(path, absl::StrCat("must be <= ", hi), value);
  return absl::OkStatus();
}

bool Present(const TokenDistribution& d) {
  return !d.kind().empty() || d.min() != 0 || d.max() != 0 || d.mean() != 0 ||
         d.sigma() != 0 || d.buckets_size() > 0;
}

absl::StatusOr<LengthDistribution> Convert(const TokenDistribution& d,
                                           const std::string& path,
                                           int fallback_tokens,
                                           int max_tokens) {
  LengthDistribution out;
  if (!Present(d)) {
    out.mean = fallback_tokens;
    return out;
  }
  const std::string& kind = d.kind();
  if (kind == "fixed") {
    out.kind = LengthKind::kFixed;
    out.mean = d.mean() == 0 ? fallback_tokens : d.mean();
    RETURN_IF_ERROR(InRange(out.mean, path + ".mean", 1, max_tokens));
  } else if (kind == "uniform") {
    out.kind = LengthKind::kUniform;
    RETURN_IF_ERROR(InRange(d.min(), path + ".min", 1, max_tokens));
    RETURN_IF_ERROR(InRange(d.max(), path + ".max", 1, max_tokens));
    if (d.max() < d.min()) {
      return Invalid(
          path + ".max",
          absl::StrCat("must be >= ", path, ".min (", Number(d.min()), ")"),
          d.max());
    }
    out.min = d.min();
    out.max = d.max();
    out.mean = 0.5 * (d.min() + d.max());
  } else if (kind == "lognormal") {
    out.kind = LengthKind::kLognormal;
    RETURN_IF_ERROR(InRange(d.mean(), path + ".mean", 1, max_tokens));
    if (!(d.sigma() > 0) || !std::isfinite(d.sigma()))
      return Invalid(path + ".sigma", "must be > 0", d.sigma());
    RETURN_IF_ERROR(InRange(d.sigma(), path + ".sigma", 0, 4));
    RETURN_IF_ERROR(InRange(d.min(), path + ".min", 0, max_tokens));
    RETURN_IF_ERROR(InRange(d.max(), path + ".max", 0, max_tokens));
    if (d.max() > 0 && d.max() < std::max(1.0, d.min())) {
      return Invalid(path + ".max",
                     absl::StrCat("must be 0 (none) or >= ", path, ".min (",
                                  Number(d.min()), ")"),
                     d.max());
    }
    out.min = std::max(1.0, d.min());
    out.max = d.max();
    out.mean = d.mean();
    out.sigma = d.sigma();
  } else if (kind == "histogram") {
    out.kind = LengthKind::kHistogram;
    if (d.buckets_size() == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".buckets must not be empty for kind histogram"));
    }
    if (d.buckets_size() > limits::kMaxDistributionBuckets) {
      return Invalid(path + ".buckets",
                     absl::StrCat("must have at most ",
                                  limits::kMaxDistributionBuckets, " entries"),
                     d.buckets_size());
    }
    double total = 0;
    for (int i = 0; i < d.buckets_size(); ++i) {
      const std::string at = absl::StrCat(path, ".buckets[", i, "]");
      RETURN_IF_ERROR(
          InRange(d.buckets(i).tokens(), at + ".tokens", 1, max_tokens));
      RETURN_IF_ERROR(InRange(d.buckets(i).weight(), at + ".weight", 0, 1e12));
      total += d.buckets(i).weight();
    }
    if (!(total > 0)) {
      return Invalid(path + ".buckets", "weights must add up to more than 0",
                     total);
    }
    for (const auto& b : d.buckets()) {
      if (b.weight() > 0)
        out.buckets.emplace_back(b.tokens(), b.weight() / total);
      out.mean += b.tokens() * b.weight() / total;
    }
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ".kind must be one of fixed, uniform, lognormal, histogram, got ",
        QuoteUserText(kind)));
  }
  return out;
}

}  // namespace

double DistributionMean(const TokenDistribution& d) {
  if (!Present(d)) return 0;
  if (d.kind() == "uniform") return 0.5 * (d.min() + d.max());
  if (d.kind() == "histogram") {
    double total = 0, sum = 0;
    for (const auto& b : d.buckets()) {
      total += b.weight();
      sum += b.tokens() * b.weight();
    }
    return total > 0 ? sum / total : 0;
  }
  return d.mean();
}

absl::StatusOr<TrafficDims> TrafficDimsFromProto(const Workload& workload,
                                                 int input_tokens,
                                                 int output_tokens,
                                                 int max_tokens) {
  TrafficDims t;
  RETURN_IF_ERROR(InRange(workload.request_rate(), "workload.request_rate", 0,
                          limits::kMaxRequestRate));
  t.request_rate = workload.request_rate();
  RETURN_IF_ERROR(InRange(workload.prefix_cache_hit_rate(),
                          "workload.prefix_cache_hit_rate", 0, 0.99));
  t.prefix_cache_hit_rate = workload.prefix_cache_hit_rate();
  const int p = workload.slo_percentile();
  if (p != 0 && p != 50 && p != 90 && p != 95 && p != 99) {
    return absl::InvalidArgumentError(absl::StrCat(
        "workload.slo_percentile must be one of 0 (the mean), 50, 90, 95, 99, "
        "got ",
        p));
  }
  t.slo_percentile = p;
  ASSIGN_OR_RETURN(t.input, Convert(workload.input_tokens_distribution(),
                                    "workload.input_tokens_distribution",
                                    input_tokens, max_tokens));
  ASSIGN_OR_RETURN(t.output, Convert(workload.output_tokens_distribution(),
                                     "workload.output_tokens_distribution",
                                     output_tokens, max_tokens));
  if (t.request_rate > 0 && workload.concurrency() > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload.request_rate (", Number(t.request_rate),
                     ") and workload.concurrency (", workload.concurrency(),
                     ") are alternatives: give one"));
  }
  if (t.request_rate == 0) {
    const char* needs = p != 0 ? "slo_percentile"
                        : Present(workload.input_tokens_distribution())
                            ? "input_tokens_distribution"
                        : Present(workload.output_tokens_distribution())
                            ? "output_tokens_distribution"
                        : t.prefix_cache_hit_rate > 0 ? "prefix_cache_hit_rate"
                                                      : nullptr;
    if (needs != nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("workload.", needs,
                       " needs workload.request_rate > 0 (open-loop traffic), "
                       "got request_rate 0"));
    }
  }
  return t;
}

namespace {

// The calibration bands (the closed-loop ranges' ratios to their values)
// carried through the queue: the queueing model again with the step times
// at the bands' low and high ratios. Replaces ttft_ms_range and
// tpot_ms_range (then bands of the means at the rate) and sets the
// percentiles' ranges.
struct Bands {
  StepScale low, high;
};

// The closed-loop bands as ratios to their values (1 where absent).
Bands BandsOf(const shardplan::v1::Prediction& p) {
  const auto ratio = [](const shardplan::v1::Range& range, double value,
                        bool high) {
    if (!(value > 0) || (range.low() == 0 && range.high() == 0)) return 1.0;
    return (high ? range.high() : range.low()) / value;
  };
  Bands b;
  b.low = {ratio(p.tpot_ms_range(), p.tpot_ms(), false),
           ratio(p.ttft_ms_range(), p.ttft_ms(), false)};
  b.high = {ratio(p.tpot_ms_range(), p.tpot_ms(), true),
            ratio(p.ttft_ms_range(), p.ttft_ms(), true)};
  return b;
}

void AddTrafficRanges(const CostModel& model, const PlanDims& plan,
                      const TrafficPrediction& t, const Bands& bands,
                      shardplan::v1::Prediction* prediction) {
  const StepScale& low = bands.low;
  const StepScale& high = bands.high;
  const QueueingPrediction& q = t.queueing;
  const TrafficPrediction at_low = PredictTraffic(model, plan, low);
  const TrafficPrediction at_high = PredictTraffic(model, plan, high);
  const bool low_ok = at_low.computed && at_low.queueing.stable;
  const bool high_ok = at_high.computed && at_high.queueing.stable;
  if (!high_ok) {
    prediction->add_validation(
        "request_rate: at the calibration band's high end the offered rate "
        "saturates the plan; the ranges' high ends scale the predictions by "
        "the band's ratio instead");
  }
  const auto set = [&](double value_s, double low_s, double high_s,
                       double low_ratio, double high_ratio,
                       shardplan::v1::Range* range) {
    range->set_low((low_ok ? std::min(low_s, value_s) : value_s * low_ratio) *
                   1e3);
    range->set_high(
        (high_ok ? std::max(high_s, value_s) : value_s * high_ratio) * 1e3);
  };
  const QueueingPrediction& lq = at_low.queueing;
  const QueueingPrediction& hq = at_high.queueing;
  set(q.ttft_mean_seconds, lq.ttft_mean_seconds, hq.ttft_mean_seconds,
      low.prefill, high.prefill, prediction->mutable_ttft_ms_range());
  set(q.tpot_mean_seconds, lq.tpot_mean_seconds, hq.tpot_mean_seconds,
      low.decode, high.decode, prediction->mutable_tpot_ms_range());
  shardplan::v1::Range* ttft_ranges[] = {
      prediction->mutable_ttft_ms_p50_range(),
      prediction->mutable_ttft_ms_p90_range(),
      prediction->mutable_ttft_ms_p99_range()};
  shardplan::v1::Range* tpot_ranges[] = {
      prediction->mutable_tpot_ms_p50_range(),
      prediction->mutable_tpot_ms_p90_range(),
      prediction->mutable_tpot_ms_p99_range()};
  for (int k = 0; k < 3; ++k) {
    set(q.ttft_seconds[k], lq.ttft_seconds[k], hq.ttft_seconds[k], low.prefill,
        high.prefill, ttft_ranges[k]);
    set(q.tpot_seconds[k], lq.tpot_seconds[k], hq.tpot_seconds[k], low.decode,
        high.decode, tpot_ranges[k]);
  }
}

}  // namespace

bool AddTrafficPrediction(const CostModel& model, const PlanDims& plan,
                          double price_per_gpu_hour,
                          shardplan::v1::Prediction* prediction,
                          const std::function<bool()>& stop) {
  const Problem& problem = model.problem();
  const TrafficDims& traffic = problem.workload.traffic;
  if (traffic.request_rate <= 0) return true;
  const int gpus = plan.disaggregated
                       ? plan.prefill_instances * plan.prefill.gpus() +
                             plan.decode_instances * plan.instance_gpus()
                       : plan.replicas * plan.instance_gpus();
  // Output tokens/s the plan serves: the offered rate's when its queues are
  // stable at the rate (the open-loop model), else no more than the
  // closed-loop throughput.
  const double offered_tokens_per_s =
      traffic.request_rate * Discretize(traffic.output).mean;
  const auto set_cost = [&](double tokens_per_s) {
    if (!(price_per_gpu_hour > 0)) return;
    const double per_hour = price_per_gpu_hour * gpus;
    prediction->set_cost_per_hour(per_hour);
    if (tokens_per_s > 0) {
      prediction->set_cost_per_million_output_tokens(
          per_hour / (tokens_per_s * 3600 / 1e6));
    }
  };
  const double closed_loop_tokens_per_s =
      std::min(offered_tokens_per_s, prediction->output_tokens_per_s());
  if (!prediction->feasible()) {
    set_cost(closed_loop_tokens_per_s);
    return true;
  }
  const TrafficPrediction t = PredictStreamedTraffic(model, plan, stop);
  if (t.stopped) return false;
  set_cost(t.computed && t.queueing.stable ? offered_tokens_per_s
                                           : closed_loop_tokens_per_s);
  if (!t.computed) {
    prediction->add_validation(
        "request_rate: no queueing prediction (one request's KV cache does "
        "not fit an instance); latencies are the closed-loop ones");
    return true;
  }
  prediction->set_max_request_rate(t.max_request_rate);
  prediction->set_goodput_requests_per_s(t.goodput_requests_per_s);
  const QueueingPrediction& q = t.queueing;
  if (q.stable) {
    const Bands bands = BandsOf(*prediction);
    prediction->set_ttft_ms(q.ttft_mean_seconds * 1e3);
    prediction->set_tpot_ms(q.tpot_mean_seconds * 1e3);
    prediction->set_ttft_ms_p50(q.ttft_seconds[0] * 1e3);
    prediction->set_ttft_ms_p90(q.ttft_seconds[1] * 1e3);
    prediction->set_ttft_ms_p99(q.ttft_seconds[2] * 1e3);
    prediction->set_tpot_ms_p50(q.tpot_seconds[0] * 1e3);
    prediction->set_tpot_ms_p90(q.tpot_seconds[1] * 1e3);
    prediction->set_tpot_ms_p99(q.tpot_seconds[2] * 1e3);
    prediction->set_running_batch_size(
        static_cast<int>(std::lround(q.running_batch)));
    AddTrafficRanges(model, plan, t, bands, prediction);
  }
  if (!q.stable || t.max_request_rate < traffic.request_rate) {
    const std::string at = traffic.slo_percentile > 0
                               ? absl::StrCat(" at p", traffic.slo_percentile)
                               : std::string(" (means)");
    prediction->set_feasible(false);
    prediction->set_infeasible_reason(absl::StrFormat(
        "workload.request_rate %s requests/s exceeds what this plan carries "
        "within the SLOs%s: %.3g requests/s (%d replicas%s)",
        Number(traffic.request_rate), at, t.max_request_rate, t.replicas,
        q.stable ? "" : "; the offered load saturates it"));
  }
  return true;
}

}  // namespace shardplan::simulator
