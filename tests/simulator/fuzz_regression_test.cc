// Regression tests for what the libFuzzer targets (tests/fuzz) found, and a
// replay of their seed corpus and saved reproducers (tests/fuzz/regressions)
// through the simulator's request path with the same invariants, so that the
// normal gcc build checks them too.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/spec_text.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/cost_model.h"
#include "simulator/spec.h"
#include "simulator/types.h"

namespace shardplan::simulator {
namespace {

using ::testing::HasSubstr;

const std::string kFuzzDir = std::string(SHARDPLAN_SOURCE_DIR) + "/tests/fuzz";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

// The invariants fuzz_check.h enforces, as test expectations.
void ExpectEvaluationInvariants(const Evaluation& e, const Problem& problem,
                                const std::string& what) {
  SCOPED_TRACE(what);
  auto finite_non_negative = [](double x) {
    return std::isfinite(x) && x >= 0;
  };
  EXPECT_TRUE(finite_non_negative(e.output_tokens_per_s))
      << e.output_tokens_per_s;
  EXPECT_TRUE(finite_non_negative(e.weights_bytes)) << e.weights_bytes;
  EXPECT_TRUE(finite_non_negative(e.kv_cache_bytes)) << e.kv_cache_bytes;
  EXPECT_TRUE(finite_non_negative(e.activations_bytes)) << e.activations_bytes;
  for (int op = 0; op < kNumOpKinds; ++op) {
    for (const OpCost& c : {e.decode[op], e.prefill[op]}) {
      EXPECT_TRUE(finite_non_negative(c.compute_seconds) &&
                  finite_non_negative(c.memory_seconds) &&
                  finite_non_negative(c.comm_seconds))
          << OpKindName(static_cast<OpKind>(op)) << ": " << c.compute_seconds
          << " " << c.memory_seconds << " " << c.comm_seconds;
    }
  }
  if (!e.feasible) {
    EXPECT_NE(e.reason, InfeasibleReason::kNone);
    return;
  }
  EXPECT_GT(e.output_tokens_per_s, 0);
  EXPECT_GT(e.batch_size, 0);
  EXPECT_LE(e.weights_bytes + e.kv_cache_bytes + e.activations_bytes,
            e.capacity_bytes * (1 + 1e-9));
  if (problem.workload.max_ttft_seconds > 0) {
    EXPECT_LE(e.ttft_seconds, problem.workload.max_ttft_seconds * (1 + 1e-9));
  }
  if (problem.workload.max_tpot_seconds > 0) {
    EXPECT_LE(e.tpot_seconds, problem.workload.max_tpot_seconds * (1 + 1e-9));
  }
}

// A hardware spec with every figure at the smallest value the validation
// accepts.
v1::HardwareSpec SmallestHardware() {
  v1::HardwareSpec hw;
  hw.set_name("slowest");
  hw.set_peak_bf16_flops_per_s(1e9);
  hw.set_hbm_bytes(1e6);
  hw.set_hbm_bytes_per_s(1e6);
  hw.set_intra_node_bytes_per_s(1e6);
  hw.set_inter_node_bytes_per_s(1e6);
  hw.set_intra_node_latency_s(1.0);
  hw.set_inter_node_latency_s(1.0);
  return hw;
}

absl::Status ProblemStatus(const v1::HardwareSpec& hw) {
  v1::ModelSource model;
  model.set_catalog_name("llama-3.1-8b");
  v1::ClusterSpec cluster;
  *cluster.mutable_hardware_spec() = hw;
  cluster.set_num_gpus(8);
  cluster.set_gpus_per_node(8);
  v1::Workload workload;
  workload.set_input_tokens(1024);
  workload.set_output_tokens(128);
  return ProblemFromProto(model, cluster, workload).status();
}

// fuzz_cost_model found hardware figures of 1e-174 B/s and 1e-177 FLOP/s
// accepted as "positive": the per-operator seconds (floats) of the prediction
// overflowed to infinity.
TEST(FuzzRegressionTest, TinyHardwareFiguresFromTheFuzzerAreRejected) {
  const struct {
    const char* file;
    const char* message;
  } kCases[] = {
      {"tiny_hbm_bandwidth.json",
       "cluster.hardware_spec.hbm_bytes_per_s must be >= "},
      {"tiny_bf16_peak.json",
       "cluster.hardware_spec.peak_bf16_flops_per_s must be >= "},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.file);
    v1::EvaluateRequest request;
    ASSERT_TRUE(
        spec_text::Parse(
            ReadFile(kFuzzDir + "/regressions/fuzz_spec_text/" + c.file),
            &request)
            .ok());
    absl::StatusOr<Problem> problem = ProblemFromProto(
        request.model(), request.cluster(), request.workload());
    EXPECT_EQ(problem.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(problem.status().message(), HasSubstr(c.message));
  }
}

TEST(FuzzRegressionTest, EveryHardwareFigureHasALowerBound) {
  EXPECT_TRUE(ProblemStatus(SmallestHardware()).ok())
      << ProblemStatus(SmallestHardware());
  const struct {
    void (v1::HardwareSpec::*set)(double);
    const char* field;
  } kFields[] = {
      {&v1::HardwareSpec::set_peak_bf16_flops_per_s, "peak_bf16_flops_per_s"},
      {&v1::HardwareSpec::set_peak_fp8_flops_per_s, "peak_fp8_flops_per_s"},
      {&v1::HardwareSpec::set_peak_fp4_flops_per_s, "peak_fp4_flops_per_s"},
      {&v1::HardwareSpec::set_hbm_bytes, "hbm_bytes"},
      {&v1::HardwareSpec::set_hbm_bytes_per_s, "hbm_bytes_per_s"},
      {&v1::HardwareSpec::set_intra_node_bytes_per_s, "intra_node_bytes_per_s"},
      {&v1::HardwareSpec::set_inter_node_bytes_per_s, "inter_node_bytes_per_s"},
  };
  for (const auto& f : kFields) {
    SCOPED_TRACE(f.field);
    v1::HardwareSpec hw = SmallestHardware();
    (hw.*f.set)(1e-300);
    const absl::Status status = ProblemStatus(hw);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(),
                HasSubstr(std::string("cluster.hardware_spec.") + f.field +
                          " must be >= "));
  }
  // The FP8 and FP4 peaks stay optional.
  v1::HardwareSpec hw = SmallestHardware();
  hw.set_peak_fp8_flops_per_s(0);
  hw.set_peak_fp4_flops_per_s(0);
  EXPECT_TRUE(ProblemStatus(hw).ok());
}

TEST(FuzzRegressionTest, SlowestAcceptedHardwareGivesAFiniteBreakdown) {
  v1::ModelSource model;
  model.set_catalog_name("llama-3.1-405b");
  v1::ClusterSpec cluster;
  *cluster.mutable_hardware_spec() = SmallestHardware();
  cluster.mutable_hardware_spec()->set_hbm_bytes(1e14);  // let the weights fit
  cluster.set_num_gpus(16);
  cluster.set_gpus_per_node(8);
  v1::Workload workload;
  workload.set_input_tokens(1 << 20);
  workload.set_output_tokens(1 << 20);
  workload.set_concurrency(4096);
  absl::StatusOr<Problem> problem = ProblemFromProto(model, cluster, workload);
  ASSERT_TRUE(problem.ok()) << problem.status();
  absl::StatusOr<std::unique_ptr<const CostModel>> cost_model =
      CostModel::Create(*problem);
  ASSERT_TRUE(cost_model.ok()) << cost_model.status();
  PlanDims plan;
  plan.tp = 8;
  plan.pp = 2;
  ASSERT_TRUE((*cost_model)->ValidatePlan(plan).ok());
  const Evaluation e = (*cost_model)->Evaluate(plan);
  ExpectEvaluationInvariants(e, *problem, "slowest hardware");
}

// Every seed and reproducer that is a valid EvaluateRequest evaluates within
// the invariants, and the plan the server would send back is accepted again.
TEST(FuzzRegressionTest, SeedCorpusAndReproducersKeepTheInvariants) {
  int evaluated = 0;
  for (const char* dir :
       {"corpus/fuzz_spec_text", "corpus/fuzz_server_validation",
        "regressions/fuzz_spec_text"}) {
    for (const auto& entry :
         std::filesystem::directory_iterator(kFuzzDir + "/" + dir)) {
      const std::string path = entry.path().string();
      v1::EvaluateRequest request;
      if (!spec_text::Parse(ReadFile(path), &request).ok()) continue;
      absl::StatusOr<Problem> problem = ProblemFromProto(
          request.model(), request.cluster(), request.workload());
      absl::StatusOr<PlanDims> plan = PlanDimsFromProto(request.plan());
      if (!problem.ok() || !plan.ok()) continue;
      absl::StatusOr<std::unique_ptr<const CostModel>> cost_model =
          CostModel::Create(*problem);
      ASSERT_TRUE(cost_model.ok()) << path << ": " << cost_model.status();
      if (!(*cost_model)->ValidatePlan(*plan).ok()) continue;
      const Evaluation e = (*cost_model)->Evaluate(*plan);
      ExpectEvaluationInvariants(e, *problem, path);
      absl::StatusOr<PlanDims> round_trip =
          PlanDimsFromProto(PlanToProto(*plan, *problem));
      ASSERT_TRUE(round_trip.ok()) << path << ": " << round_trip.status();
      EXPECT_TRUE((*cost_model)->ValidatePlan(*round_trip).ok()) << path;
      EXPECT_NEAR((*cost_model)->Evaluate(*round_trip).output_tokens_per_s,
                  e.output_tokens_per_s, 1e-9 * e.output_tokens_per_s)
          << path;
      ++evaluated;
    }
  }
  // The valid requests among the seeds (evaluate_*.json/yaml in both corpora).
  EXPECT_GE(evaluated, 8);
}

}  // namespace
}  // namespace shardplan::simulator
