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
// to `reconnect_backoff_max_ms`; calls in between fail at once. Open succeeds
// even when the database is down at startup (replicas may start before it);
// the schema is migrated on the first successful connection.
//
// Bounded calls: every call (connect, statements, retries) ends within
// `call_timeout_ms`. statement_timeout is the server's own clock and does
// nothing when the database process is stopped or the host is frozen with its
// TCP session still up, so a watchdog thread shuts down the socket of a call
// past its deadline: libpq then fails at once and the call answers
// UNAVAILABLE. Calls run on worker threads, each on its own connection from a
// small pool (kMaxConnections): no lock is held while waiting on the network,
// so a slow call for one problem never holds up another problem's.
#ifndef SHARDPLAN_SERVER_STORE_POSTGRES_STORE_H_
#define SHARDPLAN_SERVER_STORE_POSTGRES_STORE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
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
  absl::StatusOr<std::string> ProfilesStamp() override;
  absl::StatusOr<int64_t> CountPlans() override;
  absl::Status Flush() override { return absl::OkStatus(); }
  bool recovers_from_failures() const override { return true; }

  // Whether the last call found the database reachable (for tests and logs).
  bool connected() const;

 private:
  struct Connection;  // wraps pqxx::connection (keeps pqxx out of headers)
  static constexpr int kMaxConnections = 4;

  explicit PostgresStore(const Options& options);
  absl::StatusOr<WarmStartRows> ReadWarmStartRows(
      const ProblemKey& key) override;
  absl::Status WriteRecordRows(const RecordRows& rows) override;
  absl::Status PruneRows(int64_t keep, int64_t oldest_ms) override;
  // An idle connection, or a new one (connected and migrated) when fewer than
  // kMaxConnections are open; honours the backoff and `deadline`.
  absl::StatusOr<std::unique_ptr<Connection>> Acquire(absl::Time deadline);
  // Returns a healthy connection to the pool, or closes one that may be
  // broken (`keep` false).
  void Release(std::unique_ptr<Connection> conn, bool keep);
  // Records a failed connection attempt (the backoff grows).
  void ConnectFailed();
  // Runs `body` with a live connection: catches every libpqxx exception,
  // turns it into a Status, drops the connection when it may be broken,
  // retries serialization failures/deadlocks and, once, a connection that
  // turned out to be stale; everything within call_timeout_ms. `what` names
  // the operation in errors.
  absl::Status Run(const char* what,
                   const std::function<absl::Status(Connection&)>& body);

  // The watchdog: sockets of calls in progress and their deadlines.
  int64_t Watch(int fd, absl::Time deadline);
  // Ends the watch; true when the watchdog shut the socket down (timed out).
  bool Unwatch(int64_t id);
  void WatchdogLoop();

  const Options options_;
  std::string conninfo_;
  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<Connection>> idle_ ABSL_GUARDED_BY(mu_);
  int open_ ABSL_GUARDED_BY(mu_) = 0;  // idle + in use + connecting
  bool migrated_ ABSL_GUARDED_BY(mu_) = false;
  bool reachable_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time next_attempt_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Duration backoff_ ABSL_GUARDED_BY(mu_);
  bool down_logged_ ABSL_GUARDED_BY(mu_) = false;

  struct Watched {
    int fd = -1;
    absl::Time deadline;
    bool fired = false;
  };
  absl::Mutex watch_mu_;
  std::map<int64_t, Watched> watched_ ABSL_GUARDED_BY(watch_mu_);
  int64_t next_watch_ ABSL_GUARDED_BY(watch_mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(watch_mu_) = false;
  std::thread watchdog_;
};

}  // namespace shardplan::server

#endif  // SHARDPLAN_SERVER_STORE_POSTGRES_STORE_H_
