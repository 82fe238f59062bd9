#include "policy/rl/features.h"

#include <algorithm>
#include <cmath>

namespace shardplan::policy::rl {
namespace {

float Lg(double x, double scale) {
  return static_cast<float>(std::log2(std::max(1.0, x)) / scale);
}

}  // namespace

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
      w.max_ttft_seconds > 0 ? 1.0f : 0.0f,
      w.max_tpot_seconds > 0 ? 1.0f : 0.0f,
      static_cast<float>(simulator::BytesPerElement(w.weight_dtype) / 2),
      static_cast<float>(simulator::BytesPerElement(w.kv_cache_dtype) / 2),
      1.0f};
  f.resize(kContextFeatures, 0.0f);
  for (float& x : f) {
    if (!std::isfinite(x)) x = 0;
  }
  return f;
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

std::array<float, kPrefillDimFeatures> PrefillDimFeatures(const Decisions& d) {
  std::array<float, kPrefillDimFeatures> f{};
  for (int o = 0; o < simulator::kNumOpKinds; ++o)
    f[o * simulator::kNumShardDims + d[kFirstPrefillOpDecision + o]] = 1;
  return f;
}

}  // namespace shardplan::policy::rl
