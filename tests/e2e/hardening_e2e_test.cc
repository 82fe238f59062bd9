// The second reliability probe's cases against the real shardplan-server
// binary (label e2e; docs/reliability.md): damaged stored state (weights,
// problems rows), a frozen PostgreSQL, a huge re-plan, EvaluatePlan bursts,
// SIGHUP, SIGTERM with Calibrate calls queued, and tiny time budgets.
#include <dirent.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "tests/common/measured_runs.h"
#include "tests/e2e/postgres_instance.h"
#include "tests/e2e/server_fixture.h"
#include "tests/e2e/server_process.h"

namespace shardplan::e2e {
namespace {

using shardplan::testing_pg::PostgresInstance;
using shardplan::v1::CalibrateRequest;
using shardplan::v1::CalibrateResponse;
using shardplan::v1::EvaluateRequest;
using shardplan::v1::EvaluateResponse;
using shardplan::v1::PlanRequest;
using shardplan::v1::PlanUpdate;
using ::testing::HasSubstr;
using ::testing::Not;

struct Outcome {
  std::vector<PlanUpdate> updates;
  grpc::Status status;
  absl::Duration took;
};

Outcome Plan(ServerProcess& server, const PlanRequest& request,
             absl::Duration deadline = absl::Seconds(120),
             int max_receive_bytes = -1) {
  grpc::ChannelArguments args;
  if (max_receive_bytes > 0) args.SetMaxReceiveMessageSize(max_receive_bytes);
  auto channel =
      grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", server.grpc_port()),
                                grpc::InsecureChannelCredentials(), args);
  auto stub = shardplan::v1::ShardingPlanner::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
  const absl::Time start = absl::Now();
  auto reader = stub->PlanSharding(&context, request);
  Outcome out;
  PlanUpdate update;
  while (reader->Read(&update)) out.updates.push_back(update);
  out.status = reader->Finish();
  out.took = absl::Now() - start;
  return out;
}

// CPU seconds (user + system) the process has used: the measure of work that
// does not depend on how busy the machine running the test is.
double CpuSeconds(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string line;
  std::getline(in, line);
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return -1;
  const std::vector<std::string> fields =
      absl::StrSplit(line.substr(close + 2), ' ');
  // Fields 14 and 15 of the line (utime, stime) are 11 and 12 after "comm".
  int64_t user = 0, system = 0;
  if (fields.size() < 13 || !absl::SimpleAtoi(fields[11], &user) ||
      !absl::SimpleAtoi(fields[12], &system)) {
    return -1;
  }
  return static_cast<double>(user + system) / sysconf(_SC_CLK_TCK);
}

// Runs one SQL statement on the SQLite store at `path`; true on success.
bool SqliteExec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) return false;
  const bool ok =
      sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK;
  sqlite3_close(db);
  return ok;
}

int64_t SqliteCount(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) return -1;
  sqlite3_stmt* stmt = nullptr;
  int64_t n = -1;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
      sqlite3_step(stmt) == SQLITE_ROW) {
    n = sqlite3_column_int64(stmt, 0);
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return n;
}

// Milliseconds a health check takes on a connection of its own.
double HealthCheckMs(const ServerProcess& server) {
  auto channel =
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", server.grpc_port()),
                          grpc::InsecureChannelCredentials());
  auto health = grpc::health::v1::Health::NewStub(channel);
  // The connection first: the figure is the server's answer time.
  channel->WaitForConnected(
      absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  const absl::Time start = absl::Now();
  const grpc::Status status = health->Check(&context, request, &response);
  const double ms = absl::ToDoubleMilliseconds(absl::Now() - start);
  return status.ok() && response.status() ==
                            grpc::health::v1::HealthCheckResponse::SERVING
             ? ms
             : -1;
}

// The first six measured runs (tests/common/measured_runs.h), sources
// "bench.csv:2" on; `copies` repeats them (distinct sources): a fit then takes
// seconds.
CalibrateRequest MakeCalibrateRequest(const std::string& name, int copies = 1) {
  return testing_runs::MeasuredCalibrateRequest(name, "bench.csv", 6, copies);
}

class HardeningE2eTest : public ServerFixture {
 protected:
  // Whether this build serves method "rl" (LibTorch builds).
  bool HasRl() {
    grpc::ClientContext context;
    shardplan::v1::ListCatalogResponse catalog;
    if (!stub_->ListCatalog(&context, {}, &catalog).ok()) return false;
    for (const std::string& m : catalog.methods()) {
      if (m == "rl") return true;
    }
    return false;
  }
};

