// The Learn-to-Shard RL searcher (policy/rl_searcher.h). The only policy/ file
// that includes LibTorch. Every random number (weight initialisation, sampling)
// comes from one std::mt19937_64 seeded with options.seed, and LibTorch runs on
// one intra-op thread, so a search is deterministic for a seed whatever the
// evaluation pool's size.
#include "policy/rl_searcher.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <mutex>
#include <random>
#include <sstream>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "policy/elite_history.h"
#include "policy/internal/search_run.h"
#include "policy/plan_space.h"
#include "simulator/status_macros.h"

namespace shardplan::policy {
namespace {

using internal::SearchRun;

constexpr int kContextFeatures = 32;
constexpr int kPlanFeatures =
    PlanSpace::kDegreeFeatures + simulator::kNumOpKinds * 5 + 3 + 2 + 3;
constexpr int kHeads = 4;

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

float Lg(double x, double scale) {
  return static_cast<float>(std::log2(std::max(1.0, x)) / scale);
}

std::vector<float> ContextFeatures(const simulator::Problem& p) {
  const simulator::ModelDims& m = p.model;
  const simulator::HardwareDims& h = p.cluster.hardware;
  const simulator::WorkloadDims& w = p.workload;
  std::vector<float> f = {
      Lg(m.hidden, 16),
      Lg(m.layers, 8),
      Lg(m.heads, 8),
      Lg(m.kv_heads, 8),
      Lg(m.head_dim, 8),
      Lg(m.intermediate, 16),
      Lg(m.vocab, 18),
      Lg(1 + m.experts, 9),
      Lg(1 + m.experts_per_token, 5),
      Lg(1 + m.moe_intermediate, 16),
      static_cast<float>(m.shared_experts) / 4.0f,
      Lg(1 + m.first_k_dense, 5),
      m.is_moe() ? 1.0f : 0.0f,
      m.is_mla() ? 1.0f : 0.0f,
      static_cast<float>(std::log10(std::max(1.0, m.TotalParams())) / 13.0),
      static_cast<float>(std::log10(std::max(1.0, m.ActiveParams())) / 13.0),
      Lg(p.cluster.num_gpus, 11),
      Lg(p.cluster.gpus_per_node, 4),
      Lg(p.cluster.num_nodes(), 8),
      static_cast<float>(h.hbm_bytes / 1e11),
      static_cast<float>(h.hbm_bytes_per_s / 5e12),
      static_cast<float>(h.intra_node_bytes_per_s / 1e12),
      static_cast<float>(h.inter_node_bytes_per_s / 1e11),
      static_cast<float>(h.peak_flops_per_s[0] / 2e15),
      Lg(w.input_tokens, 16),
      Lg(w.output_tokens, 16),
      Lg(1 + w.concurrency, 13),
      w.max_ttft_s > 0 ? 1.0f : 0.0f,
      w.max_tpot_s > 0 ? 1.0f : 0.0f,
      static_cast<float>(simulator::BytesPerElement(w.weight_dtype) / 2),
      static_cast<float>(simulator::BytesPerElement(w.kv_cache_dtype) / 2),
      1.0f};
  f.resize(kContextFeatures, 0.0f);
  for (float& x : f) {
    if (!std::isfinite(x)) x = 0;
  }
  return f;
}

// The policy network. Shapes depend only on RlOptions and the fixed MaxChoices
// of each decision, never on the problem, so weights transfer across problems.
struct PolicyNetImpl : torch::nn::Module {
  explicit PolicyNetImpl(const RlOptions& o)
      : d(o.d_model),
        context_proj(register_module("context_proj",
                                     torch::nn::Linear(kContextFeatures, d))),
        elite_proj(
            register_module("elite_proj", torch::nn::Linear(kPlanFeatures, d))),
        encoder(register_module(
            "encoder",
            torch::nn::TransformerEncoder(torch::nn::TransformerEncoderOptions(
                torch::nn::TransformerEncoderLayerOptions(d, kHeads)
                    .dim_feedforward(2 * d)
                    .dropout(0.0),
                std::max(1, o.encoder_layers))))),
        summary(register_module("summary", torch::nn::Linear(2 * d, d))),
        degree_key(register_module(
            "degree_key", torch::nn::Sequential(
                              torch::nn::Linear(PlanSpace::kDegreeFeatures, d),
                              torch::nn::Tanh(), torch::nn::Linear(d, d)))),
        degree_query_head(
            register_module("degree_query_head", torch::nn::Linear(d, d))),
        cell(register_module(
            "cell", torch::nn::GRUCell(torch::nn::GRUCellOptions(d, d)))),
        copy_query(register_module("copy_query", torch::nn::Linear(d, d))),
        copy_key(register_module("copy_key", torch::nn::Linear(d, d))),
        copy_gate(
            register_module("copy_gate", torch::nn::Linear(d, kNumDecisions))) {
    for (int i = 1; i < kNumDecisions; ++i) {
      heads.push_back(register_module(absl::StrCat("head", i),
                                      torch::nn::Linear(d, MaxChoices(i))));
      embeddings.push_back(
          register_module(absl::StrCat("embedding", i),
                          torch::nn::Embedding(MaxChoices(i), d)));
    }
  }

