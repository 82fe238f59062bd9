// The `shardplan` CLI's documented exit codes and the translation of gRPC
// errors into messages that say what went wrong and how to fix it.
#ifndef SHARDPLAN_CLIENT_EXIT_CODES_H_
#define SHARDPLAN_CLIENT_EXIT_CODES_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "grpcpp/support/status.h"

namespace shardplan::client {

// Exit codes of every `shardplan` subcommand (docs/cli-and-emit.md, "Exit
// codes"). Stable: scripts match on them.
enum ExitCode : int {
  kExitOk = 0,
  // Anything not covered below (INTERNAL, UNKNOWN, ...).
  kExitOther = 1,
  // Bad command line or unreadable/invalid spec file; nothing was sent.
  kExitUsage = 2,
  // The server could not be reached (UNAVAILABLE), or health is not SERVING.
  kExitUnreachable = 3,
  // The server rejected the request: INVALID_ARGUMENT, FAILED_PRECONDITION,
  // OUT_OF_RANGE.
  kExitRejected = 4,
  // The server is busy: RESOURCE_EXHAUSTED (search queue full).
  kExitBusy = 5,
  // DEADLINE_EXCEEDED (--deadline-seconds ran out).
  kExitDeadline = 6,
  // CANCELLED (Ctrl-C).
  kExitCancelled = 130,
};

// Maps a gRPC status code to the exit code above.
int ExitCodeForGrpc(grpc::StatusCode code);

// Maps a client-side absl::Status (file reading, flag checks) to an exit code:
// everything the user typed wrong is kExitUsage.
int ExitCodeForStatus(const absl::Status& status);

// A one- or two-line, user-facing explanation of a failed RPC to `server`: what
// went wrong and what to do (e.g. "cannot reach shardplan-server at
// 127.0.0.1:50051 (is it running? start it with: shardplan-server
// --grpc_address 127.0.0.1:50051)"). For INVALID_ARGUMENT the server's message,
// which names the field path, is shown as is.
std::string DescribeGrpcError(const grpc::Status& status,
                              absl::string_view server, absl::string_view rpc);

// Name of a gRPC code in the style of absl ("INVALID_ARGUMENT").
std::string GrpcCodeName(grpc::StatusCode code);

}  // namespace shardplan::client

#endif  // SHARDPLAN_CLIENT_EXIT_CODES_H_
