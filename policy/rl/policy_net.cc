// The learned part of the RL searcher (policy/rl/policy_net.h): sampling from
// the network's tables, imitation and the policy-gradient update; the network
// itself and its weights' serialization are in internal/network.h. The only
// source of the RL library that includes LibTorch. Every random number (weight
// initialisation, sampling) comes from the search's one std::mt19937_64, and
// LibTorch runs on one intra-op thread, so a search is deterministic for a
// seed whatever the evaluation pool's size.
//
// The cost of an iteration is dominated by the network, so it runs ONCE per
// iteration, not once per sampled plan. The encoder and every
// head produce small tables (anchor and gate probabilities per elite plan,
// the distribution over degree tuples, and per sampled tuple the distribution
// of every later decision); plans are sampled from those tables in plain C++,
// the loss's gradient with respect to the tables is summed in plain C++ too
// (a plan touches one entry per decision), and LibTorch backpropagates it
// through the network in one call. The parameters live in one flat buffer so
// that Adam and gradient clipping are a handful of tensor operations, not a
// few per parameter.
#include "policy/rl/policy_net.h"

#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <exception>
#include <functional>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "glog/logging.h"
#include "policy/decision_mixture.h"
#include "policy/elite_history.h"
#include "policy/plan_space.h"
#include "policy/rl/features.h"
#include "policy/rl/internal/network.h"
#include "policy/rl/internal/scoped_seconds.h"
#include "policy/weights_archive.h"

namespace shardplan::policy::rl {
namespace {

using network::DecisionOfSlot;
using network::FloatTensor;
using network::Forward;
using network::kAggregatedHeads;
using network::kAggregatedSlots;
using network::kDisaggregatedSlots;
using network::kHeads;
using network::kMaxTupleCandidates;
using network::kNumHeads;
using network::LongTensor;
using network::PolicyNet;
using network::SlotOf;
using network::TableGrads;
using rl::internal::Clock;
using rl::internal::ScopedSeconds;
using rl::internal::Since;
}  // namespace

// The policy itself; Policy forwards to it so that policy_net.h stays free of
// torch types.
class Policy::Impl {
 public:
  Impl(const RlPolicyOptions& options, const PlanSpace& space,
       std::mt19937_64& rng)
      : options_(options),
        space_(space),
        net_(options, rng),
        rng_(rng),
        decisions_(space.num_decisions()),
        slots_(space.disaggregated() ? kDisaggregatedSlots : kAggregatedSlots),
        epsilon_(options.explore_epsilon) {
    const std::vector<float> ctx = ContextFeatures(space.model().problem());
    context_ = FloatTensor(ctx, {1, kContextFeatures});
    const int t = space.NumChoices(kDegreesDecision);
    subset_ = t > kMaxTupleCandidates;
    if (subset_) {
      ChooseCandidates();
    } else {
      std::vector<float> df;
      df.reserve(t * PlanSpace::kDegreeFeatures);
      for (int i = 0; i < t; ++i) {
        for (float x : space.DegreeFeatures(i)) df.push_back(x);
      }
      degree_features_ = FloatTensor(df, {t, PlanSpace::kDegreeFeatures});
      if (space.disaggregated()) {
        // Joint tuples: thousands, so their squared distances are taken per
        // forward pass for the elite's tuples only, not as a [T, T] table.
        std::vector<float> pf;
        pf.reserve(t * PlanSpace::kPoolFeatures);
        for (int i = 0; i < t; ++i) {
          for (float x : space.PoolFeatures(i)) pf.push_back(x);
        }
        pool_features_ = FloatTensor(pf, {t, PlanSpace::kPoolFeatures});
        distance_features_ = torch::cat({degree_features_, pool_features_}, 1);
      } else {
        tuple_distance_ =
            torch::cdist(degree_features_, degree_features_).pow(2);
      }
    }
    // Head of each slot: the batch slots share the batch head; the prefill
    // dims' heads follow the aggregated ones.
    std::vector<int64_t> slot_head(slots_);
    for (int s = 0; s < slots_; ++s) {
      slot_head[s] = s >= kAggregatedSlots
                         ? kAggregatedHeads + s - kAggregatedSlots
                         : std::min(s, kBatchDecision - 1);
    }
    slot_head_ = LongTensor(slot_head);
  }

  PolicyNet& net() { return net_; }
  // LibTorch time so far: forward passes, backward passes and Adam steps.
  double network_seconds() const { return network_seconds_; }
  double epsilon() const { return epsilon_; }
  void set_epsilon(double e) { epsilon_ = e; }

