// libFuzzer target: arbitrary bytes as a Hugging Face config.json. An imported
// spec must pass ModelDimsFromSpec and give a CostModel on a small H100 cluster
// whose Megatron-style plan (tp within the node, when the heads allow it)
// evaluates with the invariants of fuzz_check.h.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/cost_model.h"
#include "simulator/spec.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

namespace sim = shardplan::simulator;
namespace v1 = shardplan::v1;

void EvaluateOnSmallCluster(const v1::ModelSpec& spec) {
  v1::ModelSource source;
  *source.mutable_spec() = spec;
  v1::ClusterSpec cluster;
  cluster.set_hardware("h100-sxm-80gb");
  cluster.set_num_gpus(8);
  cluster.set_gpus_per_node(8);
  v1::Workload workload;
  workload.set_input_tokens(1024);
  workload.set_output_tokens(128);
  absl::StatusOr<sim::Problem> problem =
      sim::ProblemFromProto(source, cluster, workload);
  shardplan::fuzz::Require(problem.ok(),
                           "an imported HF spec makes a valid problem");
  auto model = sim::CostModel::Create(*std::move(problem));
  shardplan::fuzz::Require(model.ok(),
                           "CostModel::Create on an imported HF spec");
  for (int tp : {8, 4, 2, 1}) {
    sim::PlanDims plan;
    plan.tp = tp;
    plan.dp = 8 / tp;
    if ((*model)->ValidatePlan(plan).ok()) {
      shardplan::fuzz::EvaluateAndCheck(**model, plan);
      return;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<v1::ModelSpec> spec = sim::ModelSpecFromHfConfig(text);
  if (!spec.ok()) return 0;
  absl::StatusOr<sim::ModelDims> dims =
      sim::ModelDimsFromSpec(*spec, "model.hf_config_json");
  if (!dims.ok()) return 0;
  (void)sim::ModelSpecFromDims(*dims).ByteSizeLong();
  EvaluateOnSmallCluster(*spec);
  // The same text through a request's model source.
  v1::ModelSource source;
  source.set_hf_config_json(std::string(text));
  (void)sim::ResolveModel(source);
  return 0;
}
