// Reliability and security guarantees of the real shardplan-server binary
// (label e2e; docs/reliability.md): what a final update promises about the
// store after SIGTERM, bounded and escaped echoes of request text, undecodable
// and compressed requests, per-connection stream limits, idle shutdown time.
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "grpcpp/impl/codegen/client_unary_call.h"
#include "grpcpp/impl/codegen/sync_stream.h"
#include "gtest/gtest.h"
#include "tests/e2e/server_fixture.h"
#include "tests/e2e/server_process.h"

namespace shardplan::e2e {
namespace {

using shardplan::v1::EvaluateRequest;
using shardplan::v1::EvaluateResponse;
using shardplan::v1::PlanRequest;
using shardplan::v1::PlanUpdate;
using ::testing::HasSubstr;
using ::testing::Not;

// A valid EvaluateRequest: llama-3.1-8b on 8 GPUs, dp 8.
EvaluateRequest Evaluate(const std::string& model = "llama-3.1-8b") {
  EvaluateRequest request;
  request.mutable_model()->set_catalog_name(model);
  request.mutable_cluster()->set_hardware("h100-sxm-80gb");
  request.mutable_cluster()->set_num_gpus(8);
  request.mutable_cluster()->set_gpus_per_node(8);
  request.mutable_workload()->set_input_tokens(1024);
  request.mutable_workload()->set_output_tokens(128);
  request.mutable_plan()->set_dp(8);
  request.mutable_plan()->set_tp(1);
  request.mutable_plan()->set_pp(1);
  return request;
}

struct StreamResult {
  std::vector<PlanUpdate> updates;
  grpc::Status status;
};

// The process's peak resident set (VmHWM) in bytes, or -1.
int64_t PeakRssBytes(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (!absl::StartsWith(line, "VmHWM:")) continue;
    std::vector<std::string> parts =
        absl::StrSplit(line, ' ', absl::SkipWhitespace());
    int64_t kib = 0;
    if (parts.size() >= 2 && absl::SimpleAtoi(parts[1], &kib))
      return kib * 1024;
  }
  return -1;
}

grpc::ByteBuffer Bytes(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

// Calls a unary ShardingPlanner method with raw request bytes, as a client
// with another (or a broken) schema would.
grpc::Status CallUnaryRaw(grpc::Channel* channel, const std::string& method,
                          const std::string& bytes) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  grpc::ByteBuffer request = Bytes(bytes);
  grpc::ByteBuffer response;
  return grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
      channel,
      grpc::internal::RpcMethod(
          absl::StrCat("/shardplan.v1.ShardingPlanner/", method).c_str(),
          grpc::internal::RpcMethod::NORMAL_RPC),
      &context, request, &response);
}

grpc::Status CallPlanShardingRaw(grpc::Channel* channel,
                                 const std::string& bytes) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  grpc::ByteBuffer request = Bytes(bytes);
  std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> reader(
      grpc::internal::ClientReaderFactory<grpc::ByteBuffer>::Create(
          channel,
          grpc::internal::RpcMethod(
              "/shardplan.v1.ShardingPlanner/PlanSharding",
              grpc::internal::RpcMethod::SERVER_STREAMING),
          &context, request));
  grpc::ByteBuffer update;
  int updates = 0;
  while (reader->Read(&update)) ++updates;
  EXPECT_EQ(updates, 0);
  return reader->Finish();
}

class ReliabilityE2eTest : public ServerFixture {};