// A damaged weights row (truncated, random bytes, an empty ZIP, or a small
// row declaring a huge tensor) is set aside: the rl search runs cold, ends OK
// with its final update, no LibTorch text reaches the client, and its own
// weights replace the row.
TEST_F(HardeningE2eTest, DamagedPolicyWeightsAreSetAsideAndReplaced) {
  StartOrDie();
  if (!HasRl()) GTEST_SKIP() << "built without LibTorch: no rl searcher";
  const PlanRequest request =
      Request("llama-3.1-8b", 8, 1024, 128, "rl", 60, 0, 1);
  Outcome first = Plan(*server_, request);
  ASSERT_TRUE(first.status.ok()) << first.status.error_message();
  const int64_t good_size =
      SqliteCount(store_path(), "SELECT LENGTH(weights) FROM policy_weights");
  ASSERT_GT(good_size, 1000);
  const std::string damage[] = {
      "UPDATE policy_weights SET weights = substr(weights, 1, 1000)",
      "UPDATE policy_weights SET weights = randomblob(5000)",
      // An empty ZIP archive: only its end-of-directory record.
      "UPDATE policy_weights SET weights = X'504b0506' || zeroblob(18)",
  };
  for (const std::string& sql : damage) {
    ASSERT_TRUE(SqliteExec(store_path(), sql)) << sql;
    Outcome again = Plan(*server_, request);
    ASSERT_TRUE(again.status.ok())
        << sql << ": " << again.status.error_message();
    ASSERT_FALSE(again.updates.empty());
    EXPECT_TRUE(again.updates.back().final()) << sql;
    EXPECT_NE(again.updates.back().summary().stop_reason(), "error") << sql;
    EXPECT_THAT(again.status.error_message(), Not(HasSubstr("0x"))) << sql;
    EXPECT_EQ(
        SqliteCount(store_path(), "SELECT LENGTH(weights) FROM policy_weights"),
        good_size)
        << sql << ": the damaged row was not replaced";
  }
  EXPECT_THAT(server_->log(), HasSubstr("set aside"));
}

// One problems row with a non-number bucket does not turn the store off: the
// other problems still warm-start and new searches are still stored.
TEST_F(HardeningE2eTest, OneBadProblemsRowIsSkipped) {
  StartOrDie();
  const PlanRequest a = Request("llama-3.1-8b", 8, 1024, 128, "anneal", 40);
  const PlanRequest b = Request("llama-3.1-8b", 8, 4096, 128, "anneal", 40);
  ASSERT_TRUE(Plan(*server_, a).status.ok());
  ASSERT_TRUE(Plan(*server_, b).status.ok());
  ASSERT_TRUE(SqliteExec(store_path(),
                         "UPDATE problems SET input_tokens_log2 = 'abc' WHERE "
                         "input_tokens_log2 = 12"));
  // A nearest lookup reads the whole family, the bad row included.
  const PlanRequest c = Request("llama-3.1-8b", 8, 2048, 128, "anneal", 40);
  Outcome near = Plan(*server_, c);
  ASSERT_TRUE(near.status.ok()) << near.status.error_message();
  EXPECT_TRUE(near.updates.back().summary().warm_started());
  EXPECT_THAT(server_->log(), Not(HasSubstr("warm starts are off")));
  EXPECT_THAT(server_->log(), HasSubstr("skipping unreadable problems row"));
  // Still stored: three problems now (the bad one kept, not read).
  EXPECT_EQ(SqliteCount(store_path(), "SELECT COUNT(*) FROM problems"), 3);
  Outcome exact = Plan(*server_, a);
  EXPECT_EQ(exact.updates.back().summary().warm_start_source(), "exact");
}

