// Wall-clock accounting for the RL searcher's time split (policy vs cost
// model vs LibTorch), shared by the searcher loop and the network.
#ifndef SHARDPLAN_POLICY_RL_INTERNAL_SCOPED_SECONDS_H_
#define SHARDPLAN_POLICY_RL_INTERNAL_SCOPED_SECONDS_H_

#include <chrono>

namespace shardplan::policy::rl::internal {

using Clock = std::chrono::steady_clock;

inline double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Adds the seconds of its scope to *sum.
class ScopedSeconds {
 public:
  explicit ScopedSeconds(double* sum) : sum_(sum) {}
  ~ScopedSeconds() { *sum_ += Since(start_); }
  ScopedSeconds(const ScopedSeconds&) = delete;
  ScopedSeconds& operator=(const ScopedSeconds&) = delete;

 private:
  double* sum_;
  Clock::time_point start_ = Clock::now();
};

}  // namespace shardplan::policy::rl::internal

#endif  // SHARDPLAN_POLICY_RL_INTERNAL_SCOPED_SECONDS_H_
