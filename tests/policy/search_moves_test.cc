// The search moves on their own, without LibTorch or a policy: the per-tuple
// elite, the tuple sweep, the neighbour sweep and the batch line search on
// recorded samples, each checked against the plan space and the evaluations
// it spends.
#include "policy/search_moves.h"

#include <algorithm>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policy/internal/search_run.h"
#include "policy/plan_space.h"
#include "simulator/types.h"
#include "tests/policy/test_util.h"

namespace shardplan::policy {
namespace {

// One started SearchRun on a catalog problem, with the per-tuple elite and the
// generator the moves share.
class SearchMovesTest : public ::testing::Test {
 protected:
  void Start(const std::string& model, int gpus, int max_evaluations) {
    auto built = testing::MakeCostModel(model, gpus);
    ASSERT_TRUE(built.ok()) << built.status();
    model_ = *std::move(built);
    SearchOptions options;
    options.max_evaluations = max_evaluations;
    options.elite_size = max_evaluations;
    run_ = std::make_unique<internal::SearchRun>(*model_, options, cancel_,
                                                 observer_);
    ASSERT_TRUE(run_->Start().ok());
    ASSERT_TRUE(run_->baseline_decisions().has_value());
    tuples_ = run_->space().NumChoices(kDegreesDecision);
    elite_ = std::make_unique<TupleElite>(tuples_, 4);
  }

  SearchMoves Moves(const SearchMoveOptions& options) {
    return SearchMoves(options, *run_, *elite_, rng_);
  }

  // The distinct degree tuples among the run's elite.
  std::set<int> TuplesTried() {
    std::set<int> seen;
    for (const EliteEntry& e : run_->elite().entries())
      seen.insert(e.decisions[kDegreesDecision]);
    return seen;
  }

