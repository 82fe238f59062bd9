// The learned part of the RL searcher, private to policy/rl/: the network (a
// small transformer encoder over a context token and one token per elite plan,
// policy/rl/features.h, with anchor, copy-gate, crossover, degree-tuple and
// per-decision heads), the sampler that draws plans from its output, and the
// policy-gradient update. LibTorch on CPU behind a pimpl: this header
// exposes no torch types, so only policy_net.cc compiles against LibTorch.
#ifndef SHARDPLAN_POLICY_RL_POLICY_NET_H_
#define SHARDPLAN_POLICY_RL_POLICY_NET_H_

#include <array>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "policy/elite_history.h"
#include "policy/plan_space.h"
#include "policy/rl/rl_searcher.h"

namespace shardplan::policy::rl {

// Sets LibTorch's intra- and inter-op threads to 1, once per process: the
// search is then deterministic for a seed, and workers x torch threads stays
// within the cores.
void SetTorchThreadsOnce();

// One sampled plan and what its log-probability needs besides the network's
// tables.
struct SampledPlan {
  Decisions a{};
  int anchor = -1;   // elite plan it copies from (K: free; -1: no elite)
  int gate_row = 0;  // 2 * anchor (+ 1 when the tuple moved): its gates
  int row = 0;       // index of its degree tuple among the tabulated ones
  int mate = -1;     // second elite plan it may take decisions from (-1: none)
  bool novel = false;  // not scored by this search, nor sampled before it
  // Per decision: the anchor's value is valid here, and was chosen; the same
  // for the mate; probability of the chosen value under uniform exploration.
  std::array<bool, kNumDecisions> anchor_valid{}, anchor_chosen{};
  std::array<bool, kNumDecisions> mate_valid{}, mate_chosen{};
  std::array<float, kNumDecisions> uniform{};
};

// The network with its sampler and update, for one search over `space`. Every
// random number (weight initialisation, sampling) comes from `rng`, the
// search's one generator. LibTorch errors surface as exceptions
// (std::exception): callers catch them (RlSearcher::Search). Not
// thread-safe; `space` and `rng` must outlive it.
class Policy {
 public:
  Policy(const RlPolicyOptions& options, const PlanSpace& space,
         std::mt19937_64& rng);
  ~Policy();
  Policy(const Policy&) = delete;
  Policy& operator=(const Policy&) = delete;

  // The weights as bytes (a LibTorch archive, with the layout it needs).
  std::string SaveWeights() const;
  // INVALID_ARGUMENT when the bytes are not a LibTorch archive; weights of
  // another layout (other options or an older version) are ignored with a
  // warning and false; true when loaded.
  absl::StatusOr<bool> LoadWeights(const std::string& bytes);

  // Fixes the elite the next samples and update condition on.
  void SetElite(const std::vector<EliteEntry>& entries);
  // Behaviour cloning of the elite for `steps` gradient steps.
  void Imitate(int steps);
  // Runs the network once and samples up to `n` plans from it, in order,
  // stopping once `want` of them are new (`is_new` is asked once per plan, in
  // order). The forward pass is kept for Update.
  std::vector<SampledPlan> Draw(
      int n, int want, const std::function<bool(const Decisions&)>& is_new);
  // One policy-gradient step on plans of the last Draw call and their
  // rewards, plus self-imitation of the elite. Returns the mean entropy.
  double Update(const std::vector<SampledPlan>& samples,
                const std::vector<double>& rewards);

  // Uniform exploration per decision (RlPolicyOptions::explore_epsilon,
  // adapted by the caller).
  double epsilon() const;
  void set_epsilon(double epsilon);
  // LibTorch time so far: forward passes, backward passes and Adam steps.
  double network_seconds() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardplan::policy::rl

#endif  // SHARDPLAN_POLICY_RL_POLICY_NET_H_
