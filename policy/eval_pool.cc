// Fixed thread pool for batched plan evaluation (policy/eval_pool.h).
#include "policy/eval_pool.h"

#include <algorithm>
#include <atomic>

namespace shardplan::policy {

struct EvalPool::Job {
  const simulator::CostModel* model = nullptr;
  absl::Span<const simulator::PlanDims> plans;
  absl::Span<simulator::Evaluation> out;
  int chunk = 1;
  int num_chunks = 0;
  std::atomic<int> next{0};
  absl::Mutex mu;
  int done ABSL_GUARDED_BY(mu) = 0;
};

EvalPool::EvalPool(int num_threads) {
  threads_.reserve(std::max(0, num_threads));
  for (int i = 0; i < num_threads; ++i)
    threads_.emplace_back([this] { WorkerLoop(); });
}

EvalPool::~EvalPool() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  for (std::thread& t : threads_) t.join();
}

void EvalPool::RunChunks(Job& job) {
  int ran = 0;
  for (;;) {
    const int c = job.next.fetch_add(1, std::memory_order_relaxed);
    if (c >= job.num_chunks) break;
    const size_t begin = static_cast<size_t>(c) * job.chunk;
    const size_t end = std::min(job.plans.size(), begin + job.chunk);
    for (size_t i = begin; i < end; ++i)
      job.out[i] = job.model->Evaluate(job.plans[i]);
    ++ran;
  }
  if (ran > 0) {
    absl::MutexLock lock(&job.mu);
    job.done += ran;
  }
}

void EvalPool::WorkerLoop() {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](EvalPool* pool) { return pool->stop_ || !pool->queue_.empty(); },
          this));
      if (queue_.empty()) return;  // stop_ and nothing left
      job = queue_.front();
      // A job whose chunks are all taken leaves the queue; its owner waits for
      // `done`.
      if (job->next.load(std::memory_order_relaxed) >= job->num_chunks) {
        queue_.pop_front();
        continue;
      }
    }
    RunChunks(*job);
    absl::MutexLock lock(&mu_);
    if (!queue_.empty() && queue_.front() == job) queue_.pop_front();
  }
}

void EvalPool::Evaluate(const simulator::CostModel& model,
                        absl::Span<const simulator::PlanDims> plans,
                        absl::Span<simulator::Evaluation> out) {
  if (plans.empty()) return;
  auto job = std::make_shared<Job>();
  job->model = &model;
  job->plans = plans;
  job->out = out;
  const int parts = std::max(1, num_threads() + 1) * 4;
  job->chunk =
      std::max<int>(8, static_cast<int>((plans.size() + parts - 1) / parts));
  job->num_chunks =
      static_cast<int>((plans.size() + job->chunk - 1) / job->chunk);
  if (!threads_.empty() && job->num_chunks > 1) {
    absl::MutexLock lock(&mu_);
    queue_.push_back(job);
  }
  RunChunks(*job);
  absl::MutexLock lock(&job->mu);
  job->mu.Await(absl::Condition(
      +[](Job* j) { return j->done == j->num_chunks; }, job.get()));
}

}  // namespace shardplan::policy
