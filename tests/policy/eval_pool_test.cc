// EvalPool: results in input order, identical to inline evaluation, for any
// thread count and with concurrent callers.
#include "policy/eval_pool.h"

#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "policy/plan_space.h"
#include "tests/policy/test_util.h"

namespace shardplan::policy {
namespace {

bool SameEvaluation(const simulator::Evaluation& a,
                    const simulator::Evaluation& b) {
  return a.feasible == b.feasible &&
         a.output_tokens_per_s == b.output_tokens_per_s &&
         a.tpot_seconds == b.tpot_seconds && a.batch_size == b.batch_size;
}

TEST(EvalPoolTest, MatchesInlineEvaluationInInputOrder) {
  auto model = testing::MakeCostModel("mixtral-8x22b", 16);
  ASSERT_TRUE(model.ok()) << model.status();
  auto space = PlanSpace::Create(**model);
  ASSERT_TRUE(space.ok());
  std::mt19937_64 rng(5);
  std::vector<simulator::PlanDims> plans;
  for (int i = 0; i < 1000; ++i)
    plans.push_back((*space)->Decode((*space)->SampleUniform(rng)));
  std::vector<simulator::Evaluation> expected;
  for (const auto& p : plans) expected.push_back((*model)->Evaluate(p));
  for (int threads : {0, 1, 3}) {
    EvalPool pool(threads);
    std::vector<simulator::Evaluation> out(plans.size());
    pool.Evaluate(**model, plans, absl::MakeSpan(out));
    for (size_t i = 0; i < plans.size(); ++i) {
      ASSERT_TRUE(SameEvaluation(out[i], expected[i]))
          << "threads " << threads << " i " << i;
    }
  }
  // Two callers at once share the workers.
  EvalPool pool(2);
  std::vector<simulator::Evaluation> a(plans.size()), b(plans.size());
  std::thread other([&] { pool.Evaluate(**model, plans, absl::MakeSpan(a)); });
  pool.Evaluate(**model, plans, absl::MakeSpan(b));
  other.join();
  for (size_t i = 0; i < plans.size(); ++i) {
    ASSERT_TRUE(SameEvaluation(a[i], expected[i]));
    ASSERT_TRUE(SameEvaluation(b[i], expected[i]));
  }
}

}  // namespace
}  // namespace shardplan::policy