// SIGTERM with searches running and waiting: every client gets `final: true`
// (stop reason "shutdown"), and each of those searches is in the store after a
// restart, the waiting ones (which streamed only the baseline) included.
TEST_F(ReliabilityE2eTest, SigtermStoresEverySearchThatGetsAFinalUpdate) {
  StartOrDie({"--max_concurrent_searches=2", "--max_queued_searches=2"});
  constexpr int kSearches = 4;
  std::vector<PlanRequest> requests;
  for (int i = 0; i < kSearches; ++i) {
    // Distinct problems (input lengths), each outlasting the test's steps.
    requests.push_back(
        Request("llama-3.1-70b", 16, 1024 << i, 512, "rl", 100000, 120));
  }
  std::vector<StreamResult> results(kSearches);
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<grpc::ClientReader<PlanUpdate>>> readers;
  for (int i = 0; i < kSearches; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    contexts.back()->set_deadline(
        absl::ToChronoTime(absl::Now() + absl::Seconds(120)));
    readers.push_back(stub_->PlanSharding(contexts.back().get(), requests[i]));
    PlanUpdate baseline;
    ASSERT_TRUE(readers.back()->Read(&baseline)) << server_->log();
    results[i].updates.push_back(baseline);
  }
  ASSERT_TRUE(WaitForMetrics(*server_, [](const std::string& m) {
    return Gauge(m, "shardplan_active_searches") == 2 &&
           Gauge(m, "shardplan_queued_searches") == 2;
  })) << server_->Metrics();
  kill(server_->pid(), SIGTERM);
  std::vector<std::thread> drains;
  for (int i = 0; i < kSearches; ++i) {
    drains.emplace_back([&, i] {
      PlanUpdate update;
      while (readers[i]->Read(&update)) results[i].updates.push_back(update);
      results[i].status = readers[i]->Finish();
    });
  }
  for (std::thread& thread : drains) thread.join();
  std::optional<int> exit_status = server_->Stop(SIGTERM, absl::Seconds(60));
  ASSERT_TRUE(exit_status.has_value()) << "did not exit";
  EXPECT_TRUE(WIFEXITED(*exit_status) && WEXITSTATUS(*exit_status) == 0)
      << server_->log();
  for (int i = 0; i < kSearches; ++i) {
    ASSERT_TRUE(results[i].status.ok())
        << i << ": " << results[i].status.error_message();
    ASSERT_TRUE(results[i].updates.back().final()) << i;
    EXPECT_EQ(results[i].updates.back().summary().stop_reason(), "shutdown")
        << i;
  }

  // Straight from the file: one problem row per search.
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(store_path().c_str(), &db), SQLITE_OK);
    sqlite3_stmt* stmt = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM problems", -1, &stmt,
                                 nullptr),
              SQLITE_OK);
    ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int(stmt, 0), kSearches);
    sqlite3_finalize(stmt);
    sqlite3_close(db);
  }
  // And through the service: an exact warm start for each, whose plan is at
  // least as good as the final one streamed.
  StartOrDie();
  for (int i = 0; i < kSearches; ++i) {
    PlanRequest again = requests[i];
    again.mutable_options()->set_method("anneal");
    again.mutable_options()->set_max_evaluations(16);
    again.mutable_options()->set_max_seconds(0);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(60)));
    auto reader = stub_->PlanSharding(&context, again);
    PlanUpdate update;
    std::vector<PlanUpdate> updates;
    while (reader->Read(&update)) updates.push_back(update);
    grpc::Status status = reader->Finish();
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_FALSE(updates.empty());
    EXPECT_EQ(updates.back().summary().warm_start_source(), "exact")
        << "search " << i << " (isl " << again.workload().input_tokens()
        << ") was not stored although its client saw final: true";
    EXPECT_GE(updates.back().prediction().output_tokens_per_s(),
              results[i].updates.back().prediction().output_tokens_per_s() *
                  (1 - 1e-9))
        << i;
  }
}

