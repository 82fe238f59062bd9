// server/request_decoding.h: request bytes that gRPC's protobuf traits would
// reject with a bare UNIMPLEMENTED are INVALID_ARGUMENT naming the reason.
#include "server/request_decoding.h"

#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardplan/v1/shardplan.pb.h"
#include "tests/server/test_util.h"

namespace shardplan::server {
namespace {

using ::testing::HasSubstr;
using testing::MakePlanRequest;

TEST(DecodeRequestTest, ValidBytesDecode) {
  const shardplan::v1::PlanRequest request = MakePlanRequest("llama-3.1-8b", 8);
  shardplan::v1::PlanRequest decoded;
  ASSERT_TRUE(DecodeRequest(request.SerializeAsString(), &decoded).ok());
  EXPECT_EQ(decoded.SerializeAsString(), request.SerializeAsString());
}

TEST(DecodeRequestTest, RandomAndTruncatedBytesAreNotWireFormat) {
  shardplan::v1::PlanRequest decoded;
  absl::Status status =
      DecodeRequest(std::string("\xff\xff\xff\xff", 4), &decoded);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("cannot decode shardplan.v1.PlanRequest (4 bytes): "
                        "not protobuf wire format"));
  const std::string valid =
      MakePlanRequest("llama-3.1-8b", 8).SerializeAsString();
  status = DecodeRequest(valid.substr(0, valid.size() - 1), &decoded);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("cannot decode"));
}

TEST(DecodeRequestTest, InvalidUtf8NamesTheField) {
  shardplan::v1::PlanRequest decoded;
  // model { catalog_name: "\xff\xfe" }
  absl::Status status =
      DecodeRequest(std::string("\x0a\x04\x0a\x02\xff\xfe", 6), &decoded);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("model.catalog_name is not valid UTF-8"));
  // options { method: "\xc3" } (field 4, method field 1)
  status = DecodeRequest(std::string("\x22\x03\x0a\x01\xc3", 5), &decoded);
  EXPECT_THAT(status.message(), HasSubstr("options.method is not valid UTF-8"));
}

}  // namespace
}  // namespace shardplan::server
