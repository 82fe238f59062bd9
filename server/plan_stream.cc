#include "server/plan_stream.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "glog/logging.h"
#include "google/protobuf/util/message_differencer.h"
#include "server/capacity_search.h"
#include "server/replan.h"
#include "server/status_util.h"
#include "server/update_queue.h"
#include "simulator/cost_model.h"
#include "simulator/engine_capability.h"
#include "simulator/megatron.h"
#include "simulator/spec.h"
#include "simulator/traffic_spec.h"
#include "simulator/user_text.h"

namespace shardplan::server {
namespace {

using shardplan::v1::PlanRequest;
using shardplan::v1::PlanUpdate;

double Throughput(const simulator::Evaluation& evaluation) {
  return evaluation.feasible ? evaluation.output_tokens_per_s : 0.0;
}

int64_t ElapsedMs(absl::Time start) {
  return absl::ToInt64Milliseconds(absl::Now() - start);
}

// A call that ends before any search: validation error, queue full, draining.
class FailedPlanStream final : public grpc::ServerWriteReactor<PlanUpdate> {
 public:
  FailedPlanStream(ServerMetrics& metrics, absl::Status status,
                   std::string method, std::string model, int gpus,
                   absl::Time start)
      : metrics_(metrics),
        status_(std::move(status)),
        method_(std::move(method)),
        model_(std::move(model)),
        gpus_(gpus),
        start_(start) {
    Finish(ToGrpcStatus(status_));
  }
  void OnDone() override {
    metrics_.CountPlanRequest(method_, status_.code());
    // Model names and messages come from the request: escaped, so that a
    // newline in them cannot forge a log line.
    LOG(INFO) << "method=PlanSharding search=" << method_
              << " model=" << simulator::EscapeForLog(model_)
              << " gpus=" << gpus_ << " outcome=" << CodeName(status_.code())
              << " duration_ms=" << ElapsedMs(start_) << " error=\""
              << simulator::EscapeForLog(status_.message()) << "\"";
    delete this;
  }

 private:
  ServerMetrics& metrics_;
  const absl::Status status_;
  const std::string method_;
  const std::string model_;
  const int gpus_;
  const absl::Time start_;
};

}  // namespace

class PlanStream final : public grpc::ServerWriteReactor<PlanUpdate> {
 public:
  PlanStream(const ServiceDeps& deps, grpc::CallbackServerContext* context,
             ValidatedPlanRequest request, absl::Time start)
      : deps_(deps),
        context_(context),
        request_(std::move(request)),
        start_(start) {}

  // The rest of StartPlanStream, once constructed.
  void Begin() {
    if (request_.capacity == nullptr) BeginSearch();
    absl::Status admitted = absl::OkStatus();
    if (!deps_.registry->Add(this)) {
      admitted = absl::UnavailableError(
          "the server is shutting down; retry on another instance");
    } else {
      registered_ = true;
      absl::StatusOr<uint64_t> job = deps_.scheduler->Submit(
          SearchScheduler::Job{[this](int slot) {
                                 if (request_.capacity != nullptr) {
                                   RunCapacity(slot);
                                 } else {
                                   RunSearch(slot);
                                 }
                               },
                               [this] { Dropped(); }});
      if (job.ok()) {
        absl::MutexLock lock(&mu_);
        job_id_ = *job;
      } else {
        admitted = job.status();
      }
    }
    if (!admitted.ok()) {
      {
        absl::MutexLock lock(&mu_);
        queue_.PushAbort(admitted);
      }
      Pump();
      return;
    }
    // The reactor is not bound to the call until the handler returns, so `this`
    // cannot be deleted by OnDone before then; locals anyway.
    ServerMetrics* metrics = deps_.metrics;
    const absl::Time start = start_;
    // A deferred baseline is observed when the worker queues it.
    const bool deferred = deferred_;
    Pump();
    if (!deferred) {
      metrics->time_to_first_plan().Observe(
          absl::ToDoubleSeconds(absl::Now() - start));
    }
  }

