// SearchJob without gRPC: a real torch-free searcher, a real SQLite store;
// the outcome's best, top plans and frontier; persistence; cancellation and
// errors; the objective filter of improvements.
#include "server/search_job.h"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "policy/searcher.h"
#include "server/metrics.h"
#include "server/store/elite_store.h"
#include "simulator/megatron.h"
#include "tests/server/test_util.h"

namespace shardplan::server {
namespace {

using testing::FakeScript;
using testing::FakeSearcher;
using testing::MakePlanRequest;
using testing::TempDir;

class RecordingListener : public SearchJob::Listener {
 public:
  void OnImprovement(const policy::ScoredPlan& best, int) override {
    improvements.push_back(best);
  }
  void OnProgress(const policy::SearchProgress& progress) override {
    evaluations = progress.evaluations;
  }
  std::vector<policy::ScoredPlan> improvements;
  int evaluations = 0;
};

// A real searcher whose result carries weights that say which space they
// were learned in.
class SpaceTaggedSearcher final : public policy::Searcher {
 public:
  explicit SpaceTaggedSearcher(std::unique_ptr<policy::Searcher> inner)
      : inner_(std::move(inner)) {}
  absl::string_view method() const override { return inner_->method(); }
  absl::StatusOr<policy::SearchResult> Search(
      const simulator::CostModel& model, const policy::SearchOptions& options,
      const policy::CancellationToken& cancel,
      policy::SearchObserver& observer) override {
    absl::StatusOr<policy::SearchResult> result =
        inner_->Search(model, options, cancel, observer);
    if (result.ok()) {
      result->policy_weights =
          options.disaggregated ? "disaggregated" : "aggregated";
    }
    return result;
  }

 private:
  std::unique_ptr<policy::Searcher> inner_;
};

class SearchJobTest : public ::testing::Test {
 protected:
  void SetUp() override { OpenStore("store.db"); }

  void OpenStore(const std::string& file) {
    EliteStore::Options options;
    options.path = dir_.File(file);
    absl::StatusOr<std::unique_ptr<EliteStore>> store =
        EliteStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status();
    history_ =
        std::make_unique<WarmStartPersistence>(*std::move(store), metrics_);
  }

  // A validated request for `method` (a real searcher unless `fake`; with
  // `tag_weights` its weights name the space they were learned in).
  void Prepare(shardplan::v1::PlanRequest request, bool fake = false,
               bool tag_weights = false) {
    absl::StatusOr<ValidatedPlanRequest> validated =
        ValidatePlanRequest(request, RequestLimits());
    ASSERT_TRUE(validated.ok()) << validated.status();
    request_ = *std::move(validated);
    SearchJobDeps deps;
    deps.history = history_.get();
    if (fake) {
      deps.searcher_factory = [this](absl::string_view) {
        return absl::StatusOr<std::unique_ptr<policy::Searcher>>(
            std::make_unique<FakeSearcher>(script_));
      };
    } else if (tag_weights) {
      deps.searcher_factory = [](absl::string_view method)
          -> absl::StatusOr<std::unique_ptr<policy::Searcher>> {
        absl::StatusOr<std::unique_ptr<policy::Searcher>> inner =
            policy::CreateSearcher(method);
        if (!inner.ok()) return inner.status();
        return std::make_unique<SpaceTaggedSearcher>(*std::move(inner));
      };
    } else {
      deps.searcher_factory = policy::CreateSearcher;
    }
    policy::ScoredPlan baseline;
    baseline.plan = simulator::MegatronPlan(*request_.cost_model);
    baseline.evaluation = request_.cost_model->Evaluate(baseline.plan);
    job_ = std::make_unique<SearchJob>(std::move(deps), request_, baseline);
  }

