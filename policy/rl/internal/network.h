// The RL policy's network (policy_net.cc drives it): the weights in one flat
// parameter vector, the encoder and heads, the forward pass, and the weights'
// serialization; plus the table layout shared with the sampling and the
// update. Included by policy_net.cc only (it includes LibTorch).
#ifndef SHARDPLAN_POLICY_RL_INTERNAL_NETWORK_H_
#define SHARDPLAN_POLICY_RL_INTERNAL_NETWORK_H_

#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "policy/plan_space.h"
#include "policy/rl/features.h"
#include "policy/rl/policy_net.h"
#include "policy/weights_archive.h"

namespace shardplan::policy::rl::network {

constexpr int kHeads = 4;
// Degree tuples the network scores per iteration at most (see
// Impl::NumCandidates): every tuple of the aggregated spaces and of most joint
// spaces; a joint space of a large cluster scores a subset.
constexpr int kMaxTupleCandidates = PlanSpace::kLargeJointSpace;
// Decisions after the degree tuple of an aggregated space, each with one
// output head; a disaggregated space adds one head per prefill operator dim.
constexpr int kAggregatedHeads = kNumAggregatedDecisions - 1;
constexpr int kNumHeads = kNumDecisions - 1;
// Table slots: one per operator decision and the micro-batch decision, one
// per micro-batch multiplier for the batch decision (its mask depends on it),
// then (disaggregated spaces only) one per prefill operator decision.
constexpr int kAggregatedSlots =
    kBatchDecision - 1 + kMicroBatchMultipliers.size();
constexpr int kDisaggregatedSlots = kAggregatedSlots + simulator::kNumOpKinds;
// Bumped whenever the parameter layout changes: saved weights of another
// layout are ignored (a warm start then keeps its elite plans only).
constexpr int64_t kArchVersion = 8;
// Seed of the generator that initialises the weights only disaggregated spaces
// use (pool features, prefill dims): not the search's generator, so that
// adding them left the aggregated search's random stream (and its results) as
// they were.
constexpr uint64_t kPoolWeightsSeed = 0x9e3779b97f4a7c15ULL;
// Initial logit of Megatron's dim in each prefill operator head (the others
// 0): with the five dims of a tensor-parallel operator allowed, the untrained
// policy draws Megatron's with probability 1/2, so a cold search starts near
// the layout engines ship (and the sweep uses) instead of uniformly among
// dims that mostly slow a prefill down (replicated or batch-split matrices).
constexpr double kPrefillMegatronLogit = 1.3862943611198906;  // log(4)

inline int MaxTableChoices() {
  int c = 0;
  for (int i = 1; i < kNumDecisions; ++i) c = std::max(c, MaxChoices(i));
  return c;
}

inline int SlotOf(int decision, const Decisions& a) {
  if (decision >= kFirstPrefillOpDecision)
    return kAggregatedSlots + decision - kFirstPrefillOpDecision;
  return decision < kBatchDecision
             ? decision - 1
             : kBatchDecision - 1 + a[kMicroBatchesDecision];
}

// The decision of table slot s (for the batch slots, the micro-batch choice
// they belong to is s - (kBatchDecision - 1)).
inline int DecisionOfSlot(int s) {
  if (s >= kAggregatedSlots)
    return kFirstPrefillOpDecision + s - kAggregatedSlots;
  return s < kBatchDecision - 1 ? s + 1 : kBatchDecision;
}

inline torch::Tensor FloatTensor(const std::vector<float>& v,
                                 std::vector<int64_t> shape) {
  return torch::from_blob(const_cast<float*>(v.data()), shape, torch::kFloat32)
      .clone();
}
inline torch::Tensor LongTensor(const std::vector<int64_t>& v) {
  return torch::from_blob(const_cast<int64_t*>(v.data()),
                          {static_cast<int64_t>(v.size())}, torch::kInt64)
      .clone();
}

// The network's weights: one flat parameter vector `theta` and, for the
// forward pass, leaf tensors that share its storage (so autograd accumulates
// every gradient into one flat `grad`, and Adam runs on the flat vectors).
// Shapes depend only on RlPolicyOptions and the fixed MaxChoices of each
// decision, never on the problem, so weights transfer across problems.
class PolicyNet {
 public:
  PolicyNet(const PolicyNet&) = delete;
  PolicyNet& operator=(const PolicyNet&) = delete;
  struct Layer {  // pre-LayerNorm transformer encoder layer
    torch::Tensor ln1_w, ln1_b, qkv_w, qkv_b, out_w, out_b;
    torch::Tensor ln2_w, ln2_b, ff1_w, ff1_b, ff2_w, ff2_b;
  };