// --store_max_problems: the least recently searched problems go with their
// plans.
TEST_F(HardeningE2eTest, StoreKeepsAtMostMaxProblems) {
  StartOrDie({"--store_max_problems=2"});
  for (int isl : {512, 1024, 2048, 4096}) {
    ASSERT_TRUE(
        Plan(*server_, Request("llama-3.1-8b", 8, isl, 128, "anneal", 60))
            .status.ok());
  }
  // What one problem costs in the file (its top-K plans with predictions).
  const int64_t problems =
      SqliteCount(store_path(), "SELECT COUNT(*) FROM problems");
  const int64_t row_bytes = SqliteCount(
      store_path(),
      "SELECT SUM(LENGTH(plan_json) + LENGTH(prediction_json)) FROM plans");
  std::printf("store: %lld problems, %lld plan bytes (%.0f KB per problem)\n",
              static_cast<long long>(problems),
              static_cast<long long>(row_bytes),
              problems > 0 ? row_bytes / 1e3 / problems : 0.0);
  // The rule runs at the first write after a start and every 16th after it:
  // a restart and one search apply it.
  ASSERT_TRUE(server_->Stop(SIGTERM, absl::Seconds(30)).has_value());
  StartOrDie({"--store_max_problems=2"});
  ASSERT_TRUE(
      Plan(*server_, Request("llama-3.1-8b", 8, 4096, 128, "anneal", 20))
          .status.ok());
  EXPECT_EQ(SqliteCount(store_path(), "SELECT COUNT(*) FROM problems"), 2);
  EXPECT_EQ(SqliteCount(store_path(),
                        "SELECT COUNT(*) FROM problems WHERE "
                        "input_tokens_log2 IN (9, 10)"),
            0);
  EXPECT_EQ(SqliteCount(store_path(),
                        "SELECT COUNT(*) FROM plans WHERE fingerprint NOT IN "
                        "(SELECT fingerprint FROM problems)"),
            0);
}

// A burst of large EvaluatePlan calls is capped (RESOURCE_EXHAUSTED beyond
// --max_concurrent_evaluations) and health answers within the Kubernetes
// probe's 1 s meanwhile.
TEST_F(HardeningE2eTest, EvaluatePlanBurstKeepsHealthAnswering) {
  StartOrDie({"--max_concurrent_evaluations=1"});
  EvaluateRequest request;
  request.mutable_model()->set_catalog_name("llama-3.1-8b");
  request.mutable_cluster()->set_hardware("h100-sxm-80gb");
  request.mutable_cluster()->set_num_gpus(16384);
  request.mutable_cluster()->set_gpus_per_node(1);
  // Each node named (the probe's 186 KB requests): decoding and validating
  // them is most of a call's work.
  for (int node = 0; node < 16384; ++node) {
    shardplan::v1::NodeGroup* group =
        request.mutable_cluster()->add_node_groups();
    group->set_name(absl::StrCat("n", node));
    group->set_num_nodes(1);
  }
  request.mutable_workload()->set_input_tokens(1024);
  request.mutable_workload()->set_output_tokens(128);
  request.mutable_plan()->set_replicas(16384);
  request.mutable_plan()->set_dp(1);
  request.mutable_plan()->set_tp(1);
  request.mutable_plan()->set_pp(1);
  constexpr int kCalls = 32;
  std::atomic<int> ok{0}, exhausted{0}, other{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> callers;
  for (int i = 0; i < kCalls; ++i) {
    callers.emplace_back([&] {
      auto stub = shardplan::v1::ShardingPlanner::NewStub(
          grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_->grpc_port()),
                              grpc::InsecureChannelCredentials()));
      grpc::ClientContext context;
      context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(60)));
      EvaluateResponse response;
      const grpc::Status status =
          stub->EvaluatePlan(&context, request, &response);
      if (status.ok()) {
        ++ok;
      } else if (status.error_code() == grpc::RESOURCE_EXHAUSTED) {
        ++exhausted;
      } else {
        ++other;
      }
    });
  }
  double worst_ms = 0;
  int checks = 0;
  std::thread health([&] {
    while (!done.load() || checks < 3) {
      const double ms = HealthCheckMs(*server_);
      worst_ms = ms < 0 ? 1e9 : std::max(worst_ms, ms);
      ++checks;
    }
  });
  for (std::thread& t : callers) t.join();
  done.store(true);
  health.join();
  EXPECT_EQ(other.load(), 0);
  EXPECT_GE(ok.load(), 1);
  EXPECT_GT(exhausted.load(), 0);
  EXPECT_LT(worst_ms, 1000)
      << "health check took " << worst_ms << " ms in " << checks << " checks";
}

