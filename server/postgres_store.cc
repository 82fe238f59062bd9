#include "server/postgres_store.h"

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

// The schema, as the steps from version i to i + 1 (index i): the SQLite
// backend's steps with PostgreSQL types. plan_json uses the "C" collation so
// that the (reward DESC, plan_json) order, and so the top-K kept on ties, is
// the same bytewise order as SQLite's. Never edit a released step: add one
// and bump kSchemaVersion (for both backends).
const std::vector<const char*>& MigrationSteps() {
  static const auto* steps = new std::vector<const char*>{
      // 0 -> 1: problems, their top-K plans, policy weights per family.
      "CREATE TABLE problems ("
      "  fingerprint TEXT PRIMARY KEY,"
      "  family_key TEXT NOT NULL,"
      "  model_key TEXT NOT NULL,"
      "  model_name TEXT NOT NULL,"
      "  input_tokens_log2 INTEGER NOT NULL,"
      "  output_tokens_log2 INTEGER NOT NULL,"
      "  concurrency_bucket INTEGER NOT NULL,"
      "  ttft_bucket INTEGER NOT NULL,"
      "  tpot_bucket INTEGER NOT NULL,"
      "  weight_dtype TEXT NOT NULL,"
      "  kv_cache_dtype TEXT NOT NULL,"
      "  cost_model_version INTEGER NOT NULL,"
      "  searches BIGINT NOT NULL DEFAULT 0,"
      "  updated_at_ms BIGINT NOT NULL);"
      "CREATE TABLE plans ("
      "  fingerprint TEXT NOT NULL REFERENCES problems(fingerprint),"
      "  plan_json TEXT COLLATE \"C\" NOT NULL,"
      "  reward DOUBLE PRECISION NOT NULL,"
      "  prediction_json TEXT NOT NULL,"
      "  PRIMARY KEY (fingerprint, plan_json));"
      "CREATE TABLE policy_weights ("
      "  family_key TEXT PRIMARY KEY,"
      "  weights BYTEA NOT NULL,"
      "  updated_at_ms BIGINT NOT NULL);",
      // 1 -> 2: throughput beside the reward, index for nearest lookups.
      "ALTER TABLE plans ADD COLUMN output_tokens_per_s DOUBLE PRECISION NOT "
      "NULL DEFAULT 0;"
      "CREATE INDEX problems_by_family ON problems(family_key);",
  };
  return *steps;
}

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

