#include "server/server.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "glog/logging.h"
#include "grpc/health/v1/health.pb.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "policy/eval_pool.h"
#include "policy/searcher.h"
#include "prometheus/exposer.h"
#include "server/store/elite_store.h"

namespace shardplan::server {
namespace {

constexpr char kServiceName[] = "shardplan.v1.ShardingPlanner";
// How long calls still open at Shutdown (unary ones: a single cost-model
// evaluation) may take before gRPC cancels them.
constexpr absl::Duration kUnaryCallGrace = absl::Milliseconds(250);

// gRPC 1.51's default health service is built on upb, so grpc.health.v1 is not
// in the protobuf generated pool that reflection answers from. Referencing the
// descriptor of our own compiled health.proto (proto/CMakeLists.txt) links it
// in and registers it, so that grpcurl / buf curl can call Health with no proto
// files (CONTRACT.md).
const google::protobuf::FileDescriptor* HealthProtoFile() {
  return grpc::health::v1::HealthCheckRequest::descriptor()->file();
}

// Opens and closes one TCP connection to `address` ("host:port" as given to
// --metrics_address, with the bound `port`); wildcard hosts mean loopback.
void ConnectOnce(const std::string& address, int port) {
  std::string host = address.substr(0, address.rfind(':'));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (host.empty() || host == "0.0.0.0") host = "127.0.0.1";
  if (host == "::") host = "::1";
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) !=
      0) {
    return;
  }
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) continue;
    const bool connected = connect(fd, a->ai_addr, a->ai_addrlen) == 0;
    close(fd);
    if (connected) break;
  }
  freeaddrinfo(found);
}

}  // namespace

PlannerServer::PlannerServer(ServerOptions options)
    : options_(std::move(options)) {}

PlannerServer::~PlannerServer() { Shutdown(); }

