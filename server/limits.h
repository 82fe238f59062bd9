// Per-peer admission (--max_searches_per_peer): how many PlanSharding calls
// one client address may have open at once. A server interceptor counts the
// open calls of each peer address (created when a call starts, destroyed when
// it ends, whatever the outcome); PlannerService::PlanSharding refuses a call
// that makes its peer's count exceed the cap with RESOURCE_EXHAUSTED.
#ifndef SHARDPLAN_SERVER_LIMITS_H_
#define SHARDPLAN_SERVER_LIMITS_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/support/server_interceptor.h"

namespace shardplan::server {

// The address part of a gRPC peer string: "ipv4:127.0.0.1:5432" ->
// "ipv4:127.0.0.1", "ipv6:[::1]:5432" -> "ipv6:[::1]", "unix:/x" -> "unix:/x".
std::string PeerAddress(absl::string_view peer);

class PeerLimiter {
 public:
  // max_per_peer <= 0: unlimited (counts are still kept).
  explicit PeerLimiter(int max_per_peer) : max_per_peer_(max_per_peer) {}

  void Add(const std::string& address);
  void Remove(const std::string& address);
  int Count(const std::string& address) const;
  // OK, or RESOURCE_EXHAUSTED naming the cap when `address` has more than
  // max_per_peer open calls (the caller's own call included).
  absl::Status Check(const std::string& address) const;
  int max_per_peer() const { return max_per_peer_; }

 private:
  const int max_per_peer_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, int> open_ ABSL_GUARDED_BY(mu_);
};

// Counts the open calls of `method` (full name "/pkg.Service/Method") per peer
// address in `limiter`, which must outlive the gRPC server.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
MakePeerCountingInterceptorFactory(PeerLimiter* limiter, std::string method);

}  // namespace shardplan::server

#endif  // SHARDPLAN_SERVER_LIMITS_H_
