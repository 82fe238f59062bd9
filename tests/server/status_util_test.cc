#include "server/status_util.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "grpcpp/support/status.h"
#include "gtest/gtest.h"

namespace shardplan::server {
namespace {

TEST(StatusUtilTest, OkMapsToOk) {
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
}

TEST(StatusUtilTest, EveryCodeKeepsItsValueAndMessage) {
  for (int code = 1; code <= 16; ++code) {
    const absl::Status status(static_cast<absl::StatusCode>(code),
                              "field x must be > 0");
    const grpc::Status converted = ToGrpcStatus(status);
    EXPECT_EQ(static_cast<int>(converted.error_code()), code);
    EXPECT_EQ(converted.error_message(), "field x must be > 0");
    EXPECT_EQ(FromGrpcStatus(converted), status);
  }
}

TEST(StatusUtilTest, SpecificCodes) {
  EXPECT_EQ(ToGrpcStatus(absl::InvalidArgumentError("a")).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(ToGrpcStatus(absl::ResourceExhaustedError("a")).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(ToGrpcStatus(absl::UnavailableError("a")).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(ToGrpcStatus(absl::DeadlineExceededError("a")).error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);
}

TEST(StatusUtilTest, OutOfRangeCodeBecomesUnknown) {
  const absl::Status odd(static_cast<absl::StatusCode>(42), "odd");
  EXPECT_EQ(ToGrpcStatus(odd).error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(ToGrpcStatus(odd).error_message(), "odd");
}

// The message is a gRPC trailer; clients refuse ones near 8 KiB.
TEST(StatusUtilTest, LongMessagesAreCut) {
  const absl::Status huge =
      absl::InvalidArgumentError(std::string(100000, 'm'));
  const grpc::Status converted = ToGrpcStatus(huge);
  EXPECT_EQ(converted.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_LE(converted.error_message().size(), 2100u);
  EXPECT_TRUE(absl::EndsWith(converted.error_message(), "...(100000 bytes)"))
      << converted.error_message().substr(2000);
}

TEST(StatusUtilTest, CodeNames) {
  EXPECT_EQ(CodeName(absl::StatusCode::kInvalidArgument), "INVALID_ARGUMENT");
  EXPECT_EQ(CodeName(grpc::StatusCode::RESOURCE_EXHAUSTED),
            "RESOURCE_EXHAUSTED");
  EXPECT_EQ(CodeName(absl::StatusCode::kOk), "OK");
}

}  // namespace
}  // namespace shardplan::server
