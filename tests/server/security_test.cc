// Limits, bearer tokens, per-peer admission and corrupt-store recovery
// (server/auth.h, server/limits.h, server/store/store_recovery.h, the problem
// caps of server/validation.h), plus the whole service in-process with a token
// file and a per-peer cap.
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "server/auth.h"
#include "server/limits.h"
#include "server/server.h"
#include "server/store/store_recovery.h"
#include "server/validation.h"
#include "shardplan/v1/shardplan.grpc.pb.h"
#include "tests/server/test_util.h"

namespace shardplan::server {
namespace {

using testing::FakeScript;
using testing::FakeSearcher;
using ::testing::HasSubstr;
using testing::MakePlanRequest;
using ::testing::Not;
using testing::TempDir;

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

bool FileExists(const std::string& path) {
  std::ifstream in(path);
  return static_cast<bool>(in);
}

TEST(ConstantTimeEqualsTest, ComparesContentAndLength) {
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_TRUE(ConstantTimeEquals("s3cret", "s3cret"));
  EXPECT_FALSE(ConstantTimeEquals("s3cret", "s3creT"));
  EXPECT_FALSE(ConstantTimeEquals("s3cret", "s3cret2"));
  EXPECT_FALSE(ConstantTimeEquals("s3cret", ""));
  EXPECT_FALSE(ConstantTimeEquals(std::string("a\0b", 3), "a"));
}

TEST(TokenAuthenticatorTest, AcceptsOnlyListedBearerTokens) {
  TempDir dir;
  const std::string path = dir.File("tokens");
  WriteFile(path, "# ops team\n  alpha-token  \n\nbeta-token\n");
  auto auth = TokenAuthenticator::FromFile(path);
  ASSERT_TRUE(auth.ok()) << auth.status();
  EXPECT_EQ((*auth)->size(), 2);
  EXPECT_TRUE((*auth)->CheckAuthorizationValue("Bearer alpha-token").ok());
  EXPECT_TRUE((*auth)->CheckAuthorizationValue("bearer beta-token").ok());
  for (const char* bad :
       {"", "Bearer", "Bearer ", "Bearer alpha", "Basic alpha-token",
        "alpha-token", "Bearer # ops team", "Bearer alpha-token2"}) {
    absl::Status status = (*auth)->CheckAuthorizationValue(bad);
    EXPECT_TRUE(absl::IsUnauthenticated(status)) << bad << ": " << status;
    EXPECT_THAT(status.message(), Not(HasSubstr("alpha")))
        << "the message never echoes tokens";
  }
}

TEST(TokenAuthenticatorTest, RefusesUnreadableOrEmptyFiles) {
  TempDir dir;
  auto missing = TokenAuthenticator::FromFile(dir.File("nope"));
  EXPECT_TRUE(absl::IsFailedPrecondition(missing.status()));
  EXPECT_THAT(missing.status().message(), HasSubstr("--auth_token_file"));
  WriteFile(dir.File("empty"), "# nothing\n\n");
  auto empty = TokenAuthenticator::FromFile(dir.File("empty"));
  EXPECT_TRUE(absl::IsFailedPrecondition(empty.status()));
  EXPECT_THAT(empty.status().message(), HasSubstr("holds no token"));
}

TEST(TlsCredentialsTest, NeedsCertAndKeyTogether) {
  EXPECT_TRUE(MakeServerCredentials({}).ok());
  TlsFiles only_cert;
  only_cert.cert = "/x.pem";
  EXPECT_TRUE(
      absl::IsInvalidArgument(MakeServerCredentials(only_cert).status()));
  TlsFiles only_ca;
  only_ca.client_ca = "/ca.pem";
  EXPECT_TRUE(absl::IsInvalidArgument(MakeServerCredentials(only_ca).status()));
  TlsFiles missing;
  missing.cert = "/nonexistent/cert.pem";
  missing.key = "/nonexistent/key.pem";
  absl::Status status = MakeServerCredentials(missing).status();
  EXPECT_TRUE(absl::IsFailedPrecondition(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("--tls_cert"));
}

TEST(PeerLimiterTest, PeerAddressDropsThePort) {
  EXPECT_EQ(PeerAddress("ipv4:127.0.0.1:54321"), "ipv4:127.0.0.1");
  EXPECT_EQ(PeerAddress("ipv6:[::1]:54321"), "ipv6:[::1]");
  EXPECT_EQ(PeerAddress("ipv6:[::1]"), "ipv6:[::1]");
  EXPECT_EQ(PeerAddress("unix:/tmp/sock"), "unix:/tmp/sock");
}

TEST(PeerLimiterTest, CountsPerAddressAndNamesTheFlag) {
  PeerLimiter limiter(2);
  limiter.Add("ipv4:10.0.0.1");
  limiter.Add("ipv4:10.0.0.1");
  limiter.Add("ipv4:10.0.0.2");
  EXPECT_TRUE(limiter.Check("ipv4:10.0.0.1").ok());
  limiter.Add("ipv4:10.0.0.1");
  absl::Status over = limiter.Check("ipv4:10.0.0.1");
  EXPECT_TRUE(absl::IsResourceExhausted(over));
  EXPECT_THAT(over.message(), HasSubstr("--max_searches_per_peer"));
  EXPECT_TRUE(limiter.Check("ipv4:10.0.0.2").ok());
  limiter.Remove("ipv4:10.0.0.1");
  EXPECT_TRUE(limiter.Check("ipv4:10.0.0.1").ok());
  EXPECT_EQ(limiter.Count("ipv4:10.0.0.1"), 2);
  PeerLimiter unlimited(0);
  for (int i = 0; i < 100; ++i) unlimited.Add("x");
  EXPECT_TRUE(unlimited.Check("x").ok());
}

TEST(ProblemLimitsTest, RequestsAboveACapNameTheCapAndItsFlag) {
  RequestLimits limits;
  limits.max_num_gpus = 64;
  auto gpus = ValidatePlanRequest(MakePlanRequest("llama-3.1-8b", 128), limits);
  ASSERT_TRUE(absl::IsInvalidArgument(gpus.status())) << gpus.status();
  EXPECT_EQ(
      gpus.status().message(),
      "cluster.num_gpus 128 exceeds the server limit 64 (--max_num_gpus)");
  EXPECT_TRUE(
      ValidatePlanRequest(MakePlanRequest("llama-3.1-8b", 64), limits).ok());

  limits = RequestLimits();
  limits.max_layers = 16;  // llama-3.1-8b has 32 layers
  auto layers = ValidatePlanRequest(MakePlanRequest("llama-3.1-8b", 8), limits);
  ASSERT_TRUE(absl::IsInvalidArgument(layers.status()));
  EXPECT_THAT(layers.status().message(),
              HasSubstr("exceeds the server limit 16 (--max_layers)"));

  limits = RequestLimits();
  limits.max_experts = 4;
  auto experts =
      ValidatePlanRequest(MakePlanRequest("mixtral-8x22b", 16), limits);
  ASSERT_TRUE(absl::IsInvalidArgument(experts.status())) << experts.status();
  EXPECT_THAT(experts.status().message(),
              HasSubstr("model.num_experts 8 exceeds the server limit 4 "
                        "(--max_experts)"));

  // The defaults: 16,384 GPUs pass the cap, one node more does not.
  EXPECT_EQ(RequestLimits().max_num_gpus, 16384);
  auto big = ValidatePlanRequest(MakePlanRequest("llama-3.1-8b", 16392),
                                 RequestLimits());
  EXPECT_THAT(big.status().message(), HasSubstr("(--max_num_gpus)"));

  shardplan::v1::EvaluateRequest evaluate;
  *evaluate.mutable_model() = MakePlanRequest("llama-3.1-8b", 8).model();
  *evaluate.mutable_cluster() = MakePlanRequest("llama-3.1-8b", 128).cluster();
  evaluate.mutable_plan()->set_tp(8);
  evaluate.mutable_plan()->set_dp(16);
  evaluate.mutable_plan()->set_pp(1);
  limits = RequestLimits();
  limits.max_num_gpus = 64;
  auto evaluated = ValidateEvaluateRequest(evaluate, limits);
  EXPECT_THAT(evaluated.status().message(), HasSubstr("(--max_num_gpus)"));
}

TEST(StoreRecoveryTest, MovesAsideOnlyCorruptFiles) {
  TempDir dir;
  const absl::Time now = absl::FromUnixSeconds(1763776800);  // 2025-11-22 02:00
  // Missing and empty files, and non-file stores, are left alone.
  EXPECT_EQ(*QuarantineCorruptStore(dir.File("missing.db"), now), "");
  WriteFile(dir.File("empty.db"), "");
  EXPECT_EQ(*QuarantineCorruptStore(dir.File("empty.db"), now), "");
  EXPECT_EQ(*QuarantineCorruptStore("postgresql://db/shardplan", now), "");

  const std::string garbage = dir.File("garbage.db");
  WriteFile(garbage, std::string(4096, '\x5a'));
  WriteFile(garbage + "-wal", "stale wal");
  absl::StatusOr<std::string> moved = QuarantineCorruptStore(garbage, now);
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_EQ(*moved, garbage + ".corrupt-20251122T020000Z");
  EXPECT_FALSE(FileExists(garbage));
  EXPECT_FALSE(FileExists(garbage + "-wal"));
  EXPECT_TRUE(FileExists(*moved));
  EXPECT_TRUE(FileExists(*moved + "-wal"));

  // A real SQLite header with garbage pages fails quick_check.
  const std::string mangled = dir.File("mangled.db");
  std::string bytes = std::string("SQLite format 3", 16);
  bytes += std::string(1, '\x10') + std::string(1, '\x00');  // page size 4096
  bytes.resize(8192, '\x7f');
  WriteFile(mangled, bytes);
  moved = QuarantineCorruptStore(mangled, now);
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_THAT(*moved, HasSubstr(".corrupt-"));
}

// The whole service with a token file and a per-peer cap, in-process.
class SecureServiceTest : public ::testing::Test {
 protected:
  void StartServer(int per_peer) {
    WriteFile(dir_.File("tokens"), "good-token\n");
    ServerOptions options;
    options.grpc_address = "127.0.0.1:0";
    options.metrics_address = "";
    options.store_path = "";
    options.max_concurrent_searches = 1;
    options.max_queued_searches = 8;
    options.max_searches_per_peer = per_peer;
    options.auth_token_file = dir_.File("tokens");
    options.shutdown_grace = absl::Seconds(5);
    options.searcher_factory = [this](absl::string_view) {
      return absl::StatusOr<std::unique_ptr<policy::Searcher>>(
          std::make_unique<FakeSearcher>(script_));
    };
    auto server = PlannerServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    channel_ =
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_->grpc_port()),
                            grpc::InsecureChannelCredentials());
    stub_ = shardplan::v1::ShardingPlanner::NewStub(channel_);
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
  }

