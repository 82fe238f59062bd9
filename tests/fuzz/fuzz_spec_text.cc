// libFuzzer target: arbitrary bytes as a spec file (proto3 JSON or YAML) parsed
// into an EvaluateRequest and a PlanRequest; whatever parses goes down the
// simulator's request path (ProblemFromProto, PlanDimsFromProto,
// CostModel::Create/ValidatePlan/Evaluate, back to proto) with the invariants
// of fuzz_check.h.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "proto/spec_text.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/cost_model.h"
#include "simulator/spec.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

namespace sim = shardplan::simulator;
namespace spec_text = shardplan::spec_text;
namespace v1 = shardplan::v1;

std::unique_ptr<const sim::CostModel> BuildModel(const v1::ModelSource& model,
                                                 const v1::ClusterSpec& cluster,
                                                 const v1::Workload& workload) {
  absl::StatusOr<sim::Problem> problem =
      sim::ProblemFromProto(model, cluster, workload);
  if (!problem.ok()) return nullptr;
  auto cost_model = sim::CostModel::Create(*std::move(problem));
  if (!cost_model.ok()) return nullptr;
  return *std::move(cost_model);
}

void RunEvaluateRequest(absl::string_view text) {
  v1::EvaluateRequest request;
  if (!spec_text::Parse(text, &request).ok()) return;
  (void)spec_text::ToJson(request);
  absl::StatusOr<sim::PlanDims> plan = sim::PlanDimsFromProto(request.plan());
  std::unique_ptr<const sim::CostModel> model =
      BuildModel(request.model(), request.cluster(), request.workload());
  if (model == nullptr || !plan.ok()) return;
  if (!model->ValidatePlan(*plan).ok()) return;
  shardplan::fuzz::EvaluateAndCheck(*model, *plan);
}

void RunPlanRequest(absl::string_view text) {
  v1::PlanRequest request;
  if (!spec_text::Parse(text, &request).ok()) return;
  (void)spec_text::ToJson(request, /*pretty=*/false);
  // The search's first candidate is the default plan: all data parallel.
  std::unique_ptr<const sim::CostModel> model =
      BuildModel(request.model(), request.cluster(), request.workload());
  if (model == nullptr) return;
  sim::PlanDims plan;
  plan.dp = model->problem().cluster.num_gpus;
  if (model->ValidatePlan(plan).ok())
    shardplan::fuzz::EvaluateAndCheck(*model, plan);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  RunEvaluateRequest(text);
  RunPlanRequest(text);
  return 0;
}
