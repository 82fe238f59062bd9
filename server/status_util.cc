#include "server/status_util.h"

#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace shardplan::server {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  // absl::StatusCode and grpc::StatusCode share the numeric values of
  // google.rpc.Code.
  const int code = static_cast<int>(status.code());
  if (code < static_cast<int>(grpc::StatusCode::OK) ||
      code > static_cast<int>(grpc::StatusCode::UNAUTHENTICATED)) {
    return grpc::Status(grpc::StatusCode::UNKNOWN,
                        std::string(status.message()));
  }
  return grpc::Status(static_cast<grpc::StatusCode>(code),
                      std::string(status.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

std::string CodeName(absl::StatusCode code) {
  return absl::StatusCodeToString(code);
}

std::string CodeName(grpc::StatusCode code) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

}  // namespace shardplan::server
