// The distribution one decision of an RL-sampled plan is drawn from, and the
// derivatives of its log-probability that the policy gradient needs. Kept
// apart from rl_searcher.cc (and free of LibTorch) so that tests can check
// the hand-derived gradient against finite differences.
#ifndef SHARDPLAN_POLICY_DECISION_MIXTURE_H_
#define SHARDPLAN_POLICY_DECISION_MIXTURE_H_

#include <algorithm>
#include <cmath>

namespace shardplan::policy {

// p(value) = (1 - eps) [ga [value = anchor's] + (1 - ga) (gm [value = mate's]
//            + (1 - gm) generative(value))] + eps / valid values,
// with ga = gate where the anchor's value is valid here (else 0) and gm =
// cross where the mate's value is valid (else 0).
struct DecisionMixture {
  double generative = 0;  // the generative head's probability of the value
  double gate = 0;        // copy-the-anchor gate
  double cross = 0;       // copy-the-mate gate (crossover)
  bool anchor_valid = false, is_anchor_value = false;
  bool mate_valid = false, is_mate_value = false;
  double uniform = 0;  // 1 / number of valid values
};

struct MixtureTerms {
  double log_p = 0;
  // Derivatives of log_p with respect to log(generative), gate and cross.
  double d_log_generative = 0, d_gate = 0, d_cross = 0;
};

inline MixtureTerms EvaluateMixture(const DecisionMixture& m, double epsilon) {
  const double ga = m.anchor_valid ? m.gate : 0.0;
  const double gm = m.mate_valid ? m.cross : 0.0;
  const double anchor = m.is_anchor_value ? 1.0 : 0.0;
  const double mate = m.is_mate_value ? 1.0 : 0.0;
  const double rest = gm * mate + (1 - gm) * m.generative;
  const double p = std::max(
      (1 - epsilon) * (ga * anchor + (1 - ga) * rest) + epsilon * m.uniform,
      1e-30);
  const double dp = (1 - epsilon) / p;  // d log p / d(mixture)
  MixtureTerms t;
  t.log_p = std::log(p);
  t.d_log_generative = dp * (1 - ga) * (1 - gm) * m.generative;
  t.d_gate = m.anchor_valid ? dp * (anchor - rest) : 0.0;
  t.d_cross = m.mate_valid ? dp * (1 - ga) * (mate - m.generative) : 0.0;
  return t;
}

}  // namespace shardplan::policy

#endif  // SHARDPLAN_POLICY_DECISION_MIXTURE_H_
