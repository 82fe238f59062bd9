#include "server/sqlite_store.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "glog/logging.h"
#include "simulator/status_macros.h"

namespace shardplan::server {
namespace {

// RAII for prepared statements.
struct StmtDeleter {
  void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
};
using Stmt = std::unique_ptr<sqlite3_stmt, StmtDeleter>;

absl::Status SqliteError(sqlite3* db, int rc, absl::string_view what) {
  const char* message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  const std::string text = absl::StrCat("elite store: ", what, ": ", message,
                                        " (sqlite code ", rc, ")");
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_FULL:
    case SQLITE_IOERR:
      return absl::UnavailableError(text);
    default:
      return absl::InternalError(text);
  }
}

absl::StatusOr<Stmt> Prepare(sqlite3* db, const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr);
  if (rc != SQLITE_OK)
    return SqliteError(db, rc, absl::StrCat("prepare \"", sql, "\""));
  return Stmt(stmt);
}

void BindText(sqlite3_stmt* stmt, int index, const std::string& text) {
  sqlite3_bind_text(stmt, index, text.data(), static_cast<int>(text.size()),
                    SQLITE_TRANSIENT);
}

std::string ColumnText(sqlite3_stmt* stmt, int column) {
  const unsigned char* text = sqlite3_column_text(stmt, column);
  const int size = sqlite3_column_bytes(stmt, column);
  return text == nullptr
             ? std::string()
             : std::string(reinterpret_cast<const char*>(text), size);
}

// Runs a statement that returns no rows.
absl::Status StepDone(sqlite3* db, sqlite3_stmt* stmt, absl::string_view what) {
  const int rc = sqlite3_step(stmt);
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) return SqliteError(db, rc, what);
  return absl::OkStatus();
}

// The schema, as the steps that lead from version i to i + 1 (index i). Never
// edit a released step: add a new one and bump kSchemaVersion.
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
      "  searches INTEGER NOT NULL DEFAULT 0,"
      "  updated_at_ms INTEGER NOT NULL);"
      "CREATE TABLE plans ("
      "  fingerprint TEXT NOT NULL REFERENCES problems(fingerprint),"
      "  plan_json TEXT NOT NULL,"
      "  reward REAL NOT NULL,"
      "  prediction_json TEXT NOT NULL,"
      "  PRIMARY KEY (fingerprint, plan_json));"
      "CREATE TABLE policy_weights ("
      "  family_key TEXT PRIMARY KEY,"
      "  weights BLOB NOT NULL,"
      "  updated_at_ms INTEGER NOT NULL);",
      // 1 -> 2: throughput kept beside the reward (readable without parsing the
      // prediction),
      // and an index for nearest-problem lookups.
      "ALTER TABLE plans ADD COLUMN output_tokens_per_s REAL NOT NULL DEFAULT "
      "0;"
      "CREATE INDEX problems_by_family ON problems(family_key);",
  };
  return *steps;
}

ProblemKey KeyFromRow(sqlite3_stmt* stmt) {
  // Column order of kProblemColumns.
  ProblemKey key;
  key.fingerprint = ColumnText(stmt, 0);
  key.family_key = ColumnText(stmt, 1);
  key.model_key = ColumnText(stmt, 2);
  key.model_name = ColumnText(stmt, 3);
  key.input_tokens_log2 = sqlite3_column_int(stmt, 4);
  key.output_tokens_log2 = sqlite3_column_int(stmt, 5);
  key.concurrency_bucket = sqlite3_column_int(stmt, 6);
  key.ttft_bucket = sqlite3_column_int(stmt, 7);
  key.tpot_bucket = sqlite3_column_int(stmt, 8);
  key.weight_dtype = ColumnText(stmt, 9);
  key.kv_cache_dtype = ColumnText(stmt, 10);
  key.cost_model_version = sqlite3_column_int(stmt, 11);
  return key;
}

constexpr char kProblemColumns[] =
    "fingerprint, family_key, model_key, model_name, input_tokens_log2, "
    "output_tokens_log2, "
    "concurrency_bucket, ttft_bucket, tpot_bucket, weight_dtype, "
    "kv_cache_dtype, "
    "cost_model_version, updated_at_ms";

}  // namespace

SqliteStore::SqliteStore(const Options& options, sqlite3* db)
    : EliteStore(options.path), options_(options), db_(db) {}

