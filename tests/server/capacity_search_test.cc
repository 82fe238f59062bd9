// options.goal: validation of capacity requests and the capacity search.
#include "server/capacity_search.h"

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/validation.h"
#include "simulator/cost_model.h"
#include "simulator/spec.h"
#include "simulator/traffic_costing.h"
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

// The deployments are sized on the queue's closed forms, whose limit lies a
// little above the streamed chain's (long-tailed prompts, a p99 TTFT bound);
// the pick is judged by its streamed prediction. Over a sweep of rates every
// pick carries the rate by the figures it reports (before picks were sized
// again on the chain's shortfall, each pick of this sweep was reported
// infeasible), and more load never takes fewer GPUs.
TEST(CapacitySearchTest, EveryPickCarriesTheRateByItsStreamedPrediction) {
  policy::CancellationToken cancel;
  int previous_gpus = 0;
  for (double rate : {20.0, 26.0, 32.0, 38.0}) {
    SCOPED_TRACE(rate);
    shardplan::v1::PlanRequest request = RateRequest(rate);
    request.mutable_cluster()->set_num_gpus(64);
    auto* w = request.mutable_workload();
    w->set_input_tokens(2000);
    w->set_output_tokens(400);
    w->set_max_ttft_ms(1500);
    w->set_max_tpot_ms(0);
    auto* input = w->mutable_input_tokens_distribution();
    input->set_kind("lognormal");
    input->set_mean(2000);
    input->set_sigma(0.8);
    absl::StatusOr<ValidatedPlanRequest> validated =
        ValidatePlanRequest(request, RequestLimits());
    ASSERT_TRUE(validated.ok()) << validated.status();
    absl::StatusOr<CapacityResult> result =
        SearchCapacity(*validated->capacity, cancel);
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_TRUE(result->winner.has_value()) << result->no_fit_reason;
    const CapacityPick& pick = result->picks[*result->winner];
    EXPECT_TRUE(pick.prediction.feasible())
        << pick.prediction.infeasible_reason();
    EXPECT_GE(pick.prediction.max_request_rate(), rate);
    EXPECT_LE(pick.prediction.ttft_ms_p99(), 1500);
    EXPECT_GE(pick.cluster.num_gpus(), previous_gpus);
    previous_gpus = pick.cluster.num_gpus();
  }
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

// min_gpus on up to `gpus` H100s, disaggregation `mode`.
shardplan::v1::PlanRequest PoolRequest(int input_tokens, int output_tokens,
                                       double rate, double max_ttft_ms,
                                       double max_tpot_ms, int gpus,
                                       const std::string& mode) {
  shardplan::v1::PlanRequest request = RateRequest(rate);
  request.mutable_cluster()->set_num_gpus(gpus);
  auto* w = request.mutable_workload();
  w->set_input_tokens(input_tokens);
  w->set_output_tokens(output_tokens);
  w->set_max_ttft_ms(max_ttft_ms);
  w->set_max_tpot_ms(max_tpot_ms);
  request.mutable_options()->set_disaggregation(mode);
  return request;
}

CapacityPick Winner(const shardplan::v1::PlanRequest& request) {
  absl::StatusOr<ValidatedPlanRequest> validated =
      ValidatePlanRequest(request, RequestLimits());
  EXPECT_TRUE(validated.ok()) << validated.status();
  if (!validated.ok()) return {};
  policy::CancellationToken cancel;
  absl::StatusOr<CapacityResult> result =
      SearchCapacity(*validated->capacity, cancel);
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok() || !result->winner.has_value()) {
    ADD_FAILURE() << (result.ok() ? result->no_fit_reason : "");
    return {};
  }
  return result->picks[*result->winner];
}

// The highest rate `plan` carries within the SLOs on its own GPUs.
double MaxRate(const shardplan::v1::PlanRequest& request,
               const shardplan::v1::Plan& proto, int gpus) {
  shardplan::v1::ClusterSpec cluster = request.cluster();
  cluster.set_num_gpus(gpus);
  absl::StatusOr<simulator::Problem> problem =
      simulator::ProblemFromProto(request.model(), cluster, request.workload());
  EXPECT_TRUE(problem.ok()) << problem.status();
  auto model = simulator::CostModel::Create(*std::move(problem));
  EXPECT_TRUE(model.ok()) << model.status();
  absl::StatusOr<simulator::PlanDims> plan =
      simulator::PlanDimsFromProto(proto);
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (!model.ok() || !plan.ok() || !(*model)->ValidatePlan(*plan).ok())
    return 0;
  return simulator::PredictTraffic(**model, *plan).max_request_rate;
}

int PoolGpus(const shardplan::v1::Plan& pool) {
  return pool.dp() * pool.tp() * pool.pp();
}

