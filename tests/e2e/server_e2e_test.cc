// End-to-end tests of the real shardplan-server binary (label e2e): spawned on
// 127.0.0.1:0 with a ready file, driven through real gRPC stubs, /metrics over
// HTTP and `buf curl`.
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "tests/e2e/server_fixture.h"
#include "tests/e2e/server_process.h"

#ifndef SHARDPLAN_SERVER_BINARY
#error "SHARDPLAN_SERVER_BINARY must name the shardplan-server binary"
#endif
#ifndef SHARDPLAN_BUF_CANDIDATES
#define SHARDPLAN_BUF_CANDIDATES ""
#endif

namespace shardplan::e2e {
namespace {

using shardplan::v1::PlanRequest;
using shardplan::v1::PlanUpdate;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// A search that runs until cancelled (within the test's patience). RL costs
// milliseconds per iteration, so 100,000 evaluations outlast every test step;
// random or anneal can exhaust that budget in under a second on a fast machine.
PlanRequest LongRequest(int isl = 2048) {
  return Request("llama-3.1-70b", 16, isl, 512, "rl", 100000, 120);
}

struct StreamResult {
  std::vector<PlanUpdate> updates;
  grpc::Status status;
  absl::Duration first_update_after;
};

StreamResult Plan(shardplan::v1::ShardingPlanner::Stub& stub,
                  const PlanRequest& request,
                  absl::Duration deadline = absl::Seconds(60)) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
  StreamResult result;
  const absl::Time start = absl::Now();
  auto reader = stub.PlanSharding(&context, request);
  PlanUpdate update;
  while (reader->Read(&update)) {
    if (result.updates.empty()) result.first_update_after = absl::Now() - start;
    result.updates.push_back(update);
  }
  result.status = reader->Finish();
  return result;
}

class ServerE2eTest : public ServerFixture {};

TEST_F(ServerE2eTest, StreamsBaselineFirstThenBetterPlansAndAFinalSummary) {
  StartOrDie();
  StreamResult result =
      Plan(*stub_, Request("llama-3.1-70b", 16, 2048, 512, "rl", 512));
  ASSERT_TRUE(result.status.ok()) << result.status.error_message() << "\n"
                                  << server_->log();
  ASSERT_GE(result.updates.size(), 2u);
  const PlanUpdate& baseline = result.updates.front();
  EXPECT_EQ(baseline.kind(), "baseline");
  EXPECT_DOUBLE_EQ(baseline.speedup_vs_baseline(), 1.0);
  EXPECT_TRUE(baseline.prediction().feasible());
  EXPECT_GT(baseline.plan().placement_size(), 0);
  EXPECT_LT(result.first_update_after, absl::Seconds(1))
      << "baseline after " << result.first_update_after;
  std::printf("[ measure  ] first update (baseline) after %.1f ms\n",
              absl::ToDoubleMilliseconds(result.first_update_after));
  const PlanUpdate& last = result.updates.back();
  EXPECT_TRUE(last.final());
  EXPECT_GE(last.prediction().output_tokens_per_s(),
            baseline.prediction().output_tokens_per_s());
  EXPECT_GE(last.speedup_vs_baseline(), 1.0);
  EXPECT_EQ(last.summary().method(), "rl");
  EXPECT_GT(last.summary().evaluations(), 0);
  EXPECT_LE(last.summary().evaluations(), 512 + 64);
  EXPECT_FALSE(last.summary().stop_reason().empty());
  EXPECT_GT(last.summary().space_size(), 0);
  for (size_t i = 1; i < result.updates.size(); ++i) {
    EXPECT_GE(result.updates[i].prediction().output_tokens_per_s(),
              result.updates[i - 1].prediction().output_tokens_per_s());
  }
  // One structured log line for the call (written when gRPC is done with it).
  const std::string line =
      "method=PlanSharding search=rl model=llama-3.1-70b gpus=16 outcome=OK "
      "duration_ms=";
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < deadline &&
         server_->log().find(line) == std::string::npos) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_THAT(server_->log(), HasSubstr(line));
}