ProblemKey KeyFromRow(const pqxx::row& row) {
  ProblemKey key;
  key.fingerprint = row[0].as<std::string>();
  key.family_key = row[1].as<std::string>();
  key.model_key = row[2].as<std::string>();
  key.model_name = row[3].as<std::string>();
  key.input_tokens_log2 = row[4].as<int>();
  key.output_tokens_log2 = row[5].as<int>();
  key.concurrency_bucket = row[6].as<int>();
  key.ttft_bucket = row[7].as<int>();
  key.tpot_bucket = row[8].as<int>();
  key.weight_dtype = row[9].as<std::string>();
  key.kv_cache_dtype = row[10].as<std::string>();
  key.cost_model_version = row[11].as<int>();
  return key;
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
  const auto& steps = MigrationSteps();
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
    : EliteStore(RedactStorePath(options.path)),
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

absl::StatusOr<std::optional<WarmStartData>> PostgresStore::Lookup(
    const ProblemKey& key) {
  std::optional<WarmStartData> out;
  RETURN_IF_ERROR(Run("lookup", [&](Connection& c) -> absl::Status {
    out.reset();
    pqxx::transaction<pqxx::repeatable_read, pqxx::read_only> txn(c.conn);
    const pqxx::result problems = txn.exec_params(
        "SELECT fingerprint, family_key, model_key, model_name, "
        "input_tokens_log2, output_tokens_log2, concurrency_bucket, "
        "ttft_bucket, tpot_bucket, weight_dtype, kv_cache_dtype, "
        "cost_model_version, updated_at_ms FROM problems WHERE family_key = "
        "$1 AND EXISTS (SELECT 1 FROM plans WHERE plans.fingerprint = "
        "problems.fingerprint)",
        key.family_key);
    std::optional<ProblemKey> best;
    double best_distance = std::numeric_limits<double>::infinity();
    int64_t best_updated = -1;
    for (const pqxx::row& row : problems) {
      ProblemKey candidate = KeyFromRow(row);
      const int64_t updated = row[12].as<int64_t>();
      const double distance = candidate.fingerprint == key.fingerprint
                                  ? -1
                                  : WorkloadDistance(key, candidate);
      if (distance < best_distance ||
          (distance == best_distance && updated > best_updated)) {
        best = std::move(candidate);
        best_distance = distance;
        best_updated = updated;
      }
    }
    if (!best.has_value()) {
      txn.commit();
      return absl::OkStatus();
    }
    WarmStartData data;
    data.exact = best->fingerprint == key.fingerprint;
    data.fingerprint = best->fingerprint;
    data.distance = data.exact ? 0 : best_distance;
    const pqxx::result plans = txn.exec_params(
        "SELECT plan_json, reward, output_tokens_per_s, prediction_json FROM "
        "plans WHERE fingerprint = $1 ORDER BY reward DESC, plan_json",
        best->fingerprint);
    for (const pqxx::row& row : plans) {
      absl::StatusOr<simulator::PlanDims> plan =
          PlanFromStoredJson(row[0].as<std::string>());
      if (!plan.ok()) {
        LOG(WARNING) << "elite store: skipping unreadable plan of "
                     << best->fingerprint << ": " << plan.status();
        continue;
      }
      StoredPlan stored;
      stored.plan = *plan;
      stored.reward = row[1].as<double>();
      stored.output_tokens_per_s = row[2].as<double>();
      stored.prediction_json = row[3].as<std::string>();
      data.plans.push_back(std::move(stored));
    }
    const pqxx::result weights = txn.exec_params(
        "SELECT encode(weights, 'hex') FROM policy_weights WHERE family_key "
        "= $1",
        key.family_key);
    if (!weights.empty()) {
      data.policy_weights =
          absl::HexStringToBytes(weights[0][0].as<std::string>());
    }
    txn.commit();
    out = std::move(data);
    return absl::OkStatus();
  }));
  return out;
}

absl::Status PostgresStore::Record(const ProblemKey& key,
                                   const simulator::Problem& problem,
                                   absl::Span<const StoredPlan> plans,
                                   const std::string& policy_weights) {
  // Serialise outside the lock.
  std::vector<std::string> plan_json;
  plan_json.reserve(plans.size());
  for (const StoredPlan& stored : plans) {
    plan_json.push_back(PlanToStoredJson(stored.plan, problem));
  }
  const std::string weights_hex = absl::BytesToHexString(policy_weights);
  const int64_t now_ms = absl::ToUnixMillis(absl::Now());
  const int top_k = std::max(1, options_.top_k);

  return Run("record", [&](Connection& c) -> absl::Status {
    pqxx::work txn(c.conn);
    // Upserting the problem row first locks it: concurrent writers of this
    // problem queue here (see the header).
    txn.exec_params(
        "INSERT INTO problems (fingerprint, family_key, model_key, "
        "model_name, input_tokens_log2, output_tokens_log2, "
        "concurrency_bucket, ttft_bucket, tpot_bucket, weight_dtype, "
        "kv_cache_dtype, cost_model_version, searches, updated_at_ms) VALUES "
        "($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 1, $13) ON "
        "CONFLICT (fingerprint) DO UPDATE SET searches = problems.searches + "
        "1, updated_at_ms = excluded.updated_at_ms",
        key.fingerprint, key.family_key, key.model_key, key.model_name,
        key.input_tokens_log2, key.output_tokens_log2, key.concurrency_bucket,
        key.ttft_bucket, key.tpot_bucket, key.weight_dtype, key.kv_cache_dtype,
        key.cost_model_version, now_ms);
    for (size_t i = 0; i < plans.size(); ++i) {
      txn.exec_params(
          "INSERT INTO plans (fingerprint, plan_json, reward, "
          "prediction_json, output_tokens_per_s) VALUES ($1, $2, $3, $4, $5) "
          "ON CONFLICT (fingerprint, plan_json) DO UPDATE SET reward = "
          "excluded.reward, prediction_json = excluded.prediction_json, "
          "output_tokens_per_s = excluded.output_tokens_per_s",
          key.fingerprint, plan_json[i], plans[i].reward,
          plans[i].prediction_json, plans[i].output_tokens_per_s);
    }
    txn.exec_params(
        "DELETE FROM plans WHERE fingerprint = $1 AND plan_json NOT IN "
        "(SELECT plan_json FROM plans WHERE fingerprint = $1 ORDER BY reward "
        "DESC, plan_json LIMIT $2)",
        key.fingerprint, top_k);
    if (!policy_weights.empty()) {
      txn.exec_params(
          "INSERT INTO policy_weights (family_key, weights, updated_at_ms) "
          "VALUES ($1, decode($2, 'hex'), $3) ON CONFLICT (family_key) DO "
          "UPDATE SET weights = excluded.weights, updated_at_ms = "
          "excluded.updated_at_ms",
          key.family_key, weights_hex, now_ms);
    }
    txn.commit();
    return absl::OkStatus();
  });
}

absl::StatusOr<int64_t> PostgresStore::CountPlans() {
  int64_t count = 0;
  RETURN_IF_ERROR(Run("count plans", [&](Connection& c) -> absl::Status {
    pqxx::read_transaction txn(c.conn);
    count = txn.exec1("SELECT COUNT(*) FROM plans")[0].as<int64_t>();
    txn.commit();
    return absl::OkStatus();
  }));
  return count;
}

}  // namespace shardplan::server