  // Fixes the elite the next samples and update condition on.
  void SetElite(const std::vector<EliteEntry>& entries) {
    elite_tokens_ = torch::Tensor();
    elite_pool_ = torch::Tensor();
    elite_prefill_ = torch::Tensor();
    elite_.clear();
    imitated_.clear();
    for (const EliteEntry& e : entries) imitated_.push_back(e.decisions);
    if (subset_) ChooseCandidates();
    if (!options_.use_elite_tokens || entries.empty()) return;
    elite_ = imitated_;
    double mean = 0, sq = 0;
    for (const EliteEntry& e : entries) mean += e.scored.reward;
    mean /= entries.size();
    for (const EliteEntry& e : entries)
      sq += (e.scored.reward - mean) * (e.scored.reward - mean);
    const double sd = std::sqrt(sq / entries.size()) + 0.05;
    std::vector<float> buf;
    buf.reserve(entries.size() * kPlanFeatures);
    for (size_t i = 0; i < entries.size(); ++i) {
      const float r = static_cast<float>(
          std::clamp((entries[i].scored.reward - mean) / sd, -3.0, 3.0));
      const float rank =
          static_cast<float>(i) / std::max<size_t>(1, entries.size());
      for (float x : PlanFeatures(space_, entries[i].decisions,
                                  entries[i].scored, r, rank)) {
        buf.push_back(x);
      }
    }
    elite_tokens_ =
        FloatTensor(buf, {static_cast<int64_t>(entries.size()), kPlanFeatures});
    if (space_.disaggregated()) {
      std::vector<float> pools;
      for (const EliteEntry& e : entries) {
        for (float x : space_.PoolFeatures(e.decisions[kDegreesDecision]))
          pools.push_back(x);
      }
      elite_pool_ = FloatTensor(pools, {static_cast<int64_t>(entries.size()),
                                        PlanSpace::kPoolFeatures});
      std::vector<float> prefill;
      for (const EliteEntry& e : entries) {
        for (float x : PrefillDimFeatures(e.decisions)) prefill.push_back(x);
      }
      elite_prefill_ = FloatTensor(
          prefill, {static_cast<int64_t>(entries.size()), kPrefillDimFeatures});
    }
  }

