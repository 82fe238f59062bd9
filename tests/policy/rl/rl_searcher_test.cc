// The RL searcher: learning raises the sampled plans' mean reward, warm-start
// state round trips, bad weights are rejected, weights of another layout are
// ignored, weights cloned on a poor plan do not trap it, and it is never worse
// than the Megatron baseline; its method names and ablations register with
// CreateSearcher, and it passes the checks every searcher must
// (tests/policy/searcher_conformance.h).
#include "policy/rl/rl_searcher.h"

#include <algorithm>
#include <array>
#include <numeric>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policy/disaggregated_grid.h"
#include "policy/plan_space.h"
#include "policy/searcher.h"
#include "policy/weights_archive.h"
#include "simulator/megatron.h"
#include "tests/policy/searcher_conformance.h"
#include "tests/policy/test_util.h"

namespace shardplan::policy {
namespace {

// As a binary linking shardplan_policy_rl does at startup: the conformance
// suite creates "rl" through CreateSearcher.
[[maybe_unused]] const bool kRlRegistered = (RegisterRlSearchers(), true);

// ReachesTheLargeSplitsOfA256GpuDisaggregatedSpace's budget.
constexpr int kLargeSpaceBudget = 2000;

using testing::SearcherConformanceTest;
INSTANTIATE_TEST_SUITE_P(Rl, SearcherConformanceTest, ::testing::Values("rl"));

TEST(RlSearcherTest, RegistersTheApiMethodAndItsAblations) {
  EXPECT_EQ(AvailableSearchMethods(), SearchMethods());
  EXPECT_THAT(RlMethods(),
              ::testing::ElementsAre("rl", "rl-no-elite", "rl-no-learning",
                                     "rl-policy-only"));
  for (const std::string& method : RlMethods()) {
    auto searcher = CreateSearcher(method);
    ASSERT_TRUE(searcher.ok()) << method << ": " << searcher.status();
    EXPECT_EQ((*searcher)->method(), method);
  }
}

// The ablations change only their own part of the options.
TEST(RlSearcherTest, AblationsSwitchOffOnePart) {
  const RlOptions rl = RlMethodOptions("rl");
  const RlOptions policy_only = RlMethodOptions("rl-policy-only");
  EXPECT_EQ(policy_only.moves.tuple_sweep, 0);
  EXPECT_EQ(policy_only.moves.neighbour_sweep, 0);
  EXPECT_FALSE(policy_only.moves.batch_line_search);
  EXPECT_EQ(policy_only.policy.learning_rate, rl.policy.learning_rate);
  EXPECT_TRUE(policy_only.policy.use_elite_tokens);
  const RlOptions no_learning = RlMethodOptions("rl-no-learning");
  EXPECT_EQ(no_learning.policy.learning_rate, 0);
  EXPECT_EQ(no_learning.moves.tuple_sweep, rl.moves.tuple_sweep);
  EXPECT_EQ(no_learning.moves.neighbour_sweep, rl.moves.neighbour_sweep);
  EXPECT_TRUE(no_learning.moves.batch_line_search);
  EXPECT_FALSE(RlMethodOptions("rl-no-elite").policy.use_elite_tokens);
}

// "rl-policy-only": every evaluation after the baseline is one of the
// policy's samples, so its first batch stays near Megatron's tuple where "rl"
// sweeps them all first.
TEST(RlSearcherTest, PolicyOnlyRunsTheLearnedPartAlone) {
  auto built = testing::MakeModelAndSpace("llama-3.1-70b", 16);
  ASSERT_TRUE(built.ok()) << built.status();
  const int tuples = built->space->NumChoices(kDegreesDecision);
  SearchOptions options;
  options.max_evaluations = tuples;
  options.elite_size = tuples;
  CancellationToken cancel;
  SearchObserver observer;
  auto tuples_tried = [&](const std::string& method) {
    auto searcher = CreateSearcher(method);
    EXPECT_TRUE(searcher.ok()) << searcher.status();
    std::set<std::array<int, 4>> seen;
    if (!searcher.ok()) return seen;
    auto r = (*searcher)->Search(*built->model, options, cancel, observer);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return seen;
    for (const ScoredPlan& s : r->elite)
      seen.insert({s.plan.dp, s.plan.tp, s.plan.pp, s.plan.ep});
    return seen;
  };
  EXPECT_EQ(tuples_tried("rl").size(), static_cast<size_t>(tuples));
  EXPECT_LT(tuples_tried("rl-policy-only").size(), static_cast<size_t>(tuples));
}

double Mean(const std::vector<double>& v, size_t begin, size_t end) {
  return std::accumulate(v.begin() + begin, v.begin() + end, 0.0) /
         (end - begin);
}

// Parameter: RlPolicyOptions::ppo_epochs (1: REINFORCE, the default; 3: PPO's
// clipped epochs). Both must raise the batch reward, and end above the same
// policy with learning switched off: the median over six seeds, because one
// batch's mean reward swings by up to ~1 from the next (adaptive exploration
// resamples uniformly once few sampled plans are new), so one seed's window
// is noisy.
class MeanRewardTest : public ::testing::TestWithParam<int> {};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

TEST_P(MeanRewardTest, RisesOverIterations) {
  auto model = testing::MakeCostModel("mixtral-8x7b", 8);
  ASSERT_TRUE(model.ok()) << model.status();
  // The batch line search and the neighbour sweep are off in both: they are
  // not the policy (their plans are not in mean_rewards) but they improve the
  // anchors the batches copy from, which would blur what learning adds.
  RlOptions learner_options;
  learner_options.policy.ppo_epochs = GetParam();
  learner_options.moves.batch_line_search = false;
  learner_options.moves.neighbour_sweep = 0;
  RlOptions frozen_options = RlMethodOptions("rl-no-learning");
  frozen_options.moves.batch_line_search = false;
  frozen_options.moves.neighbour_sweep = 0;
  std::vector<double> gains, over_frozen;
  for (uint32_t seed : {1u, 2u, 3u, 4u, 5u, 6u}) {
    SCOPED_TRACE(seed);
    SearchOptions options;
    options.max_evaluations = 1200;
    options.seed = seed;
    CancellationToken cancel;
    SearchObserver observer;
    RlSearcher learner(learner_options);
    RlSearcher frozen(frozen_options);
    ASSERT_TRUE(learner.Search(**model, options, cancel, observer).ok());
    ASSERT_TRUE(frozen.Search(**model, options, cancel, observer).ok());
    const std::vector<double>& m = learner.last_stats().mean_rewards;
    const std::vector<double>& f = frozen.last_stats().mean_rewards;
    ASSERT_GE(m.size(), 30u);
    ASSERT_GE(f.size(), 30u);
    const double early = Mean(m, 0, 3);
    // Late: the last third of the iterations, a window wide enough that one
    // unlucky batch (the last one is cut short by the budget) does not decide.
    const double late = Mean(m, m.size() - m.size() / 3, m.size());
    const double frozen_late = Mean(f, f.size() - f.size() / 3, f.size());
    gains.push_back(late - early);
    over_frozen.push_back(late - frozen_late);
  }
  // The sampled plans get better as the policy learns, and better than the
  // same policy's plans with learning switched off.
  EXPECT_GT(Median(gains), 0.3) << ::testing::PrintToString(gains);
  EXPECT_GT(Median(over_frozen), 0.15) << ::testing::PrintToString(over_frozen);
}

// More GPUs never make RL's plan worse per GPU: on twice the GPUs it finds at
// least what two copies of the best 8- or 16-GPU plan give (the space holds
// replicas; SearchersTest.BestPlanPerGpuIsMonotoneInGpus checks the sweep).
TEST(RlSearcherTest, BestPlanPerGpuIsMonotoneInGpus) {
  for (const auto& [name, gpus] : testing::MonotoneCases()) {
    SCOPED_TRACE(name);
    auto models = testing::MakeSmallAndDoubled(name, gpus);
    ASSERT_TRUE(models.ok()) << models.status();
    const auto& small = models->small;
    const auto& large = models->doubled;
    SearchOptions sweep;
    sweep.max_evaluations = 1'000'000;
    auto best_small = testing::RunSearch("grid", *small, sweep, nullptr);
    ASSERT_TRUE(best_small.ok()) << best_small.status();
    ASSERT_TRUE(best_small->best.evaluation.feasible);
    SearchOptions budget;
    budget.max_evaluations = 3000;
    budget.seed = 5;
    auto rl = testing::RunSearch("rl", *large, budget, nullptr);
    ASSERT_TRUE(rl.ok()) << rl.status();
    EXPECT_GE(
        rl->best.evaluation.output_tokens_per_s_per_gpu,
        best_small->best.evaluation.output_tokens_per_s_per_gpu * (1 - 1e-9));
  }
}

INSTANTIATE_TEST_SUITE_P(ReinforceAndPpo, MeanRewardTest,
                         ::testing::Values(1, 3));

TEST(RlSearcherTest, WarmStartStateRoundTrips) {
  auto model = testing::MakeCostModel("qwen3-235b-a22b", 16);
  ASSERT_TRUE(model.ok()) << model.status();
  SearchOptions options;
  options.max_evaluations = 600;
  options.seed = 9;
  CancellationToken cancel;
  SearchObserver observer;
  RlSearcher cold;
  auto first = cold.Search(**model, options, cancel, observer);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_FALSE(first->policy_weights.empty());
  ASSERT_FALSE(first->elite.empty());
  EXPECT_FALSE(first->warm_started);

  WarmStart warm;
  for (const ScoredPlan& s : first->elite) warm.elite_plans.push_back(s.plan);
  warm.policy_weights = first->policy_weights;
  options.warm_start = &warm;
  options.max_evaluations = 100;
  // With learning off, the weights come back unchanged and the same seed
  // samples the same plans: saving and loading lose nothing.
  RlOptions frozen;
  frozen.policy.learning_rate = 0;
  RlSearcher a(frozen), b(frozen);
  auto ra = a.Search(**model, options, cancel, observer);
  ASSERT_TRUE(ra.ok()) << ra.status();
  EXPECT_TRUE(ra->warm_started);
  EXPECT_EQ(ra->policy_weights, first->policy_weights);
  // The re-evaluated elite contains the cold run's best.
  EXPECT_GE(ra->best.reward, first->best.reward - 1e-12);
  WarmStart again = warm;
  again.policy_weights = ra->policy_weights;
  options.warm_start = &again;
  auto rb = b.Search(**model, options, cancel, observer);
  ASSERT_TRUE(rb.ok()) << rb.status();
  EXPECT_EQ(ra->best.plan, rb->best.plan);
  ASSERT_EQ(ra->elite.size(), rb->elite.size());
  for (size_t i = 0; i < ra->elite.size(); ++i)
    EXPECT_EQ(ra->elite[i].plan, rb->elite[i].plan);
}

// A cold start spends its first evaluations on Megatron's plan moved to other
// degree tuples (SearchMoveOptions::tuple_sweep): every one when there are at
// most tuple_sweep others, else tuple_sweep of them drawn with the search's
// seed; a warm start, or tuple_sweep 0, does not.
TEST(RlSearcherTest, ColdStartSweepsTheDegreeTuplesFirst) {
  auto built = testing::MakeModelAndSpace("llama-3.1-70b", 16);
  ASSERT_TRUE(built.ok()) << built.status();
  const simulator::CostModel& model = *built->model;
  const int tuples = built->space->NumChoices(kDegreesDecision);
  ASSERT_GT(tuples, 8);
  CancellationToken cancel;
  SearchObserver observer;
  // The distinct degree tuples among the plans of a search of `budget`
  // evaluations.
  auto tuples_tried = [&](const RlOptions& rl, int budget, uint32_t seed = 1,
                          const WarmStart* warm = nullptr) {
    SearchOptions options;
    options.max_evaluations = budget;
    options.elite_size = budget;
    options.seed = seed;
    options.warm_start = warm;
    RlSearcher searcher(rl);
    auto r = searcher.Search(model, options, cancel, observer);
    EXPECT_TRUE(r.ok()) << r.status();
    std::set<std::array<int, 4>> seen;
    if (!r.ok()) return seen;
    EXPECT_EQ(r->evaluations, budget);
    for (const ScoredPlan& s : r->elite)
      seen.insert({s.plan.dp, s.plan.tp, s.plan.pp, s.plan.ep});
    return seen;
  };
  // The baseline, then the whole sweep.
  RlOptions sweep;
  sweep.moves.tuple_sweep = tuples - 1;
  EXPECT_EQ(tuples_tried(sweep, tuples).size(), static_cast<size_t>(tuples));
  // Fewer allowed than there are: that many, a different sample per seed.
  RlOptions sample;
  sample.moves.tuple_sweep = tuples / 2;
  const int budget = 1 + sample.moves.tuple_sweep;
  const auto first = tuples_tried(sample, budget, 1);
  const auto second = tuples_tried(sample, budget, 2);
  EXPECT_EQ(first.size(), static_cast<size_t>(budget));
  EXPECT_EQ(second.size(), static_cast<size_t>(budget));
  EXPECT_NE(first, second);
  EXPECT_EQ(tuples_tried(sample, budget, 1), first);  // same seed, same sample
  // No sweep: the policy's first batch stays near Megatron's tuple.
  RlOptions no_sweep;
  no_sweep.moves.tuple_sweep = 0;
  no_sweep.moves.neighbour_sweep = 0;
  EXPECT_LT(tuples_tried(no_sweep, tuples).size(), static_cast<size_t>(tuples));
  // A warm start with elite plans starts from them instead: no sweep.
  WarmStart warm;
  warm.elite_plans.push_back(simulator::MegatronPlan(model));
  RlOptions sweep_only = sweep;
  sweep_only.moves.neighbour_sweep = 0;
  EXPECT_LT(tuples_tried(sweep_only, tuples, 1, &warm).size(),
            static_cast<size_t>(tuples));
}

// Each time the search's best plan changes, it is moved to its
// neighbour_sweep nearest degree tuples before the next sample: here the
// Megatron plan (the first best, no tuple sweep) to exactly those tuples.
TEST(RlSearcherTest, NewBestPlanIsMovedToItsNearestTuples) {
  auto built = testing::MakeModelAndSpace("mixtral-8x22b", 64);
  ASSERT_TRUE(built.ok()) << built.status();
  const PlanSpace& space = *built->space;
  RlOptions rl;
  rl.moves.tuple_sweep = 0;
  rl.moves.neighbour_sweep = 6;
  SearchOptions options;
  options.max_evaluations = 1 + rl.moves.neighbour_sweep;
  options.elite_size = options.max_evaluations;
  CancellationToken cancel;
  SearchObserver observer;
  RlSearcher searcher(rl);
  auto r = searcher.Search(*built->model, options, cancel, observer);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->evaluations, options.max_evaluations);
  std::set<std::array<int, 4>> tried, expected;
  for (const ScoredPlan& s : r->elite)
    tried.insert({s.plan.dp, s.plan.tp, s.plan.pp, s.plan.ep});
  const simulator::PlanDims megatron = simulator::MegatronPlan(*built->model);
  expected.insert({megatron.dp, megatron.tp, megatron.pp, megatron.ep});
  int megatron_tuple = -1;
  for (size_t i = 0; i < space.degrees().size(); ++i) {
    const Degrees& d = space.degrees()[i];
    if (d.dp == megatron.dp && d.tp == megatron.tp && d.pp == megatron.pp &&
        d.ep == megatron.ep)
      megatron_tuple = static_cast<int>(i);
  }
  ASSERT_GE(megatron_tuple, 0);
  const std::vector<int> nearest = space.NearestTuples(megatron_tuple);
  for (int i = 0; i < rl.moves.neighbour_sweep; ++i) {
    const Degrees& d = space.degrees()[nearest[i]];
    expected.insert({d.dp, d.tp, d.pp, d.ep});
  }
  EXPECT_EQ(tried, expected);
}

TEST(RlSearcherTest, DamagedWeightsAreSetAsideAndReplaced) {
  // Stored weights that do not load (garbage, a truncated archive, an empty
  // ZIP) must not fail the search: it runs cold and returns weights that
  // replace the damaged ones.
  auto model = testing::MakeCostModel("llama-3.1-8b", 4);
  ASSERT_TRUE(model.ok()) << model.status();
  SearchOptions options;
  options.max_evaluations = 100;
  CancellationToken cancel;
  SearchObserver observer;
  RlSearcher searcher;
  auto good = searcher.Search(**model, options, cancel, observer);
  ASSERT_TRUE(good.ok()) << good.status();
  ASSERT_GT(good->policy_weights.size(), 1000u);
  // An empty ZIP: just the end-of-directory record.
  const std::string empty_zip("PK\x05\x06" + std::string(18, '\0'));
  for (const std::string& damaged :
       {std::string("not a torch archive"),
        good->policy_weights.substr(0, 1000), empty_zip}) {
    WarmStart warm;
    warm.policy_weights = damaged;
    options.warm_start = &warm;
    auto r = searcher.Search(**model, options, cancel, observer);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_FALSE(r->warm_started);
    EXPECT_EQ(r->policy_weights.size(), good->policy_weights.size());
  }
}

TEST(RlSearcherTest, WeightsDeclaringAHugeTensorAreRefusedBeforeLoading) {
  // The archive's entries are read at their declared size: a stored entry
  // whose directory claims 256 MiB must be refused from the directory alone.
  auto model = testing::MakeCostModel("llama-3.1-8b", 4);
  ASSERT_TRUE(model.ok()) << model.status();
  SearchOptions options;
  options.max_evaluations = 50;
  CancellationToken cancel;
  SearchObserver observer;
  RlSearcher searcher;
  auto good = searcher.Search(**model, options, cancel, observer);
  ASSERT_TRUE(good.ok()) << good.status();
  std::string huge = good->policy_weights;
  // Every central-directory entry made a deflated one (method, offset 10)
  // whose uncompressed size (offset 24) is 256 MiB: what a small row of
  // compressed zeros declares (ZIP64 extra fields would carry it instead).
  size_t at = 0;
  int patched = 0;
  while ((at = huge.find("PK\x01\x02", at)) != std::string::npos) {
    huge[at + 10] = 8;
    huge[at + 11] = 0;
    huge[at + 24] = 0;
    huge[at + 25] = 0;
    huge[at + 26] = 0;
    huge[at + 27] = 0x10;
    at += 4;
    ++patched;
  }
  ASSERT_GT(patched, 0);
  const absl::Status refused = CheckWeightsArchive(huge, 64 << 20);
  EXPECT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.message()), ::testing::HasSubstr("declare"));
  EXPECT_TRUE(CheckWeightsArchive(good->policy_weights, 64 << 20).ok());
  WarmStart warm;
  warm.policy_weights = huge;
  options.warm_start = &warm;
  auto r = searcher.Search(**model, options, cancel, observer);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->warm_started);
}

