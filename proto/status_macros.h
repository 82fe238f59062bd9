// RETURN_IF_ERROR / ASSIGN_OR_RETURN for absl::Status and absl::StatusOr,
// shared by every module, the client included (it sits below all of
// them and includes only Abseil). Abseil 20220623 ships no status macros.
#ifndef SHARDPLAN_PROTO_STATUS_MACROS_H_
#define SHARDPLAN_PROTO_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define SHARDPLAN_STATUS_CONCAT_INNER_(a, b) a##b
#define SHARDPLAN_STATUS_CONCAT_(a, b) SHARDPLAN_STATUS_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function when `expr` is not OK.
#define RETURN_IF_ERROR(expr)                              \
  do {                                                     \
    const absl::Status shardplan_status_ = (expr);         \
    if (!shardplan_status_.ok()) return shardplan_status_; \
  } while (0)

// `ASSIGN_OR_RETURN(auto x, Foo());` declares/assigns `x` from an OK StatusOr,
// or returns its status.
#define ASSIGN_OR_RETURN(lhs, expr) \
  SHARDPLAN_ASSIGN_OR_RETURN_IMPL_( \
      SHARDPLAN_STATUS_CONCAT_(shardplan_statusor_, __LINE__), lhs, expr)

#define SHARDPLAN_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                     \
  if (!statusor.ok()) return std::move(statusor).status();    \
  lhs = std::move(statusor).value()

namespace shardplan {

// Returns `status` with `prefix: ` prepended to its message, keeping the code.
inline absl::Status Annotate(const absl::Status& status,
                             absl::string_view prefix) {
  if (status.ok()) return status;
  return absl::Status(status.code(), std::string(prefix) + ": " +
                                         std::string(status.message()));
}

}  // namespace shardplan

#endif  // SHARDPLAN_PROTO_STATUS_MACROS_H_