// A NUL byte would end nlohmann's parse early; the tail must not be ignored.
TEST_F(ReliabilityE2eTest, HfConfigJsonWithANulByteIsInvalidArgument) {
  StartOrDie();
  EvaluateRequest request = Evaluate();
  const std::string config =
      R"({"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
          "num_attention_heads": 32, "num_key_value_heads": 8,
          "intermediate_size": 14336, "vocab_size": 128256})";
  request.mutable_model()->set_hf_config_json(config);
  EvaluateResponse response;
  {
    grpc::ClientContext context;
    grpc::Status status = stub_->EvaluatePlan(&context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  request.mutable_model()->set_hf_config_json(config + std::string(1, '\0') +
                                              R"({"garbage": [1,2)");
  grpc::ClientContext context;
  grpc::Status status = stub_->EvaluatePlan(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr("model.hf_config_json: NUL byte at offset"));
}

TEST_F(ReliabilityE2eTest, MlaFieldsOnAGqaModelAreInvalidArgument) {
  StartOrDie();
  EvaluateRequest request = Evaluate();
  shardplan::v1::ModelSpec* spec = request.mutable_model()->mutable_spec();
  spec->set_name("gqa-with-mla-dims");
  spec->set_hidden_size(4096);
  spec->set_num_layers(32);
  spec->set_num_attention_heads(32);
  spec->set_num_key_value_heads(8);
  spec->set_intermediate_size(14336);
  spec->set_vocab_size(128256);
  spec->set_kv_lora_rank(0);
  spec->set_qk_rope_head_dim(64);
  spec->set_qk_nope_head_dim(128);
  spec->set_v_head_dim(128);
  EvaluateResponse response;
  grpc::ClientContext context;
  grpc::Status status = stub_->EvaluatePlan(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr("model.spec.qk_rope_head_dim (64) requires "
                        "model.spec.kv_lora_rank > 0"));
}

// A 100,000-character name comes back as a short quoted prefix and its size,
// on both RPCs; the log line is bounded too.
TEST_F(ReliabilityE2eTest, LongNamesAreQuotedAsAShortPrefix) {
  StartOrDie();
  const std::string name(100000, 'x');
  EvaluateResponse response;
  {
    grpc::ClientContext context;
    grpc::Status status =
        stub_->EvaluatePlan(&context, Evaluate(name), &response);
    ASSERT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_LT(status.error_message().size(), 1024u);
    EXPECT_THAT(status.error_message(), HasSubstr("model.catalog_name"));
    EXPECT_THAT(status.error_message(), HasSubstr("(100000 bytes)"));
  }
  PlanRequest plan = Request(name, 8, 1024, 128, "random", 8);
  {
    grpc::ClientContext context;
    auto reader = stub_->PlanSharding(&context, plan);
    PlanUpdate update;
    EXPECT_FALSE(reader->Read(&update));
    grpc::Status status = reader->Finish();
    ASSERT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_LT(status.error_message().size(), 1024u);
    EXPECT_THAT(status.error_message(), HasSubstr("(100000 bytes)"));
  }
  plan = Request("llama-3.1-8b", 8, 1024, 128, name, 8);
  {
    grpc::ClientContext context;
    auto reader = stub_->PlanSharding(&context, plan);
    PlanUpdate update;
    EXPECT_FALSE(reader->Read(&update));
    grpc::Status status = reader->Finish();
    ASSERT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_LT(status.error_message().size(), 1024u);
    EXPECT_THAT(status.error_message(), HasSubstr("options.method"));
  }
  std::optional<int> exit_status = server_->Stop(SIGTERM);
  ASSERT_TRUE(exit_status.has_value());
  for (absl::string_view line : absl::StrSplit(server_->log(), '\n')) {
    EXPECT_LT(line.size(), 4096u) << line.substr(0, 200);
  }
}

// A newline in a catalog name or a spec name stays inside its log line.
TEST_F(ReliabilityE2eTest, NewlinesInNamesCannotForgeLogLines) {
  StartOrDie();
  const std::string forged = "E1124 00:00:00.000000 1 forged.cc:1] FORGED";
  EvaluateResponse response;
  {
    grpc::ClientContext context;
    grpc::Status status = stub_->EvaluatePlan(
        &context, Evaluate(absl::StrCat("x\n", forged)), &response);
    ASSERT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }
  {
    // A valid request whose spec.name is logged as the model name.
    EvaluateRequest request = Evaluate();
    shardplan::v1::ModelSpec* spec = request.mutable_model()->mutable_spec();
    spec->set_name(absl::StrCat("custom\r\n", forged));
    spec->set_hidden_size(4096);
    spec->set_num_layers(32);
    spec->set_num_attention_heads(32);
    spec->set_num_key_value_heads(8);
    spec->set_intermediate_size(14336);
    spec->set_vocab_size(128256);
    grpc::ClientContext context;
    grpc::Status status = stub_->EvaluatePlan(&context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  {
    PlanRequest plan =
        Request(absl::StrCat("y\n", forged), 8, 1024, 128, "random", 8);
    grpc::ClientContext context;
    auto reader = stub_->PlanSharding(&context, plan);
    PlanUpdate update;
    while (reader->Read(&update)) {
    }
    EXPECT_EQ(reader->Finish().error_code(),
              grpc::StatusCode::INVALID_ARGUMENT);
  }
  std::optional<int> exit_status = server_->Stop(SIGTERM);
  ASSERT_TRUE(exit_status.has_value());
  const std::string log = server_->log();
  int escaped = 0;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    EXPECT_FALSE(absl::StartsWith(line, "E1124 00:00:00.000000"))
        << "forged log line:\n"
        << log;
    EXPECT_FALSE(absl::StrContains(line, "\r")) << line;
    if (absl::StrContains(line, "FORGED")) {
      ++escaped;
      EXPECT_TRUE(absl::StrContains(line, "\\n")) << line;
    }
  }
  EXPECT_EQ(escaped, 3) << log;
}

// gRPC 1.51 checks the size limit before inflating a compressed message; the
// server accepts identity only, so a gzip bomb is refused from its headers.
TEST_F(ReliabilityE2eTest, GzipBombIsRefusedWithoutBeingInflated) {
  StartOrDie();
  EvaluateResponse response;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub_->EvaluatePlan(&context, Evaluate(), &response).ok());
  }
  const int64_t peak_before = PeakRssBytes(server_->pid());
  ASSERT_GT(peak_before, 0);
  constexpr size_t kInflated = 128u << 20;
  EvaluateRequest bomb = Evaluate();
  // 128 MiB of spaces: about 128 KiB gzipped, far below --max_request_bytes.
  bomb.mutable_model()->set_hf_config_json(std::string(kInflated, ' '));
  {
    grpc::ClientContext context;
    context.set_compression_algorithm(GRPC_COMPRESS_GZIP);
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(60)));
    grpc::Status status = stub_->EvaluatePlan(&context, bomb, &response);
    EXPECT_FALSE(status.ok());
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED)
        << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr("gzip"));
  }
  bomb.Clear();
  const int64_t peak_after = PeakRssBytes(server_->pid());
  EXPECT_LT(peak_after - peak_before, static_cast<int64_t>(kInflated / 4))
      << "peak RSS " << peak_before << " -> " << peak_after;
  // Uncompressed calls on the same channel still work.
  grpc::ClientContext context;
  grpc::Status status = stub_->EvaluatePlan(&context, Evaluate(), &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
}

