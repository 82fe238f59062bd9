// Disaggregated prefill/decode plans: the pools' per-instance costs come from
// the aggregated cost model's per-phase terms (internal/pool_costing.h); this
// file adds what only disaggregation has: the prefill queue, the KV-cache
// transfer and the balance of the two pools.
#include "simulator/disaggregated.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "proto/status_macros.h"
#include "simulator/internal/pool_costing.h"
#include "simulator/placement.h"

namespace shardplan::simulator {
namespace {

using internal::PoolCosting;

// Fixed-point iterations of the closed-loop decode occupancy (converges in a
// handful; the cap bounds the cost of an evaluation).
constexpr int kClosedLoopIterations = 30;
using internal::PrefillInstanceCost;

// Re-roots an instance's "plan.<field>" message at `prefix` ("plan.decode.").
absl::Status AtPool(absl::Status status, absl::string_view prefix) {
  if (status.ok()) return status;
  std::string message(status.message());
  if (absl::StartsWith(message, "plan.")) {
    message = absl::StrCat(prefix, message.substr(5));
  } else {
    message = absl::StrCat(prefix, message);
  }
  return absl::Status(status.code(), message);
}

// Where the pools' instances sit (simulator/placement.h, DecodePoolFirst:
// each pool a contiguous block, the one with the bigger instances first where
// node sizes differ) and what that costs per instance, computed once per
// evaluation.
struct Pools {
  // Prefill: the slowest placement class's instance (TTFT, memory) and the
  // whole pool's rate, requests/s.
  PrefillInstanceCost pre;
  double prefill_capacity = 0;
  // Decode instances by placement class; empty: all placed alike, as one
  // instance from a node boundary (uniform nodes, instances aligned to them:
  // no heap in the common case).
  std::vector<ReplicaClass> decode_classes;
  // Share of (prefill, decode) instance pairs inside one node.
  double pairs_inside_node = 0;
};

// Whether `count` instances of `size` GPUs from global rank `first` are each
// placed as one instance from a node boundary on uniform nodes would be (the
// shapes PoolCosting gives without a placement).
bool AlignedOnUniformNodes(const ClusterDims& cluster, int64_t first,
                           int64_t size) {
  if (ReplicasMayDiffer(cluster)) return false;
  // An NVLink domain over several nodes (NVL72): only the placement's
  // classes see it.
  if (cluster.nvlink_domain_gpus > cluster.gpus_per_node) return false;
  const int64_t g = std::max(1, cluster.gpus_per_node);
  if (size % g == 0) return first % g == 0;
  return g % size == 0 && first % size == 0;
}

Pools PlacePools(const CostModel& model, const PlanDims& plan,
                 const PlanDims& decode) {
  const Problem& problem = model.problem();
  const ClusterDims& cluster = problem.cluster;
  const bool moe = problem.model.is_moe();
  Pools pools;
  const PlanDims prefill = PrefillInstancePlan(plan);
  const int prefill_batch = std::max(1, plan.prefill.batch_size);
  // A pass holds `prefill_batch` requests on each of the instance's dp
  // attention ranks (dense: copies), as PreparePlan costs it.
  const double per_pass = std::max(1, plan.prefill.dp) * prefill_batch;
  const int64_t prefill_first = PrefillPoolFirstRank(plan, cluster);
  if (AlignedOnUniformNodes(cluster, prefill_first, plan.prefill.gpus())) {
    pools.pre = PoolCosting::PrefillInstance(model, prefill, prefill_batch);
    pools.prefill_capacity =
        pools.pre.max_stage_seconds > 0
            ? plan.prefill_instances * (per_pass / pools.pre.max_stage_seconds)
            : 0;
  } else {
    const std::vector<ReplicaClass> classes = InstanceClasses(
        prefill, plan.prefill_instances, prefill_first, cluster, moe);
    for (size_t i = 0; i < classes.size(); ++i) {
      const PrefillInstanceCost c = PoolCosting::PrefillInstance(
          model, prefill, prefill_batch, &classes[i].placement);
      if (i == 0 || c.chain_seconds > pools.pre.chain_seconds) pools.pre = c;
      if (c.max_stage_seconds > 0) {
        pools.prefill_capacity +=
            classes[i].count * per_pass / c.max_stage_seconds;
      }
    }
  }
  const int64_t decode_first = DecodePoolFirstRank(plan, cluster);
  if (!AlignedOnUniformNodes(cluster, decode_first, decode.instance_gpus())) {
    pools.decode_classes = InstanceClasses(decode, plan.decode_instances,
                                           decode_first, cluster, moe);
  }
  pools.pairs_inside_node = PoolPairsInsideOneNode(plan, cluster);
  return pools;
}

// The plan at `batch` requests in decode per decode instance (a dense model:
// per dp copy), spread over its attention dp ranks.
Evaluation EvaluateAtBatch(const CostModel& model, const PlanDims& plan,
                           const PlanDims& decode, const Pools& pools,
                           int batch, bool check_slos = true) {
  const Problem& problem = model.problem();
  const double isl = problem.workload.input_tokens;
  const double osl = std::max(1, problem.workload.output_tokens);
  const PrefillInstanceCost& pre = pools.pre;

  // Decode pool: each placement class at its own iteration time; the
  // prediction shows the slowest class (its TPOT). DecodeInstance zeroes the
  // rate of an instance that does not fit; the rate from the iteration keeps
  // the report meaningful (the plan is infeasible anyway). An instance
  // decodes its `batch` requests (dense: each of its dp copies does).
  const double copies = problem.model.is_moe() ? 1 : std::max(1, decode.dp);
  auto tokens_per_s = [&](const Evaluation& d) {
    return d.decode_iteration_seconds > 0
               ? copies * batch / d.decode_iteration_seconds
               : 0;
  };
  Evaluation d;
  double decode_tokens_per_s = 0;  // the whole pool's
  if (pools.decode_classes.empty()) {
    d = PoolCosting::DecodeInstance(model, decode, batch);
    decode_tokens_per_s = plan.decode_instances * tokens_per_s(d);
  } else {
    for (size_t i = 0; i < pools.decode_classes.size(); ++i) {
      const ReplicaClass& c = pools.decode_classes[i];
      Evaluation di =
          PoolCosting::DecodeInstance(model, decode, batch, &c.placement);
      decode_tokens_per_s += c.count * tokens_per_s(di);
      if (i == 0 || (d.feasible && !di.feasible) ||
          (d.feasible == di.feasible &&
           di.decode_iteration_seconds > d.decode_iteration_seconds)) {
        d = std::move(di);
      }
    }
  }
  Evaluation e = d;
  e.disaggregated = true;

  // Pools' rates, requests per second.
  const double decode_rate = decode_tokens_per_s / osl;
  const double prefill_capacity = pools.prefill_capacity;
  const double instance_rate =
      prefill_capacity / std::max(1, plan.prefill_instances);
  const double offered = std::min(decode_rate, prefill_capacity);
  e.prefill_requests_per_s = prefill_capacity;
  e.decode_requests_per_s = decode_rate;

  // Prefill queue: M/D/1 per instance (Pollaczek-Khinchine mean wait,
  // https://en.wikipedia.org/wiki/Pollaczek%E2%80%93Khinchine_formula).
  const double rho = prefill_capacity > 0 ? std::min(offered / prefill_capacity,
                                                     kMaxPrefillUtilization)
                                          : kMaxPrefillUtilization;
  e.prefill_utilization = rho;
  e.prefill_queue_seconds =
      instance_rate > 0 ? rho / (2 * instance_rate * (1 - rho)) : 0;

  // KV-cache transfer of one prefill pass, layer by layer behind the
  // compute: over NVLink for the pairs of instances inside one node, over
  // InfiniBand for the rest, the mean over the pairs a router spreads the
  // requests on.
  const ClusterDims& cluster = problem.cluster;
  const int prefill_batch = std::max(1, plan.prefill.batch_size);
  const double bytes =
      prefill_batch * isl * PoolCosting::KvBytesPerToken(model);
  const int streams =
      std::max(1, std::min(plan.prefill.gpus(), decode.instance_gpus()));
  const double layers = std::max(1, problem.model.layers);
  auto exposed_seconds = [&](bool inter_node) {
    const double transfer_seconds =
        bytes / (streams * PoolCosting::LinkBytesPerS(model, inter_node)) +
        PoolCosting::LinkLatencyS(model, inter_node);
    return std::max(transfer_seconds / layers,
                    transfer_seconds - pre.chain_seconds);
  };
  const double inside = pools.pairs_inside_node;
  e.kv_transfer_bytes = bytes / prefill_batch;
  e.kv_transfer_inter_node = inside < 1;
  e.kv_transfer_nvlink_share = inside;
  e.kv_transfer_seconds =
      (inside > 0 ? inside * exposed_seconds(false) : 0) +
      (inside < 1 ? (1 - inside) * exposed_seconds(true) : 0);

  e.prefill_seconds = pre.chain_seconds;
  e.prefill_batch_size = prefill_batch;
  e.prefill_instances = plan.prefill_instances;
  e.prefill_instance_gpus = plan.prefill.gpus();
  e.decode_instances = plan.decode_instances;
  e.decode_instance_gpus = decode.instance_gpus();
  e.prefill_weights_bytes = pre.weights_bytes;
  e.prefill_kv_cache_bytes = pre.kv_cache_bytes;
  e.prefill_activations_bytes = pre.activations_bytes;
  e.ttft_seconds = e.prefill_queue_seconds + pre.chain_seconds +
                   e.kv_transfer_seconds +
                   model.calibration().disagg_request_overhead_seconds;
  e.tpot_seconds = d.decode_iteration_seconds;
  e.output_tokens_per_s = offered * osl;
  e.output_tokens_per_s_per_gpu = e.output_tokens_per_s / cluster.num_gpus;
  e.tp_nodes = std::max(d.tp_nodes, pre.tp_nodes);
  e.ep_nodes = std::max(d.ep_nodes, pre.ep_nodes);
  e.replica_nodes = std::max(d.replica_nodes, pre.replica_nodes);

  // Feasibility: the decode pool's memory (from DecodeInstance), then the
  // prefill pool's, then the SLOs of the whole plan.
  if (e.feasible && !pre.fits) {
    e.feasible = false;
    if (pre.weights_bytes > d.capacity_bytes) {
      e.reason = InfeasibleReason::kWeightsExceedMemory;
      e.reason_value = pre.weights_bytes;
      e.reason_limit = d.capacity_bytes;
    } else {
      e.reason = InfeasibleReason::kKvCacheExceedsMemory;
      e.reason_value = pre.kv_cache_bytes;
      e.reason_limit = pre.kv_room_bytes;
    }
  }
  if (check_slos) {
    internal::ApplySlos(problem.workload.max_ttft_seconds,
                        problem.workload.max_tpot_seconds, &e);
  }
  return e;
}

// `clients` closed-loop users (each sends its next request when the last one
// finishes, as the benchmark clients of the calibration rows do). A request
// cycles through the prefill pool (wait + service) and the decode pool
// ((OSL - 1) iterations), so by Little's law (as EvaluateQueued in
// serving.cc) the completion rate is lambda = clients / (TTFT + decode
// time), and only lambda x decode time of the clients sit in the decode
// batch; the rest wait for or are in prefill. Solved by fixed-point
// iteration on the decode occupancy; for each occupancy lambda is the root
// of lambda (service + W(lambda) + decode) = clients, W the M/D/1 wait of an
// instance at lambda / x or the lockstep-wave wait
// (Calibration::disagg_prefill_queue_fraction), whichever is longer, capped
// at everyone else ahead, (clients - 1) / mu.
Evaluation EvaluateClosedLoop(const CostModel& model, const PlanDims& plan,
                              const PlanDims& decode, const Pools& pools,
                              int clients) {
  const Problem& problem = model.problem();
  const double osl = std::max(1, problem.workload.output_tokens);
  const double decode_steps = std::max(0.0, osl - 1);
  // Decode instances (dense: their dp copies), each with its share of the
  // decoding requests.
  const double units = LoadReplicas(plan, problem.model.is_moe());
  double in_decode = clients;
  Evaluation e;
  for (int it = 0; it < kClosedLoopIterations; ++it) {
    const int batch = std::clamp(static_cast<int>(std::ceil(in_decode / units)),
                                 1, kMaxRequestsInFlight);
    e = EvaluateAtBatch(model, plan, decode, pools, batch,
                        /*check_slos=*/false);
    const double mu = e.prefill_requests_per_s;
    if (!(mu > 0)) break;
    const double mu_instance = mu / std::max(1, plan.prefill_instances);
    const double service = e.ttft_seconds - e.prefill_queue_seconds;
    const double decode_seconds = decode_steps * e.tpot_seconds;
    // Lockstep waves: the calibrated share of the instance's other clients
    // ahead of a request, each one prefill (1 / mu_instance) long.
    const double burst =
        model.calibration().disagg_prefill_queue_fraction *
        std::max(0.0, static_cast<double>(clients) /
                              std::max(1, plan.prefill_instances) -
                          1) /
        mu_instance;
    auto wait = [&](double lambda) {
      const double rho = lambda / mu;
      const double w = rho < 1 ? rho / (2 * mu_instance * (1 - rho))
                               : std::numeric_limits<double>::infinity();
      return std::min(std::max(w, burst), (clients - 1) / mu);
    };
    double lo = 0, hi = std::min(mu, clients / (service + decode_seconds));
    for (int b = 0; b < 60; ++b) {
      const double mid = 0.5 * (lo + hi);
      if (mid * (service + wait(mid) + decode_seconds) < clients) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    const double lambda = hi;
    e.ttft_seconds = std::max(service, clients / lambda - decode_seconds);
    e.prefill_queue_seconds = e.ttft_seconds - service;
    e.prefill_utilization = lambda / mu;
    e.output_tokens_per_s = lambda * osl;
    e.output_tokens_per_s_per_gpu =
        e.output_tokens_per_s / problem.cluster.num_gpus;
    const double next = lambda * decode_seconds;
    if (std::abs(next - in_decode) < 0.01) break;
    in_decode = 0.5 * (in_decode + next);
  }
  // The SLOs once TTFT carries the closed-loop wait.
  internal::ApplySlos(problem.workload.max_ttft_seconds,
                      problem.workload.max_tpot_seconds, &e);
  return e;
}

}  // namespace

PlanDims DecodeInstancePlan(const PlanDims& plan) {
  PlanDims d = plan;
  d.disaggregated = false;
  d.replicas = 1;
  d.prefill = PrefillLayout();
  d.prefill_instances = 0;
  d.decode_instances = 0;
  return d;
}

PlanDims PrefillInstancePlan(const PlanDims& plan) {
  PlanDims p;
  p.dp = plan.prefill.dp;
  p.tp = plan.prefill.tp;
  p.pp = plan.prefill.pp;
  p.ep = plan.prefill.ep;
  p.dims = plan.prefill.dims;
  p.micro_batches = plan.prefill.micro_batches;
  p.batch_size = plan.prefill.batch_size;
  return p;
}

absl::Status ValidateInstancePlan(const CostModel& model,
                                  const PlanDims& instance) {
  return PoolCosting::ValidateInstance(model, instance);
}

absl::Status ValidateDisaggregatedPlan(const CostModel& model,
                                       const PlanDims& plan) {
  if (plan.prefill_instances < 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "plan.prefill_instances must be >= 1 in a disaggregated plan, got %d",
        plan.prefill_instances));
  }
  if (plan.decode_instances < 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "plan.decode_instances must be >= 1 in a disaggregated plan, got %d",
        plan.decode_instances));
  }
  if (plan.replicas != 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("plan.decode.replicas must be 1 (the pool's size is "
                        "plan.decode_instances), got %d",
                        plan.replicas));
  }
  RETURN_IF_ERROR(
      AtPool(PoolCosting::ValidateInstance(model, PrefillInstancePlan(plan)),
             "plan.prefill."));
  RETURN_IF_ERROR(
      AtPool(PoolCosting::ValidateInstance(model, DecodeInstancePlan(plan)),
             "plan.decode."));
  const int64_t gpus =
      static_cast<int64_t>(plan.prefill_instances) * plan.prefill.gpus() +
      static_cast<int64_t>(plan.decode_instances) * plan.instance_gpus();
  const int num_gpus = model.problem().cluster.num_gpus;
  if (gpus != num_gpus) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "plan.prefill_instances*prefill GPUs + plan.decode_instances*decode "
        "GPUs must equal cluster.num_gpus (%d), got %d*%d + %d*%d = %d",
        num_gpus, plan.prefill_instances, plan.prefill.gpus(),
        plan.decode_instances, plan.instance_gpus(), gpus));
  }
  return absl::OkStatus();
}

