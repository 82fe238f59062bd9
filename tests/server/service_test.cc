// The service in-process on 127.0.0.1:0 with a scripted fake searcher: stream
// order and contents, validation errors, admission control, cancellation,
// drain, warm start, slow readers.
#include "server/service.h"

#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "server/server.h"
#include "shardplan/v1/shardplan.grpc.pb.h"
#include "simulator/cost_model.h"
#include "simulator/megatron.h"
#include "simulator/spec.h"
#include "tests/server/test_util.h"

namespace shardplan::server {
namespace {

using shardplan::v1::PlanUpdate;
using testing::FakeScript;
using testing::FakeSearcher;
using ::testing::HasSubstr;
using testing::MakePlanRequest;
using ::testing::StartsWith;
using testing::TempDir;

// Polls `condition` until it holds or 10 s pass (conditions on other threads'
// progress).
template <typename F>
bool Eventually(F condition) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < deadline) {
    if (condition()) return true;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return condition();
}

class ServiceTest : public ::testing::Test {
 protected:
  void StartServer(int slots = 2, int queued = 4, bool with_store = true) {
    ServerOptions options;
    options.grpc_address = "127.0.0.1:0";
    options.metrics_address = "";
    options.store_path = with_store ? dir_.File("store.db") : "";
    options.max_concurrent_searches = slots;
    options.max_queued_searches = queued;
    options.limits.max_evaluations_limit = 1000;
    options.shutdown_grace = absl::Seconds(5);
    options.searcher_factory = [this](absl::string_view method) {
      if (real_searchers_) return policy::CreateSearcher(method);
      return absl::StatusOr<std::unique_ptr<policy::Searcher>>(
          std::make_unique<FakeSearcher>(script_));
    };
    absl::StatusOr<std::unique_ptr<PlannerServer>> server =
        PlannerServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    ASSERT_GT(server_->grpc_port(), 0);
    channel_ =
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_->grpc_port()),
                            grpc::InsecureChannelCredentials());
    stub_ = shardplan::v1::ShardingPlanner::NewStub(channel_);
  }

  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
  }

  struct StreamResult {
    std::vector<PlanUpdate> updates;
    grpc::Status status;
  };
  StreamResult Plan(const shardplan::v1::PlanRequest& request) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(20));
    StreamResult result;
    auto reader = stub_->PlanSharding(&context, request);
    PlanUpdate update;
    while (reader->Read(&update)) result.updates.push_back(update);
    result.status = reader->Finish();
    return result;
  }

  // Starts a search (without a rate) that holds a worker slot until its call
  // is cancelled; returns once it runs.
  std::unique_ptr<grpc::ClientReader<PlanUpdate>> OccupyTheSlot(
      grpc::ClientContext& context) {
    script_.block_until_cancelled = true;
    script_.improvements = 0;
    auto reader =
        stub_->PlanSharding(&context, MakePlanRequest("llama-3.1-8b", 8));
    PlanUpdate baseline;
    EXPECT_TRUE(reader->Read(&baseline));
    EXPECT_TRUE(Eventually([&] { return script_.started() == 1; }));
    return reader;
  }

  TempDir dir_;
  FakeScript script_;
  bool real_searchers_ = false;  // the torch-free policy searchers
  std::unique_ptr<PlannerServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<shardplan::v1::ShardingPlanner::Stub> stub_;
};

// The final update's frontier (non-dominated, sorted) and top plans (distinct,
// best first, options.top_n of them), for a real searcher of each kind.
TEST_F(ServiceTest, FinalUpdateCarriesFrontierAndTopPlans) {
  real_searchers_ = true;
  StartServer();
  for (const char* method : {"random", "anneal", "grid", "megatron"}) {
    SCOPED_TRACE(method);
    shardplan::v1::PlanRequest request = MakePlanRequest("llama-3.1-70b", 16);
    request.mutable_options()->set_method(method);
    request.mutable_options()->set_max_evaluations(800);
    request.mutable_options()->set_top_n(3);
    StreamResult result = Plan(request);
    ASSERT_TRUE(result.status.ok()) << result.status.error_message();
    const PlanUpdate& last = result.updates.back();
    ASSERT_TRUE(last.final());
    ASSERT_FALSE(last.frontier().empty());
    for (int i = 0; i < last.frontier_size(); ++i) {
      const shardplan::v1::FrontierPoint& p = last.frontier(i);
      EXPECT_TRUE(p.prediction().feasible());
      EXPECT_NEAR(p.tokens_per_s_per_user(), 1000.0 / p.prediction().tpot_ms(),
                  1e-6 * p.tokens_per_s_per_user());
      EXPECT_DOUBLE_EQ(p.output_tokens_per_s_per_gpu(),
                       p.prediction().output_tokens_per_s_per_gpu());
      // Aggregated and disaggregated plans share the frontier, marked.
      EXPECT_EQ(p.disaggregated(), p.plan().has_prefill());
      for (int j = 0; j < last.frontier_size(); ++j) {
        const shardplan::v1::FrontierPoint& q = last.frontier(j);
        EXPECT_FALSE(q.output_tokens_per_s_per_gpu() >=
                         p.output_tokens_per_s_per_gpu() &&
                     q.tokens_per_s_per_user() >= p.tokens_per_s_per_user() &&
                     i != j)
            << "point " << j << " dominates point " << i;
      }
      if (i > 0) {
        EXPECT_GT(last.frontier(i - 1).output_tokens_per_s_per_gpu(),
                  p.output_tokens_per_s_per_gpu());
      }
    }
    // Megatron too: its frontier (the batch sweep) supplies other choices.
    ASSERT_EQ(last.top_plans_size(), 3);
    EXPECT_EQ(last.top_plans(0).plan().SerializeAsString(),
              last.plan().SerializeAsString());
    for (int i = 1; i < last.top_plans_size(); ++i) {
      EXPECT_GE(last.top_plans(i - 1).prediction().output_tokens_per_s(),
                last.top_plans(i).prediction().output_tokens_per_s());
      for (int j = 0; j < i; ++j) {
        EXPECT_NE(last.top_plans(i).plan().SerializeAsString(),
                  last.top_plans(j).plan().SerializeAsString());
      }
    }
  }
}

