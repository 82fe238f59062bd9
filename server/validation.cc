#include "server/validation.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "policy/objective.h"
#include "policy/searcher.h"
#include "proto/status_macros.h"
#include "simulator/calibration.h"
#include "simulator/spec.h"
#include "simulator/transition.h"
#include "simulator/user_text.h"

namespace shardplan::server {
namespace {

// INVALID_ARGUMENT "<field> must be a finite number >= 0<note>, got <value>"
// unless `value` is one.
absl::Status CheckFiniteNonNegative(absl::string_view field, double value,
                                    absl::string_view note) {
  if (std::isfinite(value) && value >= 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      field, " must be a finite number >= 0", note, ", got ", value));
}

using shardplan::v1::ModelSource;

absl::Status CheckModelSource(const ModelSource& model, bool has_model) {
  if (!has_model || model.source_case() == ModelSource::SOURCE_NOT_SET) {
    return absl::InvalidArgumentError(
        "model is required: set model.catalog_name, model.spec or "
        "model.hf_config_json");
  }
  return absl::OkStatus();
}

std::string ModelName(const ModelSource& model,
                      const simulator::Problem& problem) {
  if (!problem.model.name.empty()) return problem.model.name;
  if (model.source_case() == ModelSource::kCatalogName)
    return model.catalog_name();
  return "custom";
}

// The user profile workload.calibration_profile names, if it names one
// (nullopt for built-in names and ""). An unknown name is INVALID_ARGUMENT
// listing every known profile.
absl::StatusOr<std::optional<simulator::CalibrationProfile>> FindUserProfile(
    const shardplan::v1::Workload& workload, const RequestLimits& limits) {
  const std::string& name = workload.calibration_profile();
  if (name.empty() || limits.user_profiles == nullptr) return std::nullopt;
  std::vector<std::string> known = simulator::BuiltInProfileNames();
  if (std::find(known.begin(), known.end(), name) != known.end()) {
    return std::nullopt;
  }
  std::optional<simulator::CalibrationProfile> user =
      limits.user_profiles->Find(name);
  if (!user.has_value()) {
    for (const std::string& n : limits.user_profiles->Names()) {
      known.push_back(n);
    }
    return absl::InvalidArgumentError(absl::StrFormat(
        "workload.calibration_profile %s is not a known profile; known: %s",
        simulator::QuoteUserText(name), absl::StrJoin(known, ", ")));
  }
  if (!workload.engine().empty() && !user->engine.empty() &&
      workload.engine() != user->engine) {
    return absl::InvalidArgumentError(
        absl::StrFormat("workload.calibration_profile %s is for engine %s, but "
                        "workload.engine is %s",
                        simulator::QuoteUserText(name), user->engine,
                        simulator::QuoteUserText(workload.engine())));
  }
  return user;
}

absl::StatusOr<std::shared_ptr<const simulator::CostModel>> BuildCostModel(
    const ModelSource& model, bool has_model,
    const shardplan::v1::ClusterSpec& cluster, bool has_cluster,
    const shardplan::v1::Workload& workload, const RequestLimits& limits) {
  RETURN_IF_ERROR(CheckModelSource(model, has_model));
  if (!has_cluster) {
    return absl::InvalidArgumentError(
        "cluster is required: set cluster.hardware (e.g. \"h100-sxm-80gb\") "
        "and "
        "cluster.num_gpus");
  }
  // An absent workload is the empty one; the simulator names its missing
  // fields.
  // Cheap early check of the field as sent, before any spec is parsed.
  if (limits.max_num_gpus > 0 && cluster.num_gpus() > limits.max_num_gpus) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cluster.num_gpus ", cluster.num_gpus(), " exceeds the server limit ",
        limits.max_num_gpus, " (--max_num_gpus)"));
  }
  // A profile made by the Calibrate RPC stands in for the built-in one: the
  // simulator validates the rest of the workload without it.
  ASSIGN_OR_RETURN(std::optional<simulator::CalibrationProfile> user_profile,
                   FindUserProfile(workload, limits));
  shardplan::v1::Workload simulated = workload;
  if (user_profile.has_value()) simulated.clear_calibration_profile();
  ASSIGN_OR_RETURN(simulator::Problem problem,
                   simulator::ProblemFromProto(model, cluster, simulated));
  RETURN_IF_ERROR(CheckProblemLimits(problem, limits));
  // The workload names the engine's calibration profile (validated by
  // ProblemFromProto; "" = the default) or a user's.
  if (user_profile.has_value()) {
    problem.workload.calibration_profile = user_profile->name;
  }
  ASSIGN_OR_RETURN(const simulator::CalibrationProfile profile,
                   user_profile.has_value() ? *user_profile
                   : problem.workload.calibration_profile.empty()
                       ? simulator::EngineAgnosticCalibrationProfile()
                       : simulator::FindCalibrationProfile(
                             problem.workload.calibration_profile));
  // Checked on load too; checked again here, on use, so that a damaged
  // profile is never priced with, whichever path it came by.
  if (absl::Status usable =
          simulator::CheckCalibrationRanges(profile.calibration);
      !usable.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "calibration profile ", simulator::QuoteUserText(profile.name),
        " is unusable (recalibrate it or choose another): ", usable.message()));
  }
  ASSIGN_OR_RETURN(
      std::unique_ptr<const simulator::CostModel> cost_model,
      simulator::CostModel::Create(std::move(problem), profile.calibration));
  return std::shared_ptr<const simulator::CostModel>(std::move(cost_model));
}

