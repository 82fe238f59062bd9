// Two real shardplan-server replicas sharing one real PostgreSQL server
// (started by the test in a temp dir on a free loopback port, see
// postgres_instance.h): what one replica learns warm-starts the other;
// concurrent searches on both replicas for one problem leave a consistent
// top-K; with the database stopped mid-run the replicas keep serving (warm
// starts off, counted as "disabled") and after it is back they reconnect by
// themselves. Skipped only when the PostgreSQL server binaries are missing.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pqxx/pqxx"
#include "tests/e2e/postgres_instance.h"
#include "tests/e2e/server_process.h"

namespace shardplan::e2e {
namespace {

using shardplan::testing_pg::PostgresInstance;
using shardplan::v1::PlanRequest;
using shardplan::v1::PlanUpdate;

constexpr int kEliteSize = 6;

PlanRequest Request(int isl, uint32_t seed, int max_evaluations = 120) {
  PlanRequest request;
  request.mutable_model()->set_catalog_name("llama-3.1-70b");
  request.mutable_cluster()->set_hardware("h100-sxm-80gb");
  request.mutable_cluster()->set_num_gpus(16);
  request.mutable_cluster()->set_gpus_per_node(8);
  request.mutable_workload()->set_input_tokens(isl);
  request.mutable_workload()->set_output_tokens(512);
  request.mutable_options()->set_method("anneal");
  request.mutable_options()->set_max_evaluations(max_evaluations);
  request.mutable_options()->set_seed(seed);
  return request;
}

struct Outcome {
  grpc::Status status;
  PlanUpdate final_update;
  int updates = 0;
};

Outcome Plan(const ServerProcess& server, const PlanRequest& request) {
  auto stub = server.Stub();
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(60)));
  auto reader = stub->PlanSharding(&context, request);
  Outcome outcome;
  PlanUpdate update;
  while (reader->Read(&update)) {
    ++outcome.updates;
    outcome.final_update = update;
  }
  outcome.status = reader->Finish();
  return outcome;
}

double Counter(const ServerProcess& server, const std::string& result) {
  return MetricValue(server.Metrics(),
                     absl::StrCat("shardplan_warm_starts_total{result=\"",
                                  result, "\"}"))
      .value_or(0);
}

class PostgresReplicasE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!pg_.available()) {
      GTEST_SKIP() << "PostgreSQL server binaries not installed "
                      "(/usr/lib/postgresql/*/bin); run scripts/install-deps";
    }
    std::string error;
    ASSERT_TRUE(pg_.Init(&error)) << error;
    ASSERT_TRUE(pg_.CreateDatabase("shardplan"));
    url_ = pg_.Url("shardplan");
    for (auto* replica : {&a_, &b_}) {
      // One directory each: ServerProcess names its ready file per start.
      const std::string dir =
          dir_.File(replica == &a_ ? "replica-a" : "replica-b");
      ASSERT_EQ(mkdir(dir.c_str(), 0755), 0) << dir;
      *replica = std::make_unique<ServerProcess>(SHARDPLAN_SERVER_BINARY, dir);
      ASSERT_TRUE(
          (*replica)->Start({absl::StrCat("--store=", url_), "--workers=0",
                             absl::StrCat("--elite_size=", kEliteSize),
                             "--max_concurrent_searches=2"}))
          << (*replica)->log();
    }
    ASSERT_NE(a_->grpc_port(), b_->grpc_port());
  }

  // The stored rows of the one problem with input length 2^isl_log2.
  pqxx::result PlansOf(int isl_log2) {
    pqxx::connection conn(url_);
    pqxx::work txn(conn);
    return txn.exec_params(
        "SELECT plans.plan_json, plans.reward, plans.output_tokens_per_s, "
        "problems.searches FROM plans JOIN problems USING (fingerprint) "
        "WHERE problems.input_tokens_log2 = $1 ORDER BY plans.reward DESC",
        isl_log2);
  }

  TempDir dir_;  // declared first: removed last
  PostgresInstance pg_;
  std::string url_;
  std::unique_ptr<ServerProcess> a_;
  std::unique_ptr<ServerProcess> b_;
};