class CancelE2eTest : public ServerE2eTest,
                      public ::testing::WithParamInterface<std::string> {};

TEST_P(CancelE2eTest, CancelMidStreamFreesTheWorker) {
  StartOrDie({"--max_concurrent_searches=1"});
  grpc::ClientContext context;
  PlanRequest request = LongRequest();
  request.mutable_options()->set_method(GetParam());
  auto reader = stub_->PlanSharding(&context, request);
  PlanUpdate update;
  ASSERT_TRUE(reader->Read(&update));
  ASSERT_TRUE(WaitForMetrics(*server_, [](const std::string& m) {
    return Gauge(m, "shardplan_active_searches") == 1 &&
           Gauge(m, "shardplan_search_evaluations{slot=\"0\"}") > 0;
  })) << server_->Metrics();
  const absl::Time cancelled_at = absl::Now();
  context.TryCancel();
  while (reader->Read(&update)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  ASSERT_TRUE(WaitForMetrics(
      *server_,
      [](const std::string& m) {
        return Gauge(m, "shardplan_active_searches") == 0;
      },
      absl::Seconds(5)))
      << server_->Metrics();
  const absl::Duration freed_after = absl::Now() - cancelled_at;
  EXPECT_LT(freed_after, absl::Seconds(1)) << "includes /metrics polling";
  std::printf(
      "[ measure  ] %s: worker freed %.1f ms after the client cancelled (as "
      "seen "
      "through /metrics)\n",
      GetParam().c_str(), absl::ToDoubleMilliseconds(freed_after));
  const std::string metrics = server_->Metrics();
  EXPECT_EQ(Gauge(metrics, "shardplan_search_evaluations{slot=\"0\"}"), 0)
      << "slot reset";
  EXPECT_EQ(Gauge(metrics, "shardplan_search_best_speedup{slot=\"0\"}"), 0);
  EXPECT_GE(
      Gauge(metrics,
            absl::StrCat(
                "shardplan_plan_requests_total{code=\"CANCELLED\",method=\"",
                GetParam(), "\"}")),
      1);
  // The slot takes a new search at once.
  StreamResult next =
      Plan(*stub_, Request("llama-3.1-8b", 8, 1024, 256, "random", 64));
  EXPECT_TRUE(next.status.ok()) << next.status.error_message();
}

// Only rl searches run long enough here to be cancelled mid-stream for sure
// (the baselines finish a 100,000-evaluation budget in well under a second);
// their cancellation is covered by policy_test's
// CancellationStopsEverySearchQuickly.
INSTANTIATE_TEST_SUITE_P(Methods, CancelE2eTest, ::testing::Values("rl"));

TEST_F(ServerE2eTest, InvalidRequestsGetInvalidArgumentAndTheServerStaysUp) {
  StartOrDie();
  PlanRequest bad_method = Request("llama-3.1-70b", 16, 2048, 512, "magic", 64);
  StreamResult result = Plan(*stub_, bad_method);
  EXPECT_EQ(result.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(result.status.error_message(), StartsWith("options.method"));
  EXPECT_TRUE(result.updates.empty());

  PlanRequest bad_cluster =
      Request("llama-3.1-70b", 0, 2048, 512, "random", 64);
  result = Plan(*stub_, bad_cluster);
  EXPECT_EQ(result.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(result.status.error_message(), HasSubstr("cluster.num_gpus"));

  PlanRequest too_many =
      Request("llama-3.1-70b", 16, 2048, 512, "random", 10000000);
  result = Plan(*stub_, too_many);
  EXPECT_EQ(result.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(result.status.error_message(),
              StartsWith("options.max_evaluations"));

  shardplan::v1::EvaluateRequest evaluate;
  evaluate.mutable_model()->set_catalog_name("llama-3.1-70b");
  evaluate.mutable_cluster()->set_hardware("h100-sxm-80gb");
  evaluate.mutable_cluster()->set_num_gpus(16);
  evaluate.mutable_workload()->set_input_tokens(2048);
  evaluate.mutable_workload()->set_output_tokens(512);
  evaluate.mutable_plan()->set_dp(1);
  evaluate.mutable_plan()->set_tp(3);
  evaluate.mutable_plan()->set_pp(1);
  shardplan::v1::EvaluateResponse response;
  {
    grpc::ClientContext context;
    grpc::Status status = stub_->EvaluatePlan(&context, evaluate, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(status.error_message(), StartsWith("plan."));
  }
  // Still up and healthy; a valid EvaluatePlan works.
  evaluate.mutable_plan()->set_dp(2);
  evaluate.mutable_plan()->set_tp(8);
  {
    grpc::ClientContext context;
    grpc::Status status = stub_->EvaluatePlan(&context, evaluate, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_GT(response.prediction().output_tokens_per_s(), 0);
  }
  auto health = grpc::health::v1::Health::NewStub(server_->channel());
  grpc::health::v1::HealthCheckRequest health_request;
  grpc::health::v1::HealthCheckResponse health_response;
  grpc::ClientContext context;
  ASSERT_TRUE(health->Check(&context, health_request, &health_response).ok());
  EXPECT_EQ(health_response.status(),
            grpc::health::v1::HealthCheckResponse::SERVING);
  const std::string metrics = server_->Metrics();
  EXPECT_GE(Gauge(metrics,
                  "shardplan_plan_requests_total{code=\"INVALID_ARGUMENT\","
                  "method=\"unknown\"}"),
            1);
  EXPECT_GE(
      Gauge(metrics,
            "shardplan_evaluate_requests_total{code=\"INVALID_ARGUMENT\"}"),
      1);
  EXPECT_GE(Gauge(metrics, "shardplan_evaluate_requests_total{code=\"OK\"}"),
            1);
}

TEST_F(ServerE2eTest, ResourceExhaustedBeyondTheQueue) {
  StartOrDie({"--max_concurrent_searches=1", "--max_queued_searches=1"});
  grpc::ClientContext running_ctx, queued_ctx;
  auto running = stub_->PlanSharding(&running_ctx, LongRequest(2048));
  PlanUpdate update;
  ASSERT_TRUE(running->Read(&update));
  auto queued = stub_->PlanSharding(&queued_ctx, LongRequest(4096));
  ASSERT_TRUE(queued->Read(&update));
  EXPECT_EQ(update.kind(), "baseline");
  ASSERT_TRUE(WaitForMetrics(*server_, [](const std::string& m) {
    return Gauge(m, "shardplan_active_searches") == 1 &&
           Gauge(m, "shardplan_queued_searches") == 1;
  })) << server_->Metrics();
  StreamResult refused = Plan(*stub_, LongRequest(8192));
  EXPECT_EQ(refused.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(refused.status.error_message(), HasSubstr("queue full"));
  // EvaluatePlan and ListCatalog are not starved by the running search or the
  // full queue.
  shardplan::v1::EvaluateRequest evaluate;
  evaluate.mutable_model()->set_catalog_name("llama-3.1-70b");
  evaluate.mutable_cluster()->set_hardware("h100-sxm-80gb");
  evaluate.mutable_cluster()->set_num_gpus(16);
  evaluate.mutable_workload()->set_input_tokens(2048);
  evaluate.mutable_workload()->set_output_tokens(512);
  evaluate.mutable_plan()->set_dp(2);
  evaluate.mutable_plan()->set_tp(8);
  evaluate.mutable_plan()->set_pp(1);
  shardplan::v1::EvaluateResponse evaluated;
  grpc::ClientContext evaluate_ctx;
  evaluate_ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
  EXPECT_TRUE(stub_->EvaluatePlan(&evaluate_ctx, evaluate, &evaluated).ok());
  shardplan::v1::ListCatalogResponse catalog;
  grpc::ClientContext catalog_ctx;
  catalog_ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
  EXPECT_TRUE(stub_->ListCatalog(&catalog_ctx, {}, &catalog).ok());
  queued_ctx.TryCancel();
  running_ctx.TryCancel();
  while (queued->Read(&update)) {
  }
  while (running->Read(&update)) {
  }
  queued->Finish();
  running->Finish();
  EXPECT_TRUE(WaitForMetrics(*server_, [](const std::string& m) {
    return Gauge(m, "shardplan_active_searches") == 0 &&
           Gauge(m, "shardplan_queued_searches") == 0;
  }));
  EXPECT_GE(Gauge(server_->Metrics(),
                  "shardplan_plan_requests_total{code=\"RESOURCE_EXHAUSTED\","
                  "method=\"rl\"}"),
            1);
}

// Evaluations at which a stream first reached `throughput` (relative tolerance
// 1e-9).
std::optional<int> EvaluationsToReach(const std::vector<PlanUpdate>& updates,
                                      double throughput) {
  for (const PlanUpdate& update : updates) {
    if (update.prediction().output_tokens_per_s() >= throughput * (1 - 1e-9)) {
      return update.evaluations();
    }
  }
  return std::nullopt;
}

TEST_F(ServerE2eTest,
       RestartWithTheSameStoreWarmStartsAndReachesTheBestSooner) {
  const PlanRequest request =
      Request("mixtral-8x22b", 16, 2048, 512, "rl", 1024, 0, 3);
  StartOrDie();
  StreamResult cold = Plan(*stub_, request);
  ASSERT_TRUE(cold.status.ok()) << cold.status.error_message();
  const PlanUpdate& cold_final = cold.updates.back();
  ASSERT_TRUE(cold_final.final());
  EXPECT_FALSE(cold_final.summary().warm_started());
  const double best = cold_final.prediction().output_tokens_per_s();
  const std::optional<int> cold_evaluations =
      EvaluationsToReach(cold.updates, best);
  ASSERT_TRUE(cold_evaluations.has_value());
  std::optional<int> exit_status = server_->Stop(SIGTERM);
  ASSERT_TRUE(exit_status.has_value());
  EXPECT_TRUE(WIFEXITED(*exit_status) && WEXITSTATUS(*exit_status) == 0);

  StartOrDie();
  StreamResult warm = Plan(*stub_, request);
  ASSERT_TRUE(warm.status.ok()) << warm.status.error_message();
  const PlanUpdate& warm_final = warm.updates.back();
  EXPECT_TRUE(warm_final.summary().warm_started());
  EXPECT_EQ(warm_final.summary().warm_start_source(), "exact");
  EXPECT_GE(warm_final.prediction().output_tokens_per_s(), best * (1 - 1e-9));
  const std::optional<int> warm_evaluations =
      EvaluationsToReach(warm.updates, best);
  ASSERT_TRUE(warm_evaluations.has_value());
  std::printf(
      "[ measure  ] best %.1f tok/s reached after %d evaluations cold, %d "
      "warm\n",
      best, *cold_evaluations, *warm_evaluations);
  if (*cold_evaluations > 1) {
    EXPECT_LT(*warm_evaluations, *cold_evaluations);
  }
  EXPECT_LE(*warm_evaluations, *cold_evaluations);
  EXPECT_GE(Gauge(server_->Metrics(),
                  "shardplan_warm_starts_total{result=\"hit_exact\"}"),
            1);
}

TEST_F(ServerE2eTest, SigkillWhileWritingNeverLosesFinishedSearches) {
  constexpr int kRounds = 20;
  const std::string store = dir_.File("crash.db");
  std::mt19937 rng(12345);
  std::vector<PlanRequest> finished;
  for (int round = 0; round < kRounds; ++round) {
    ASSERT_TRUE(server_->Start({absl::StrCat("--store=", store), "--workers=0",
                                "--max_concurrent_searches=2",
                                "--max_queued_searches=16"}))
        << "round " << round << ": the store must always open\n"
        << server_->log();
    auto stub = server_->Stub();
    // One search that finishes: its final update means it is committed.
    PlanRequest done = Request("llama-3.1-8b", 8, 64 << (round % 10),
                               128 << (round / 10), "random", 48, 0, round + 1);
    StreamResult result = Plan(*stub, done);
    ASSERT_TRUE(result.status.ok()) << result.status.error_message();
    ASSERT_TRUE(result.updates.back().final());
    finished.push_back(done);
    // A burst of short searches that write the store as they end; kill -9 in
    // the middle.
    std::vector<std::thread> burst;
    for (int i = 0; i < 6; ++i) {
      burst.emplace_back([&server = *server_, round, i] {
        auto burst_stub = server.Stub();
        Plan(*burst_stub,
             Request("llama-3.1-8b", 8, 1000 + 37 * i, 300 + round, "random",
                     24, 0, i + 1),
             absl::Seconds(10));
      });
    }
    absl::SleepFor(
        absl::Milliseconds(std::uniform_int_distribution<int>(0, 40)(rng)));
    server_->Kill();  // the point of the test: no clean shutdown
    for (std::thread& thread : burst) thread.join();

    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(store.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* stmt = nullptr;
    ASSERT_EQ(
        sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &stmt, nullptr),
        SQLITE_OK);
    ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
    EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)),
                 "ok")
        << "round " << round;
    sqlite3_finalize(stmt);
    sqlite3_close(db);
  }
  // Every search that had finished is there: an exact warm-start hit for each
  // (every method scores the stored plans first; anneal here).
  ASSERT_TRUE(server_->Start({absl::StrCat("--store=", store), "--workers=0"}));
  auto stub = server_->Stub();
  for (size_t i = 0; i < finished.size(); ++i) {
    PlanRequest again = finished[i];
    again.mutable_options()->set_method("anneal");
    again.mutable_options()->set_max_evaluations(16);
    StreamResult result = Plan(*stub, again);
    ASSERT_TRUE(result.status.ok()) << result.status.error_message();
    EXPECT_EQ(result.updates.back().summary().warm_start_source(), "exact")
        << "finished search " << i << " (isl "
        << again.workload().input_tokens() << ", osl "
        << again.workload().output_tokens() << ") lost";
  }
}

TEST_F(ServerE2eTest, MetricsShowEverySeriesWithSaneValues) {
  StartOrDie({"--max_concurrent_searches=2"});
  StreamResult result =
      Plan(*stub_, Request("llama-3.1-70b", 16, 2048, 512, "rl", 256));
  ASSERT_TRUE(result.status.ok());
  // The worker frees its slot, and gRPC completes the call, just after the
  // final update.
  ASSERT_TRUE(WaitForMetrics(*server_, [](const std::string& m) {
    return Gauge(m, "shardplan_active_searches") == 0 &&
           Gauge(m,
                 "shardplan_plan_requests_total{code=\"OK\",method=\"rl\"}") ==
               1;
  })) << server_->Metrics();
  const std::string metrics = server_->Metrics();
  for (const char* name :
       {"shardplan_plan_requests_total", "shardplan_evaluate_requests_total",
        "shardplan_active_searches", "shardplan_queued_searches",
        "shardplan_cost_model_evaluations_total",
        "shardplan_rl_iterations_total", "shardplan_search_best_speedup",
        "shardplan_search_evaluations", "shardplan_search_duration_seconds",
        "shardplan_time_to_first_plan_seconds", "shardplan_elite_store_plans",
        "shardplan_warm_starts_total"}) {
    EXPECT_THAT(metrics, HasSubstr(absl::StrCat("# TYPE ", name, " "))) << name;
  }
  EXPECT_EQ(Gauge(metrics,
                  "shardplan_plan_requests_total{code=\"OK\",method=\"rl\"}"),
            1);
  EXPECT_EQ(Gauge(metrics, "shardplan_active_searches"), 0);
  EXPECT_EQ(Gauge(metrics, "shardplan_queued_searches"), 0);
  EXPECT_GE(Gauge(metrics, "shardplan_cost_model_evaluations_total"),
            result.updates.back().summary().evaluations());
  EXPECT_GT(Gauge(metrics, "shardplan_rl_iterations_total"), 0);
  EXPECT_EQ(Gauge(metrics, "shardplan_search_best_speedup{slot=\"0\"}"), 0);
  EXPECT_EQ(Gauge(metrics, "shardplan_search_best_speedup{slot=\"1\"}"), 0);
  EXPECT_EQ(Gauge(metrics, "shardplan_search_evaluations{slot=\"1\"}"), 0);
  EXPECT_EQ(Gauge(metrics, "shardplan_search_duration_seconds_count"), 1);
  EXPECT_GT(Gauge(metrics, "shardplan_search_duration_seconds_sum"), 0);
  EXPECT_EQ(Gauge(metrics, "shardplan_time_to_first_plan_seconds_count"), 1);
  EXPECT_LT(Gauge(metrics, "shardplan_time_to_first_plan_seconds_sum"), 1.0);
  EXPECT_GT(Gauge(metrics, "shardplan_elite_store_plans"), 0);
  EXPECT_EQ(Gauge(metrics, "shardplan_warm_starts_total{result=\"miss\"}"), 1);
  EXPECT_EQ(Gauge(metrics, "shardplan_warm_starts_total{result=\"hit_exact\"}"),
            0);
}

TEST_F(ServerE2eTest, MetricsShowProgressWhileASearchRuns) {
  StartOrDie({"--max_concurrent_searches=1"});
  grpc::ClientContext context;
  auto reader = stub_->PlanSharding(&context, LongRequest());
  PlanUpdate update;
  ASSERT_TRUE(reader->Read(&update));
  EXPECT_TRUE(WaitForMetrics(*server_, [](const std::string& m) {
    return Gauge(m, "shardplan_active_searches") == 1 &&
           Gauge(m, "shardplan_search_evaluations{slot=\"0\"}") >= 100 &&
           Gauge(m, "shardplan_search_best_speedup{slot=\"0\"}") >= 1.0;
  })) << server_->Metrics();
  context.TryCancel();
  while (reader->Read(&update)) {
  }
  reader->Finish();
}

std::string FindBuf() {
  if (const char* env = getenv("SHARDPLAN_BUF"); env != nullptr && *env)
    return env;
  for (absl::string_view candidate :
       absl::StrSplit(SHARDPLAN_BUF_CANDIDATES, '|')) {
    if (!candidate.empty() &&
        access(std::string(candidate).c_str(), X_OK) == 0) {
      return std::string(candidate);
    }
  }
  auto [status, output] = RunShell("command -v buf");
  if (status == 0) return std::string(absl::StripAsciiWhitespace(output));
  return "";
}

TEST_F(ServerE2eTest, BufCurlThroughReflectionWithNoProtoFiles) {
  const std::string buf = FindBuf();
  if (buf.empty()) {
    GTEST_SKIP() << "buf not found: run scripts/install-deps (npm install "
                    "@bufbuild/buf)";
  }
  StartOrDie();
  // Run from an empty directory so that no proto files or buf.yaml are at hand.
  const std::string base =
      absl::StrCat("cd '", dir_.path(), "' && '", buf,
                   "' curl --protocol grpc --http2-prior-knowledge ");
  const std::string url =
      absl::StrCat("http://127.0.0.1:", server_->grpc_port());

  auto [list_rc, services] = RunShell(base + "--list-services " + url);
  ASSERT_EQ(list_rc, 0) << services;
  EXPECT_THAT(services, HasSubstr("shardplan.v1.ShardingPlanner"));
  EXPECT_THAT(services, HasSubstr("grpc.health.v1.Health"));

  auto [health_rc, health] =
      RunShell(base + url + "/grpc.health.v1.Health/Check");
  ASSERT_EQ(health_rc, 0) << health;
  EXPECT_THAT(health, HasSubstr("SERVING"));

  const std::string evaluate_json =
      R"({"model":{"catalogName":"llama-3.1-70b"},"cluster":{"hardware":"h100-sxm-80gb",)"
      R"("numGpus":16,"gpusPerNode":8},"workload":{"inputTokens":2048,"outputTokens":512},)"
      R"("plan":{"dp":2,"tp":8,"pp":1}})";
  auto [eval_rc, evaluated] =
      RunShell(base + "-d '" + evaluate_json + "' " + url +
               "/shardplan.v1.ShardingPlanner/EvaluatePlan");
  ASSERT_EQ(eval_rc, 0) << evaluated;
  EXPECT_THAT(evaluated, HasSubstr("\"outputTokensPerS\""));
  EXPECT_THAT(evaluated, HasSubstr("\"placement\""));

  const std::string plan_json =
      R"({"model":{"catalogName":"llama-3.1-70b"},"cluster":{"hardware":"h100-sxm-80gb",)"
      R"("numGpus":16,"gpusPerNode":8},"workload":{"inputTokens":2048,"outputTokens":512},)"
      R"("options":{"method":"random","maxEvaluations":64}})";
  auto [plan_rc, planned] =
      RunShell(base + "-d '" + plan_json + "' " + url +
               "/shardplan.v1.ShardingPlanner/PlanSharding");
  ASSERT_EQ(plan_rc, 0) << planned;
  EXPECT_THAT(planned, HasSubstr("\"kind\": \"baseline\""));
  EXPECT_THAT(planned, HasSubstr("\"final\": true"));
  EXPECT_THAT(planned, HasSubstr("\"speedupVsBaseline\""));
  EXPECT_THAT(planned, HasSubstr("\"speedupVsGrid\""));

  const std::string bad_json =
      R"({"model":{"catalogName":"llama-3.1-70b"},"cluster":{)"
      R"("hardware":"h100-sxm-80gb","numGpus":0}})";
  auto [bad_rc, bad] = RunShell(base + "-d '" + bad_json + "' " + url +
                                "/shardplan.v1.ShardingPlanner/PlanSharding");
  EXPECT_NE(bad_rc, 0);
  EXPECT_THAT(bad, HasSubstr("invalid_argument"));
  EXPECT_THAT(bad, HasSubstr("cluster.num_gpus"));
}

TEST_F(ServerE2eTest,
       SigtermMidStreamEndsTheStreamWithAFinalUpdateAndExitsZero) {
  StartOrDie();
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(60)));
  auto reader = stub_->PlanSharding(&context, LongRequest());
  PlanUpdate update;
  ASSERT_TRUE(reader->Read(&update));
  ASSERT_TRUE(WaitForMetrics(*server_, [](const std::string& m) {
    return Gauge(m, "shardplan_active_searches") == 1;
  }));
  kill(server_->pid(), SIGTERM);
  std::vector<PlanUpdate> rest;
  while (reader->Read(&update)) rest.push_back(update);
  grpc::Status status = reader->Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
  ASSERT_FALSE(rest.empty());
  EXPECT_TRUE(rest.back().final());
  EXPECT_EQ(rest.back().summary().stop_reason(), "shutdown");
  std::optional<int> exit_status = server_->Stop(SIGTERM, absl::Seconds(30));
  ASSERT_TRUE(exit_status.has_value()) << "did not exit";
  EXPECT_TRUE(WIFEXITED(*exit_status)) << *exit_status;
  EXPECT_EQ(WEXITSTATUS(*exit_status), 0) << server_->log();
}

}  // namespace
}  // namespace shardplan::e2e
