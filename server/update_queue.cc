#include "server/update_queue.h"

#include <utility>

namespace shardplan::server {

void UpdateQueue::PushBaseline(shardplan::v1::PlanUpdate update) {
  if (final_status_.has_value()) return;
  baseline_ = std::move(update);
}

void UpdateQueue::PushImprovement(shardplan::v1::PlanUpdate update) {
  if (final_status_.has_value() || broken_) return;
  if (improvement_.has_value()) ++coalesced_;
  improvement_ = std::move(update);
}

void UpdateQueue::PushFinal(shardplan::v1::PlanUpdate update,
                            absl::Status status) {
  if (final_status_.has_value()) return;
  // The final update carries the best plan, so an unsent improvement is
  // redundant.
  if (improvement_.has_value()) ++coalesced_;
  improvement_.reset();
  if (status.ok()) final_ = std::move(update);
  final_status_ = std::move(status);
}

void UpdateQueue::PushAbort(absl::Status status) {
  if (final_status_.has_value()) return;
  baseline_.reset();
  improvement_.reset();
  final_status_ = std::move(status);
}

UpdateQueue::Action UpdateQueue::Next() {
  Action action;
  if (finished_ || write_in_flight_) return action;
  if (broken_) {
    // The client is gone: nothing more is written; finish once the status is
    // known.
    if (!final_status_.has_value()) return action;
    action.kind = ActionKind::kFinish;
    action.status = final_status_->ok()
                        ? absl::CancelledError("the client went away")
                        : *final_status_;
    finished_ = true;
    return action;
  }
  std::optional<shardplan::v1::PlanUpdate>* next = nullptr;
  if (baseline_.has_value()) {
    next = &baseline_;
  } else if (improvement_.has_value()) {
    next = &improvement_;
  }
  if (next != nullptr) {
    in_flight_ = std::move(**next);
    next->reset();
    write_in_flight_ = true;
    ++writes_started_;
    action.kind = ActionKind::kWrite;
    action.update = &in_flight_;
    return action;
  }
  if (!final_status_.has_value()) return action;
  finished_ = true;
  action.status = *final_status_;
  if (final_.has_value()) {
    in_flight_ = std::move(*final_);
    final_.reset();
    ++writes_started_;
    action.kind = ActionKind::kWriteAndFinish;
    action.update = &in_flight_;
  } else {
    action.kind = ActionKind::kFinish;
  }
  return action;
}

void UpdateQueue::WriteDone(bool ok) {
  write_in_flight_ = false;
  if (!ok) {
    broken_ = true;
    baseline_.reset();
    improvement_.reset();
    final_.reset();
  }
}

}  // namespace shardplan::server