absl::StatusOr<std::unique_ptr<PlannerServer>> PlannerServer::Start(
    ServerOptions options) {
  if (options.max_concurrent_searches < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max_concurrent_searches must be >= 1, got ",
                     options.max_concurrent_searches));
  }
  if (options.max_queued_searches < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max_queued_searches must be >= 0, got ",
                     options.max_queued_searches));
  }
  if (options.eval_threads < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--workers must be >= 0, got ", options.eval_threads));
  }
  if (options.limits.max_evaluations_limit < 1 ||
      options.limits.default_max_evaluations < 1) {
    return absl::InvalidArgumentError(
        "--max_evaluations_limit and --default_max_evaluations must be >= 1");
  }
  if (!(options.limits.default_max_seconds > 0) ||
      !(options.limits.max_seconds_limit > 0)) {
    return absl::InvalidArgumentError(
        "--default_max_seconds and --max_seconds_limit must be > 0");
  }
  if (options.max_concurrent_streams < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max_concurrent_streams must be >= 1, got ",
                     options.max_concurrent_streams));
  }
  if (options.max_concurrent_evaluations < 0 ||
      options.store_max_problems < 0 || options.store_max_age_days < 0 ||
      options.store_call_timeout_ms < 100) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max_concurrent_evaluations, --store_max_problems and "
        "--store_max_age_days must be >= 0 and --store_call_timeout_ms >= "
        "100, got ",
        options.max_concurrent_evaluations, ", ", options.store_max_problems,
        ", ", options.store_max_age_days, ", ", options.store_call_timeout_ms));
  }
  if (options.max_request_bytes < 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max_request_bytes must be >= 1024, got ",
                     options.max_request_bytes));
  }
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      MakeServerCredentials(options.tls);
  if (!credentials.ok()) return credentials.status();
  std::unique_ptr<TokenAuthenticator> authenticator;
  if (!options.auth_token_file.empty()) {
    absl::StatusOr<std::unique_ptr<TokenAuthenticator>> loaded =
        TokenAuthenticator::FromFile(options.auth_token_file);
    if (!loaded.ok()) return loaded.status();
    authenticator = *std::move(loaded);
  }
  if (!options.searcher_factory) {
    options.searcher_factory = [](absl::string_view method) {
      return policy::CreateSearcher(method);
    };
  }
  std::unique_ptr<PlannerServer> server(new PlannerServer(std::move(options)));
  const ServerOptions& opts = server->options_;

  server->metrics_ = std::make_unique<ServerMetrics>(
      opts.max_concurrent_searches, policy::SearchMethods());

  std::shared_ptr<EliteStore> store;
  if (opts.store_path.empty()) {
    LOG(INFO) << "no --store: warm starts are off";
  } else {
    if (StorePathHasPassword(opts.store_path)) {
      LOG(WARNING) << "--store holds a password, which every local user can "
                      "read in ps and /proc: leave it out of the URL and set "
                      "PGPASSWORD or PGPASSFILE (libpq reads them)";
    }
    EliteStore::Options store_options;
    store_options.path = opts.store_path;
    store_options.top_k = opts.elite_size;
    store_options.max_problems = opts.store_max_problems;
    store_options.max_age_days = opts.store_max_age_days;
    store_options.call_timeout_ms = opts.store_call_timeout_ms;
    absl::StatusOr<std::unique_ptr<EliteStore>> opened =
        EliteStore::Open(store_options);
    if (opened.ok()) {
      store = *std::move(opened);
      LOG(INFO) << "elite store " << RedactStorePath(opts.store_path)
                << " open (schema " << EliteStore::kSchemaVersion << ")";
    } else {
      LOG(WARNING) << "elite store " << RedactStorePath(opts.store_path)
                   << " cannot be used; warm starts are off, serving goes on: "
                   << opened.status();
    }
  }
  server->profiles_ = std::make_unique<CalibrationProfileStore>(store);
  server->history_ = std::make_unique<WarmStartPersistence>(std::move(store),
                                                            *server->metrics_);

  if (opts.eval_threads > 0) {
    server->eval_pool_ = std::make_unique<policy::EvalPool>(opts.eval_threads);
  }
  ServerMetrics* metrics = server->metrics_.get();
  server->scheduler_ = std::make_unique<SearchScheduler>(
      opts.max_concurrent_searches, opts.max_queued_searches,
      [metrics](int running, int queued) {
        metrics->active_searches().Set(running);
        metrics->queued_searches().Set(queued);
      });

  ServiceDeps deps;
  deps.metrics = server->metrics_.get();
  deps.scheduler = server->scheduler_.get();
  deps.history = server->history_.get();
  deps.registry = &server->registry_;
  deps.searcher_factory = opts.searcher_factory;
  deps.eval_pool = server->eval_pool_.get();
  deps.limits = opts.limits;
  deps.limits.user_profiles = server->profiles_.get();
  deps.elite_size = opts.elite_size;
  deps.max_concurrent_evaluations = opts.max_concurrent_evaluations;
  server->authenticator_ = std::move(authenticator);
  server->peer_limiter_ =
      std::make_unique<PeerLimiter>(opts.max_searches_per_peer);
  AccessControl access;
  access.authenticator = server->authenticator_.get();
  access.peer_limiter = server->peer_limiter_.get();
  server->service_ = std::make_unique<PlannerService>(std::move(deps), access,
                                                      server->profiles_.get());

  CHECK(HealthProtoFile() != nullptr);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(opts.grpc_address, *credentials,
                           &server->grpc_port_);
  builder.SetMaxReceiveMessageSize(opts.max_request_bytes);
  // gRPC 1.51 checks the receive limit against the compressed size and then
  // inflates without a bound (a 254 KiB gzip request can become 256 MiB).
  // Requests are a few KiB, so compression buys nothing: accept identity only.
  // A compressed request is refused (UNIMPLEMENTED, "Compression algorithm
  // ... is disabled") from its headers, before its message is read.
  builder.SetCompressionAlgorithmSupportStatus(GRPC_COMPRESS_DEFLATE, false);
  builder.SetCompressionAlgorithmSupportStatus(GRPC_COMPRESS_GZIP, false);
  // Bounds the streams one HTTP/2 connection may have open (HTTP/2 rapid
  // reset: a client opening and resetting streams faster than calls end).
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                             opts.max_concurrent_streams);
  {
    std::vector<
        std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
        interceptors;
    interceptors.push_back(MakePeerCountingInterceptorFactory(
        server->peer_limiter_.get(),
        absl::StrCat("/", kServiceName, "/PlanSharding")));
    builder.experimental().SetInterceptorCreators(std::move(interceptors));
  }
  builder.RegisterService(server->service_.get());
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->grpc_port_ == 0) {
    server->server_.reset();
    server->scheduler_->Shutdown();
    return absl::UnavailableError(
        absl::StrCat("cannot listen for gRPC on ", opts.grpc_address,
                     " (address in use or not local?); see --grpc_address"));
  }

  if (!opts.metrics_address.empty()) {
    // prometheus-cpp (civetweb) reports bind failures by throwing; our code
    // never throws.
    try {
      server->exposer_ =
          std::make_unique<prometheus::Exposer>(opts.metrics_address);
      server->exposer_->RegisterCollectable(server->metrics_->registry());
      const std::vector<int> ports = server->exposer_->GetListeningPorts();
      server->metrics_port_ = ports.empty() ? 0 : ports.front();
    } catch (const std::exception& e) {
      server->exposer_.reset();
      server->Shutdown();
      return absl::UnavailableError(
          absl::StrCat("cannot serve /metrics on ", opts.metrics_address, ": ",
                       e.what(), "; see --metrics_address"));
    }
  }

  grpc::HealthCheckServiceInterface* health =
      server->server_->GetHealthCheckService();
  if (health != nullptr) {
    health->SetServingStatus(true);
    health->SetServingStatus(kServiceName, true);
  }
  LOG(INFO) << "shardplan-server serving gRPC on port " << server->grpc_port_
            << " (address " << opts.grpc_address << "), /metrics on port "
            << server->metrics_port_ << ", " << opts.max_concurrent_searches
            << " search slots, queue " << opts.max_queued_searches
            << ", eval threads " << opts.eval_threads << ", "
            << (opts.tls.cert.empty()        ? "plaintext"
                : opts.tls.client_ca.empty() ? "TLS"
                                             : "mutual TLS")
            << ", bearer tokens "
            << (server->authenticator_ != nullptr
                    ? absl::StrCat(server->authenticator_->size(), " loaded")
                    : std::string("off"));
  return server;
}

