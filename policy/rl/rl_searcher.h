// The Learn-to-Shard RL searcher (method "rl") and its ablations, the only
// searchers that need LibTorch (library shardplan_policy_rl). Each iteration
// runs the search moves that learn nothing (policy/search_moves.h: tuple
// sweep, neighbour sweep, batch line search), then draws a batch from the
// learned policy (policy/rl/policy_net.h), evaluates it and updates the
// policy.
//
// The learned policy: a small transformer encoder over a context token
// (model, cluster, workload features) and one token per elite plan; heads
// pick an anchor among the elite plans (or none), the degree tuple, and every
// later decision under the masks, each decision a learned mixture of copying
// the anchor's value, copying a second elite plan's (crossover) and a
// generative head (mutation); REINFORCE with a batch baseline and an entropy
// bonus (PPO-style clipped epochs optional) plus self-imitation of the elite.
// The network runs once per iteration. LibTorch on CPU, behind a pimpl: this
// header exposes no torch types.
#ifndef SHARDPLAN_POLICY_RL_RL_SEARCHER_H_
#define SHARDPLAN_POLICY_RL_RL_SEARCHER_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "policy/search_moves.h"
#include "policy/searcher.h"

namespace shardplan::policy {

// What the policy learns with and samples from.
struct RlPolicyOptions {
  // Plans evaluated per iteration (2x are sampled; ones not yet scored go
  // first).
  int batch_size = 32;
  // false: the encoder sees the context token only and there are no anchors
  // to copy from (ablation "rl-no-elite").
  bool use_elite_tokens = true;
  // 0: no learning, the initial policy's sampling (ablation "rl-no-learning").
  double learning_rate = 1e-2;
  double entropy_coef = 0.01;
  // Per decision: mix this much of the uniform distribution over valid choices
  // (raised adaptively while few sampled plans are new).
  double explore_epsilon = 0.1;
  // 1: plain REINFORCE step; > 1: PPO clipped-ratio epochs on each batch.
  int ppo_epochs = 1;
  double ppo_clip = 0.2;
  // Weight of the elite plans' log-likelihood (self-imitation).
  double self_imitation_coef = 1.0;
  // Behaviour-cloning steps on the initial elite (Megatron + warm start).
  int imitation_steps = 0;
  // Initial logit of every copy gate: sigmoid(bias) is the initial chance that
  // a decision copies the anchor elite plan's value.
  double copy_gate_bias = 2.0;
  // The same for the decisions after a move to another degree tuple.
  double copy_gate_bias_after_move = 0.0;
  // Crossover: a plan that copies an elite plan (its anchor) takes each
  // decision it does not copy from a second, uniformly chosen elite plan (its
  // mate) with a learned probability per decision, initially
  // sigmoid(crossover_gate_bias), else from the generative head.
  bool crossover = true;
  double crossover_gate_bias = 1.0;
  // Initial weight of the squared distance between degree-tuple features
  // (log2 of each degree / 10) when a plan changes its anchor's tuple: 40
  // makes dp x2, tp /2 (squared distance 0.03) ~37x likelier than dp x4,
  // tp /4 (0.12).
  double tuple_locality = 40.0;
  // The policy's elite (anchors and elite tokens): the best `anchors` plans
  // seen, with at most this many per degree tuple (0: no cap; TupleElite).
  int anchors_per_tuple = 4;
  // Initial logit of sampling a plan without an anchor (the elite plans'
  // anchor logits start at 0).
  double free_anchor_logit = 0.0;
  // Number of plans in the policy's elite (0: SearchOptions::elite_size, the
  // size of the elite the search returns and persists). 8 rather than that
  // 16: fewer, better anchors are copied from more often (chosen on the
  // benchmark's seed sets).
  int anchors = 8;
  int d_model = 32;
  int encoder_layers = 1;
};

struct RlOptions {
  RlPolicyOptions policy;   // the learned part
  SearchMoveOptions moves;  // the moves around it that learn nothing
};

// Per-run timing, for reporting (iteration time, evaluations/s, network vs cost
// model).
struct RlStats {
  int iterations = 0;
  double policy_seconds = 0;      // sampling, encoder and gradient steps
  double network_seconds = 0;     // of which LibTorch (forward, backward, Adam)
  double cost_model_seconds = 0;  // evaluating the sampled plans and the moves
  double total_seconds = 0;
  std::vector<double>
      mean_rewards;  // per iteration: mean reward of the sampled batch
};

// The RL method names: "rl" and the benchmark's ablations.
const std::vector<std::string>& RlMethods();

// The options behind an RL method name: "rl" keeps `base`; the benchmark's
// ablations are "rl-no-elite" (context token only: no anchors, nothing to
// copy), "rl-no-learning" (learning switched off: the initial policy's
// sampling) and "rl-policy-only" (the learned part alone: no tuple sweep, no
// neighbour sweep, no batch line search).
RlOptions RlMethodOptions(absl::string_view method, RlOptions base = {});

// Registers RlMethods() with CreateSearcher (policy/searcher.h), each with
// RlMethodOptions of the defaults. Idempotent and thread-safe; binaries that
// link shardplan_policy_rl call it once at startup.
void RegisterRlSearchers();

class RlSearcher : public Searcher {
 public:
  explicit RlSearcher(const RlOptions& options = {}, std::string method = "rl");
  ~RlSearcher() override;
  absl::string_view method() const override { return method_; }
  // See Searcher::Search. Warm start: options.warm_start->elite_plans are
  // re-evaluated and inserted in the elite history, policy_weights (bytes of a
  // previous SearchResult) loaded; weights that do not load are
  // INVALID_ARGUMENT. SearchResult::policy_weights is filled. LibTorch
  // failures are INTERNAL.
  absl::StatusOr<SearchResult> Search(const simulator::CostModel& model,
                                      const SearchOptions& options,
                                      const CancellationToken& cancel,
                                      SearchObserver& observer) override;
  const RlStats& last_stats() const { return stats_; }

 private:
  RlOptions options_;
  std::string method_;
  RlStats stats_;
};

}  // namespace shardplan::policy

#endif  // SHARDPLAN_POLICY_RL_RL_SEARCHER_H_
