// The frontier's terminal chart, top-plan table, CSV and gnuplot script; the
// PNG error when gnuplot is missing.
#include "client/frontier.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shardplan::client {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

shardplan::v1::PlanUpdate UpdateWithFrontier() {
  shardplan::v1::PlanUpdate update;
  // (tokens/s per user, tokens/s per GPU, batch): a falling curve.
  const double points[][3] = {{10, 2000, 256}, {40, 900, 32}, {100, 150, 1}};
  for (const auto& pt : points) {
    shardplan::v1::FrontierPoint* p = update.add_frontier();
    p->set_tokens_per_s_per_user(pt[0]);
    p->set_output_tokens_per_s_per_gpu(pt[1]);
    p->mutable_prediction()->set_tpot_ms(1000 / pt[0]);
    p->mutable_prediction()->set_output_tokens_per_s(pt[1] * 16);
    p->mutable_prediction()->set_batch_size(static_cast<int>(pt[2]));
    p->mutable_plan()->set_tp(8);
    p->mutable_plan()->set_pp(1);
    p->mutable_plan()->set_dp(1);
    p->mutable_plan()->set_ep(1);
    p->mutable_plan()->set_replicas(2);
    p->mutable_plan()->set_batch_size(static_cast<int>(pt[2]));
  }
  *update.mutable_plan() = update.frontier(0).plan();
  return update;
}

TEST(FrontierChartTest, PlotsEveryPointWithinTheGridAndMarksTheBest) {
  const shardplan::v1::PlanUpdate update = UpdateWithFrontier();
  const std::string chart = RenderFrontierChart(update, 30, 8);
  EXPECT_THAT(chart, HasSubstr("3 plans"));
  EXPECT_THAT(chart, HasSubstr("tokens/s per user"));
  EXPECT_THAT(chart, HasSubstr("output tok/s per GPU"));
  EXPECT_THAT(chart, HasSubstr("@ the best plan"));
  const std::vector<std::string> lines = absl::StrSplit(chart, '\n');
  int stars = 0, best = 0, rows = 0;
  int best_row = -1, star_rows_max = -1;
  for (size_t i = 0; i < lines.size(); ++i) {
    const size_t bar = lines[i].find(" |");
    if (bar == std::string::npos) continue;
    const std::string row = lines[i].substr(bar + 2);
    EXPECT_LE(row.size(), 30u);
    for (char c : row) {
      if (c == '*') {
        ++stars;
        star_rows_max = rows;
      }
      if (c == '@') {
        ++best;
        best_row = rows;
      }
    }
    ++rows;
  }
  EXPECT_EQ(rows, 8);
  EXPECT_EQ(stars, 2);
  EXPECT_EQ(best, 1);
  // The best-throughput plan is on the top row, the fastest-per-user lowest.
  EXPECT_EQ(best_row, 0);
  EXPECT_EQ(star_rows_max, 7);
  // The best plan's column is the leftmost (lowest per-user speed).
  EXPECT_THAT(lines[2], HasSubstr(" |@"));
}

TEST(FrontierChartTest, EmptyWithoutAFrontier) {
  EXPECT_EQ(RenderFrontierChart(shardplan::v1::PlanUpdate()), "");
  EXPECT_EQ(RenderTopPlans(shardplan::v1::PlanUpdate()), "");
}

TEST(FrontierCsvTest, OneHeaderAndOneLinePerPoint) {
  const std::string csv = FrontierCsv(UpdateWithFrontier());
  const std::vector<std::string> lines =
      absl::StrSplit(csv, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_THAT(lines[0],
              StartsWith("tokens_per_s_per_user,output_tokens_per_s_per_gpu,"));
  EXPECT_EQ(lines[1], "10,2000,32000,0,100,256,2,1,8,1,1,0");
  EXPECT_EQ(lines[3], "100,150,2400,0,10,1,2,1,8,1,1,0");
}

TEST(FrontierPngTest, ScriptQuotesPathsAndUsesLogScales) {
  const std::string script =
      FrontierGnuplotScript("/tmp/a.csv", "/tmp/it's.png", "llama");
  EXPECT_THAT(script, HasSubstr("set output '/tmp/it''s.png'"));
  EXPECT_THAT(script, HasSubstr("set logscale xy"));
  EXPECT_THAT(script, HasSubstr("'/tmp/a.csv' skip 1 using 1:2"));
}

TEST(FrontierPngTest, MissingGnuplotIsAClearError) {
  setenv("SHARDPLAN_GNUPLOT", "/nonexistent/gnuplot", 1);
  const absl::Status status =
      WriteFrontierPng(UpdateWithFrontier(), "/tmp/never.png", "t");
  unsetenv("SHARDPLAN_GNUPLOT");
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("gnuplot-nox"));
}

TEST(TopPlansTest, ListsEachPlanWithItsFigures) {
  shardplan::v1::PlanUpdate update;
  for (int i = 0; i < 2; ++i) {
    shardplan::v1::TopPlan* top = update.add_top_plans();
    top->mutable_plan()->set_tp(8 >> i);
    top->mutable_plan()->set_dp(1 << i);
    top->mutable_plan()->set_pp(1);
    top->mutable_plan()->set_ep(1);
    top->mutable_prediction()->set_output_tokens_per_s(20000 - 5000 * i);
    top->set_speedup_vs_baseline(1.5 - 0.25 * i);
  }
  const std::string table = RenderTopPlans(update);
  EXPECT_THAT(table, HasSubstr("Top 2 plans"));
  EXPECT_THAT(table, HasSubstr("r1 dp1 tp8 pp1 ep1"));
  EXPECT_THAT(table, HasSubstr("r1 dp2 tp4 pp1 ep1"));
  EXPECT_THAT(table, HasSubstr("20,000"));
  EXPECT_THAT(table, HasSubstr("1.25x"));
}

}  // namespace
}  // namespace shardplan::client
