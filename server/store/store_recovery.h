// Startup recovery of a corrupt SQLite store file: a file
// that is not a SQLite database, or one whose pages fail `PRAGMA quick_check`,
// is renamed to <store>.corrupt-<UTC timestamp> (with its -wal/-shm files) and
// a warning is logged, so that the server creates a fresh store and serves on.
// Everything else is left alone: a missing or empty file, a healthy database
// (also one with a newer schema, which the store refuses by itself), and files
// that cannot be opened for other reasons (permissions, read-only medium).
#ifndef SHARDPLAN_SERVER_STORE_STORE_RECOVERY_H_
#define SHARDPLAN_SERVER_STORE_STORE_RECOVERY_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace shardplan::server {

// Returns the path the corrupt file was moved to, "" when nothing was moved
// (healthy, missing, or not a local file such as a postgres:// URL), or an
// error when a corrupt file could not be moved (it is left in place).
absl::StatusOr<std::string> QuarantineCorruptStore(const std::string& path,
                                                   absl::Time now);

}  // namespace shardplan::server

#endif  // SHARDPLAN_SERVER_STORE_STORE_RECOVERY_H_
