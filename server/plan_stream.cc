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
#include "policy/baselines.h"
#include "policy/plan_space.h"
#include "server/elite_store.h"
#include "server/status_util.h"
#include "server/update_queue.h"
#include "simulator/calibration.h"
#include "simulator/cost_model.h"
#include "simulator/megatron.h"
#include "simulator/spec.h"
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
    const simulator::CostModel& cost_model = *request_.cost_model;
    baseline_.plan = simulator::MegatronPlan(cost_model);
    baseline_.evaluation = cost_model.Evaluate(baseline_.plan);
    baseline_tps_ = Throughput(baseline_.evaluation);
    best_ = baseline_;
    best_tps_ = baseline_tps_;
    best_score_ = Score(baseline_);
    deps_.metrics->cost_model_evaluations().Increment();
    PlanUpdate baseline = MakeUpdate(baseline_, /*evaluations=*/1, "baseline");
    {
      absl::MutexLock lock(&mu_);
      // Queued before the job exists so that it is written first whatever the
      // job does.
      queue_.PushBaseline(std::move(baseline));
    }
    absl::Status admitted = absl::OkStatus();
    if (!deps_.registry->Add(this)) {
      admitted = absl::UnavailableError(
          "the server is shutting down; retry on another instance");
    } else {
      registered_ = true;
      absl::StatusOr<uint64_t> job =
          deps_.scheduler->Submit(SearchScheduler::Job{
              [this](int slot) { RunSearch(slot); }, [this] { Dropped(); }});
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
    Pump();
    metrics->time_to_first_plan().Observe(
        absl::ToDoubleSeconds(absl::Now() - start));
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
      {
        absl::MutexLock lock(&mu_);
        stop_reason_ = "cancelled";
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
    deps_.metrics->CountPlanRequest(request_.method, code);
    const simulator::Problem& problem = request_.cost_model->problem();
    LOG(INFO) << "method=PlanSharding search=" << request_.method
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
  // Observer on the worker thread: forwards strict improvements over what was
  // streamed (the baseline included) and feeds the metrics.
  class Observer final : public policy::SearchObserver {
   public:
    Observer(PlanStream& stream, int slot) : stream_(stream), slot_(slot) {}
    void OnImprovement(const policy::Improvement& improvement) override {
      stream_.last_evaluations_ =
          std::max(stream_.last_evaluations_, improvement.evaluations);
      const double tps = Throughput(improvement.best.evaluation);
      const double score = stream_.Score(improvement.best);
      if (score <= stream_.best_score_) return;
      stream_.best_ = improvement.best;
      stream_.best_tps_ = tps;
      stream_.best_score_ = score;
      stream_.improvements_.push_back(improvement.best);
      if (static_cast<int>(stream_.improvements_.size()) >
          stream_.deps_.elite_size) {
        stream_.improvements_.erase(stream_.improvements_.begin());
      }
      stream_.deps_.metrics->slot_best_speedup(slot_).Set(stream_.Speedup(tps));
      PlanUpdate update = stream_.MakeUpdate(
          improvement.best, improvement.evaluations, "improvement");
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
      stream_.last_evaluations_ =
          std::max(stream_.last_evaluations_, progress.evaluations);
      metrics.slot_evaluations(slot_).Set(progress.evaluations);
    }

   private:
    PlanStream& stream_;
    const int slot_;
  };

  // What "best" means for this request: the expected throughput, or with
  // options.objective "conservative" the low end of its range. Searchers
  // always maximise the expected throughput; this only decides which of the
  // plans they report is streamed as the best.
  double Score(const policy::ScoredPlan& scored) const {
    if (!request_.conservative) return Throughput(scored.evaluation);
    return simulator::ConservativeOutputTokensPerS(
        scored.evaluation, request_.cost_model->problem());
  }

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
    update.set_evaluations(evaluations);
    update.set_elapsed_seconds(absl::ToDoubleSeconds(absl::Now() - start_));
    update.set_speedup_vs_baseline(Speedup(Throughput(scored.evaluation)));
    const double grid_tps = grid_tps_.load(std::memory_order_acquire);
    if (grid_tps > 0) {
      update.set_speedup_vs_grid(Throughput(scored.evaluation) / grid_tps);
    }
    update.set_kind(std::string(kind));
    return update;
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
    stop_reason_ = "shutdown";
    // The final update promises that the store holds what the client saw (the
    // baseline): store it first, as RunSearch does.
    if (baseline_.evaluation.feasible) {
      deps_.history->Record(MakeProblemKey(request_.cost_model->problem()),
                            request_.cost_model->problem(),
                            {ToStored(baseline_)}, "");
    }
    PlanUpdate final_update = MakeFinal(0, 0, 0, false, "");
    {
      absl::MutexLock lock(&mu_);
      queue_.PushFinal(std::move(final_update), absl::OkStatus());
    }
    Pump();
  }

  PlanUpdate MakeFinal(int evaluations, int iterations, double space_size,
                       bool warm_started, const std::string& warm_source) {
    PlanUpdate update = MakeUpdate(best_, evaluations, "final");
    update.set_final(true);
    summary_.set_method(request_.method);
    summary_.set_evaluations(evaluations);
    summary_.set_best_speedup(Speedup(best_tps_));
    summary_.set_warm_started(warm_started);
    summary_.set_warm_start_source(warm_started ? warm_source : "");
    summary_.set_space_size(space_size);
    summary_.set_iterations(iterations);
    summary_.set_stop_reason(stop_reason_);
    *update.mutable_summary() = summary_;
    return update;
  }

  StoredPlan ToStored(const policy::ScoredPlan& scored) const {
    StoredPlan stored;
    stored.plan = scored.plan;
    stored.reward = scored.reward;
    stored.output_tokens_per_s = Throughput(scored.evaluation);
    stored.prediction_json = simulator::ToJson(
        simulator::PredictionToProto(scored.evaluation,
                                     request_.cost_model->problem()),
        /*pretty=*/false);
    return stored;
  }

  // The job, on a worker thread.
  void RunSearch(int slot) {
    ServerMetrics& metrics = *deps_.metrics;
    metrics.ResetSlot(slot);
    metrics.slot_best_speedup(slot).Set(Speedup(best_tps_));
    const simulator::Problem& problem = request_.cost_model->problem();
    const absl::Time search_start = absl::Now();

    absl::Status status = absl::OkStatus();
    std::optional<policy::SearchResult> result;
    WarmStartPersistence::Found found;
    const ProblemKey key = MakeProblemKey(problem);
    if (token_.cancelled()) {
      status = absl::CancelledError("cancelled before the search started");
    } else {
      absl::StatusOr<std::unique_ptr<policy::Searcher>> searcher =
          deps_.searcher_factory(request_.method);
      if (!searcher.ok()) {
        // Keeps the code: "rl" in a build without LibTorch is
        // FAILED_PRECONDITION, not a server bug.
        status = absl::Status(
            searcher.status().code(),
            absl::StrCat("cannot create searcher \"", request_.method,
                         "\": ", searcher.status().message()));
      } else {
        // The grid reference (policy::GridBest: tens of milliseconds at
        // most, on this worker) for speedup_vs_grid.
        if (absl::StatusOr<std::unique_ptr<const policy::PlanSpace>> space =
                policy::PlanSpace::Create(*request_.cost_model);
            space.ok()) {
          grid_tps_.store(Throughput(policy::GridBest(**space).evaluation),
                          std::memory_order_release);
        }
        found = deps_.history->Find(key, request_.warm_start);
        policy::SearchOptions options;
        options.max_evaluations = request_.max_evaluations;
        options.max_seconds = request_.max_seconds;
        options.seed = request_.seed;
        options.warm_start =
            found.warm_start.has_value() ? &*found.warm_start : nullptr;
        options.pool = deps_.eval_pool;
        options.elite_size = deps_.elite_size;
        Observer observer(*this, slot);
        absl::StatusOr<policy::SearchResult> searched = (*searcher)->Search(
            *request_.cost_model, options, token_, observer);
        if (searched.ok()) {
          result = *std::move(searched);
        } else {
          status = searched.status();
        }
      }
    }
    metrics.search_duration().Observe(
        absl::ToDoubleSeconds(absl::Now() - search_start));

    // The result's best may never have been reported as an improvement (or have
    // been reported below the baseline): take it if it beats what was streamed.
    // With the conservative objective the elite plans (top-K by expected
    // throughput) are candidates too.
    if (result.has_value()) {
      std::vector<const policy::ScoredPlan*> candidates = {&result->best};
      if (request_.conservative) {
        for (const policy::ScoredPlan& scored : result->elite) {
          candidates.push_back(&scored);
        }
      }
      for (const policy::ScoredPlan* scored : candidates) {
        const double score = Score(*scored);
        if (score > best_score_) {
          best_ = *scored;
          best_tps_ = Throughput(scored->evaluation);
          best_score_ = score;
        }
      }
    }

    // Persist before the final update goes out: a client that saw `final` can
    // rely on the store having the search (see elite_store.h).
    std::vector<StoredPlan> to_store;
    std::string weights;
    if (result.has_value()) {
      for (const policy::ScoredPlan& scored : result->elite) {
        if (scored.evaluation.feasible) to_store.push_back(ToStored(scored));
      }
      if (result->best.evaluation.feasible)
        to_store.push_back(ToStored(result->best));
      weights = result->policy_weights;
    } else if (absl::IsCancelled(status)) {
      for (const policy::ScoredPlan& scored : improvements_)
        to_store.push_back(ToStored(scored));
    }
    // The baseline was streamed first: it is stored even when the search found
    // nothing better (e.g. cancelled by a shutdown in its first iteration), so
    // that every `final: true` is backed by the store.
    if (baseline_.evaluation.feasible) to_store.push_back(ToStored(baseline_));
    deps_.history->Record(key, problem, to_store, weights);
    metrics.ResetSlot(slot);

    bool shutdown = false;
    {
      absl::MutexLock lock(&mu_);
      shutdown = shutdown_ && !client_cancelled_;
    }
    absl::Status final_status = absl::OkStatus();
    if (result.has_value()) {
      stop_reason_ = result->stop_reason;
    } else if (absl::IsCancelled(status) && shutdown) {
      stop_reason_ =
          "shutdown";  // the stream ends normally with the best so far
    } else if (absl::IsCancelled(status)) {
      stop_reason_ = "cancelled";
      absl::MutexLock lock(&mu_);
      final_status = CancelStatusLocked();
    } else {
      stop_reason_ = "error";
      final_status = status;
    }
    const int evaluations =
        result.has_value() ? result->evaluations : last_evaluations_;
    const bool warm_started = result.has_value() ? result->warm_started
                                                 : found.warm_start.has_value();
    PlanUpdate final_update =
        MakeFinal(evaluations, result.has_value() ? result->iterations : 0,
                  result.has_value() ? result->space_size : 0, warm_started,
                  found.warm_start.has_value() ? found.warm_start->source
                                               : std::string());
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

  // Search state: written by the worker thread only (before the final update is
  // queued), or by Begin/Dropped when no worker ever runs; read in OnDone after
  // Finish.
  policy::ScoredPlan baseline_;
  double baseline_tps_ = 0;
  // The grid sweep's best throughput, set by the worker before the search.
  std::atomic<double> grid_tps_{0};
  policy::ScoredPlan best_;
  double best_tps_ = 0;
  double best_score_ = 0;  // Score(best_)
  int last_evaluations_ = 0;
  std::vector<policy::ScoredPlan> improvements_;
  std::string stop_reason_;
  shardplan::v1::SearchSummary summary_;

  absl::Mutex mu_;
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
