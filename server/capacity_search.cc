#include "server/capacity_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "policy/baselines.h"
#include "policy/plan_space.h"
#include "simulator/disaggregated.h"
#include "simulator/queueing.h"
#include "simulator/spec.h"
#include "simulator/traffic_costing.h"
#include "simulator/traffic_spec.h"

namespace shardplan::server {
namespace {

// Sizings of one hardware option: the first on the closed forms at the
// offered rate, the others at that rate scaled by the last pick's streamed
// shortfall (and the bisection's tolerance, within which its streamed limit
// may lie under the true one).
constexpr int kMaxSizings = 4;

// The cost model of `option`'s hardware on `gpus` GPUs; null when the
// problem does not fit it (e.g. the weights need more GPUs).
std::shared_ptr<const simulator::CostModel> ModelOn(
    const CapacityRequest& request, const CapacityOption& option, int gpus) {
  shardplan::v1::ClusterSpec cluster;
  cluster.set_hardware(option.hardware);
  cluster.set_num_gpus(gpus);
  cluster.set_gpus_per_node(option.gpus_per_node);
  absl::StatusOr<simulator::Problem> problem =
      simulator::ProblemFromProto(request.model, cluster, request.workload);
  if (!problem.ok()) return nullptr;
  auto model = simulator::CostModel::Create(*std::move(problem));
  if (!model.ok()) return nullptr;
  return std::shared_ptr<const simulator::CostModel>(*std::move(model));
}

// A deployment of one hardware option: the plan on `gpus` GPUs and the rate
// it carries within the SLOs (requests/s, whole deployment).
struct Deployment {
  simulator::PlanDims plan;
  int gpus = 0;
  double rate = 0;
  bool found() const { return gpus > 0; }
};

// Smaller is better: GPUs (min_gpus) or their cost (min_cost, the same
// order within one hardware); more headroom breaks ties.
bool Better(const Deployment& a, const Deployment& b) {
  if (!b.found()) return true;
  if (a.gpus != b.gpus) return a.gpus < b.gpus;
  return a.rate > b.rate;
}

// The cost models of one hardware option by cluster size, built once.
class Models {
 public:
  Models(const CapacityRequest& request, const CapacityOption& option)
      : request_(request), option_(option) {}
  const simulator::CostModel* On(int gpus) {
    auto it = models_.find(gpus);
    if (it == models_.end())
      it = models_.emplace(gpus, ModelOn(request_, option_, gpus)).first;
    return it->second.get();
  }

