// The set-up the e2e tests of one shardplan-server share: a fixture that runs
// the binary (SHARDPLAN_SERVER_BINARY, defined by the test's CMake target) in
// a temporary directory with its SQLite store there, and the wait on its
// /metrics. Include after gtest.
#ifndef SHARDPLAN_TESTS_E2E_SERVER_FIXTURE_H_
#define SHARDPLAN_TESTS_E2E_SERVER_FIXTURE_H_

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "shardplan/v1/shardplan.grpc.pb.h"
#include "tests/e2e/server_process.h"

#ifndef SHARDPLAN_SERVER_BINARY
#error "SHARDPLAN_SERVER_BINARY must name the shardplan-server binary"
#endif

namespace shardplan::e2e {

class ServerFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    server_ =
        std::make_unique<ServerProcess>(SHARDPLAN_SERVER_BINARY, dir_.path());
  }
  // Starts the server with `args`, the store in the temporary directory
  // (unless `args` name one) and no evaluation threads (--workers=0); fails
  // the test if it does not become ready. stub_ talks to it.
  void StartOrDie(std::vector<std::string> args = {}) {
    if (std::none_of(args.begin(), args.end(), [](const std::string& a) {
          return a.rfind("--store=", 0) == 0;
        })) {
      args.push_back(absl::StrCat("--store=", store_path()));
    }
    args.push_back("--workers=0");
    ASSERT_TRUE(server_->Start(args)) << "server did not become ready:\n"
                                      << server_->log();
    stub_ = server_->Stub();
  }
  std::string store_path() const { return dir_.File("store.db"); }

  TempDir dir_;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<shardplan::v1::ShardingPlanner::Stub> stub_;
};

// Waits (deadline-bounded) until `condition` holds on the server's /metrics.
template <typename F>
bool WaitForMetrics(const ServerProcess& server, F condition,
                    absl::Duration timeout = absl::Seconds(30)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (condition(server.Metrics())) return true;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return false;
}

// The value of `series` in a /metrics text, or -1 when it is missing.
inline double Gauge(const std::string& metrics, const std::string& series) {
  return MetricValue(metrics, series).value_or(-1);
}

}  // namespace shardplan::e2e

#endif  // SHARDPLAN_TESTS_E2E_SERVER_FIXTURE_H_
