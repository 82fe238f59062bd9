#include "server/update_queue.h"

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "shardplan/v1/shardplan.pb.h"

namespace shardplan::server {
namespace {

using shardplan::v1::PlanUpdate;
using Kind = UpdateQueue::ActionKind;

PlanUpdate Update(const char* kind, double speedup) {
  PlanUpdate update;
  update.set_kind(kind);
  update.set_speedup_vs_baseline(speedup);
  return update;
}

TEST(UpdateQueueTest, BaselineThenImprovementThenFinal) {
  UpdateQueue queue;
  queue.PushBaseline(Update("baseline", 1.0));
  UpdateQueue::Action action = queue.Next();
  ASSERT_EQ(action.kind, Kind::kWrite);
  EXPECT_EQ(action.update->kind(), "baseline");
  queue.PushImprovement(Update("improvement", 1.2));
  EXPECT_EQ(queue.Next().kind, Kind::kNone) << "one write in flight";
  queue.WriteDone(true);
  action = queue.Next();
  ASSERT_EQ(action.kind, Kind::kWrite);
  EXPECT_DOUBLE_EQ(action.update->speedup_vs_baseline(), 1.2);
  queue.WriteDone(true);
  EXPECT_EQ(queue.Next().kind, Kind::kNone) << "nothing pending, no final yet";
  PlanUpdate final_update = Update("final", 1.2);
  final_update.set_final(true);
  queue.PushFinal(final_update, absl::OkStatus());
  action = queue.Next();
  ASSERT_EQ(action.kind, Kind::kWriteAndFinish);
  EXPECT_TRUE(action.update->final());
  EXPECT_TRUE(action.status.ok());
  EXPECT_TRUE(queue.finished());
  EXPECT_EQ(queue.Next().kind, Kind::kNone);
}

TEST(UpdateQueueTest, SlowReaderCoalescesToTheLatestBest) {
  UpdateQueue queue;
  queue.PushBaseline(Update("baseline", 1.0));
  ASSERT_EQ(queue.Next().kind,
            Kind::kWrite);  // baseline in flight, reader is slow
  for (int i = 1; i <= 1000; ++i)
    queue.PushImprovement(Update("improvement", 1.0 + i * 0.001));
  EXPECT_EQ(queue.coalesced(), 999);
  queue.WriteDone(true);
  UpdateQueue::Action action = queue.Next();
  ASSERT_EQ(action.kind, Kind::kWrite);
  EXPECT_DOUBLE_EQ(action.update->speedup_vs_baseline(), 2.0);
  queue.WriteDone(true);
  EXPECT_EQ(queue.Next().kind, Kind::kNone);
  EXPECT_EQ(queue.writes_started(), 2);
}

TEST(UpdateQueueTest, BaselineIsNeverCoalescedAway) {
  UpdateQueue queue;
  queue.PushBaseline(Update("baseline", 1.0));
  queue.PushImprovement(
      Update("improvement", 1.5));  // before the first write started
  UpdateQueue::Action action = queue.Next();
  ASSERT_EQ(action.kind, Kind::kWrite);
  EXPECT_EQ(action.update->kind(), "baseline");
  queue.WriteDone(true);
  action = queue.Next();
  ASSERT_EQ(action.kind, Kind::kWrite);
  EXPECT_EQ(action.update->kind(), "improvement");
}

TEST(UpdateQueueTest, FinalSupersedesAnUnsentImprovement) {
  UpdateQueue queue;
  queue.PushBaseline(Update("baseline", 1.0));
  ASSERT_EQ(queue.Next().kind, Kind::kWrite);
  queue.PushImprovement(Update("improvement", 1.3));
  queue.PushFinal(Update("final", 1.3), absl::OkStatus());
  queue.WriteDone(true);
  UpdateQueue::Action action = queue.Next();
  ASSERT_EQ(action.kind, Kind::kWriteAndFinish);
  EXPECT_EQ(action.update->kind(), "final");
  EXPECT_EQ(queue.coalesced(), 1);
}

TEST(UpdateQueueTest, ErrorStatusFinishesWithoutWriting) {
  UpdateQueue queue;
  queue.PushBaseline(Update("baseline", 1.0));
  ASSERT_EQ(queue.Next().kind, Kind::kWrite);
  queue.PushFinal(Update("final", 1.0),
                  absl::CancelledError("client cancelled"));
  EXPECT_EQ(queue.Next().kind, Kind::kNone) << "waits for the write in flight";
  queue.WriteDone(true);
  UpdateQueue::Action action = queue.Next();
  ASSERT_EQ(action.kind, Kind::kFinish);
  EXPECT_EQ(action.status.code(), absl::StatusCode::kCancelled);
}

TEST(UpdateQueueTest, BrokenStreamDropsUpdatesAndFinishesOnce) {
  UpdateQueue queue;
  queue.PushBaseline(Update("baseline", 1.0));
  ASSERT_EQ(queue.Next().kind, Kind::kWrite);
  queue.WriteDone(false);  // the client went away
  queue.PushImprovement(Update("improvement", 1.5));
  EXPECT_EQ(queue.Next().kind, Kind::kNone)
      << "waits for the worker's final status";
  queue.PushFinal(Update("final", 1.5), absl::OkStatus());
  UpdateQueue::Action action = queue.Next();
  ASSERT_EQ(action.kind, Kind::kFinish);
  EXPECT_EQ(action.status.code(), absl::StatusCode::kCancelled);
  queue.PushFinal(Update("final", 1.5), absl::OkStatus());
  EXPECT_EQ(queue.Next().kind, Kind::kNone);
}

TEST(UpdateQueueTest, AbortDropsTheBaseline) {
  UpdateQueue queue;
  queue.PushBaseline(Update("baseline", 1.0));
  queue.PushAbort(absl::ResourceExhaustedError("queue full"));
  UpdateQueue::Action action = queue.Next();
  ASSERT_EQ(action.kind, Kind::kFinish);
  EXPECT_EQ(action.status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(queue.writes_started(), 0);
}

}  // namespace
}  // namespace shardplan::server
