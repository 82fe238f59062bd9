// What a PlanSharding stream still has to write, with at most one write in
// flight and bounded memory whatever the client's reading speed: the baseline
// (never dropped), one coalescing slot for improvements (a newer best replaces
// an unsent older one), and the final update with the call's status (which
// supersedes an unsent improvement, since it carries the best plan). Pure logic
// without gRPC, so it is unit-tested alone; not thread-safe (the reactor guards
// it with its mutex).
#ifndef SHARDPLAN_SERVER_UPDATE_QUEUE_H_
#define SHARDPLAN_SERVER_UPDATE_QUEUE_H_

#include <optional>

#include "absl/status/status.h"
#include "shardplan/v1/shardplan.pb.h"

namespace shardplan::server {

class UpdateQueue {
 public:
  enum class ActionKind {
    kNone,   // nothing to do now (a write is in flight, or nothing is pending)
    kWrite,  // StartWrite(update); call WriteDone when it completes
    kWriteAndFinish,  // StartWriteAndFinish(update, status); the stream is over
    kFinish,          // Finish(status) without a write; the stream is over
  };
  struct Action {
    ActionKind kind = ActionKind::kNone;
    // Owned by the queue; valid until the next WriteDone (kWrite) or for the
    // queue's lifetime (kWriteAndFinish).
    const shardplan::v1::PlanUpdate* update = nullptr;
    absl::Status status;
  };

  // The first update of the stream. Ignored after the final was pushed.
  void PushBaseline(shardplan::v1::PlanUpdate update);
  // A new best plan; replaces an improvement not yet written. Ignored after the
  // final.
  void PushImprovement(shardplan::v1::PlanUpdate update);
  // The last update and the call's status. With an OK status and a healthy
  // stream the final update is written, then the call finishes; otherwise
  // (error status, or a failed write before) the call finishes with `status`
  // (OK becomes CANCELLED when the stream broke) and nothing more is written.
  // Only the first call counts.
  void PushFinal(shardplan::v1::PlanUpdate update, absl::Status status);
  // Finishes with `status` and no further write (e.g. an error before any
  // search ran).
  void PushAbort(absl::Status status);

  // The next thing to do; marks a write in flight or the stream finished. After
  // a finishing action every further call returns kNone.
  Action Next();
  // The write started by the last kWrite completed (`ok` false: the client is
  // gone; pending updates are dropped and the call only waits for its final
  // status).
  void WriteDone(bool ok);

  bool finished() const { return finished_; }
  bool write_in_flight() const { return write_in_flight_; }
  bool broken() const { return broken_; }
  int writes_started() const { return writes_started_; }
  // Improvements that were replaced before being written (slow reader).
  int coalesced() const { return coalesced_; }

 private:
  std::optional<shardplan::v1::PlanUpdate> baseline_;
  std::optional<shardplan::v1::PlanUpdate> improvement_;
  std::optional<shardplan::v1::PlanUpdate> final_;
  std::optional<absl::Status> final_status_;
  shardplan::v1::PlanUpdate in_flight_;
  bool write_in_flight_ = false;
  bool finished_ = false;
  bool broken_ = false;
  int writes_started_ = 0;
  int coalesced_ = 0;
};

}  // namespace shardplan::server

#endif  // SHARDPLAN_SERVER_UPDATE_QUEUE_H_