  // Runs the network once and samples up to `n` plans from it, in order,
  // stopping once `want` of them are new (`is_new` is asked once per plan, in
  // order). The forward pass is kept for Update (same elite, same tables).
  std::vector<SampledPlan> Draw(
      int n, int want, const std::function<bool(const Decisions&)>& is_new) {
    Encode(forward_);
    std::vector<SampledPlan> out(n);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    const int t = NumCandidates();
    const int k = static_cast<int>(elite_.size());
    for (SampledPlan& s : out) {
      // Anchor k < K copies from elite plan k; K is the free choice.
      s.anchor = k > 0 ? Pick(forward_.anchor_p.data(), k + 1, u(rng_)) : -1;
      const bool copies = s.anchor >= 0 && s.anchor < k;
      // A plan copying an elite plan may also take decisions from a second,
      // uniformly chosen one (its mate): crossover.
      if (copies && k > 1 && options_.crossover)
        s.mate = static_cast<int>(rng_() % k);
      const float g =
          copies ? forward_.gate_p[2 * s.anchor * decisions_] : 0.0f;
      const int mate_tuple =
          s.mate >= 0 ? elite_[s.mate][kDegreesDecision] : -1;
      int choice;
      if (u(rng_) < epsilon_) {
        choice = CandidateTuple(static_cast<int>(rng_() % t));
      } else if (u(rng_) < g) {
        choice = elite_[s.anchor][kDegreesDecision];
      } else if (s.mate >= 0 && u(rng_) < forward_.cross_p[kDegreesDecision]) {
        choice = mate_tuple;
      } else {
        const float* cdf = s.anchor >= 0
                               ? forward_.deg_anchor_cdf.data() + s.anchor * t
                               : forward_.deg_cdf.data();
        choice = static_cast<int>(
            std::upper_bound(cdf, cdf + t, u(rng_) * cdf[t - 1]) - cdf);
        choice = CandidateTuple(std::min(choice, t - 1));
      }
      s.a[kDegreesDecision] = choice;
      s.gate_row =
          copies ? 2 * s.anchor + (elite_[s.anchor][kDegreesDecision] != choice)
                 : 0;
      s.anchor_valid[kDegreesDecision] = copies;
      s.anchor_chosen[kDegreesDecision] =
          copies && elite_[s.anchor][kDegreesDecision] == choice;
      s.mate_valid[kDegreesDecision] = s.mate >= 0;
      s.mate_chosen[kDegreesDecision] = s.mate >= 0 && mate_tuple == choice;
      s.uniform[kDegreesDecision] = 1.0f / t;
    }
    // Tabulate the later decisions for the sampled tuples and the elite's.
    rows_.clear();
    row_of_.clear();
    for (SampledPlan& s : out) s.row = RowOf(s.a[kDegreesDecision]);
    for (const Decisions& e : imitated_) RowOf(e[kDegreesDecision]);
    Tabulate(forward_);
    const int c = net_.choices();
    int novel = 0;
    for (size_t b = 0; b < out.size(); ++b) {
      SampledPlan& s = out[b];
      for (int i = 1; i < decisions_; ++i) {
        const uint64_t bits = space_.MaskBits(i, s.a);
        const float* p =
            forward_.table_p.data() + (s.row * slots_ + SlotOf(i, s.a)) * c;
        // An elite plan's value of decision i, as it applies to this plan
        // (-1: none, or not valid here).
        auto value_of = [&](int elite) {
          if (elite < 0 || elite >= k) return -1;
          int v = elite_[elite][i];
          if (i == kBatchDecision &&
              elite_[elite][kDegreesDecision] != s.a[kDegreesDecision]) {
            v = TranslateBatch(v, elite_[elite][kDegreesDecision],
                               s.a[kDegreesDecision]);
          }
          return v >= 0 && v < c && ((bits >> v) & 1) ? v : -1;
        };
        const int anchor_value = value_of(s.anchor);
        const int mate_value = value_of(s.mate);
        const int valid = std::max(1, __builtin_popcountll(bits));
        int choice = -1;
        if (u(rng_) < epsilon_) {
          choice = SampleBit(bits, rng_);
        } else if (anchor_value >= 0 &&
                   u(rng_) < forward_.gate_p[s.gate_row * decisions_ + i]) {
          choice = anchor_value;
        } else if (mate_value >= 0 && u(rng_) < forward_.cross_p[i]) {
          choice = mate_value;
        } else {
          double mass = 0;
          for (int v = 0; v < c; ++v) {
            if ((bits >> v) & 1) mass += p[v];
          }
          const double y = u(rng_) * mass;
          double acc = 0;
          for (int v = 0; v < c; ++v) {
            if (!((bits >> v) & 1)) continue;
            choice = v;  // the last valid choice absorbs rounding
            acc += p[v];
            if (y < acc) break;
          }
        }
        s.a[i] = choice;
        s.anchor_valid[i] = anchor_value >= 0;
        s.anchor_chosen[i] = anchor_value >= 0 && choice == anchor_value;
        s.mate_valid[i] = mate_value >= 0;
        s.mate_chosen[i] = mate_value >= 0 && choice == mate_value;
        s.uniform[i] = 1.0f / valid;
      }
      s.novel = is_new(s.a);
      if (s.novel && ++novel == want) {
        out.resize(b + 1);
        break;
      }
    }
    return out;
  }

  // Behaviour cloning of the elite (the Megatron plan and any warm-start plans)
  // before the first sample, so that the search starts around the known good
  // plans.
  void Imitate(int steps) {
    if (options_.learning_rate <= 0 || imitated_.empty() || steps <= 0) return;
    for (int k = 0; k < steps; ++k) {
      rows_.clear();
      row_of_.clear();
      for (const Decisions& e : imitated_) RowOf(e[kDegreesDecision]);
      Forward f;
      Encode(f);
      Tabulate(f);
      TableGrads g = ZeroGrads(f);
      AddGenerativeGrad(imitated_, -1.0 / (decisions_ * imitated_.size()), g);
      Backward(f, g);
    }
  }