TEST(RlSearcherTest, WeightsOfAnotherLayoutAreIgnored) {
  // Stored weights of another network layout (another version or RlOptions)
  // must not fail a search: it starts from fresh weights instead.
  auto model = testing::MakeCostModel("llama-3.1-8b", 4);
  ASSERT_TRUE(model.ok()) << model.status();
  SearchOptions options;
  options.max_evaluations = 200;
  CancellationToken cancel;
  SearchObserver observer;
  RlOptions narrow;  // another layout
  narrow.policy.d_model = 16;
  RlSearcher small(narrow);
  auto first = small.Search(**model, options, cancel, observer);
  ASSERT_TRUE(first.ok()) << first.status();
  WarmStart warm;
  warm.policy_weights = first->policy_weights;
  options.warm_start = &warm;
  RlSearcher searcher;  // the default d_model, 32
  auto r = searcher.Search(**model, options, cancel, observer);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->warm_started);
  EXPECT_NE(r->policy_weights, first->policy_weights);
  // The same weights load into a searcher of their own layout.
  RlSearcher same(narrow);
  auto again = same.Search(**model, options, cancel, observer);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->warm_started);
}

TEST(RlSearcherTest, WeightsTransferAcrossProblems) {
  auto a = testing::MakeCostModel("mixtral-8x22b", 16);
  auto b = testing::MakeCostModel("deepseek-v3", 32);
  ASSERT_TRUE(a.ok() && b.ok());
  SearchOptions options;
  options.max_evaluations = 300;
  CancellationToken cancel;
  SearchObserver observer;
  RlSearcher searcher;
  auto first = searcher.Search(**a, options, cancel, observer);
  ASSERT_TRUE(first.ok()) << first.status();
  WarmStart warm;
  warm.policy_weights = first->policy_weights;
  options.warm_start = &warm;
  auto second = searcher.Search(**b, options, cancel, observer);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(second->warm_started);
  EXPECT_GE(second->best.reward, second->baseline.reward);
}

