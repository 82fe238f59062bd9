// shardplan-server: serves the ShardingPlanner gRPC service (see
// docs/server-and-api.md and --help). SIGTERM/SIGINT/SIGHUP drain it: health
// NOT_SERVING, searches cancelled, open streams ended with a final update,
// store flushed, exit 0.
#include <pthread.h>
#include <signal.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "glog/logging.h"
#include "proto/limits.h"
#include "server/server.h"
#include "server/store/store_recovery.h"
#ifdef SHARDPLAN_WITH_RL
#include "policy/rl/rl_searcher.h"
#endif

// No flag may share a name with a glog flag (v, logtostderr, ...): glog is
// configured by its GLOG_* environment variables.
ABSL_FLAG(std::string, grpc_address, "127.0.0.1:50051",
          "host:port the gRPC service listens on. Port 0 picks a free port "
          "(see --ready_file). "
          "Use 0.0.0.0:PORT to accept remote clients.");
ABSL_FLAG(std::string, metrics_address, "127.0.0.1:9464",
          "host:port of the Prometheus /metrics endpoint. Port 0 picks a free "
          "port; empty "
          "disables the endpoint.");
ABSL_FLAG(std::string, store, "./shardplan-store.db",
          "Persistent elite history (best plans per problem, policy weights "
          "per problem family): a SQLite file, or postgresql://... / "
          "postgres://... (a libpq URI) for a PostgreSQL database shared by "
          "several replicas (a database that goes down only turns warm starts "
          "off until it is back). A SQLite file is created if missing. "
          "Empty disables "
          "warm starts. A "
          "store that cannot be opened or written turns warm starts off with a "
          "warning; "
          "serving goes on.");
ABSL_FLAG(int, workers, 1,
          "Cost-model evaluation threads shared by all running searches, in "
          "addition to each "
          "search's own thread (0: every search evaluates on its own thread "
          "only). Results do "
          "not depend on it.");
ABSL_FLAG(int, max_concurrent_searches, 2,
          "Searches that run at once, each on its own worker slot "
          "(shardplan_search_*{slot} series).");
ABSL_FLAG(
    int, max_queued_searches, 16,
    "Admitted searches that may wait for a free slot; one more is refused with "
    "RESOURCE_EXHAUSTED.");
ABSL_FLAG(double, default_max_seconds, shardplan::limits::kDefaultMaxSeconds,
          "Wall-clock budget of a search whose request leaves "
          "options.max_seconds at 0.");
ABSL_FLAG(double, max_seconds_limit, shardplan::limits::kDefaultMaxSecondsLimit,
          "Largest options.max_seconds a request may ask for (INVALID_ARGUMENT "
          "above).");
ABSL_FLAG(int, default_max_evaluations,
          shardplan::limits::kDefaultMaxEvaluations,
          "Cost-model evaluations of a search whose request leaves "
          "options.max_evaluations "
          "at 0.");
ABSL_FLAG(int, max_evaluations_limit,
          shardplan::limits::kDefaultMaxEvaluationsLimit,
          "Largest options.max_evaluations a request may ask for "
          "(INVALID_ARGUMENT above).");
ABSL_FLAG(int, elite_size, 16,
          "Plans kept per problem in the elite history (top-K).");
ABSL_FLAG(std::string, ready_file, "",
          "When set, written once the server serves: "
          "{\"grpc_port\":N,\"metrics_port\":M,\"pid\":P} with the bound ports "
          "(useful "
          "with port 0). Written atomically.");
ABSL_FLAG(double, shutdown_grace_seconds, 10,
          "On SIGTERM/SIGINT/SIGHUP, how long open calls may take to end "
          "(after their "
          "searches "
          "were cancelled) before they are cut.");

ABSL_FLAG(std::string, tls_cert, "",
          "PEM certificate chain of the server. With --tls_key the gRPC port "
          "speaks TLS only (plaintext clients are refused).");
ABSL_FLAG(std::string, tls_key, "", "PEM private key matching --tls_cert.");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA bundle: enables mutual TLS; every client must present a "
          "certificate signed by it (needs --tls_cert/--tls_key).");