  TempDir dir_;
  ServerMetrics metrics_{2, {"random", "anneal", "grid"}};
  std::unique_ptr<WarmStartPersistence> history_;
  FakeScript script_;
  ValidatedPlanRequest request_;
  std::unique_ptr<SearchJob> job_;
};

TEST_F(SearchJobTest, OutcomeHasBestTopPlansAndFrontierAndIsPersisted) {
  shardplan::v1::PlanRequest request = MakePlanRequest("llama-3.1-70b", 16);
  request.mutable_options()->set_method("anneal");
  request.mutable_options()->set_max_evaluations(1500);
  request.mutable_options()->set_top_n(7);
  Prepare(request);
  RecordingListener listener;
  policy::CancellationToken cancel;
  const SearchJob::Outcome outcome = job_->Run(cancel, listener);
  ASSERT_TRUE(outcome.status.ok()) << outcome.status;
  ASSERT_TRUE(outcome.stop_reason.has_value());
  EXPECT_NE(*outcome.stop_reason, policy::StopReason::kCancelled);
  // The aggregated search and the disaggregated sweep (disaggregation
  // "auto") share the budget; both are counted.
  EXPECT_GT(outcome.evaluations, 1500 / 2);
  EXPECT_LE(outcome.evaluations, 1500 + 64);  // a batch may overrun
  EXPECT_GT(job_->grid_tokens_per_s(), 0);
  // The best is the last improvement (or the baseline), and first of the top.
  const double best = job_->Score(outcome.best);
  EXPECT_GE(best, job_->Score(job_->baseline()));
  for (const policy::ScoredPlan& p : listener.improvements) {
    EXPECT_LE(job_->Score(p), best);
  }
  ASSERT_EQ(outcome.top_plans.size(), 7u);
  EXPECT_EQ(outcome.top_plans.front().plan, outcome.best.plan);
  for (size_t i = 0; i < outcome.top_plans.size(); ++i) {
    EXPECT_TRUE(outcome.top_plans[i].evaluation.feasible);
    if (i > 0) {
      EXPECT_GE(job_->Score(outcome.top_plans[i - 1]),
                job_->Score(outcome.top_plans[i]));
    }
    for (size_t j = 0; j < i; ++j) {
      const policy::ScoredPlan& a = outcome.top_plans[i];
      const policy::ScoredPlan& b = outcome.top_plans[j];
      EXPECT_NE(a.plan, b.plan) << "top plans are distinct";
      EXPECT_FALSE(
          a.plan.tp == b.plan.tp && a.plan.pp == b.plan.pp &&
          a.plan.dp == b.plan.dp && a.plan.replicas == b.plan.replicas &&
          a.evaluation.batch_size == b.evaluation.batch_size &&
          a.evaluation.output_tokens_per_s == b.evaluation.output_tokens_per_s)
          << "a variant with the same figures is not listed twice";
    }
  }
  ASSERT_GE(outcome.frontier.size(), 2u);
  for (size_t i = 1; i < outcome.frontier.size(); ++i) {
    EXPECT_GT(outcome.frontier[i - 1].evaluation.output_tokens_per_s_per_gpu,
              outcome.frontier[i].evaluation.output_tokens_per_s_per_gpu);
    EXPECT_LT(
        policy::TokensPerSecondPerUser(outcome.frontier[i - 1].evaluation),
        policy::TokensPerSecondPerUser(outcome.frontier[i].evaluation));
  }
  // Nothing in the frontier is beaten on both axes by the best plan.
  for (const policy::ScoredPlan& p : outcome.frontier) {
    const bool dominated =
        outcome.best.evaluation.output_tokens_per_s_per_gpu >
            p.evaluation.output_tokens_per_s_per_gpu &&
        policy::TokensPerSecondPerUser(outcome.best.evaluation) >
            policy::TokensPerSecondPerUser(p.evaluation);
    EXPECT_FALSE(dominated);
  }
  // Persisted: the next search of the problem warm-starts from it.
  const WarmStartPersistence::Found found = history_->Find(
      MakeProblemKey(request_.cost_model->problem()), /*wanted=*/true);
  ASSERT_TRUE(found.warm_start.has_value());
  EXPECT_FALSE(found.warm_start->elite_plans.empty());
}

// options.disaggregation "auto" with a searching method: the same method
// searches the disaggregated space on its share of the budget, its plans are
// persisted, and the next search of the problem gets them back (the store
// round-trips every field of a disaggregated plan).
TEST_F(SearchJobTest, DisaggregatedSearchIsPersistedAndWarmStartsTheNext) {
  shardplan::v1::PlanRequest request = MakePlanRequest("llama-3.1-70b", 16);
  request.mutable_options()->set_method("anneal");
  request.mutable_options()->set_max_evaluations(1200);
  Prepare(request);
  RecordingListener listener;
  policy::CancellationToken cancel;
  const SearchJob::Outcome outcome = job_->Run(cancel, listener);
  ASSERT_TRUE(outcome.status.ok()) << outcome.status;
  ASSERT_TRUE(outcome.best_disaggregated.has_value());
  const simulator::PlanDims& best = outcome.best_disaggregated->plan;
  EXPECT_TRUE(best.disaggregated);
  EXPECT_TRUE(request_.cost_model->ValidatePlan(best).ok());
  EXPECT_FALSE(outcome.best.plan.disaggregated);  // "auto": the aggregated
  // One budget for both searches, honestly counted.
  EXPECT_GT(outcome.evaluations, 1200 / 2);
  EXPECT_LE(outcome.evaluations, 1200 + 64);
  EXPECT_EQ(listener.evaluations, outcome.evaluations);

  const WarmStartPersistence::Found found = history_->Find(
      MakeProblemKey(request_.cost_model->problem()), /*wanted=*/true);
  ASSERT_TRUE(found.warm_start.has_value());
  int disaggregated = 0;
  bool best_stored = false;
  for (const simulator::PlanDims& plan : found.warm_start->elite_plans) {
    if (!plan.disaggregated) continue;
    ++disaggregated;
    best_stored |= plan == best;
  }
  EXPECT_GT(disaggregated, 0);
  EXPECT_TRUE(best_stored) << "the stored plan equals the one found";
}

// With "auto" both searches leave weights; the store keeps the
// disaggregated search's: carried to the next problem of the family they lift
// disaggregated searches at small budgets and leave aggregated ones as they
// are (docs/benchmarks.md, "Learning across problems").
TEST_F(SearchJobTest, AutoStoresTheDisaggregatedSearchsWeights) {
  for (const char* mode : {"auto", "only", "off"}) {
    OpenStore(std::string(mode) + ".db");  // a fresh store
    shardplan::v1::PlanRequest request = MakePlanRequest("llama-3.1-70b", 16);
    request.mutable_options()->set_method("anneal");
    request.mutable_options()->set_max_evaluations(400);
    request.mutable_options()->set_disaggregation(mode);
    Prepare(request, /*fake=*/false, /*tag_weights=*/true);
    RecordingListener listener;
    policy::CancellationToken cancel;
    ASSERT_TRUE(job_->Run(cancel, listener).status.ok()) << mode;
    const WarmStartPersistence::Found found = history_->Find(
        MakeProblemKey(request_.cost_model->problem()), /*wanted=*/true);
    ASSERT_TRUE(found.warm_start.has_value()) << mode;
    EXPECT_EQ(found.warm_start->policy_weights,
              std::string(mode) == "off" ? "aggregated" : "disaggregated")
        << mode;
  }
}

TEST_F(SearchJobTest, StoredDisaggregatedPlanRoundTrips) {
  Prepare(MakePlanRequest("llama-3.1-70b", 16));
  const simulator::Problem& problem = request_.cost_model->problem();
  simulator::PlanDims plan;
  plan.disaggregated = true;
  plan.prefill_instances = 2;
  plan.prefill.tp = 2;
  plan.prefill.pp = 2;
  plan.prefill.batch_size = 4;
  plan.decode_instances = 1;
  plan.tp = 8;
  plan.micro_batches = 1;
  plan.batch_size = 64;
  plan.dims[static_cast<int>(simulator::OpKind::kAttention)] =
      simulator::ShardDim::kBatch;
  ASSERT_TRUE(request_.cost_model->ValidatePlan(plan).ok());
  StoredPlan stored;
  stored.plan = plan;
  stored.reward = 0.5;
  stored.output_tokens_per_s = 1000;
  history_->Record(MakeProblemKey(problem), problem, {stored}, "");
  const WarmStartPersistence::Found found =
      history_->Find(MakeProblemKey(problem), /*wanted=*/true);
  ASSERT_TRUE(found.warm_start.has_value());
  ASSERT_EQ(found.warm_start->elite_plans.size(), 1u);
  EXPECT_EQ(found.warm_start->elite_plans[0], plan);
}

TEST_F(SearchJobTest, CancelledSearchKeepsWhatItFound) {
  script_.improvements = 2;
  script_.block_until_cancelled = false;
  Prepare(MakePlanRequest("llama-3.1-8b", 8), /*fake=*/true);
  RecordingListener listener;
  policy::CancellationToken cancel;
  cancel.Cancel();
  // Cancelled before it started: no search, the baseline.
  SearchJob::Outcome outcome = job_->Run(cancel, listener);
  EXPECT_EQ(outcome.stop_reason, policy::StopReason::kCancelled);
  EXPECT_EQ(outcome.best.plan, job_->baseline().plan);
  EXPECT_EQ(script_.started(), 0);
}

TEST_F(SearchJobTest, FailureIsInTheStatusAndKeepsTheStreamedBest) {
  script_.improvements = 2;
  script_.fail_internal = true;
  Prepare(MakePlanRequest("llama-3.1-8b", 8), /*fake=*/true);
  RecordingListener listener;
  policy::CancellationToken cancel;
  const SearchJob::Outcome outcome = job_->Run(cancel, listener);
  EXPECT_EQ(outcome.status.code(), absl::StatusCode::kInternal);
  EXPECT_FALSE(outcome.stop_reason.has_value());
  // Improvements streamed before the failure still count as the best.
  ASSERT_EQ(listener.improvements.size(), 2u);
  EXPECT_EQ(outcome.best.plan, listener.improvements.back().plan);
}

TEST_F(SearchJobTest, AbandonedJobStoresTheBaseline) {
  Prepare(MakePlanRequest("llama-3.1-8b", 8), /*fake=*/true);
  const SearchJob::Outcome outcome = job_->Abandon();
  EXPECT_EQ(outcome.best.plan, job_->baseline().plan);
  ASSERT_EQ(outcome.top_plans.size(), 1u);
  EXPECT_TRUE(history_
                  ->Find(MakeProblemKey(request_.cost_model->problem()),
                         /*wanted=*/true)
                  .warm_start.has_value());
}

}  // namespace
}  // namespace shardplan::server
