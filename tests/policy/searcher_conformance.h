// Checks every searcher behind CreateSearcher must pass, as a
// value-parameterized suite over the method name: determinism for a seed
// (whatever the pool size), valid plans within the budget, never above the
// optimum of a small space, cancellation latency.
// tests/policy/searchers_test.cc instantiates it for the baselines,
// tests/policy/rl/rl_searcher_test.cc for "rl" (each binary has the methods
// its libraries provide). Include it from one file per test binary: it
// defines the tests.
#ifndef SHARDPLAN_TESTS_POLICY_SEARCHER_CONFORMANCE_H_
#define SHARDPLAN_TESTS_POLICY_SEARCHER_CONFORMANCE_H_

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policy/eval_pool.h"
#include "policy/searcher.h"
#include "tests/policy/test_util.h"

namespace shardplan::policy::testing {

class RecordingObserver : public SearchObserver {
 public:
  void OnImprovement(const Improvement& imp) override {
    improvements.push_back(imp);
  }
  void OnProgress(const SearchProgress& p) override {
    ++progress_calls;
    delta_sum += p.evaluations_delta;
  }
  std::vector<Improvement> improvements;
  int progress_calls = 0;
  int delta_sum = 0;
};

inline absl::StatusOr<SearchResult> RunSearch(const std::string& method,
                                              const simulator::CostModel& model,
                                              SearchOptions options,
                                              RecordingObserver* observer) {
  auto searcher = CreateSearcher(method);
  if (!searcher.ok()) return searcher.status();
  CancellationToken cancel;
  RecordingObserver local;
  return (*searcher)->Search(model, options, cancel,
                             observer ? *observer : local);
}

// Searches the disaggregated space of `model` with `method` (3000
// evaluations) and checks that the best plan's prefill dims differ from
// Megatron's and beat them: the same plan with Megatron's prefill dims is
// infeasible or slower. Returns the best plan's tok/s (0 when none).
inline double ExpectBetterPrefillDimsFound(const std::string& method,
                                           const simulator::CostModel& model) {
  SCOPED_TRACE(method);
  SearchOptions options;
  options.disaggregated = true;
  options.max_evaluations = 3000;
  auto r = RunSearch(method, model, options, nullptr);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok() || !r->best.evaluation.feasible) {
    ADD_FAILURE() << "no feasible plan";
    return 0;
  }
  EXPECT_NE(r->best.plan.prefill.dims, simulator::MegatronShardDims());
  simulator::PlanDims megatron_prefill = r->best.plan;
  megatron_prefill.prefill.dims = simulator::MegatronShardDims();
  const simulator::Evaluation e = model.Evaluate(megatron_prefill);
  EXPECT_TRUE(!e.feasible ||
              e.output_tokens_per_s < r->best.evaluation.output_tokens_per_s);
  return r->best.evaluation.output_tokens_per_s;
}

// Parameter: the method name given to CreateSearcher.
class SearcherConformanceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SearcherConformanceTest, SameSeedSameResultWhateverThePoolSize) {
  auto model = MakeCostModel("mixtral-8x7b", 8);
  ASSERT_TRUE(model.ok()) << model.status();
  // A fixed concurrency leaves one batch choice: a space small enough to
  // enumerate.
  auto small = MakeCostModel("llama-3.1-8b", 2, 2048, 512, 32);
  ASSERT_TRUE(small.ok()) << small.status();
  EvalPool pool(2);
  {
    const std::string& method = GetParam();
    const simulator::CostModel& m = method == "exhaustive" ? **small : **model;
    SearchOptions options;
    options.max_evaluations = method == "exhaustive" ? 100000 : 600;
    options.max_seconds = 120;
    options.seed = 42;
    RecordingObserver o1, o2;
    auto a = RunSearch(method, m, options, &o1);
    options.pool = &pool;
    auto b = RunSearch(method, m, options, &o2);
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(a->best.plan, b->best.plan);
    EXPECT_EQ(a->best.reward, b->best.reward);
    EXPECT_EQ(a->evaluations, b->evaluations);
    ASSERT_EQ(a->elite.size(), b->elite.size());
    for (size_t i = 0; i < a->elite.size(); ++i)
      EXPECT_EQ(a->elite[i].plan, b->elite[i].plan);
    ASSERT_EQ(o1.improvements.size(), o2.improvements.size());
    for (size_t i = 0; i < o1.improvements.size(); ++i) {
      EXPECT_EQ(o1.improvements[i].evaluations, o2.improvements[i].evaluations);
    }
  }
}

