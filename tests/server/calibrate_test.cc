// The Calibrate RPC in-process: a profile fitted from measured runs is stored,
// used by a later EvaluatePlan (workload.calibration_profile), survives a
// restart on the same store, and bad runs or names are INVALID_ARGUMENT
// naming the field and the run's source.
#include <cmath>
#include <iterator>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/spec_text.h"
#include "server/server.h"
#include "server/store/profile_store.h"
#include "shardplan/v1/shardplan.grpc.pb.h"
#include "simulator/calibration.h"
#include "simulator/calibration_harness.h"
#include "tests/common/measured_runs.h"
#include "tests/server/test_util.h"

namespace shardplan::server {
namespace {

using shardplan::v1::CalibrateRequest;
using shardplan::v1::CalibrateResponse;
using ::testing::HasSubstr;
using testing::TempDir;

// All eight measured runs (tests/common/measured_runs.h), sources
// "runs.csv:2" ... "runs.csv:9".
CalibrateRequest MakeCalibrateRequest(const std::string& name) {
  return testing_runs::MeasuredCalibrateRequest(
      name, "runs.csv",
      static_cast<int>(std::size(testing_runs::kLlama70bH100Runs)));
}

shardplan::v1::EvaluateRequest MakeEvaluate(const std::string& profile) {
  shardplan::v1::EvaluateRequest request;
  request.mutable_model()->set_catalog_name("llama-3.1-70b");
  request.mutable_cluster()->set_hardware("h100-sxm-80gb");
  request.mutable_cluster()->set_num_gpus(4);
  shardplan::v1::Workload* w = request.mutable_workload();
  w->set_input_tokens(1024);
  w->set_output_tokens(1024);
  w->set_concurrency(16);
  w->set_weight_dtype("fp8");
  w->set_engine("vllm");
  w->set_calibration_profile(profile);
  request.mutable_plan()->set_tp(4);
  request.mutable_plan()->set_dp(1);
  request.mutable_plan()->set_pp(1);
  request.mutable_plan()->set_batch_size(16);
  return request;
}

class CalibrateTest : public ::testing::Test {
 protected:
  void StartServer() {
    ServerOptions options;
    options.grpc_address = "127.0.0.1:0";
    options.metrics_address = "";
    options.store_path = dir_.File("store.db");
    options.shutdown_grace = absl::Seconds(5);
    absl::StatusOr<std::unique_ptr<PlannerServer>> server =
        PlannerServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    stub_ = shardplan::v1::ShardingPlanner::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_->grpc_port()),
                            grpc::InsecureChannelCredentials()));
  }
  void StopServer() {
    server_->Shutdown();
    server_.reset();
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
  }
  grpc::Status Calibrate(const CalibrateRequest& request,
                         CalibrateResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(60));
    return stub_->Calibrate(&context, request, response);
  }
  grpc::Status Evaluate(const shardplan::v1::EvaluateRequest& request,
                        shardplan::v1::EvaluateResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(20));
    return stub_->EvaluatePlan(&context, request, response);
  }

  TempDir dir_;
  std::unique_ptr<PlannerServer> server_;
  std::unique_ptr<shardplan::v1::ShardingPlanner::Stub> stub_;
};

TEST_F(CalibrateTest, StoredProfileIsUsedByEvaluateAndSurvivesARestart) {
  StartServer();
  shardplan::v1::EvaluateResponse unknown;
  grpc::Status status = Evaluate(MakeEvaluate("my-cluster"), &unknown);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("h100-vllm"))
      << "lists the known profiles";

  CalibrateResponse response;
  status = Calibrate(MakeCalibrateRequest("my-cluster"), &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.name(), "my-cluster");
  EXPECT_EQ(response.engine(), "vllm");
  EXPECT_EQ(response.base_profile(), "h100-vllm");
  EXPECT_EQ(response.fit_runs(), 6);
  EXPECT_EQ(response.held_out_runs(), 2);
  EXPECT_GT(response.held_out_tpot_mape_before(), 0);
  EXPECT_GT(response.held_out_tpot_mape_after(), 0);
  EXPECT_GT(response.parameters().hbm_efficiency(), 0);
  EXPECT_THAT(response.report(), HasSubstr("held out"));

  shardplan::v1::EvaluateResponse base, calibrated;
  ASSERT_TRUE(Evaluate(MakeEvaluate(""), &base).ok());
  status = Evaluate(MakeEvaluate("my-cluster"), &calibrated);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(calibrated.prediction().calibration_profile(), "my-cluster");
  EXPECT_EQ(base.prediction().calibration_profile(), "h100-vllm");
  EXPECT_NE(calibrated.prediction().tpot_ms(), base.prediction().tpot_ms())
      << "the fitted parameters are in use";

  // Another engine named beside a vLLM profile is a contradiction.
  shardplan::v1::EvaluateRequest other_engine = MakeEvaluate("my-cluster");
  other_engine.mutable_workload()->set_engine("sglang");
  shardplan::v1::EvaluateResponse ignored;
  status = Evaluate(other_engine, &ignored);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("is for engine vllm"));

  StopServer();
  StartServer();  // the same store file
  shardplan::v1::EvaluateResponse after_restart;
  status = Evaluate(MakeEvaluate("my-cluster"), &after_restart);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(after_restart.prediction().calibration_profile(), "my-cluster");
  EXPECT_DOUBLE_EQ(after_restart.prediction().tpot_ms(),
                   calibrated.prediction().tpot_ms());
}

