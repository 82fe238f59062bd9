#include "server/store/postgres_store.h"

#include <sys/socket.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "glog/logging.h"
#include "pqxx/pqxx"
#include "proto/status_macros.h"
#include "server/store/store_schema.h"

namespace shardplan::server {

struct PostgresStore::Connection {
  explicit Connection(const std::string& conninfo) : conn(conninfo) {}
  pqxx::connection conn;
  int calls = 0;  // calls run on it (0: fresh, not stale)
};

namespace {

// Held (transaction-scoped) while migrating, so that replicas starting at the
// same time migrate one after the other. Any constant will do: "shardpln".
constexpr int64_t kMigrationLockKey = 0x7368617264706c6e;

// Adds timeouts the URI does not set, so that an unreachable host or a silent
// network partition costs a worker seconds, not minutes: connect_timeout of
// the call timeout (libpq's minimum is 2 s), TCP keepalives after 5 s idle (3
// probes 2 s apart) and tcp_user_timeout=10 s for unacknowledged writes.
std::string WithConnectTimeout(const std::string& uri, int call_timeout_ms) {
  std::string out = uri;
  const std::string connect_timeout = absl::StrCat(
      "connect_timeout=", std::max(2, (call_timeout_ms + 999) / 1000));
  for (const std::string& param :
       {connect_timeout, std::string("keepalives_idle=5"),
        std::string("keepalives_interval=2"), std::string("keepalives_count=3"),
        std::string("tcp_user_timeout=10000")}) {
    const std::string name = param.substr(0, param.find('='));
    if (absl::StrContains(out, absl::StrCat(name, "="))) continue;
    absl::StrAppend(&out, absl::StrContains(out, "?") ? "&" : "?", param);
  }
  return out;
}

// Errors that say the connection (or the server behind it) is gone: libpq
// connection failures, SQLSTATE class 08 (connection exception) and 57
// (operator intervention: admin shutdown, crash shutdown, cannot connect
// now).
bool IsConnectionState(const std::string& sqlstate) {
  return absl::StartsWith(sqlstate, "08") || absl::StartsWith(sqlstate, "57");
}

absl::Status Migrate(pqxx::connection& conn, const std::string& display) {
  pqxx::work txn(conn);
  txn.exec_params("SELECT pg_advisory_xact_lock($1)", kMigrationLockKey);
  txn.exec(
      "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)");
  const pqxx::row row =
      txn.exec1("SELECT COALESCE(MAX(version), 0) FROM schema_version");
  const int version = row[0].as<int>();
  if (version > EliteStore::kSchemaVersion) {
    txn.abort();
    return absl::FailedPreconditionError(absl::StrCat(
        "elite store ", display, " has schema version ", version,
        ", newer than this server supports (", EliteStore::kSchemaVersion,
        "); it was written by a newer shardplan-server. Use that version, or "
        "point --store at another database. The database was not modified."));
  }
  const auto& steps = store::MigrationSteps(store::SqlDialect::kPostgres);
  for (int v = version; v < EliteStore::kSchemaVersion; ++v) txn.exec(steps[v]);
  if (version != EliteStore::kSchemaVersion) {
    txn.exec("DELETE FROM schema_version");
    txn.exec_params("INSERT INTO schema_version(version) VALUES ($1)",
                    EliteStore::kSchemaVersion);
  }
  txn.commit();
  if (version != EliteStore::kSchemaVersion) {
    LOG(INFO) << "elite store " << display << ": schema " << version << " -> "
              << EliteStore::kSchemaVersion;
  }
  return absl::OkStatus();
}

}  // namespace

PostgresStore::PostgresStore(const Options& options)
    : EliteStore(RedactStorePath(options.path), options),
      options_(options),
      conninfo_(WithConnectTimeout(options.path, options.call_timeout_ms)),
      backoff_(absl::Milliseconds(options.reconnect_backoff_initial_ms)) {
  watchdog_ = std::thread([this] { WatchdogLoop(); });
}

PostgresStore::~PostgresStore() {
  {
    absl::MutexLock lock(&watch_mu_);
    stopping_ = true;
  }
  watchdog_.join();
  absl::MutexLock lock(&mu_);
  for (std::unique_ptr<Connection>& conn : idle_) {
    try {
      conn.reset();
    } catch (...) {
    }
  }
}

absl::StatusOr<std::unique_ptr<EliteStore>> PostgresStore::Open(
    const Options& options) {
  auto store = std::unique_ptr<PostgresStore>(new PostgresStore(options));
  absl::Status status = store->Run(
      "connect", [](Connection&) -> absl::Status { return absl::OkStatus(); });
  if (absl::IsFailedPrecondition(status) || absl::IsInternal(status) ||
      absl::IsInvalidArgument(status)) {
    return status;
  }
  if (!status.ok()) {
    LOG(WARNING) << "elite store " << store->path()
                 << " is not reachable yet; warm starts are off until it is, "
                    "the server keeps trying: "
                 << status;
  }
  return std::unique_ptr<EliteStore>(std::move(store));
}

bool PostgresStore::connected() const {
  absl::MutexLock lock(&mu_);
  return reachable_;
}

int64_t PostgresStore::Watch(int fd, absl::Time deadline) {
  absl::MutexLock lock(&watch_mu_);
  const int64_t id = next_watch_++;
  watched_[id] = {fd, deadline, false};
  return id;
}

bool PostgresStore::Unwatch(int64_t id) {
  absl::MutexLock lock(&watch_mu_);
  auto it = watched_.find(id);
  const bool fired = it != watched_.end() && it->second.fired;
  if (it != watched_.end()) watched_.erase(it);
  return fired;
}

void PostgresStore::WatchdogLoop() {
  absl::MutexLock lock(&watch_mu_);
  while (!stopping_) {
    watch_mu_.AwaitWithTimeout(absl::Condition(&stopping_),
                               absl::Milliseconds(50));
    const absl::Time now = absl::Now();
    for (auto& [id, w] : watched_) {
      if (w.fired || now < w.deadline || w.fd < 0) continue;
      // The call's thread is blocked in libpq on this socket: shutting it
      // down (not closing: libpq still owns the descriptor) makes libpq fail
      // at once with a broken connection.
      ::shutdown(w.fd, SHUT_RDWR);
      w.fired = true;
    }
  }
}

void PostgresStore::ConnectFailed() {
  absl::MutexLock lock(&mu_);
  reachable_ = false;
  next_attempt_ = absl::Now() + backoff_;
  backoff_ = std::min(backoff_ * 2,
                      absl::Milliseconds(options_.reconnect_backoff_max_ms));
}

absl::StatusOr<std::unique_ptr<PostgresStore::Connection>>
PostgresStore::Acquire(absl::Time deadline) {
  bool migrate = false;
  {
    absl::MutexLock lock(&mu_);
    auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return !idle_.empty() || open_ < kMaxConnections;
    };
    if (!mu_.AwaitWithDeadline(absl::Condition(&ready), deadline)) {
      return absl::UnavailableError(absl::StrCat(
          "elite store ", path(), ": every connection busy for ",
          options_.call_timeout_ms, " ms (database slow or not answering)"));
    }
    if (!idle_.empty()) {
      std::unique_ptr<Connection> conn = std::move(idle_.back());
      idle_.pop_back();
      return conn;
    }
    const absl::Time now = absl::Now();
    if (now < next_attempt_) {
      return absl::UnavailableError(
          absl::StrCat("elite store ", path(),
                       ": database unreachable, next connection attempt in ",
                       absl::FormatDuration(next_attempt_ - now)));
    }
    ++open_;
    migrate = !migrated_;
  }
  // Connecting happens outside mu_: connect_timeout bounds it, and the
  // watchdog bounds the session setup and the migration.
  absl::Status status;
  std::unique_ptr<Connection> conn;
  int64_t watch = -1;
  try {
    conn = std::make_unique<Connection>(conninfo_);
    watch = Watch(conn->conn.sock(), deadline);
    // Long statements end on the server too (the watchdog ends the wait).
    pqxx::nontransaction(conn->conn)
        .exec(absl::StrCat("SET statement_timeout = ",
                           std::max(1000, options_.call_timeout_ms)));
    if (migrate) status = Migrate(conn->conn, path());
  } catch (const pqxx::broken_connection& e) {
    status = absl::UnavailableError(
        absl::StrCat("elite store ", path(), ": connect: ", e.what()));
  } catch (const pqxx::sql_error& e) {
    status = IsConnectionState(e.sqlstate())
                 ? absl::UnavailableError(absl::StrCat("elite store ", path(),
                                                       ": connect: ", e.what()))
                 : absl::InternalError(absl::StrCat(
                       "elite store ", path(), ": migrate: ", e.what(),
                       " (SQLSTATE ", e.sqlstate(), ")"));
  } catch (const std::exception& e) {
    status = absl::UnavailableError(
        absl::StrCat("elite store ", path(), ": connect: ", e.what()));
  }
  if (watch >= 0 && Unwatch(watch)) {
    status = absl::UnavailableError(
        absl::StrCat("elite store ", path(), ": connect: no answer within ",
                     options_.call_timeout_ms, " ms"));
  }
  if (!status.ok()) {
    try {
      conn.reset();
    } catch (...) {
      conn.release();  // never throw out of here; leak rather than crash
    }
    {
      absl::MutexLock lock(&mu_);
      --open_;
    }
    ConnectFailed();
    return status;
  }
  absl::MutexLock lock(&mu_);
  if (migrate) migrated_ = true;
  reachable_ = true;
  backoff_ = absl::Milliseconds(options_.reconnect_backoff_initial_ms);
  next_attempt_ = absl::InfinitePast();
  if (down_logged_) {
    LOG(INFO) << "elite store " << path()
              << ": reconnected to the database; warm starts are back on";
    down_logged_ = false;
  }
  return conn;
}