// Any failure below is the caller's input: make sure it reaches the client as
// INVALID_ARGUMENT whatever code a lower layer chose (e.g. NOT_FOUND for an
// unknown catalog name), keeping the message with its field path.
absl::Status AsInvalidArgument(const absl::Status& status) {
  if (status.ok() || absl::IsInvalidArgument(status)) return status;
  return absl::InvalidArgumentError(status.message());
}

// cluster.hardware_options: known hardware, each once, a finite positive
// price, max_gpus within 0..the server's GPU limit.
absl::Status ValidateHardwareOptions(const shardplan::v1::ClusterSpec& cluster,
                                     const RequestLimits& limits) {
  std::vector<std::string> seen;
  for (int i = 0; i < cluster.hardware_options_size(); ++i) {
    const shardplan::v1::HardwareOption& o = cluster.hardware_options(i);
    const std::string at = absl::StrCat("cluster.hardware_options[", i, "]");
    if (!simulator::FindCatalogHardware(o.hardware()).ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(at, ".hardware is not a known hardware name, got ",
                       simulator::QuoteUserText(o.hardware())));
    }
    if (std::find(seen.begin(), seen.end(), o.hardware()) != seen.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(at, ".hardware ", simulator::QuoteUserText(o.hardware()),
                       " is listed twice"));
    }
    seen.push_back(o.hardware());
    if (!std::isfinite(o.price_per_gpu_hour()) || o.price_per_gpu_hour() <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(at,
                       ".price_per_gpu_hour must be a finite number > 0, "
                       "got ",
                       o.price_per_gpu_hour()));
    }
    if (o.max_gpus() < 0 || o.max_gpus() > limits.max_num_gpus) {
      return absl::InvalidArgumentError(absl::StrCat(
          at, ".max_gpus must be between 0 (the server limit) and ",
          limits.max_num_gpus, ", got ", o.max_gpus()));
    }
  }
  return absl::OkStatus();
}

// Both request types carry a model, a cluster and a workload: builds their
// cost model into out.cost_model and names it in out.model_name.
template <typename Request, typename Validated>
absl::Status SetCostModel(const Request& request, const RequestLimits& limits,
                          Validated& out) {
  RETURN_IF_ERROR(ValidateHardwareOptions(request.cluster(), limits));
  auto cost_model =
      BuildCostModel(request.model(), request.has_model(), request.cluster(),
                     request.has_cluster(), request.workload(), limits);
  if (!cost_model.ok()) return AsInvalidArgument(cost_model.status());
  out.cost_model = *std::move(cost_model);
  out.model_name = ModelName(request.model(), out.cost_model->problem());
  return absl::OkStatus();
}

// Errors about the running deployment's cluster and plan carry their paths
// under `current` ("cluster.num_gpus ..." -> "current.cluster.num_gpus ...").
absl::Status UnderCurrent(const absl::Status& status) {
  const absl::Status invalid = AsInvalidArgument(status);
  if (invalid.ok() || absl::StartsWith(invalid.message(), "current.")) {
    return invalid;
  }
  // The plan's checks name the cluster they were checked against.
  return absl::InvalidArgumentError(
      absl::StrReplaceAll(absl::StrCat("current.", invalid.message()),
                          {{" cluster.", " current.cluster."}}));
}