ABSL_FLAG(std::string, auth_token_file, "",
          "File with accepted bearer tokens, one per line ('#' comments). "
          "When set, every ShardingPlanner RPC needs the metadata "
          "\"authorization: Bearer <token>\" (UNAUTHENTICATED otherwise); "
          "health checks and reflection stay open. Tokens are never logged.");
ABSL_FLAG(int, max_num_gpus, shardplan::limits::kDefaultMaxNumGpus,
          "Largest cluster.num_gpus accepted (INVALID_ARGUMENT above; 0 = no "
          "cap).");
ABSL_FLAG(int, max_layers, shardplan::limits::kDefaultMaxLayers,
          "Largest model.num_layers accepted (INVALID_ARGUMENT above; 0 = no "
          "cap).");
ABSL_FLAG(int, max_experts, shardplan::limits::kDefaultMaxExperts,
          "Largest model.num_experts accepted (INVALID_ARGUMENT above; 0 = no "
          "cap).");
ABSL_FLAG(int, max_request_bytes, 4 << 20,
          "Largest request message in bytes (gRPC max receive message size; "
          "RESOURCE_EXHAUSTED above).");
ABSL_FLAG(int, max_concurrent_streams, 100,
          "HTTP/2 streams (calls) one client connection may have open at "
          "once; more wait for a free one. Bounds HTTP/2 rapid-reset floods.");
ABSL_FLAG(int, max_searches_per_peer, 8,
          "PlanSharding calls one client address may have open at once, "
          "running or queued (RESOURCE_EXHAUSTED above; 0 = no cap).");

ABSL_FLAG(int, max_concurrent_evaluations, 4,
          "EvaluatePlan calls evaluated at once; more are refused with "
          "RESOURCE_EXHAUSTED (0 = no cap). Keeps health checks answering "
          "during bursts.");
ABSL_FLAG(int64_t, store_max_problems, 10000,
          "Problems the store keeps: beyond it the least recently searched "
          "are deleted with their plans (checked every 16 searches and at "
          "start; 0 = no cap).");
ABSL_FLAG(int, store_max_age_days, 0,
          "Problems not searched for this many days are deleted from the "
          "store (0 = keep).");
ABSL_FLAG(int, store_call_timeout_ms, 5000,
          "PostgreSQL store: the longest one store call may wait on the "
          "network; a database that stops answering fails the call (the "
          "search goes on cold) after it.");

int main(int argc, char** argv) {
  // Before any thread exists: SIGTERM/SIGINT/SIGHUP are delivered only to the
  // sigwait thread. SIGHUP (a closed terminal, or a reload by habit) drains
  // like SIGTERM: its default action would kill the server without storing
  // what the running searches found.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // --help lists this file's flags (absl would look for shardplan-server.cc
  // otherwise).
  absl::FlagsUsageConfig usage_config;
  usage_config.contains_help_flags = [](absl::string_view file) {
    return absl::EndsWith(file, "server/main.cc");
  };
  absl::SetFlagsUsageConfig(usage_config);
  absl::SetProgramUsageMessage(
      "gRPC service that searches sharding plans for LLM inference.\n"
      "Usage: shardplan-server [--grpc_address=HOST:PORT] "
      "[--metrics_address=HOST:PORT] "
      "[--store=FILE] ...\nLogging: GLOG_v=1, GLOG_log_dir=DIR (default: "
      "stderr).");
  absl::ParseCommandLine(argc, argv);
  if (std::getenv("GLOG_log_dir") == nullptr) FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);
#ifdef SHARDPLAN_WITH_RL
  shardplan::policy::RegisterRlSearchers();
#else
  LOG(INFO) << "built without LibTorch: method \"rl\" is not available";