  // The baseline update and the search job (not for capacity searches,
  // whose one update is their answer).
  void BeginSearch() {
    const simulator::CostModel& cost_model = *request_.cost_model;
    policy::ScoredPlan baseline;
    baseline.plan = simulator::MegatronPlan(cost_model);
    baseline.evaluation = cost_model.Evaluate(baseline.plan);
    // MegatronPlan prefers layouts the engine runs; when none is, the
    // baseline says so rather than being offered.
    if (baseline.evaluation.feasible &&
        !simulator::WorkloadEngineCanRun(cost_model.problem(), baseline.plan)) {
      baseline.evaluation.feasible = false;
      baseline.evaluation.reason =
          simulator::InfeasibleReason::kEngineCannotRun;
    }
    baseline_tps_ = Throughput(baseline.evaluation);
    deps_.metrics->cost_model_evaluations().Increment();
    // At a request rate every streamed plan is priced by the prompt queue's
    // chain (milliseconds to ~90 ms of CPU): that runs on the search's worker
    // slot, never on this gRPC thread, so the baseline then waits for the slot
    // like the search does. Without a rate the update costs microseconds and
    // is written at once, also while the search waits in the queue.
    deferred_ = cost_model.problem().workload.traffic.request_rate > 0;
    if (deferred_) {
      deferred_baseline_ = baseline;
    } else {
      PlanUpdate first = MakeUpdate(baseline, /*evaluations=*/1, "baseline");
      absl::MutexLock lock(&mu_);
      // Queued before the job exists so that it is written first whatever the
      // job does.
      queue_.PushBaseline(std::move(first));
    }
    // The job's search counts this evaluation as its first and does not
    // repeat it.
    job_ = std::make_unique<SearchJob>(
        SearchJobDeps{deps_.history, deps_.searcher_factory, deps_.eval_pool,
                      deps_.elite_size},
        request_, std::move(baseline));
  }

  // The deferred baseline update, on the thread that runs (or drops) the job,
  // before anything else of the job is queued. Skipped when nobody will read
  // it.
  void PushDeferredBaseline() {
    if (!deferred_ || ClientGone()) return;
    PlanUpdate first =
        MakeUpdate(deferred_baseline_, /*evaluations=*/1, "baseline");
    {
      absl::MutexLock lock(&mu_);
      queue_.PushBaseline(std::move(first));
    }
    Pump();
    deps_.metrics->time_to_first_plan().Observe(
        absl::ToDoubleSeconds(absl::Now() - start_));
  }

  void OnWriteDone(bool ok) override {
    {
      absl::MutexLock lock(&mu_);
      queue_.WriteDone(ok);
      if (!ok) token_.Cancel();  // nobody reads the stream any more
    }
    Pump();
  }

  void OnCancel() override {
    uint64_t job_id = 0;
    {
      absl::MutexLock lock(&mu_);
      client_cancelled_ = true;
      deadline_exceeded_ =
          context_->deadline() <= std::chrono::system_clock::now();
      job_id = job_id_;
    }
    token_.Cancel();
    // A search still waiting never starts: end the call now.
    if (job_id != 0 && deps_.scheduler->Remove(job_id)) {
      summary_.set_stop_reason(
          std::string(policy::StopReasonName(policy::StopReason::kCancelled)));
      {
        absl::MutexLock lock(&mu_);
        queue_.PushFinal(PlanUpdate(), CancelStatusLocked());
      }
      Pump();
    }
  }

  void OnDone() override {
    if (registered_) deps_.registry->Remove(this);
    absl::StatusCode code;
    {
      absl::MutexLock lock(&mu_);
      code = final_code_;
    }
    deps_.metrics->CountPlanRequest(policy::SearchMethodName(request_.method),
                                    code);
    const simulator::Problem& problem = request_.cost_model->problem();
    LOG(INFO) << "method=PlanSharding search="
              << policy::SearchMethodName(request_.method)
              << " model=" << simulator::EscapeForLog(request_.model_name)
              << " gpus=" << problem.cluster.num_gpus
              << " outcome=" << CodeName(code)
              << " duration_ms=" << ElapsedMs(start_)
              << " evaluations=" << summary_.evaluations()
              << " best_speedup=" << summary_.best_speedup() << " warm_start="
              << (summary_.warm_start_source().empty()
                      ? "none"
                      : summary_.warm_start_source())
              << " stop_reason=" << summary_.stop_reason();
    delete this;
  }

  // Called by StreamRegistry::Drain with the registry's lock held: only flags,
  // no Finish.
  void CancelForShutdown() {
    {
      absl::MutexLock lock(&mu_);
      shutdown_ = true;
    }
    token_.Cancel();
  }

