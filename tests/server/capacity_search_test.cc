// options.goal: validation of capacity requests and the capacity search.
#include "server/capacity_search.h"

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/validation.h"
#include "tests/server/test_util.h"

namespace shardplan::server {
namespace {

using ::testing::HasSubstr;
using testing::MakePlanRequest;

shardplan::v1::PlanRequest RateRequest(double rate) {
  shardplan::v1::PlanRequest request = MakePlanRequest("llama-3.1-8b", 16);
  auto* w = request.mutable_workload();
  w->set_input_tokens(1000);
  w->set_output_tokens(200);
  w->set_concurrency(0);
  w->set_request_rate(rate);
  w->set_slo_percentile(99);
  w->set_max_ttft_ms(2000);
  w->set_max_tpot_ms(50);
  request.mutable_options()->set_goal("min_gpus");
  return request;
}

absl::Status Check(const shardplan::v1::PlanRequest& request) {
  return ValidatePlanRequest(request, RequestLimits()).status();
}

TEST(CapacityValidationTest, RejectsBadGoalsAndOptions) {
  shardplan::v1::PlanRequest request = RateRequest(5);
  request.mutable_options()->set_goal("cheapest");
  EXPECT_THAT(Check(request).message(), HasSubstr("options.goal"));
  EXPECT_THAT(Check(request).message(), HasSubstr("cheapest"));

  request = RateRequest(0);
  request.mutable_workload()->set_slo_percentile(0);
  EXPECT_THAT(Check(request).message(),
              HasSubstr("needs workload.request_rate > 0"));

  request = RateRequest(5);
  request.mutable_options()->set_goal("min_cost");
  EXPECT_THAT(Check(request).message(), HasSubstr("cluster.hardware_options"));

  auto* option = request.mutable_cluster()->add_hardware_options();
  option->set_hardware("h100-sxm-80gb");
  option->set_price_per_gpu_hour(-2);
  const absl::Status negative = Check(request);
  EXPECT_EQ(negative.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(negative.message(),
              HasSubstr("cluster.hardware_options[0].price_per_gpu_hour"));
  EXPECT_THAT(negative.message(), HasSubstr("-2"));
  option->set_price_per_gpu_hour(2.5);
  option->set_hardware("tpu-v9");
  EXPECT_THAT(Check(request).message(), HasSubstr("tpu-v9"));
  option->set_hardware("h100-sxm-80gb");
  EXPECT_TRUE(Check(request).ok()) << Check(request);
}

TEST(CapacitySearchTest, MinGpusIsTheFewestThatCarryTheRate) {
  absl::StatusOr<ValidatedPlanRequest> validated =
      ValidatePlanRequest(RateRequest(20), RequestLimits());
  ASSERT_TRUE(validated.ok()) << validated.status();
  ASSERT_NE(validated->capacity, nullptr);
  policy::CancellationToken cancel;
  absl::StatusOr<CapacityResult> result =
      SearchCapacity(*validated->capacity, cancel);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->winner.has_value()) << result->no_fit_reason;
  const CapacityPick& pick = result->picks[*result->winner];
  EXPECT_TRUE(pick.prediction.feasible())
      << pick.prediction.infeasible_reason();
  EXPECT_GE(pick.prediction.max_request_rate(), 20);
  EXPECT_LE(pick.prediction.ttft_ms_p99(), 2000);
  EXPECT_EQ(pick.cluster.hardware(), "h100-sxm-80gb");
  const int gpus = pick.cluster.num_gpus();
  EXPECT_LE(gpus, 16);
  // A tenth of the rate needs no more GPUs; twice as much needs more.
  validated = ValidatePlanRequest(RateRequest(2), RequestLimits());
  ASSERT_TRUE(validated.ok());
  result = SearchCapacity(*validated->capacity, cancel);
  ASSERT_TRUE(result.ok() && result->winner.has_value());
  EXPECT_LE(result->picks[*result->winner].cluster.num_gpus(), gpus);
}

TEST(CapacitySearchTest, ARateNoClusterCarriesNamesTheLimit) {
  absl::StatusOr<ValidatedPlanRequest> validated =
      ValidatePlanRequest(RateRequest(1e5), RequestLimits());
  ASSERT_TRUE(validated.ok()) << validated.status();
  policy::CancellationToken cancel;
  absl::StatusOr<CapacityResult> result =
      SearchCapacity(*validated->capacity, cancel);
  ASSERT_TRUE(result.ok());
  EXPECT_FALSE(result->winner.has_value());
  EXPECT_THAT(result->no_fit_reason,
              HasSubstr("h100-sxm-80gb carries at most"));
  EXPECT_THAT(result->no_fit_reason, HasSubstr("16 GPUs (max_gpus)"));
}

TEST(CapacitySearchTest, MinCostPicksTheCheaperHardware) {
  shardplan::v1::PlanRequest request = RateRequest(10);
  request.mutable_options()->set_goal("min_cost");
  for (const auto& [name, price] :
       {std::pair<const char*, double>{"h100-sxm-80gb", 2.5},
        std::pair<const char*, double>{"h200-sxm-141gb", 3.6}}) {
    auto* o = request.mutable_cluster()->add_hardware_options();
    o->set_hardware(name);
    o->set_price_per_gpu_hour(price);
    o->set_max_gpus(32);
  }
  absl::StatusOr<ValidatedPlanRequest> validated =
      ValidatePlanRequest(request, RequestLimits());
  ASSERT_TRUE(validated.ok()) << validated.status();
  policy::CancellationToken cancel;
  absl::StatusOr<CapacityResult> result =
      SearchCapacity(*validated->capacity, cancel);
  ASSERT_TRUE(result.ok());
  ASSERT_EQ(result->picks.size(), 2u);
  ASSERT_TRUE(result->winner.has_value());
  const CapacityPick& w = result->picks[*result->winner];
  for (const CapacityPick& p : result->picks) {
    EXPECT_LE(w.cost_per_hour, p.cost_per_hour);
    EXPECT_DOUBLE_EQ(p.prediction.cost_per_hour(), p.cost_per_hour);
    EXPECT_GT(p.prediction.cost_per_million_output_tokens(), 0);
  }
}

}  // namespace
}  // namespace shardplan::server
