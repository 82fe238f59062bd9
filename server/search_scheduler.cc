#include "server/search_scheduler.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace shardplan::server {

SearchScheduler::SearchScheduler(int slots, int max_queued,
                                 CountsListener listener)
    : num_slots_(std::max(1, slots)),
      max_queued_(std::max(0, max_queued)),
      listener_(std::move(listener)) {
  {
    absl::MutexLock lock(&mu_);
    NotifyLocked();
  }
  workers_.reserve(num_slots_);
  for (int slot = 0; slot < num_slots_; ++slot) {
    workers_.emplace_back([this, slot] { WorkerLoop(slot); });
  }
}

SearchScheduler::~SearchScheduler() { Shutdown(); }

absl::StatusOr<uint64_t> SearchScheduler::Submit(Job job) {
  absl::MutexLock lock(&mu_);
  if (shutting_down_) {
    return absl::UnavailableError(
        "the server is shutting down; retry on another instance");
  }
  // Workers take jobs as soon as they are idle, so running + waiting is what is
  // admitted.
  if (running_ + static_cast<int>(queue_.size()) >= num_slots_ + max_queued_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "search queue full: ", running_,
        " searches running (--max_concurrent_searches=", num_slots_, ") and ",
        queue_.size(), " waiting (--max_queued_searches=", max_queued_,
        "); retry later"));
  }
  const uint64_t id = next_id_++;
  auto at = queue_.end();
  if (job.short_job) {
    at = std::find_if(queue_.begin(), queue_.end(),
                      [](const Entry& e) { return !e.job.short_job; });
  }
  queue_.insert(at, Entry{id, std::move(job)});
  NotifyLocked();
  return id;
}

bool SearchScheduler::Remove(uint64_t id) {
  Job removed;
  {
    absl::MutexLock lock(&mu_);
    auto it = std::find_if(queue_.begin(), queue_.end(),
                           [id](const Entry& e) { return e.id == id; });
    if (it == queue_.end()) return false;
    removed = std::move(it->job);
    queue_.erase(it);
    NotifyLocked();
  }
  // `removed` (and whatever its closures own) is destroyed outside the lock.
  return true;
}

void SearchScheduler::WorkerLoop(int slot) {
  while (true) {
    Job job;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](SearchScheduler* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) {
            return s->shutting_down_ || !s->queue_.empty();
          },
          this));
      if (queue_.empty()) return;  // shutting down, nothing left to run
      job = std::move(queue_.front().job);
      queue_.pop_front();
      ++running_;
      NotifyLocked();
    }
    job.run(slot);
    job = Job{};
    absl::MutexLock lock(&mu_);
    --running_;
    NotifyLocked();
  }
}

void SearchScheduler::Drain() {
  std::deque<Entry> dropped;
  {
    absl::MutexLock lock(&mu_);
    shutting_down_ = true;
    dropped.swap(queue_);
    NotifyLocked();
  }
  for (Entry& entry : dropped) {
    if (entry.job.dropped) entry.job.dropped();
  }
  dropped.clear();
}

void SearchScheduler::Shutdown() {
  absl::MutexLock join_lock(&join_mu_);
  if (joined_) return;
  Drain();
  for (std::thread& worker : workers_) worker.join();
  joined_ = true;
}

int SearchScheduler::running() const {
  absl::MutexLock lock(&mu_);
  return running_;
}

int SearchScheduler::queued() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(queue_.size());
}

void SearchScheduler::NotifyLocked() {
  if (listener_) listener_(running_, static_cast<int>(queue_.size()));
}

}  // namespace shardplan::server