 private:
  // The job's reports, on the worker thread: improvements become stream
  // updates, progress feeds the metrics.
  class Listener final : public SearchJob::Listener {
   public:
    Listener(PlanStream& stream, int slot) : stream_(stream), slot_(slot) {}
    void OnImprovement(const policy::ScoredPlan& best,
                       int evaluations) override {
      stream_.deps_.metrics->slot_best_speedup(slot_).Set(
          stream_.Speedup(Throughput(best.evaluation)));
      // Nothing more is written to a client that cancelled or stopped reading:
      // no pricing for it (the search stops at its next token check).
      if (stream_.ClientGone()) return;
      PlanUpdate update = stream_.MakeUpdate(best, evaluations, "improvement");
      {
        absl::MutexLock lock(&stream_.mu_);
        stream_.queue_.PushImprovement(std::move(update));
      }
      stream_.Pump();
    }
    void OnProgress(const policy::SearchProgress& progress) override {
      ServerMetrics& metrics = *stream_.deps_.metrics;
      if (progress.evaluations_delta > 0) {
        metrics.cost_model_evaluations().Increment(progress.evaluations_delta);
      }
      if (progress.iterations_delta > 0) {
        metrics.rl_iterations().Increment(progress.iterations_delta);
      }
      metrics.slot_evaluations(slot_).Set(progress.evaluations);
    }

   private:
    PlanStream& stream_;
    const int slot_;
  };

  double Speedup(double tps) const {
    return baseline_tps_ > 0 ? tps / baseline_tps_ : 0.0;
  }

  PlanUpdate MakeUpdate(const policy::ScoredPlan& scored, int evaluations,
                        absl::string_view kind) const {
    const simulator::Problem& problem = request_.cost_model->problem();
    PlanUpdate update;
    *update.mutable_plan() = simulator::PlanToProto(scored.plan, problem);
    *update.mutable_prediction() =
        simulator::PredictionToProto(scored.evaluation, problem);
    simulator::AnnotateEngineCapability(problem, scored.plan,
                                        update.mutable_prediction());
    AddTrafficPredictionOnce(scored.plan, update.mutable_prediction());
    update.set_evaluations(evaluations);
    update.set_elapsed_seconds(absl::ToDoubleSeconds(absl::Now() - start_));
    update.set_speedup_vs_baseline(Speedup(Throughput(scored.evaluation)));
    const double grid_tps = job_ != nullptr ? job_->grid_tokens_per_s() : 0;
    if (grid_tps > 0) {
      update.set_speedup_vs_grid(Throughput(scored.evaluation) / grid_tps);
    }
    update.set_kind(std::string(kind));
    if (request_.transition != nullptr) {
      *update.mutable_transition() =
          TransitionToProto(*request_.transition, scored.plan);
    }
    LimitSize(&update);
    return update;
  }

  // AddTrafficPrediction, except that a plan priced just before with the same
  // prediction (the final update's best is the last streamed improvement, or
  // the baseline) reuses that answer: each streamed plan's chain runs once.
  void AddTrafficPredictionOnce(const simulator::PlanDims& plan,
                                shardplan::v1::Prediction* prediction) const {
    absl::MutexLock lock(&price_mu_);
    if (last_priced_.has_value() && last_priced_->plan == plan &&
        google::protobuf::util::MessageDifferencer::Equals(last_priced_->before,
                                                           *prediction)) {
      *prediction = last_priced_->after;
      return;
    }
    Priced priced{plan, *prediction, {}};
    const absl::Time begin = absl::Now();
    // Stops between chains once nobody will read the update.
    const bool complete = simulator::AddTrafficPrediction(
        *request_.cost_model, plan, 0, prediction,
        [this] { return ClientGone(); });
    if (request_.cost_model->problem().workload.traffic.request_rate > 0) {
      deps_.metrics->ObserveTrafficPricing(absl::Now() - begin);
    }
    if (!complete) return;
    priced.after = *prediction;
    last_priced_ = std::move(priced);
  }

  // The client cancelled (or its deadline passed) or a write failed: nothing
  // more will be written.
  bool ClientGone() const {
    absl::MutexLock lock(&mu_);
    return client_cancelled_ || queue_.broken();
  }

  // Every update stays under kMaxUpdateBytes (a 16k-GPU plan's placement and
  // node loads alone can pass gRPC's default 4 MiB receive limit).
  static void LimitSize(PlanUpdate* update) {
    const std::string dropped = FitUpdate(kMaxUpdateBytes, update);
    if (!dropped.empty()) {
      VLOG(1) << "update over " << kMaxUpdateBytes
              << " bytes; left out: " << dropped;
    }
  }