SqliteStore::~SqliteStore() {
  absl::MutexLock lock(&mu_);
  if (db_ != nullptr) sqlite3_close_v2(db_);
  db_ = nullptr;
}

absl::Status SqliteStore::Exec(const char* sql) {
  char* error = nullptr;
  const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &error);
  if (rc != SQLITE_OK) {
    std::string message = error != nullptr ? error : sqlite3_errstr(rc);
    sqlite3_free(error);
    return SqliteError(nullptr, rc, absl::StrCat(sql, ": ", message));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<EliteStore>> SqliteStore::Open(
    const Options& options) {
  if (options.path.empty())
    return absl::InvalidArgumentError("elite store: empty path");
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(
      options.path.c_str(), &db,
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
      nullptr);
  if (rc != SQLITE_OK) {
    absl::Status status =
        SqliteError(db, rc, absl::StrCat("open ", options.path));
    sqlite3_close_v2(db);
    return status;
  }
  auto store = std::unique_ptr<SqliteStore>(new SqliteStore(options, db));
  absl::MutexLock lock(&store->mu_);
  sqlite3_busy_timeout(db, options.busy_timeout_ms);
  sqlite3_extended_result_codes(db, 1);
  // journal_mode answers with the mode in force; anything but "wal" (read-only
  // medium, a file that is not a database) means the crash-safety argument does
  // not hold.
  {
    ASSIGN_OR_RETURN(Stmt stmt, Prepare(db, "PRAGMA journal_mode=WAL"));
    const int step = sqlite3_step(stmt.get());
    if (step != SQLITE_ROW)
      return SqliteError(db, step, "PRAGMA journal_mode=WAL");
    const std::string mode = ColumnText(stmt.get(), 0);
    if (mode != "wal") {
      return absl::UnavailableError(
          absl::StrCat("elite store: ", options.path,
                       " cannot use WAL journaling (mode \"", mode, "\")"));
    }
  }
  RETURN_IF_ERROR(store->Exec("PRAGMA synchronous=FULL"));
  if (options.max_page_count > 0) {
    RETURN_IF_ERROR(store->Exec(
        absl::StrCat("PRAGMA max_page_count=", options.max_page_count)
            .c_str()));
  }
  RETURN_IF_ERROR(store->Migrate());
  return std::unique_ptr<EliteStore>(std::move(store));
}

absl::Status SqliteStore::Migrate() {
  RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
  auto migrate = [&]() -> absl::Status {
    RETURN_IF_ERROR(
        Exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT "
             "NULL)"));
    int version = 0;
    {
      ASSIGN_OR_RETURN(Stmt stmt,
                       Prepare(db_, "SELECT MAX(version) FROM schema_version"));
      const int rc = sqlite3_step(stmt.get());
      if (rc != SQLITE_ROW) return SqliteError(db_, rc, "read schema_version");
      version = sqlite3_column_int(stmt.get(), 0);
    }
    if (version > kSchemaVersion) {
      return absl::FailedPreconditionError(absl::StrCat(
          "elite store ", options_.path, " has schema version ", version,
          ", newer than this server supports (", kSchemaVersion,
          "); it was written by a newer shardplan-server. Use that version, or "
          "point --store "
          "at another file. The file was not modified."));
    }
    const auto& steps = MigrationSteps();
    for (int v = version; v < kSchemaVersion; ++v) {
      RETURN_IF_ERROR(Annotate(Exec(steps[v]),
                               absl::StrCat("migration ", v, " -> ", v + 1)));
    }
    if (version != kSchemaVersion) {
      RETURN_IF_ERROR(Exec("DELETE FROM schema_version"));
      RETURN_IF_ERROR(
          Exec(absl::StrCat("INSERT INTO schema_version(version) VALUES (",
                            kSchemaVersion, ")")
                   .c_str()));
      if (version > 0) {
        LOG(INFO) << "elite store " << options_.path << ": migrated schema "
                  << version << " -> " << kSchemaVersion;
      }
    }
    return absl::OkStatus();
  };
  absl::Status status = migrate();
  if (!status.ok()) {
    Exec("ROLLBACK").IgnoreError();
    return status;
  }
  return Exec("COMMIT");
}

