// A fixed pool of threads that evaluates batches of plans on a CostModel in
// parallel. Results come back in input order, so a search is deterministic
// whatever the thread count.
#ifndef SHARDPLAN_POLICY_EVAL_POOL_H_
#define SHARDPLAN_POLICY_EVAL_POOL_H_

#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "simulator/cost_model.h"
#include "simulator/types.h"

namespace shardplan::policy {

// Thread-safe: several searches may call Evaluate concurrently; their batches
// share the workers. The calling thread works on its own batch too, so a pool
// of 0 threads evaluates inline. Destruction joins the workers (no Evaluate may
// be running).
class EvalPool {
 public:
  // `num_threads` extra worker threads (0: the caller does all the work).
  explicit EvalPool(int num_threads);
  ~EvalPool();
  EvalPool(const EvalPool&) = delete;
  EvalPool& operator=(const EvalPool&) = delete;

  int num_threads() const { return static_cast<int>(threads_.size()); }

  // out[i] = model.Evaluate(plans[i]) for every i; returns when all are done.
  // `out` must have plans.size() elements. Plans must have passed
  // model.ValidatePlan.
  void Evaluate(const simulator::CostModel& model,
                absl::Span<const simulator::PlanDims> plans,
                absl::Span<simulator::Evaluation> out);

 private:
  struct Job;
  void WorkerLoop();
  // Runs chunks of `job` until none are left.
  static void RunChunks(Job& job);

  absl::Mutex mu_;
  std::deque<std::shared_ptr<Job>> queue_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace shardplan::policy

#endif  // SHARDPLAN_POLICY_EVAL_POOL_H_