void PostgresStore::Release(std::unique_ptr<Connection> conn, bool keep) {
  std::vector<std::unique_ptr<Connection>> closing;
  {
    absl::MutexLock lock(&mu_);
    if (keep) {
      idle_.push_back(std::move(conn));
      return;
    }
    // A connection that broke usually means the server went away: the idle
    // ones are as stale, so the next call connects afresh.
    closing.swap(idle_);
    closing.push_back(std::move(conn));
    open_ -= static_cast<int>(closing.size());
  }
  for (std::unique_ptr<Connection>& c : closing) {
    try {
      c.reset();
    } catch (...) {
      c.release();  // never throw out of here; leak rather than crash
    }
  }
}

absl::Status PostgresStore::Run(
    const char* what, const std::function<absl::Status(Connection&)>& body) {
  const absl::Time deadline =
      absl::Now() + absl::Milliseconds(options_.call_timeout_ms);
  constexpr int kMaxAttempts = 5;
  absl::Status status;
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    absl::StatusOr<std::unique_ptr<Connection>> acquired = Acquire(deadline);
    if (!acquired.ok()) {
      status = acquired.status();
      break;
    }
    std::unique_ptr<Connection> conn = *std::move(acquired);
    const bool fresh = conn->calls == 0;
    ++conn->calls;
    bool retry = false;  // a transient conflict: run again
    bool drop = false;   // the connection may be broken: reconnect
    const int64_t watch = Watch(conn->conn.sock(), deadline);
    try {
      status = body(*conn);
    } catch (const pqxx::in_doubt_error& e) {
      // The COMMIT's outcome is unknown: report, do not retry.
      status = absl::UnavailableError(
          absl::StrCat("elite store ", path(), ": ", what, ": ", e.what()));
      drop = true;
    } catch (const pqxx::transaction_rollback& e) {
      status = absl::AbortedError(
          absl::StrCat("elite store ", path(), ": ", what, ": ", e.what()));
      retry = true;
    } catch (const pqxx::broken_connection& e) {
      status = absl::UnavailableError(
          absl::StrCat("elite store ", path(), ": ", what, ": ", e.what()));
      drop = true;
      retry = !fresh;  // a stale connection: try a fresh one once
    } catch (const pqxx::sql_error& e) {
      const bool gone = IsConnectionState(e.sqlstate());
      status = gone ? absl::UnavailableError(absl::StrCat(
                          "elite store ", path(), ": ", what, ": ", e.what()))
                    : absl::InternalError(absl::StrCat(
                          "elite store ", path(), ": ", what, ": ", e.what(),
                          " (SQLSTATE ", e.sqlstate(), ")"));
      drop = true;
      retry = gone && !fresh;
    } catch (const std::exception& e) {
      status = absl::UnavailableError(
          absl::StrCat("elite store ", path(), ": ", what, ": ", e.what()));
      drop = true;
    }
    const bool timed_out = Unwatch(watch);
    if (timed_out) {
      status = absl::UnavailableError(
          absl::StrCat("elite store ", path(), ": ", what,
                       ": no answer within ", options_.call_timeout_ms, " ms"));
      drop = true;
      retry = false;
    }
    Release(std::move(conn), !drop);
    if (timed_out) {
      // A database that stopped answering: later calls fail at once until the
      // backoff lets one try again.
      ConnectFailed();
    }
    if (!retry || absl::Now() >= deadline) break;
    // Only the stale-connection retry is limited to one.
    if (drop && attempt >= 1) break;
  }
  absl::MutexLock lock(&mu_);
  if (absl::IsUnavailable(status) && !down_logged_) {
    LOG(WARNING) << "elite store " << path()
                 << ": database unavailable; warm starts are off and results "
                    "are not shared until it is back (reconnecting with "
                    "backoff): "
                 << status;
    down_logged_ = true;
  }
  return status;
}