  int d;
  torch::nn::Linear context_proj;
  torch::nn::Linear elite_proj;
  torch::nn::TransformerEncoder encoder;
  torch::nn::Linear summary;
  torch::nn::Sequential degree_key;
  torch::nn::Linear degree_query_head;
  torch::nn::GRUCell cell;
  // Pointer/copy mechanism over the elite: the decoder state attends over the
  // per-elite encoder outputs (query . key) and a per-decision gate mixes
  // "copy the attended elite plans' value" with the generative head.
  torch::nn::Linear copy_query;
  torch::nn::Linear copy_key;
  torch::nn::Linear copy_gate;           // [d] -> one gate logit per decision
  std::vector<torch::nn::Linear> heads;  // decision i -> heads[i - 1]
  std::vector<torch::nn::Embedding> embeddings;
};
TORCH_MODULE(PolicyNet);

// Deterministic initialisation from our own generator (LibTorch's global
// generator is shared by concurrent searches). Output heads start at zero: the
// initial policy is uniform over the valid choices of each decision.
void InitWeights(PolicyNet& net, std::mt19937_64& rng) {
  torch::NoGradGuard no_grad;
  for (auto& item : net->named_parameters()) {
    torch::Tensor& p = item.value();
    const std::string& name = item.key();
    std::vector<float> values(p.numel(), 0.0f);
    const bool is_head =
        name.rfind("head", 0) == 0 || name.rfind("degree_query_head", 0) == 0;
    if (p.dim() >= 2 && !is_head) {
      const double a = 1.0 / std::sqrt(static_cast<double>(p.size(1)));
      std::uniform_real_distribution<double> u(-a, a);
      for (float& v : values) v = static_cast<float>(u(rng));
    } else if (p.dim() == 1 && name.find("norm") != std::string::npos &&
               name.find("weight") != std::string::npos) {
      std::fill(values.begin(), values.end(), 1.0f);
    }
    if (name == "copy_gate.bias") {
      // The initial policy copies an elite value with probability ~0.12 per
      // decision (sigmoid(-2)); -1 converged faster but stalled on
      // deepseek-v3@128, -3 was noisier (bench, 5 seeds).
      std::fill(values.begin(), values.end(), -2.0f);
    }
    p.copy_(torch::from_blob(values.data(), p.sizes(), torch::kFloat32));
  }
}

std::array<float, kPlanFeatures> PlanFeatures(const PlanSpace& space,
                                              const Decisions& d,
                                              const ScoredPlan& s,
                                              float norm_reward, float rank) {
  std::array<float, kPlanFeatures> f{};
  int k = 0;
  for (float x : space.DegreeFeatures(d[kDegreesDecision])) f[k++] = x;
  for (int o = 0; o < simulator::kNumOpKinds; ++o)
    f[k + o * 5 + d[kFirstOpDecision + o]] = 1;
  k += simulator::kNumOpKinds * 5;
  f[k + d[kMicroBatchesDecision]] = 1;
  k += 3;
  const int batch = s.evaluation.batch_size;
  f[k++] = Lg(batch, 12);
  f[k++] = s.plan.batch_size == 0 ? 1.0f : 0.0f;
  f[k++] = norm_reward;
  f[k++] = rank;
  f[k++] = s.evaluation.feasible ? 1.0f : 0.0f;
  return f;
}

class Policy {
 public:
  Policy(const RlOptions& options, const PlanSpace& space, std::mt19937_64& rng)
      : options_(options),
        space_(space),
        net_(options),
        rng_(rng),
        epsilon_(options.explore_epsilon) {
    InitWeights(net_, rng_);
    const std::vector<float> ctx = ContextFeatures(space.model().problem());
    context_ = torch::from_blob(const_cast<float*>(ctx.data()),
                                {1, 1, kContextFeatures}, torch::kFloat32)
                   .clone();
    const int t = space.NumChoices(kDegreesDecision);
    std::vector<float> df;
    df.reserve(t * PlanSpace::kDegreeFeatures);
    for (int i = 0; i < t; ++i) {
      for (float x : space.DegreeFeatures(i)) df.push_back(x);
    }
    degree_features_ =
        torch::from_blob(df.data(), {t, PlanSpace::kDegreeFeatures},
                         torch::kFloat32)
            .clone();
    if (options_.learning_rate > 0) {
      optimizer_ = std::make_unique<torch::optim::Adam>(
          net_->parameters(),
          torch::optim::AdamOptions(options_.learning_rate));
    }
  }