// options.max_transition_seconds / transition_weight, and PlanRequest.current
// checked against its own cluster: builds out.transition and
// out.current_plans. Needs out.cost_model (the new problem).
absl::Status SetTransition(const shardplan::v1::PlanRequest& request,
                           const RequestLimits& limits,
                           ValidatedPlanRequest& out) {
  const shardplan::v1::SearchOptions& options = request.options();
  const double max_seconds = options.max_transition_seconds();
  RETURN_IF_ERROR(CheckFiniteNonNegative("options.max_transition_seconds",
                                         max_seconds, " (0 = no limit)"));
  if (options.has_transition_weight()) {
    RETURN_IF_ERROR(CheckFiniteNonNegative("options.transition_weight",
                                           options.transition_weight(), ""));
  }
  if (!request.has_current()) {
    if (max_seconds > 0 || options.has_transition_weight()) {
      return absl::InvalidArgumentError(
          "options.max_transition_seconds and options.transition_weight need "
          "current (the running plan and its cluster)");
    }
    return absl::OkStatus();
  }
  const shardplan::v1::RunningDeployment& current = request.current();
  if (!current.has_plan() || !current.has_cluster()) {
    return absl::InvalidArgumentError(
        "current needs both current.plan and current.cluster (the plan that "
        "runs and the cluster it runs on)");
  }
  auto running_model =
      BuildCostModel(request.model(), request.has_model(), current.cluster(),
                     true, request.workload(), limits);
  if (!running_model.ok()) return UnderCurrent(running_model.status());
  auto plan = simulator::PlanDimsFromProto(current.plan());
  if (!plan.ok()) return UnderCurrent(plan.status());
  absl::Status fits = (*running_model)->ValidatePlan(*plan);
  if (!fits.ok()) return UnderCurrent(fits);
  simulator::RunningDeployment running;
  running.problem = (*running_model)->problem();
  running.plan = *plan;
  running.kv_cache_bytes_per_gpu =
      (*running_model)->Evaluate(*plan).kv_cache_bytes;
  running.removed_nodes.assign(current.removed_nodes().begin(),
                               current.removed_nodes().end());
  auto model = simulator::TransitionModel::Create(std::move(running),
                                                  out.cost_model->problem());
  if (!model.ok()) return AsInvalidArgument(model.status());
  auto objective = std::make_shared<simulator::TransitionObjective>();
  objective->model = *std::move(model);
  objective->max_seconds = max_seconds;
  if (options.has_transition_weight()) {
    objective->weight_per_s = options.transition_weight();
  }
  out.transition = std::move(objective);
  for (const simulator::PlanDims& p : simulator::AdaptRunningPlan(
           *plan, out.cost_model->problem().cluster.num_gpus)) {
    if (out.cost_model->ValidatePlan(p).ok()) out.current_plans.push_back(p);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckProblemLimits(const simulator::Problem& problem,
                                const RequestLimits& limits) {
  if (limits.max_num_gpus > 0 &&
      problem.cluster.num_gpus > limits.max_num_gpus) {
    return absl::InvalidArgumentError(
        absl::StrCat("cluster.num_gpus ", problem.cluster.num_gpus,
                     " exceeds the server limit ", limits.max_num_gpus,
                     " (--max_num_gpus)"));
  }
  if (limits.max_layers > 0 && problem.model.layers > limits.max_layers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model.num_layers ", problem.model.layers, " exceeds the server limit ",
        limits.max_layers, " (--max_layers)"));
  }
  if (limits.max_experts > 0 && problem.model.experts > limits.max_experts) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model.num_experts ", problem.model.experts,
        " exceeds the server limit ", limits.max_experts, " (--max_experts)"));
  }
  return absl::OkStatus();
}

std::string MethodLabel(const shardplan::v1::PlanRequest& request) {
  const absl::StatusOr<policy::SearchMethod> method =
      policy::ParseSearchMethod(request.options().method());
  return method.ok() ? std::string(policy::SearchMethodName(*method))
                     : "unknown";
}