absl::StatusOr<std::vector<StoredPlan>> SqliteStore::LoadPlans(
    const std::string& fingerprint) {
  ASSIGN_OR_RETURN(Stmt stmt,
                   Prepare(db_,
                           "SELECT plan_json, reward, output_tokens_per_s, "
                           "prediction_json FROM plans WHERE fingerprint = ?1 "
                           "ORDER BY reward DESC, plan_json"));
  BindText(stmt.get(), 1, fingerprint);
  std::vector<StoredPlan> plans;
  while (true) {
    const int rc = sqlite3_step(stmt.get());
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) return SqliteError(db_, rc, "read plans");
    absl::StatusOr<simulator::PlanDims> plan =
        PlanFromStoredJson(ColumnText(stmt.get(), 0));
    if (!plan.ok()) {
      LOG(WARNING) << "elite store: skipping unreadable plan of " << fingerprint
                   << ": " << plan.status();
      continue;
    }
    StoredPlan stored;
    stored.plan = *plan;
    stored.reward = sqlite3_column_double(stmt.get(), 1);
    stored.output_tokens_per_s = sqlite3_column_double(stmt.get(), 2);
    stored.prediction_json = ColumnText(stmt.get(), 3);
    plans.push_back(std::move(stored));
  }
  return plans;
}

absl::StatusOr<std::optional<WarmStartData>> SqliteStore::Lookup(
    const ProblemKey& key) {
  absl::MutexLock lock(&mu_);
  std::optional<ProblemKey> best;
  double best_distance = std::numeric_limits<double>::infinity();
  int64_t best_updated = -1;
  {
    ASSIGN_OR_RETURN(
        Stmt stmt,
        Prepare(
            db_,
            absl::StrCat(
                "SELECT ", kProblemColumns,
                " FROM problems WHERE family_key = ?1 AND EXISTS (SELECT 1 "
                "FROM plans WHERE plans.fingerprint = problems.fingerprint)")
                .c_str()));
    BindText(stmt.get(), 1, key.family_key);
    while (true) {
      const int rc = sqlite3_step(stmt.get());
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) return SqliteError(db_, rc, "read problems");
      ProblemKey candidate = KeyFromRow(stmt.get());
      const int64_t updated = sqlite3_column_int64(stmt.get(), 12);
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
  }
  if (!best.has_value()) return std::optional<WarmStartData>();
  WarmStartData data;
  data.exact = best->fingerprint == key.fingerprint;
  data.fingerprint = best->fingerprint;
  data.distance = data.exact ? 0 : best_distance;
  ASSIGN_OR_RETURN(data.plans, LoadPlans(best->fingerprint));
  {
    ASSIGN_OR_RETURN(
        Stmt stmt,
        Prepare(db_,
                "SELECT weights FROM policy_weights WHERE family_key = ?1"));
    BindText(stmt.get(), 1, key.family_key);
    const int rc = sqlite3_step(stmt.get());
    if (rc == SQLITE_ROW) {
      const void* blob = sqlite3_column_blob(stmt.get(), 0);
      const int size = sqlite3_column_bytes(stmt.get(), 0);
      if (blob != nullptr)
        data.policy_weights.assign(static_cast<const char*>(blob), size);
    } else if (rc != SQLITE_DONE) {
      return SqliteError(db_, rc, "read policy_weights");
    }
  }
  return std::optional<WarmStartData>(std::move(data));
}