Evaluation EvaluateDisaggregated(const CostModel& model, const PlanDims& plan) {
  // Cheap guard (as CostModel::Evaluate): a caller's unvalidated plan comes
  // back infeasible instead of dividing by zero.
  const int num_gpus = model.problem().cluster.num_gpus;
  const bool evaluable =
      plan.prefill_instances >= 1 && plan.decode_instances >= 1 &&
      plan.prefill.dp >= 1 && plan.prefill.tp >= 1 && plan.prefill.pp >= 1 &&
      plan.prefill.ep >= 1 && plan.prefill.pp <= kMaxPipelineStages &&
      plan.prefill.pp <= model.problem().model.layers &&
      plan.prefill.batch_size >= 0 &&
      plan.prefill.batch_size <= kMaxBatchSize && plan.dp >= 1 &&
      plan.tp >= 1 && plan.pp >= 1 && plan.ep >= 1 &&
      plan.pp <= kMaxPipelineStages &&
      plan.pp <= model.problem().model.layers && plan.batch_size >= 0 &&
      plan.batch_size <= kMaxRequestsInFlight &&
      static_cast<int64_t>(plan.prefill_instances) * plan.prefill.gpus() +
              static_cast<int64_t>(plan.decode_instances) *
                  plan.instance_gpus() ==
          num_gpus;
  if (!evaluable) {
    Evaluation e;
    e.disaggregated = true;
    e.capacity_bytes = model.capacity_bytes();
    return e;
  }
  const PlanDims decode = DecodeInstancePlan(plan);
  const Pools pools = PlacePools(model, plan, decode);
  if (plan.batch_size > 0) {
    return EvaluateAtBatch(model, plan, decode, pools, plan.batch_size);
  }
  const int concurrency = model.problem().workload.concurrency;
  if (concurrency > 0) {
    // Workload.concurrency is per replica; a decode instance (dense: each of
    // its dp copies) is one.
    return EvaluateClosedLoop(
        model, plan, decode, pools,
        std::min(kMaxRequestsInFlight, concurrency) *
            LoadReplicas(plan, model.problem().model.is_moe()));
  }
  // Memory and TPOT only get worse with the batch: stop at the first batch
  // that fails. TTFT can improve (a fuller decode pool offers the prefill
  // pool no more than its capacity), so an SLO miss on TTFT keeps scanning.
  Evaluation best, first;
  bool have_best = false;
  for (int b : ScanLoads()) {
    if (b > kMaxBatchSize * static_cast<int64_t>(AttentionDpRanks(
                                plan, model.problem().model.is_moe()))) {
      break;
    }
    const Evaluation e = EvaluateAtBatch(model, plan, decode, pools, b);
    if (b == 1) first = e;
    if (!e.feasible) {
      if (e.reason == InfeasibleReason::kTtftSlo) continue;
      break;
    }
    if (!have_best || e.output_tokens_per_s > best.output_tokens_per_s) {
      best = e;
      have_best = true;
    }
  }
  return have_best ? best : first;
}

}  // namespace shardplan::simulator