TEST_P(SearcherConformanceTest, EveryMethodReturnsValidPlansWithinBudget) {
  // Exhaustive: covered on small spaces (SearchersTest).
  if (GetParam() == "exhaustive") GTEST_SKIP();
  for (const auto& [name, gpus] :
       std::vector<std::pair<std::string, int>>{{"llama-3.1-70b", 16},
                                                {"qwen3-235b-a22b", 16},
                                                {"deepseek-v3", 32}}) {
    auto model = MakeCostModel(name, gpus);
    ASSERT_TRUE(model.ok()) << model.status();
    {
      const std::string& method = GetParam();
      SCOPED_TRACE(name + " " + method);
      SearchOptions options;
      options.max_evaluations = 400;
      options.seed = 3;
      RecordingObserver observer;
      auto r = RunSearch(method, **model, options, &observer);
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_LE(r->evaluations, options.max_evaluations);
      EXPECT_EQ(observer.delta_sum, r->evaluations);
      EXPECT_GE(observer.progress_calls, 1);
      EXPECT_TRUE((*model)->ValidatePlan(r->best.plan).ok());
      EXPECT_TRUE((*model)->ValidatePlan(r->baseline.plan).ok());
      for (const ScoredPlan& s : r->elite)
        EXPECT_TRUE((*model)->ValidatePlan(s.plan).ok());
      for (size_t i = 1; i < r->elite.size(); ++i) {
        EXPECT_GE(r->elite[i - 1].reward, r->elite[i].reward);
      }
      // Never worse than the baseline it started from; improvements increase.
      EXPECT_GE(r->best.reward, r->baseline.reward);
      for (size_t i = 1; i < observer.improvements.size(); ++i) {
        EXPECT_GT(observer.improvements[i].best.reward,
                  observer.improvements[i - 1].best.reward);
      }
      if (!observer.improvements.empty()) {
        EXPECT_EQ(observer.improvements.back().best.plan, r->best.plan);
      }
      EXPECT_GT(r->space_size, 0);
    }
  }
}

// The metaheuristics (and RL) stay at or below the true optimum that
// exhaustive enumeration finds on a small space.
TEST_P(SearcherConformanceTest, NeverBeatsTheOptimumOfASmallSpace) {
  const std::string& method = GetParam();
  if (method == "megatron" || method == "exhaustive") GTEST_SKIP();
  auto model = MakeCostModel("llama-3.1-8b", 2, 2048, 512, 32);
  ASSERT_TRUE(model.ok()) << model.status();
  SearchOptions options;
  options.max_evaluations = 100000;
  auto exhaustive = RunSearch("exhaustive", **model, options, nullptr);
  ASSERT_TRUE(exhaustive.ok()) << exhaustive.status();
  options.max_evaluations = 300;
  auto r = RunSearch(method, **model, options, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_LE(r->best.reward, exhaustive->best.reward + 1e-12) << method;
}

// Cancel() from another thread once the search is running; Search must return
// CANCELLED within 100 ms (steady clock from Cancel() to the return).
TEST_P(SearcherConformanceTest, CancellationStopsEverySearchQuickly) {
  // Megatron: one evaluation, nothing to cancel.
  // megatron: one evaluation; grid: one sweep that ends in milliseconds.
  if (GetParam() == "megatron" || GetParam() == "grid") GTEST_SKIP();
  auto model = MakeCostModel("deepseek-v3", 32);
  ASSERT_TRUE(model.ok()) << model.status();
  auto small = MakeCostModel("llama-3.1-8b", 8);
  ASSERT_TRUE(small.ok()) << small.status();
  {
    const std::string& method = GetParam();
    const simulator::CostModel& m = method == "exhaustive" ? **small : **model;
    class CancelOnProgress : public SearchObserver {
     public:
      void OnProgress(const SearchProgress&) override {
        if (!started.HasBeenNotified()) started.Notify();
      }
      absl::Notification started;
    } observer;
    CancellationToken cancel;
    SearchOptions options;
    options.max_evaluations = 50'000'000;
    options.exhaustive_limit = 1e9;
    options.max_seconds = 600;
    std::chrono::steady_clock::time_point cancelled_at;
    std::thread canceller([&] {
      observer.started.WaitForNotification();
      cancelled_at = std::chrono::steady_clock::now();
      cancel.Cancel();
    });
    auto searcher = CreateSearcher(method);
    ASSERT_TRUE(searcher.ok());
    auto r = (*searcher)->Search(m, options, cancel, observer);
    const auto returned_at = std::chrono::steady_clock::now();
    canceller.join();
    // A cancelled search still returns what it found.
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->stop_reason, StopReason::kCancelled);
    EXPECT_TRUE(r->best.evaluation.feasible ||
                !r->baseline.evaluation.feasible);
    const double ms =
        std::chrono::duration<double, std::milli>(returned_at - cancelled_at)
            .count();
    EXPECT_LT(ms, 100.0);
  }
}

}  // namespace shardplan::policy::testing

#endif  // SHARDPLAN_TESTS_POLICY_SEARCHER_CONFORMANCE_H_