TEST_F(PostgresReplicasE2eTest, ReplicasShareWarmStartsTopKAndSurviveAnOutage) {
  // 1. Learned on A, warm-starts B.
  const PlanRequest shared = Request(2048, 1);
  Outcome on_a = Plan(*a_, shared);
  ASSERT_TRUE(on_a.status.ok()) << on_a.status.error_message() << a_->log();
  ASSERT_TRUE(on_a.final_update.final());
  EXPECT_FALSE(on_a.final_update.summary().warm_started());
  Outcome on_b = Plan(*b_, shared);
  ASSERT_TRUE(on_b.status.ok()) << on_b.status.error_message();
  EXPECT_TRUE(on_b.final_update.summary().warm_started()) << b_->log();
  EXPECT_EQ(on_b.final_update.summary().warm_start_source(), "exact");
  EXPECT_EQ(Counter(*b_, "hit_exact"), 1);
  EXPECT_EQ(Counter(*a_, "miss"), 1);

  // 2. Concurrent searches on both replicas for one problem (isl 8192).
  constexpr int kPerReplica = 3;
  std::vector<Outcome> outcomes(2 * kPerReplica);
  {
    std::vector<std::thread> threads;
    for (int i = 0; i < 2 * kPerReplica; ++i) {
      threads.emplace_back([&, i] {
        outcomes[i] = Plan(i % 2 == 0 ? *a_ : *b_, Request(8192, 100 + i, 150));
      });
    }
    for (std::thread& t : threads) t.join();
  }
  double best = 0;
  for (const Outcome& outcome : outcomes) {
    ASSERT_TRUE(outcome.status.ok()) << outcome.status.error_message();
    best =
        std::max(best, outcome.final_update.prediction().output_tokens_per_s());
  }
  ASSERT_GT(best, 0);
  const pqxx::result rows = PlansOf(13);
  ASSERT_GT(rows.size(), 0u);
  // Aggregated and disaggregated plans each keep their own top-K.
  size_t disaggregated_rows = 0;
  for (const pqxx::row& row : rows) {
    disaggregated_rows +=
        row[0].as<std::string>().find("\"prefill\"") != std::string::npos;
  }
  EXPECT_LE(disaggregated_rows, static_cast<size_t>(kEliteSize));
  EXPECT_LE(rows.size() - disaggregated_rows, static_cast<size_t>(kEliteSize));
  std::set<std::string> distinct;
  double stored_best = 0;
  double previous_reward = 1e300;
  for (const pqxx::row& row : rows) {
    distinct.insert(row[0].as<std::string>());
    EXPECT_LE(row[1].as<double>(), previous_reward) << "sorted by reward";
    previous_reward = row[1].as<double>();
    stored_best = std::max(stored_best, row[2].as<double>());
    EXPECT_EQ(row[3].as<int>(), 2 * kPerReplica)
        << "every replica's write counted once: none lost";
  }
  EXPECT_EQ(distinct.size(), rows.size()) << "no duplicate plans";
  printf(
      "[figures] concurrent: %d searches on 2 replicas, %zu plans kept (K=%d), "
      "best %.1f tok/s stored %.1f tok/s\n",
      2 * kPerReplica, rows.size(), kEliteSize, best, stored_best);
  EXPECT_NEAR(stored_best, best, best * 1e-9)
      << "the best plan of all searches on both replicas is stored";

  // 3. PostgreSQL stopped mid-run, while a search runs on A (it looked up its
  // warm start before and writes after the stop): both replicas keep serving.
  PlanRequest running = Request(4096, 3, 100000);
  running.mutable_options()->set_method("random");
  running.mutable_options()->set_max_seconds(2);
  Outcome in_flight;
  std::thread search([&] { in_flight = Plan(*a_, running); });
  const absl::Time wait_deadline = absl::Now() + absl::Seconds(20);
  while (absl::Now() < wait_deadline &&
         MetricValue(a_->Metrics(), "shardplan_active_searches").value_or(0) <
             1) {
    absl::SleepFor(absl::Milliseconds(10));  // polling, deadline-bounded
  }
  ASSERT_TRUE(pg_.Stop());
  search.join();
  ASSERT_TRUE(in_flight.status.ok()) << in_flight.status.error_message();
  EXPECT_TRUE(in_flight.final_update.final());
  EXPECT_GE(in_flight.final_update.summary().best_speedup(), 1.0);
  for (ServerProcess* replica : {a_.get(), b_.get()}) {
    Outcome cold = Plan(*replica, shared);
    ASSERT_TRUE(cold.status.ok()) << cold.status.error_message();
    ASSERT_TRUE(cold.final_update.final());
    EXPECT_FALSE(cold.final_update.summary().warm_started());
    EXPECT_GE(cold.final_update.summary().best_speedup(), 1.0);
    EXPECT_GE(Counter(*replica, "disabled"), 1) << replica->log();
  }

  // 4. PostgreSQL back: each replica reconnects by itself and warm-starts
  // again (deadline-bounded; the store retries with a capped backoff).
  ASSERT_TRUE(pg_.Start()) << pg_.ServerLog();
  const absl::Time restarted = absl::Now();
  for (ServerProcess* replica : {a_.get(), b_.get()}) {
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    std::string source;
    while (absl::Now() < deadline) {
      Outcome warm = Plan(*replica, Request(2048, 1, 20));
      ASSERT_TRUE(warm.status.ok()) << warm.status.error_message();
      source = warm.final_update.summary().warm_start_source();
      if (source == "exact") break;
      absl::SleepFor(absl::Milliseconds(200));  // retry, deadline-bounded
    }
    EXPECT_EQ(source, "exact") << replica->log();
    printf(
        "[figures] replica on port %d: exact warm start again %.0f ms after "
        "PostgreSQL restarted\n",
        replica->grpc_port(),
        absl::ToDoubleMilliseconds(absl::Now() - restarted));
  }
  EXPECT_THAT(a_->log(), ::testing::HasSubstr("reconnected to the database"));
  // Replicas still write after the outage: a new problem on B, seen by A.
  ASSERT_TRUE(Plan(*b_, Request(512, 7)).status.ok());
  Outcome seen = Plan(*a_, Request(512, 8, 20));
  ASSERT_TRUE(seen.status.ok());
  EXPECT_EQ(seen.final_update.summary().warm_start_source(), "exact");
}

}  // namespace
}  // namespace shardplan::e2e
