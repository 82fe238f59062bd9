#include "server/store/sqlite_store.h"

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
#include "proto/status_macros.h"
#include "server/store/store_schema.h"

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

// Binds `value` to the statement's parameter `name` ("$1", ...): the shared
// statements number their parameters the PostgreSQL way, which SQLite reads
// as named parameters.
void BindNamed(sqlite3_stmt* stmt, const std::string& name,
               const std::string& value) {
  const int index = sqlite3_bind_parameter_index(stmt, name.c_str());
  if (index > 0) BindText(stmt, index, value);
}
void BindNamed(sqlite3_stmt* stmt, const std::string& name, double value) {
  const int index = sqlite3_bind_parameter_index(stmt, name.c_str());
  if (index > 0) sqlite3_bind_double(stmt, index, value);
}
void BindNamed(sqlite3_stmt* stmt, const std::string& name, int64_t value) {
  const int index = sqlite3_bind_parameter_index(stmt, name.c_str());
  if (index > 0) sqlite3_bind_int64(stmt, index, value);
}
// $1..$n as text (SQLite's column affinity stores numbers as numbers).
void BindAllText(sqlite3_stmt* stmt, const std::vector<std::string>& values) {
  for (size_t i = 0; i < values.size(); ++i) {
    BindNamed(stmt, absl::StrCat("$", i + 1), values[i]);
  }
}

}  // namespace

SqliteStore::SqliteStore(const Options& options, sqlite3* db)
    : EliteStore(options.path, options), options_(options), db_(db) {}

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
    const auto& steps = store::MigrationSteps(store::SqlDialect::kSqlite);
    for (int v = version; v < kSchemaVersion; ++v) {
      RETURN_IF_ERROR(Annotate(Exec(steps[v].c_str()),
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

absl::StatusOr<EliteStore::WarmStartRows> SqliteStore::ReadWarmStartRows(
    const ProblemKey& key) {
  absl::MutexLock lock(&mu_);
  // One read transaction: the snapshot the choice and its plans come from.
  RETURN_IF_ERROR(Exec("BEGIN"));
  absl::StatusOr<WarmStartRows> rows = ReadWarmStartRowsLocked(key);
  Exec("COMMIT").IgnoreError();
  return rows;
}

absl::StatusOr<EliteStore::WarmStartRows> SqliteStore::ReadWarmStartRowsLocked(
    const ProblemKey& key) {
  WarmStartRows out;
  auto step = [this](
                  const char* sql,
                  const std::string& param) -> absl::StatusOr<store::TextRows> {
    ASSIGN_OR_RETURN(Stmt stmt, Prepare(db_, sql));
    BindNamed(stmt.get(), "$1", param);
    store::TextRows rows;
    while (true) {
      const int rc = sqlite3_step(stmt.get());
      if (rc == SQLITE_DONE) return rows;
      if (rc != SQLITE_ROW) return SqliteError(db_, rc, "read problems");
      std::vector<std::string>& columns = rows.emplace_back();
      for (int c = 0; c < sqlite3_column_count(stmt.get()); ++c) {
        columns.push_back(ColumnText(stmt.get(), c));
      }
    }
  };
  ASSIGN_OR_RETURN(out.chosen, store::QueryWarmStartProblem(key, step));
  if (!out.chosen.has_value()) return out;
  {
    ASSIGN_OR_RETURN(Stmt stmt, Prepare(db_, store::kSelectPlansSql));
    BindNamed(stmt.get(), "$1", out.chosen->fingerprint);
    while (true) {
      const int rc = sqlite3_step(stmt.get());
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) return SqliteError(db_, rc, "read plans");
      out.plans.push_back(
          {ColumnText(stmt.get(), 0), sqlite3_column_double(stmt.get(), 1),
           sqlite3_column_double(stmt.get(), 2), ColumnText(stmt.get(), 3)});
    }
  }
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
        out.policy_weights.assign(static_cast<const char*>(blob), size);
    } else if (rc != SQLITE_DONE) {
      return SqliteError(db_, rc, "read policy_weights");
    }
  }
  return out;
}

