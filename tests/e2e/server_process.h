// Runs the real shardplan-server binary for end-to-end tests: spawned on
// 127.0.0.1:0 with a temp --ready_file, waited on with a deadline (no fixed
// ports, no bare sleeps), stopped with a signal. Plus small helpers: gRPC
// stubs, an HTTP GET of /metrics, metric lookup.
#ifndef SHARDPLAN_TESTS_E2E_SERVER_PROCESS_H_
#define SHARDPLAN_TESTS_E2E_SERVER_PROCESS_H_

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "shardplan/v1/shardplan.grpc.pb.h"

extern char** environ;

namespace shardplan::e2e {

// A PlanSharding request for a catalog model on H100 nodes of 8.
inline shardplan::v1::PlanRequest Request(const std::string& model, int gpus,
                                          int isl, int osl,
                                          const std::string& method,
                                          int max_evaluations,
                                          double max_seconds = 0,
                                          uint32_t seed = 1) {
  shardplan::v1::PlanRequest request;
  request.mutable_model()->set_catalog_name(model);
  request.mutable_cluster()->set_hardware("h100-sxm-80gb");
  request.mutable_cluster()->set_num_gpus(gpus);
  request.mutable_cluster()->set_gpus_per_node(8);
  request.mutable_workload()->set_input_tokens(isl);
  request.mutable_workload()->set_output_tokens(osl);
  request.mutable_options()->set_method(method);
  request.mutable_options()->set_max_evaluations(max_evaluations);
  request.mutable_options()->set_max_seconds(max_seconds);
  request.mutable_options()->set_seed(seed);
  return request;
}

// A fresh directory under TEST_TMPDIR (or /tmp), removed by the destructor.
class TempDir {
 public:
  TempDir() {
    const char* base = getenv("TEST_TMPDIR");
    std::string pattern =
        absl::StrCat(base != nullptr ? base : "/tmp", "/shardplan-e2e-XXXXXX");
    path_ = mkdtemp(pattern.data()) != nullptr ? pattern : "";
  }
  ~TempDir() {
    if (!path_.empty())
      (void)!system(absl::StrCat("rm -rf '", path_, "'").c_str());
  }
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const {
    return absl::StrCat(path_, "/", name);
  }

 private:
  std::string path_;
};

// Runs a shell command (stderr of the whole command merged into stdout);
// returns its exit status (-1 if it did not exit normally) and the output.
inline std::pair<int, std::string> RunShell(const std::string& command) {
  std::string output;
  FILE* pipe = popen(("( " + command + " ) 2>&1").c_str(), "r");
  if (pipe == nullptr) return {-1, ""};
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0)
    output.append(buffer, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

class ServerProcess {
 public:
  // `binary` is the shardplan-server path; `dir` holds the ready file and the
  // log.
  ServerProcess(std::string binary, std::string dir)
      : binary_(std::move(binary)), dir_(dir) {}
  ~ServerProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      int status = 0;
      waitpid(pid_, &status, 0);
    }
  }

  // Spawns the server with `extra_args` after the loopback/ready-file defaults
  // and waits up to `timeout` for its ready file. Returns false (log in
  // log_path()) if it does not come up.
  bool Start(const std::vector<std::string>& extra_args,
             absl::Duration timeout = absl::Seconds(60)) {
    ++starts_;
    ready_path_ = absl::StrCat(dir_, "/ready-", starts_, ".json");
    log_path_ = absl::StrCat(dir_, "/server-", starts_, ".log");
    std::vector<std::string> args = {
        binary_, "--grpc_address=127.0.0.1:0", "--metrics_address=127.0.0.1:0",
        absl::StrCat("--ready_file=", ready_path_)};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log_path_.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    const int rc = posix_spawn(&pid_, binary_.c_str(), &actions, nullptr,
                               argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      pid_ = -1;
      return false;
    }
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      const std::string ready = ReadFile(ready_path_);
      std::smatch match;
      static const std::regex kReady(
          R"re("grpc_port":(\d+),"metrics_port":(\d+))re");
      if (std::regex_search(ready, match, kReady)) {
        grpc_port_ = std::stoi(match[1]);
        metrics_port_ = std::stoi(match[2]);
        channel_ = grpc::CreateChannel(absl::StrCat("127.0.0.1:", grpc_port_),
                                       grpc::InsecureChannelCredentials());
        return true;
      }
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {  // died during startup
        pid_ = -1;
        return false;
      }
      absl::SleepFor(
          absl::Milliseconds(10));  // polling the ready file, deadline-bounded
    }
    return false;
  }

  // Sends `signal` and waits up to `timeout` for the exit; returns the wait
  // status, or nullopt on timeout (the process is then SIGKILLed).
  std::optional<int> Stop(int signal,
                          absl::Duration timeout = absl::Seconds(30)) {
    if (pid_ <= 0) return std::nullopt;
    kill(pid_, signal);
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return status;
      }
      absl::SleepFor(absl::Milliseconds(5));
    }
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return std::nullopt;
  }

  // SIGKILL and reap.
  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }

  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  int grpc_port() const { return grpc_port_; }
  int metrics_port() const { return metrics_port_; }
  std::string log() const { return ReadFile(log_path_); }
  std::shared_ptr<grpc::Channel> channel() const { return channel_; }
  std::unique_ptr<shardplan::v1::ShardingPlanner::Stub> Stub() const {
    return shardplan::v1::ShardingPlanner::NewStub(channel_);
  }

  // GET /metrics over plain HTTP/1.0; "" on failure.
  std::string Metrics() const { return HttpGet(metrics_port_, "/metrics"); }

  static std::string HttpGet(int port, const std::string& path) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return "";
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval timeout{5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      close(fd);
      return "";
    }
    const std::string request =
        absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    if (send(fd, request.data(), request.size(), 0) !=
        static_cast<ssize_t>(request.size())) {
      close(fd);
      return "";
    }
    std::string response;
    char buffer[8192];
    ssize_t n;
    while ((n = recv(fd, buffer, sizeof(buffer), 0)) > 0)
      response.append(buffer, n);
    close(fd);
    const size_t body = response.find("\r\n\r\n");
    return body == std::string::npos ? "" : response.substr(body + 4);
  }

 private:
  const std::string binary_;
  const std::string dir_;
  pid_t pid_ = -1;
  int starts_ = 0;
  std::string ready_path_;
  std::string log_path_;
  int grpc_port_ = 0;
  int metrics_port_ = 0;
  std::shared_ptr<grpc::Channel> channel_;
};

// The value of the series `series` (name plus its exact label set as printed,
// e.g. `shardplan_search_evaluations{slot="0"}`) in a Prometheus text
// exposition.
inline std::optional<double> MetricValue(const std::string& text,
                                         const std::string& series) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    if (!absl::StartsWith(line, series)) continue;
    absl::string_view rest = line.substr(series.size());
    if (rest.empty() || rest[0] != ' ') continue;
    double value = 0;
    std::vector<absl::string_view> parts = absl::StrSplit(rest.substr(1), ' ');
    if (!parts.empty() && absl::SimpleAtod(parts[0], &value)) return value;
  }
  return std::nullopt;
}

}  // namespace shardplan::e2e

#endif  // SHARDPLAN_TESTS_E2E_SERVER_PROCESS_H_
