#include "client/exit_codes.h"

#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shardplan::client {
namespace {

using ::testing::HasSubstr;

TEST(ExitCodesTest, DistinctCodesPerFailureClass) {
  const std::set<int> codes = {
      ExitCodeForGrpc(grpc::StatusCode::OK),
      ExitCodeForGrpc(grpc::StatusCode::UNAVAILABLE),
      ExitCodeForGrpc(grpc::StatusCode::INVALID_ARGUMENT),
      ExitCodeForGrpc(grpc::StatusCode::RESOURCE_EXHAUSTED),
      ExitCodeForGrpc(grpc::StatusCode::DEADLINE_EXCEEDED),
      ExitCodeForGrpc(grpc::StatusCode::INTERNAL),
      ExitCodeForStatus(absl::InvalidArgumentError("bad flag")),
  };
  EXPECT_EQ(codes.size(), 7u);
  EXPECT_EQ(ExitCodeForGrpc(grpc::StatusCode::UNAVAILABLE), 3);
  EXPECT_EQ(ExitCodeForGrpc(grpc::StatusCode::INVALID_ARGUMENT), 4);
  EXPECT_EQ(ExitCodeForGrpc(grpc::StatusCode::RESOURCE_EXHAUSTED), 5);
  EXPECT_EQ(ExitCodeForGrpc(grpc::StatusCode::DEADLINE_EXCEEDED), 6);
  EXPECT_EQ(ExitCodeForStatus(absl::NotFoundError("no file")), 2);
}

TEST(ExitCodesTest, UnreachableSaysHowToStartTheServer) {
  const std::string text =
      DescribeGrpcError(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                     "failed to connect to all addresses"),
                        "127.0.0.1:50051", "PlanSharding");
  EXPECT_THAT(text,
              HasSubstr("cannot reach shardplan-server at 127.0.0.1:50051"));
  EXPECT_THAT(text,
              HasSubstr("shardplan-server --grpc_address 127.0.0.1:50051"));
}

TEST(ExitCodesTest, InvalidArgumentKeepsTheServersFieldPath) {
  const std::string text = DescribeGrpcError(
      grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                   "model.catalog_name: unknown model \"nope\""),
      "127.0.0.1:1", "PlanSharding");
  EXPECT_THAT(text, HasSubstr("INVALID_ARGUMENT"));
  EXPECT_THAT(text, HasSubstr("model.catalog_name: unknown model \"nope\""));
}

TEST(ExitCodesTest, DeadlineSuggestsTheFlag) {
  const std::string text = DescribeGrpcError(
      grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "Deadline Exceeded"),
      "h:1", "PlanSharding");
  EXPECT_THAT(text, HasSubstr("--deadline-seconds"));
}

}  // namespace
}  // namespace shardplan::client
