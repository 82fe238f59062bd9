#include "server/service.h"

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "glog/logging.h"
#include "policy/searcher.h"
#include "server/request_decoding.h"
#include "server/search_scheduler.h"
#include "server/status_util.h"
#include "server/validation.h"
#include "simulator/engine_capability.h"
#include "simulator/spec.h"
#include "simulator/traffic_spec.h"
#include "simulator/types.h"
#include "simulator/user_text.h"

namespace shardplan::server {

namespace {

// A PlanSharding call refused before validation (authentication, per-peer
// cap): finished at once with `status`, deleted when gRPC is done with it.
class RefusedPlanStream final
    : public grpc::ServerWriteReactor<shardplan::v1::PlanUpdate> {
 public:
  explicit RefusedPlanStream(const absl::Status& status) {
    Finish(ToGrpcStatus(status));
  }
  void OnDone() override { delete this; }
};

absl::Status CheckToken(const AccessControl& access,
                        const grpc::CallbackServerContext& context) {
  if (access.authenticator == nullptr) return absl::OkStatus();
  return access.authenticator->Check(context);
}

// One log line per refused call; never the token, never the metadata.
void LogRefused(absl::string_view method, const absl::Status& status,
                const grpc::CallbackServerContext& context) {
  LOG(INFO) << "method=" << method << " outcome=" << CodeName(status.code())
            << " peer=" << simulator::EscapeForLog(context.peer())
            << " error=\"" << simulator::EscapeForLog(status.message()) << "\"";
}

// Answers a call whose request could not be decoded: the access checks still
// come first, so that an unauthenticated caller learns nothing more.
absl::Status RefuseUndecodable(const AccessControl& access,
                               const grpc::CallbackServerContext& context,
                               const absl::Status& decoded) {
  absl::Status allowed = CheckToken(access, context);
  return allowed.ok() ? decoded : allowed;
}

// Logs a refused unary call and answers it with `status`.
grpc::ServerUnaryReactor* FinishRefused(grpc::CallbackServerContext* context,
                                        absl::string_view method,
                                        const absl::Status& status) {
  LogRefused(method, status, *context);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

// The log line of a finished EvaluatePlan call. Model names and messages
// come from the request: escaped, so that a newline in them cannot forge a
// log line.
void LogEvaluated(absl::string_view model, int gpus, const absl::Status& status,
                  absl::Time start) {
  LOG(INFO) << "method=EvaluatePlan model=" << simulator::EscapeForLog(model)
            << " gpus=" << gpus << " outcome=" << CodeName(status.code())
            << " duration_ms="
            << absl::ToDoubleMilliseconds(absl::Now() - start)
            << (status.ok()
                    ? ""
                    : " error=\"" + simulator::EscapeForLog(status.message()) +
                          "\"");
}

// An EvaluatePlan call at a request rate: the traffic pricing (the prompt
// queues' chains and the bisection of max_request_rate, tens of ms to about
// a second of CPU) runs as a job on the SearchScheduler's worker slots, the
// one owner of search CPU, never on the gRPC thread. The job is admitted
// under the scheduler's cap (RESOURCE_EXHAUSTED at once when it is full),
// waits ahead of queued searches, and ends with CANCELLED / DEADLINE_EXCEEDED
// when the client goes away first (taken out of the queue, or stopped
// between two chains), UNAVAILABLE when the server drains. Deleted in OnDone.
class PricedEvaluation final : public grpc::ServerUnaryReactor {
 public:
  PricedEvaluation(const ServiceDeps& deps,
                   grpc::CallbackServerContext* context,
                   ValidatedEvaluateRequest validated,
                   double price_per_gpu_hour,
                   shardplan::v1::EvaluateResponse* response, absl::Time start,
                   int gpus)
      : deps_(deps),
        deadline_(context->deadline()),
        validated_(std::move(validated)),
        price_per_gpu_hour_(price_per_gpu_hour),
        response_(response),
        start_(start),
        gpus_(gpus) {}

  // Submits the job; called by the handler before it returns this reactor.
  void Begin() {
    absl::Status admitted = absl::OkStatus();
    {
      // Held across Submit so that the job (which takes mu_ first) cannot
      // finish, and OnDone delete this, before job_id_ is set.
      absl::MutexLock lock(&mu_);
      absl::StatusOr<uint64_t> job =
          deps_.scheduler->Submit(SearchScheduler::Job{
              [this](int /*slot*/) { Run(); },
              [this] {
                {
                  absl::MutexLock lock(&mu_);  // Begin has set job_id_
                }
                FinishOnce(absl::UnavailableError(
                    "the server is shutting down; retry on another instance"));
              },
              /*short_job=*/true});
      if (job.ok()) {
        job_id_ = *job;
      } else {
        admitted = job.status();
      }
    }
    if (!admitted.ok()) FinishOnce(admitted);
  }

  void OnCancel() override {
    uint64_t job_id = 0;
    {
      absl::MutexLock lock(&mu_);
      cancelled_ = true;
      job_id = job_id_;
    }
    // Still waiting: it never runs; answer now. Running: it stops at its
    // next chain.
    if (job_id != 0 && deps_.scheduler->Remove(job_id)) {
      FinishOnce(CancelStatus());
    }
  }

  void OnDone() override { delete this; }

 private:
  void Run() {
    {
      absl::MutexLock lock(&mu_);  // Begin has set job_id_
    }
    if (Stop()) {
      FinishOnce(CancelStatus());
      return;
    }
    const absl::Time begin = absl::Now();
    const bool complete = simulator::AddTrafficPrediction(
        *validated_.cost_model, validated_.plan, price_per_gpu_hour_,
        response_->mutable_prediction(), [this] { return Stop(); });
    deps_.metrics->ObserveTrafficPricing(absl::Now() - begin);
    FinishOnce(complete ? absl::OkStatus() : CancelStatus());
  }

  // The client went away, its deadline passed, or the server drains.
  bool Stop() const {
    {
      absl::MutexLock lock(&mu_);
      if (cancelled_) return true;
    }
    return DeadlinePassed() ||
           (deps_.registry != nullptr && deps_.registry->draining());
  }

  bool DeadlinePassed() const {
    return std::chrono::system_clock::now() >= deadline_;
  }

  absl::Status CancelStatus() const {
    if (DeadlinePassed()) {
      return absl::DeadlineExceededError(
          "the client's deadline expired before the plan was priced at the "
          "request rate");
    }
    if (deps_.registry != nullptr && deps_.registry->draining()) {
      return absl::UnavailableError(
          "the server is shutting down; retry on another instance");
    }
    return absl::CancelledError("the client cancelled the call");
  }

  // Counts, logs and finishes the call. Called once: by the job, by its drop,
  // by OnCancel when it took the job back, or by Begin when refused.
  void FinishOnce(const absl::Status& status) {
    deps_.metrics->CountEvaluateRequest(status.code());
    LogEvaluated(validated_.model_name, gpus_, status, start_);
    if (!status.ok()) response_->Clear();
    Finish(ToGrpcStatus(status));
  }

  const ServiceDeps& deps_;
  const std::chrono::system_clock::time_point deadline_;
  const ValidatedEvaluateRequest validated_;
  const double price_per_gpu_hour_;
  shardplan::v1::EvaluateResponse* const response_;
  const absl::Time start_;
  const int gpus_;
  mutable absl::Mutex mu_;
  uint64_t job_id_ ABSL_GUARDED_BY(mu_) = 0;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

absl::Status DecodeRequest(const grpc::ByteBuffer& bytes,
                           google::protobuf::Message* message) {
  std::vector<grpc::Slice> slices;
  if (!bytes.Valid() || !bytes.Dump(&slices).ok()) {
    message->Clear();
    return absl::InvalidArgumentError(absl::StrCat(
        "request: no ", message->GetDescriptor()->full_name(), " received"));
  }
  std::string flat;
  flat.reserve(bytes.Length());
  for (const grpc::Slice& slice : slices) {
    flat.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return DecodeRequest(flat, message);
}

PlannerService::PlannerService(ServiceDeps deps) : deps_(std::move(deps)) {
  RegisterRawRequestHandlers();
}

PlannerService::PlannerService(ServiceDeps deps, AccessControl access)
    : deps_(std::move(deps)), access_(access) {
  RegisterRawRequestHandlers();
}

PlannerService::PlannerService(ServiceDeps deps, AccessControl access,
                               CalibrationProfileStore* calibration)
    : deps_(std::move(deps)), access_(access), calibration_(calibration) {
  RegisterRawRequestHandlers();
}

void PlannerService::RegisterRawRequestHandlers() {
  // Indices are the methods' order in shardplan.proto, as in the generated
  // CallbackService constructors whose handlers these replace.
  MarkMethodCallback(0, new grpc::internal::CallbackServerStreamingHandler<
                            grpc::ByteBuffer, shardplan::v1::PlanUpdate>(
                            [this](grpc::CallbackServerContext* context,
                                   const grpc::ByteBuffer* request) {
                              return PlanShardingBytes(context, request);
                            }));
  MarkMethodCallback(
      1,
      new grpc::internal::CallbackUnaryHandler<grpc::ByteBuffer,
                                               shardplan::v1::EvaluateResponse>(
          [this](grpc::CallbackServerContext* context,
                 const grpc::ByteBuffer* request,
                 shardplan::v1::EvaluateResponse* response) {
            return EvaluatePlanBytes(context, request, response);
          }));
  MarkMethodCallback(
      2, RawUnaryHandler(&PlannerService::ListCatalog, "ListCatalog"));
  MarkMethodCallback(3,
                     RawUnaryHandler(&PlannerService::Calibrate, "Calibrate"));
}

template <typename Request, typename Response>
grpc::internal::MethodHandler* PlannerService::RawUnaryHandler(
    UnaryMethod<Request, Response> typed, const char* method) {
  return new grpc::internal::CallbackUnaryHandler<grpc::ByteBuffer, Response>(
      [this, typed, method](grpc::CallbackServerContext* context,
                            const grpc::ByteBuffer* request,
                            Response* response) {
        Request decoded;
        const absl::Status status = DecodeRequest(*request, &decoded);
        if (status.ok()) return (this->*typed)(context, &decoded, response);
        return FinishRefused(context, method,
                             RefuseUndecodable(access_, *context, status));
      });
}

grpc::ServerWriteReactor<shardplan::v1::PlanUpdate>*
PlannerService::PlanShardingBytes(grpc::CallbackServerContext* context,
                                  const grpc::ByteBuffer* request) {
  // Validation keeps copies of what it needs, so the request can be a local.
  shardplan::v1::PlanRequest decoded;
  absl::Status status = DecodeRequest(*request, &decoded);
  if (status.ok()) return PlanSharding(context, &decoded);
  status = RefuseUndecodable(access_, *context, status);
  deps_.metrics->CountPlanRequest("unknown", status.code());
  LogRefused("PlanSharding", status, *context);
  return new RefusedPlanStream(status);
}

absl::Status PlannerService::BeginEvaluation() {
  const int cap = deps_.max_concurrent_evaluations;
  if (evaluations_in_flight_.fetch_add(1) >= cap && cap > 0) {
    evaluations_in_flight_.fetch_sub(1);
    return absl::ResourceExhaustedError(
        absl::StrCat(cap,
                     " EvaluatePlan calls are already being evaluated "
                     "(--max_concurrent_evaluations); retry later"));
  }
  return absl::OkStatus();
}

void PlannerService::EndEvaluation() { evaluations_in_flight_.fetch_sub(1); }

grpc::ServerUnaryReactor* PlannerService::EvaluatePlanBytes(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    shardplan::v1::EvaluateResponse* response) {
  // Decoding, validation and the evaluation run on this gRPC thread: the cap
  // covers all three (a 16k-node request spends most of its time decoding and
  // validating).
  absl::Status status = BeginEvaluation();
  if (status.ok()) {
    shardplan::v1::EvaluateRequest decoded;
    status = DecodeRequest(*request, &decoded);
    if (status.ok()) {
      grpc::ServerUnaryReactor* reactor =
          EvaluatePlan(context, &decoded, response);
      EndEvaluation();
      return reactor;
    }
    EndEvaluation();
  }
  status = RefuseUndecodable(access_, *context, status);
  deps_.metrics->CountEvaluateRequest(status.code());
  return FinishRefused(context, "EvaluatePlan", status);
}

grpc::ServerUnaryReactor* PlannerService::Calibrate(
    grpc::CallbackServerContext* context,
    const shardplan::v1::CalibrateRequest* request,
    shardplan::v1::CalibrateResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::Status status = CheckToken(access_, *context);
  if (status.ok() && calibration_ == nullptr) {
    status = absl::FailedPreconditionError(
        "this server does not keep calibration profiles");
  }
  if (status.ok()) {
    const absl::Time start = absl::Now();
    const std::string name = simulator::EscapeForLog(request->name());
    const int runs = request->runs_size();
    status = calibration_->Submit(
        *request, [reactor, response, start, name, runs](
                      absl::StatusOr<shardplan::v1::CalibrateResponse> result) {
          if (result.ok()) *response = *std::move(result);
          LOG(INFO) << "method=Calibrate name=" << name << " runs=" << runs
                    << " outcome=" << CodeName(result.status().code())
                    << " duration_ms="
                    << absl::ToDoubleMilliseconds(absl::Now() - start);
          reactor->Finish(ToGrpcStatus(result.status()));
        });
    if (status.ok()) return reactor;
  }
  LogRefused("Calibrate", status, *context);
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

grpc::ServerWriteReactor<shardplan::v1::PlanUpdate>*
PlannerService::PlanSharding(grpc::CallbackServerContext* context,
                             const shardplan::v1::PlanRequest* request) {
  absl::Status allowed = CheckToken(access_, *context);
  if (allowed.ok() && access_.peer_limiter != nullptr) {
    allowed = access_.peer_limiter->Check(PeerAddress(context->peer()));
  }
  if (!allowed.ok()) {
    deps_.metrics->CountPlanRequest(MethodLabel(*request), allowed.code());
    LogRefused("PlanSharding", allowed, *context);
    return new RefusedPlanStream(allowed);
  }
  return StartPlanStream(deps_, context, *request);
}

grpc::ServerUnaryReactor* PlannerService::EvaluatePlan(
    grpc::CallbackServerContext* context,
    const shardplan::v1::EvaluateRequest* request,
    shardplan::v1::EvaluateResponse* response) {
  const absl::Time start = absl::Now();
  absl::Status allowed = CheckToken(access_, *context);
  if (!allowed.ok()) {
    deps_.metrics->CountEvaluateRequest(allowed.code());
    LogRefused("EvaluatePlan", allowed, *context);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(ToGrpcStatus(allowed));
    return reactor;
  }
  absl::Status status = absl::OkStatus();
  std::string model = "custom";
  int gpus = request->cluster().num_gpus();
  absl::StatusOr<ValidatedEvaluateRequest> validated =
      ValidateEvaluateRequest(*request, deps_.limits);
  if (!validated.ok()) {
    status = validated.status();
    if (request->model().source_case() ==
        shardplan::v1::ModelSource::kCatalogName) {
      model = request->model().catalog_name();
    }
  } else {
    const simulator::Problem& problem = validated->cost_model->problem();
    model = validated->model_name;
    gpus = problem.cluster.num_gpus;
    const simulator::Evaluation evaluation =
        validated->cost_model->Evaluate(validated->plan);
    deps_.metrics->cost_model_evaluations().Increment();
    *response->mutable_plan() =
        simulator::PlanToProto(validated->plan, problem);
    *response->mutable_prediction() =
        simulator::PredictionToProto(evaluation, problem);
    // A plan the named engine cannot launch is infeasible, naming the rule.
    simulator::AnnotateEngineCapability(problem, validated->plan,
                                        response->mutable_prediction());
    *response->mutable_model() = simulator::ModelSpecFromDims(problem.model);
    const double price = PricePerGpuHour(request->cluster());
    if (problem.workload.traffic.request_rate > 0 &&
        response->prediction().feasible()) {
      // The queueing chains: on a worker slot (PricedEvaluation).
      auto* priced = new PricedEvaluation(deps_, context, *std::move(validated),
                                          price, response, start, gpus);
      priced->Begin();
      return priced;
    }
    // No rate, or an infeasible plan (priced without a chain): microseconds.
    simulator::AddTrafficPrediction(*validated->cost_model, validated->plan,
                                    price, response->mutable_prediction());
  }
  deps_.metrics->CountEvaluateRequest(status.code());
  LogEvaluated(model, gpus, status, start);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

grpc::ServerUnaryReactor* PlannerService::ListCatalog(
    grpc::CallbackServerContext* context,
    const shardplan::v1::ListCatalogRequest* /*request*/,
    shardplan::v1::ListCatalogResponse* response) {
  const absl::Time start = absl::Now();
  absl::Status allowed = CheckToken(access_, *context);
  if (!allowed.ok()) {
    LogRefused("ListCatalog", allowed, *context);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(ToGrpcStatus(allowed));
    return reactor;
  }
  for (const auto& model : simulator::CatalogModels()) {
    *response->add_models() = model;
    absl::StatusOr<shardplan::v1::CatalogModelInfo> info =
        simulator::CatalogModelInfoFromSpec(model);
    // Catalog entries are validated by the simulator tests; keep the
    // one-to-one order with `models` even if one ever is not.
    if (info.ok()) {
      *response->add_model_info() = *std::move(info);
    } else {
      response->add_model_info()->set_name(model.name());
    }
  }
  for (const auto& hardware : simulator::CatalogHardware())
    *response->add_hardware() = hardware;
  for (const std::string& method : policy::SearchMethods())
    response->add_methods(method);
  for (int d = 0; d < simulator::kNumDtypes; ++d) {
    response->add_dtypes(
        std::string(simulator::DtypeName(static_cast<simulator::Dtype>(d))));
  }
  for (int op = 0; op < simulator::kNumOpKinds; ++op) {
    response->add_operators(
        std::string(simulator::OpKindName(static_cast<simulator::OpKind>(op))));
  }
  for (int dim = 0; dim < simulator::kNumShardDims; ++dim) {
    response->add_dims(std::string(
        simulator::ShardDimName(static_cast<simulator::ShardDim>(dim))));
  }
  LOG(INFO) << "method=ListCatalog model=- gpus=0 outcome=OK duration_ms="
            << absl::ToDoubleMilliseconds(absl::Now() - start);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace shardplan::server