  PolicyNet& net() { return net_; }
  double epsilon() const { return epsilon_; }
  void set_epsilon(double e) { epsilon_ = e; }

  // Elite tokens for this iteration (empty when the ablation disables them).
  void SetElite(const EliteHistory& elite) {
    elite_tokens_ = torch::Tensor();
    elite_decisions_.clear();
    if (!options_.use_elite_tokens || elite.empty()) return;
    const auto& entries = elite.entries();
    for (const EliteEntry& e : entries) elite_decisions_.push_back(e.decisions);
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
    elite_tokens_ = torch::from_blob(buf.data(),
                                     {static_cast<int64_t>(entries.size()), 1,
                                      kPlanFeatures},
                                     torch::kFloat32)
                        .clone();
  }

  // Samples `n` plans (no gradient).
  std::vector<Decisions> Sample(int n) {
    torch::InferenceMode guard;
    std::vector<Decisions> actions(n);
    Run(actions, /*sample=*/true);
    return actions;
  }

  // Behaviour cloning of the elite (the Megatron plan and any warm-start plans)
  // before the first sample, so that the search starts around the known good
  // plans.
  void Imitate(const EliteHistory& elite, int steps) {
    if (optimizer_ == nullptr || elite.empty() || steps <= 0) return;
    std::vector<Decisions> plans;
    for (const EliteEntry& e : elite.entries()) plans.push_back(e.decisions);
    for (int k = 0; k < steps; ++k) {
      const torch::Tensor loss =
          -Run(plans, /*sample=*/false).gen_logp.mean() / kNumDecisions;
      optimizer_->zero_grad();
      loss.backward();
      torch::nn::utils::clip_grad_norm_(net_->parameters(), 1.0);
      optimizer_->step();
    }
  }

  // One policy-gradient update on the sampled plans and their rewards, plus
  // self-imitation of the elite plans. Returns the mean entropy.
  double Update(const std::vector<Decisions>& actions,
                const std::vector<double>& rewards, const EliteHistory& elite) {
    if (optimizer_ == nullptr || actions.empty()) return 0;
    const int n = static_cast<int>(actions.size());
    // Centred-rank advantages in [-1, 1] (ties share their mean rank): robust
    // to the scale gap between infeasible penalties and feasible rewards; the
    // batch acts as the baseline.
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
    std::vector<Decisions> all = actions;
    const int num_elite = options_.self_imitation_coef > 0 ? elite.size() : 0;
    for (int i = 0; i < num_elite; ++i)
      all.push_back(elite.entries()[i].decisions);
    const torch::Tensor advantage =
        torch::from_blob(adv.data(), {n}, torch::kFloat32).clone();
    torch::Tensor old_logp;
    double entropy_mean = 0;
    for (int epoch = 0; epoch < std::max(1, options_.ppo_epochs); ++epoch) {
      const Decoded out = Run(all, /*sample=*/false);
      const torch::Tensor& entropy = out.entropy;
      const torch::Tensor logp_s = out.logp.slice(0, 0, n);
      torch::Tensor pg;
      if (options_.ppo_epochs > 1) {
        if (epoch == 0) old_logp = logp_s.detach();
        const torch::Tensor ratio = torch::exp(logp_s - old_logp);
        pg = -torch::min(ratio * advantage,
                         torch::clamp(ratio, 1 - options_.ppo_clip,
                                      1 + options_.ppo_clip) *
                             advantage)
                  .mean();
      } else {
        pg = -(logp_s * advantage).mean();
      }
      torch::Tensor loss =
          pg - options_.entropy_coef * entropy.slice(0, 0, n).mean();
      if (num_elite > 0) {
        // Self-imitation trains the generative head (and the shared decoder)
        // only: imitating the elite through the copy path would just teach the
        // gate to copy, collapsing the search onto the elite.
        loss = loss - options_.self_imitation_coef *
                          out.gen_logp.slice(0, n, n + num_elite).mean() /
                          kNumDecisions;
      }
      optimizer_->zero_grad();
      loss.backward();
      torch::nn::utils::clip_grad_norm_(net_->parameters(), 1.0);
      optimizer_->step();
      entropy_mean = entropy.slice(0, 0, n).mean().item<double>();
    }
    return entropy_mean;
  }