absl::StatusOr<EliteStore::WarmStartRows> PostgresStore::ReadWarmStartRows(
    const ProblemKey& key) {
  WarmStartRows out;
  RETURN_IF_ERROR(Run("lookup", [&](Connection& c) -> absl::Status {
    out = WarmStartRows();
    pqxx::transaction<pqxx::repeatable_read, pqxx::read_only> txn(c.conn);
    auto exec =
        [&txn](const char* sql,
               const std::string& param) -> absl::StatusOr<store::TextRows> {
      store::TextRows rows;
      for (const pqxx::row& row : txn.exec_params(sql, param)) {
        std::vector<std::string>& columns = rows.emplace_back();
        for (const pqxx::field& field : row) {
          columns.push_back(field.as<std::string>());
        }
      }
      return rows;
    };
    ASSIGN_OR_RETURN(out.chosen, store::QueryWarmStartProblem(key, exec));
    if (out.chosen.has_value()) {
      for (const pqxx::row& row :
           txn.exec_params(store::kSelectPlansSql, out.chosen->fingerprint)) {
        out.plans.push_back({row[0].as<std::string>(), row[1].as<double>(),
                             row[2].as<double>(), row[3].as<std::string>()});
      }
      const pqxx::result weights = txn.exec_params(
          "SELECT encode(weights, 'hex') FROM policy_weights WHERE "
          "family_key = $1",
          key.family_key);
      if (!weights.empty()) {
        out.policy_weights =
            absl::HexStringToBytes(weights[0][0].as<std::string>());
      }
    }
    txn.commit();
    return absl::OkStatus();
  }));
  return out;
}