// Stored weights cannot trap a search: weights behaviour-cloned on a poor
// plan make the policy's own samples worse than fresh weights' (the learned
// part alone, learning off), yet on the median seed the full search from them
// reaches what the search from fresh weights reaches, because the tuple sweep
// and the moves around the best plans do not depend on the weights. In this
// disaggregated space (under 4,096 joint tuples) the elite starts empty, so
// the sweep runs after the first batch; when it did not run at all, the start
// rested on the weights alone and the median lead was -0.02 (4 of 8 seeds
// below, down to -0.11). When the sweep took the first batch's plan whole
// (its operator dims and decode batch as well as its tuple), every seed ended
// 0.3-1.4 lower from the cloned weights (median lead -0.50): the budget ran
// out while the line search climbed from the sample's small batch.
TEST(RlSearcherTest, WeightsClonedOnAPoorPlanDoNotTrapTheSearch) {
  auto model = testing::MakeSmallDisaggregatedMoeCostModel();
  ASSERT_TRUE(model.ok()) << model.status();
  CancellationToken cancel;
  SearchObserver observer;
  const SearchOptions options = testing::DisaggregatedSearchOptions(300);
  RlSearcher full;
  auto found = full.Search(**model, options, cancel, observer);
  ASSERT_TRUE(found.ok()) << found.status();
  // The poor plan: the feasible one of least reward among the plans the
  // initial policy samples alone (policy only, learning off).
  RlOptions sampler = RlMethodOptions("rl-policy-only");
  sampler.policy.learning_rate = 0;
  sampler.policy.self_imitation_coef = 0;
  SearchOptions sample_options = options;
  sample_options.max_evaluations = 64;
  RlSearcher scout(sampler);
  auto sampled = scout.Search(**model, sample_options, cancel, observer);
  ASSERT_TRUE(sampled.ok()) << sampled.status();
  const ScoredPlan* poor = nullptr;
  for (const ScoredPlan& s : sampled->elite) {
    if (s.evaluation.feasible && (poor == nullptr || s.reward < poor->reward))
      poor = &s;
  }
  ASSERT_NE(poor, nullptr);
  ASSERT_LT(poor->reward, found->best.reward - 0.3);
  // Bad weights: many cloning steps on that plan, then stop.
  RlOptions cloning;
  cloning.policy.imitation_steps = 300;
  WarmStart poor_plan;
  poor_plan.elite_plans.push_back(poor->plan);
  SearchOptions clone_options = options;
  clone_options.warm_start = &poor_plan;
  clone_options.max_evaluations = 2;
  RlSearcher cloner(cloning);
  auto cloned = cloner.Search(**model, clone_options, cancel, observer);
  ASSERT_TRUE(cloned.ok()) << cloned.status();
  WarmStart bad;
  bad.policy_weights = cloned->policy_weights;

  // Per seed: the best reward of `method` from fresh or the bad weights.
  auto best_of = [&](const char* method, bool from_bad, uint32_t seed) {
    SearchOptions o = options;
    o.max_evaluations = 200;
    o.elite_size = 16;
    o.seed = seed;
    if (from_bad) o.warm_start = &bad;
    RlSearcher searcher(RlMethodOptions(method), method);
    auto r = searcher.Search(**model, o, cancel, observer);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return 0.0;
    EXPECT_EQ(r->warm_started, from_bad);
    return r->best.reward;
  };
  double policy_fresh = 0, policy_bad = 0;
  std::vector<double> lead;  // per seed: best reward from bad minus fresh
  for (uint32_t seed = 1; seed <= 8; ++seed) {
    // The sampler alone.
    for (bool from_bad : {false, true}) {
      SearchOptions o = options;
      o.max_evaluations = 64;
      o.seed = seed;
      if (from_bad) o.warm_start = &bad;
      RlSearcher searcher(sampler);
      auto r = searcher.Search(**model, o, cancel, observer);
      ASSERT_TRUE(r.ok()) << r.status();
      (from_bad ? policy_bad : policy_fresh) += r->best.reward;
    }
    lead.push_back(best_of("rl", true, seed) - best_of("rl", false, seed));
  }
  // The weights are bad by themselves (summed over the seeds).
  EXPECT_LT(policy_bad, policy_fresh);
  // The full search: per seed either side can end lower (measured: from the
  // bad weights 7 of 8 seeds at or above fresh, one 0.016 lower in log
  // throughput, two 0.03 and 0.06 higher: the same lottery both ways), so
  // the assertion is on the median pair, as the benchmark counts pairs.
  std::sort(lead.begin(), lead.end());
  EXPECT_GE(0.5 * (lead[3] + lead[4]), 0.0);
}