  absl::Status CancelStatusLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (deadline_exceeded_) {
      return absl::DeadlineExceededError(
          "the client's deadline expired; search stopped");
    }
    return absl::CancelledError(
        "the client cancelled the call; search stopped");
  }

  // Starts whatever the queue says is next. Called without mu_ held; may
  // Finish, after which `this` can be deleted at any time (callers return right
  // after).
  void Pump() {
    UpdateQueue::Action action;
    {
      absl::MutexLock lock(&mu_);
      action = queue_.Next();
      if (action.kind == UpdateQueue::ActionKind::kWriteAndFinish ||
          action.kind == UpdateQueue::ActionKind::kFinish) {
        final_code_ = action.status.code();
      }
    }
    switch (action.kind) {
      case UpdateQueue::ActionKind::kNone:
        return;
      case UpdateQueue::ActionKind::kWrite:
        StartWrite(action.update);
        return;
      case UpdateQueue::ActionKind::kWriteAndFinish:
        StartWriteAndFinish(action.update, grpc::WriteOptions(),
                            ToGrpcStatus(action.status));
        return;
      case UpdateQueue::ActionKind::kFinish:
        Finish(ToGrpcStatus(action.status));
        return;
    }
  }

  // The scheduler dropped the waiting job (server drain): end with the baseline
  // as best. Runs on the thread that drains the server, not on a gRPC thread.
  void Dropped() {
    if (request_.capacity != nullptr) {
      summary_.set_stop_reason("shutdown");
      PlanUpdate final_update;
      final_update.set_final(true);
      final_update.set_kind("final");
      *final_update.mutable_summary() = summary_;
      {
        absl::MutexLock lock(&mu_);
        queue_.PushFinal(std::move(final_update), absl::OkStatus());
      }
      Pump();
      return;
    }
    PushDeferredBaseline();
    // The final update promises that the store holds what the client saw (the
    // baseline): the job stores it first.
    const SearchJob::Outcome outcome = job_->Abandon();
    PlanUpdate final_update = MakeFinal(outcome, "shutdown");
    {
      absl::MutexLock lock(&mu_);
      queue_.PushFinal(std::move(final_update), absl::OkStatus());
    }
    Pump();
  }

  // The final update: the outcome's best plan, the summary, the frontier and
  // the top plans.
  PlanUpdate MakeFinal(const SearchJob::Outcome& outcome,
                       absl::string_view stop_reason) {
    PlanUpdate update = MakeUpdate(outcome.best, outcome.evaluations, "final");
    FillFinal(outcome, stop_reason, &update);
    return update;
  }

  // The final update of a call that ends with an error status: never written,
  // only its summary is kept (OnDone logs it).
  PlanUpdate MakeSummaryOnly(const SearchJob::Outcome& outcome,
                             absl::string_view stop_reason) {
    PlanUpdate update;
    update.set_kind("final");
    FillFinal(outcome, stop_reason, &update);
    return update;
  }

  void FillFinal(const SearchJob::Outcome& outcome,
                 absl::string_view stop_reason, PlanUpdate* out) {
    PlanUpdate& update = *out;
    const simulator::Problem& problem = request_.cost_model->problem();
    update.set_final(true);
    summary_.set_method(std::string(policy::SearchMethodName(request_.method)));
    summary_.set_evaluations(outcome.evaluations);
    summary_.set_best_speedup(Speedup(Throughput(outcome.best.evaluation)));
    summary_.set_warm_started(outcome.warm_started);
    summary_.set_warm_start_source(outcome.warm_start_source);
    summary_.set_space_size(outcome.space_size);
    summary_.set_iterations(outcome.iterations);
    summary_.set_stop_reason(std::string(stop_reason));
    if (outcome.best_aggregated.has_value()) {
      *summary_.mutable_best_aggregated_plan() =
          simulator::PlanToProto(outcome.best_aggregated->plan, problem);
      *summary_.mutable_best_aggregated() = simulator::PredictionToProto(
          outcome.best_aggregated->evaluation, problem);
      simulator::AnnotateEngineCapability(problem,
                                          outcome.best_aggregated->plan,
                                          summary_.mutable_best_aggregated());
    }
    if (outcome.best_disaggregated.has_value()) {
      *summary_.mutable_best_disaggregated_plan() =
          simulator::PlanToProto(outcome.best_disaggregated->plan, problem);
      *summary_.mutable_best_disaggregated() = simulator::PredictionToProto(
          outcome.best_disaggregated->evaluation, problem);
      simulator::AnnotateEngineCapability(
          problem, outcome.best_disaggregated->plan,
          summary_.mutable_best_disaggregated());
    }
    *update.mutable_summary() = summary_;
    for (const policy::ScoredPlan& scored : outcome.frontier) {
      shardplan::v1::FrontierPoint* point = update.add_frontier();
      *point->mutable_plan() = simulator::PlanToProto(scored.plan, problem);
      *point->mutable_prediction() =
          simulator::PredictionToProto(scored.evaluation, problem);
      simulator::AnnotateEngineCapability(problem, scored.plan,
                                          point->mutable_prediction());
      point->set_output_tokens_per_s_per_gpu(
          scored.evaluation.output_tokens_per_s_per_gpu);
      point->set_tokens_per_s_per_user(
          policy::TokensPerSecondPerUser(scored.evaluation));
      point->set_disaggregated(point->plan().has_prefill());
    }
    for (const policy::ScoredPlan& scored : outcome.top_plans) {
      shardplan::v1::TopPlan* top = update.add_top_plans();
      *top->mutable_plan() = simulator::PlanToProto(scored.plan, problem);
      *top->mutable_prediction() =
          simulator::PredictionToProto(scored.evaluation, problem);
      simulator::AnnotateEngineCapability(problem, scored.plan,
                                          top->mutable_prediction());
      top->set_speedup_vs_baseline(Speedup(Throughput(scored.evaluation)));
    }
    LimitSize(&update);
  }