  PolicyNet(const RlPolicyOptions& o, std::mt19937_64& rng)
      : d_(std::max(kHeads, o.d_model / kHeads * kHeads)),
        layers_(std::max(1, o.encoder_layers)),
        choices_(MaxTableChoices()) {
    const int64_t d = d_, f = 2 * d_;
    Add(&ctx_w, kContextFeatures, d, kUniform);
    Add(&ctx_b, 0, d, kZero);
    Add(&elite_w, kPlanFeatures, d, kUniform);
    Add(&elite_b, 0, d, kZero);
    for (Layer& l : layers_) {
      Add(&l.ln1_w, 0, d, kOne);
      Add(&l.ln1_b, 0, d, kZero);
      Add(&l.qkv_w, d, 3 * d, kUniform);
      Add(&l.qkv_b, 0, 3 * d, kZero);
      Add(&l.out_w, d, d, kUniform);
      Add(&l.out_b, 0, d, kZero);
      Add(&l.ln2_w, 0, d, kOne);
      Add(&l.ln2_b, 0, d, kZero);
      Add(&l.ff1_w, d, f, kUniform);
      Add(&l.ff1_b, 0, f, kZero);
      Add(&l.ff2_w, f, d, kUniform);
      Add(&l.ff2_b, 0, d, kZero);
    }
    Add(&lnf_w, 0, d, kOne);
    Add(&lnf_b, 0, d, kZero);
    // Zero-initialised output weights: the initial policy picks anchors and
    // degree tuples uniformly and every later decision uniformly among its
    // valid choices.
    Add(&anchor_w, d, 1, kZero);
    Add(&anchor_b, 0, 1, kZero);
    Add(&free_anchor, 0, 1, kFreeAnchor);
    // Two gates per elite plan and decision: for plans that keep the anchor's
    // degree tuple, and for plans that moved to another tuple (where the
    // anchor's later values mean something else, e.g. a batch per replica).
    Add(&gate_w, d, 2 * kNumAggregatedDecisions, kUniform);
    // Initially each decision copies the anchor elite plan's value with
    // probability sigmoid(copy_gate_bias): local moves around the elite.
    Add(&gate_b, 0, 2 * kNumAggregatedDecisions, kGateBias);
    Add(&cross_b, 0, kNumAggregatedDecisions, kCrossBias);
    Add(&key1_w, PlanSpace::kDegreeFeatures, d, kUniform);
    Add(&key1_b, 0, d, kZero);
    Add(&key2_w, d, d, kUniform);
    Add(&key2_b, 0, d, kZero);
    Add(&query_w, d, d, kZero);
    Add(&locality, 0, 1, kLocality);
    Add(&zs_w, d, d, kUniform);
    Add(&zk_w, d, d, kUniform);
    Add(&z_b, 0, d, kZero);
    Add(&head_w, d, kAggregatedHeads * choices_, kZero);
    Add(&head_b, 0, kAggregatedHeads * choices_, kZero);
    // Everything below is read only in disaggregated spaces (an aggregated
    // search leaves it untouched: see Step).
    aggregated_size_ = size_;
    // Disaggregated joint tuples: their pool features (PlanSpace::
    // PoolFeatures) enter the degree-tuple keys and the elite tokens.
    Add(&key1_pool_w, PlanSpace::kPoolFeatures, d, kUniformPool);
    Add(&elite_pool_w, PlanSpace::kPoolFeatures, d, kUniformPool);
    // The prefill instance's operator dims: their generative heads, copy
    // gates (kept tuple, moved tuple), crossover gates, and their one-hot in
    // the elite tokens.
    Add(&prefill_head_w, d, simulator::kNumOpKinds * choices_, kZero);
    Add(&prefill_head_b, 0, simulator::kNumOpKinds * choices_, kMegatronPrior);
    Add(&prefill_gate_w, d, 2 * simulator::kNumOpKinds, kUniformSide);
    Add(&prefill_gate_b, 0, 2 * simulator::kNumOpKinds, kGateBias);
    Add(&prefill_cross_b, 0, simulator::kNumOpKinds, kCrossBias);
    Add(&elite_prefill_w, kPrefillDimFeatures, d, kUniformSide);

    std::vector<float> values(size_, 0.0f);
    std::mt19937_64 pool_rng(kPoolWeightsSeed);
    for (const Slot& s : slots_) {
      float* v = values.data() + s.offset;
      const int64_t n = s.rows > 0 ? s.rows * s.cols : s.cols;
      if (s.init == kUniform) {
        const double a = 1.0 / std::sqrt(static_cast<double>(s.rows));
        std::uniform_real_distribution<double> u(-a, a);
        for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(u(rng));
      } else if (s.init == kOne) {
        std::fill(v, v + n, 1.0f);
      } else if (s.init == kGateBias) {
        std::fill(v, v + n / 2, static_cast<float>(o.copy_gate_bias));
        std::fill(v + n / 2, v + n,
                  static_cast<float>(o.copy_gate_bias_after_move));
      } else if (s.init == kLocality) {  // softplus(x) ~ x for large x
        std::fill(v, v + n, static_cast<float>(o.tuple_locality));
      } else if (s.init == kCrossBias) {
        std::fill(v, v + n, static_cast<float>(o.crossover_gate_bias));
      } else if (s.init == kFreeAnchor) {
        std::fill(v, v + n, static_cast<float>(o.free_anchor_logit));
      } else if (s.init == kUniformPool) {
        // The scale of the degree features' weights they add to.
        const double a =
            1.0 / std::sqrt(static_cast<double>(PlanSpace::kDegreeFeatures));
        std::uniform_real_distribution<double> u(-a, a);
        for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(u(pool_rng));
      } else if (s.init == kMegatronPrior) {
        const simulator::ShardDims megatron = simulator::MegatronShardDims();
        for (int op = 0; op < simulator::kNumOpKinds; ++op) {
          v[op * choices_ + static_cast<int>(megatron[op])] =
              static_cast<float>(kPrefillMegatronLogit);
        }
      } else if (s.init == kUniformSide) {
        const double a = 1.0 / std::sqrt(static_cast<double>(s.rows));
        std::uniform_real_distribution<double> u(-a, a);
        for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(u(pool_rng));
      }
    }
    theta_ = FloatTensor(values, {size_});
    grad_ = torch::zeros({size_});
    adam_m_ = torch::zeros({size_});
    adam_v_ = torch::zeros({size_});
    adam_denom_ = torch::zeros({size_});
    for (const Slot& s : slots_) {
      torch::Tensor view =
          theta_.narrow(0, s.offset, s.rows > 0 ? s.rows * s.cols : s.cols);
      *s.tensor = (s.rows > 0 ? view.view({s.rows, s.cols}) : view)
                      .detach()
                      .requires_grad_(true);
      torch::Tensor g =
          grad_.narrow(0, s.offset, s.rows > 0 ? s.rows * s.cols : s.cols);
      s.tensor->mutable_grad() = s.rows > 0 ? g.view({s.rows, s.cols}) : g;
    }
  }