// SIGHUP drains like SIGTERM: the running search ends with a final update, is
// stored, and the server exits 0 with a log line.
TEST_F(HardeningE2eTest, SighupDrainsLikeSigterm) {
  StartOrDie();
  const PlanRequest request =
      Request("llama-3.1-8b", 8, 1024, 128, "anneal", 100000, 60);
  auto channel =
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_->grpc_port()),
                          grpc::InsecureChannelCredentials());
  auto stub = shardplan::v1::ShardingPlanner::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(60)));
  auto reader = stub->PlanSharding(&context, request);
  PlanUpdate update;
  ASSERT_TRUE(reader->Read(&update));
  kill(server_->pid(), SIGHUP);
  PlanUpdate last = update;
  while (reader->Read(&update)) last = update;
  EXPECT_TRUE(reader->Finish().ok());
  EXPECT_TRUE(last.final());
  EXPECT_EQ(last.summary().stop_reason(), "shutdown");
  std::optional<int> status = server_->Stop(SIGHUP, absl::Seconds(30));
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
  EXPECT_THAT(server_->log(), HasSubstr("Hangup"));
  EXPECT_EQ(SqliteCount(store_path(), "SELECT COUNT(*) FROM problems"), 1);
}

// SIGTERM with Calibrate calls running and queued ends within the grace
// period, and each client hears what happened to its profile: OK means it is
// stored, UNAVAILABLE that it is not.
TEST_F(HardeningE2eTest, SigtermWithCalibrationsQueuedAnswersWhatWasStored) {
  StartOrDie({"--shutdown_grace_seconds=2"});
  constexpr int kCalls = 5;  // one running, four queued
  std::vector<grpc::Status> statuses(kCalls);
  std::vector<std::thread> callers;
  for (int i = 0; i < kCalls; ++i) {
    callers.emplace_back([&, i] {
      auto stub = shardplan::v1::ShardingPlanner::NewStub(
          grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_->grpc_port()),
                              grpc::InsecureChannelCredentials()));
      grpc::ClientContext context;
      context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(60)));
      CalibrateResponse response;
      statuses[i] = stub->Calibrate(
          &context, MakeCalibrateRequest(absl::StrCat("probe-", i), 400),
          &response);
    });
    absl::SleepFor(absl::Milliseconds(30));  // arrival order only
  }
  absl::SleepFor(absl::Milliseconds(100));
  const absl::Time signalled = absl::Now();
  kill(server_->pid(), SIGTERM);
  std::optional<int> status = server_->Stop(SIGTERM, absl::Seconds(30));
  const absl::Duration took = absl::Now() - signalled;
  for (std::thread& t : callers) t.join();
  ASSERT_TRUE(status.has_value());
  EXPECT_LT(took, absl::Seconds(4)) << "grace 2 s";
  // Straight from the file: the profiles stored.
  std::vector<std::string> stored;
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(store_path().c_str(), &db), SQLITE_OK);
    sqlite3_stmt* stmt = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT name FROM calibration_profiles",
                                 -1, &stmt, nullptr),
              SQLITE_OK);
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      stored.push_back(
          reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)));
    }
    sqlite3_finalize(stmt);
    sqlite3_close(db);
  }
  for (int i = 0; i < kCalls; ++i) {
    const std::string name = absl::StrCat("probe-", i);
    const bool is_stored =
        std::find(stored.begin(), stored.end(), name) != stored.end();
    if (statuses[i].ok()) {
      EXPECT_TRUE(is_stored) << name << " answered OK but not stored";
    } else {
      EXPECT_EQ(statuses[i].error_code(), grpc::UNAVAILABLE)
          << name << ": " << statuses[i].error_message();
      EXPECT_FALSE(is_stored) << name << " stored but the client was told "
                              << statuses[i].error_message();
    }
  }
}

// A Calibrate run whose layout does not fit names the run and its source.
TEST_F(HardeningE2eTest, CalibrateErrorNamesTheRun) {
  StartOrDie();
  CalibrateRequest request = MakeCalibrateRequest("bad-run");
  request.mutable_runs(4)->set_tp(3);  // 3 does not divide 64 heads
  grpc::ClientContext context;
  CalibrateResponse response;
  const grpc::Status status = stub_->Calibrate(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("runs[4]"));
  EXPECT_THAT(status.error_message(), HasSubstr("bench.csv:6"));
  EXPECT_THAT(status.error_message(), Not(HasSubstr("csv line 0")));
}

