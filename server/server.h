// The planning server assembled: metrics, elite store, worker pool, the
// ShardingPlanner service with gRPC health and reflection, and the Prometheus
// /metrics endpoint. main.cc wraps it with flags and signal handling; tests run
// it in-process.
#ifndef SHARDPLAN_SERVER_SERVER_H_
#define SHARDPLAN_SERVER_SERVER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "server/auth.h"
#include "server/limits.h"
#include "server/metrics.h"
#include "server/plan_stream.h"
#include "server/search_scheduler.h"
#include "server/service.h"
#include "server/store/profile_store.h"
#include "server/store/warm_start_persistence.h"
#include "server/validation.h"

namespace prometheus {
class Exposer;
}
namespace shardplan::policy {
class EvalPool;
}

namespace shardplan::server {

struct ServerOptions {
  // host:port; port 0 picks a free port (see grpc_port()).
  std::string grpc_address = "127.0.0.1:50051";
  // host:port of /metrics; port 0 picks a free one; "" = no metrics endpoint.
  std::string metrics_address = "127.0.0.1:9464";
  // SQLite file of the elite store; "" = no store (warm starts off).
  std::string store_path;
  int max_concurrent_searches = 2;  // worker slots
  int max_queued_searches = 16;
  int eval_threads =
      0;  // shared EvalPool threads (0: searches evaluate on their own thread)
  RequestLimits limits;
  int elite_size = 16;
  // Null: policy::CreateSearcher.
  SearcherFactory searcher_factory;
  // How long Shutdown waits for open calls to end before cancelling them.
  absl::Duration shutdown_grace = absl::Seconds(10);
  // Security and limits (server/auth.h, server/limits.h). Empty cert/key:
  // plaintext; client_ca: mutual TLS. Empty auth_token_file: no token needed.
  TlsFiles tls;
  std::string auth_token_file;
  int max_searches_per_peer =
      8;  // open PlanSharding calls per address; 0 = off
  int max_request_bytes = 4 << 20;  // gRPC max receive message size
  // HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS per connection (rapid reset).
  int max_concurrent_streams = 100;
  // EvaluatePlan calls evaluated at once (RESOURCE_EXHAUSTED beyond; 0 = no
  // cap).
  int max_concurrent_evaluations = 4;
  // Store bounds (EliteStore::Options): problems kept, days kept (0 = no
  // bound), and the longest a PostgreSQL call may wait on the network.
  int64_t store_max_problems = 10000;
  int store_max_age_days = 0;
  int store_call_timeout_ms = 5000;
};

class PlannerServer {
 public:
  // Opens the store (a failure only turns warm starts off, logged), starts the
  // worker pool, binds gRPC and /metrics and marks health SERVING. UNAVAILABLE
  // when a port cannot be bound; INVALID_ARGUMENT for nonsensical options.
  static absl::StatusOr<std::unique_ptr<PlannerServer>> Start(
      ServerOptions options);
  // Shuts down if not done yet.
  ~PlannerServer();
  PlannerServer(const PlannerServer&) = delete;
  PlannerServer& operator=(const PlannerServer&) = delete;

  int grpc_port() const { return grpc_port_; }
  int metrics_port() const {
    return metrics_port_;
  }  // 0 without metrics endpoint
  ServerMetrics& metrics() { return *metrics_; }
  WarmStartPersistence& history() { return *history_; }
  CalibrationProfileStore& profiles() { return *profiles_; }
  SearchScheduler& scheduler() { return *scheduler_; }
  StreamRegistry& registry() { return registry_; }

  // Writes {"grpc_port":N,"metrics_port":M,"pid":P} to `path` atomically (temp
  // + rename).
  absl::Status WriteReadyFile(const std::string& path) const;

  // The drain: health NOT_SERVING, refuse new searches, cancel every search
  // (open streams end with a final update), gRPC Shutdown with the grace
  // deadline, join the workers, checkpoint the store. Idempotent; blocks up to
  // the grace period plus the searches' cancellation latency.
  void Shutdown();

 private:
  explicit PlannerServer(ServerOptions options);

  const ServerOptions options_;
  std::unique_ptr<ServerMetrics> metrics_;
  std::unique_ptr<WarmStartPersistence> history_;
  std::unique_ptr<CalibrationProfileStore> profiles_;
  std::unique_ptr<policy::EvalPool> eval_pool_;
  std::unique_ptr<SearchScheduler> scheduler_;
  StreamRegistry registry_;
  std::unique_ptr<TokenAuthenticator> authenticator_;
  std::unique_ptr<PeerLimiter> peer_limiter_;
  std::unique_ptr<PlannerService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int grpc_port_ = 0;
  int metrics_port_ = 0;
  absl::Mutex shutdown_mu_;
  bool shut_down_ ABSL_GUARDED_BY(shutdown_mu_) = false;
};

}  // namespace shardplan::server

#endif  // SHARDPLAN_SERVER_SERVER_H_
