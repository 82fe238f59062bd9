// End to end against the real shardplan-server binary: TLS, mutual
// TLS, bearer tokens (and that they never reach the log), loopback defaults,
// the request caps, and faults: cancels and deadlines at every stage, a
// read-only and a full store directory (tmpfs mounts; skipped when mounting is
// not permitted), a store with a newer schema, a corrupt store, a slow reader.
// Certificates are made by the openssl CLI in a temp dir.
#include <sqlite3.h>
#include <sys/mount.h>
#include <sys/resource.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "tests/e2e/server_process.h"

namespace shardplan::e2e {
namespace {

using shardplan::v1::PlanRequest;
using shardplan::v1::PlanUpdate;
using ::testing::HasSubstr;
using ::testing::Not;

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

PlanRequest Request(const std::string& method, int max_evaluations,
                    double max_seconds = 0, int gpus = 8) {
  PlanRequest request;
  request.mutable_model()->set_catalog_name(gpus > 8 ? "llama-3.1-70b"
                                                     : "llama-3.1-8b");
  request.mutable_cluster()->set_hardware("h100-sxm-80gb");
  request.mutable_cluster()->set_num_gpus(gpus);
  request.mutable_cluster()->set_gpus_per_node(8);
  request.mutable_workload()->set_input_tokens(2048);
  request.mutable_workload()->set_output_tokens(512);
  request.mutable_options()->set_method(method);
  request.mutable_options()->set_max_evaluations(max_evaluations);
  request.mutable_options()->set_max_seconds(max_seconds);
  return request;
}

// A search that runs until cancelled (for this test's purposes).
// A search that outlives every test step: RL costs milliseconds per iteration,
// so 100,000 evaluations take far longer than the test (random or anneal could
// exhaust that budget in under a second on a fast machine and free the slot).
PlanRequest LongRequest() { return Request("rl", 100000, 120, 16); }

struct StreamResult {
  std::vector<PlanUpdate> updates;
  grpc::Status status;
};

StreamResult Plan(shardplan::v1::ShardingPlanner::Stub& stub,
                  const PlanRequest& request,
                  absl::Duration deadline = absl::Seconds(60),
                  const std::string& token = "") {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
  if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
  StreamResult result;
  auto reader = stub.PlanSharding(&context, request);
  PlanUpdate update;
  while (reader->Read(&update)) result.updates.push_back(update);
  result.status = reader->Finish();
  return result;
}

grpc::Status Catalog(const std::shared_ptr<grpc::Channel>& channel,
                     const std::string& token = "") {
  auto stub = shardplan::v1::ShardingPlanner::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
  shardplan::v1::ListCatalogResponse response;
  return stub->ListCatalog(&context, shardplan::v1::ListCatalogRequest(),
                           &response);
}

grpc::Status Health(const std::shared_ptr<grpc::Channel>& channel) {
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status status =
      stub->Check(&context, grpc::health::v1::HealthCheckRequest(), &response);
  if (status.ok() &&
      response.status() != grpc::health::v1::HealthCheckResponse::SERVING) {
    return grpc::Status(grpc::StatusCode::UNKNOWN, "not SERVING");
  }
  return status;
}

double Metric(const ServerProcess& server, const std::string& series) {
  return MetricValue(server.Metrics(), series).value_or(-1);
}

template <typename F>
bool Eventually(F condition, absl::Duration timeout = absl::Seconds(20)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (condition()) return true;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return condition();
}

// CA, server certificate for localhost/127.0.0.1, client certificate, and a
// second CA whose client certificate the server must refuse.
bool MakeCertificates(const std::string& dir, std::string* log) {
  const std::string script = absl::StrCat(
      "set -e; cd '", dir,
      "'; "
      "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj '/CN=test-ca' "
      "-keyout ca.key -out ca.pem; "
      "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj '/CN=other-ca' "
      "-keyout other-ca.key -out other-ca.pem; "
      "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > san.ext; "
      "openssl req -newkey rsa:2048 -nodes -subj '/CN=localhost' "
      "-keyout server.key -out server.csr; "
      "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key "
      "-CAcreateserial -days 2 -extfile san.ext -out server.pem; "
      "openssl req -newkey rsa:2048 -nodes -subj '/CN=client' "
      "-keyout client.key -out client.csr; "
      "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key "
      "-CAcreateserial -days 2 -out client.pem; "
      "openssl req -newkey rsa:2048 -nodes -subj '/CN=intruder' "
      "-keyout intruder.key -out intruder.csr; "
      "openssl x509 -req -in intruder.csr -CA other-ca.pem -CAkey other-ca.key "
      "-CAcreateserial -days 2 -out intruder.pem");
  auto [rc, output] = RunShell(script);
  *log = output;
  return rc == 0;
}

std::shared_ptr<grpc::Channel> TlsChannel(int port, const std::string& dir,
                                          const std::string& client = "") {
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = ReadFile(dir + "/ca.pem");
  if (!client.empty()) {
    ssl.pem_cert_chain = ReadFile(absl::StrCat(dir, "/", client, ".pem"));
    ssl.pem_private_key = ReadFile(absl::StrCat(dir, "/", client, ".key"));
  }
  return grpc::CreateChannel(absl::StrCat("localhost:", port),
                             grpc::SslCredentials(ssl));
}

std::shared_ptr<grpc::Channel> PlainChannel(int port) {
  return grpc::CreateChannel(absl::StrCat("127.0.0.1:", port),
                             grpc::InsecureChannelCredentials());
}

class SecureE2eTest : public ::testing::Test {
 protected:
  void StartOrDie(const std::vector<std::string>& args) {
    ASSERT_TRUE(server_.Start(args)) << server_.log();
  }
  void TearDown() override {
    if (server_.running()) server_.Stop(SIGTERM);
    for (const std::string& mount : mounts_) umount2(mount.c_str(), MNT_DETACH);
  }
  // A tmpfs of `size` at dir/name; false when mounting is not permitted.
  bool MountTmpfs(const std::string& path, const std::string& options) {
    std::filesystem::create_directories(path);
    if (mount("tmpfs", path.c_str(), "tmpfs", 0, options.c_str()) != 0) {
      return false;
    }
    mounts_.push_back(path);
    return true;
  }