#endif

  shardplan::server::ServerOptions options;
  options.grpc_address = absl::GetFlag(FLAGS_grpc_address);
  options.metrics_address = absl::GetFlag(FLAGS_metrics_address);
  options.store_path = absl::GetFlag(FLAGS_store);
  options.eval_threads = absl::GetFlag(FLAGS_workers);
  options.max_concurrent_searches =
      absl::GetFlag(FLAGS_max_concurrent_searches);
  options.max_queued_searches = absl::GetFlag(FLAGS_max_queued_searches);
  options.limits.default_max_seconds = absl::GetFlag(FLAGS_default_max_seconds);
  options.limits.max_seconds_limit = absl::GetFlag(FLAGS_max_seconds_limit);
  options.limits.default_max_evaluations =
      absl::GetFlag(FLAGS_default_max_evaluations);
  options.limits.max_evaluations_limit =
      absl::GetFlag(FLAGS_max_evaluations_limit);
  options.elite_size = absl::GetFlag(FLAGS_elite_size);
  options.tls.cert = absl::GetFlag(FLAGS_tls_cert);
  options.tls.key = absl::GetFlag(FLAGS_tls_key);
  options.tls.client_ca = absl::GetFlag(FLAGS_tls_client_ca);
  options.auth_token_file = absl::GetFlag(FLAGS_auth_token_file);
  options.limits.max_num_gpus = absl::GetFlag(FLAGS_max_num_gpus);
  options.limits.max_layers = absl::GetFlag(FLAGS_max_layers);
  options.limits.max_experts = absl::GetFlag(FLAGS_max_experts);
  options.max_request_bytes = absl::GetFlag(FLAGS_max_request_bytes);
  options.max_searches_per_peer = absl::GetFlag(FLAGS_max_searches_per_peer);
  options.max_concurrent_streams = absl::GetFlag(FLAGS_max_concurrent_streams);
  options.max_concurrent_evaluations =
      absl::GetFlag(FLAGS_max_concurrent_evaluations);
  options.store_max_problems = absl::GetFlag(FLAGS_store_max_problems);
  options.store_max_age_days = absl::GetFlag(FLAGS_store_max_age_days);
  options.store_call_timeout_ms = absl::GetFlag(FLAGS_store_call_timeout_ms);
  // A corrupt store file is moved aside before the store opens (a fresh one is
  // created); a failure to move it only leaves warm starts off.
  {
    absl::StatusOr<std::string> moved =
        shardplan::server::QuarantineCorruptStore(options.store_path,
                                                  absl::Now());
    if (!moved.ok()) LOG(WARNING) << moved.status();
  }
  options.shutdown_grace =
      absl::Seconds(absl::GetFlag(FLAGS_shutdown_grace_seconds));

  absl::StatusOr<std::unique_ptr<shardplan::server::PlannerServer>> server =
      shardplan::server::PlannerServer::Start(options);
  if (!server.ok()) {
    LOG(ERROR) << "shardplan-server cannot start: " << server.status();
    return 1;
  }
  const std::string ready_file = absl::GetFlag(FLAGS_ready_file);
  if (!ready_file.empty()) {
    absl::Status written = (*server)->WriteReadyFile(ready_file);
    if (!written.ok()) {
      LOG(ERROR) << written;
      (*server)->Shutdown();
      return 1;
    }
  }

  absl::Notification stop;
  int received = 0;
  std::thread signal_thread([&] {
    int signal_number = 0;
    while (sigwait(&signals, &signal_number) != 0) {
    }
    received = signal_number;
    stop.Notify();
  });
  stop.WaitForNotification();
  signal_thread.join();
  LOG(INFO) << "signal " << received << " (" << strsignal(received)
            << "): draining";
  (*server)->Shutdown();
  if ((*server)->profiles().fitting()) {
    // A calibration fit outlived the grace period: its client has its answer
    // and nothing of it will be stored; the store is flushed. Waiting for the
    // computation would overrun --shutdown_grace_seconds.
    LOG(WARNING) << "a calibration fit is still running; exiting without it";
    google::FlushLogFiles(google::GLOG_INFO);
    std::_Exit(0);
  }
  server->reset();
  google::ShutdownGoogleLogging();
  return 0;
}