TEST_F(ServiceTest, BadTopNIsInvalidArgument) {
  StartServer();
  for (int top_n : {-1, 65}) {
    shardplan::v1::PlanRequest request = MakePlanRequest("llama-3.1-8b", 8);
    request.mutable_options()->set_top_n(top_n);
    StreamResult result = Plan(request);
    EXPECT_EQ(result.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(result.status.error_message(), StartsWith("options.top_n"));
  }
}

TEST_F(ServiceTest, StreamsBaselineImprovementsAndFinal) {
  StartServer();
  script_.improvements = 3;
  // Aggregated only: the summary counts the scripted searcher's evaluations
  // alone (DisaggregationAutoReportsTheBestOfEachKind counts the sweep's).
  shardplan::v1::PlanRequest request = MakePlanRequest("llama-3.1-8b", 8);
  request.mutable_options()->set_disaggregation("off");
  StreamResult result = Plan(request);
  ASSERT_TRUE(result.status.ok()) << result.status.error_message();
  ASSERT_GE(result.updates.size(), 2u);
  const PlanUpdate& baseline = result.updates.front();
  EXPECT_EQ(baseline.kind(), "baseline");
  EXPECT_FALSE(baseline.final());
  EXPECT_DOUBLE_EQ(baseline.speedup_vs_baseline(), 1.0);
  EXPECT_GT(baseline.prediction().output_tokens_per_s(), 0);
  EXPECT_GT(baseline.plan().placement_size(), 0)
      << "plans carry their placement";
  double previous = 1.0;
  for (size_t i = 1; i + 1 < result.updates.size(); ++i) {
    EXPECT_EQ(result.updates[i].kind(), "improvement");
    EXPECT_GT(result.updates[i].speedup_vs_baseline(), previous);
    previous = result.updates[i].speedup_vs_baseline();
  }
  const PlanUpdate& last = result.updates.back();
  EXPECT_TRUE(last.final());
  EXPECT_EQ(last.kind(), "final");
  EXPECT_NEAR(last.speedup_vs_baseline(), 1.3, 1e-9);
  EXPECT_EQ(last.summary().method(), "random");
  EXPECT_EQ(last.summary().evaluations(), 30);
  EXPECT_NEAR(last.summary().best_speedup(), 1.3, 1e-9);
  EXPECT_EQ(last.summary().stop_reason(), "budget");
  EXPECT_DOUBLE_EQ(last.summary().space_size(), 1234);
  EXPECT_FALSE(last.summary().warm_started());
  EXPECT_DOUBLE_EQ(server_->metrics().cost_model_evaluations().Value(), 1 + 30);
  EXPECT_DOUBLE_EQ(server_->metrics().rl_iterations().Value(), 3);
}

TEST_F(ServiceTest, InvalidRequestsGetInvalidArgumentAndServerStaysUp) {
  StartServer();
  shardplan::v1::PlanRequest request = MakePlanRequest("llama-3.1-8b", 8);
  request.mutable_options()->set_max_evaluations(5000);
  StreamResult result = Plan(request);
  EXPECT_EQ(result.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(result.status.error_message(),
              StartsWith("options.max_evaluations"));
  EXPECT_TRUE(result.updates.empty());

  request = MakePlanRequest("llama-3.1-8b", 8);
  request.mutable_cluster()->set_num_gpus(0);
  result = Plan(request);
  EXPECT_EQ(result.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(result.status.error_message(), HasSubstr("cluster.num_gpus"));

  shardplan::v1::EvaluateRequest evaluate;
  *evaluate.mutable_model() = request.model();
  evaluate.mutable_cluster()->set_hardware("h100-sxm-80gb");
  evaluate.mutable_cluster()->set_num_gpus(8);
  *evaluate.mutable_workload() = request.workload();
  evaluate.mutable_plan()->set_dp(2);
  evaluate.mutable_plan()->set_tp(2);
  evaluate.mutable_plan()->set_pp(1);  // 4 != 8 GPUs
  shardplan::v1::EvaluateResponse response;
  grpc::ClientContext context;
  grpc::Status status = stub_->EvaluatePlan(&context, evaluate, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), StartsWith("plan"));

  // Still serving.
  evaluate.mutable_plan()->set_dp(2);
  evaluate.mutable_plan()->set_tp(4);
  grpc::ClientContext context2;
  status = stub_->EvaluatePlan(&context2, evaluate, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.plan().tp(), 4);
  EXPECT_GT(response.plan().placement_size(), 0);
  EXPECT_TRUE(response.has_prediction());
  EXPECT_GT(response.model().num_layers(), 0);
  EXPECT_EQ(script_.started(), 0) << "no search ran for invalid requests";
}

TEST_F(ServiceTest, DisaggregationAutoReportsTheBestOfEachKind) {
  StartServer();
  shardplan::v1::PlanRequest request = MakePlanRequest("llama-3.1-8b", 8);
  StreamResult result = Plan(request);
  ASSERT_TRUE(result.status.ok()) << result.status.error_message();
  const shardplan::v1::SearchSummary& summary = result.updates.back().summary();
  ASSERT_TRUE(summary.has_best_disaggregated());
  EXPECT_TRUE(summary.best_disaggregated().disaggregated());
  EXPECT_GT(summary.best_disaggregated_plan().decode_instances(), 0);
  ASSERT_TRUE(summary.has_best_aggregated());
  EXPECT_FALSE(summary.best_aggregated().disaggregated());
  EXPECT_FALSE(result.updates.back().prediction().disaggregated());
  const int auto_evaluations = summary.evaluations();
  // The frontier is over everything evaluated: the sweep's plans compete.
  int disaggregated_points = 0;
  for (const shardplan::v1::FrontierPoint& point :
       result.updates.back().frontier()) {
    if (point.disaggregated()) ++disaggregated_points;
  }
  EXPECT_GT(disaggregated_points, 0);

  request.mutable_options()->set_disaggregation("only");
  result = Plan(request);
  ASSERT_TRUE(result.status.ok()) << result.status.error_message();
  EXPECT_TRUE(result.updates.back().prediction().disaggregated());
  EXPECT_FALSE(result.updates.back().summary().has_best_aggregated());
  ASSERT_GT(result.updates.back().frontier_size(), 0);
  for (const shardplan::v1::FrontierPoint& point :
       result.updates.back().frontier()) {
    EXPECT_TRUE(point.disaggregated());
  }

  request.mutable_options()->set_disaggregation("off");
  result = Plan(request);
  ASSERT_TRUE(result.status.ok()) << result.status.error_message();
  EXPECT_FALSE(result.updates.back().summary().has_best_disaggregated());
  // The sweep's evaluations are counted in the summary.
  EXPECT_GT(auto_evaluations, result.updates.back().summary().evaluations());
}

TEST_F(ServiceTest, EvaluatePlanPredictsDisaggregatedPlans) {
  StartServer();
  shardplan::v1::EvaluateRequest evaluate;
  evaluate.mutable_model()->set_catalog_name("llama-3.1-8b");
  evaluate.mutable_cluster()->set_hardware("h100-sxm-80gb");
  evaluate.mutable_cluster()->set_num_gpus(16);
  evaluate.mutable_cluster()->set_gpus_per_node(8);
  evaluate.mutable_workload()->set_input_tokens(4096);
  evaluate.mutable_workload()->set_output_tokens(512);
  shardplan::v1::Plan* plan = evaluate.mutable_plan();
  plan->mutable_prefill()->set_tp(2);
  plan->mutable_decode()->set_tp(2);
  plan->mutable_decode()->set_batch_size(32);
  plan->set_prefill_instances(4);
  plan->set_decode_instances(4);
  shardplan::v1::EvaluateResponse response;
  grpc::ClientContext context;
  grpc::Status status = stub_->EvaluatePlan(&context, evaluate, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const shardplan::v1::Prediction& p = response.prediction();
  EXPECT_TRUE(p.disaggregated());
  EXPECT_TRUE(p.feasible()) << p.infeasible_reason();
  EXPECT_EQ(p.prefill_pool().instances(), 4);
  EXPECT_EQ(p.decode_pool().gpus_per_instance(), 2);
  EXPECT_GT(p.kv_transfer_bytes(), 0);
  EXPECT_EQ(p.kv_transfer_link(), "infiniband");
  EXPECT_GT(p.prefill_pool().memory_per_gpu().weights_bytes(), 0);
  EXPECT_EQ(response.plan().prefill_instances(), 4);
  EXPECT_EQ(response.plan().decode().tp(), 2);

  // A bad sub-plan is INVALID_ARGUMENT naming its field path.
  plan->mutable_decode()->set_tp(3);
  grpc::ClientContext context2;
  status = stub_->EvaluatePlan(&context2, evaluate, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), StartsWith("plan.decode."));
  plan->mutable_decode()->set_tp(-1);
  grpc::ClientContext context3;
  status = stub_->EvaluatePlan(&context3, evaluate, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), StartsWith("plan.decode.tp"));
  plan->clear_decode();
  grpc::ClientContext context4;
  status = stub_->EvaluatePlan(&context4, evaluate, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), StartsWith("plan.decode must be set"));
}