  int d() const { return d_; }
  int choices() const { return choices_; }
  const std::vector<Layer>& layers() const { return layers_; }

  // Clipped Adam step on the gradient accumulated since ZeroGrad. An
  // aggregated search steps only the weights it reads (a prefix of theta):
  // the rest has no gradient there, and the same vector lengths keep its
  // arithmetic (and so its results) as before those weights existed.
  void Step(double lr, bool disaggregated) {
    torch::NoGradGuard no_grad;
    const int64_t n = disaggregated ? size_ : aggregated_size_;
    torch::Tensor grad = grad_.narrow(0, 0, n);
    torch::Tensor theta = theta_.narrow(0, 0, n);
    torch::Tensor adam_m = adam_m_.narrow(0, 0, n);
    torch::Tensor adam_v = adam_v_.narrow(0, 0, n);
    torch::Tensor adam_denom = adam_denom_.narrow(0, 0, n);
    const double norm = grad.norm().item<double>();
    if (!std::isfinite(norm)) {
      grad_.zero_();
      return;
    }
    if (norm > 1.0) grad.mul_(1.0 / norm);
    constexpr double kB1 = 0.9, kB2 = 0.999, kEps = 1e-8;
    ++step_;
    adam_m.mul_(kB1).add_(grad, 1 - kB1);
    adam_v.mul_(kB2).addcmul_(grad, grad, 1 - kB2);
    const double bc1 = 1 - std::pow(kB1, step_);
    const double bc2 = 1 - std::pow(kB2, step_);
    // In place into a kept buffer: a fresh parameter-sized temporary per step
    // costs more in allocation and page faults than the arithmetic.
    torch::sqrt_out(adam_denom, adam_v).mul_(1 / std::sqrt(bc2)).add_(kEps);
    theta.addcdiv_(adam_m, adam_denom, -lr / bc1);
  }
  void ZeroGrad() { grad_.zero_(); }

