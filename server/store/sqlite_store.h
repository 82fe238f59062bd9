// The SQLite backend of the elite store: one file, one connection guarded by a
// mutex. The embedded default (`--store=FILE`).
//
// Crash safety: WAL journal, synchronous=FULL, one transaction per finished
// search. A commit is durable once sqlite3_step(COMMIT) returns (the WAL frame
// is fsync'ed), and the server sends a search's final update only after its
// commit, so a client that saw `final: true` can rely on the search being in
// the store even if the server is SIGKILLed or the machine loses power right
// after. A kill during a write loses at most that uncommitted transaction; WAL
// recovery on the next open discards it and the file stays consistent (checked
// by the e2e SIGKILL loop with PRAGMA integrity_check).
#ifndef SHARDPLAN_SERVER_STORE_SQLITE_STORE_H_
#define SHARDPLAN_SERVER_STORE_SQLITE_STORE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "server/store/elite_store.h"

struct sqlite3;

namespace shardplan::server {

class SqliteStore : public EliteStore {
 public:
  // See EliteStore::Open; `options.path` is the file.
  static absl::StatusOr<std::unique_ptr<EliteStore>> Open(
      const Options& options);
  ~SqliteStore() override;

  absl::Status SaveProfile(const StoredProfile& profile) override;
  absl::StatusOr<std::vector<StoredProfile>> LoadProfiles() override;
  absl::StatusOr<std::string> ProfilesStamp() override;
  absl::StatusOr<int64_t> CountPlans() override;
  // Checkpoints the WAL into the main file (called at shutdown); the data is
  // durable without it.
  absl::Status Flush() override;

 private:
  SqliteStore(const Options& options, sqlite3* db);
  absl::Status Exec(const char* sql) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Migrate() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<WarmStartRows> ReadWarmStartRows(
      const ProblemKey& key) override;
  absl::StatusOr<WarmStartRows> ReadWarmStartRowsLocked(const ProblemKey& key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status WriteRecordRows(const RecordRows& rows) override;
  absl::Status PruneRows(int64_t keep, int64_t oldest_ms) override;
  // `body` in a write transaction (BEGIN IMMEDIATE): COMMIT when it returns
  // OK, else ROLLBACK; returns the outcome.
  absl::Status InWriteTransaction(absl::FunctionRef<absl::Status()> body)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  absl::Mutex mu_;
  sqlite3* db_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shardplan::server

#endif  // SHARDPLAN_SERVER_STORE_SQLITE_STORE_H_
