#include "server/limits.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace shardplan::server {

std::string PeerAddress(absl::string_view peer) {
  if (!absl::StartsWith(peer, "ipv4:") && !absl::StartsWith(peer, "ipv6:")) {
    return std::string(peer);
  }
  const size_t colon = peer.rfind(':');
  const size_t bracket = peer.rfind(']');
  if (colon == absl::string_view::npos || colon < 5 ||
      (bracket != absl::string_view::npos && colon < bracket)) {
    return std::string(peer);
  }
  return std::string(peer.substr(0, colon));
}

void PeerLimiter::Add(const std::string& address) {
  absl::MutexLock lock(&mu_);
  ++open_[address];
}

void PeerLimiter::Remove(const std::string& address) {
  absl::MutexLock lock(&mu_);
  auto it = open_.find(address);
  if (it == open_.end()) return;
  if (--it->second <= 0) open_.erase(it);
}

int PeerLimiter::Count(const std::string& address) const {
  absl::MutexLock lock(&mu_);
  auto it = open_.find(address);
  return it == open_.end() ? 0 : it->second;
}

absl::Status PeerLimiter::Check(const std::string& address) const {
  if (max_per_peer_ <= 0) return absl::OkStatus();
  const int open = Count(address);
  if (open <= max_per_peer_) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "too many concurrent searches from ", address, ": ", open - 1,
      " already open, the server limit is ", max_per_peer_,
      " per client address (--max_searches_per_peer); wait for one to end"));
}

namespace {

class PeerCountingInterceptor : public grpc::experimental::Interceptor {
 public:
  PeerCountingInterceptor(PeerLimiter* limiter,
                          grpc::experimental::ServerRpcInfo* info)
      : limiter_(limiter), info_(info) {}
  ~PeerCountingInterceptor() override {
    if (counted_) limiter_->Remove(address_);
  }
  void Intercept(
      grpc::experimental::InterceptorBatchMethods* methods) override {
    // The peer is known once the call's initial metadata has arrived, before
    // the handler runs.
    if (!counted_ && !released_ &&
        methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::
                POST_RECV_INITIAL_METADATA)) {
      address_ = PeerAddress(info_->server_context()->peer());
      limiter_->Add(address_);
      counted_ = true;
    }
    // Released before the status leaves the server, so that a client that
    // starts its next call after seeing the status is never counted twice.
    if (counted_ &&
        methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS)) {
      limiter_->Remove(address_);
      counted_ = false;
      released_ = true;
    }
    methods->Proceed();
  }

 private:
  PeerLimiter* const limiter_;
  grpc::experimental::ServerRpcInfo* const info_;
  bool counted_ = false;   // added to the limiter, not yet removed
  bool released_ = false;  // the status was sent
  std::string address_;
};

class PeerCountingFactory
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  PeerCountingFactory(PeerLimiter* limiter, std::string method)
      : limiter_(limiter), method_(std::move(method)) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    if (info->method() == nullptr || method_ != info->method()) {
      return nullptr;  // not counted
    }
    return new PeerCountingInterceptor(limiter_, info);
  }

 private:
  PeerLimiter* const limiter_;
  const std::string method_;
};

}  // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
MakePeerCountingInterceptorFactory(PeerLimiter* limiter, std::string method) {
  return std::make_unique<PeerCountingFactory>(limiter, std::move(method));
}

}  // namespace shardplan::server