absl::Status SqliteStore::Record(const ProblemKey& key,
                                 const simulator::Problem& problem,
                                 absl::Span<const StoredPlan> plans,
                                 const std::string& policy_weights) {
  // Serialise outside the lock.
  std::vector<std::string> plan_json;
  plan_json.reserve(plans.size());
  for (const StoredPlan& stored : plans) {
    plan_json.push_back(PlanToStoredJson(stored.plan, problem));
  }
  const int64_t now_ms = absl::ToUnixMillis(absl::Now());

  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
  auto write = [&]() -> absl::Status {
    {
      ASSIGN_OR_RETURN(Stmt stmt,
                       Prepare(db_,
                               "INSERT INTO problems (fingerprint, family_key, "
                               "model_key, model_name, "
                               "input_tokens_log2, output_tokens_log2, "
                               "concurrency_bucket, ttft_bucket, "
                               "tpot_bucket, weight_dtype, kv_cache_dtype, "
                               "cost_model_version, searches, "
                               "updated_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
                               "?7, ?8, ?9, ?10, ?11, ?12, 1, "
                               "?13) ON CONFLICT(fingerprint) DO UPDATE SET "
                               "searches = searches + 1, "
                               "updated_at_ms = excluded.updated_at_ms"));
      sqlite3_stmt* s = stmt.get();
      BindText(s, 1, key.fingerprint);
      BindText(s, 2, key.family_key);
      BindText(s, 3, key.model_key);
      BindText(s, 4, key.model_name);
      sqlite3_bind_int(s, 5, key.input_tokens_log2);
      sqlite3_bind_int(s, 6, key.output_tokens_log2);
      sqlite3_bind_int(s, 7, key.concurrency_bucket);
      sqlite3_bind_int(s, 8, key.ttft_bucket);
      sqlite3_bind_int(s, 9, key.tpot_bucket);
      BindText(s, 10, key.weight_dtype);
      BindText(s, 11, key.kv_cache_dtype);
      sqlite3_bind_int(s, 12, key.cost_model_version);
      sqlite3_bind_int64(s, 13, now_ms);
      RETURN_IF_ERROR(StepDone(db_, s, "write problem"));
    }
    {
      ASSIGN_OR_RETURN(Stmt stmt,
                       Prepare(db_,
                               "INSERT INTO plans (fingerprint, plan_json, "
                               "reward, prediction_json, "
                               "output_tokens_per_s) VALUES (?1, ?2, ?3, ?4, "
                               "?5) ON CONFLICT(fingerprint, "
                               "plan_json) DO UPDATE SET reward = "
                               "excluded.reward, prediction_json = "
                               "excluded.prediction_json, output_tokens_per_s "
                               "= excluded.output_tokens_per_s"));
      for (size_t i = 0; i < plans.size(); ++i) {
        sqlite3_stmt* s = stmt.get();
        sqlite3_reset(s);
        BindText(s, 1, key.fingerprint);
        BindText(s, 2, plan_json[i]);
        sqlite3_bind_double(s, 3, plans[i].reward);
        BindText(s, 4, plans[i].prediction_json);
        sqlite3_bind_double(s, 5, plans[i].output_tokens_per_s);
        RETURN_IF_ERROR(StepDone(db_, s, "write plan"));
      }
    }
    {
      ASSIGN_OR_RETURN(
          Stmt stmt,
          Prepare(db_,
                  "DELETE FROM plans WHERE fingerprint = ?1 AND rowid NOT IN "
                  "(SELECT rowid FROM plans WHERE fingerprint = ?1 ORDER BY "
                  "reward DESC, plan_json LIMIT ?2)"));
      BindText(stmt.get(), 1, key.fingerprint);
      sqlite3_bind_int(stmt.get(), 2, std::max(1, options_.top_k));
      RETURN_IF_ERROR(StepDone(db_, stmt.get(), "trim plans"));
    }
    if (!policy_weights.empty()) {
      ASSIGN_OR_RETURN(
          Stmt stmt,
          Prepare(
              db_,
              "INSERT INTO policy_weights (family_key, weights, updated_at_ms) "
              "VALUES (?1, ?2, ?3) ON CONFLICT(family_key) DO UPDATE SET "
              "weights = excluded.weights, updated_at_ms = "
              "excluded.updated_at_ms"));
      BindText(stmt.get(), 1, key.family_key);
      sqlite3_bind_blob(stmt.get(), 2, policy_weights.data(),
                        static_cast<int>(policy_weights.size()),
                        SQLITE_TRANSIENT);
      sqlite3_bind_int64(stmt.get(), 3, now_ms);
      RETURN_IF_ERROR(StepDone(db_, stmt.get(), "write policy weights"));
    }
    return absl::OkStatus();
  };
  absl::Status status = write();
  if (!status.ok()) {
    Exec("ROLLBACK").IgnoreError();
    return status;
  }
  status = Exec("COMMIT");
  if (!status.ok()) Exec("ROLLBACK").IgnoreError();
  return status;
}

absl::StatusOr<int64_t> SqliteStore::CountPlans() {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Stmt stmt, Prepare(db_, "SELECT COUNT(*) FROM plans"));
  const int rc = sqlite3_step(stmt.get());
  if (rc != SQLITE_ROW) return SqliteError(db_, rc, "count plans");
  return sqlite3_column_int64(stmt.get(), 0);
}

absl::Status SqliteStore::Flush() {
  absl::MutexLock lock(&mu_);
  return Exec("PRAGMA wal_checkpoint(TRUNCATE)");
}

}  // namespace shardplan::server
