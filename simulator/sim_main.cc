// shardplan-sim: the offline cost model.
//   shardplan-sim evaluate --request FILE   predicts the request's plan
//   shardplan-sim megatron --request FILE   predicts the Megatron-heuristic
//   plan
// FILE is an EvaluateRequest in proto3 JSON or YAML ("-" reads stdin); the
// EvaluateResponse is printed as JSON on stdout. Exit codes: 0 ok, 2 bad input
// (message with the field path on stderr), 1 internal error.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"
#include "proto/guarded_main.h"
#include "proto/spec_text.h"
#include "proto/status_macros.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/calibration.h"
#include "simulator/cost_model.h"
#include "simulator/megatron.h"
#include "simulator/spec.h"
#include "simulator/traffic_spec.h"

#ifndef SHARDPLAN_VERSION
#define SHARDPLAN_VERSION "0.0.0"
#endif

namespace shardplan::simulator {
namespace {

constexpr int kExitBadInput = 2;
constexpr int kExitInternal = 1;

absl::StatusOr<std::string> ReadInput(const std::string& path) {
  std::ostringstream buffer;
  if (path == "-") {
    buffer << std::cin.rdbuf();
    return buffer.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("--request: cannot open \"", path, "\""));
  }
  buffer << in.rdbuf();
  if (in.bad()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--request: cannot read \"", path, "\""));
  }
  return buffer.str();
}

enum class Mode { kEvaluate, kMegatron };

// The response as JSON with every field present (a false `feasible` or a 0
// `replica` is information here), indented by two spaces unless `compact`.
std::string ResponseJson(const shardplan::v1::EvaluateResponse& response,
                         bool compact) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  std::string out;
  if (!google::protobuf::util::MessageToJsonString(response, &out, options)
           .ok()) {
    return spec_text::ToJson(response, !compact);
  }
  const nlohmann::ordered_json parsed =
      nlohmann::ordered_json::parse(out, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return out;
  return parsed.dump(compact ? -1 : 2);
}

absl::StatusOr<shardplan::v1::EvaluateResponse> Run(Mode mode,
                                                    const std::string& path) {
  ASSIGN_OR_RETURN(const std::string text, ReadInput(path));
  shardplan::v1::EvaluateRequest request;
  RETURN_IF_ERROR(Annotate(spec_text::Parse(text, &request),
                           path == "-" ? "<stdin>" : path));
  ASSIGN_OR_RETURN(const shardplan::v1::ModelSpec model_spec,
                   ResolveModel(request.model()));
  ASSIGN_OR_RETURN(
      Problem problem,
      ProblemFromProto(request.model(), request.cluster(), request.workload()));
  // The workload's engine picks the calibration profile (as in the server).
  ASSIGN_OR_RETURN(
      const CalibrationProfile profile,
      problem.workload.calibration_profile.empty()
          ? EngineAgnosticCalibrationProfile()
          : FindCalibrationProfile(problem.workload.calibration_profile));
  ASSIGN_OR_RETURN(std::unique_ptr<const CostModel> cost_model,
                   CostModel::Create(std::move(problem), profile.calibration));
  PlanDims plan;
  if (mode == Mode::kMegatron) {
    plan = MegatronPlan(*cost_model);
  } else {
    ASSIGN_OR_RETURN(plan, PlanDimsFromProto(request.plan()));
  }
  const absl::Status valid = cost_model->ValidatePlan(plan);
  if (!valid.ok()) {
    if (mode == Mode::kMegatron) {
      return absl::InternalError(absl::StrCat(
          "the Megatron plan failed validation: ", valid.message()));
    }
    return valid;
  }
  const Evaluation evaluation = cost_model->Evaluate(plan);
  shardplan::v1::EvaluateResponse response;
  *response.mutable_plan() = PlanToProto(plan, cost_model->problem());
  *response.mutable_prediction() =
      PredictionToProto(evaluation, cost_model->problem());
  // As EvaluatePlan: a workload with a request rate gets its percentiles,
  // maxRequestRate and goodput (the price of cluster.hardware among
  // cluster.hardwareOptions, when given, fills the cost fields).
  double price_per_gpu_hour = 0;
  for (const shardplan::v1::HardwareOption& o :
       request.cluster().hardware_options()) {
    if (o.hardware() == request.cluster().hardware())
      price_per_gpu_hour = o.price_per_gpu_hour();
  }
  AddTrafficPrediction(*cost_model, plan, price_per_gpu_hour,
                       response.mutable_prediction());
  *response.mutable_model() = model_spec;
  return response;
}

int Main(int argc, char** argv) {
  CLI::App app{
      "shardplan-sim: the offline shardplan cost model. Reads an "
      "EvaluateRequest (proto3 "
      "JSON or YAML: model {catalogName | spec | hfConfigJson}, cluster, "
      "workload, plan) and "
      "prints the EvaluateResponse (normalised plan, prediction, resolved "
      "model) as JSON.\n"
      "Exit codes: 0 ok, 2 invalid input (the message names the field), 1 "
      "internal error.",
      "shardplan-sim"};
  app.set_version_flag("--version",
                       absl::StrCat("shardplan-sim ", SHARDPLAN_VERSION,
                                    " (cost model v", kCostModelVersion, ")"));
  app.require_subcommand(1);
  app.fallthrough();  // --compact also after the subcommand
  bool compact = false;
  app.add_flag("--compact", compact, "Print the JSON on one line");

  std::string evaluate_path;
  CLI::App* evaluate = app.add_subcommand(
      "evaluate",
      "Predict throughput, latency and memory of the request's plan");
  evaluate
      ->add_option("--request,-r", evaluate_path,
                   "EvaluateRequest file (JSON/YAML), - = stdin")
      ->required();
  evaluate->footer(
      "Example:\n  shardplan-sim evaluate --request "
      "tests/simulator/data/llama70b_16gpu.yaml");

  std::string megatron_path;
  CLI::App* megatron =
      app.add_subcommand("megatron",
                         "Predict the Megatron-heuristic plan for the "
                         "request's model/cluster/workload "
                         "(the request's plan is ignored)");
  megatron
      ->add_option("--request,-r", megatron_path,
                   "EvaluateRequest file (JSON/YAML), - = stdin")
      ->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kExitBadInput;
  }

  const Mode mode = evaluate->parsed() ? Mode::kEvaluate : Mode::kMegatron;
  const std::string& path =
      mode == Mode::kEvaluate ? evaluate_path : megatron_path;
  const absl::StatusOr<shardplan::v1::EvaluateResponse> response =
      Run(mode, path);
  if (!response.ok()) {
    std::cerr << "shardplan-sim: " << response.status().message() << "\n";
    const absl::StatusCode code = response.status().code();
    return code == absl::StatusCode::kInvalidArgument ||
                   code == absl::StatusCode::kNotFound
               ? kExitBadInput
               : kExitInternal;
  }
  std::cout << ResponseJson(*response, compact) << std::endl;
  return 0;
}

}  // namespace
}  // namespace shardplan::simulator

int main(int argc, char** argv) {
  return shardplan::GuardedMain("shardplan-sim", 1, [&] {
    return shardplan::simulator::Main(argc, argv);
  });
}
