#include "server/validation.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/test_util.h"

namespace shardplan::server {
namespace {

using ::testing::HasSubstr;
using testing::MakePlanRequest;
using ::testing::StartsWith;

RequestLimits Limits() {
  RequestLimits limits;
  limits.default_max_evaluations = 500;
  limits.max_evaluations_limit = 1000;
  limits.default_max_seconds = 5;
  limits.max_seconds_limit = 60;
  return limits;
}

absl::Status Check(const shardplan::v1::PlanRequest& request) {
  return ValidatePlanRequest(request, Limits()).status();
}

TEST(ValidationTest, ValidRequestGetsDefaults) {
  shardplan::v1::PlanRequest request = MakePlanRequest("llama-3.1-8b", 8);
  request.mutable_options()->Clear();
  absl::StatusOr<ValidatedPlanRequest> validated =
      ValidatePlanRequest(request, Limits());
  ASSERT_TRUE(validated.ok()) << validated.status();
  EXPECT_EQ(validated->method, policy::SearchMethod::kRl);
  EXPECT_EQ(validated->max_evaluations, 500);
  EXPECT_DOUBLE_EQ(validated->max_seconds, 5);
  EXPECT_TRUE(validated->warm_start);
  EXPECT_EQ(validated->model_name, "llama-3.1-8b");
  EXPECT_EQ(validated->cost_model->problem().cluster.num_gpus, 8);
}

TEST(ValidationTest, NoEngineMeansTheEngineAgnosticCalibration) {
  // The default profile's TensorRT-LLM disaggregated overhead belongs to one
  // Dynamo deployment; a request naming no engine gets the engine-agnostic one
  // (as the cost model's DefaultCalibration), naming trtllm gets trtllm's.
  shardplan::v1::PlanRequest request = MakePlanRequest("llama-3.1-8b", 8);
  absl::StatusOr<ValidatedPlanRequest> agnostic =
      ValidatePlanRequest(request, Limits());
  ASSERT_TRUE(agnostic.ok()) << agnostic.status();
  EXPECT_DOUBLE_EQ(
      agnostic->cost_model->calibration().disagg_request_overhead_seconds,
      simulator::DefaultCalibration().disagg_request_overhead_seconds);
  request.mutable_workload()->set_engine("trtllm");
  absl::StatusOr<ValidatedPlanRequest> trtllm =
      ValidatePlanRequest(request, Limits());
  ASSERT_TRUE(trtllm.ok()) << trtllm.status();
  EXPECT_GT(
      trtllm->cost_model->calibration().disagg_request_overhead_seconds,
      agnostic->cost_model->calibration().disagg_request_overhead_seconds);
}

TEST(ValidationTest, ObjectiveIsExpectedOrConservative) {
  shardplan::v1::PlanRequest request = MakePlanRequest("llama-3.1-8b", 8);
  absl::StatusOr<ValidatedPlanRequest> validated =
      ValidatePlanRequest(request, Limits());
  ASSERT_TRUE(validated.ok()) << validated.status();
  EXPECT_EQ(validated->estimate, policy::Estimate::kExpected);
  request.mutable_options()->set_objective("conservative");
  validated = ValidatePlanRequest(request, Limits());
  ASSERT_TRUE(validated.ok()) << validated.status();
  EXPECT_EQ(validated->estimate, policy::Estimate::kConservative);
  request.mutable_options()->set_objective("expected");
  EXPECT_TRUE(Check(request).ok());
  request.mutable_options()->set_objective("optimistic");
  const absl::Status status = Check(request);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "options.objective must be one of expected, conservative; got "
            "\"optimistic\"");
}

TEST(ValidationTest, DisaggregationIsAutoOffOrOnly) {
  shardplan::v1::PlanRequest request = MakePlanRequest("llama-3.1-8b", 8);
  absl::StatusOr<ValidatedPlanRequest> validated =
      ValidatePlanRequest(request, Limits());
  ASSERT_TRUE(validated.ok()) << validated.status();
  EXPECT_EQ(validated->disaggregation, policy::Disaggregation::kAuto);
  for (const char* mode : {"auto", "off", "only"}) {
    request.mutable_options()->set_disaggregation(mode);
    validated = ValidatePlanRequest(request, Limits());
    ASSERT_TRUE(validated.ok()) << validated.status();
    EXPECT_EQ(policy::DisaggregationName(validated->disaggregation), mode);
  }
  request.mutable_options()->set_disaggregation("both");
  const absl::Status status = Check(request);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "options.disaggregation must be one of auto, off, only; got "
            "\"both\"");
}

