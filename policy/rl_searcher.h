// The Learn-to-Shard RL searcher (method "rl"): a small transformer encoder
// over a context token (model, cluster, workload features) and one token per
// elite plan; heads pick an anchor among the elite plans (or none), the
// degree tuple, and every later decision under the masks, each decision a
// learned mixture of copying the anchor's value, copying a second elite
// plan's (crossover) and a generative head (mutation), moves the policy
// learns to make; REINFORCE with a
// batch baseline and an entropy bonus (PPO-style clipped epochs optional)
// plus self-imitation of the elite. The network runs once per iteration.
// LibTorch on CPU, behind a pimpl: this header exposes no torch types.
#ifndef SHARDPLAN_POLICY_RL_SEARCHER_H_
#define SHARDPLAN_POLICY_RL_SEARCHER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "policy/searcher.h"

namespace shardplan::policy {

struct RlOptions {
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
  // seen, with at most this many per degree tuple (0: no cap).
  int anchors_per_tuple = 4;
  // Initial logit of sampling a plan without an anchor (the elite plans'
  // anchor logits start at 0).
  double free_anchor_logit = 0.0;
  // Number of plans in the policy's elite (0: SearchOptions::elite_size, the
  // size of the elite the search returns and persists). 8 rather than that
  // 16: fewer, better anchors are copied from more often (chosen on the
  // benchmark's seed sets; docs/decisions/search-experiments.md).
  int anchors = 8;
  // Tuple sweep: searches without warm-start plans (cold, or with saved
  // weights only) first evaluate the initial (Megatron) plan moved to other
  // degree tuples (PlanSpace::MoveToTuple), so that tuples have an anchor
  // from the start, as a genetic algorithm's random population does. With at
  // most this many other tuples, all of them, nearest first; with more, this
  // many drawn uniformly at random: the nearest ones alone crowd the elite
  // with near-Megatron variants (docs/decisions/search-experiments.md). Costs
  // at most this many evaluations plus their batch line searches. 0: never.
  int tuple_sweep = 64;
  // Batch line search (internal/batch_line_search.h) on the tuple sweep's
  // plans and on each sampled plan that beats the best of its degree tuple:
  // a moved plan's batch is rarely the one its tuple affords. Those
  // evaluations feed the elite, not the policy gradient (they are not the
  // policy's samples).
  bool batch_line_search = true;
  // Neighbour sweep: whenever the search's best plan changes, it is moved to
  // this many of its nearest degree tuples (PlanSpace::MoveToTuple, batch line
  // search on each) before the next sample. The best plan of a large MoE
  // space often sits one coordinated change of several degrees away from the
  // incumbent (dp/2, tp x2, ep/2 with the batch per GPU kept), a move the
  // policy's samples make rarely once its elite has settled on one tuple.
  // Costs at most this many evaluations (plus line searches) per new best.
  // 0: never. 16 chosen on the benchmark
  // (docs/decisions/search-experiments.md).
  int neighbour_sweep = 16;
  int d_model = 32;
  int encoder_layers = 1;
};

// Per-run timing, for reporting (iteration time, evaluations/s, network vs cost
// model).
struct RlStats {
  int iterations = 0;
  double policy_seconds = 0;      // sampling, encoder and gradient steps
  double network_seconds = 0;     // of which LibTorch (forward, backward, Adam)
  double cost_model_seconds = 0;  // evaluating the sampled plans
  double total_seconds = 0;
  std::vector<double>
      mean_rewards;  // per iteration: mean reward of the sampled batch
};

// The options behind an RL method name: "rl" keeps `base`; the benchmark's
// ablations are "rl-no-elite" (context token only: no anchors, nothing to
// copy) and "rl-no-learning" (learning switched off: the initial policy's
// sampling).
RlOptions RlMethodOptions(absl::string_view method, RlOptions base = {});

class RlSearcher : public Searcher {
 public:
  explicit RlSearcher(const RlOptions& options = {}, std::string method = "rl");
  ~RlSearcher() override;
  absl::string_view method() const override { return method_; }
  // See Searcher::Search. Warm start: options.warm_start->elite_plans are
  // re-evaluated and inserted in the elite history, policy_weights (bytes of a
  // previous SearchResult) loaded; weights that do not load are
  // INVALID_ARGUMENT. SearchResult::policy_weights is filled.
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

#endif  // SHARDPLAN_POLICY_RL_SEARCHER_H_