absl::Status SqliteStore::WriteRecordRows(const RecordRows& rows) {
  absl::MutexLock lock(&mu_);
  return InWriteTransaction([&]() -> absl::Status {
    {
      ASSIGN_OR_RETURN(Stmt stmt, Prepare(db_, store::kUpsertProblemSql));
      BindAllText(stmt.get(), store::ProblemRowParams(rows.problem));
      RETURN_IF_ERROR(StepDone(db_, stmt.get(), "write problem"));
    }
    const std::string& fingerprint = rows.problem.key.fingerprint;
    {
      ASSIGN_OR_RETURN(Stmt stmt, Prepare(db_, store::kUpsertPlanSql));
      for (const store::PlanRow& plan : rows.plans) {
        sqlite3_stmt* s = stmt.get();
        sqlite3_reset(s);
        BindNamed(s, "$1", fingerprint);
        BindNamed(s, "$2", plan.plan_json);
        BindNamed(s, "$3", plan.reward);
        BindNamed(s, "$4", plan.prediction_json);
        BindNamed(s, "$5", plan.output_tokens_per_s);
        RETURN_IF_ERROR(StepDone(db_, s, "write plan"));
      }
    }
    {
      ASSIGN_OR_RETURN(Stmt stmt, Prepare(db_, store::kTrimPlansSql));
      BindNamed(stmt.get(), "$1", fingerprint);
      BindNamed(stmt.get(), "$2", static_cast<int64_t>(rows.top_k));
      RETURN_IF_ERROR(StepDone(db_, stmt.get(), "trim plans"));
    }
    if (!rows.policy_weights.empty()) {
      ASSIGN_OR_RETURN(
          Stmt stmt,
          Prepare(
              db_,
              "INSERT INTO policy_weights (family_key, weights, updated_at_ms) "
              "VALUES (?1, ?2, ?3) ON CONFLICT(family_key) DO UPDATE SET "
              "weights = excluded.weights, updated_at_ms = "
              "excluded.updated_at_ms"));
      BindText(stmt.get(), 1, rows.problem.key.family_key);
      sqlite3_bind_blob(stmt.get(), 2, rows.policy_weights.data(),
                        static_cast<int>(rows.policy_weights.size()),
                        SQLITE_TRANSIENT);
      sqlite3_bind_int64(stmt.get(), 3, rows.problem.updated_at_ms);
      RETURN_IF_ERROR(StepDone(db_, stmt.get(), "write policy weights"));
    }
    return absl::OkStatus();
  });
}

absl::Status SqliteStore::InWriteTransaction(
    absl::FunctionRef<absl::Status()> body) {
  RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
  absl::Status status = body();
  if (!status.ok()) {
    Exec("ROLLBACK").IgnoreError();
    return status;
  }
  status = Exec("COMMIT");
  if (!status.ok()) Exec("ROLLBACK").IgnoreError();
  return status;
}

absl::Status SqliteStore::SaveProfile(const StoredProfile& profile) {
  absl::MutexLock lock(&mu_);
  return InWriteTransaction([&]() -> absl::Status {
    ASSIGN_OR_RETURN(Stmt stmt, Prepare(db_, store::kUpsertProfileSql));
    BindNamed(stmt.get(), "$1", profile.name);
    BindNamed(stmt.get(), "$2", profile.engine);
    BindNamed(stmt.get(), "$3", profile.profile_json);
    BindNamed(stmt.get(), "$4", profile.report);
    BindNamed(stmt.get(), "$5", profile.updated_at_ms);
    return StepDone(db_, stmt.get(), "write calibration profile");
  });
}

absl::StatusOr<std::vector<StoredProfile>> SqliteStore::LoadProfiles() {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Stmt stmt, Prepare(db_, store::kSelectProfilesSql));
  std::vector<StoredProfile> profiles;
  while (true) {
    const int rc = sqlite3_step(stmt.get());
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) return SqliteError(db_, rc, "read profiles");
    profiles.push_back({ColumnText(stmt.get(), 0), ColumnText(stmt.get(), 1),
                        ColumnText(stmt.get(), 2), ColumnText(stmt.get(), 3),
                        sqlite3_column_int64(stmt.get(), 4)});
  }
  return profiles;
}

absl::Status SqliteStore::PruneRows(int64_t keep, int64_t oldest_ms) {
  absl::MutexLock lock(&mu_);
  return InWriteTransaction([&]() -> absl::Status {
    for (const char* sql : {store::kPrunePlansSql, store::kPruneProblemsSql,
                            store::kPruneWeightsSql}) {
      ASSIGN_OR_RETURN(Stmt stmt, Prepare(db_, sql));
      BindNamed(stmt.get(), "$1", keep);
      BindNamed(stmt.get(), "$2", oldest_ms);
      RETURN_IF_ERROR(StepDone(db_, stmt.get(), "prune"));
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<std::string> SqliteStore::ProfilesStamp() {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Stmt stmt, Prepare(db_, store::kProfilesStampSql));
  const int rc = sqlite3_step(stmt.get());
  if (rc != SQLITE_ROW) return SqliteError(db_, rc, "read profiles stamp");
  return absl::StrCat(ColumnText(stmt.get(), 0), "/", ColumnText(stmt.get(), 1),
                      "/", ColumnText(stmt.get(), 2));
}

absl::StatusOr<int64_t> SqliteStore::CountPlans() {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Stmt stmt, Prepare(db_, store::kCountPlansSql));
  const int rc = sqlite3_step(stmt.get());
  if (rc != SQLITE_ROW) return SqliteError(db_, rc, "count plans");
  return sqlite3_column_int64(stmt.get(), 0);
}

absl::Status SqliteStore::Flush() {
  absl::MutexLock lock(&mu_);
  return Exec("PRAGMA wal_checkpoint(TRUNCATE)");
}

}  // namespace shardplan::server