  // One policy-gradient step on the plans of the last Draw call that were
  // evaluated, plus self-imitation of the elite. Returns the mean entropy.
  double Update(const std::vector<SampledPlan>& samples,
                const std::vector<double>& rewards) {
    // Fewer than two novel plans carry no ranking.
    if (options_.learning_rate <= 0 || samples.size() < 2) return 0;
    const int n = static_cast<int>(samples.size());
    const std::vector<float> advantage = RankAdvantages(rewards);
    // Entropy weights: the share of samples that use each (tuple, slot) row
    // and each anchor.
    std::vector<float> slot_share(rows_.size() * slots_, 0.0f);
    std::vector<float> anchor_share(elite_.size() + 1, 0.0f);
    for (const SampledPlan& s : samples) {
      for (int i = 1; i < decisions_; ++i)
        slot_share[s.row * slots_ + SlotOf(i, s.a)] += 1.0f / n;
      if (s.anchor >= 0) anchor_share[s.anchor] += 1.0f / n;
    }
    std::vector<double> old_logp(n);
    double entropy = 0;
    const int epochs = std::max(1, options_.ppo_epochs);
    for (int epoch = 0; epoch < epochs; ++epoch) {
      if (epoch > 0) {  // PPO: re-run the network after each step
        Encode(forward_);
        Tabulate(forward_);
      }
      const Forward& f = forward_;
      TableGrads g = ZeroGrads(f);
      for (int b = 0; b < n; ++b) {
        // Loss -mean(A logp) (REINFORCE) or PPO's -mean(min(r A, clip(r) A)),
        // r = exp(logp - old logp): its gradient is -r A / n where the
        // unclipped term is the minimum, else 0.
        double coef = -advantage[b] / n;
        if (epochs > 1) {
          const double logp = SampleLogProb(f, samples[b], 0, nullptr);
          if (epoch == 0) old_logp[b] = logp;
          const double r = std::exp(logp - old_logp[b]);
          const double clipped =
              std::clamp(r, 1 - options_.ppo_clip, 1 + options_.ppo_clip);
          coef = r * advantage[b] <= clipped * advantage[b] ? coef * r : 0.0;
        }
        SampleLogProb(f, samples[b], coef, &g);
      }
      // Entropy bonus on the generative distributions the samples were drawn
      // from.
      const double beta = -options_.entropy_coef;
      entropy =
          AddEntropyGrad(f.table_p, f.table_lp, slot_share, beta, g.table);
      if (!f.deg_anchor_p.empty()) {
        entropy += AddEntropyGrad(f.deg_anchor_p, f.deg_anchor_lp, anchor_share,
                                  beta, g.deg_anchor);
      } else {
        entropy += AddEntropyGrad(f.deg_p, f.deg_lp, {1.0f}, beta, g.deg);
      }
      if (options_.self_imitation_coef > 0 && !imitated_.empty()) {
        // Self-imitation trains the generative heads only: imitating the elite
        // through the copy path would just teach the gates to copy, collapsing
        // the search onto the elite.
        AddGenerativeGrad(
            imitated_,
            -options_.self_imitation_coef / (decisions_ * imitated_.size()), g);
      }
      Backward(f, g);
    }
    return entropy;
  }

 private:
  static int Pick(const float* p, int n, double x) {
    double acc = 0;
    for (int i = 0; i < n; ++i) {
      acc += p[i];
      if (x < acc) return i;
    }
    return n - 1;
  }

  // Centred-rank advantages in [-1, 1] (ties share their mean rank): robust
  // to the scale gap between infeasible penalties and feasible rewards; the
  // batch acts as the baseline.
  static std::vector<float> RankAdvantages(const std::vector<double>& rewards) {
    const int n = static_cast<int>(rewards.size());
    std::vector<int> order(n);
    for (int i = 0; i < n; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return rewards[a] < rewards[b]; });
    std::vector<float> adv(n, 0.0f);
    for (int i = 0; i < n;) {
      int j = i;
      while (j + 1 < n && rewards[order[j + 1]] == rewards[order[i]]) ++j;
      const double rank = 0.5 * (i + j);
      for (int k = i; k <= j; ++k) {
        adv[order[k]] =
            n > 1 ? static_cast<float>(2.0 * rank / (n - 1) - 1.0) : 0.0f;
      }
      i = j + 1;
    }
    return adv;
  }

  int TranslateBatch(int value, int from_tuple, int to_tuple) const {
    return policy::TranslateBatch(value, space_.TupleDegrees(from_tuple),
                                  space_.TupleDegrees(to_tuple));
  }

