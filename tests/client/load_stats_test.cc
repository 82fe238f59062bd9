#include "client/load_stats.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shardplan::client {
namespace {

TEST(LoadStatsTest, NearestRankPercentiles) {
  std::vector<double> samples;
  for (int i = 100; i >= 1; --i)
    samples.push_back(i * 1e-3);  // 1..100 ms, reversed
  const LatencySummary s = Summarize(samples);
  EXPECT_EQ(s.count, 100);
  EXPECT_DOUBLE_EQ(s.p50_seconds, 50e-3);
  EXPECT_DOUBLE_EQ(s.p99_seconds, 99e-3);
  EXPECT_DOUBLE_EQ(s.max_seconds, 100e-3);
  EXPECT_NEAR(s.mean_seconds, 50.5e-3, 1e-12);
}

TEST(LoadStatsTest, EmptyAndSingle) {
  std::vector<double> none;
  EXPECT_EQ(Summarize(none).count, 0);
  std::vector<double> one = {0.25};
  const LatencySummary s = Summarize(one);
  EXPECT_DOUBLE_EQ(s.p50_seconds, 0.25);
  EXPECT_DOUBLE_EQ(s.p99_seconds, 0.25);
}

TEST(LoadStatsTest, ParsesProcStatus) {
  const char* text =
      "Name:\tshardplan-serv\nVmPeak:\t 2000000 kB\nVmHWM:\t  123456 "
      "kB\nVmRSS:\t  100000 kB\n";
  auto hwm = ParseProcStatusBytes(text, "VmHWM");
  ASSERT_TRUE(hwm.ok()) << hwm.status();
  EXPECT_DOUBLE_EQ(*hwm, 123456.0 * 1024);
  EXPECT_EQ(ParseProcStatusBytes(text, "VmSwap").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(ParseProcStatusBytes("VmHWM:\tlots\n", "VmHWM").status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace shardplan::client
