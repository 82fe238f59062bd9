// The one conversion from absl::Status to grpc::Status (STYLE.md §4): same code
// values, same message (cut to 2 KiB). Used by every RPC handler of the server.
#ifndef SHARDPLAN_SERVER_STATUS_UTIL_H_
#define SHARDPLAN_SERVER_STATUS_UTIL_H_

#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace shardplan::server {

// Maps `status` to the gRPC status with the same numeric code and message.
// Codes outside gRPC's range (never produced by absl) become UNKNOWN.
// Thread-safe, no allocation beyond the message copy.
grpc::Status ToGrpcStatus(const absl::Status& status);

// The inverse, for tests and clients of in-process stubs.
absl::Status FromGrpcStatus(const grpc::Status& status);

// "OK", "INVALID_ARGUMENT", ...: the label value of `code` in metrics and log
// lines.
std::string CodeName(absl::StatusCode code);
std::string CodeName(grpc::StatusCode code);

}  // namespace shardplan::server

#endif  // SHARDPLAN_SERVER_STATUS_UTIL_H_
