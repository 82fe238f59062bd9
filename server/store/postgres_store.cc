#include "server/store/postgres_store.h"

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
#include "server/store/store_schema.h"
#include "simulator/status_macros.h"

namespace shardplan::server {

struct PostgresStore::Connection {
  explicit Connection(const std::string& conninfo) : conn(conninfo) {}
  pqxx::connection conn;
};

namespace {

// Held (transaction-scoped) while migrating, so that replicas starting at the
// same time migrate one after the other. Any constant will do: "shardpln".
constexpr int64_t kMigrationLockKey = 0x7368617264706c6e;

// Adds timeouts the URI does not set, so that an unreachable host or a silent
// network partition costs a worker seconds, not minutes: connect_timeout=3,
// TCP keepalives after 5 s idle (3 probes 2 s apart) and tcp_user_timeout=10 s
// for unacknowledged writes.
std::string WithConnectTimeout(const std::string& uri) {
  std::string out = uri;
  for (const char* param :
       {"connect_timeout=3", "keepalives_idle=5", "keepalives_interval=2",
        "keepalives_count=3", "tcp_user_timeout=10000"}) {
    const absl::string_view name =
        absl::string_view(param).substr(0, absl::string_view(param).find('='));
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
    : EliteStore(RedactStorePath(options.path), options.top_k),
      options_(options),
      conninfo_(WithConnectTimeout(options.path)),
      backoff_(absl::Milliseconds(options.reconnect_backoff_initial_ms)) {}

PostgresStore::~PostgresStore() {
  absl::MutexLock lock(&mu_);
  try {
    conn_.reset();
  } catch (...) {
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
  return conn_ != nullptr;
}

absl::Status PostgresStore::EnsureConnectedLocked() {
  if (conn_ != nullptr) return absl::OkStatus();
  const absl::Time now = absl::Now();
  if (now < next_attempt_) {
    return absl::UnavailableError(
        absl::StrCat("elite store ", path(),
                     ": database unreachable, next connection attempt in ",
                     absl::FormatDuration(next_attempt_ - now)));
  }
  absl::Status status;
  std::unique_ptr<Connection> conn;
  try {
    conn = std::make_unique<Connection>(conninfo_);
    // A stuck lock or a hung server must not hold a worker forever.
    pqxx::nontransaction(conn->conn).exec("SET statement_timeout = 15000");
    status = Migrate(conn->conn, path());
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
  if (!status.ok()) {
    try {
      conn.reset();
    } catch (...) {
    }
    next_attempt_ = absl::Now() + backoff_;
    backoff_ = std::min(backoff_ * 2,
                        absl::Milliseconds(options_.reconnect_backoff_max_ms));
    return status;
  }
  conn_ = std::move(conn);
  backoff_ = absl::Milliseconds(options_.reconnect_backoff_initial_ms);
  next_attempt_ = absl::InfinitePast();
  if (down_logged_) {
    LOG(INFO) << "elite store " << path()
              << ": reconnected to the database; warm starts are back on";
    down_logged_ = false;
  }
  return absl::OkStatus();
}

absl::Status PostgresStore::Run(
    const char* what, const std::function<absl::Status(Connection&)>& body) {
  absl::MutexLock lock(&mu_);
  constexpr int kMaxAttempts = 5;
  absl::Status status;
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    const bool had_connection = conn_ != nullptr;
    status = EnsureConnectedLocked();
    if (!status.ok()) break;
    bool retry = false;  // a transient conflict: run again
    bool drop = false;   // the connection may be broken: reconnect
    try {
      status = body(*conn_);
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
      retry = had_connection;  // a stale connection: try a fresh one once
    } catch (const pqxx::sql_error& e) {
      const bool gone = IsConnectionState(e.sqlstate());
      status = gone ? absl::UnavailableError(absl::StrCat(
                          "elite store ", path(), ": ", what, ": ", e.what()))
                    : absl::InternalError(absl::StrCat(
                          "elite store ", path(), ": ", what, ": ", e.what(),
                          " (SQLSTATE ", e.sqlstate(), ")"));
      drop = true;
      retry = gone && had_connection;
    } catch (const std::exception& e) {
      status = absl::UnavailableError(
          absl::StrCat("elite store ", path(), ": ", what, ": ", e.what()));
      drop = true;
    }
    if (drop) {
      try {
        conn_.reset();
      } catch (...) {
        conn_.release();  // never throw out of here; leak rather than crash
      }
      // Reconnect at once on the next attempt.
      next_attempt_ = absl::InfinitePast();
      if (!had_connection) break;
    }
    if (!retry) break;
    // Only the stale-connection retry is limited to one.
    if (drop && attempt >= 1) break;
  }
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
    std::vector<store::ProblemRow> problems;
    for (const pqxx::row& row :
         txn.exec_params(store::kSelectFamilyProblemsSql, key.family_key)) {
      std::vector<std::string> columns;
      for (const pqxx::field& field : row) {
        columns.push_back(field.as<std::string>());
      }
      ASSIGN_OR_RETURN(store::ProblemRow problem,
                       store::ProblemRowFromText(columns));
      problems.push_back(std::move(problem));
    }
    out.chosen = store::ChooseWarmStartProblem(key, problems);
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