// gRPC's protobuf traits would answer these UNIMPLEMENTED with no message.
TEST_F(ReliabilityE2eTest, UndecodableRequestsAreInvalidArgumentWithAReason) {
  StartOrDie();
  grpc::Channel* channel = server_->channel().get();
  std::mt19937 rng(2024);
  std::string random(256, '\0');
  for (char& c : random) c = static_cast<char>(rng() & 0xff);
  random[0] = '\xff';  // field 31, wire type 7: never valid
  const std::string valid = Evaluate().SerializeAsString();
  const std::string truncated = valid.substr(0, valid.size() - 3);
  // model { catalog_name: "\xff\xfe" }: field 1 (message) holding field 1
  // (string) with bytes that are not UTF-8.
  const std::string bad_utf8("\x0a\x04\x0a\x02\xff\xfe", 6);

  struct Case {
    const char* method;
    std::string bytes;
    const char* reason;
  } cases[] = {
      {"EvaluatePlan", random, "not protobuf wire format"},
      {"EvaluatePlan", truncated, "cannot decode"},
      {"EvaluatePlan", bad_utf8, "model.catalog_name is not valid UTF-8"},
      {"ListCatalog", random, "not protobuf wire format"},
  };
  for (const Case& c : cases) {
    grpc::Status status = CallUnaryRaw(channel, c.method, c.bytes);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << c.method << " " << c.reason << ": " << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr(c.reason)) << c.method;
  }
  for (const std::string& bytes : {random, truncated, bad_utf8}) {
    grpc::Status status = CallPlanShardingRaw(channel, bytes);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << status.error_message();
    EXPECT_THAT(status.error_message(),
                HasSubstr("cannot decode shardplan.v1.PlanRequest"));
  }
  // The same bytes, well formed, still work through the raw path.
  EXPECT_TRUE(CallUnaryRaw(channel, "EvaluatePlan", valid).ok());
  const std::string metrics = server_->Metrics();
  EXPECT_GE(
      Gauge(metrics,
            "shardplan_evaluate_requests_total{code=\"INVALID_ARGUMENT\"}"),
      3)
      << metrics;
}