absl::Status PostgresStore::WriteRecordRows(const RecordRows& rows) {
  const std::string weights_hex = absl::BytesToHexString(rows.policy_weights);
  const std::string& fingerprint = rows.problem.key.fingerprint;
  return Run("record", [&](Connection& c) -> absl::Status {
    pqxx::work txn(c.conn);
    // Upserting the problem row first locks it: concurrent writers of this
    // problem queue here (see the header).
    txn.exec_params(store::kUpsertProblemSql,
                    pqxx::prepare::make_dynamic_params(
                        store::ProblemRowParams(rows.problem)));
    for (const store::PlanRow& plan : rows.plans) {
      txn.exec_params(store::kUpsertPlanSql, fingerprint, plan.plan_json,
                      plan.reward, plan.prediction_json,
                      plan.output_tokens_per_s);
    }
    txn.exec_params(store::kTrimPlansSql, fingerprint, rows.top_k);
    if (!rows.policy_weights.empty()) {
      txn.exec_params(
          "INSERT INTO policy_weights (family_key, weights, updated_at_ms) "
          "VALUES ($1, decode($2, 'hex'), $3) ON CONFLICT (family_key) DO "
          "UPDATE SET weights = excluded.weights, updated_at_ms = "
          "excluded.updated_at_ms",
          rows.problem.key.family_key, weights_hex, rows.problem.updated_at_ms);
    }
    txn.commit();
    return absl::OkStatus();
  });
}