  std::string Save() const {
    std::ostringstream out;
    torch::serialize::OutputArchive archive;
    archive.write("arch", Arch());
    archive.write("theta", theta_);
    archive.save_to(out);
    return out.str();
  }

  // False (with a warning) when the bytes are not weights this network can
  // use: another layout (another RlPolicyOptions or an older version), or a
  // damaged or hostile archive. The search then starts from fresh weights and
  // its own replace the stored ones. Never an error: stored state must not
  // fail a search, and LibTorch's messages (stack traces, load addresses)
  // must not reach a client.
  absl::StatusOr<bool> Load(const std::string& bytes) {
    // What loading may allocate is bounded before LibTorch allocates it: the
    // parameters, the layout tensor and the archive's small records.
    constexpr uint64_t kArchiveOverheadBytes = 1 << 20;
    const absl::Status usable = CheckWeightsArchive(
        bytes,
        static_cast<uint64_t>(size_) * sizeof(float) + kArchiveOverheadBytes);
    if (!usable.ok()) {
      LOG(WARNING) << "stored policy weights (" << bytes.size()
                   << " bytes) set aside, starting from fresh weights: "
                   << usable.message();
      return false;
    }
    torch::Tensor arch, theta;
    try {
      std::istringstream in(bytes);
      torch::serialize::InputArchive archive;
      archive.load_from(in);
      if (!archive.try_read("arch", arch) ||
          !archive.try_read("theta", theta) || !arch.equal(Arch()) ||
          theta.numel() != size_ || theta.scalar_type() != torch::kFloat32) {
        LOG(WARNING) << "warm_start.policy_weights have another network "
                        "layout; starting from fresh weights";
        return false;
      }
    } catch (const std::exception& e) {
      // The first line only: the rest is LibTorch's backtrace.
      const absl::string_view what = e.what();
      LOG(WARNING) << "stored policy weights (" << bytes.size()
                   << " bytes) do not load, set aside, starting from fresh "
                      "weights: "
                   << what.substr(0, std::min(what.find('\n'), size_t{200}));
      return false;
    }
    torch::NoGradGuard no_grad;
    theta_.copy_(theta.reshape({size_}));
    return true;
  }