  TempDir dir_;
  FakeScript script_;
  std::unique_ptr<PlannerServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<shardplan::v1::ShardingPlanner::Stub> stub_;
};

TEST_F(SecureServiceTest, EveryPlannerRpcNeedsTheToken) {
  StartServer(/*per_peer=*/0);
  for (const char* header : {"", "Bearer wrong", "Bearer good-token"}) {
    SCOPED_TRACE(header);
    const bool good = std::string(header) == "Bearer good-token";
    {
      grpc::ClientContext context;
      if (*header) context.AddMetadata("authorization", header);
      shardplan::v1::ListCatalogResponse response;
      grpc::Status status = stub_->ListCatalog(
          &context, shardplan::v1::ListCatalogRequest(), &response);
      EXPECT_EQ(status.error_code(), good ? grpc::StatusCode::OK
                                          : grpc::StatusCode::UNAUTHENTICATED);
    }
    {
      grpc::ClientContext context;
      if (*header) context.AddMetadata("authorization", header);
      shardplan::v1::EvaluateRequest request;
      shardplan::v1::EvaluateResponse response;
      grpc::Status status = stub_->EvaluatePlan(&context, request, &response);
      // With the right token the empty request reaches validation.
      EXPECT_EQ(status.error_code(), good ? grpc::StatusCode::INVALID_ARGUMENT
                                          : grpc::StatusCode::UNAUTHENTICATED);
    }
    {
      grpc::ClientContext context;
      if (*header) context.AddMetadata("authorization", header);
      auto reader =
          stub_->PlanSharding(&context, MakePlanRequest("llama-3.1-8b", 8));
      shardplan::v1::PlanUpdate update;
      int updates = 0;
      while (reader->Read(&update)) ++updates;
      grpc::Status status = reader->Finish();
      EXPECT_EQ(status.error_code(), good ? grpc::StatusCode::OK
                                          : grpc::StatusCode::UNAUTHENTICATED);
      EXPECT_EQ(updates > 0, good);
      if (!good) {
        EXPECT_THAT(status.error_message(), Not(HasSubstr("wrong")));
      }
    }
  }
  EXPECT_EQ(script_.started(), 1) << "refused calls never search";
}

TEST_F(SecureServiceTest, ThePerPeerCapRefusesTheNextSearchUntilOneEnds) {
  StartServer(/*per_peer=*/2);
  script_.block_until_cancelled = true;
  script_.improvements = 0;
  auto open = [&](grpc::ClientContext* context) {
    context->AddMetadata("authorization", "Bearer good-token");
    return stub_->PlanSharding(context, MakePlanRequest("llama-3.1-8b", 8));
  };
  grpc::ClientContext a_ctx, b_ctx;
  auto a = open(&a_ctx);
  auto b = open(&b_ctx);
  shardplan::v1::PlanUpdate update;
  ASSERT_TRUE(a->Read(&update));
  ASSERT_TRUE(b->Read(&update));
  {
    grpc::ClientContext c_ctx;
    auto c = open(&c_ctx);
    EXPECT_FALSE(c->Read(&update));
    grpc::Status status = c->Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_THAT(status.error_message(),
                HasSubstr("limit is 2 per client address "
                          "(--max_searches_per_peer)"));
  }
  b_ctx.TryCancel();
  EXPECT_EQ(b->Finish().error_code(), grpc::StatusCode::CANCELLED);
  // Once b's call is gone on the server, a new one is admitted.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  bool admitted = false;
  while (!admitted && absl::Now() < deadline) {
    grpc::ClientContext d_ctx;
    auto d = open(&d_ctx);
    if (d->Read(&update)) {
      admitted = true;
      d_ctx.TryCancel();
    }
    d->Finish();
    if (!admitted) absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_TRUE(admitted);
  a_ctx.TryCancel();
  EXPECT_EQ(a->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

}  // namespace
}  // namespace shardplan::server