 private:
  struct Decoded {
    torch::Tensor logp;      // [n] sum over decisions of the policy's log-prob
    torch::Tensor entropy;   // [n] sum of the per-decision entropies
    torch::Tensor gen_logp;  // [n] the same without the copy path
  };

  // Encoder over [context, elite...] -> [1, d] summary; `elite_out` receives
  // the per-elite outputs [K, d] (undefined without elite tokens).
  torch::Tensor Encode(torch::Tensor& elite_out) {
    torch::Tensor tokens = net_->context_proj->forward(context_);  // [1, 1, d]
    if (elite_tokens_.defined()) {
      tokens =
          torch::cat({tokens, net_->elite_proj->forward(elite_tokens_)}, 0);
    }
    const torch::Tensor out = net_->encoder->forward(tokens);  // [S, 1, d]
    const torch::Tensor ctx = out[0];                          // [1, d]
    elite_out = out.size(0) > 1 ? out.slice(0, 1).squeeze(1) : torch::Tensor();
    const torch::Tensor rest =
        out.size(0) > 1 ? out.slice(0, 1).mean(0) : torch::zeros_like(ctx);
    return torch::tanh(net_->summary->forward(torch::cat({ctx, rest}, 1)));
  }

  // Autoregressive decoding. sample: fills `actions` by sampling; otherwise
  // teacher-forces `actions`. Returns (sum of log-probabilities [n], sum of
  // entropies [n], log-probabilities without the copy path [n]).
  Decoded Run(std::vector<Decisions>& actions, bool sample) {
    const int n = static_cast<int>(actions.size());
    torch::Tensor elite_out;
    const torch::Tensor h = Encode(elite_out);  // [1, d]
    const bool copy = elite_out.defined() && !elite_decisions_.empty();
    const int num_elite = static_cast<int>(elite_decisions_.size());
    torch::Tensor elite_keys;  // [K, d]
    if (copy) elite_keys = net_->copy_key->forward(elite_out);
    const double scale = std::sqrt(static_cast<double>(net_->d));
    std::vector<float> onehot_buf;
    torch::Tensor state = h.expand({n, h.size(1)});  // [n, d]
    torch::Tensor logp_sum = torch::zeros({n});
    torch::Tensor entropy_sum = torch::zeros({n});
    torch::Tensor gen_logp_sum = torch::zeros({n});
    const torch::Tensor keys =
        net_->degree_key->forward(degree_features_);  // [T, d]
    std::vector<int64_t> choice(n);
    std::vector<uint8_t> mask_buf;
    for (int i = 0; i < kNumDecisions; ++i) {
      torch::Tensor logits;
      int c_max = 0;
      if (i == kDegreesDecision) {
        logits =
            torch::matmul(net_->degree_query_head->forward(state), keys.t()) /
            std::sqrt(static_cast<double>(net_->d));
        c_max = static_cast<int>(keys.size(0));
      } else {
        logits = net_->heads[i - 1]->forward(state);
        c_max = MaxChoices(i);
        mask_buf.assign(static_cast<size_t>(n) * c_max, 0);
        for (int r = 0; r < n; ++r) {
          const uint64_t bits = space_.MaskBits(i, actions[r]);
          for (int c = 0; c < c_max; ++c)
            mask_buf[r * c_max + c] = (bits >> c) & 1 ? 0 : 1;
        }
        const torch::Tensor invalid =
            torch::from_blob(mask_buf.data(), {n, c_max}, torch::kUInt8)
                .to(torch::kBool);
        logits = logits.masked_fill(invalid, -1e9);
      }
      // The decision's distribution: generative head, mixed with the copy
      // distribution and then with the uniform distribution over the valid
      // choices. Log-probabilities and entropy are those of the final mixture,
      // so the update stays on-policy.
      torch::Tensor p = torch::softmax(logits, 1);  // [n, C]
      torch::Tensor valid;
      if (i == kDegreesDecision) {
        valid = torch::ones_like(p);
      } else {
        valid = torch::from_blob(mask_buf.data(), {n, c_max}, torch::kUInt8)
                    .to(torch::kFloat32)
                    .neg()
                    .add(1.0);
      }
      const torch::Tensor uniform = valid / valid.sum(1, /*keepdim=*/true);
      torch::Tensor p_gen = p;
      if (copy) {
        // Copy distribution: attention over the elite plans, each voting for
        // its own value of this decision, restricted to the values valid for
        // this row's prefix and renormalised. Rows where no attended elite
        // value is valid fall back to the generative head.
        const torch::Tensor attn = torch::softmax(
            torch::matmul(net_->copy_query->forward(state), elite_keys.t()) /
                scale,
            1);  // [n, K]
        onehot_buf.assign(static_cast<size_t>(num_elite) * c_max, 0.0f);
        for (int k = 0; k < num_elite; ++k) {
          const int v = elite_decisions_[k][i];
          if (v >= 0 && v < c_max) onehot_buf[k * c_max + v] = 1.0f;
        }
        const torch::Tensor onehot =
            torch::from_blob(onehot_buf.data(), {num_elite, c_max},
                             torch::kFloat32)
                .clone();
        const torch::Tensor votes = torch::matmul(attn, onehot) * valid;
        const torch::Tensor mass = votes.sum(1, /*keepdim=*/true);  // [n, 1]
        const torch::Tensor has = (mass > 1e-6).to(torch::kFloat32);
        const torch::Tensor gate =
            torch::sigmoid(net_->copy_gate->forward(state).select(1, i))
                .unsqueeze(1) *
            has;  // [n, 1]
        p = (1 - gate) * p + gate * votes / mass.clamp_min(1e-6);
      }
      if (epsilon_ > 0) {
        // Mixture with the uniform distribution over the valid choices
        // (exploration that stays on-policy).
        p = (1 - epsilon_) * p + epsilon_ * uniform;
        if (!sample) p_gen = (1 - epsilon_) * p_gen + epsilon_ * uniform;
      }
      const torch::Tensor logp = torch::log(p + 1e-12);
      if (sample) {
        const torch::Tensor pc = p.contiguous();
        const float* pd = pc.data_ptr<float>();
        std::uniform_real_distribution<double> u(0.0, 1.0);
        for (int r = 0; r < n; ++r) {
          const double x = u(rng_);
          double acc = 0;
          int pick = -1;
          int last_valid = -1;
          for (int c = 0; c < c_max; ++c) {
            const double pr = pd[r * c_max + c];
            if (pr <= 0) continue;
            if (i == kDegreesDecision || space_.IsAllowed(i, actions[r], c))
              last_valid = c;
            acc += pr;
            if (x < acc && pick < 0) {
              pick = c;
              break;
            }
          }
          if (pick < 0 || (i != kDegreesDecision &&
                           !space_.IsAllowed(i, actions[r], pick))) {
            pick = last_valid;
          }
          if (pick < 0) {  // numerically degenerate: first valid choice
            for (int c = 0; c < c_max && pick < 0; ++c) {
              if (i == kDegreesDecision || space_.IsAllowed(i, actions[r], c))
                pick = c;
            }
          }
          actions[r][i] = pick;
        }
      }
      for (int r = 0; r < n; ++r) choice[r] = actions[r][i];
      const torch::Tensor idx =
          torch::from_blob(choice.data(), {n}, torch::kInt64).clone();
      logp_sum = logp_sum + logp.gather(1, idx.unsqueeze(1)).squeeze(1);
      if (!sample) {
        gen_logp_sum = gen_logp_sum + (copy ? torch::log(p_gen + 1e-12) : logp)
                                          .gather(1, idx.unsqueeze(1))
                                          .squeeze(1);
      }
      entropy_sum = entropy_sum - (p * logp).sum(1);
      const torch::Tensor input = i == kDegreesDecision
                                      ? keys.index_select(0, idx)
                                      : net_->embeddings[i - 1]->forward(idx);
      state = net_->cell->forward(input, state);
    }
    return {logp_sum, entropy_sum, gen_logp_sum};
  }