 private:
  const CapacityRequest& request_;
  const CapacityOption& option_;
  absl::flat_hash_map<int, std::shared_ptr<const simulator::CostModel>> models_;
};

// The cheapest aggregated deployment: `copies` copies of a grid plan on a
// power-of-two unit. `rate_at_limit`: the most any such deployment within
// max_gpus carries.
Deployment BestAggregated(const CapacityRequest& request,
                          const CapacityOption& option, Models& models,
                          const policy::CancellationToken& cancel,
                          CapacityResult* result, double* rate_at_limit) {
  const double rate = request.workload.request_rate();
  Deployment best;
  for (int gpus = 1; gpus <= option.max_gpus; gpus *= 2) {
    // A unit of more GPUs than the best total cannot do better.
    if (best.found() && gpus > best.gpus) break;
    if (cancel.cancelled()) return best;
    const simulator::CostModel* model = models.On(gpus);
    if (model == nullptr) continue;
    absl::StatusOr<std::unique_ptr<const policy::PlanSpace>> space =
        policy::PlanSpace::Create(*model);
    if (!space.ok()) continue;
    const simulator::TrafficDims& traffic = model->problem().workload.traffic;
    const simulator::LengthPoints in = simulator::Discretize(traffic.input);
    const simulator::LengthPoints out = simulator::Discretize(traffic.output);
    const simulator::WorkloadDims& w = model->problem().workload;
    for (const simulator::PlanDims& plan : policy::GridPlans(**space)) {
      const simulator::TrafficPrediction t =
          simulator::StepTimesOf(*model, plan);
      result->evaluations += 3;
      if (!t.computed) continue;
      const double unit_rate =
          t.replicas *
          simulator::MaxRequestRate(t.steps, in, out, w.max_ttft_seconds,
                                    w.max_tpot_seconds, traffic.slo_percentile);
      if (!(unit_rate > 0)) continue;
      const int copies = static_cast<int>(std::ceil(rate / unit_rate - 1e-9));
      *rate_at_limit =
          std::max(*rate_at_limit, unit_rate * (option.max_gpus / gpus));
      Deployment d;
      d.plan = plan;
      d.plan.replicas *= copies;
      d.gpus = gpus * copies;
      d.rate = unit_rate * copies;
      if (d.gpus > option.max_gpus) continue;
      if (Better(d, best)) best = d;
    }
  }
  return best;
}

// One instance layout priced as either pool: requests/s one instance
// carries within the SLOs.
struct PoolLayout {
  simulator::PlanDims instance;  // aggregated form, replicas 1
  int gpus = 0;
  double prefill_rate = 0;
  double decode_rate = 0;
};

simulator::PlanDims Disaggregated(const simulator::PlanDims& prefill, int x,
                                  const simulator::PlanDims& decode, int y) {
  simulator::PlanDims plan = decode;
  plan.replicas = 1;
  plan.batch_size = 0;  // the load decides the decode batch
  plan.disaggregated = true;
  plan.prefill.dp = prefill.dp;
  plan.prefill.tp = prefill.tp;
  plan.prefill.pp = prefill.pp;
  plan.prefill.ep = prefill.ep;
  plan.prefill.dims = prefill.dims;
  plan.prefill.micro_batches = 0;
  plan.prefill.batch_size = 0;
  plan.prefill_instances = x;
  plan.decode_instances = y;
  return plan;
}

// Predicts `plan` whole on its GPUs; `t` the prediction (computed false when
// the plan is not valid there).
simulator::TrafficPrediction PredictWhole(Models& models,
                                          const simulator::PlanDims& plan,
                                          int gpus, CapacityResult* result) {
  const simulator::CostModel* model = models.On(gpus);
  if (model == nullptr || !model->ValidatePlan(plan).ok()) return {};
  result->evaluations += 6;  // both pools' step times, the whole plan
  return simulator::PredictTraffic(*model, plan);
}

// The layouts of one instance of `gpus` GPUs: the aggregated grid's degree
// tuples with one replica (a dense model's copies are the instance count).
std::vector<simulator::PlanDims> InstanceLayouts(
    const simulator::CostModel& model) {
  std::vector<simulator::PlanDims> layouts;
  absl::StatusOr<std::unique_ptr<const policy::PlanSpace>> space =
      policy::PlanSpace::Create(model);
  if (!space.ok()) return layouts;
  const bool moe = model.problem().model.is_moe();
  for (simulator::PlanDims plan : policy::GridPlans(**space)) {
    if (plan.replicas != 1 || (!moe && plan.dp != 1)) continue;
    plan.micro_batches = 0;
    plan.batch_size = 0;
    const bool seen = std::any_of(layouts.begin(), layouts.end(),
                                  [&](const simulator::PlanDims& l) {
                                    return l.dp == plan.dp && l.tp == plan.tp &&
                                           l.pp == plan.pp && l.ep == plan.ep;
                                  });
    if (!seen && simulator::ValidateInstancePlan(model, plan).ok())
      layouts.push_back(plan);
  }
  return layouts;
}

// Drops one instance of either pool at a time from `best` (a disaggregated
// deployment carrying `rate`) while what is left still carries it.
void ShrinkPools(Models& models, double rate, Deployment* best,
                 CapacityResult* result) {
  for (bool shrunk = true; shrunk;) {
    shrunk = false;
    for (bool prefill_pool : {true, false}) {
      simulator::PlanDims plan = best->plan;
      int& count =
          prefill_pool ? plan.prefill_instances : plan.decode_instances;
      if (count <= 1) continue;
      --count;
      const int gpus = best->gpus - (prefill_pool ? plan.prefill.gpus()
                                                  : plan.instance_gpus());
      const simulator::TrafficPrediction t =
          PredictWhole(models, plan, gpus, result);
      if (t.computed && t.max_request_rate >= rate) {
        *best = {plan, gpus, t.max_request_rate};
        shrunk = true;
      }
    }
  }
}

// Layouts tried per pool in whole deployments, fewest GPUs per request/s
// first, and the instances a short pool may grow by.
constexpr size_t kLayoutsPerPool = 3;
constexpr int kMaxGrowth = 4;

// The cheapest disaggregated deployment (see the header).
Deployment BestDisaggregated(const CapacityRequest& request,
                             const CapacityOption& option, Models& models,
                             const policy::CancellationToken& cancel,
                             CapacityResult* result, double* rate_at_limit) {
  const double rate = request.workload.request_rate();
  std::vector<PoolLayout> pools;
  for (int gpus = 1; 2 * gpus <= option.max_gpus; gpus *= 2) {
    if (cancel.cancelled()) return {};
    const simulator::CostModel* model = models.On(gpus);
    if (model == nullptr) continue;
    for (const simulator::PlanDims& layout : InstanceLayouts(*model)) {
      // As both pools of a one-plus-one plan: each pool's rate per instance.
      const simulator::TrafficPrediction t = PredictWhole(
          models, Disaggregated(layout, 1, layout, 1), 2 * gpus, result);
      if (!t.computed) continue;
      pools.push_back({layout, gpus, t.prefill_max_request_rate,
                       t.decode_max_request_rate});
    }
  }
  // Fewest GPUs per request/s of each pool.
  auto gpus_per_rate = [](const PoolLayout& p, double r) {
    return r > 0 ? p.gpus / r : std::numeric_limits<double>::infinity();
  };
  std::vector<const PoolLayout*> prefill, decode;
  for (const PoolLayout& p : pools) {
    if (p.prefill_rate > 0) prefill.push_back(&p);
    if (p.decode_rate > 0) decode.push_back(&p);
  }
  auto by = [&](bool prefill_pool) {
    return [&, prefill_pool](const PoolLayout* a, const PoolLayout* b) {
      return prefill_pool ? gpus_per_rate(*a, a->prefill_rate) <
                                gpus_per_rate(*b, b->prefill_rate)
                          : gpus_per_rate(*a, a->decode_rate) <
                                gpus_per_rate(*b, b->decode_rate);
    };
  };
  std::stable_sort(prefill.begin(), prefill.end(), by(true));
  std::stable_sort(decode.begin(), decode.end(), by(false));
  if (prefill.empty() || decode.empty()) return {};
  *rate_at_limit = std::max(
      *rate_at_limit,
      option.max_gpus / (gpus_per_rate(*prefill[0], prefill[0]->prefill_rate) +
                         gpus_per_rate(*decode[0], decode[0]->decode_rate)));
  prefill.resize(std::min(prefill.size(), kLayoutsPerPool));
  decode.resize(std::min(decode.size(), kLayoutsPerPool));

  struct Pairing {
    const PoolLayout* prefill;
    const PoolLayout* decode;
    int x, y, gpus;
  };
  std::vector<Pairing> pairings;
  for (const PoolLayout* p : prefill) {
    for (const PoolLayout* d : decode) {
      const int x = static_cast<int>(std::ceil(rate / p->prefill_rate - 1e-9));
      const int y = static_cast<int>(std::ceil(rate / d->decode_rate - 1e-9));
      pairings.push_back({p, d, x, y, x * p->gpus + y * d->gpus});
    }
  }
  std::stable_sort(
      pairings.begin(), pairings.end(),
      [](const Pairing& a, const Pairing& b) { return a.gpus < b.gpus; });
  Deployment best;
  for (Pairing pairing : pairings) {
    // Growing only adds GPUs: a pairing estimated at the best's GPUs or more
    // cannot win.
    if (best.found() && pairing.gpus >= best.gpus) break;
    for (int growth = 0; growth <= kMaxGrowth; ++growth) {
      if (cancel.cancelled()) return best;
      const int gpus =
          pairing.x * pairing.prefill->gpus + pairing.y * pairing.decode->gpus;
      if (gpus > option.max_gpus || (best.found() && gpus >= best.gpus)) break;
      const simulator::PlanDims plan =
          Disaggregated(pairing.prefill->instance, pairing.x,
                        pairing.decode->instance, pairing.y);
      const simulator::TrafficPrediction t =
          PredictWhole(models, plan, gpus, result);
      if (!t.computed) break;
      if (t.max_request_rate >= rate) {
        best = {plan, gpus, t.max_request_rate};
        // The one-plus-one estimate can be short of what the pools carry
        // together (e.g. the decode pool's first step at a lighter load
        // per instance): drop instances while the rest still carries the
        // rate.
        ShrinkPools(models, rate, &best, result);
        break;
      }
      // The pool short of the rate grows by one instance.
      if (t.prefill_max_request_rate < rate) ++pairing.x;
      if (t.decode_max_request_rate < rate) ++pairing.y;
    }
  }
  return best;
}

}  // namespace

absl::StatusOr<CapacityResult> SearchCapacity(
    const CapacityRequest& request, const policy::CancellationToken& cancel) {
  CapacityResult result;
  const double rate = request.workload.request_rate();
  std::vector<std::string> limits;
  for (const CapacityOption& option : request.options) {
    // The deployments are sized on the queue's closed forms, but a pick is
    // judged by its streamed prediction (the chain), whose limit can lie a
    // few percent lower. A pick whose streamed limit falls short of the rate
    // is sized again for the rate scaled by that shortfall, so the answer is
    // a cluster that carries the rate by the figures it reports.
    CapacityRequest sizing = request;
    std::optional<CapacityPick> pick;
    double closed_form_limit = 0;  // the most any plan within max_gpus carries
    bool sized_out = false;  // no deployment within max_gpus at the sizing rate
    for (int attempt = 0; attempt < kMaxSizings; ++attempt) {
      Models models(sizing, option);
      Deployment best;
      double sized_limit = 0;
      if (request.disaggregation != policy::Disaggregation::kOnly) {
        best = BestAggregated(sizing, option, models, cancel, &result,
                              &sized_limit);
      }
      if (request.disaggregation != policy::Disaggregation::kOff) {
        const Deployment d = BestDisaggregated(sizing, option, models, cancel,
                                               &result, &sized_limit);
        if (d.found() && Better(d, best)) best = d;
      }
      if (cancel.cancelled()) {
        result.cancelled = true;
        return result;
      }
      if (attempt == 0) closed_form_limit = sized_limit;
      if (!best.found()) {
        sized_out = true;
        break;
      }
      // Priced at the offered rate: the first sizing's own model, else one
      // built for the offered rate.
      const std::shared_ptr<const simulator::CostModel> offered =
          attempt == 0 ? nullptr : ModelOn(request, option, best.gpus);
      const simulator::CostModel* model =
          attempt == 0 ? models.On(best.gpus) : offered.get();
      if (model == nullptr || !model->ValidatePlan(best.plan).ok()) break;
      const simulator::Evaluation e = model->Evaluate(best.plan);
      result.evaluations += 1;
      CapacityPick candidate;
      candidate.option = option;
      candidate.cluster.set_hardware(option.hardware);
      candidate.cluster.set_num_gpus(best.gpus);
      candidate.cluster.set_gpus_per_node(
          model->problem().cluster.gpus_per_node);
      candidate.plan = simulator::PlanToProto(best.plan, model->problem());
      candidate.prediction = simulator::PredictionToProto(e, model->problem());
      if (!simulator::AddTrafficPrediction(
              *model, best.plan, option.price_per_gpu_hour,
              &candidate.prediction, [&] { return cancel.cancelled(); })) {
        result.cancelled = true;
        return result;
      }
      candidate.cost_per_hour = option.price_per_gpu_hour * best.gpus;
      const double streamed_limit = candidate.prediction.max_request_rate();
      const bool short_of_rate = !candidate.prediction.feasible() &&
                                 streamed_limit > 0 && streamed_limit < rate;
      // The last sizing's pick stands even when short (its prediction says
      // why); an earlier one is sized again.
      pick = std::move(candidate);
      if (!short_of_rate) break;
      sizing.workload.set_request_rate(sizing.workload.request_rate() *
                                       (rate / streamed_limit) *
                                       (1 + simulator::kStreamedRateTolerance));
    }
    if (sized_out || !pick.has_value()) {
      // The closed forms' limit, scaled by the streamed shortfall the
      // sizings found (none: the closed forms' own).
      limits.push_back(absl::StrFormat(
          "%s carries at most %.3g requests/s on its %d GPUs (max_gpus)",
          option.hardware,
          closed_form_limit * rate / sizing.workload.request_rate(),
          option.max_gpus));
      continue;
    }
    result.picks.push_back(*std::move(pick));
  }
  for (size_t i = 0; i < result.picks.size(); ++i) {
    const CapacityPick& p = result.picks[i];
    if (!result.winner.has_value()) {
      result.winner = i;
      continue;
    }
    const CapacityPick& w = result.picks[*result.winner];
    const bool better = request.goal == policy::CapacityGoal::kMinCost
                            ? p.cost_per_hour < w.cost_per_hour ||
                                  (p.cost_per_hour == w.cost_per_hour &&
                                   p.cluster.num_gpus() < w.cluster.num_gpus())
                            : p.cluster.num_gpus() < w.cluster.num_gpus();
    if (better) result.winner = i;
  }
  if (result.picks.empty()) {
    result.no_fit_reason = absl::StrCat(
        "no cluster carries workload.request_rate ", rate,
        " requests/s within the SLOs",
        request.workload.slo_percentile() > 0
            ? absl::StrCat(" at p", request.workload.slo_percentile())
            : std::string(),
        ": ", absl::StrJoin(limits, "; "));
  }
  return result;
}

}  // namespace shardplan::server
