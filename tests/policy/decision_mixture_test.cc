// The RL policy's per-decision mixture: it is a probability distribution over
// the valid values, and its hand-derived gradient (what the policy update
// backpropagates instead of a LibTorch graph of gathers) matches finite
// differences.
#include "policy/decision_mixture.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace shardplan::policy {
namespace {

// A random decision with `n` valid values: generative probabilities, gates,
// and which values the anchor and the mate hold (-1: not valid here).
struct Case {
  std::vector<double> generative;
  double gate, cross, epsilon;
  int anchor, mate;
};

Case RandomCase(std::mt19937_64& rng, int n) {
  std::uniform_real_distribution<double> u(0.01, 1.0);
  Case c;
  double sum = 0;
  for (int v = 0; v < n; ++v) sum += c.generative.emplace_back(u(rng));
  for (double& g : c.generative) g /= sum;
  c.gate = u(rng);
  c.cross = u(rng);
  c.epsilon = rng() % 3 == 0 ? 0.0 : 0.5 * u(rng);
  c.anchor = static_cast<int>(rng() % (n + 1)) - 1;
  c.mate = static_cast<int>(rng() % (n + 1)) - 1;
  return c;
}

DecisionMixture MixtureOf(const Case& c, int value) {
  DecisionMixture m;
  m.generative = c.generative[value];
  m.gate = c.gate;
  m.cross = c.cross;
  m.anchor_valid = c.anchor >= 0;
  m.is_anchor_value = c.anchor == value;
  m.mate_valid = c.mate >= 0;
  m.is_mate_value = c.mate == value;
  m.uniform = 1.0 / c.generative.size();
  return m;
}

TEST(DecisionMixtureTest, IsADistributionOverTheValidValues) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 500; ++trial) {
    const Case c = RandomCase(rng, 1 + static_cast<int>(rng() % 8));
    double total = 0;
    for (size_t v = 0; v < c.generative.size(); ++v)
      total += std::exp(EvaluateMixture(MixtureOf(c, v), c.epsilon).log_p);
    EXPECT_NEAR(total, 1.0, 1e-9) << "trial " << trial;
  }
}

TEST(DecisionMixtureTest, GradientMatchesFiniteDifferences) {
  std::mt19937_64 rng(11);
  constexpr double kH = 1e-6;
  for (int trial = 0; trial < 500; ++trial) {
    const Case c = RandomCase(rng, 2 + static_cast<int>(rng() % 6));
    const int value = static_cast<int>(rng() % c.generative.size());
    const DecisionMixture m = MixtureOf(c, value);
    const MixtureTerms t = EvaluateMixture(m, c.epsilon);
    // Central difference of log_p when `nudge` moves one input by +-kH.
    auto numeric = [&](void (*nudge)(DecisionMixture&, double)) {
      DecisionMixture up = m, down = m;
      nudge(up, kH);
      nudge(down, -kH);
      return (EvaluateMixture(up, c.epsilon).log_p -
              EvaluateMixture(down, c.epsilon).log_p) /
             (2 * kH);
    };
    // Relative where derivatives are large (a value of small probability).
    auto tolerance = [](double d) { return 1e-5 * std::max(1.0, std::abs(d)); };
    EXPECT_NEAR(t.d_log_generative, numeric([](DecisionMixture& x, double h) {
                  x.generative *= std::exp(h);  // a step in log(generative)
                }),
                tolerance(t.d_log_generative))
        << "trial " << trial;
    EXPECT_NEAR(t.d_gate,
                numeric([](DecisionMixture& x, double h) { x.gate += h; }),
                tolerance(t.d_gate))
        << "trial " << trial;
    EXPECT_NEAR(t.d_cross,
                numeric([](DecisionMixture& x, double h) { x.cross += h; }),
                tolerance(t.d_cross))
        << "trial " << trial;
  }
}

}  // namespace
}  // namespace shardplan::policy