  // Degree tuples the network scores: all of them, or in a space of more
  // than kMaxTupleCandidates (a joint space has hundreds of thousands) a
  // subset drawn per iteration: the elite's tuples and uniform others. The
  // policy's distribution over tuples is then over the subset (a sampled
  // softmax); its features, keys and tables stay that size.
  int NumCandidates() const {
    return subset_ ? static_cast<int>(candidates_.size())
                   : space_.NumChoices(kDegreesDecision);
  }
  int CandidateTuple(int position) const {
    return subset_ ? candidates_[position] : position;
  }
  int Position(int tuple) const {
    return subset_ ? candidate_position_.at(tuple) : tuple;
  }
  void ChooseCandidates() {
    const int t = space_.NumChoices(kDegreesDecision);
    std::set<int> chosen;
    for (const Decisions& e : imitated_) chosen.insert(e[kDegreesDecision]);
    while (static_cast<int>(chosen.size()) < kMaxTupleCandidates)
      chosen.insert(static_cast<int>(rng_() % t));
    candidates_.assign(chosen.begin(), chosen.end());
    candidate_position_.clear();
    std::vector<float> df, pf;
    for (size_t i = 0; i < candidates_.size(); ++i) {
      candidate_position_[candidates_[i]] = static_cast<int>(i);
      for (float x : space_.DegreeFeatures(candidates_[i])) df.push_back(x);
      for (float x : space_.PoolFeatures(candidates_[i])) pf.push_back(x);
    }
    const int64_t c = static_cast<int64_t>(candidates_.size());
    degree_features_ = FloatTensor(df, {c, PlanSpace::kDegreeFeatures});
    if (space_.disaggregated()) {
      pool_features_ = FloatTensor(pf, {c, PlanSpace::kPoolFeatures});
      distance_features_ = torch::cat({degree_features_, pool_features_}, 1);
    } else {
      distance_features_ = degree_features_;
    }
  }

  int RowOf(int tuple) {
    auto [it, inserted] =
        row_of_.emplace(tuple, static_cast<int>(rows_.size()));
    if (inserted) rows_.push_back(tuple);
    return it->second;
  }

  // Encoder over [context, elite...], anchor and gate heads, and the
  // distribution over degree tuples.
  void Encode(Forward& f) {
    ScopedSeconds timer(&network_seconds_);
    PolicyNet& w = net_;
    const int d = w.d();
    torch::Tensor x = torch::addmm(w.ctx_b, context_, w.ctx_w);  // [1, d]
    if (elite_tokens_.defined()) {
      torch::Tensor tokens = torch::addmm(w.elite_b, elite_tokens_, w.elite_w);
      if (elite_pool_.defined())
        tokens = tokens + torch::matmul(elite_pool_, w.elite_pool_w);
      if (elite_prefill_.defined())
        tokens = tokens + torch::matmul(elite_prefill_, w.elite_prefill_w);
      x = torch::cat({x, tokens});
    }
    const int64_t s = x.size(0);
    const int dh = d / kHeads;
    const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
    for (const PolicyNet::Layer& l : w.layers()) {
      const torch::Tensor h = torch::layer_norm(x, {d}, l.ln1_w, l.ln1_b);
      const torch::Tensor qkv = torch::addmm(l.qkv_b, h, l.qkv_w)
                                    .view({s, 3, kHeads, dh})
                                    .permute({1, 2, 0, 3});  // [3, H, S, dh]
      const torch::Tensor att =
          torch::softmax(torch::bmm(qkv[0], qkv[1].transpose(1, 2)) * scale,
                         -1);  // [H, S, S]
      const torch::Tensor o =
          torch::bmm(att, qkv[2]).permute({1, 0, 2}).reshape({s, d});
      x = x + torch::addmm(l.out_b, o, l.out_w);
      const torch::Tensor h2 = torch::layer_norm(x, {d}, l.ln2_w, l.ln2_b);
      x = x + torch::addmm(l.ff2_b,
                           torch::relu(torch::addmm(l.ff1_b, h2, l.ff1_w)),
                           l.ff2_w);
    }
    x = torch::layer_norm(x, {d}, w.lnf_w, w.lnf_b);
    f.context = x.slice(0, 0, 1);
    if (s > 1) {
      const torch::Tensor e = x.slice(0, 1);  // [K, d]
      // [K + 1]: the last entry is the free choice (no anchor), so the policy
      // learns how much to sample away from the elite.
      f.anchor_logp = torch::log_softmax(
          torch::cat({torch::addmm(w.anchor_b, e, w.anchor_w).view(-1),
                      w.free_anchor}),
          0);
      f.gate = torch::sigmoid(torch::addmm(w.gate_b, e, w.gate_w))
                   .view({-1, kNumAggregatedDecisions});  // [2K, D]
      f.cross = torch::sigmoid(w.cross_b);
      if (space_.disaggregated()) {  // the prefill dims' gates follow
        f.gate = torch::cat(
            {f.gate,
             torch::sigmoid(torch::addmm(w.prefill_gate_b, e, w.prefill_gate_w))
                 .view({-1, simulator::kNumOpKinds})},
            1);
        f.cross = torch::cat({f.cross, torch::sigmoid(w.prefill_cross_b)});
      }
      f.anchor_p = ToVector(f.anchor_logp.exp());
      f.gate_p = ToVector(f.gate);
      f.cross_p = ToVector(f.cross);
    } else {
      f.anchor_logp = f.gate = f.cross = torch::Tensor();
      f.anchor_p.clear();
      f.gate_p.clear();
      f.cross_p.clear();
    }
    torch::Tensor key1 = torch::addmm(w.key1_b, degree_features_, w.key1_w);
    if (pool_features_.defined())
      key1 = key1 + torch::matmul(pool_features_, w.key1_pool_w);
    f.keys = torch::addmm(w.key2_b, torch::tanh(key1), w.key2_w);  // [T, d]
    f.deg_logp = torch::log_softmax(
        torch::matmul(f.keys, torch::matmul(f.context, w.query_w).t())
                .view(-1) *
            (1.0 / std::sqrt(static_cast<double>(d))),
        0);
    f.deg_lp = ToVector(f.deg_logp);
    f.deg_p = ToVector(f.deg_logp.exp());
    f.deg_cdf = Cumulative(f.deg_p, 1);
    if (!elite_.empty()) {
      std::vector<int64_t> tuples;
      for (const Decisions& e : elite_)
        tuples.push_back(Position(e[kDegreesDecision]));
      const torch::Tensor distance =
          tuple_distance_.defined()
              ? tuple_distance_.index_select(0, LongTensor(tuples))
              : torch::cdist(
                    distance_features_.index_select(0, LongTensor(tuples)),
                    distance_features_)
                    .pow(2);  // [K, T]
      f.deg_anchor_logp = torch::cat(
          {torch::log_softmax(
               f.deg_logp.unsqueeze(0) - torch::softplus(w.locality) * distance,
               1),
           f.deg_logp.unsqueeze(0)});  // [K + 1, T], the free choice last
      f.deg_anchor_lp = ToVector(f.deg_anchor_logp);
      f.deg_anchor_p = ToVector(f.deg_anchor_logp.exp());
      f.deg_anchor_cdf = Cumulative(f.deg_anchor_p, elite_.size() + 1);
    } else {
      f.deg_anchor_logp = torch::Tensor();
      f.deg_anchor_p.clear();
      f.deg_anchor_lp.clear();
      f.deg_anchor_cdf.clear();
    }
  }