TEST(ValidationTest, ExplicitOptionsAreKept) {
  shardplan::v1::PlanRequest request = MakePlanRequest("llama-3.1-8b", 8);
  request.mutable_options()->set_method("anneal");
  request.mutable_options()->set_max_evaluations(1000);
  request.mutable_options()->set_max_seconds(60);
  request.mutable_options()->set_seed(7);
  request.mutable_options()->set_warm_start(false);
  absl::StatusOr<ValidatedPlanRequest> validated =
      ValidatePlanRequest(request, Limits());
  ASSERT_TRUE(validated.ok()) << validated.status();
  EXPECT_EQ(validated->method, policy::SearchMethod::kAnneal);
  EXPECT_EQ(validated->max_evaluations, 1000);
  EXPECT_EQ(validated->seed, 7u);
  EXPECT_FALSE(validated->warm_start);
}

TEST(ValidationTest, UnknownMethodNamesFieldAndChoices) {
  shardplan::v1::PlanRequest request = MakePlanRequest("llama-3.1-8b", 8);
  request.mutable_options()->set_method("magic");
  absl::Status status = Check(request);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), StartsWith("options.method"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("\"magic\""));
  EXPECT_THAT(std::string(status.message()), HasSubstr("exhaustive"));
  EXPECT_EQ(MethodLabel(request), "unknown");
}

TEST(ValidationTest, BudgetsAgainstLimits) {
  shardplan::v1::PlanRequest request = MakePlanRequest("llama-3.1-8b", 8);
  request.mutable_options()->set_max_evaluations(1001);
  absl::Status status = Check(request);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "options.max_evaluations must be <= 1000 "
            "(--max_evaluations_limit), got 1001");

  request.mutable_options()->set_max_evaluations(-1);
  EXPECT_THAT(std::string(Check(request).message()),
              StartsWith("options.max_evaluations must be >= 0"));

  request.mutable_options()->set_max_evaluations(10);
  request.mutable_options()->set_max_seconds(61);
  EXPECT_THAT(std::string(Check(request).message()),
              StartsWith("options.max_seconds must be <= 60"));
  request.mutable_options()->set_max_seconds(-1);
  EXPECT_THAT(std::string(Check(request).message()),
              StartsWith("options.max_seconds"));
  request.mutable_options()->set_max_seconds(
      std::numeric_limits<double>::quiet_NaN());
  EXPECT_THAT(std::string(Check(request).message()), HasSubstr("finite"));
}

TEST(ValidationTest, MissingModelAndCluster) {
  shardplan::v1::PlanRequest request = MakePlanRequest("llama-3.1-8b", 8);
  request.clear_model();
  absl::Status status = Check(request);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), StartsWith("model is required"));

  request = MakePlanRequest("llama-3.1-8b", 8);
  request.clear_cluster();
  status = Check(request);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), StartsWith("cluster is required"));
}

TEST(ValidationTest, SimulatorErrorsKeepTheirFieldPath) {
  shardplan::v1::PlanRequest request = MakePlanRequest("llama-3.1-8b", 8);
  request.mutable_cluster()->set_num_gpus(0);
  absl::Status status = Check(request);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("cluster.num_gpus"));

  request = MakePlanRequest("no-such-model", 8);
  status = Check(request);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("no-such-model"));
}

