#include "server/metrics.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "server/status_util.h"

namespace shardplan::server {
namespace {

// The codes a PlanSharding / EvaluatePlan call commonly ends with; their series
// exist from startup. Others are added on first use.
const std::vector<absl::StatusCode>& CommonCodes() {
  static const auto* codes = new std::vector<absl::StatusCode>{
      absl::StatusCode::kOk,
      absl::StatusCode::kInvalidArgument,
      absl::StatusCode::kResourceExhausted,
      absl::StatusCode::kCancelled,
      absl::StatusCode::kDeadlineExceeded,
      absl::StatusCode::kUnavailable,
      absl::StatusCode::kInternal,
  };
  return *codes;
}

// The one unlabelled series of a new metric family `name`, registered in
// `registry`.
template <typename Builder>
auto& Series(Builder&& builder, const char* name, const char* help,
             prometheus::Registry& registry) {
  return builder.Name(name).Help(help).Register(registry).Add({});
}

}  // namespace

ServerMetrics::ServerMetrics(int num_slots,
                             const std::vector<std::string>& methods)
    : registry_(std::make_shared<prometheus::Registry>()) {
  plan_requests_family_ =
      &prometheus::BuildCounter()
           .Name("shardplan_plan_requests_total")
           .Help(
               "PlanSharding calls finished, by search method and gRPC "
               "status code.")
           .Register(*registry_);
  evaluate_requests_family_ =
      &prometheus::BuildCounter()
           .Name("shardplan_evaluate_requests_total")
           .Help("EvaluatePlan calls finished, by gRPC status code.")
           .Register(*registry_);
  active_searches_ =
      &Series(prometheus::BuildGauge(), "shardplan_active_searches",
              "Searches running on a worker slot now.", *registry_);
  queued_searches_ =
      &Series(prometheus::BuildGauge(), "shardplan_queued_searches",
              "Admitted searches waiting for a free worker slot.", *registry_);
  cost_model_evaluations_ = &Series(
      prometheus::BuildCounter(), "shardplan_cost_model_evaluations_total",
      "Cost-model evaluations (searches, baselines and "
      "EvaluatePlan).",
      *registry_);
  traffic_pricings_ =
      &Series(prometheus::BuildCounter(), "shardplan_traffic_pricings_total",
              "Streamed plans priced at the request's rate (the prompt queue's "
              "chain), once per distinct plan of a PlanSharding call.",
              *registry_);
  traffic_pricing_seconds_ = &Series(
      prometheus::BuildCounter(), "shardplan_traffic_pricing_seconds_total",
      "Seconds spent pricing streamed plans at a request rate (on worker "
      "threads).",
      *registry_);
  rl_iterations_ =
      &Series(prometheus::BuildCounter(), "shardplan_rl_iterations_total",
              "Search iterations (RL policy-gradient steps; baselines report "
              "their own rounds).",
              *registry_);
  auto& best_family =
      prometheus::BuildGauge()
          .Name("shardplan_search_best_speedup")
          .Help(
              "Best plan's throughput over the Megatron baseline's, of the "
              "search running on each worker slot (0 when idle).")
          .Register(*registry_);
  auto& evals_family =
      prometheus::BuildGauge()
          .Name("shardplan_search_evaluations")
          .Help(
              "Cost-model evaluations so far of the search running on each "
              "worker slot (0 when idle).")
          .Register(*registry_);
  for (int slot = 0; slot < num_slots; ++slot) {
    const std::string label = absl::StrCat(slot);
    slot_best_speedup_.push_back(&best_family.Add({{"slot", label}}));
    slot_evaluations_.push_back(&evals_family.Add({{"slot", label}}));
  }
  search_duration_ = &prometheus::BuildHistogram()
                          .Name("shardplan_search_duration_seconds")
                          .Help(
                              "Wall time of a search on its worker slot, from "
                              "start to its last report.")
                          .Register(*registry_)
                          .Add({}, prometheus::Histogram::BucketBoundaries{
                                       0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
                                       10, 30, 60, 120, 300, 600});
  time_to_first_plan_ = &prometheus::BuildHistogram()
                             .Name("shardplan_time_to_first_plan_seconds")
                             .Help(
                                 "From a PlanSharding call's arrival to its "
                                 "first plan (the Megatron "
                                 "baseline) being handed to gRPC for writing.")
                             .Register(*registry_)
                             .Add({}, prometheus::Histogram::BucketBoundaries{
                                          0.0005, 0.001, 0.0025, 0.005, 0.01,
                                          0.025, 0.05, 0.1, 0.25, 0.5, 1});
  elite_store_plans_ =
      &Series(prometheus::BuildGauge(), "shardplan_elite_store_plans",
              "Plans kept in the persistent elite store.", *registry_);
  warm_starts_family_ =
      &prometheus::BuildCounter()
           .Name("shardplan_warm_starts_total")
           .Help(
               "Searches by warm-start outcome: hit_exact, hit_nearest, "
               "miss, disabled (store off or request opted out).")
           .Register(*registry_);

  absl::MutexLock lock(&mu_);
  std::vector<std::string> method_labels = methods;
  method_labels.push_back("unknown");
  for (const std::string& method : method_labels) {
    for (absl::StatusCode code : CommonCodes()) {
      plan_requests_[{method, CodeName(code)}] = &plan_requests_family_->Add(
          {{"method", method}, {"code", CodeName(code)}});
    }
  }
  for (absl::StatusCode code : CommonCodes()) {
    evaluate_requests_[CodeName(code)] =
        &evaluate_requests_family_->Add({{"code", CodeName(code)}});
  }
  for (absl::string_view result : {kWarmStartHitExact, kWarmStartHitNearest,
                                   kWarmStartMiss, kWarmStartDisabled}) {
    warm_starts_[std::string(result)] =
        &warm_starts_family_->Add({{"result", std::string(result)}});
  }
}

void ServerMetrics::CountPlanRequest(absl::string_view method,
                                     absl::StatusCode code) {
  const std::string code_name = CodeName(code);
  absl::MutexLock lock(&mu_);
  auto it = plan_requests_.find({std::string(method), code_name});
  if (it == plan_requests_.end()) {
    // Only known methods reach here (validation maps others to "unknown"), so
    // the label set stays bounded by methods x 17 codes.
    it = plan_requests_
             .emplace(
                 std::make_pair(std::string(method), code_name),
                 &plan_requests_family_->Add(
                     {{"method", std::string(method)}, {"code", code_name}}))
             .first;
  }
  it->second->Increment();
}

void ServerMetrics::ObserveTrafficPricing(absl::Duration took) {
  traffic_pricings_->Increment();
  traffic_pricing_seconds_->Increment(absl::ToDoubleSeconds(took));
}

void ServerMetrics::CountEvaluateRequest(absl::StatusCode code) {
  const std::string code_name = CodeName(code);
  absl::MutexLock lock(&mu_);
  auto it = evaluate_requests_.find(code_name);
  if (it == evaluate_requests_.end()) {
    it = evaluate_requests_
             .emplace(code_name,
                      &evaluate_requests_family_->Add({{"code", code_name}}))
             .first;
  }
  it->second->Increment();
}

prometheus::Gauge& ServerMetrics::slot_best_speedup(int slot) {
  CHECK(slot >= 0 && slot < num_slots()) << "slot " << slot;
  return *slot_best_speedup_[slot];
}

prometheus::Gauge& ServerMetrics::slot_evaluations(int slot) {
  CHECK(slot >= 0 && slot < num_slots()) << "slot " << slot;
  return *slot_evaluations_[slot];
}

void ServerMetrics::ResetSlot(int slot) {
  slot_best_speedup(slot).Set(0);
  slot_evaluations(slot).Set(0);
}

void ServerMetrics::CountWarmStart(absl::string_view result) {
  absl::MutexLock lock(&mu_);
  auto it = warm_starts_.find(std::string(result));
  CHECK(it != warm_starts_.end()) << "unknown warm-start result " << result;
  it->second->Increment();
}

}  // namespace shardplan::server