// The RL searcher emits disaggregated plans (pool split, prefill and decode
// layouts) when asked for the disaggregated space: valid, feasible,
// deterministic for a seed; its elite and weights warm-start the next
// disaggregated search, and weights learnt on the aggregated space load too
// (one network layout for both).
// The joint space of a 1.6T MoE on 256 GPUs holds every pool split (no
// longer only the smallest prefill instances): rl, at a small budget, gets
// within 1% of a reference made of the whole disaggregated sweep and one
// prefill plus one decode instance of dp128 ep64 at each prefill batch.
TEST(RlSearcherTest, ReachesTheLargeSplitsOfA256GpuDisaggregatedSpace) {
  auto model = testing::MakeLargeDisaggregatedCostModel();
  ASSERT_TRUE(model.ok()) << model.status();
  CancellationToken cancel;
  const DisaggregatedSweep sweep =
      SweepDisaggregated(**model, 1 << 20, 0, cancel);
  double reference =
      sweep.found ? sweep.best.evaluation.output_tokens_per_s : 0;
  for (int prefill_batch : {1, 2, 4}) {
    const simulator::Evaluation e = (*model)->Evaluate(
        testing::OnePrefillOneDecodeDp128Ep64(prefill_batch));
    if (e.feasible) reference = std::max(reference, e.output_tokens_per_s);
  }
  ASSERT_GT(reference, 0);
  SearchOptions options;
  options.disaggregated = true;
  options.max_evaluations = kLargeSpaceBudget;
  options.max_seconds = 300;
  options.seed = 1;
  SearchObserver observer;
  RlSearcher rl;
  auto found = rl.Search(**model, options, cancel, observer);
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_TRUE(found->best.evaluation.feasible);
  EXPECT_GE(found->best.evaluation.output_tokens_per_s, 0.99 * reference)
      << found->best.evaluation.output_tokens_per_s << " vs " << reference;
}