  std::unique_ptr<const simulator::CostModel> model_;
  std::unique_ptr<internal::SearchRun> run_;
  std::unique_ptr<TupleElite> elite_;
  std::mt19937_64 rng_{1};
  int tuples_ = 0;
  CancellationToken cancel_;
  SearchObserver observer_;
};

TEST_F(SearchMovesTest, TupleSweepMovesTheBestPlanToEveryOtherTuple) {
  Start("llama-3.1-70b", 16, 100000);
  ASSERT_GT(tuples_, 8);
  SearchMoveOptions options;
  options.tuple_sweep = tuples_ - 1;
  options.batch_line_search = false;
  Moves(options).TupleSweep();
  // The baseline, then one plan per other tuple.
  EXPECT_EQ(run_->evaluations(), tuples_);
  EXPECT_EQ(TuplesTried().size(), static_cast<size_t>(tuples_));
  // Every swept plan is in the per-tuple elite of its tuple.
  for (int t = 0; t < tuples_; ++t) {
    const EliteHistory& own = elite_->OfTuple(t);
    if (t == (*run_->baseline_decisions())[kDegreesDecision]) continue;
    ASSERT_EQ(own.size(), 1) << "tuple " << t;
    EXPECT_EQ(own.entries().front().decisions[kDegreesDecision], t);
  }
}

TEST_F(SearchMovesTest, TupleSweepSamplesTuplesWithTheGenerator) {
  // Fewer allowed than there are: that many, drawn with the generator.
  auto tried = [&](uint64_t seed) {
    Start("llama-3.1-70b", 16, 100000);
    rng_.seed(seed);
    SearchMoveOptions options;
    options.tuple_sweep = tuples_ / 2;
    options.batch_line_search = false;
    Moves(options).TupleSweep();
    EXPECT_EQ(run_->evaluations(), 1 + options.tuple_sweep);
    return TuplesTried();
  };
  const std::set<int> first = tried(1);
  EXPECT_EQ(first.size(), static_cast<size_t>(1 + tuples_ / 2));
  EXPECT_NE(tried(2), first);
  EXPECT_EQ(tried(1), first);  // same seed, same sample
}

TEST_F(SearchMovesTest, TupleSweepOffSpendsNothing) {
  Start("llama-3.1-70b", 16, 100000);
  SearchMoveOptions options;
  options.tuple_sweep = 0;
  Moves(options).TupleSweep();
  EXPECT_EQ(run_->evaluations(), 1);
}

TEST_F(SearchMovesTest, NeighbourSweepRunsOncePerNewBestPlan) {
  Start("mixtral-8x22b", 64, 100000);
  SearchMoveOptions options;
  options.neighbour_sweep = 6;
  options.batch_line_search = false;
  SearchMoves moves = Moves(options);
  const Decisions best = run_->elite().entries().front().decisions;
  ASSERT_TRUE(moves.NeighbourSweep());
  EXPECT_EQ(run_->evaluations(), 1 + options.neighbour_sweep);
  std::set<int> expected = {best[kDegreesDecision]};
  const std::vector<int> nearest =
      run_->space().NearestTuples(best[kDegreesDecision]);
  for (int i = 0; i < options.neighbour_sweep; ++i) expected.insert(nearest[i]);
  EXPECT_EQ(TuplesTried(), expected);
  // Again around each new best (the sweep may have found one), then, while
  // the best plan stays, nothing more.
  for (int i = 0; i < 100 && moves.NeighbourSweep(); ++i) {
  }
  const int evaluations = run_->evaluations();
  EXPECT_FALSE(moves.NeighbourSweep());
  EXPECT_EQ(run_->evaluations(), evaluations);
  SearchMoveOptions off = options;
  off.neighbour_sweep = 0;
  EXPECT_FALSE(Moves(off).NeighbourSweep());
}

// A sampled plan that beats its tuple's best gets the batch line search (more
// evaluations than the batch); with the line search off, or when the plan
// does not beat its tuple's best, none.
TEST_F(SearchMovesTest, RecordSamplesLineSearchesNewTupleBests) {
  auto moved = [&]() {
    // Megatron's plan moved to dp1 tp4 pp8 (a tuple whose batch it keeps per
    // GPU, below what the tuple affords: see batch_line_search_test.cc).
    Start("llama-3.1-405b", 32, 100000);
    int target = -1;
    for (int t = 0; t < tuples_; ++t) {
      const Degrees& g = run_->space().degrees()[t];
      if (g.dp == 1 && g.tp == 4 && g.pp == 8) target = t;
    }
    EXPECT_GE(target, 0);
    std::mt19937_64 rng(3);
    return run_->space().MoveToTuple(*run_->baseline_decisions(), target, rng);
  };
  {
    const Decisions plan = moved();
    const std::vector<ScoredPlan> scored = run_->Evaluate({plan});
    ASSERT_TRUE(scored[0].evaluation.feasible);
    Moves(SearchMoveOptions()).RecordSamples({plan}, scored);
    EXPECT_GT(run_->evaluations(), 2);
    EXPECT_GT(
        elite_->OfTuple(plan[kDegreesDecision]).entries().front().scored.reward,
        scored[0].reward);
  }
  {
    const Decisions plan = moved();
    const std::vector<ScoredPlan> scored = run_->Evaluate({plan});
    SearchMoveOptions no_line_search;
    no_line_search.batch_line_search = false;
    Moves(no_line_search).RecordSamples({plan}, scored);
    EXPECT_EQ(run_->evaluations(), 2);
    EXPECT_EQ(elite_->OfTuple(plan[kDegreesDecision]).size(), 1);
  }
  {
    const Decisions plan = moved();
    const std::vector<ScoredPlan> scored = run_->Evaluate({plan});
    // A better plan of its tuple is already known.
    ScoredPlan better = scored[0];
    better.reward += 1;
    Decisions other = plan;
    other[kBatchDecision] += 1;
    elite_->Insert(other, better);
    Moves(SearchMoveOptions()).RecordSamples({plan}, scored);
    EXPECT_EQ(run_->evaluations(), 2);
  }
}

// The disaggregated start-of-search sweep takes only the tuple of the run's
// best plan: two samples of one tuple with different operator dims and decode
// batches lead to the same swept plans, each with Megatron's dims at the cost
// model's best decode batch, two evaluations per tuple (its own included).
TEST(SearchMovesDisaggregatedTest, TupleSweepAtBestBatchesKeepsOnlyTheTuple) {
  auto model = testing::MakeSmallDisaggregatedMoeCostModel();
  ASSERT_TRUE(model.ok()) << model.status();
  const SearchOptions options = testing::DisaggregatedSearchOptions(100000);
  const simulator::ShardDims megatron = simulator::MegatronShardDims();
  // A sample of the space with other dims than Megatron's on at least one
  // operator and the smallest decode batch, feasible.
  auto sample = [&](const PlanSpace& space) {
    std::mt19937_64 rng(11);
    for (int tries = 0; tries < 100000; ++tries) {
      Decisions d = space.SampleUniform(rng);
      d[kBatchDecision] = 0;
      if (!space.IsValid(d) || d == space.WithMegatronDims(d)) continue;
      if ((*model)->Evaluate(space.Decode(d)).feasible) return d;
    }
    ADD_FAILURE() << "no feasible sample";
    return Decisions{};
  };
  // The swept plans (sorted) from a run whose only plan is `start`, or
  // `start` with the batch one higher when `other_batch`.
  auto swept = [&](bool other_batch) {
    CancellationToken cancel;
    SearchObserver observer;
    internal::SearchRun run(**model, options, cancel, observer);
    EXPECT_TRUE(run.Start().ok());
    Decisions start = sample(run.space());
    if (other_batch) {
      start[kBatchDecision] = 1;
      start = run.space().WithMegatronDims(start);
    }
    EXPECT_EQ(run.Evaluate({start}).size(), 1u);
    TupleElite elite(run.space().NumChoices(kDegreesDecision), 4);
    std::mt19937_64 rng(5);
    SearchMoveOptions moves;
    moves.tuple_sweep = 8;
    SearchMoves(moves, run, elite, rng).TupleSweepAtBestBatches();
    // The baseline and the start, then two per tuple.
    EXPECT_EQ(run.evaluations(), 2 + 2 * (moves.tuple_sweep + 1));
    std::vector<Decisions> plans;
    for (const EliteEntry& e : run.elite().entries()) {
      if (e.decisions == start) continue;
      plans.push_back(e.decisions);
      for (int o = 0; o < simulator::kNumOpKinds; ++o) {
        EXPECT_EQ(e.decisions[kFirstOpDecision + o],
                  static_cast<int>(megatron[o]));
        EXPECT_EQ(e.decisions[kFirstPrefillOpDecision + o],
                  static_cast<int>(megatron[o]));
      }
      // The batch the cost model picks for the tuple.
      simulator::PlanDims plan = run.space().Decode(e.decisions);
      plan.batch_size = 0;
      const simulator::Evaluation best = (*model)->Evaluate(plan);
      EXPECT_EQ(e.scored.evaluation.batch_size, best.batch_size);
      EXPECT_EQ(e.scored.evaluation.output_tokens_per_s,
                best.output_tokens_per_s);
    }
    std::sort(plans.begin(), plans.end());
    return plans;
  };
  const std::vector<Decisions> from_sample = swept(false);
  EXPECT_EQ(from_sample.size(), 9u);
  EXPECT_EQ(swept(true), from_sample);
}

TEST(TupleEliteTest, TopRanksAcrossTuplesWithAtMostPerTuplePlans) {
  TupleElite elite(/*tuples=*/3, /*per_tuple=*/2);
  auto plan = [](int tuple, int batch, double reward) {
    Decisions d{};
    d[kDegreesDecision] = tuple;
    d[kBatchDecision] = batch;
    ScoredPlan s;
    s.reward = reward;
    return std::make_pair(d, s);
  };
  // Tuple 0 holds the three best plans, but keeps two.
  for (const auto& [d, s] : {plan(0, 1, 5.0), plan(0, 2, 4.0), plan(0, 3, 3.0),
                             plan(1, 1, 2.0), plan(2, 1, 1.0)}) {
    elite.Insert(d, s);
  }
  EXPECT_EQ(elite.OfTuple(0).size(), 2);
  const std::vector<EliteEntry> top = elite.Top(EliteHistory(4), 3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].scored.reward, 5.0);
  EXPECT_EQ(top[1].scored.reward, 4.0);
  EXPECT_EQ(top[2].scored.reward, 2.0);
  // Asking for more than it holds returns what it holds; the search's own
  // elite is merged in first.
  EliteHistory search_elite(4);
  const auto [d, s] = plan(2, 2, 10.0);
  search_elite.Insert(s, d);
  const std::vector<EliteEntry> all = elite.Top(search_elite, 100);
  ASSERT_EQ(all.size(), 5u);
  EXPECT_EQ(all[0].scored.reward, 10.0);
  EXPECT_EQ(elite.OfTuple(2).size(), 2);
}

}  // namespace
}  // namespace shardplan::policy
