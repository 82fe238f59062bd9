// The fixed-size worker pool searches run on, with admission control: at most
// `slots` searches run at once, at most `max_queued` more wait, and a further
// one is refused with RESOURCE_EXHAUSTED before anything is queued. gRPC
// threads only call Submit/Remove, which never block beyond a short mutex hold.
#ifndef SHARDPLAN_SERVER_SEARCH_SCHEDULER_H_
#define SHARDPLAN_SERVER_SEARCH_SCHEDULER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace shardplan::server {

class SearchScheduler {
 public:
  // A unit of work. `run(slot)` runs on a worker thread with the slot index in
  // [0, slots); `dropped()` runs instead (on the thread calling Shutdown) when
  // the job never starts because the scheduler shuts down. Exactly one of the
  // two runs, unless Remove() took the job back first, in which case neither
  // does.
  // A short job (milliseconds to a second: an EvaluatePlan's traffic
  // pricing) waits ahead of the queued searches (minutes), behind the short
  // jobs queued before it; it is admitted under the same cap.
  struct Job {
    std::function<void(int slot)> run;
    std::function<void()> dropped;
    bool short_job = false;
  };

  // Observes the counts (for gauges); called with the scheduler's lock held,
  // must be quick.
  using CountsListener = std::function<void(int running, int queued)>;

  // Starts `slots` worker threads (>= 1).
  SearchScheduler(int slots, int max_queued, CountsListener listener = nullptr);
  // Shuts down (see Shutdown) and joins.
  ~SearchScheduler();
  SearchScheduler(const SearchScheduler&) = delete;
  SearchScheduler& operator=(const SearchScheduler&) = delete;

  // Admits `job` and returns its id, or RESOURCE_EXHAUSTED when `slots` jobs
  // run and `max_queued` wait, or UNAVAILABLE after Shutdown began. Never
  // blocks.
  absl::StatusOr<uint64_t> Submit(Job job);

  // Takes a job that is still waiting out of the queue (its client went away).
  // Returns true when it did (neither run nor dropped will be called), false
  // when the job already started or was dropped. Never blocks.
  bool Remove(uint64_t id);

  // Stops admitting (Submit returns UNAVAILABLE) and calls `dropped` for every
  // waiting job, on the calling thread. Running jobs go on. Idempotent; never
  // blocks on a job.
  void Drain();

  // Drain(), then waits for the running jobs to return and joins the workers.
  // Idempotent. Callers cancel running jobs first.
  void Shutdown();

  int slots() const { return static_cast<int>(workers_.size()); }
  int running() const;
  int queued() const;

 private:
  struct Entry {
    uint64_t id;
    Job job;
  };
  void WorkerLoop(int slot);
  void NotifyLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int num_slots_;
  const int max_queued_;
  const CountsListener listener_;
  mutable absl::Mutex mu_;
  std::deque<Entry> queue_ ABSL_GUARDED_BY(mu_);
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
  absl::Mutex join_mu_;  // serialises Shutdown callers
  bool joined_ ABSL_GUARDED_BY(join_mu_) = false;
};

}  // namespace shardplan::server

#endif  // SHARDPLAN_SERVER_SEARCH_SCHEDULER_H_