TEST(RlSearcherTest, SearchesTheDisaggregatedSpaceAndWarmStarts) {
  auto model =
      testing::MakeCostModel("qwen3-235b-a22b", 16, 2048, 512, 0, 0, 0, "fp8");
  ASSERT_TRUE(model.ok()) << model.status();
  SearchOptions options;
  options.disaggregated = true;
  options.max_evaluations = 400;
  options.seed = 3;
  CancellationToken cancel;
  SearchObserver observer;
  RlSearcher a, b;
  auto first = a.Search(**model, options, cancel, observer);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(first->best.evaluation.feasible);
  EXPECT_TRUE(first->best.plan.disaggregated);
  EXPECT_TRUE((*model)->ValidatePlan(first->best.plan).ok());
  EXPECT_LE(first->evaluations, 400);
  ASSERT_FALSE(first->elite.empty());
  for (const ScoredPlan& s : first->elite) EXPECT_TRUE(s.plan.disaggregated);
  auto repeat = b.Search(**model, options, cancel, observer);
  ASSERT_TRUE(repeat.ok()) << repeat.status();
  EXPECT_EQ(first->best.plan, repeat->best.plan);

  WarmStart warm;
  for (const ScoredPlan& s : first->elite) warm.elite_plans.push_back(s.plan);
  warm.policy_weights = first->policy_weights;
  SearchOptions again = options;
  again.warm_start = &warm;
  again.max_evaluations = 1 + static_cast<int>(first->elite.size()) + 32;
  RlSearcher c;
  auto warmed = c.Search(**model, again, cancel, observer);
  ASSERT_TRUE(warmed.ok()) << warmed.status();
  EXPECT_TRUE(warmed->warm_started);
  EXPECT_GE(warmed->best.reward, first->best.reward - 1e-12);

  SearchOptions aggregated;
  aggregated.max_evaluations = 200;
  auto agg = c.Search(**model, aggregated, cancel, observer);
  ASSERT_TRUE(agg.ok()) << agg.status();
  WarmStart weights_only;
  weights_only.policy_weights = agg->policy_weights;
  again.warm_start = &weights_only;
  auto from_agg = c.Search(**model, again, cancel, observer);
  ASSERT_TRUE(from_agg.ok()) << from_agg.status();
  EXPECT_TRUE(from_agg->warm_started);
  EXPECT_TRUE(from_agg->best.plan.disaggregated);
}

// The policy decides the prefill instance's operator dims too: on a problem
// where the prompt's prefill time decides feasibility, rl and rl-no-learning
// find prefill dims other than Megatron's, which the cost model rates above
// Megatron's for the same plan.
TEST(RlSearcherTest, FindsPrefillDimsOtherThanMegatronsWhenBetter) {
  auto model = testing::MakePrefillBoundCostModel();
  ASSERT_TRUE(model.ok()) << model.status();
  for (const char* method : {"rl", "rl-no-learning"})
    testing::ExpectBetterPrefillDimsFound(method, **model);
}

}  // namespace
}  // namespace shardplan::policy
