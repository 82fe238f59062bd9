// Validation of the server's requests (STYLE.md §4): the envelope (required
// fields, budgets against the server's limits, known methods) here, the
// model/cluster/workload/plan specs by the simulator's conversions. Each
// function checks the whole request and returns the validated value, or
// INVALID_ARGUMENT whose message starts with the field path
// ("options.max_evaluations must be <= 100000 (--max_evaluations_limit), got
// 200000").
#ifndef SHARDPLAN_SERVER_VALIDATION_H_
#define SHARDPLAN_SERVER_VALIDATION_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "policy/objective.h"
#include "proto/limits.h"
#include "server/capacity_search.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/calibration.h"
#include "simulator/cost_model.h"
#include "simulator/transition.h"
#include "simulator/types.h"

namespace shardplan::server {

// Calibration profiles made by the Calibrate RPC, by name
// (server/store/profile_store.h). Thread-safe; never blocks.
class UserProfiles {
 public:
  virtual ~UserProfiles() = default;
  virtual std::optional<simulator::CalibrationProfile> Find(
      const std::string& name) const = 0;
  virtual std::vector<std::string> Names() const = 0;
};

// The server's budget defaults and limits (from its flags).
struct RequestLimits {
  int default_max_evaluations = limits::kDefaultMaxEvaluations;
  int max_evaluations_limit = limits::kDefaultMaxEvaluationsLimit;
  double default_max_seconds = limits::kDefaultMaxSeconds;
  double max_seconds_limit = limits::kDefaultMaxSecondsLimit;
  // Problem size caps (--max_num_gpus, --max_layers, --max_experts); a request
  // above one gets INVALID_ARGUMENT naming the cap and its flag. <= 0: no cap.
  int max_num_gpus = limits::kDefaultMaxNumGpus;
  int max_layers = limits::kDefaultMaxLayers;
  int max_experts = limits::kDefaultMaxExperts;
  // Where workload.calibration_profile names not built in are looked up;
  // null: only the built-in profiles exist. Outlives the requests.
  const UserProfiles* user_profiles = nullptr;
};

// OK, or INVALID_ARGUMENT such as "cluster.num_gpus 20000 exceeds the server
// limit 16384 (--max_num_gpus)".
absl::Status CheckProblemLimits(const simulator::Problem& problem,
                                const RequestLimits& limits);

// options.top_n: plans in the final update's top_plans.
using limits::kDefaultTopN;
using limits::kMaxTopN;

struct ValidatedPlanRequest {
  std::shared_ptr<const simulator::CostModel>
      cost_model;          // immutable, shared with the search
  std::string model_name;  // for logs
  policy::SearchMethod method = policy::SearchMethod::kRl;
  // options.method was empty: the server's default (policy::DefaultMethod).
  bool method_defaulted = false;
  int max_evaluations = 0;  // defaults applied, > 0
  double max_seconds = 0;   // defaults applied, > 0
  uint32_t seed = 1;
  bool warm_start = true;
  // options.objective and options.goal (objective() below).
  policy::Estimate estimate = policy::Estimate::kExpected;
  policy::CapacityGoal goal = policy::CapacityGoal::kMaxThroughput;
  int top_n = kDefaultTopN;  // 1..kMaxTopN
  // Re-planning (PlanRequest.current set; null otherwise): the objective, whose
  // model diffs a plan against the running one, and the running plan adapted
  // to the new cluster (the ones valid there), to warm-start the search.
  std::shared_ptr<const simulator::TransitionObjective> transition;
  std::vector<simulator::PlanDims> current_plans;
  // options.disaggregation: auto (default; search both kinds, report the
  // best of each), off (aggregated only), only (disaggregated only).
  policy::Disaggregation disaggregation = policy::Disaggregation::kAuto;
  // options.goal min_gpus / min_cost: the capacity search to run instead of
  // the plan search (null otherwise).
  std::shared_ptr<const CapacityRequest> capacity;

  // What the search maximises and the stream ranks by; points into
  // `transition`, valid while this request (or a copy) lives.
  policy::Objective objective() const {
    policy::Objective o;
    o.estimate = estimate;
    o.goal = goal;
    o.transition = transition.get();
    return o;
  }
};

struct ValidatedEvaluateRequest {
  std::shared_ptr<const simulator::CostModel> cost_model;
  simulator::PlanDims plan;  // passed CostModel::ValidatePlan
  std::string model_name;
};

// The price of cluster.hardware in cluster.hardware_options; 0 = none.
double PricePerGpuHour(const shardplan::v1::ClusterSpec& cluster);

// `method` after defaulting ("" -> "rl"), for metric labels of requests that
// fail validation: a known method, or "unknown".
std::string MethodLabel(const shardplan::v1::PlanRequest& request);

// INVALID_ARGUMENT with the field path on any problem. Cost: one
// CostModel::Create.
absl::StatusOr<ValidatedPlanRequest> ValidatePlanRequest(
    const shardplan::v1::PlanRequest& request, const RequestLimits& limits);
absl::StatusOr<ValidatedEvaluateRequest> ValidateEvaluateRequest(
    const shardplan::v1::EvaluateRequest& request);
// The same with the server's problem size caps.
absl::StatusOr<ValidatedEvaluateRequest> ValidateEvaluateRequest(
    const shardplan::v1::EvaluateRequest& request, const RequestLimits& limits);

}  // namespace shardplan::server

#endif  // SHARDPLAN_SERVER_VALIDATION_H_
