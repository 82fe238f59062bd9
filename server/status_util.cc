#include "server/status_util.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "grpcpp/support/status.h"

namespace shardplan::server {

namespace {

// The message travels as the grpc-message trailer; clients refuse metadata
// past ~8 KiB, which would turn a clear error into an opaque one. Messages
// quote user text through simulator/user_text.h already; this is the backstop
// for any that does not.
constexpr size_t kMaxMessageBytes = 2048;

std::string Bounded(absl::string_view message) {
  if (message.size() <= kMaxMessageBytes) return std::string(message);
  return absl::StrCat(message.substr(0, kMaxMessageBytes), "...(",
                      message.size(), " bytes)");
}

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  // absl::StatusCode and grpc::StatusCode share the numeric values of
  // google.rpc.Code.
  const int code = static_cast<int>(status.code());
  if (code < static_cast<int>(grpc::StatusCode::OK) ||
      code > static_cast<int>(grpc::StatusCode::UNAUTHENTICATED)) {
    return grpc::Status(grpc::StatusCode::UNKNOWN, Bounded(status.message()));
  }
  return grpc::Status(static_cast<grpc::StatusCode>(code),
                      Bounded(status.message()));
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