absl::Status PlannerServer::WriteReadyFile(const std::string& path) const {
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "{\"grpc_port\":" << grpc_port_
        << ",\"metrics_port\":" << metrics_port_ << ",\"pid\":" << getpid()
        << "}\n";
    out.flush();
    if (!out)
      return absl::UnavailableError(
          absl::StrCat("cannot write ready file ", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return absl::UnavailableError(
        absl::StrCat("cannot rename ready file to ", path));
  }
  return absl::OkStatus();
}

void PlannerServer::Shutdown() {
  absl::MutexLock lock(&shutdown_mu_);
  if (shut_down_) return;
  shut_down_ = true;
  const absl::Time start = absl::Now();
  if (server_ != nullptr) {
    grpc::HealthCheckServiceInterface* health =
        server_->GetHealthCheckService();
    if (health != nullptr) {
      health->SetServingStatus(false);
      health->SetServingStatus(kServiceName, false);
    }
  }
  // Running searches stop within one iteration; their streams get a final
  // update.
  registry_.Drain();
  // Waiting searches never start; their streams get a final update with the
  // baseline.
  if (scheduler_ != nullptr) scheduler_->Drain();
  VLOG(1) << "shutdown: searches drained after "
          << absl::ToInt64Milliseconds(absl::Now() - start) << " ms";
  if (server_ != nullptr) {
    // gRPC's Shutdown waits for every client connection to close after its
    // GOAWAY until the deadline (5 s with an idle client attached), so a plain
    // Shutdown(now + grace) made even an idle server slow to stop. Instead:
    // wait (within the grace) for the open streams, which end within one
    // search iteration; then give in-flight unary calls, which answer at
    // once, a short deadline after which gRPC cuts the connections.
    const absl::Time grace_end = start + options_.shutdown_grace;
    if (!registry_.AwaitEmpty(grace_end)) {
      LOG(WARNING) << "open streams did not end within --shutdown_grace_seconds"
                      "; cutting them";
    }
    // Calibrate calls are answered before gRPC stops: queued ones at once,
    // the running one with what was stored (within the grace).
    if (profiles_ != nullptr) profiles_->Drain(grace_end);
    server_->Shutdown(
        absl::ToChronoTime(std::min(grace_end, absl::Now() + kUnaryCallGrace)));
  }
  VLOG(1) << "shutdown: gRPC stopped after "
          << absl::ToInt64Milliseconds(absl::Now() - start) << " ms";
  if (scheduler_ != nullptr) scheduler_->Shutdown();
  if (history_ != nullptr) history_->Flush();
  VLOG(1) << "shutdown: workers joined, store flushed after "
          << absl::ToInt64Milliseconds(absl::Now() - start) << " ms";
  if (exposer_ != nullptr) {
    // civetweb's listener thread checks for stop only between polls of its
    // sockets, which time out after 2 s: stopping took up to 2 s on an idle
    // server. A connection ends the poll at once, so keep knocking until the
    // exposer is gone.
    std::atomic<bool> stopped{false};
    std::thread knocker([this, &stopped] {
      while (!stopped.load()) {
        ConnectOnce(options_.metrics_address, metrics_port_);
        absl::SleepFor(absl::Milliseconds(20));
      }
    });
    exposer_.reset();
    stopped.store(true);
    knocker.join();
  }
  LOG(INFO) << "shardplan-server stopped in "
            << absl::ToInt64Milliseconds(absl::Now() - start) << " ms";
}

}  // namespace shardplan::server