  // A capacity search, on a worker thread: one final update with the winner
  // (chosen_cluster, plan, prediction with cost) and the best option of each
  // hardware in top_plans; or, when no option carries the rate, an
  // infeasible prediction naming the limits.
  void RunCapacity(int slot) {
    ServerMetrics& metrics = *deps_.metrics;
    metrics.ResetSlot(slot);
    const absl::Time search_start = absl::Now();
    absl::StatusOr<CapacityResult> result =
        SearchCapacity(*request_.capacity, token_);
    metrics.search_duration().Observe(
        absl::ToDoubleSeconds(absl::Now() - search_start));
    PlanUpdate update;
    update.set_final(true);
    update.set_kind("final");
    absl::Status status = result.status();
    std::string stop_reason = "error";
    if (result.ok()) {
      metrics.cost_model_evaluations().Increment(result->evaluations);
      summary_.set_evaluations(result->evaluations);
      update.set_evaluations(result->evaluations);
      stop_reason = "complete";
      if (result->cancelled) {
        absl::MutexLock lock(&mu_);
        stop_reason =
            shutdown_ && !client_cancelled_ ? "shutdown" : "cancelled";
        if (stop_reason == "cancelled") status = CancelStatusLocked();
      }
      if (result->winner.has_value()) {
        const CapacityPick& w = result->picks[*result->winner];
        *update.mutable_plan() = w.plan;
        *update.mutable_prediction() = w.prediction;
        *update.mutable_chosen_cluster() = w.cluster;
      } else if (!result->cancelled) {
        update.mutable_prediction()->set_feasible(false);
        update.mutable_prediction()->set_infeasible_reason(
            result->no_fit_reason);
      }
      for (const CapacityPick& pick : result->picks) {
        shardplan::v1::TopPlan* top = update.add_top_plans();
        *top->mutable_plan() = pick.plan;
        *top->mutable_prediction() = pick.prediction;
        *top->mutable_cluster() = pick.cluster;
      }
    }
    update.set_elapsed_seconds(absl::ToDoubleSeconds(absl::Now() - start_));
    // The goal, not the (unused) search method.
    summary_.set_method(
        std::string(policy::CapacityGoalName(request_.capacity->goal)));
    summary_.set_stop_reason(stop_reason);
    *update.mutable_summary() = summary_;
    {
      absl::MutexLock lock(&mu_);
      queue_.PushFinal(std::move(update), status);
    }
    Pump();  // `this` may be gone after this call
  }