// options.max_seconds = 5e-324 is a valid (tiny) budget, not "got 0".
TEST_F(HardeningE2eTest, SubnormalMaxSecondsIsAccepted) {
  StartOrDie();
  for (const char* method : {"anneal", "grid"}) {
    PlanRequest request =
        Request("llama-3.1-8b", 8, 1024, 128, method, 100, 5e-324);
    Outcome out = Plan(*server_, request);
    EXPECT_TRUE(out.status.ok())
        << method << ": " << out.status.error_message();
    ASSERT_FALSE(out.updates.empty());
    EXPECT_TRUE(out.updates.back().final());
  }
}

// Re-planning llama-3.1-8b from 16,384 one-GPU nodes to 16,376: the final
// update fits gRPC's default 4 MiB receive limit, arrives within the budget
// plus a bounded overhead, and a client deadline frees the worker slot.
// The CPU bounds below are the release build's: AddressSanitizer runs these
// paths 5-6x slower (12-17 s for the re-plan, 1.5 s past the deadline).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr double kSanitizerSlowdown = 8;
#else
constexpr double kSanitizerSlowdown = 1;
#endif

PlanRequest HugeReplan(double max_seconds, int max_evaluations = 100) {
  PlanRequest request = Request("llama-3.1-8b", 16376, 1024, 128, "grid",
                                max_evaluations, max_seconds);
  request.mutable_cluster()->set_gpus_per_node(1);
  request.mutable_options()->set_top_n(64);
  shardplan::v1::RunningDeployment* current = request.mutable_current();
  current->mutable_cluster()->set_hardware("h100-sxm-80gb");
  current->mutable_cluster()->set_num_gpus(16384);
  current->mutable_cluster()->set_gpus_per_node(1);
  current->mutable_plan()->set_replicas(16384);
  current->mutable_plan()->set_dp(1);
  current->mutable_plan()->set_tp(1);
  current->mutable_plan()->set_pp(1);
  for (int node = 16376; node < 16384; ++node) current->add_removed_nodes(node);
  return request;
}

TEST_F(HardeningE2eTest, HugeReplanFitsTheDefaultMessageLimitAndTheBudget) {
  StartOrDie();
  const double cpu_before = CpuSeconds(server_->pid());
  Outcome out = Plan(*server_, HugeReplan(1), absl::Seconds(120),
                     /*max_receive_bytes=*/4 << 20);
  const double cpu = CpuSeconds(server_->pid()) - cpu_before;
  ASSERT_TRUE(out.status.ok()) << out.status.error_message();
  ASSERT_FALSE(out.updates.empty());
  EXPECT_TRUE(out.updates.back().final());
  size_t largest = 0;
  for (const PlanUpdate& u : out.updates) {
    largest = std::max(largest, u.ByteSizeLong());
  }
  std::printf(
      "huge re-plan: %zu updates, largest %zu bytes, %.2f s wall, "
      "%.2f s server CPU\n",
      out.updates.size(), largest, absl::ToDoubleSeconds(out.took), cpu);
  EXPECT_LE(largest, 4u << 20);
  // maxSeconds 1 plus the work outside the search (validation, the
  // baseline, the final update): CPU time, as the wall clock of a loaded
  // test machine says little. It was 7-9 s; it is 1.5-2.4 s on one 2-core
  // machine and 3.1-3.5 s on another. The transition diff of 16k nodes per
  // evaluation was 15-20% of it (1.6-2.6 s under a load average of 7.5);
  // with the running side computed once per search it is ~2% (1.6-2.0 s
  // under the same load: the engine rules of the disaggregated sweep and the
  // updates' placements take the rest), so the bound still leaves room for
  // a neighbouring test.
  EXPECT_LT(cpu, 5 * kSanitizerSlowdown) << "maxSeconds 1";
}