  // Per row of `p` ([rows, T] probabilities), the running sums.
  static std::vector<float> Cumulative(std::vector<float> cdf, size_t rows) {
    const size_t t = cdf.size() / std::max<size_t>(1, rows);
    for (size_t r = 0; r < rows; ++r) {
      for (size_t i = 1; i < t; ++i) cdf[r * t + i] += cdf[r * t + i - 1];
    }
    return cdf;
  }

  // Generative log-probabilities of every later decision for the tuples in
  // rows_: [U, slots, C], invalid choices at ~-1e9.
  void Tabulate(Forward& f) {
    ScopedSeconds timer(&network_seconds_);
    PolicyNet& w = net_;
    std::vector<int64_t> positions;
    for (int tuple : rows_) positions.push_back(Position(tuple));
    const torch::Tensor rows = LongTensor(positions);
    const int64_t u = rows.size(0);
    const torch::Tensor z =
        torch::tanh(torch::addmm(w.z_b, f.keys.index_select(0, rows), w.zk_w) +
                    torch::matmul(f.context, w.zs_w));  // [U, d]
    torch::Tensor heads = torch::addmm(w.head_b, z, w.head_w);
    if (space_.disaggregated()) {
      heads = torch::cat(
          {heads, torch::addmm(w.prefill_head_b, z, w.prefill_head_w)}, 1);
    }
    const torch::Tensor logits =
        heads
            .view({u, space_.disaggregated() ? kNumHeads : kAggregatedHeads,
                   w.choices()})
            .index_select(1, slot_head_);
    f.table_logp =
        torch::log_softmax(logits.masked_fill(InvalidChoices(), -1e9), 2);
    f.table_lp = ToVector(f.table_logp);
    f.table_p = ToVector(f.table_logp.exp());
  }

  // Invalid choices of every slot of the tuples in rows_, [U, slots, C]:
  // taken from the masks per forward pass, since a joint space has too many
  // tuples to tabulate them all.
  torch::Tensor InvalidChoices() const {
    const int c = net_.choices();
    std::vector<uint8_t> invalid(rows_.size() * slots_ * c, 1);
    for (size_t r = 0; r < rows_.size(); ++r) {
      Decisions a{};
      a[kDegreesDecision] = rows_[r];
      for (int s = 0; s < slots_; ++s) {
        const int decision = DecisionOfSlot(s);
        if (decision == kBatchDecision)
          a[kMicroBatchesDecision] = s - (kBatchDecision - 1);
        const uint64_t bits = space_.MaskBits(decision, a);
        for (int k = 0; k < c; ++k) {
          if ((bits >> k) & 1) invalid[(r * slots_ + s) * c + k] = 0;
        }
      }
    }
    return torch::from_blob(invalid.data(),
                            {static_cast<int64_t>(rows_.size()), slots_, c},
                            torch::kUInt8)
        .to(torch::kBool);
  }

