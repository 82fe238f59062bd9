// The store contract both backends (server/store/sqlite_store.h,
// server/store/postgres_store.h) share: the schema text and its migration
// steps, the SQL statements (written once, with $1..$n parameters, which SQLite
// and PostgreSQL both accept), the mapping between a `problems` row and a
// ProblemKey, and the nearest-problem rule of a warm-start lookup. A backend
// only runs these statements and moves rows; everything a backend could get
// differently from the other lives here.
#ifndef SHARDPLAN_SERVER_STORE_STORE_SCHEMA_H_
#define SHARDPLAN_SERVER_STORE_STORE_SCHEMA_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/store/elite_store.h"

namespace shardplan::server::store {

enum class SqlDialect { kSqlite, kPostgres };

// The steps from schema version i to i + 1 (index i), in `dialect`'s column
// types. Never edit a released step: add one and bump
// EliteStore::kSchemaVersion.
const std::vector<std::string>& MigrationSteps(SqlDialect dialect);

// --- problems ---

// The columns of a `problems` row as the statements below read and write
// them, in this order.
enum ProblemColumn {
  kFingerprint = 0,
  kFamilyKey,
  kModelKey,
  kModelName,
  kInputTokensLog2,
  kOutputTokensLog2,
  kConcurrencyBucket,
  kTtftBucket,
  kTpotBucket,
  kWeightDtype,
  kKvCacheDtype,
  kCostModelVersion,
  kUpdatedAtMs,
  kProblemColumnCount,
};

// $1 = family_key. Problems of the family that have at least one plan, every
// column of ProblemColumn: the 5,000 most recently searched (a nearest
// lookup costs O(5,000) rows however large the store grows).
extern const char kSelectFamilyProblemsSql[];
// $1 = fingerprint: that problem when it has a plan (the columns as above);
// a warm start reads the family only when this finds nothing.
extern const char kSelectExactProblemSql[];
// $1 = problems kept (the most recently searched), $2 = oldest updated_at_ms
// kept: run in this order, in one transaction.
extern const char kPrunePlansSql[];
extern const char kPruneProblemsSql[];
extern const char kPruneWeightsSql[];
// Upsert of a problem row ($1..$13: ProblemColumn order); counts searches.
extern const char kUpsertProblemSql[];

// The row's parameters for kUpsertProblemSql, as text (ProblemColumn order).
std::vector<std::string> ProblemRowParams(const ProblemRow& row);
// A row read by kSelectFamilyProblemsSql, every column as text.
// INTERNAL when a number does not parse or a column is missing.
absl::StatusOr<ProblemRow> ProblemRowFromText(
    absl::Span<const std::string> columns);

// ProblemRowFromText appended to `rows`; a row that does not decode is
// logged and skipped.
void AppendProblemRow(absl::Span<const std::string> columns,
                      std::vector<ProblemRow>* rows);

// The warm-start choice among `candidates` (problems of key's family): the
// exact fingerprint, else the nearest by WorkloadDistance, ties to the most
// recently updated; nullopt when there are none.
std::optional<ChosenProblem> ChooseWarmStartProblem(
    const ProblemKey& key, absl::Span<const ProblemRow> candidates);

// A backend's query of one statement with one parameter ($1): every row's
// columns as text.
using TextRows = std::vector<std::vector<std::string>>;
using TextQuery = absl::FunctionRef<absl::StatusOr<TextRows>(
    const char* sql, const std::string& param)>;

// The warm-start choice of `key` among the stored problems: the exact problem
// by its primary key (kSelectExactProblemSql), the family (every problem of
// it, kSelectFamilyProblemsSql) only when the exact one is not stored; then
// ChooseWarmStartProblem. Errors of `query` are returned.
absl::StatusOr<std::optional<ChosenProblem>> QueryWarmStartProblem(
    const ProblemKey& key, TextQuery query);

// --- plans ---

// $1 = fingerprint: plan_json, reward, output_tokens_per_s, prediction_json,
// best first.
extern const char kSelectPlansSql[];
// $1 fingerprint, $2 plan_json, $3 reward, $4 prediction_json,
// $5 output_tokens_per_s.
extern const char kUpsertPlanSql[];
// $1 fingerprint, $2 top_k: keeps the problem's best top_k plans of each
// kind (aggregated, disaggregated).
extern const char kTrimPlansSql[];
extern const char kCountPlansSql[];

// Plan rows -> StoredPlans; rows whose plan this build no longer parses are
// skipped (logged).
std::vector<StoredPlan> StoredPlansFromRows(const std::string& fingerprint,
                                            absl::Span<const PlanRow> rows);

// --- calibration profiles ---

// name, engine, profile_json, report, updated_at_ms of every profile, by
// name.
extern const char kSelectProfilesSql[];
// count, MAX(updated_at_ms), total profile_json length: profiles are re-read
// only when this changes.
extern const char kProfilesStampSql[];
// $1 name, $2 engine, $3 profile_json, $4 report, $5 updated_at_ms
// (replaces a profile of the same name).
extern const char kUpsertProfileSql[];

}  // namespace shardplan::server::store

#endif  // SHARDPLAN_SERVER_STORE_STORE_SCHEMA_H_