void ExpectCarries(const CapacityPick& pick, double rate, double max_ttft_ms,
                   double max_tpot_ms) {
  EXPECT_TRUE(pick.prediction.feasible())
      << pick.prediction.infeasible_reason();
  EXPECT_GE(pick.prediction.max_request_rate(), rate);
  EXPECT_LE(pick.prediction.ttft_ms_p99(), max_ttft_ms);
  EXPECT_LE(pick.prediction.tpot_ms_p99(), max_tpot_ms);
}

// Prompts of 8,000 tokens and a 20 ms p99 TPOT: an aggregated replica's
// chunked prefill lengthens the decode iterations it shares, so it needs
// more, wider replicas; a prefill pool beside a decode pool needs fewer GPUs
// (measured: 14 aggregated, 7 x 1 + 1 x 2 = 9 disaggregated).
TEST(CapacitySearchTest, DisaggregatedWinsWhenLongPromptsMeetATightTpot) {
  const auto request = [](const std::string& mode) {
    return PoolRequest(8000, 200, 10, 2000, 20, 64, mode);
  };
  const CapacityPick aggregated = Winner(request("off"));
  const CapacityPick chosen = Winner(request("auto"));
  EXPECT_FALSE(aggregated.plan.has_prefill());
  ASSERT_TRUE(chosen.plan.has_prefill() && chosen.plan.has_decode())
      << chosen.plan.ShortDebugString();
  EXPECT_LT(chosen.cluster.num_gpus(), aggregated.cluster.num_gpus());
  ExpectCarries(aggregated, 10, 2000, 20);
  ExpectCarries(chosen, 10, 2000, 20);
  const shardplan::v1::Plan& plan = chosen.plan;
  EXPECT_EQ(chosen.cluster.num_gpus(),
            plan.prefill_instances() * PoolGpus(plan.prefill()) +
                plan.decode_instances() * PoolGpus(plan.decode()));
  // Neither pool has an instance to spare.
  shardplan::v1::PlanRequest r = request("auto");
  EXPECT_GE(MaxRate(r, plan, chosen.cluster.num_gpus()), 10);
  for (bool prefill : {true, false}) {
    shardplan::v1::Plan fewer = plan;
    if (prefill ? plan.prefill_instances() < 2 : plan.decode_instances() < 2)
      continue;
    // The pool's message repeats its instance count as replicas.
    if (prefill) {
      fewer.set_prefill_instances(plan.prefill_instances() - 1);
      fewer.mutable_prefill()->clear_replicas();
    } else {
      fewer.set_decode_instances(plan.decode_instances() - 1);
      fewer.mutable_decode()->clear_replicas();
    }
    const int gpus = chosen.cluster.num_gpus() -
                     PoolGpus(prefill ? plan.prefill() : plan.decode());
    EXPECT_LT(MaxRate(r, fewer, gpus), 10) << (prefill ? "prefill" : "decode");
  }
  // min_cost prices the same deployment.
  r.mutable_options()->set_goal("min_cost");
  auto* option = r.mutable_cluster()->add_hardware_options();
  option->set_hardware("h100-sxm-80gb");
  option->set_price_per_gpu_hour(2.5);
  option->set_max_gpus(64);
  const CapacityPick cheapest = Winner(r);
  EXPECT_EQ(cheapest.cluster.num_gpus(), chosen.cluster.num_gpus());
  EXPECT_DOUBLE_EQ(cheapest.cost_per_hour, 2.5 * chosen.cluster.num_gpus());
  EXPECT_DOUBLE_EQ(cheapest.prediction.cost_per_hour(), cheapest.cost_per_hour);
  // Its queues are stable at the rate: it serves the offered 10 x 200
  // output tokens/s.
  EXPECT_NEAR(cheapest.prediction.cost_per_million_output_tokens(),
              cheapest.cost_per_hour / (10 * 200 * 3600 / 1e6), 1e-9);
}

// Short prompts and long outputs at a loose TTFT: the prompts barely load an
// aggregated replica, while a disaggregated deployment pays for a prefill
// pool of its own (measured: 13 aggregated GPUs, 15 disaggregated).
TEST(CapacitySearchTest, AggregatedWinsWhenDecodeDominates) {
  const auto request = [](const std::string& mode) {
    return PoolRequest(500, 2000, 40, 1000, 40, 64, mode);
  };
  const CapacityPick disaggregated = Winner(request("only"));
  const CapacityPick chosen = Winner(request("auto"));
  ASSERT_TRUE(disaggregated.plan.has_prefill());
  EXPECT_FALSE(chosen.plan.has_prefill()) << chosen.plan.ShortDebugString();
  EXPECT_LT(chosen.cluster.num_gpus(), disaggregated.cluster.num_gpus());
  ExpectCarries(disaggregated, 40, 1000, 40);
  ExpectCarries(chosen, 40, 1000, 40);
}

}  // namespace
}  // namespace shardplan::server
