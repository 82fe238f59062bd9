// The `shardplan` command line: subcommands plan, evaluate, catalog, health and
// their flags, parsed into plain structs (no I/O, no RPC), so that parsing is
// unit-tested.
#ifndef SHARDPLAN_CLIENT_CLI_H_
#define SHARDPLAN_CLIENT_CLI_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/measurements.h"
#include "client/request_builder.h"

namespace shardplan::client {

// Flags every subcommand has (some only where they make sense).
struct GlobalFlags {
  std::string server = "127.0.0.1:50051";
  double deadline_seconds =
      0;  // 0 = none for plan, 30 s evaluate/catalog, 5 s health
  std::string output = "table";  // table | json | yaml (plan only)
  // "" | vllm | sglang | trtllm | k8s-vllm | k8s-sglang | dynamo |
  // dynamo-vllm | dynamo-sglang
  std::string emit;
  // plan only: files for the final update's frontier ("" = not written).
  std::string frontier_csv;
  std::string frontier_png;  // drawn by gnuplot
  // Engine release whose flags --emit uses ("" = the newest checked).
  std::string engine_version;
  // --engine: the engine of `--emit dynamo` ("" = vllm).
  std::string engine;
  // Transport security (client/main.cc). Any of tls_ca/tls_cert/tls_key/
  // tls_server_name (or --tls) switches to TLS; tls_cert+tls_key: mutual TLS.
  bool tls = false;
  std::string tls_ca;           // PEM roots ("" = system roots)
  std::string tls_cert;         // PEM client certificate chain (mTLS)
  std::string tls_key;          // PEM client private key (mTLS)
  std::string tls_server_name;  // overrides the name checked in the cert
  // Bearer token: first token line of this file, else $SHARDPLAN_TOKEN.
  std::string token_file;
  bool UseTls() const {
    return tls || !tls_ca.empty() || !tls_cert.empty() || !tls_key.empty() ||
           !tls_server_name.empty();
  }
};

// `shardplan calibrate`: result files, the profile name, and what the files
// leave out (client/measurements.h).
struct CalibrateFlags {
  std::vector<std::string> results;
  std::string name;
  RunDefaults defaults;
};

enum class Command {
  kNone,
  kPlan,
  kEvaluate,
  kCatalog,
  kHealth,
  kReplan,
  kCalibrate
};
;

struct CommandLine {
  Command command = Command::kNone;
  GlobalFlags global;
  ProblemFlags problem;
  SearchFlags search;
  PlanFlags plan;
  ReplanFlags replan;
  std::string health_service;
  CalibrateFlags calibrate;
  // Non-empty when --help was asked for: print it and exit 0.
  std::string help;
};

// The exit codes, as printed at the end of --help.
extern const char kExitCodesHelp[];

// Parses `argv` (argv[0] is the program name). INVALID_ARGUMENT with CLI11's
// message, which names the flag and quotes the offending value (`--gpus: must
// be a positive integer, got "abc"`), for anything the user typed wrong. Never
// throws.
absl::StatusOr<CommandLine> ParseCommandLine(int argc, const char* const* argv);

}  // namespace shardplan::client

#endif  // SHARDPLAN_CLIENT_CLI_H_