TEST_F(CalibrateTest, BadRunsAndNamesAreInvalidArgument) {
  StartServer();
  struct Case {
    std::string what;
    CalibrateRequest request;
    std::string message;
  };
  std::vector<Case> cases;
  cases.push_back({"built-in name", MakeCalibrateRequest("h100-vllm"),
                   "built-in calibration profile"});
  cases.push_back({"engine-agnostic name",
                   MakeCalibrateRequest("h100-engine-agnostic"),
                   "built-in calibration profile"});
  cases.push_back({"bad name", MakeCalibrateRequest("a b"), "[A-Za-z0-9._-]"});
  CalibrateRequest few = MakeCalibrateRequest("x");
  few.mutable_runs()->DeleteSubrange(3, few.runs_size() - 3);
  cases.push_back({"too few", few, "runs must hold 4"});
  CalibrateRequest bad_tpot = MakeCalibrateRequest("x");
  bad_tpot.mutable_runs(2)->set_tpot_ms(-1);
  cases.push_back({"tpot", bad_tpot, "runs[2] (\"runs.csv:4\").tpot_ms"});
  CalibrateRequest bad_model = MakeCalibrateRequest("x");
  bad_model.mutable_runs(1)->set_model("no/such-model");
  cases.push_back({"model", bad_model, "runs[1] (\"runs.csv:3\").model"});
  CalibrateRequest mixed = MakeCalibrateRequest("x");
  mixed.mutable_runs(5)->set_engine("sglang");
  cases.push_back({"engines", mixed, "a profile is for one engine"});
  CalibrateRequest unknown_hardware = MakeCalibrateRequest("x");
  unknown_hardware.mutable_runs(0)->set_hardware("a100-sxm-80gb");
  cases.push_back(
      {"hardware", unknown_hardware, "runs[0] (\"runs.csv:2\").hardware"});
  CalibrateRequest queued = MakeCalibrateRequest("x");
  queued.mutable_runs(0)->set_concurrency(512);
  cases.push_back({"queueing", queued, "concurrency must be at most 256"});
  for (const Case& c : cases) {
    CalibrateResponse response;
    grpc::Status status = Calibrate(c.request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << c.what;
    EXPECT_THAT(status.error_message(), HasSubstr(c.message)) << c.what;
  }
  // Nothing was stored.
  shardplan::v1::EvaluateResponse ignored;
  EXPECT_EQ(Evaluate(MakeEvaluate("x"), &ignored).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST(CalibrationProfileStoreTest, AnotherReplicaSeesTheProfileAfterRefresh) {
  TempDir dir;
  EliteStore::Options options;
  options.path = dir.File("shared.db");
  auto store_a = EliteStore::Open(options);
  auto store_b = EliteStore::Open(options);
  ASSERT_TRUE(store_a.ok() && store_b.ok());
  CalibrationProfileStore a(std::shared_ptr<EliteStore>(*std::move(store_a)),
                            absl::Hours(1));
  CalibrationProfileStore b(std::shared_ptr<EliteStore>(*std::move(store_b)),
                            absl::Hours(1));
  ASSERT_TRUE(a.Calibrate(MakeCalibrateRequest("shared")).ok());
  EXPECT_TRUE(a.Find("shared").has_value());
  EXPECT_FALSE(b.Find("shared").has_value()) << "not re-read yet";
  ASSERT_TRUE(b.Refresh().ok());
  ASSERT_TRUE(b.Find("shared").has_value());
  EXPECT_EQ(b.Find("shared")->engine, "vllm");
  EXPECT_DOUBLE_EQ(b.Find("shared")->calibration.hbm_efficiency,
                   a.Find("shared")->calibration.hbm_efficiency);
  EXPECT_THAT(b.Names(), ::testing::ElementsAre("shared"));
}

// A stored profile row whose constants are damaged (an infinite overhead, a
// vanishing efficiency, NaN) is refused with the profile's name, never
// served as "feasible" plans of 0 tok/s or NaN latencies.
TEST(CalibrationProfileStoreTest, DamagedStoredProfileIsRefusedByName) {
  using Parameters = shardplan::v1::CalibrationParameters;
  const std::pair<void (*)(Parameters*), const char*> damages[] = {
      {[](Parameters* p) {
         p->set_prefill_overhead_s(std::numeric_limits<double>::infinity());
       },
       "prefill_overhead_s"},
      {[](Parameters* p) { p->set_gemm_efficiency(1e-300); },
       "gemm_efficiency"},
      {[](Parameters* p) { p->set_hbm_efficiency(std::nan("")); },
       "hbm_efficiency"},
  };
  const absl::StatusOr<simulator::CalibrationProfile> base =
      simulator::FindCalibrationProfile("h100-vllm");
  ASSERT_TRUE(base.ok());
  for (const auto& [damage, field] : damages) {
    Parameters parameters = simulator::CalibrationToProto(base->calibration);
    damage(&parameters);
    const StoredProfile stored{"damaged", "vllm",
                               spec_text::ToJson(parameters, /*pretty=*/false),
                               "", 0};
    const absl::StatusOr<simulator::CalibrationProfile> loaded =
        ProfileFromStored(stored);
    ASSERT_FALSE(loaded.ok()) << field;
    EXPECT_THAT(std::string(loaded.status().message()),
                ::testing::AllOf(::testing::HasSubstr("\"damaged\""),
                                 ::testing::HasSubstr(field)));
  }
}

}  // namespace
}  // namespace shardplan::server