TEST_F(HardeningE2eTest, HugeReplanDeadlineFreesTheSlot) {
  StartOrDie({"--max_concurrent_searches=1"});
  // A budget the search cannot finish before the deadline (100 evaluations
  // take about a second of CPU), so the deadline is what ends it.
  Outcome out = Plan(*server_, HugeReplan(30, 100000), absl::Seconds(2));
  EXPECT_EQ(out.status.error_code(), grpc::DEADLINE_EXCEEDED);
  const double cpu_at_deadline = CpuSeconds(server_->pid());
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  double active = -1;
  while (absl::Now() < deadline) {
    active = MetricValue(server_->Metrics(), "shardplan_active_searches")
                 .value_or(-1);
    if (active == 0) break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_EQ(active, 0);
  const double cpu_after = CpuSeconds(server_->pid()) - cpu_at_deadline;
  std::printf("slot freed after %.2f s of server CPU past the deadline\n",
              cpu_after);
  // One search iteration, one transition diff and the store write; it was
  // 2.5-7.7 s of wall time on an idle machine.
  EXPECT_LT(cpu_after, 1.5 * kSanitizerSlowdown)
      << "the slot stayed busy after the deadline";
}

// Freezes (SIGSTOP) every process of the PostgreSQL instance whose postmaster
// pid is in `data_dir`/postmaster.pid; Thaw resumes them.
std::vector<pid_t> PostgresPids(const std::string& data_dir) {
  std::ifstream in(absl::StrCat(data_dir, "/postmaster.pid"));
  pid_t postmaster = 0;
  in >> postmaster;
  std::vector<pid_t> pids;
  if (postmaster <= 0) return pids;
  pids.push_back(postmaster);
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return pids;
  while (dirent* entry = readdir(proc)) {
    int pid = 0;
    if (!absl::SimpleAtoi(entry->d_name, &pid)) continue;
    std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
    std::string line;
    std::getline(stat, line);
    // pid (comm) state ppid ...: comm may hold spaces, so after the last ')'.
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::vector<std::string> fields =
        absl::StrSplit(line.substr(close + 2), ' ');
    int ppid = 0;
    if (fields.size() > 1 && absl::SimpleAtoi(fields[1], &ppid) &&
        ppid == postmaster) {
      pids.push_back(pid);
    }
  }
  closedir(proc);
  return pids;
}

// A frozen PostgreSQL (every process stopped, TCP sessions up): searches go on
// cold within the store's call timeout, a search of another model is not held
// up behind the first, and SIGTERM ends within the grace period.
TEST(HardeningPostgresE2eTest, FrozenDatabaseBoundsSearchesAndShutdown) {
  PostgresInstance pg;
  if (!pg.available()) {
    GTEST_SKIP() << "PostgreSQL server binaries not installed "
                    "(/usr/lib/postgresql/*/bin); run scripts/install-deps";
  }
  std::string error;
  ASSERT_TRUE(pg.Init(&error)) << error;
  ASSERT_TRUE(pg.CreateDatabase("shardplan"));
  TempDir dir;
  ServerProcess server(SHARDPLAN_SERVER_BINARY, dir.path());
  ASSERT_TRUE(server.Start({absl::StrCat("--store=", pg.Url("shardplan")),
                            "--workers=0", "--max_concurrent_searches=2",
                            "--store_call_timeout_ms=1500",
                            "--shutdown_grace_seconds=5"}))
      << server.log();
  // One search while the database answers: the connection is open.
  ASSERT_TRUE(Plan(server, Request("llama-3.1-8b", 8, 1024, 128, "anneal", 30))
                  .status.ok());
  const std::vector<pid_t> pids = PostgresPids(pg.DataDir());
  ASSERT_FALSE(pids.empty());
  for (pid_t pid : pids) kill(pid, SIGSTOP);
  struct Thaw {
    std::vector<pid_t> pids;
    ~Thaw() {
      for (pid_t pid : pids) kill(pid, SIGCONT);
    }
  } thaw{pids};
  Outcome a, b;
  std::thread first([&] {
    a = Plan(server, Request("llama-3.1-8b", 8, 2048, 128, "anneal", 30));
  });
  std::thread second([&] {
    b = Plan(server, Request("qwen3-32b", 8, 1024, 128, "anneal", 30));
  });
  first.join();
  second.join();
  for (const Outcome* o : {&a, &b}) {
    ASSERT_TRUE(o->status.ok()) << o->status.error_message();
    EXPECT_TRUE(o->updates.back().final());
    // Lookup and record, each bounded by the 1.5 s call timeout.
    EXPECT_LT(o->took, absl::Seconds(8));
  }
  const absl::Time signalled = absl::Now();
  std::optional<int> status = server.Stop(SIGTERM, absl::Seconds(30));
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << server.log();
  EXPECT_LT(absl::Now() - signalled, absl::Seconds(6)) << "grace 5 s";
}

}  // namespace
}  // namespace shardplan::e2e