  torch::Tensor ctx_w, ctx_b, elite_w, elite_b, lnf_w, lnf_b, anchor_w,
      anchor_b, free_anchor, gate_w, gate_b, cross_b, key1_w, key1_b, key2_w,
      key2_b, query_w, locality, zs_w, zk_w, z_b, head_w, head_b, key1_pool_w,
      elite_pool_w, prefill_head_w, prefill_head_b, prefill_gate_w,
      prefill_gate_b, prefill_cross_b, elite_prefill_w;

 private:
  enum Init {
    kUniform,
    kZero,
    kOne,
    kGateBias,
    kCrossBias,
    kLocality,
    kFreeAnchor,
    kUniformPool,
    kUniformSide,   // as kUniform, from the side generator (kPoolWeightsSeed)
    kMegatronPrior  // prefill heads' biases: kPrefillMegatronLogit
  };
  struct Slot {
    torch::Tensor* tensor;
    int64_t offset, rows, cols;  // rows 0: a vector of `cols`
    Init init;
  };
  void Add(torch::Tensor* t, int64_t rows, int64_t cols, Init init) {
    slots_.push_back({t, size_, rows, cols, init});
    size_ += rows > 0 ? rows * cols : cols;
  }
  torch::Tensor Arch() const {
    const std::vector<int64_t> a = {kArchVersion,
                                    d_,
                                    kHeads,
                                    static_cast<int64_t>(layers_.size()),
                                    kContextFeatures,
                                    kPlanFeatures,
                                    kNumDecisions,
                                    choices_,
                                    size_};
    return LongTensor(a);
  }

  int d_;
  std::vector<Layer> layers_;
  int choices_;
  std::vector<Slot> slots_;
  int64_t size_ = 0;
  int64_t aggregated_size_ = 0;  // the weights an aggregated search reads
  torch::Tensor theta_, grad_, adam_m_, adam_v_, adam_denom_;
  int64_t step_ = 0;
};

// One iteration's forward pass.
struct Forward {
  torch::Tensor anchor_logp;  // [K + 1], the free choice last
  // [2K, D] copy probability per elite plan and decision: row 2k for plans
  // that keep elite k's tuple, 2k + 1 after a move to another tuple.
  torch::Tensor gate;
  // [D] probability that a decision not copied from the anchor is taken from
  // the mate instead of the generative head (crossover).
  torch::Tensor cross;
  torch::Tensor deg_logp;  // [T] generative log-probabilities over tuples
  // [K + 1, T] the same for a plan anchored on elite k: the generative logits
  // minus a learned multiple of the squared distance to the anchor's tuple
  // (a change of parallel degrees tends to a nearby tuple); row K = deg_logp.
  torch::Tensor deg_anchor_logp;
  torch::Tensor context;     // [1, d] encoder output of the context token
  torch::Tensor keys;        // [T, d] degree-tuple embeddings
  torch::Tensor table_logp;  // [U, slots, C] per tabulated tuple
  // Detached copies for sampling and for the gradient, row-major like the
  // tensors; deg_anchor_p is empty without an elite.
  std::vector<float> anchor_p, gate_p, cross_p, deg_p, deg_anchor_p, table_p;
  std::vector<float> deg_lp, deg_anchor_lp, table_lp;  // logs of the above
  std::vector<float> deg_cdf, deg_anchor_cdf;          // running sums per row
};

// The loss's gradient with respect to the tables of one Forward, laid out like
// them; empty where the Forward has no such table.
struct TableGrads {
  std::vector<float> anchor, gate, cross, deg, deg_anchor, table;
};

}  // namespace shardplan::policy::rl::network

#endif  // SHARDPLAN_POLICY_RL_INTERNAL_NETWORK_H_