TEST(ValidationTest, EvaluateRequestNeedsAValidPlan) {
  shardplan::v1::PlanRequest plan_request = MakePlanRequest("llama-3.1-8b", 8);
  shardplan::v1::EvaluateRequest request;
  *request.mutable_model() = plan_request.model();
  *request.mutable_cluster() = plan_request.cluster();
  *request.mutable_workload() = plan_request.workload();
  absl::Status status = ValidateEvaluateRequest(request).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), StartsWith("plan is required"));

  request.mutable_plan()->set_dp(1);
  request.mutable_plan()->set_tp(3);
  request.mutable_plan()->set_pp(1);
  status = ValidateEvaluateRequest(request).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), StartsWith("plan."));

  request.mutable_plan()->set_dp(1);
  request.mutable_plan()->set_tp(8);
  absl::StatusOr<ValidatedEvaluateRequest> validated =
      ValidateEvaluateRequest(request);
  ASSERT_TRUE(validated.ok()) << validated.status();
  EXPECT_EQ(validated->plan.tp, 8);
}

// Re-planning: PlanRequest.current is checked against its own cluster, and
// the transition options need it.
shardplan::v1::PlanRequest ReplanRequest() {
  shardplan::v1::PlanRequest request = MakePlanRequest("llama-3.1-70b", 16);
  shardplan::v1::RunningDeployment* current = request.mutable_current();
  *current->mutable_cluster() = request.cluster();
  current->mutable_cluster()->set_num_gpus(24);
  current->mutable_plan()->set_replicas(3);
  current->mutable_plan()->set_tp(8);
  current->mutable_plan()->set_pp(1);
  current->mutable_plan()->set_dp(1);
  return request;
}

TEST(ValidationTest, ReplanRequestBuildsTheTransitionObjective) {
  absl::StatusOr<ValidatedPlanRequest> v =
      ValidatePlanRequest(ReplanRequest(), Limits());
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_NE(v->transition, nullptr);
  EXPECT_EQ(v->transition->max_seconds, 0);
  EXPECT_FALSE(v->transition->weight_per_s.has_value());
  // The running plan adapted to 16 GPUs: 2 replicas of tp 8.
  ASSERT_FALSE(v->current_plans.empty());
  EXPECT_EQ(v->current_plans.front().replicas * v->current_plans.front().tp,
            16);
  EXPECT_EQ(v->transition->model->old_node_of(), std::vector<int>({0, 1}));
  EXPECT_EQ(ValidatePlanRequest(MakePlanRequest("llama-3.1-70b", 16), Limits())
                ->transition,
            nullptr);
}

TEST(ValidationTest, ReplanErrorsNameTheFieldUnderCurrent) {
  shardplan::v1::PlanRequest request = ReplanRequest();
  request.mutable_current()->mutable_plan()->set_tp(3);
  absl::Status s = Check(request);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), StartsWith("current.plan."));

  request = ReplanRequest();
  request.mutable_current()->mutable_plan()->set_replicas(2);  // 16 != 24
  s = Check(request);
  EXPECT_THAT(std::string(s.message()),
              StartsWith("current.plan.replicas*dp*tp*pp"));
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("current.cluster.num_gpus (24)"));

  request = ReplanRequest();
  request.mutable_current()->mutable_cluster()->set_num_gpus(0);
  EXPECT_THAT(std::string(Check(request).message()),
              StartsWith("current.cluster."));

  request = ReplanRequest();
  request.mutable_current()->clear_cluster();
  EXPECT_THAT(std::string(Check(request).message()),
              StartsWith("current needs both"));

  request = ReplanRequest();
  request.mutable_current()->add_removed_nodes(7);
  s = Check(request);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), StartsWith("current.removed_nodes[0]"));

  request = ReplanRequest();
  request.mutable_options()->set_max_transition_seconds(-1);
  EXPECT_THAT(std::string(Check(request).message()),
              StartsWith("options.max_transition_seconds"));
  request = ReplanRequest();
  request.mutable_options()->set_transition_weight(
      std::numeric_limits<double>::quiet_NaN());
  EXPECT_THAT(std::string(Check(request).message()),
              StartsWith("options.transition_weight"));

  request = MakePlanRequest("llama-3.1-70b", 16);
  request.mutable_options()->set_max_transition_seconds(30);
  EXPECT_THAT(std::string(Check(request).message()), HasSubstr("need current"));
}

}  // namespace
}  // namespace shardplan::server
