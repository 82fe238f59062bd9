#include "client/exit_codes.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace shardplan::client {

int ExitCodeForGrpc(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return kExitOk;
    case grpc::StatusCode::UNAVAILABLE:
      return kExitUnreachable;
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::OUT_OF_RANGE:
      return kExitRejected;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return kExitBusy;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return kExitDeadline;
    case grpc::StatusCode::CANCELLED:
      return kExitCancelled;
    default:
      return kExitOther;
  }
}

int ExitCodeForStatus(const absl::Status& status) {
  if (status.ok()) return kExitOk;
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kPermissionDenied:
      return kExitUsage;
    default:
      return kExitOther;
  }
}

std::string GrpcCodeName(grpc::StatusCode code) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

std::string DescribeGrpcError(const grpc::Status& status,
                              absl::string_view server, absl::string_view rpc) {
  const std::string message = status.error_message();
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      return absl::StrCat(
          "cannot reach shardplan-server at ", server, " (", message,
          ").\n  Is it running? Start it with: shardplan-server "
          "--grpc_address ",
          server, "\n  or point the CLI elsewhere with --server HOST:PORT.");
    case grpc::StatusCode::INVALID_ARGUMENT:
      return absl::StrCat(
          "the server rejected the request (INVALID_ARGUMENT): ", message,
          "\n  Fix the flag or spec field named above and retry; "
          "`shardplan catalog` lists the valid model and hardware names.");
    case grpc::StatusCode::FAILED_PRECONDITION:
      return absl::StrCat(
          "the server cannot serve this request (FAILED_PRECONDITION): ",
          message);
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return absl::StrCat(
          "the server is busy (RESOURCE_EXHAUSTED): ", message,
          "\n  Too many searches are running or queued; retry later or "
          "raise --max_queued_searches on the server.");
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return absl::StrCat(
          rpc, " did not finish before the deadline (DEADLINE_EXCEEDED)",
          message.empty() ? "" : absl::StrCat(": ", message),
          "\n  Raise --deadline-seconds, or lower --max-seconds / "
          "--max-evaluations so the search ends sooner.");
    case grpc::StatusCode::CANCELLED:
      return absl::StrCat(rpc, " was cancelled (", message,
                          "); the server stops the search.");
    case grpc::StatusCode::UNIMPLEMENTED:
      return absl::StrCat(
          "the server at ", server, " does not implement ", rpc,
          " (UNIMPLEMENTED): ", message,
          "\n  Is --server pointing at a shardplan-server of this version?");
    default:
      return absl::StrCat(rpc, " failed (", GrpcCodeName(status.error_code()),
                          "): ", message);
  }
}

}  // namespace shardplan::client
