#include "server/search_scheduler.h"

#include <atomic>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace shardplan::server {
namespace {

// A job that signals when it runs and blocks until released.
struct BlockingJob {
  absl::Notification started;
  absl::Notification release;
  std::atomic<int> slot{-1};
  std::atomic<bool> dropped{false};

  SearchScheduler::Job Make() {
    return SearchScheduler::Job{[this](int s) {
                                  slot = s;
                                  started.Notify();
                                  release.WaitForNotification();
                                },
                                [this] { dropped = true; }};
  }
};

TEST(SearchSchedulerTest, AdmitsSlotsPlusQueueThenRefuses) {
  absl::Mutex mu;
  int last_running = -1, last_queued = -1;
  SearchScheduler scheduler(/*slots=*/1, /*max_queued=*/1,
                            [&](int running, int queued) {
                              absl::MutexLock lock(&mu);
                              last_running = running;
                              last_queued = queued;
                            });
  BlockingJob a, b, c;
  ASSERT_TRUE(scheduler.Submit(a.Make()).ok());
  a.started.WaitForNotification();
  EXPECT_EQ(a.slot, 0);
  ASSERT_TRUE(scheduler.Submit(b.Make()).ok());
  EXPECT_EQ(scheduler.running(), 1);
  EXPECT_EQ(scheduler.queued(), 1);
  {
    absl::MutexLock lock(&mu);
    EXPECT_EQ(last_running, 1);
    EXPECT_EQ(last_queued, 1);
  }
  absl::StatusOr<uint64_t> refused = scheduler.Submit(c.Make());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("--max_queued_searches"),
            std::string::npos);

  a.release.Notify();
  b.started.WaitForNotification();  // the queued job takes the freed slot
  EXPECT_EQ(b.slot, 0);
  b.release.Notify();
  scheduler.Shutdown();
  EXPECT_FALSE(c.started.HasBeenNotified());
  absl::MutexLock lock(&mu);
  EXPECT_EQ(last_running, 0);
  EXPECT_EQ(last_queued, 0);
}

TEST(SearchSchedulerTest, RemoveTakesBackAWaitingJobOnly) {
  SearchScheduler scheduler(1, 4);
  BlockingJob a, b;
  absl::StatusOr<uint64_t> id_a = scheduler.Submit(a.Make());
  ASSERT_TRUE(id_a.ok());
  a.started.WaitForNotification();
  absl::StatusOr<uint64_t> id_b = scheduler.Submit(b.Make());
  ASSERT_TRUE(id_b.ok());
  EXPECT_FALSE(scheduler.Remove(*id_a)) << "already running";
  EXPECT_TRUE(scheduler.Remove(*id_b));
  EXPECT_FALSE(scheduler.Remove(*id_b)) << "only once";
  EXPECT_EQ(scheduler.queued(), 0);
  a.release.Notify();
  scheduler.Shutdown();
  EXPECT_FALSE(b.started.HasBeenNotified());
  EXPECT_FALSE(b.dropped) << "removed jobs are neither run nor dropped";
}

TEST(SearchSchedulerTest, DrainDropsWaitingJobsAndRefusesNewOnes) {
  SearchScheduler scheduler(1, 4);
  BlockingJob a, b, c;
  ASSERT_TRUE(scheduler.Submit(a.Make()).ok());
  a.started.WaitForNotification();
  ASSERT_TRUE(scheduler.Submit(b.Make()).ok());
  scheduler.Drain();
  EXPECT_TRUE(b.dropped);
  absl::StatusOr<uint64_t> refused = scheduler.Submit(c.Make());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
  a.release.Notify();
  scheduler.Shutdown();
  EXPECT_FALSE(b.started.HasBeenNotified());
  EXPECT_FALSE(a.dropped);
}

TEST(SearchSchedulerTest, SlotsRunConcurrentlyWithDistinctIndices) {
  SearchScheduler scheduler(3, 0);
  BlockingJob jobs[3];
  for (BlockingJob& job : jobs) ASSERT_TRUE(scheduler.Submit(job.Make()).ok());
  std::vector<bool> seen(3, false);
  for (BlockingJob& job : jobs) {
    job.started.WaitForNotification();  // all three run at once
    ASSERT_GE(job.slot, 0);
    ASSERT_LT(job.slot, 3);
    EXPECT_FALSE(seen[job.slot]);
    seen[job.slot] = true;
  }
  BlockingJob extra;
  EXPECT_EQ(scheduler.Submit(extra.Make()).status().code(),
            absl::StatusCode::kResourceExhausted);
  for (BlockingJob& job : jobs) job.release.Notify();
  scheduler.Shutdown();
}

// Short jobs (EvaluatePlan's pricing) wait ahead of queued searches, in their
// own order, under the same cap.
TEST(SearchSchedulerTest, ShortJobsWaitAheadOfSearches) {
  SearchScheduler scheduler(/*slots=*/1, /*max_queued=*/3);
  BlockingJob running, search, first_short, second_short;
  absl::Mutex mu;
  std::vector<int> order;
  const auto record = [&](BlockingJob& job, int tag, bool short_job) {
    SearchScheduler::Job j = job.Make();
    j.run = [&mu, &order, tag, inner = std::move(j.run)](int slot) {
      {
        absl::MutexLock lock(&mu);
        order.push_back(tag);
      }
      inner(slot);
    };
    j.short_job = short_job;
    return j;
  };
  ASSERT_TRUE(scheduler.Submit(record(running, 0, false)).ok());
  running.started.WaitForNotification();
  ASSERT_TRUE(scheduler.Submit(record(search, 1, false)).ok());
  ASSERT_TRUE(scheduler.Submit(record(first_short, 2, true)).ok());
  ASSERT_TRUE(scheduler.Submit(record(second_short, 3, true)).ok());
  BlockingJob refused;
  SearchScheduler::Job over = refused.Make();
  over.short_job = true;
  EXPECT_EQ(scheduler.Submit(std::move(over)).status().code(),
            absl::StatusCode::kResourceExhausted);
  for (BlockingJob* job : {&running, &first_short, &second_short, &search}) {
    job->release.Notify();
  }
  search.started.WaitForNotification();  // the last to start
  scheduler.Shutdown();
  absl::MutexLock lock(&mu);
  EXPECT_EQ(order, (std::vector<int>{0, 2, 3, 1}));
}
}  // namespace
}  // namespace shardplan::server