  // The job, on a worker thread.
  void RunSearch(int slot) {
    ServerMetrics& metrics = *deps_.metrics;
    metrics.ResetSlot(slot);
    metrics.slot_best_speedup(slot).Set(Speedup(baseline_tps_));
    PushDeferredBaseline();
    const absl::Time search_start = absl::Now();
    Listener listener(*this, slot);
    const SearchJob::Outcome outcome = job_->Run(token_, listener);
    metrics.search_duration().Observe(
        absl::ToDoubleSeconds(absl::Now() - search_start));
    metrics.ResetSlot(slot);

    absl::Status final_status = outcome.status;
    std::string stop_reason = "error";
    if (outcome.stop_reason == policy::StopReason::kCancelled) {
      absl::MutexLock lock(&mu_);
      if (shutdown_ && !client_cancelled_) {
        stop_reason = "shutdown";  // ends normally with the best so far
      } else {
        stop_reason = "cancelled";
        final_status = CancelStatusLocked();
      }
    } else if (outcome.stop_reason.has_value()) {
      stop_reason = std::string(policy::StopReasonName(*outcome.stop_reason));
    }
    // A final update that will not be written (an error or cancelled status,
    // or a broken stream) is not priced; the summary is still filled for the
    // log line.
    PlanUpdate final_update = final_status.ok() && !ClientGone()
                                  ? MakeFinal(outcome, stop_reason)
                                  : MakeSummaryOnly(outcome, stop_reason);
    {
      absl::MutexLock lock(&mu_);
      queue_.PushFinal(std::move(final_update), final_status);
    }
    Pump();  // `this` may be gone after this call
  }

  const ServiceDeps& deps_;
  grpc::CallbackServerContext* const context_;
  const ValidatedPlanRequest request_;
  const absl::Time start_;
  policy::CancellationToken token_;
  bool registered_ = false;  // set before any other thread sees the stream

  // Set by Begin before any other thread sees the stream.
  std::unique_ptr<SearchJob> job_;
  double baseline_tps_ = 0;
  bool deferred_ = false;  // the baseline update is priced on the worker
  policy::ScoredPlan deferred_baseline_;

  struct Priced {
    simulator::PlanDims plan;
    shardplan::v1::Prediction before;  // without the traffic prediction
    shardplan::v1::Prediction after;
  };
  mutable absl::Mutex price_mu_;
  mutable std::optional<Priced> last_priced_ ABSL_GUARDED_BY(price_mu_);

  // Written by the worker thread (before the final update is queued), or by
  // Dropped/OnCancel when no worker ever runs; read in OnDone after Finish.
  shardplan::v1::SearchSummary summary_;

  mutable absl::Mutex mu_;
  UpdateQueue queue_ ABSL_GUARDED_BY(mu_);
  uint64_t job_id_ ABSL_GUARDED_BY(mu_) = 0;
  bool client_cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool deadline_exceeded_ ABSL_GUARDED_BY(mu_) = false;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  absl::StatusCode final_code_ ABSL_GUARDED_BY(mu_) =
      absl::StatusCode::kUnknown;

  friend class StreamRegistry;
};

bool StreamRegistry::Add(PlanStream* stream) {
  absl::MutexLock lock(&mu_);
  if (draining_) return false;
  streams_.insert(stream);
  return true;
}

void StreamRegistry::Remove(PlanStream* stream) {
  absl::MutexLock lock(&mu_);
  streams_.erase(stream);
}

void StreamRegistry::Drain() {
  absl::MutexLock lock(&mu_);
  draining_ = true;
  // Streams cannot be deleted while the lock is held (OnDone removes them
  // first).
  for (PlanStream* stream : streams_) stream->CancelForShutdown();
}

bool StreamRegistry::draining() const {
  absl::MutexLock lock(&mu_);
  return draining_;
}

bool StreamRegistry::AwaitEmpty(absl::Time deadline) const {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithDeadline(
      absl::Condition(
          +[](const absl::flat_hash_set<PlanStream*>* streams) {
            return streams->empty();
          },
          &streams_),
      deadline);
}

int StreamRegistry::size() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(streams_.size());
}

grpc::ServerWriteReactor<PlanUpdate>* StartPlanStream(
    const ServiceDeps& deps, grpc::CallbackServerContext* context,
    const PlanRequest& request) {
  const absl::Time start = absl::Now();
  absl::StatusOr<ValidatedPlanRequest> validated =
      ValidatePlanRequest(request, deps.limits);
  if (!validated.ok()) {
    const std::string model = request.model().source_case() ==
                                      shardplan::v1::ModelSource::kCatalogName
                                  ? request.model().catalog_name()
                                  : "custom";
    return new FailedPlanStream(*deps.metrics, validated.status(),
                                MethodLabel(request), model,
                                request.cluster().num_gpus(), start);
  }
  auto* stream = new PlanStream(deps, context, *std::move(validated), start);
  stream->Begin();
  return stream;
}

}  // namespace shardplan::server
