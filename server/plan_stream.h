// One PlanSharding call: a grpc::ServerWriteReactor (STYLE.md §5) that writes
// the Megatron baseline (at once; at a request rate, priced by the prompt
// queue's chain on the worker slot when the search starts), runs the SearchJob
// (server/search_job.h) on the SearchScheduler, streams its improvements
// through a coalescing UpdateQueue (one write in flight), and ends with a final
// update carrying the summary, the frontier and the top plans. Cancellation
// (client cancel, deadline, server drain) only sets the search's token; Finish
// runs exactly once, after the worker handed over its final status; the reactor
// is deleted in OnDone.
#ifndef SHARDPLAN_SERVER_PLAN_STREAM_H_
#define SHARDPLAN_SERVER_PLAN_STREAM_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "policy/searcher.h"
#include "server/metrics.h"
#include "server/search_job.h"
#include "server/search_scheduler.h"
#include "server/store/warm_start_persistence.h"
#include "server/validation.h"
#include "shardplan/v1/shardplan.pb.h"

namespace shardplan::server {

class PlanStream;

// The open PlanSharding streams, so that a drain can cancel them all.
// Thread-safe.
class StreamRegistry {
 public:
  // False once Drain began (the caller answers UNAVAILABLE).
  bool Add(PlanStream* stream);
  void Remove(PlanStream* stream);
  // Refuses new streams and cancels the search of every open one (their streams
  // then end with a final update). Does not wait.
  void Drain();
  bool draining() const;
  int size() const;
  // Waits until no stream is open (each has ended and been freed) or until
  // `deadline`; true if none is. Blocks: not for gRPC threads.
  bool AwaitEmpty(absl::Time deadline) const;

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_set<PlanStream*> streams_ ABSL_GUARDED_BY(mu_);
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
};

// What every stream needs; owned by the server and outliving every stream.
struct ServiceDeps {
  ServerMetrics* metrics = nullptr;
  SearchScheduler* scheduler = nullptr;
  WarmStartPersistence* history = nullptr;
  StreamRegistry* registry = nullptr;
  SearcherFactory searcher_factory;
  policy::EvalPool* eval_pool = nullptr;  // null: searchers evaluate inline
  RequestLimits limits;
  int elite_size = 16;
  // EvaluatePlan calls evaluated at once (on gRPC threads); more are refused
  // with RESOURCE_EXHAUSTED so that bursts cannot take every thread from
  // health checks and streams. 0 = no cap. At a request rate the pricing
  // then runs on `scheduler` as a short job, under its cap.
  int max_concurrent_evaluations = 4;
};

// Handles one PlanSharding call from the gRPC thread: validates, and returns
// the reactor that serves it (already finished with INVALID_ARGUMENT /
// RESOURCE_EXHAUSTED / UNAVAILABLE when the call cannot proceed). Never blocks;
// one cost-model evaluation (the baseline), never the traffic chain.
grpc::ServerWriteReactor<shardplan::v1::PlanUpdate>* StartPlanStream(
    const ServiceDeps& deps, grpc::CallbackServerContext* context,
    const shardplan::v1::PlanRequest& request);

}  // namespace shardplan::server

#endif  // SHARDPLAN_SERVER_PLAN_STREAM_H_
