// The PostgreSQL backend of the elite store (`--store=postgresql://...`):
// several server replicas share one database, so a search on any replica
// warm-starts from what every replica has learned (elite plans per problem,
// policy weights per family).
//
// Schema: the shared one (server/store/store_schema.h), with PostgreSQL's
// column types (schema_version table; migrations run in one transaction under a
// transaction-scoped advisory lock, so replicas starting together migrate
// once).
//
// Consistency under concurrent writers (several replicas, several workers):
// Record is one READ COMMITTED transaction that first upserts the problem row
// (INSERT ... ON CONFLICT DO UPDATE), which takes that row's lock; every other
// writer of the same problem waits there until this transaction commits. The
// plans are then upserted against the (fingerprint, plan_json) primary key
// (never duplicated) and the problem is trimmed to its top-K by (reward DESC,
// plan_json) in the same transaction. Each statement in READ COMMITTED sees
// everything committed before it started, so the writer that gets the lock
// second merges into and trims the first one's committed result: no plan is
// lost (it is in the top-K or beaten by K better ones) and the stored set is
// always the top-K of the union of everything written. Writers of different
// problems lock different rows (the family's policy_weights row is locked last
// by everyone, so there is no lock cycle). Deadlocks and serialization
// failures would be retried; none are expected.
//
// Failures: when the database cannot be reached, calls fail with UNAVAILABLE
// (the server runs those searches cold, warm starts reported as "disabled")
// and the store reconnects by itself on a later call: the first call after a
// failed connection attempt waits `reconnect_backoff_initial_ms`, doubling up
// to `reconnect_backoff_max_ms`; calls in between fail at once, so a dead
// database never stalls a worker longer than one connect timeout (3 s unless
// the URI sets connect_timeout). Open succeeds even when the database is down
// at startup (replicas may start before it); the schema is migrated on the
// first successful connection. All calls run on worker threads, one at a time
// per store (one connection, guarded by a mutex).
#ifndef SHARDPLAN_SERVER_STORE_POSTGRES_STORE_H_
#define SHARDPLAN_SERVER_STORE_POSTGRES_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "server/store/elite_store.h"

namespace shardplan::server {

class PostgresStore : public EliteStore {
 public:
  // See EliteStore::Open; `options.path` is a libpq connection URI. Fails only
  // for a schema newer than this server (FAILED_PRECONDITION) or a database
  // that answers but cannot be used (INTERNAL); an unreachable database gives
  // a store that connects later.
  static absl::StatusOr<std::unique_ptr<EliteStore>> Open(
      const Options& options);
  ~PostgresStore() override;

  absl::Status SaveProfile(const StoredProfile& profile) override;
  absl::StatusOr<std::vector<StoredProfile>> LoadProfiles() override;
  absl::StatusOr<int64_t> CountPlans() override;
  absl::Status Flush() override { return absl::OkStatus(); }
  bool recovers_from_failures() const override { return true; }

  // Whether the last call found the database reachable (for tests and logs).
  bool connected() const;

 private:
  struct Connection;  // wraps pqxx::connection (keeps pqxx out of headers)

  explicit PostgresStore(const Options& options);
  absl::StatusOr<WarmStartRows> ReadWarmStartRows(
      const ProblemKey& key) override;
  absl::Status WriteRecordRows(const RecordRows& rows) override;
  // Connects (and migrates) unless connected; honours the backoff.
  absl::Status EnsureConnectedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs `body` with a live connection: catches every libpqxx exception,
  // turns it into a Status, drops the connection when it may be broken,
  // retries serialization failures/deadlocks and, once, a connection that
  // turned out to be stale. `what` names the operation in errors.
  absl::Status Run(const char* what,
                   const std::function<absl::Status(Connection&)>& body);

  const Options options_;
  std::string conninfo_;
  mutable absl::Mutex mu_;
  std::unique_ptr<Connection> conn_ ABSL_GUARDED_BY(mu_);
  absl::Time next_attempt_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Duration backoff_ ABSL_GUARDED_BY(mu_);
  bool down_logged_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace shardplan::server

#endif  // SHARDPLAN_SERVER_STORE_POSTGRES_STORE_H_
