// Prometheus metrics of the planning server (STYLE.md §6; names are part of
// CONTRACT.md). ServerMetrics owns the registry, builds every family at
// construction and pre-creates the children for the known label values, so
// every series exists (at 0) from startup. It is created once by the server and
// passed by reference; it is not a singleton.
#ifndef SHARDPLAN_SERVER_METRICS_H_
#define SHARDPLAN_SERVER_METRICS_H_

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace shardplan::server {

// Label values of shardplan_warm_starts_total{result}.
inline constexpr absl::string_view kWarmStartHitExact = "hit_exact";
inline constexpr absl::string_view kWarmStartHitNearest = "hit_nearest";
inline constexpr absl::string_view kWarmStartMiss = "miss";
inline constexpr absl::string_view kWarmStartDisabled = "disabled";

// Thread-safe: prometheus-cpp metrics are atomic; the lazily added children (an
// unexpected method/code pair) go through Family::Add, which locks.
class ServerMetrics {
 public:
  // `num_slots` worker slots get one series each in the per-slot gauges;
  // `methods` are the known search methods (label `method`), "unknown" is added
  // for requests naming none.
  ServerMetrics(int num_slots, const std::vector<std::string>& methods);
  ServerMetrics(const ServerMetrics&) = delete;
  ServerMetrics& operator=(const ServerMetrics&) = delete;

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

  // shardplan_plan_requests_total{method,code}: one per finished PlanSharding
  // call.
  void CountPlanRequest(absl::string_view method, absl::StatusCode code);
  // shardplan_evaluate_requests_total{code}.
  void CountEvaluateRequest(absl::StatusCode code);

  prometheus::Gauge& active_searches() { return *active_searches_; }
  prometheus::Gauge& queued_searches() { return *queued_searches_; }
  prometheus::Counter& cost_model_evaluations() {
    return *cost_model_evaluations_;
  }
  prometheus::Counter& rl_iterations() { return *rl_iterations_; }
  // Streamed plans priced at a request rate (the prompt queue's chain) and
  // the seconds that took, on worker threads: one pricing that `took`.
  void ObserveTrafficPricing(absl::Duration took);
  prometheus::Counter& traffic_pricings() { return *traffic_pricings_; }
  prometheus::Counter& traffic_pricing_seconds() {
    return *traffic_pricing_seconds_;
  }
  prometheus::Histogram& search_duration() { return *search_duration_; }
  prometheus::Histogram& time_to_first_plan() { return *time_to_first_plan_; }
  prometheus::Gauge& elite_store_plans() { return *elite_store_plans_; }

  // Per worker slot, 0 <= slot < num_slots (CHECKed: a programmer invariant).
  prometheus::Gauge& slot_best_speedup(int slot);
  prometheus::Gauge& slot_evaluations(int slot);
  // Resets both gauges of `slot` to 0 (its search ended).
  void ResetSlot(int slot);

  // shardplan_warm_starts_total{result}; `result` is one of the kWarmStart*
  // values.
  void CountWarmStart(absl::string_view result);

  int num_slots() const { return static_cast<int>(slot_best_speedup_.size()); }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* plan_requests_family_;
  prometheus::Family<prometheus::Counter>* evaluate_requests_family_;
  prometheus::Family<prometheus::Counter>* warm_starts_family_;
  prometheus::Gauge* active_searches_;
  prometheus::Gauge* queued_searches_;
  prometheus::Counter* cost_model_evaluations_;
  prometheus::Counter* rl_iterations_;
  prometheus::Counter* traffic_pricings_;
  prometheus::Counter* traffic_pricing_seconds_;
  prometheus::Histogram* search_duration_;
  prometheus::Histogram* time_to_first_plan_;
  prometheus::Gauge* elite_store_plans_;
  std::vector<prometheus::Gauge*> slot_best_speedup_;
  std::vector<prometheus::Gauge*> slot_evaluations_;

  absl::Mutex mu_;
  // Pre-created (and lazily added) children, keyed by label values.
  std::map<std::pair<std::string, std::string>, prometheus::Counter*>
      plan_requests_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, prometheus::Counter*> evaluate_requests_
      ABSL_GUARDED_BY(mu_);
  std::map<std::string, prometheus::Counter*> warm_starts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shardplan::server

#endif  // SHARDPLAN_SERVER_METRICS_H_