  RlOptions options_;
  const PlanSpace& space_;
  PolicyNet net_;
  std::mt19937_64& rng_;
  torch::Tensor context_;
  torch::Tensor degree_features_;
  torch::Tensor elite_tokens_;
  std::vector<Decisions> elite_decisions_;  // the elite behind elite_tokens_
  std::unique_ptr<torch::optim::Adam> optimizer_;
  double epsilon_ = 0;
};

absl::Status LoadWeights(PolicyNet& net, const std::string& bytes) {
  try {
    std::istringstream in(bytes);
    torch::serialize::InputArchive archive;
    archive.load_from(in);
    net->load(archive);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("warm_start.policy_weights do not load: ", e.what()));
  }
  return absl::OkStatus();
}

std::string SaveWeights(PolicyNet& net) {
  std::ostringstream out;
  torch::serialize::OutputArchive archive;
  net->save(archive);
  archive.save_to(out);
  return out.str();
}

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

RlSearcher::RlSearcher(const RlOptions& options, std::string method)
    : options_(options), method_(std::move(method)) {}
RlSearcher::~RlSearcher() = default;

absl::StatusOr<SearchResult> RlSearcher::Search(
    const simulator::CostModel& model, const SearchOptions& options,
    const CancellationToken& cancel, SearchObserver& observer) {
  stats_ = RlStats();
  const Clock::time_point start = Clock::now();
  try {
    SetTorchThreadsOnce();
    SearchRun run(model, options, cancel, observer);
    RETURN_IF_ERROR(run.Start());
    std::mt19937_64 rng(options.seed);
    Policy policy(options_, run.space(), rng);
    bool warm = false;
    if (options.warm_start != nullptr &&
        !options.warm_start->policy_weights.empty()) {
      RETURN_IF_ERROR(
          LoadWeights(policy.net(), options.warm_start->policy_weights));
      warm = true;
    }
    if (!run.EvaluateWarmStart().empty()) warm = true;
    run.set_warm_started(warm);
    const int batch = std::max(1, options_.batch_size);
    policy.SetElite(run.elite());
    policy.Imitate(run.elite(), options_.imitation_steps);
    while (!run.Done()) {
      Clock::time_point t = Clock::now();
      policy.SetElite(run.elite());
      // Oversample, then keep the plans this search has not scored yet first:
      // repeats cost no evaluation but teach little. When few samples are new,
      // the policy's uniform exploration rises (and decays back once new plans
      // flow again).
      std::vector<Decisions> candidates = policy.Sample(2 * batch);
      double next_epsilon = policy.epsilon();
      std::vector<Decisions> actions;
      std::vector<Decisions> repeats;
      actions.reserve(batch);
      {
        std::unordered_set<uint64_t> taken;
        for (const Decisions& d : candidates) {
          const uint64_t h = PlanSpace::Hash(d);
          if (run.IsCached(d) || !taken.insert(h).second) {
            repeats.push_back(d);
          } else if (static_cast<int>(actions.size()) < batch) {
            actions.push_back(d);
          }
        }
        const double novel =
            static_cast<double>(taken.size()) / candidates.size();
        const double base = options_.explore_epsilon;
        if (base > 0) {
          next_epsilon = novel < 0.25 ? std::min(0.5, policy.epsilon() * 1.3)
                                      : std::max(base, policy.epsilon() / 1.3);
        }
        for (size_t i = 0;
             i < repeats.size() && static_cast<int>(actions.size()) < batch;
             ++i) {
          actions.push_back(repeats[i]);
        }
      }
      stats_.policy_seconds += Since(t);
      if (cancel.cancelled()) break;
      t = Clock::now();
      std::vector<ScoredPlan> scored = run.Evaluate(actions);
      stats_.cost_model_seconds += Since(t);
      t = Clock::now();
      actions.resize(scored.size());
      std::vector<double> rewards(scored.size());
      double sum = 0;
      for (size_t i = 0; i < scored.size(); ++i) {
        rewards[i] = scored[i].reward;
        sum += rewards[i];
      }
      if (!scored.empty()) stats_.mean_rewards.push_back(sum / scored.size());
      if (cancel.cancelled()) break;
      // The update conditions on the elite the batch was sampled with.
      policy.Update(actions, rewards, run.elite());
      policy.set_epsilon(
          next_epsilon);  // the update used the sampling distribution's
      stats_.policy_seconds += Since(t);
      ++stats_.iterations;
      run.ReportProgress(1);
    }
    std::string weights = SaveWeights(policy.net());
    stats_.total_seconds = Since(start);
    return run.Finish(std::move(weights));
  } catch (const std::exception& e) {
    stats_.total_seconds = Since(start);
    return absl::InternalError(
        absl::StrCat("rl search failed in LibTorch: ", e.what()));
  }
}

}  // namespace shardplan::policy
