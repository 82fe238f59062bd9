// Every searcher behind CreateSearcher: determinism for a seed (whatever the
// pool size), valid plans, budget, exhaustive limits and optimum, cancellation
// latency.
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

namespace shardplan::policy {
namespace {

using ::testing::HasSubstr;

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

absl::StatusOr<SearchResult> RunSearch(const std::string& method,
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

TEST(SearchersTest, UnknownMethodIsInvalidArgument) {
  auto s = CreateSearcher("gradient-descent");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("gradient-descent"));
  EXPECT_THAT(SearchMethods(),
              ::testing::ElementsAre("rl", "megatron", "random", "anneal",
                                     "genetic", "exhaustive", "grid"));
}

TEST(SearchersTest, SameSeedSameResultWhateverThePoolSize) {
  auto model = testing::MakeCostModel("mixtral-8x7b", 8);
  ASSERT_TRUE(model.ok()) << model.status();
  // A fixed concurrency leaves one batch choice: a space small enough to
  // enumerate.
  auto small = testing::MakeCostModel("llama-3.1-8b", 2, 2048, 512, 32);
  ASSERT_TRUE(small.ok()) << small.status();
  EvalPool pool(2);
  for (const std::string& method : SearchMethods()) {
    SCOPED_TRACE(method);
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

TEST(SearchersTest, EveryMethodReturnsValidPlansWithinBudget) {
  for (const auto& [name, gpus] :
       std::vector<std::pair<std::string, int>>{{"llama-3.1-70b", 16},
                                                {"qwen3-235b-a22b", 16},
                                                {"deepseek-v3", 32}}) {
    auto model = testing::MakeCostModel(name, gpus);
    ASSERT_TRUE(model.ok()) << model.status();
    for (const std::string& method : SearchMethods()) {
      if (method == "exhaustive") continue;  // covered on small spaces below
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

TEST(SearchersTest, MegatronReturnsTheHeuristicPlanWithOneEvaluation) {
  auto model = testing::MakeCostModel("llama-3.1-70b", 16);
  ASSERT_TRUE(model.ok()) << model.status();
  auto r = RunSearch("megatron", **model, SearchOptions(), nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->evaluations, 1);
  EXPECT_EQ(r->best.plan, r->baseline.plan);
  EXPECT_TRUE(r->best.evaluation.feasible);
}

TEST(SearchersTest, ExhaustiveFailsAboveTheLimit) {
  auto model = testing::MakeCostModel("deepseek-v3", 128);
  ASSERT_TRUE(model.ok()) << model.status();
  SearchOptions options;
  options.max_evaluations = 5000;
  auto r = RunSearch("exhaustive", **model, options, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("space has"));
  EXPECT_THAT(r.status().message(), HasSubstr("limit 4999"));
}

TEST(SearchersTest, ExhaustiveIsTheOptimumOfASmallSpace) {
  auto model = testing::MakeCostModel("llama-3.1-8b", 2, 2048, 512, 32);
  ASSERT_TRUE(model.ok()) << model.status();
  SearchOptions options;
  options.max_evaluations = 100000;
  auto exhaustive = RunSearch("exhaustive", **model, options, nullptr);
  ASSERT_TRUE(exhaustive.ok()) << exhaustive.status();
  EXPECT_EQ(exhaustive->stop_reason, "exhausted");
  EXPECT_LE(exhaustive->evaluations, exhaustive->space_size + 1);
  for (const char* method : {"random", "anneal", "genetic", "rl"}) {
    options.max_evaluations = 300;
    auto r = RunSearch(method, **model, options, nullptr);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_LE(r->best.reward, exhaustive->best.reward + 1e-12) << method;
  }
}

TEST(SearchersTest, GridSweepsEveryDegreeTupleWithMegatronDims) {
  auto model = testing::MakeCostModel("qwen3-235b-a22b", 16);
  ASSERT_TRUE(model.ok()) << model.status();
  auto space = PlanSpace::Create(**model);
  ASSERT_TRUE(space.ok()) << space.status();
  SearchOptions options;
  options.max_evaluations = 1'000'000;
  auto grid = RunSearch("grid", **model, options, nullptr);
  ASSERT_TRUE(grid.ok()) << grid.status();
  EXPECT_EQ(grid->stop_reason, "exhausted");
  // Every tuple with every batch its masks allow: more evaluations than
  // tuples, and replicated tuples among them.
  EXPECT_GT(grid->evaluations, (*space)->NumChoices(kDegreesDecision));
  bool replicated = false;
  for (const Degrees& g : (*space)->degrees()) replicated |= g.replicas > 1;
  EXPECT_TRUE(replicated);
  EXPECT_EQ(grid->best.plan.dims, simulator::MegatronShardDims());
  auto megatron = RunSearch("megatron", **model, options, nullptr);
  ASSERT_TRUE(megatron.ok()) << megatron.status();
  EXPECT_GE(grid->best.evaluation.output_tokens_per_s,
            megatron->best.evaluation.output_tokens_per_s);
}

// More GPUs never make the best plan worse per GPU: k copies of the best plan
// on N GPUs are a plan on k*N GPUs (the space holds replicas), so the best
// plan there is at least as good per GPU.
TEST(SearchersTest, BestPlanPerGpuIsMonotoneInGpus) {
  for (const auto& [name, gpus] : std::vector<std::pair<std::string, int>>{
           {"qwen3-235b-a22b", 8}, {"deepseek-v3", 16}, {"llama-3.1-70b", 8}}) {
    SCOPED_TRACE(name);
    auto small =
        testing::MakeCostModel(name, gpus, 2048, 512, 0, 0, 40, "fp8");
    auto large =
        testing::MakeCostModel(name, 2 * gpus, 2048, 512, 0, 0, 40, "fp8");
    ASSERT_TRUE(small.ok()) << small.status();
    ASSERT_TRUE(large.ok()) << large.status();
    SearchOptions options;
    options.max_evaluations = 1'000'000;
    auto best_small = RunSearch("grid", **small, options, nullptr);
    ASSERT_TRUE(best_small.ok()) << best_small.status();
    ASSERT_TRUE(best_small->best.evaluation.feasible);
    // Two copies of it on twice the GPUs: valid, and as good per GPU.
    simulator::PlanDims copies = best_small->best.plan;
    if ((*small)->problem().model.is_moe()) {
      copies.replicas *= 2;
    } else {
      copies.dp *= 2;
    }
    ASSERT_TRUE((*large)->ValidatePlan(copies).ok());
    const simulator::Evaluation e = (*large)->Evaluate(copies);
    EXPECT_NEAR(e.output_tokens_per_s_per_gpu,
                best_small->best.evaluation.output_tokens_per_s_per_gpu,
                1e-6 * e.output_tokens_per_s_per_gpu);
    auto space = PlanSpace::Create(**large);
    ASSERT_TRUE(space.ok());
    EXPECT_TRUE((*space)->Encode(copies, e.batch_size).ok());
    for (const std::string method : {"grid", "rl"}) {
      SCOPED_TRACE(method);
      SearchOptions budget;
      budget.max_evaluations = method == "grid" ? 1'000'000 : 3000;
      budget.seed = 5;
      auto best_large = RunSearch(method, **large, budget, nullptr);
      ASSERT_TRUE(best_large.ok()) << best_large.status();
      EXPECT_GE(best_large->best.evaluation.output_tokens_per_s_per_gpu,
                best_small->best.evaluation.output_tokens_per_s_per_gpu *
                    (1 - 1e-9));
    }
  }
}

// Cancel() from another thread once the search is running; Search must return
// CANCELLED within 100 ms (steady clock from Cancel() to the return).
TEST(SearchersTest, CancellationStopsEverySearchQuickly) {
  auto model = testing::MakeCostModel("deepseek-v3", 32);
  ASSERT_TRUE(model.ok()) << model.status();
  auto small = testing::MakeCostModel("llama-3.1-8b", 8);
  ASSERT_TRUE(small.ok()) << small.status();
  for (const std::string& method : SearchMethods()) {
    // megatron: one evaluation; grid: one sweep of a few thousand plans that
    // ends in milliseconds. Nothing to cancel in either.
    if (method == "megatron" || method == "grid") continue;
    SCOPED_TRACE(method);
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
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled);
    const double ms =
        std::chrono::duration<double, std::milli>(returned_at - cancelled_at)
            .count();
    EXPECT_LT(ms, 100.0);
  }
}

}  // namespace
}  // namespace shardplan::policy