  static std::vector<float> ToVector(const torch::Tensor& t) {
    const torch::Tensor c = t.detach().contiguous();
    const float* p = c.data_ptr<float>();
    return std::vector<float>(p, p + c.numel());
  }

  // Index into Forward::table_p of decision i >= 1 of plan `a`, whose tuple
  // is tabulated in `row`.
  int TableIndex(int row, const Decisions& a, int i) const {
    return (row * slots_ + SlotOf(i, a)) * net_.choices() + a[i];
  }

  // Log-probability of a sample under the distribution it was drawn from:
  // the anchor, then per decision the anchor / mate / generative / uniform
  // mixture of decision_mixture.h. With `grads`, adds coef *
  // d(log-probability)/d(table entries): a sample touches one entry per
  // decision, so this is a few dozen flops in plain C++ rather than a graph of
  // gathers for LibTorch to build and differentiate.
  double SampleLogProb(const Forward& f, const SampledPlan& s, double coef,
                       TableGrads* grads) const {
    const bool anchored = !f.anchor_p.empty();
    const int t = NumCandidates();
    double logp = 0;
    if (anchored) {
      logp += std::log(std::max(f.anchor_p[s.anchor], 1e-30f));
      if (grads != nullptr) grads->anchor[s.anchor] += coef;
    }
    for (int i = 0; i < decisions_; ++i) {
      int index;
      const std::vector<float>* gen_p;
      std::vector<float>* gen_grad = nullptr;
      if (i == kDegreesDecision) {
        index = Position(s.a[i]) + (anchored ? s.anchor * t : 0);
        gen_p = anchored ? &f.deg_anchor_p : &f.deg_p;
        if (grads != nullptr)
          gen_grad = anchored ? &grads->deg_anchor : &grads->deg;
      } else {
        index = TableIndex(s.row, s.a, i);
        gen_p = &f.table_p;
        if (grads != nullptr) gen_grad = &grads->table;
      }
      const int gate_index = s.gate_row * decisions_ + i;
      DecisionMixture m;
      m.generative = (*gen_p)[index];
      m.gate = anchored ? f.gate_p[gate_index] : 0.0;
      m.cross = s.mate >= 0 ? f.cross_p[i] : 0.0;
      m.anchor_valid = s.anchor_valid[i];
      m.is_anchor_value = s.anchor_chosen[i];
      m.mate_valid = s.mate_valid[i];
      m.is_mate_value = s.mate_chosen[i];
      m.uniform = s.uniform[i];
      const MixtureTerms terms = EvaluateMixture(m, epsilon_);
      logp += terms.log_p;
      if (grads == nullptr) continue;
      (*gen_grad)[index] += coef * terms.d_log_generative;
      if (anchored) grads->gate[gate_index] += coef * terms.d_gate;
      if (s.mate >= 0) grads->cross[i] += coef * terms.d_cross;
    }
    return logp;
  }

  // Adds coef * d/d(tables) of the generative log-likelihood of `plans`
  // (degree tuple without anchor, then every later decision).
  void AddGenerativeGrad(const std::vector<Decisions>& plans, double coef,
                         TableGrads& grads) const {
    for (const Decisions& a : plans) {
      grads.deg[Position(a[kDegreesDecision])] += coef;
      const int row = row_of_.at(a[kDegreesDecision]);
      for (int i = 1; i < decisions_; ++i)
        grads.table[TableIndex(row, a, i)] += coef;
    }
  }

  // Adds coef * d/d(log p) of the entropy of each row of a distribution
  // (probabilities p, log-probabilities lp, [rows, n]) times the row's weight;
  // returns the weighted entropy.
  static double AddEntropyGrad(const std::vector<float>& p,
                               const std::vector<float>& lp,
                               const std::vector<float>& row_weight,
                               double coef, std::vector<float>& grad) {
    const size_t n = p.size() / std::max<size_t>(1, row_weight.size());
    double entropy = 0;
    for (size_t r = 0; r < row_weight.size(); ++r) {
      if (row_weight[r] == 0) continue;
      for (size_t j = r * n; j < (r + 1) * n; ++j) {
        if (p[j] <= 0) continue;  // masked: no mass, no gradient
        entropy -= row_weight[r] * p[j] * lp[j];
        grad[j] -= coef * row_weight[r] * p[j] * (lp[j] + 1);
      }
    }
    return entropy;
  }