  TempDir dir_;
  ServerProcess server_{SHARDPLAN_SERVER_BINARY, dir_.path()};
  std::vector<std::string> mounts_;
};

// ---- Security -----------------------------------------------------------

TEST_F(SecureE2eTest, TlsServesTlsClientsAndRefusesPlaintext) {
  std::string log;
  ASSERT_TRUE(MakeCertificates(dir_.path(), &log)) << log;
  StartOrDie({"--store=", absl::StrCat("--tls_cert=", dir_.File("server.pem")),
              absl::StrCat("--tls_key=", dir_.File("server.key"))});
  const int port = server_.grpc_port();
  EXPECT_TRUE(Catalog(TlsChannel(port, dir_.path())).ok());
  EXPECT_TRUE(Health(TlsChannel(port, dir_.path())).ok());
  auto stub =
      shardplan::v1::ShardingPlanner::NewStub(TlsChannel(port, dir_.path()));
  StreamResult plan = Plan(*stub, Request("random", 50));
  ASSERT_TRUE(plan.status.ok()) << plan.status.error_message();
  EXPECT_TRUE(plan.updates.back().final());
  // A plaintext client gets no answer from a TLS port.
  grpc::Status plain = Catalog(PlainChannel(port));
  EXPECT_EQ(plain.error_code(), grpc::StatusCode::UNAVAILABLE)
      << plain.error_message();
  // The CLI with --tls-ca.
  auto [rc, out] = RunShell(absl::StrCat(SHARDPLAN_CLI_BINARY,
                                         " health --server localhost:", port,
                                         " --tls-ca ", dir_.File("ca.pem")));
  EXPECT_EQ(rc, 0) << out;
  EXPECT_THAT(out, HasSubstr("SERVING"));
  auto [rc_plain, out_plain] = RunShell(
      absl::StrCat(SHARDPLAN_CLI_BINARY,
                   " health --deadline-seconds 3 --server 127.0.0.1:", port));
  EXPECT_EQ(rc_plain, 3) << out_plain;
}

TEST_F(SecureE2eTest, MutualTlsRequiresAClientCertificateFromTheCa) {
  std::string log;
  ASSERT_TRUE(MakeCertificates(dir_.path(), &log)) << log;
  StartOrDie({"--store=", absl::StrCat("--tls_cert=", dir_.File("server.pem")),
              absl::StrCat("--tls_key=", dir_.File("server.key")),
              absl::StrCat("--tls_client_ca=", dir_.File("ca.pem"))});
  const int port = server_.grpc_port();
  EXPECT_TRUE(Catalog(TlsChannel(port, dir_.path(), "client")).ok());
  grpc::Status no_cert = Catalog(TlsChannel(port, dir_.path()));
  EXPECT_EQ(no_cert.error_code(), grpc::StatusCode::UNAVAILABLE)
      << no_cert.error_message();
  grpc::Status wrong_ca = Catalog(TlsChannel(port, dir_.path(), "intruder"));
  EXPECT_EQ(wrong_ca.error_code(), grpc::StatusCode::UNAVAILABLE)
      << wrong_ca.error_message();
  EXPECT_NE(Catalog(PlainChannel(port)).error_code(), grpc::StatusCode::OK);
  auto [rc, out] = RunShell(absl::StrCat(
      SHARDPLAN_CLI_BINARY, " catalog --output json --server localhost:", port,
      " --tls-ca ", dir_.File("ca.pem"), " --tls-cert ",
      dir_.File("client.pem"), " --tls-key ", dir_.File("client.key")));
  EXPECT_EQ(rc, 0) << out;
  auto [rc_nocert, out_nocert] = RunShell(absl::StrCat(
      SHARDPLAN_CLI_BINARY, " catalog --deadline-seconds 3 --server localhost:",
      port, " --tls-ca ", dir_.File("ca.pem")));
  EXPECT_NE(rc_nocert, 0) << out_nocert;
}

TEST_F(SecureE2eTest, BearerTokensGuardEveryPlannerRpcButNotHealth) {
  const std::string token = "tok-7f3a9c1e5b2d4f60";
  const std::string wrong = "wrong-0a1b2c3d4e5f";
  WriteFile(dir_.File("tokens"), absl::StrCat("# tokens\n", token, "\n"));
  StartOrDie(
      {"--store=", absl::StrCat("--auth_token_file=", dir_.File("tokens"))});
  auto channel = server_.channel();
  EXPECT_EQ(Catalog(channel).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Catalog(channel, wrong).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(Catalog(channel, token).ok());
  EXPECT_TRUE(Health(channel).ok()) << "health needs no token";
  auto stub = server_.Stub();
  StreamResult refused =
      Plan(*stub, Request("random", 50), absl::Seconds(30), wrong);
  EXPECT_EQ(refused.status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(refused.updates.empty());
  StreamResult plan =
      Plan(*stub, Request("random", 50), absl::Seconds(30), token);
  ASSERT_TRUE(plan.status.ok()) << plan.status.error_message();
  EXPECT_TRUE(plan.updates.back().final());
  // The CLI: --token-file, $SHARDPLAN_TOKEN, and exit status without one.
  const std::string server_flag =
      absl::StrCat(" --server 127.0.0.1:", server_.grpc_port());
  auto [rc_file, out_file] =
      RunShell(absl::StrCat(SHARDPLAN_CLI_BINARY, " catalog", server_flag,
                            " --token-file ", dir_.File("tokens")));
  EXPECT_EQ(rc_file, 0) << out_file;
  auto [rc_env, out_env] =
      RunShell(absl::StrCat("SHARDPLAN_TOKEN=", token, " ",
                            SHARDPLAN_CLI_BINARY, " catalog", server_flag));
  EXPECT_EQ(rc_env, 0) << out_env;
  auto [rc_none, out_none] =
      RunShell(absl::StrCat(SHARDPLAN_CLI_BINARY, " catalog", server_flag));
  EXPECT_NE(rc_none, 0);
  EXPECT_THAT(out_none, HasSubstr("UNAUTHENTICATED"));
  auto [rc_health, out_health] =
      RunShell(absl::StrCat(SHARDPLAN_CLI_BINARY, " health", server_flag));
  EXPECT_EQ(rc_health, 0) << out_health;
  // Tokens never reach the log, not even the refused ones.
  ASSERT_EQ(server_.Stop(SIGTERM).value_or(-1), 0);
  const std::string server_log = server_.log();
  EXPECT_THAT(server_log, HasSubstr("UNAUTHENTICATED"));
  EXPECT_THAT(server_log, Not(HasSubstr(token)));
  EXPECT_THAT(server_log, Not(HasSubstr(wrong)));
}

TEST_F(SecureE2eTest, GrpcAndMetricsBindLoopbackByDefault) {
  auto [rc, help] = RunShell(absl::StrCat(SHARDPLAN_SERVER_BINARY, " --help"));
  EXPECT_THAT(help, HasSubstr("default: \"127.0.0.1:50051\""));
  EXPECT_THAT(help, HasSubstr("default: \"127.0.0.1:9464\""));
  StartOrDie({"--store="});
  // Both listeners are bound to 127.0.0.1 only (ss shows the local address;
  // the ServerProcess passes 127.0.0.1:0, the defaults are checked above).
  auto [ss_rc, sockets] = RunShell(absl::StrCat(
      "ss -ltnpH | grep 'pid=", server_.pid(), ",' | awk '{print $4}'"));
  if (ss_rc == 0) {
    int listeners = 0;
    for (absl::string_view local : absl::StrSplit(sockets, '\n')) {
      if (local.empty()) continue;
      ++listeners;
      EXPECT_TRUE(absl::StartsWith(local, "127.0.0.1:") ||
                  absl::StartsWith(local, "[::ffff:127.0.0.1]:"))
          << local;
    }
    EXPECT_EQ(listeners, 2) << sockets;
  }
}

// ---- Limits ---------------------------------------------------------------

TEST_F(SecureE2eTest, RequestsAboveTheCapsAreRefusedNamingTheCap) {
  StartOrDie({"--store=", "--max_num_gpus=64", "--max_request_bytes=65536",
              "--max_searches_per_peer=1", "--max_evaluations_limit=200000"});
  auto stub = server_.Stub();
  StreamResult gpus = Plan(*stub, Request("random", 50, 0, 128));
  EXPECT_EQ(gpus.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(
      gpus.status.error_message(),
      "cluster.num_gpus 128 exceeds the server limit 64 (--max_num_gpus)");
  StreamResult evaluations = Plan(*stub, Request("random", 200001));
  EXPECT_EQ(evaluations.status.error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(evaluations.status.error_message(),
              HasSubstr("(--max_evaluations_limit)"));
  PlanRequest big = Request("random", 50);
  big.mutable_model()->set_hf_config_json(std::string(100000, ' '));
  StreamResult too_big = Plan(*stub, big);
  EXPECT_EQ(too_big.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << too_big.status.error_message();
  // One open search per address: the second is refused while the first runs.
  grpc::ClientContext first_ctx;
  auto first = stub->PlanSharding(&first_ctx, LongRequest());
  PlanUpdate update;
  ASSERT_TRUE(first->Read(&update));
  StreamResult second = Plan(*stub, Request("random", 50));
  EXPECT_EQ(second.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(second.status.error_message(),
              HasSubstr("(--max_searches_per_peer)"));
  first_ctx.TryCancel();
  first->Finish();
  EXPECT_TRUE(Eventually([&] {
    return Plan(*stub, Request("random", 50)).status.ok();
  })) << "admitted again once the first call ended";
  EXPECT_TRUE(Health(server_.channel()).ok());
}

// ---- Faults ---------------------------------------------------------------

TEST_F(SecureE2eTest, CancelsAndDeadlinesAtEveryStageFreeEverything) {
  StartOrDie({"--store=", "--max_concurrent_searches=1",
              "--max_queued_searches=4", "--workers=0"});
  auto stub = server_.Stub();
  // Deadline already over before the baseline is computed.
  StreamResult expired = Plan(*stub, LongRequest(), absl::Microseconds(1));
  EXPECT_EQ(expired.status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  // Running (mid-stream) and queued calls.
  grpc::ClientContext running_ctx, queued_ctx;
  auto running = stub->PlanSharding(&running_ctx, LongRequest());
  PlanUpdate update;
  ASSERT_TRUE(running->Read(&update));
  ASSERT_TRUE(Eventually(
      [&] { return Metric(server_, "shardplan_active_searches") == 1; }));
  auto queued = stub->PlanSharding(&queued_ctx, LongRequest());
  ASSERT_TRUE(queued->Read(&update));
  EXPECT_EQ(update.kind(), "baseline");
  // A deadline that expires while the call waits in the queue.
  StreamResult queued_deadline =
      Plan(*stub, LongRequest(), absl::Milliseconds(500));
  EXPECT_EQ(queued_deadline.status.error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);
  ASSERT_EQ(queued_deadline.updates.size(), 1u) << "only the baseline";
  queued_ctx.TryCancel();
  EXPECT_EQ(queued->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(Eventually(
      [&] { return Metric(server_, "shardplan_queued_searches") == 0; }));
  // Mid-stream deadline of the running search, then a client cancel of a new
  // running one.
  running_ctx.TryCancel();
  EXPECT_EQ(running->Finish().error_code(), grpc::StatusCode::CANCELLED);
  StreamResult mid = Plan(*stub, LongRequest(), absl::Seconds(1));
  // The server may win the race and end the stream with its best so far.
  EXPECT_TRUE(mid.status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
              (mid.status.ok() && mid.updates.back().final()))
      << mid.status.error_message();
  EXPECT_GE(mid.updates.size(), 1u);
  EXPECT_TRUE(Eventually([&] {
    return Metric(server_, "shardplan_active_searches") == 0 &&
           Metric(server_, "shardplan_queued_searches") == 0;
  }));
  // Nothing hangs: a normal search still completes, and the server drains.
  StreamResult after = Plan(*stub, Request("random", 50));
  ASSERT_TRUE(after.status.ok()) << after.status.error_message();
  EXPECT_TRUE(after.updates.back().final());
  EXPECT_EQ(server_.Stop(SIGTERM).value_or(-1), 0);
}

TEST_F(SecureE2eTest, ReadOnlyStoreDirectoryTurnsWarmStartsOffAndServes) {
  const std::string mnt = dir_.File("ro");
  if (!MountTmpfs(mnt, "size=1m")) GTEST_SKIP() << "cannot mount tmpfs here";
  const std::string store = mnt + "/store.db";
  StartOrDie({absl::StrCat("--store=", store)});
  StreamResult first = Plan(*server_.Stub(), Request("random", 50));
  ASSERT_TRUE(first.status.ok());
  ASSERT_EQ(server_.Stop(SIGTERM).value_or(-1), 0);
  ASSERT_EQ(
      mount("tmpfs", mnt.c_str(), "tmpfs", MS_REMOUNT | MS_RDONLY, "size=1m"),
      0);
  StartOrDie({absl::StrCat("--store=", store)});
  StreamResult second = Plan(*server_.Stub(), Request("random", 50));
  ASSERT_TRUE(second.status.ok()) << second.status.error_message();
  EXPECT_TRUE(second.updates.back().final());
  EXPECT_TRUE(Health(server_.channel()).ok());
  ASSERT_EQ(server_.Stop(SIGTERM).value_or(-1), 0);
  EXPECT_THAT(server_.log(), HasSubstr("warm starts are off"));
  EXPECT_THAT(server_.log(), Not(HasSubstr("corrupt")));
}

TEST_F(SecureE2eTest, FullDiskKeepsServingAndKeepsWhatWasCommitted) {
  const std::string mnt = dir_.File("full");
  if (!MountTmpfs(mnt, "size=64k")) GTEST_SKIP() << "cannot mount tmpfs here";
  const std::string store = mnt + "/store.db";
  StartOrDie({absl::StrCat("--store=", store)});
  auto stub = server_.Stub();
  // Fill the rest of the file system.
  RunShell(absl::StrCat("dd if=/dev/zero of=", mnt, "/filler bs=4k count=64"));
  int ok = 0;
  for (int i = 0; i < 8; ++i) {
    PlanRequest request = Request("random", 50);
    request.mutable_workload()->set_input_tokens(128 << i);
    StreamResult result = Plan(*stub, request);
    EXPECT_TRUE(result.status.ok()) << result.status.error_message();
    if (result.status.ok() && result.updates.back().final()) ++ok;
  }
  EXPECT_EQ(ok, 8) << "every search completes although the store cannot grow";
  EXPECT_TRUE(Health(server_.channel()).ok());
  ASSERT_EQ(server_.Stop(SIGTERM).value_or(-1), 0);
  std::filesystem::remove(mnt + "/filler");
  // The file is still a consistent database.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(store.c_str(), &db, SQLITE_OPEN_READONLY, nullptr),
            SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(
      sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &stmt, nullptr),
      SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)),
               "ok");
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

TEST_F(SecureE2eTest, NewerSchemaStoreIsRefusedAndLeftUntouched) {
  const std::string store = dir_.File("newer.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(store.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "PRAGMA journal_mode=WAL; "
                         "CREATE TABLE schema_version (version INTEGER NOT "
                         "NULL); INSERT INTO schema_version VALUES (99);",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  const std::string before = ReadFile(store);
  StartOrDie({absl::StrCat("--store=", store)});
  StreamResult plan = Plan(*server_.Stub(), Request("random", 50));
  ASSERT_TRUE(plan.status.ok());
  ASSERT_EQ(server_.Stop(SIGTERM).value_or(-1), 0);
  EXPECT_THAT(server_.log(), HasSubstr("newer than this server supports"));
  EXPECT_THAT(server_.log(), Not(HasSubstr("corrupt")));
  EXPECT_TRUE(ReadFile(store) == before) << "the file was not modified";
}

TEST_F(SecureE2eTest, CorruptStoreIsMovedAsideAndAFreshOneIsUsed) {
  const std::string store = dir_.File("store.db");
  std::string garbage(64 * 1024, '\0');
  for (size_t i = 0; i < garbage.size(); ++i) {
    garbage[i] = static_cast<char>((i * 2654435761u) >> 13);
  }
  WriteFile(store, garbage);
  StartOrDie({absl::StrCat("--store=", store)});
  auto stub = server_.Stub();
  StreamResult plan = Plan(*stub, Request("random", 50));
  ASSERT_TRUE(plan.status.ok());
  ASSERT_EQ(server_.Stop(SIGTERM).value_or(-1), 0);
  const std::string log = server_.log();
  EXPECT_THAT(log, HasSubstr("is corrupt"));
  EXPECT_THAT(log, HasSubstr("moved aside to " + store + ".corrupt-"));
  int moved = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir_.path())) {
    const std::string name = entry.path().filename().string();
    if (absl::StartsWith(name, "store.db.corrupt-") &&
        !absl::EndsWith(name, "-wal") && !absl::EndsWith(name, "-shm")) {
      ++moved;
      EXPECT_TRUE(ReadFile(entry.path().string()) == garbage)
          << "kept as it was";
    }
  }
  EXPECT_EQ(moved, 1);
  // The fresh store holds the search: the next server warm-starts from it.
  EXPECT_EQ(ReadFile(store).substr(0, 15), "SQLite format 3");
  StartOrDie({absl::StrCat("--store=", store)});
  StreamResult again = Plan(*server_.Stub(), Request("random", 50));
  ASSERT_TRUE(again.status.ok());
  EXPECT_GE(
      Metric(server_, "shardplan_warm_starts_total{result=\"hit_exact\"}"), 1);
}

long RssKb(pid_t pid) {
  const std::string status = ReadFile(absl::StrCat("/proc/", pid, "/status"));
  const size_t at = status.find("VmRSS:");
  if (at == std::string::npos) return -1;
  return std::atol(status.c_str() + at + 6);
}

TEST_F(SecureE2eTest, SlowReaderGetsALatestBestAndBoundedMemory) {
  // Under AddressSanitizer freed memory waits in a quarantine (256 MB by
  // default) before reuse, which RSS counts as growth. The server started here
  // gets a small quarantine so the bound measures the server's own memory.
  const char* asan_options = getenv("ASAN_OPTIONS");
  const bool asan = asan_options != nullptr;
  const std::string saved_options = asan ? asan_options : "";
  if (asan) {
    setenv("ASAN_OPTIONS",
           absl::StrCat(saved_options, ":quarantine_size_mb=16").c_str(), 1);
  }
  StartOrDie({"--store=", "--workers=0"});
  if (asan) setenv("ASAN_OPTIONS", saved_options.c_str(), 1);
  auto stub = server_.Stub();
  // Warm up the allocator with one full search first.
  ASSERT_TRUE(Plan(*stub, Request("random", 20000, 2, 16)).status.ok());
  const long rss_before = RssKb(server_.pid());
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(60)));
  // 3 s of search while the client reads nothing at all.
  auto reader = stub->PlanSharding(&context, Request("anneal", 100000, 3, 16));
  ASSERT_TRUE(Eventually(
      [&] { return Metric(server_, "shardplan_active_searches") == 1; }));
  ASSERT_TRUE(Eventually(
      [&] { return Metric(server_, "shardplan_active_searches") == 0; },
      absl::Seconds(30)))
      << "the search ends on time although nobody reads";
  const long rss_after = RssKb(server_.pid());
  std::vector<PlanUpdate> updates;
  PlanUpdate update;
  while (reader->Read(&update)) updates.push_back(update);
  grpc::Status status = reader->Finish();
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_GE(updates.size(), 2u);
  EXPECT_EQ(updates.front().kind(), "baseline");
  EXPECT_TRUE(updates.back().final());
  // What reaches a reader that read nothing is what the transport took before
  // its flow-control window (gRPC's 64 KiB per stream) filled, one pending
  // improvement (the latest best) and the final: never every improvement
  // queued in the server. A count would measure how many improvements the
  // search found (about ten small ones here), not the bound.
  size_t improvement_bytes = 0;
  for (size_t i = 1; i + 1 < updates.size(); ++i) {
    EXPECT_EQ(updates[i].kind(), "improvement");
    improvement_bytes += updates[i].ByteSizeLong();
  }
  EXPECT_LE(improvement_bytes, 2 * 65536u)
      << "improvements coalesce for a slow reader";
  // ASan's redzones and shadow memory add to every live allocation, and the
  // 16 MB quarantine to the freed ones.
  const long bound_kb = asan ? 128 * 1024 : 64 * 1024;
  RecordProperty("rss_growth_kb", std::to_string(rss_after - rss_before));
  EXPECT_LT(rss_after - rss_before, bound_kb)
      << "server RSS grew from " << rss_before << " kB to " << rss_after;
}

}  // namespace
}  // namespace shardplan::e2e