absl::StatusOr<ValidatedPlanRequest> ValidatePlanRequest(
    const shardplan::v1::PlanRequest& request, const RequestLimits& limits) {
  ValidatedPlanRequest out;
  const shardplan::v1::SearchOptions& options = request.options();
  // Options first: they are cheap, and their messages do not depend on the
  // specs.
  ASSIGN_OR_RETURN(out.method, policy::ParseSearchMethod(options.method()));
  out.method_defaulted = options.method().empty();
  if (options.max_evaluations() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.max_evaluations must be >= 0 (0 = server default), got ",
        options.max_evaluations()));
  }
  if (options.max_evaluations() > limits.max_evaluations_limit) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.max_evaluations must be <= ", limits.max_evaluations_limit,
        " (--max_evaluations_limit), got ", options.max_evaluations()));
  }
  const double max_seconds = options.max_seconds();
  RETURN_IF_ERROR(CheckFiniteNonNegative("options.max_seconds", max_seconds,
                                         " (0 = server default)"));
  if (max_seconds > limits.max_seconds_limit) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.max_seconds must be <= ", limits.max_seconds_limit,
        " (--max_seconds_limit), got ", max_seconds));
  }
  out.max_evaluations = options.max_evaluations() > 0
                            ? options.max_evaluations()
                            : std::min(limits.default_max_evaluations,
                                       limits.max_evaluations_limit);
  out.max_seconds = max_seconds > 0 ? max_seconds
                                    : std::min(limits.default_max_seconds,
                                               limits.max_seconds_limit);
  ASSIGN_OR_RETURN(out.estimate, policy::ParseEstimate(options.objective()));
  ASSIGN_OR_RETURN(out.goal, policy::ParseCapacityGoal(options.goal()));
  const bool capacity_goal = out.goal != policy::CapacityGoal::kMaxThroughput;
  const absl::string_view goal = policy::CapacityGoalName(out.goal);
  if (capacity_goal && !(request.workload().request_rate() > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.goal ", goal,
        " needs workload.request_rate > 0 (the load to carry), got ",
        request.workload().request_rate()));
  }
  if (out.goal == policy::CapacityGoal::kMinCost &&
      request.cluster().hardware_options_size() == 0) {
    return absl::InvalidArgumentError(
        "options.goal min_cost needs cluster.hardware_options (the GPU types "
        "and their prices), got none");
  }
  if (options.top_n() < 0 || options.top_n() > kMaxTopN) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.top_n must be between 0 (= ", kDefaultTopN,
                     ") and ", kMaxTopN, ", got ", options.top_n()));
  }
  out.top_n = options.top_n() > 0 ? options.top_n() : kDefaultTopN;
  ASSIGN_OR_RETURN(out.disaggregation,
                   policy::ParseDisaggregation(options.disaggregation()));
  out.seed = options.seed();
  out.warm_start = !options.has_warm_start() || options.warm_start();

  if (out.goal == policy::CapacityGoal::kMinCost) {
    // The cluster's hardware and size are the options'; the first one
    // stands in for the validation of the model and the workload.
    shardplan::v1::PlanRequest stand_in = request;
    shardplan::v1::ClusterSpec* cluster = stand_in.mutable_cluster();
    const shardplan::v1::HardwareOption& first = cluster->hardware_options(0);
    cluster->set_hardware(first.hardware());
    cluster->clear_hardware_spec();
    cluster->clear_node_groups();
    cluster->set_num_gpus(first.max_gpus() > 0 ? first.max_gpus()
                                               : limits.max_num_gpus);
    RETURN_IF_ERROR(SetCostModel(stand_in, limits, out));
  } else {
    RETURN_IF_ERROR(SetCostModel(request, limits, out));
  }
  if (capacity_goal) {
    if (request.has_current()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "options.goal ", goal, " plans a new deployment; drop current"));
    }
    auto capacity = std::make_shared<CapacityRequest>();
    capacity->goal = out.goal;
    capacity->model = request.model();
    capacity->workload = request.workload();
    capacity->disaggregation = out.disaggregation;
    const simulator::ClusterDims& dims = out.cost_model->problem().cluster;
    if (out.goal == policy::CapacityGoal::kMinCost) {
      for (const auto& o : request.cluster().hardware_options()) {
        capacity->options.push_back(
            {o.hardware(), o.price_per_gpu_hour(),
             o.max_gpus() > 0 ? o.max_gpus() : limits.max_num_gpus,
             request.cluster().gpus_per_node()});
      }
    } else {
      // min_gpus: the cluster's hardware, up to its num_gpus.
      capacity->options.push_back({dims.hardware.name,
                                   PricePerGpuHour(request.cluster()),
                                   dims.num_gpus, dims.gpus_per_node});
    }
    out.capacity = std::move(capacity);
    return out;
  }
  RETURN_IF_ERROR(SetTransition(request, limits, out));
  return out;
}

absl::StatusOr<ValidatedEvaluateRequest> ValidateEvaluateRequest(
    const shardplan::v1::EvaluateRequest& request) {
  return ValidateEvaluateRequest(request, RequestLimits());
}

absl::StatusOr<ValidatedEvaluateRequest> ValidateEvaluateRequest(
    const shardplan::v1::EvaluateRequest& request,
    const RequestLimits& limits) {
  ValidatedEvaluateRequest out;
  RETURN_IF_ERROR(SetCostModel(request, limits, out));
  if (!request.has_plan()) {
    return absl::InvalidArgumentError(
        "plan is required: set at least plan.dp, plan.tp and plan.pp (their "
        "product must equal "
        "cluster.num_gpus)");
  }
  auto plan = simulator::PlanDimsFromProto(request.plan());
  if (!plan.ok()) return AsInvalidArgument(plan.status());
  out.plan = *plan;
  absl::Status valid = out.cost_model->ValidatePlan(out.plan);
  if (!valid.ok()) return AsInvalidArgument(valid);
  return out;
}

double PricePerGpuHour(const shardplan::v1::ClusterSpec& cluster) {
  for (const shardplan::v1::HardwareOption& o : cluster.hardware_options()) {
    if (o.hardware() == cluster.hardware()) return o.price_per_gpu_hour();
  }
  return 0;
}

}  // namespace shardplan::server