  TableGrads ZeroGrads(const Forward& f) const {
    TableGrads g;
    g.anchor.assign(f.anchor_p.size(), 0.0f);
    g.gate.assign(f.gate_p.size(), 0.0f);
    g.cross.assign(f.cross_p.size(), 0.0f);
    g.deg.assign(f.deg_p.size(), 0.0f);
    g.deg_anchor.assign(f.deg_anchor_p.size(), 0.0f);
    g.table.assign(f.table_p.size(), 0.0f);
    return g;
  }

  // Backpropagates the table gradients through the network (one autograd
  // call) and takes an Adam step.
  void Backward(const Forward& f, const TableGrads& g) {
    ScopedSeconds timer(&network_seconds_);
    std::vector<torch::Tensor> roots, grads;
    auto add = [&](const torch::Tensor& root, const std::vector<float>& grad) {
      if (!root.defined() || grad.empty()) return;
      roots.push_back(root);
      grads.push_back(FloatTensor(grad, root.sizes().vec()));
    };
    add(f.anchor_logp, g.anchor);
    add(f.gate, g.gate);
    add(f.cross, g.cross);
    add(f.deg_logp, g.deg);
    add(f.deg_anchor_logp, g.deg_anchor);
    add(f.table_logp, g.table);
    net_.ZeroGrad();
    torch::autograd::backward(roots, grads);
    net_.Step(options_.learning_rate, space_.disaggregated());
  }

  RlPolicyOptions options_;
  const PlanSpace& space_;
  PolicyNet net_;
  std::mt19937_64& rng_;
  // Decisions taken (PlanSpace::num_decisions()) and table slots per tuple.
  const int decisions_;
  const int slots_;
  torch::Tensor context_;
  torch::Tensor degree_features_;
  // Aggregated spaces: [T, T] squared feature distances. Disaggregated:
  // undefined; the degree and pool features of every tuple, [T, F], and the
  // pool features alone.
  torch::Tensor tuple_distance_;
  torch::Tensor distance_features_, pool_features_;
  torch::Tensor slot_head_;  // [slots] head of each slot
  // See NumCandidates: whether the tuples are a subset, and which.
  bool subset_ = false;
  std::vector<int> candidates_;
  std::unordered_map<int, int> candidate_position_;
  torch::Tensor elite_tokens_;
  torch::Tensor elite_pool_;         // disaggregated: the elite's pool features
  torch::Tensor elite_prefill_;      // disaggregated: their prefill dims
  std::vector<Decisions> elite_;     // anchors: the elite behind elite_tokens_
  std::vector<Decisions> imitated_;  // the elite, for self-imitation
  // Degree tuples tabulated in the current forward pass, and their rows.
  std::vector<int> rows_;
  std::unordered_map<int, int> row_of_;
  Forward forward_;
  double epsilon_ = 0;
  double network_seconds_ = 0;
};

void SetTorchThreadsOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    at::set_num_threads(1);
    try {
      at::set_num_interop_threads(1);
    } catch (const std::exception& e) {
      LOG(WARNING) << "could not set LibTorch inter-op threads: " << e.what();
    }
  });
}

Policy::Policy(const RlPolicyOptions& options, const PlanSpace& space,
               std::mt19937_64& rng)
    : impl_(std::make_unique<Impl>(options, space, rng)) {}
Policy::~Policy() = default;

std::string Policy::SaveWeights() const { return impl_->net().Save(); }
absl::StatusOr<bool> Policy::LoadWeights(const std::string& bytes) {
  return impl_->net().Load(bytes);
}
void Policy::SetElite(const std::vector<EliteEntry>& entries) {
  impl_->SetElite(entries);
}
void Policy::Imitate(int steps) { impl_->Imitate(steps); }
std::vector<SampledPlan> Policy::Draw(
    int n, int want, const std::function<bool(const Decisions&)>& is_new) {
  return impl_->Draw(n, want, is_new);
}
double Policy::Update(const std::vector<SampledPlan>& samples,
                      const std::vector<double>& rewards) {
  return impl_->Update(samples, rewards);
}
double Policy::epsilon() const { return impl_->epsilon(); }
void Policy::set_epsilon(double epsilon) { impl_->set_epsilon(epsilon); }
double Policy::network_seconds() const { return impl_->network_seconds(); }

}  // namespace shardplan::policy::rl