TEST_F(ServiceTest, EvaluatePlanUsesTheEnginesProfileAndRanges) {
  StartServer();
  shardplan::v1::EvaluateRequest evaluate;
  evaluate.mutable_model()->set_catalog_name("llama-3.1-8b");
  evaluate.mutable_cluster()->set_hardware("h100-sxm-80gb");
  evaluate.mutable_cluster()->set_num_gpus(8);
  evaluate.mutable_workload()->set_input_tokens(1024);
  evaluate.mutable_workload()->set_output_tokens(256);
  evaluate.mutable_workload()->set_concurrency(16);
  evaluate.mutable_plan()->set_dp(1);
  evaluate.mutable_plan()->set_tp(8);
  evaluate.mutable_plan()->set_pp(1);
  shardplan::v1::EvaluateResponse agnostic;
  grpc::ClientContext context;
  grpc::Status status = stub_->EvaluatePlan(&context, evaluate, &agnostic);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(agnostic.prediction().calibration_profile(),
            "h100-engine-agnostic");

  evaluate.mutable_workload()->set_engine("vllm");
  evaluate.mutable_workload()->set_engine_version("0.12.0");
  shardplan::v1::EvaluateResponse response;
  grpc::ClientContext context2;
  status = stub_->EvaluatePlan(&context2, evaluate, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const shardplan::v1::Prediction& p = response.prediction();
  EXPECT_EQ(p.calibration_profile(), "h100-vllm");
  // vLLM's per-request overhead is smaller than TensorRT-LLM's: the profile
  // was really used.
  EXPECT_LT(p.ttft_ms(), agnostic.prediction().ttft_ms());
  EXPECT_LE(p.output_tokens_per_s_range().low(), p.output_tokens_per_s());
  EXPECT_GE(p.output_tokens_per_s_range().high(), p.output_tokens_per_s());
  EXPECT_LE(p.ttft_ms_range().low(), p.ttft_ms());
  EXPECT_GE(p.ttft_ms_range().high(), p.ttft_ms());
  EXPECT_LE(p.tpot_ms_range().low(), p.tpot_ms());
  EXPECT_GE(p.tpot_ms_range().high(), p.tpot_ms());
  EXPECT_LT(p.tpot_ms_range().low(), p.tpot_ms_range().high());
  EXPECT_THAT(p.validation(), ::testing::Contains(HasSubstr("engine_version")));

  evaluate.mutable_workload()->set_engine("tgi");
  grpc::ClientContext context3;
  status = stub_->EvaluatePlan(&context3, evaluate, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(
      status.error_message(),
      StartsWith("workload.engine must be one of trtllm, sglang, vllm"));

  // Searches use the profile too: every streamed prediction names it.
  shardplan::v1::PlanRequest plan = MakePlanRequest("llama-3.1-8b", 8);
  plan.mutable_workload()->set_engine("sglang");
  StreamResult result = Plan(plan);
  ASSERT_TRUE(result.status.ok()) << result.status.error_message();
  ASSERT_FALSE(result.updates.empty());
  for (const PlanUpdate& update : result.updates) {
    EXPECT_EQ(update.prediction().calibration_profile(), "h100-sglang");
  }
}

// The conservative objective streams a plan as the best only when the low end
// of its throughput range beats the best so far.
TEST_F(ServiceTest, ConservativeObjectiveRanksByTheRangesLowEnd) {
  StartServer();
  script_.improvements = 3;
  shardplan::v1::PlanRequest request = MakePlanRequest("llama-3.1-8b", 8);
  request.mutable_options()->set_objective("conservative");
  StreamResult result = Plan(request);
  ASSERT_TRUE(result.status.ok()) << result.status.error_message();
  ASSERT_GE(result.updates.size(), 2u);
  double previous = 0;
  for (const PlanUpdate& update : result.updates) {
    if (update.final()) continue;
    const double low = update.prediction().output_tokens_per_s_range().low();
    EXPECT_GT(low, previous) << update.kind();
    previous = low;
  }
  EXPECT_GE(
      result.updates.back().prediction().output_tokens_per_s_range().low(),
      previous);
}

// Re-planning: every update carries the transition from the running plan; the
// running plan itself (here the Megatron baseline on the same cluster) moves
// nothing.
TEST_F(ServiceTest, ReplanUpdatesCarryTheTransition) {
  StartServer();
  script_.improvements = 2;
  shardplan::v1::PlanRequest request = MakePlanRequest("llama-3.1-70b", 16);
  absl::StatusOr<simulator::Problem> problem =
      testing::MakeProblem("llama-3.1-70b", 16);
  ASSERT_TRUE(problem.ok());
  auto model = simulator::CostModel::Create(*problem);
  ASSERT_TRUE(model.ok());
  *request.mutable_current()->mutable_plan() =
      simulator::PlanToProto(simulator::MegatronPlan(**model), *problem);
  *request.mutable_current()->mutable_cluster() = request.cluster();
  StreamResult result = Plan(request);
  ASSERT_TRUE(result.status.ok()) << result.status.error_message();
  ASSERT_GE(result.updates.size(), 2u);
  for (const PlanUpdate& update : result.updates) {
    EXPECT_TRUE(update.has_transition()) << update.kind();
  }
  const shardplan::v1::Transition& t = result.updates.front().transition();
  EXPECT_EQ(t.total_bytes(), 0);
  EXPECT_EQ(t.gpus_unchanged(), 16);
  EXPECT_TRUE(t.rolling());
  EXPECT_EQ(t.node_loads_size(), 0);

  request.mutable_current()->mutable_plan()->set_tp(3);
  result = Plan(request);
  EXPECT_EQ(result.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(result.status.error_message(), StartsWith("current.plan."));
}

TEST_F(ServiceTest, ListCatalog) {
  StartServer();
  shardplan::v1::ListCatalogResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(stub_->ListCatalog(&context, {}, &response).ok());
  EXPECT_GE(response.models_size(), 10);
  EXPECT_GE(response.hardware_size(), 2);
  // The Blackwell hardware and the 2026 models, with their checkpoints.
  std::vector<std::string> hardware, models;
  for (const auto& h : response.hardware()) hardware.push_back(h.name());
  for (const auto& m : response.model_info()) {
    models.push_back(m.name());
    if (m.name() == "kimi-k2.5") {
      EXPECT_EQ(m.hugging_face_id(), "moonshotai/Kimi-K2.5");
    }
  }
  // The NVFP4 checkpoint --emit launches on FP4 tensor cores, in the spec.
  for (const auto& m : response.models()) {
    EXPECT_EQ(m.nvfp4_hugging_face_id(),
              m.name() == "kimi-k2.5" ? "nvidia/Kimi-K2.5-NVFP4" : "")
        << m.name();
  }
  for (const char* name :
       {"b200-sxm-180gb", "b300-sxm-288gb", "gb200-nvl72", "gb300-nvl72"}) {
    EXPECT_THAT(hardware, ::testing::Contains(name));
  }
  for (const char* name : {"kimi-k2.5", "glm-5", "qwen3.5-397b-a17b",
                           "minimax-m2.5", "deepseek-v3.2"}) {
    EXPECT_THAT(models, ::testing::Contains(name));
  }
  EXPECT_THAT(std::vector<std::string>(response.methods().begin(),
                                       response.methods().end()),
              ::testing::Contains("rl"));
  EXPECT_EQ(response.dtypes_size(), 3);
  EXPECT_EQ(response.operators_size(), simulator::kNumOpKinds);
  EXPECT_EQ(response.dims_size(), simulator::kNumShardDims);
}

TEST_F(ServiceTest, AdmissionControlRefusesBeyondTheQueue) {
  StartServer(/*slots=*/1, /*queued=*/1);
  script_.block_until_cancelled = true;
  script_.improvements = 0;
  grpc::ClientContext a_ctx, b_ctx;
  auto a = stub_->PlanSharding(&a_ctx, MakePlanRequest("llama-3.1-8b", 8));
  PlanUpdate update;
  ASSERT_TRUE(a->Read(&update));
  EXPECT_EQ(update.kind(), "baseline");
  ASSERT_TRUE(Eventually([&] { return script_.started() == 1; }));
  auto b = stub_->PlanSharding(&b_ctx, MakePlanRequest("llama-3.1-8b", 8));
  ASSERT_TRUE(b->Read(&update))
      << "a queued search still gets its baseline at once";
  EXPECT_EQ(update.kind(), "baseline");
  EXPECT_DOUBLE_EQ(server_->metrics().queued_searches().Value(), 1);
  EXPECT_DOUBLE_EQ(server_->metrics().active_searches().Value(), 1);

  StreamResult c = Plan(MakePlanRequest("llama-3.1-8b", 8));
  EXPECT_EQ(c.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(c.status.error_message(), HasSubstr("queue full"));

  // Cancelling the queued call removes it; cancelling the running one frees the
  // slot.
  b_ctx.TryCancel();
  EXPECT_EQ(b->Finish().error_code(), grpc::StatusCode::CANCELLED);
  ASSERT_TRUE(Eventually([&] { return server_->scheduler().queued() == 0; }));
  a_ctx.TryCancel();
  EXPECT_EQ(a->Finish().error_code(), grpc::StatusCode::CANCELLED);
  ASSERT_TRUE(Eventually([&] { return server_->scheduler().running() == 0; }));
  EXPECT_EQ(script_.started(), 1) << "the removed call never searched";
  EXPECT_EQ(script_.cancelled(), 1);
  EXPECT_DOUBLE_EQ(server_->metrics().active_searches().Value(), 0);
  EXPECT_DOUBLE_EQ(server_->metrics().slot_evaluations(0).Value(), 0);
}

TEST_F(ServiceTest, ClientDeadlineStopsTheSearch) {
  StartServer(1, 1);
  script_.block_until_cancelled = true;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(300));
  auto reader =
      stub_->PlanSharding(&context, MakePlanRequest("llama-3.1-8b", 8));
  PlanUpdate update;
  while (reader->Read(&update)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  ASSERT_TRUE(Eventually([&] { return script_.cancelled() == 1; }));
  ASSERT_TRUE(Eventually([&] { return server_->scheduler().running() == 0; }));
}

TEST_F(ServiceTest, ShutdownEndsOpenStreamsWithAFinalUpdate) {
  StartServer(1, 2);
  script_.block_until_cancelled = true;
  script_.improvements = 1;
  grpc::ClientContext running_ctx, queued_ctx;
  auto running =
      stub_->PlanSharding(&running_ctx, MakePlanRequest("llama-3.1-8b", 8));
  PlanUpdate update;
  ASSERT_TRUE(running->Read(&update));
  ASSERT_TRUE(Eventually([&] { return script_.started() == 1; }));
  auto queued =
      stub_->PlanSharding(&queued_ctx, MakePlanRequest("llama-3.1-8b", 8));
  ASSERT_TRUE(queued->Read(&update));

  std::thread stopper([&] { server_->Shutdown(); });
  std::vector<PlanUpdate> running_updates, queued_updates;
  while (running->Read(&update)) running_updates.push_back(update);
  while (queued->Read(&update)) queued_updates.push_back(update);
  grpc::Status running_status = running->Finish();
  grpc::Status queued_status = queued->Finish();
  stopper.join();
  ASSERT_TRUE(running_status.ok()) << running_status.error_message();
  ASSERT_TRUE(queued_status.ok()) << queued_status.error_message();
  ASSERT_FALSE(running_updates.empty());
  EXPECT_TRUE(running_updates.back().final());
  EXPECT_EQ(running_updates.back().summary().stop_reason(), "shutdown");
  EXPECT_NEAR(running_updates.back().speedup_vs_baseline(), 1.1, 1e-9)
      << "best so far";
  ASSERT_FALSE(queued_updates.empty());
  EXPECT_TRUE(queued_updates.back().final());
  EXPECT_EQ(queued_updates.back().summary().stop_reason(), "shutdown");
  EXPECT_EQ(script_.started(), 1);

  // New calls are refused (the channel fails to connect or the server says
  // UNAVAILABLE).
  StreamResult after = Plan(MakePlanRequest("llama-3.1-8b", 8));
  EXPECT_EQ(after.status.error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(ServiceTest, SecondSearchWarmStartsFromTheStore) {
  StartServer();
  script_.improvements = 2;
  StreamResult first = Plan(MakePlanRequest("llama-3.1-8b", 8, 2048, 512));
  ASSERT_TRUE(first.status.ok());
  EXPECT_FALSE(first.updates.back().summary().warm_started());
  EXPECT_GT(server_->metrics().elite_store_plans().Value(), 0);

  StreamResult second = Plan(MakePlanRequest("llama-3.1-8b", 8, 2048, 512));
  ASSERT_TRUE(second.status.ok());
  EXPECT_TRUE(second.updates.back().summary().warm_started());
  EXPECT_EQ(second.updates.back().summary().warm_start_source(), "exact");

  StreamResult nearby = Plan(MakePlanRequest("llama-3.1-8b", 8, 4096, 512));
  ASSERT_TRUE(nearby.status.ok());
  EXPECT_THAT(nearby.updates.back().summary().warm_start_source(),
              StartsWith("nearest:"));

  shardplan::v1::PlanRequest cold =
      MakePlanRequest("llama-3.1-8b", 8, 2048, 512);
  cold.mutable_options()->set_warm_start(false);
  StreamResult opted_out = Plan(cold);
  ASSERT_TRUE(opted_out.status.ok());
  EXPECT_FALSE(opted_out.updates.back().summary().warm_started());

  const std::vector<std::string> sources = script_.sources();
  ASSERT_EQ(sources.size(), 4u);
  EXPECT_EQ(sources[0], "");
  EXPECT_EQ(sources[1], "exact");
  EXPECT_THAT(sources[2], StartsWith("nearest:"));
  EXPECT_EQ(sources[3], "");
}

TEST_F(ServiceTest, WorksWithoutAStore) {
  StartServer(2, 4, /*with_store=*/false);
  StreamResult result = Plan(MakePlanRequest("llama-3.1-8b", 8));
  ASSERT_TRUE(result.status.ok());
  EXPECT_FALSE(result.updates.back().summary().warm_started());
}

TEST_F(ServiceTest, SearcherFailureEndsTheStreamWithItsStatus) {
  StartServer();
  script_.fail_internal = true;
  StreamResult result = Plan(MakePlanRequest("llama-3.1-8b", 8));
  EXPECT_EQ(result.status.error_code(), grpc::StatusCode::INTERNAL);
  ASSERT_FALSE(result.updates.empty());
  EXPECT_EQ(result.updates.front().kind(), "baseline");
}

TEST_F(ServiceTest, SlowReaderGetsCoalescedUpdates) {
  StartServer();
  constexpr int kImprovements = 5000;
  script_.improvements = kImprovements;
  absl::Notification reported;
  script_.finished_improvements = &reported;
  grpc::ClientContext context;
  auto reader =
      stub_->PlanSharding(&context, MakePlanRequest("llama-3.1-8b", 8));
  reported.WaitForNotification();  // nothing read until the search reported
                                   // everything
  std::vector<PlanUpdate> updates;
  PlanUpdate update;
  while (reader->Read(&update)) updates.push_back(update);
  ASSERT_TRUE(reader->Finish().ok());
  ASSERT_GE(updates.size(), 2u);
  EXPECT_LT(updates.size(), static_cast<size_t>(kImprovements))
      << "coalesced, not buffered";
  EXPECT_EQ(updates.front().kind(), "baseline");
  EXPECT_TRUE(updates.back().final());
  EXPECT_NEAR(updates.back().speedup_vs_baseline(), 1.0 + 0.1 * kImprovements,
              1e-6)
      << "the latest best always arrives";
  for (size_t i = 1; i < updates.size(); ++i) {
    EXPECT_GE(updates[i].speedup_vs_baseline(),
              updates[i - 1].speedup_vs_baseline());
  }
}

// The server's own factory (policy::CreateSearcher) without policy/rl/
// registered, as in a build without LibTorch (server_test never links it):
// "rl" is a valid method this server cannot run.
TEST_F(ServiceTest, RlWithoutItsLibraryIsFailedPrecondition) {
  ServerOptions options;
  options.grpc_address = "127.0.0.1:0";
  options.metrics_address = "";
  options.store_path = "";
  options.shutdown_grace = absl::Seconds(5);
  absl::StatusOr<std::unique_ptr<PlannerServer>> server =
      PlannerServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  server_ = *std::move(server);
  channel_ =
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_->grpc_port()),
                          grpc::InsecureChannelCredentials());
  stub_ = shardplan::v1::ShardingPlanner::NewStub(channel_);
  shardplan::v1::PlanRequest request = MakePlanRequest("llama-3.1-8b", 8);
  request.mutable_options()->set_method("rl");
  StreamResult result = Plan(request);
  EXPECT_EQ(result.status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(result.status.error_message(),
              ::testing::HasSubstr("available: megatron, random"));
}

// EvaluatePlan of a layout the named engine cannot launch: infeasible, the
// reason naming the rule and its source; runnableEngines lists who can.
TEST_F(ServiceTest, EvaluatePlanSaysWhichEngineCannotRunThePlan) {
  StartServer();
  shardplan::v1::EvaluateRequest evaluate;
  evaluate.mutable_model()->set_catalog_name("deepseek-v3");
  evaluate.mutable_cluster()->set_hardware("h100-sxm-80gb");
  evaluate.mutable_cluster()->set_num_gpus(16);
  evaluate.mutable_cluster()->set_gpus_per_node(8);
  evaluate.mutable_workload()->set_input_tokens(1024);
  evaluate.mutable_workload()->set_output_tokens(256);
  evaluate.mutable_workload()->set_concurrency(16);
  evaluate.mutable_workload()->set_engine("sglang");
  evaluate.mutable_workload()->set_engine_version("0.5.6");
  shardplan::v1::Plan* plan = evaluate.mutable_plan();
  plan->set_dp(8);
  plan->set_tp(1);
  plan->set_pp(2);
  plan->set_ep(8);
  shardplan::v1::EvaluateResponse response;
  grpc::ClientContext context;
  grpc::Status status = stub_->EvaluatePlan(&context, evaluate, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_FALSE(response.prediction().feasible());
  EXPECT_THAT(response.prediction().infeasible_reason(),
              HasSubstr("rule sglang-pp-with-dp-attention"));
  EXPECT_THAT(response.prediction().infeasible_reason(),
              HasSubstr("sglang/issues/9805"));
  EXPECT_THAT(response.prediction().runnable_engines(),
              ::testing::ElementsAre("trtllm"));
  // The same plan for TensorRT-LLM: predicted as usual.
  evaluate.mutable_workload()->set_engine("trtllm");
  evaluate.mutable_workload()->set_engine_version("");
  grpc::ClientContext context2;
  status = stub_->EvaluatePlan(&context2, evaluate, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_THAT(response.prediction().infeasible_reason(),
              ::testing::Not(HasSubstr("rule ")));
  // A version that is not a release number.
  evaluate.mutable_workload()->set_engine_version("latest");
  grpc::ClientContext context3;
  status = stub_->EvaluatePlan(&context3, evaluate, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("workload.engine_version"));
}

// A real search that stops at its evaluation budget reports "budget" in the
// final summary, not "exhausted": a sampling method on a space larger than
// its budget, and a rule whose disaggregated sweep ("only") is cut at its
// share; a sweep that covers every candidate says "exhausted".
TEST_F(ServiceTest, SearchStoppedAtItsBudgetReportsBudget) {
  real_searchers_ = true;
  StartServer();
  struct Case {
    const char* model;
    int gpus;
    const char* method;
    const char* disaggregation;
    int max_evaluations;
    const char* stop_reason;
  };
  for (const Case& c :
       {Case{"llama-3.1-70b", 16, "anneal", "off", 100, "budget"},
        Case{"llama-3.1-70b", 16, "random", "auto", 200, "budget"},
        Case{"llama-3.1-70b", 16, "megatron", "only", 20, "budget"},
        Case{"llama-3.1-8b", 8, "megatron", "only", 1000, "exhausted"}}) {
    SCOPED_TRACE(absl::StrCat(c.model, " ", c.method, " ", c.disaggregation,
                              " ", c.max_evaluations));
    shardplan::v1::PlanRequest request = MakePlanRequest(c.model, c.gpus);
    request.mutable_options()->set_method(c.method);
    request.mutable_options()->set_disaggregation(c.disaggregation);
    request.mutable_options()->set_max_evaluations(c.max_evaluations);
    request.mutable_options()->set_max_seconds(60);
    StreamResult result = Plan(request);
    ASSERT_TRUE(result.status.ok()) << result.status.error_message();
    ASSERT_FALSE(result.updates.empty());
    const PlanUpdate& last = result.updates.back();
    ASSERT_TRUE(last.final());
    EXPECT_EQ(last.summary().stop_reason(), c.stop_reason);
    if (std::string(c.stop_reason) == "budget") {
      EXPECT_GE(last.summary().evaluations(), c.max_evaluations / 2);
    } else {
      EXPECT_LT(last.summary().evaluations(), c.max_evaluations / 2);
    }
  }
}

// Every streamed plan lists the engines that can launch it; with an engine
// named, that engine is among them for every plan, top plan and frontier
// point; with none, each lists at least one.
TEST_F(ServiceTest, StreamedPlansListTheEnginesThatCanRunThem) {
  real_searchers_ = true;
  StartServer();
  for (const std::string engine : {"", "sglang", "vllm", "trtllm"}) {
    SCOPED_TRACE(engine);
    shardplan::v1::PlanRequest request = MakePlanRequest("deepseek-v3", 16);
    request.mutable_workload()->set_engine(engine);
    request.mutable_options()->set_max_evaluations(200);
    StreamResult result = Plan(request);
    ASSERT_TRUE(result.status.ok()) << result.status.error_message();
    ASSERT_FALSE(result.updates.empty());
    auto check = [&](const shardplan::v1::Prediction& p) {
      if (!p.feasible()) return;
      EXPECT_FALSE(p.runnable_engines().empty());
      if (!engine.empty()) {
        EXPECT_THAT(p.runnable_engines(), ::testing::Contains(engine));
      }
    };
    for (const PlanUpdate& update : result.updates) {
      check(update.prediction());
      for (const auto& top : update.top_plans()) check(top.prediction());
      for (const auto& point : update.frontier()) check(point.prediction());
    }
    EXPECT_TRUE(result.updates.back().prediction().feasible());
  }
}

// The load a prediction is for: concurrency is requests in flight per
// replica, spread over its attention dp ranks; every streamed prediction and
// EvaluatePlan say both (batchSize, batchPerRank).
TEST_F(ServiceTest, PredictionsCarryTheBatchPerRank) {
  real_searchers_ = true;
  StartServer();
  shardplan::v1::EvaluateRequest evaluate;
  evaluate.mutable_model()->set_catalog_name("qwen3-235b-a22b");
  evaluate.mutable_cluster()->set_hardware("h100-sxm-80gb");
  evaluate.mutable_cluster()->set_num_gpus(8);
  evaluate.mutable_cluster()->set_gpus_per_node(8);
  evaluate.mutable_workload()->set_input_tokens(1024);
  evaluate.mutable_workload()->set_output_tokens(1024);
  evaluate.mutable_workload()->set_concurrency(64);
  evaluate.mutable_workload()->set_weight_dtype("fp8");
  evaluate.mutable_plan()->set_dp(8);
  evaluate.mutable_plan()->set_tp(1);
  evaluate.mutable_plan()->set_ep(8);
  shardplan::v1::EvaluateResponse response;
  grpc::ClientContext context;
  grpc::Status status = stub_->EvaluatePlan(&context, evaluate, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const shardplan::v1::Prediction& p = response.prediction();
  ASSERT_TRUE(p.feasible()) << p.infeasible_reason();
  EXPECT_EQ(p.batch_size(), 64);
  EXPECT_EQ(p.batch_per_rank(), 8);
  // Little's law: 64 requests in flight, not 8 ranks x 64.
  EXPECT_NEAR(p.output_tokens_per_s() * p.tpot_ms() / 1e3, 64, 1e-6);

  shardplan::v1::PlanRequest request = MakePlanRequest("qwen3-235b-a22b", 16);
  request.mutable_workload()->set_concurrency(64);
  request.mutable_workload()->set_weight_dtype("fp8");
  request.mutable_options()->set_max_evaluations(200);
  StreamResult result = Plan(request);
  ASSERT_TRUE(result.status.ok()) << result.status.error_message();
  int checked = 0;
  for (const PlanUpdate& update : result.updates) {
    const shardplan::v1::Prediction& q = update.prediction();
    if (!q.feasible()) continue;
    const shardplan::v1::Plan& plan =
        q.disaggregated() ? update.plan().decode() : update.plan();
    const int dp = std::max(1, plan.dp());
    SCOPED_TRACE(update.ShortDebugString().substr(0, 200));
    EXPECT_GT(q.batch_per_rank(), 0);
    if (!q.disaggregated()) {
      EXPECT_EQ(q.batch_size(), 64);
      EXPECT_EQ(q.batch_per_rank(), (64 + dp - 1) / dp);
    } else {
      EXPECT_EQ(q.decode_pool().batch_per_rank(), q.batch_per_rank());
      EXPECT_EQ(q.batch_per_rank(), (q.batch_size() + dp - 1) / dp);
    }
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

// A call at a request rate (its streamed plans priced by the chain), with the
// scripted aggregated search only.
shardplan::v1::PlanRequest RatedRequest() {
  shardplan::v1::PlanRequest rated = MakePlanRequest("llama-3.1-8b", 8);
  rated.mutable_workload()->set_request_rate(2);
  rated.mutable_options()->set_disaggregation("off");
  return rated;
}

// At a request rate every streamed plan is priced by the prompt queue's chain
// (up to ~90 ms of CPU): on the search's worker slot, not on the gRPC thread.
// A call queued behind a running search gets no update until the slot frees
// (a gRPC thread that priced it would have written its baseline at once), and
// the baseline then carries the traffic prediction EvaluatePlan gives.
TEST_F(ServiceTest, RatedPlansArePricedOnTheWorkerSlot) {
  StartServer(/*slots=*/1, /*queued=*/2);
  grpc::ClientContext running_ctx;
  auto running = OccupyTheSlot(running_ctx);
  PlanUpdate update;

  const shardplan::v1::PlanRequest rated = RatedRequest();
  grpc::ClientContext rated_ctx;
  auto reader = stub_->PlanSharding(&rated_ctx, rated);
  absl::Notification first_read;
  PlanUpdate first;
  bool read_ok = false;
  std::thread read_first([&] {
    read_ok = reader->Read(&first);
    first_read.Notify();
  });
  ASSERT_TRUE(Eventually([&] { return server_->scheduler().queued() == 1; }));
  EXPECT_FALSE(first_read.WaitForNotificationWithTimeout(absl::Seconds(1)))
      << "a queued rated call was priced before its search started";
  EXPECT_DOUBLE_EQ(server_->metrics().traffic_pricings().Value(), 0);

  running_ctx.TryCancel();
  EXPECT_EQ(running->Finish().error_code(), grpc::StatusCode::CANCELLED);
  ASSERT_TRUE(first_read.WaitForNotificationWithTimeout(absl::Seconds(10)));
  read_first.join();
  ASSERT_TRUE(read_ok);
  EXPECT_EQ(first.kind(), "baseline");
  EXPECT_EQ(first.evaluations(), 1);
  EXPECT_GT(first.prediction().ttft_ms_p99(), 0);
  EXPECT_GT(first.prediction().max_request_rate(), 0);
  EXPECT_DOUBLE_EQ(server_->metrics().traffic_pricings().Value(), 1);

  // EvaluatePlan at a rate prices on a slot too: free it first.
  rated_ctx.TryCancel();
  while (reader->Read(&update)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);

  shardplan::v1::EvaluateRequest evaluate;
  *evaluate.mutable_model() = rated.model();
  *evaluate.mutable_cluster() = rated.cluster();
  *evaluate.mutable_workload() = rated.workload();
  *evaluate.mutable_plan() = first.plan();
  shardplan::v1::EvaluateResponse response;
  grpc::ClientContext evaluate_ctx;
  evaluate_ctx.set_deadline(std::chrono::system_clock::now() +
                            std::chrono::seconds(20));
  grpc::Status status = stub_->EvaluatePlan(&evaluate_ctx, evaluate, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_DOUBLE_EQ(first.prediction().ttft_ms_p99(),
                   response.prediction().ttft_ms_p99());
  EXPECT_DOUBLE_EQ(first.prediction().max_request_rate(),
                   response.prediction().max_request_rate());
  EXPECT_DOUBLE_EQ(first.prediction().goodput_requests_per_s(),
                   response.prediction().goodput_requests_per_s());
}

// Each distinct streamed plan is priced once: the final update's best is the
// last improvement, whose pricing it reuses (baseline + 3 improvements = 4).
TEST_F(ServiceTest, RatedCallPricesEachStreamedPlanOnce) {
  StartServer();
  script_.improvements = 3;
  const shardplan::v1::PlanRequest rated = RatedRequest();
  StreamResult result = Plan(rated);
  ASSERT_TRUE(result.status.ok()) << result.status.error_message();
  ASSERT_EQ(result.updates.size(), 5u);
  EXPECT_EQ(result.updates.front().kind(), "baseline");
  const PlanUpdate& last = result.updates[3];
  const PlanUpdate& final_update = result.updates.back();
  EXPECT_EQ(last.kind(), "improvement");
  EXPECT_TRUE(final_update.final());
  EXPECT_EQ(final_update.plan().SerializeAsString(),
            last.plan().SerializeAsString());
  EXPECT_EQ(final_update.prediction().SerializeAsString(),
            last.prediction().SerializeAsString());
  EXPECT_GT(final_update.prediction().ttft_ms_p99(), 0);
  EXPECT_DOUBLE_EQ(server_->metrics().traffic_pricings().Value(), 4);
}

// A client that cancels mid-search costs no further pricing: the final update,
// which would not be written, is not priced.
TEST_F(ServiceTest, CancelledRatedCallStopsPricing) {
  StartServer(/*slots=*/1, /*queued=*/1);
  script_.block_until_cancelled = true;
  script_.improvements = 1;
  const shardplan::v1::PlanRequest rated = RatedRequest();
  grpc::ClientContext context;
  auto reader = stub_->PlanSharding(&context, rated);
  PlanUpdate update;
  ASSERT_TRUE(reader->Read(&update));
  EXPECT_EQ(update.kind(), "baseline");
  ASSERT_TRUE(reader->Read(&update));
  EXPECT_EQ(update.kind(), "improvement");
  EXPECT_DOUBLE_EQ(server_->metrics().traffic_pricings().Value(), 2);
  context.TryCancel();
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  ASSERT_TRUE(Eventually([&] { return server_->scheduler().running() == 0; }));
  EXPECT_DOUBLE_EQ(server_->metrics().traffic_pricings().Value(), 2);
}

// A rated call still queued at shutdown gets what a queued call always got,
// the baseline then a final update (stop reason shutdown), priced once on the
// draining thread.
TEST_F(ServiceTest, QueuedRatedCallAtShutdownGetsBaselineAndFinal) {
  StartServer(/*slots=*/1, /*queued=*/1);
  grpc::ClientContext running_ctx, queued_ctx;
  auto running = OccupyTheSlot(running_ctx);
  PlanUpdate update;
  const shardplan::v1::PlanRequest rated = RatedRequest();
  auto queued = stub_->PlanSharding(&queued_ctx, rated);
  ASSERT_TRUE(Eventually([&] { return server_->scheduler().queued() == 1; }));

  std::thread stopper([&] { server_->Shutdown(); });
  std::vector<PlanUpdate> updates;
  while (queued->Read(&update)) updates.push_back(update);
  const grpc::Status status = queued->Finish();
  while (running->Read(&update)) {
  }
  EXPECT_TRUE(running->Finish().ok());
  stopper.join();
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(updates.size(), 2u);
  EXPECT_EQ(updates[0].kind(), "baseline");
  EXPECT_GT(updates[0].prediction().ttft_ms_p99(), 0);
  EXPECT_TRUE(updates[1].final());
  EXPECT_EQ(updates[1].summary().stop_reason(), "shutdown");
  EXPECT_EQ(updates[1].prediction().SerializeAsString(),
            updates[0].prediction().SerializeAsString());
  EXPECT_DOUBLE_EQ(server_->metrics().traffic_pricings().Value(), 1);
}

shardplan::v1::EvaluateRequest RatedEvaluateRequest() {
  const shardplan::v1::PlanRequest rated = RatedRequest();
  shardplan::v1::EvaluateRequest evaluate;
  *evaluate.mutable_model() = rated.model();
  *evaluate.mutable_cluster() = rated.cluster();
  *evaluate.mutable_workload() = rated.workload();
  evaluate.mutable_workload()->set_max_ttft_ms(2000);
  evaluate.mutable_workload()->set_slo_percentile(99);
  evaluate.mutable_plan()->set_tp(8);
  return evaluate;
}

// EvaluatePlan at a request rate prices its plan on a worker slot, like the
// streamed plans: behind a running search it waits in the queue (a gRPC thread
// that priced it would have answered at once), is taken back out when its
// deadline passes (DEADLINE_EXCEEDED) or its client cancels (CANCELLED), and
// is answered once the slot frees, counted in the traffic pricing metrics.
TEST_F(ServiceTest, RatedEvaluatePlanIsPricedOnAWorkerSlot) {
  StartServer(/*slots=*/1, /*queued=*/2);
  grpc::ClientContext running_ctx;
  auto running = OccupyTheSlot(running_ctx);
  const shardplan::v1::EvaluateRequest evaluate = RatedEvaluateRequest();

  // The deadline passes while it waits.
  {
    shardplan::v1::EvaluateResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::milliseconds(500));
    const grpc::Status status =
        stub_->EvaluatePlan(&context, evaluate, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED)
        << status.error_message();
    ASSERT_TRUE(Eventually([&] { return server_->scheduler().queued() == 0; }));
  }
  // The client cancels while it waits.
  {
    shardplan::v1::EvaluateResponse response;
    grpc::ClientContext context;
    grpc::Status status;
    std::thread call(
        [&] { status = stub_->EvaluatePlan(&context, evaluate, &response); });
    ASSERT_TRUE(Eventually([&] { return server_->scheduler().queued() == 1; }));
    context.TryCancel();
    call.join();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED);
    ASSERT_TRUE(Eventually([&] { return server_->scheduler().queued() == 0; }));
  }
  EXPECT_DOUBLE_EQ(server_->metrics().traffic_pricings().Value(), 0);

  // Answered once the slot frees.
  shardplan::v1::EvaluateResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(20));
  grpc::Status status;
  std::thread call(
      [&] { status = stub_->EvaluatePlan(&context, evaluate, &response); });
  ASSERT_TRUE(Eventually([&] { return server_->scheduler().queued() == 1; }));
  running_ctx.TryCancel();
  PlanUpdate update;
  while (running->Read(&update)) {
  }
  EXPECT_EQ(running->Finish().error_code(), grpc::StatusCode::CANCELLED);
  call.join();
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_TRUE(response.prediction().feasible())
      << response.prediction().infeasible_reason();
  EXPECT_GT(response.prediction().ttft_ms_p99(), 0);
  EXPECT_LE(response.prediction().ttft_ms_p99(), 2000);
  EXPECT_GT(response.prediction().max_request_rate(), 2);
  EXPECT_DOUBLE_EQ(server_->metrics().traffic_pricings().Value(), 1);
  EXPECT_GT(server_->metrics().traffic_pricing_seconds().Value(), 0);

  // Without a rate the plan is answered on the gRPC thread, with no pricing.
  shardplan::v1::EvaluateRequest closed_loop = evaluate;
  closed_loop.mutable_workload()->clear_request_rate();
  closed_loop.mutable_workload()->clear_slo_percentile();
  grpc::ClientContext closed_ctx;
  status = stub_->EvaluatePlan(&closed_ctx, closed_loop, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.prediction().ttft_ms_p99(), 0);
  EXPECT_DOUBLE_EQ(server_->metrics().traffic_pricings().Value(), 1);
}

// The pool's cap covers EvaluatePlan's pricing: with every slot busy and no
// room to wait, a rated call is refused at once with RESOURCE_EXHAUSTED (a
// call without a rate needs no slot and is answered). A rated call still
// waiting when the server drains gets UNAVAILABLE.
TEST_F(ServiceTest, RatedEvaluatePlanIsAdmittedUnderThePoolsCap) {
  StartServer(/*slots=*/1, /*queued=*/1);
  grpc::ClientContext running_ctx, queued_ctx;
  auto running = OccupyTheSlot(running_ctx);
  const shardplan::v1::EvaluateRequest evaluate = RatedEvaluateRequest();
  shardplan::v1::EvaluateResponse queued_response;
  grpc::Status queued_status;
  std::thread queued([&] {
    queued_status =
        stub_->EvaluatePlan(&queued_ctx, evaluate, &queued_response);
  });
  ASSERT_TRUE(Eventually([&] { return server_->scheduler().queued() == 1; }));

  shardplan::v1::EvaluateResponse response;
  grpc::ClientContext refused_ctx;
  const absl::Time start = absl::Now();
  grpc::Status status = stub_->EvaluatePlan(&refused_ctx, evaluate, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << status.error_message();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  shardplan::v1::EvaluateRequest closed_loop = evaluate;
  closed_loop.mutable_workload()->clear_request_rate();
  closed_loop.mutable_workload()->clear_slo_percentile();
  grpc::ClientContext closed_ctx;
  status = stub_->EvaluatePlan(&closed_ctx, closed_loop, &response);
  EXPECT_TRUE(status.ok()) << status.error_message();

  std::thread stopper([&] { server_->Shutdown(); });
  queued.join();
  EXPECT_EQ(queued_status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << queued_status.error_message();
  PlanUpdate update;
  while (running->Read(&update)) {
  }
  running->Finish();
  stopper.join();
  EXPECT_DOUBLE_EQ(server_->metrics().traffic_pricings().Value(), 0);
}
}  // namespace
}  // namespace shardplan::server
