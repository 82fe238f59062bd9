// The ShardingPlanner gRPC service (callback API): PlanSharding streams
// (server/plan_stream.h), EvaluatePlan and ListCatalog answered inline on the
// gRPC thread (one cost-model call, no blocking), so running searches never
// starve them, except EvaluatePlan at a request rate, whose queueing chains
// run on a search worker slot (a short job, ahead of queued searches);
// Calibrate answered from the profile store's thread
// (server/store/profile_store.h).
#ifndef SHARDPLAN_SERVER_SERVICE_H_
#define SHARDPLAN_SERVER_SERVICE_H_

#include <atomic>

#include "absl/status/status.h"
#include "google/protobuf/message.h"
#include "grpcpp/grpcpp.h"
#include "server/auth.h"
#include "server/limits.h"
#include "server/plan_stream.h"
#include "server/request_decoding.h"
#include "server/store/profile_store.h"
#include "shardplan/v1/shardplan.grpc.pb.h"

namespace shardplan::server {

// Access control of the ShardingPlanner methods (health and reflection are
// other services and stay open). Null members: the check is off.
struct AccessControl {
  const TokenAuthenticator* authenticator = nullptr;  // --auth_token_file
  const PeerLimiter* peer_limiter = nullptr;          // --max_searches_per_peer
};

// DecodeRequest (server/request_decoding.h) of the bytes gRPC received.
absl::Status DecodeRequest(const grpc::ByteBuffer& bytes,
                           google::protobuf::Message* message);

class PlannerService final
    : public shardplan::v1::ShardingPlanner::CallbackService {
 public:
  // `deps` (and everything it points to) outlives the service and every call.
  explicit PlannerService(ServiceDeps deps);
  // `access` (and what it points to) outlives the service and every call.
  PlannerService(ServiceDeps deps, AccessControl access);
  // `calibration` (may be null: Calibrate answers FAILED_PRECONDITION)
  // outlives the service and every call.
  PlannerService(ServiceDeps deps, AccessControl access,
                 CalibrationProfileStore* calibration);

  grpc::ServerWriteReactor<shardplan::v1::PlanUpdate>* PlanSharding(
      grpc::CallbackServerContext* context,
      const shardplan::v1::PlanRequest* request) override;
  grpc::ServerUnaryReactor* EvaluatePlan(
      grpc::CallbackServerContext* context,
      const shardplan::v1::EvaluateRequest* request,
      shardplan::v1::EvaluateResponse* response) override;
  grpc::ServerUnaryReactor* ListCatalog(
      grpc::CallbackServerContext* context,
      const shardplan::v1::ListCatalogRequest* request,
      shardplan::v1::ListCatalogResponse* response) override;
  // Queues the fit on the profile store's thread; the reply is sent from
  // there.
  grpc::ServerUnaryReactor* Calibrate(
      grpc::CallbackServerContext* context,
      const shardplan::v1::CalibrateRequest* request,
      shardplan::v1::CalibrateResponse* response) override;

  const ServiceDeps& deps() const { return deps_; }

 private:
  // gRPC 1.51 answers a request its protobuf traits cannot parse with
  // UNIMPLEMENTED and an empty message, before any of our code runs. The
  // constructors therefore register the four methods with handlers that take
  // the raw bytes; these parse them (DecodeRequest) and answer
  // INVALID_ARGUMENT with the reason, or call the typed methods above.
  void RegisterRawRequestHandlers();
  template <typename Request, typename Response>
  using UnaryMethod = grpc::ServerUnaryReactor* (
      PlannerService::*)(grpc::CallbackServerContext*, const Request*,
                         Response*);
  // The raw handler of a unary method with no admission control or metrics
  // of its own (ListCatalog, Calibrate): `typed` on the decoded request, or
  // the decoding error after the access checks.
  template <typename Request, typename Response>
  grpc::internal::MethodHandler* RawUnaryHandler(
      UnaryMethod<Request, Response> typed, const char* method);
  grpc::ServerWriteReactor<shardplan::v1::PlanUpdate>* PlanShardingBytes(
      grpc::CallbackServerContext* context, const grpc::ByteBuffer* request);
  grpc::ServerUnaryReactor* EvaluatePlanBytes(
      grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
      shardplan::v1::EvaluateResponse* response);

  // Admits one EvaluatePlan call under ServiceDeps::max_concurrent_evaluations
  // (RESOURCE_EXHAUSTED beyond it); the slot is freed by EndEvaluation.
  absl::Status BeginEvaluation();
  void EndEvaluation();

  const ServiceDeps deps_;
  const AccessControl access_;
  CalibrationProfileStore* const calibration_ = nullptr;
  std::atomic<int> evaluations_in_flight_{0};
};

}  // namespace shardplan::server

#endif  // SHARDPLAN_SERVER_SERVICE_H_
