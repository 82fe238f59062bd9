// Problems for the policy tests: catalog models on H100 clusters, built through
// the real spec conversion and CostModel.
#ifndef SHARDPLAN_TESTS_POLICY_TEST_UTIL_H_
#define SHARDPLAN_TESTS_POLICY_TEST_UTIL_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "policy/plan_space.h"
#include "policy/searcher.h"
#include "proto/status_macros.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/cost_model.h"
#include "simulator/spec.h"

namespace shardplan::policy::testing {

inline absl::StatusOr<std::unique_ptr<const simulator::CostModel>>
MakeCostModel(const std::string& model, int gpus, int input_tokens = 2048,
              int output_tokens = 512, int concurrency = 0,
              double max_ttft_ms = 0, double max_tpot_ms = 0,
              const std::string& weight_dtype = "",
              const std::string& hardware = "h100-sxm-80gb") {
  shardplan::v1::ModelSource source;
  source.set_catalog_name(model);
  shardplan::v1::ClusterSpec cluster;
  cluster.set_hardware(hardware);
  cluster.set_num_gpus(gpus);
  cluster.set_gpus_per_node(gpus < 8 ? gpus : 8);
  shardplan::v1::Workload workload;
  workload.set_input_tokens(input_tokens);
  workload.set_output_tokens(output_tokens);
  workload.set_concurrency(concurrency);
  workload.set_max_ttft_ms(max_ttft_ms);
  workload.set_max_tpot_ms(max_tpot_ms);
  workload.set_weight_dtype(weight_dtype);
  ASSIGN_OR_RETURN(simulator::Problem problem,
                   simulator::ProblemFromProto(source, cluster, workload));
  return simulator::CostModel::Create(std::move(problem));
}

// The monotone-in-GPUs checks: each model on N GPUs and on 2N (FP8 weights,
// ISL 2048, OSL 512, TPOT <= 40 ms), MoE and dense.
inline const std::vector<std::pair<std::string, int>>& MonotoneCases() {
  static const auto* cases = new std::vector<std::pair<std::string, int>>{
      {"qwen3-235b-a22b", 8}, {"deepseek-v3", 16}, {"llama-3.1-70b", 8}};
  return *cases;
}
struct SmallAndDoubled {
  std::unique_ptr<const simulator::CostModel> small, doubled;
};
inline absl::StatusOr<SmallAndDoubled> MakeSmallAndDoubled(
    const std::string& model, int gpus) {
  SmallAndDoubled out;
  ASSIGN_OR_RETURN(out.small,
                   MakeCostModel(model, gpus, 2048, 512, 0, 0, 40, "fp8"));
  ASSIGN_OR_RETURN(out.doubled,
                   MakeCostModel(model, 2 * gpus, 2048, 512, 0, 0, 40, "fp8"));
  return out;
}

// A disaggregated problem whose prefill instance's operator dims decide
// feasibility: llama-3.1-8b on 8 H100s, 16384-token prompts and a 1 s TTFT
// SLO, so that a prompt's prefill time is most of the budget. Which dims help
// is the cost model's answer (the tests check it), not written here. (At 8192
// tokens and 500 ms, since the all-reduce is priced at the engines' measured
// kernels, Megatron's prefill dims tie with the genetic search's best.)
inline absl::StatusOr<std::unique_ptr<const simulator::CostModel>>
MakePrefillBoundCostModel() {
  return MakeCostModel("llama-3.1-8b", 8, 16384, 256, 0, /*max_ttft_ms=*/1000);
}

// qwen3-235b-a22b (FP8) on 16 H100s, ISL 2048 / OSL 512: a joint space of
// about two thousand tuples, under PlanSpace::kLargeJointSpace, where rl's
// start-of-search tuple sweep runs.
inline absl::StatusOr<std::unique_ptr<const simulator::CostModel>>
MakeSmallDisaggregatedMoeCostModel() {
  return MakeCostModel("qwen3-235b-a22b", 16, 2048, 512, 0, 0, 0, "fp8");
}
// A disaggregated search of `max_evaluations` keeping a top-64 elite.
inline SearchOptions DisaggregatedSearchOptions(int max_evaluations) {
  SearchOptions options;
  options.disaggregated = true;
  options.max_evaluations = max_evaluations;
  options.elite_size = 64;
  return options;
}

// moe-1.6t on 256 H100s, ISL 128 / OSL 256, TTFT <= 1 s: a joint space of
// about a hundred thousand (pool split, prefill layout, decode layout) tuples.
inline absl::StatusOr<std::unique_ptr<const simulator::CostModel>>
MakeLargeDisaggregatedCostModel() {
  return MakeCostModel("moe-1.6t", 256, 128, 256, 0, /*max_ttft_ms=*/1000);
}
// Its one prefill and one decode instance of dp128 ep64 (decode batch 0: the
// best).
inline simulator::PlanDims OnePrefillOneDecodeDp128Ep64(int prefill_batch) {
  simulator::PlanDims plan;
  plan.disaggregated = true;
  plan.prefill_instances = 1;
  plan.decode_instances = 1;
  plan.prefill.dp = 128;
  plan.prefill.ep = 64;
  plan.prefill.batch_size = prefill_batch;
  plan.dp = 128;
  plan.ep = 64;
  return plan;
}

// A problem's cost model and plan space (the space points into the model, so
// they travel together).
struct ModelAndSpace {
  std::unique_ptr<const simulator::CostModel> model;
  std::unique_ptr<const PlanSpace> space;
};

inline absl::StatusOr<ModelAndSpace> MakeModelAndSpace(const std::string& model,
                                                       int gpus,
                                                       int input_tokens = 2048,
                                                       int output_tokens = 512,
                                                       int concurrency = 0) {
  ModelAndSpace out;
  ASSIGN_OR_RETURN(out.model, MakeCostModel(model, gpus, input_tokens,
                                            output_tokens, concurrency));
  ASSIGN_OR_RETURN(out.space, PlanSpace::Create(*out.model));
  return out;
}

}  // namespace shardplan::policy::testing

#endif  // SHARDPLAN_TESTS_POLICY_TEST_UTIL_H_