absl::Status PostgresStore::SaveProfile(const StoredProfile& profile) {
  return Run("save profile", [&](Connection& c) -> absl::Status {
    pqxx::work txn(c.conn);
    txn.exec_params(store::kUpsertProfileSql, profile.name, profile.engine,
                    profile.profile_json, profile.report,
                    profile.updated_at_ms);
    txn.commit();
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<StoredProfile>> PostgresStore::LoadProfiles() {
  std::vector<StoredProfile> profiles;
  RETURN_IF_ERROR(Run("load profiles", [&](Connection& c) -> absl::Status {
    profiles.clear();
    pqxx::read_transaction txn(c.conn);
    for (const pqxx::row& row : txn.exec(store::kSelectProfilesSql)) {
      profiles.push_back({row[0].as<std::string>(), row[1].as<std::string>(),
                          row[2].as<std::string>(), row[3].as<std::string>(),
                          row[4].as<int64_t>()});
    }
    txn.commit();
    return absl::OkStatus();
  }));
  return profiles;
}

absl::Status PostgresStore::PruneRows(int64_t keep, int64_t oldest_ms) {
  return Run("prune", [&](Connection& c) -> absl::Status {
    pqxx::work txn(c.conn);
    for (const char* sql : {store::kPrunePlansSql, store::kPruneProblemsSql}) {
      txn.exec_params(sql, keep, oldest_ms);
    }
    txn.exec(store::kPruneWeightsSql);
    txn.commit();
    return absl::OkStatus();
  });
}

absl::StatusOr<std::string> PostgresStore::ProfilesStamp() {
  std::string stamp;
  RETURN_IF_ERROR(Run("profiles stamp", [&](Connection& c) -> absl::Status {
    pqxx::read_transaction txn(c.conn);
    const pqxx::row row = txn.exec1(store::kProfilesStampSql);
    stamp =
        absl::StrCat(row[0].as<std::string>(), "/", row[1].as<std::string>(),
                     "/", row[2].as<std::string>());
    txn.commit();
    return absl::OkStatus();
  }));
  return stamp;
}

absl::StatusOr<int64_t> PostgresStore::CountPlans() {
  int64_t count = 0;
  RETURN_IF_ERROR(Run("count plans", [&](Connection& c) -> absl::Status {
    pqxx::read_transaction txn(c.conn);
    count = txn.exec1(store::kCountPlansSql)[0].as<int64_t>();
    txn.commit();
    return absl::OkStatus();
  }));
  return count;
}

}  // namespace shardplan::server