// Decoding comes after authentication: without a token the answer is
// UNAUTHENTICATED, whatever the bytes.
TEST_F(ReliabilityE2eTest, UndecodableRequestsStillNeedAToken) {
  const std::string tokens = dir_.File("tokens");
  {
    std::ofstream out(tokens);
    out << "e2e-secret-token\n";
  }
  StartOrDie({absl::StrCat("--auth_token_file=", tokens)});
  grpc::Channel* channel = server_->channel().get();
  const std::string random("\xff\xff\xff\xff", 4);
  EXPECT_EQ(CallUnaryRaw(channel, "EvaluatePlan", random).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(CallPlanShardingRaw(channel, random).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  grpc::ClientContext context;
  context.AddMetadata("authorization", "Bearer e2e-secret-token");
  grpc::ByteBuffer request = Bytes(random);
  grpc::ByteBuffer response;
  grpc::Status status =
      grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
          channel,
          grpc::internal::RpcMethod(
              "/shardplan.v1.ShardingPlanner/EvaluatePlan",
              grpc::internal::RpcMethod::NORMAL_RPC),
          &context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << status.error_message();
}

// With --max_concurrent_streams=1 a second call on the same connection waits
// for the first to end, while another connection is served at once.
TEST_F(ReliabilityE2eTest, ConcurrentStreamsPerConnectionAreCapped) {
  StartOrDie({"--max_concurrent_streams=1"});
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  const std::string target = absl::StrCat("127.0.0.1:", server_->grpc_port());
  auto first_channel = grpc::CreateCustomChannel(
      target, grpc::InsecureChannelCredentials(), args);
  auto first_stub = shardplan::v1::ShardingPlanner::NewStub(first_channel);
  grpc::ClientContext long_context;
  auto long_call = first_stub->PlanSharding(
      &long_context,
      Request("llama-3.1-70b", 16, 2048, 512, "rl", 100000, 120));
  PlanUpdate update;
  ASSERT_TRUE(long_call->Read(&update)) << server_->log();

  EvaluateResponse response;
  {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
    grpc::Status status =
        first_stub->EvaluatePlan(&context, Evaluate(), &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED)
        << "a second stream on the connection was served: "
        << status.error_message();
  }
  {
    auto other_channel = grpc::CreateCustomChannel(
        target, grpc::InsecureChannelCredentials(), args);
    auto other_stub = shardplan::v1::ShardingPlanner::NewStub(other_channel);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    grpc::Status status =
        other_stub->EvaluatePlan(&context, Evaluate(), &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
  }
  long_context.TryCancel();
  while (long_call->Read(&update)) {
  }
  EXPECT_EQ(long_call->Finish().error_code(), grpc::StatusCode::CANCELLED);
  // Once the stream is gone the connection takes a call again.
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  EXPECT_TRUE(first_stub->EvaluatePlan(&context, Evaluate(), &response).ok());
}

TEST_F(ReliabilityE2eTest, IdleServerStopsWithinOneSecond) {
  StartOrDie();
  {
    EvaluateResponse response;
    grpc::ClientContext context;
    ASSERT_TRUE(stub_->EvaluatePlan(&context, Evaluate(), &response).ok());
  }
  const absl::Time start = absl::Now();
  std::optional<int> exit_status = server_->Stop(SIGTERM, absl::Seconds(30));
  const absl::Duration took = absl::Now() - start;
  std::printf("[ measure  ] idle SIGTERM to exit: %.0f ms\n",
              absl::ToDoubleMilliseconds(took));
  ASSERT_TRUE(exit_status.has_value());
  EXPECT_TRUE(WIFEXITED(*exit_status) && WEXITSTATUS(*exit_status) == 0);
  EXPECT_LT(took, absl::Seconds(1)) << server_->log();
}

}  // namespace
}  // namespace shardplan::e2e
