#include "server/store/store_schema.h"

#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "glog/logging.h"
#include "proto/status_macros.h"

namespace shardplan::server::store {
namespace {

// The schema once, with the column types that differ between the engines as
// tokens. plan_json sorts bytewise on both ("C" collation on PostgreSQL, the
// default on SQLite), so ties in (reward DESC, plan_json) keep the same top-K.
constexpr const char* kStepTemplates[] = {
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
    "  searches {BIGINT} NOT NULL DEFAULT 0,"
    "  updated_at_ms {BIGINT} NOT NULL);"
    "CREATE TABLE plans ("
    "  fingerprint TEXT NOT NULL REFERENCES problems(fingerprint),"
    "  plan_json TEXT{BYTEWISE} NOT NULL,"
    "  reward {REAL} NOT NULL,"
    "  prediction_json TEXT NOT NULL,"
    "  PRIMARY KEY (fingerprint, plan_json));"
    "CREATE TABLE policy_weights ("
    "  family_key TEXT PRIMARY KEY,"
    "  weights {BLOB} NOT NULL,"
    "  updated_at_ms {BIGINT} NOT NULL);",
    // 1 -> 2: throughput kept beside the reward (readable without parsing the
    // prediction), and an index for nearest-problem lookups.
    "ALTER TABLE plans ADD COLUMN output_tokens_per_s {REAL} NOT NULL DEFAULT "
    "0;"
    "CREATE INDEX problems_by_family ON problems(family_key);",
    // 2 -> 3: calibration profiles fitted from users' measurements (the
    // Calibrate RPC), shared by every server on the store.
    "CREATE TABLE calibration_profiles ("
    "  name TEXT PRIMARY KEY,"
    "  engine TEXT NOT NULL,"
    "  profile_json TEXT NOT NULL,"
    "  report TEXT NOT NULL,"
    "  updated_at_ms {BIGINT} NOT NULL);",
    // 3 -> 4: pruning picks the least recently used problems; a nearest
    // lookup reads a family's most recently searched ones.
    "CREATE INDEX problems_by_update ON problems(updated_at_ms);"
    "CREATE INDEX problems_by_family_update ON problems(family_key, "
    "updated_at_ms);",
};
static_assert(sizeof(kStepTemplates) / sizeof(kStepTemplates[0]) ==
              EliteStore::kSchemaVersion);

std::vector<std::string> Render(SqlDialect dialect) {
  const bool pg = dialect == SqlDialect::kPostgres;
  std::vector<std::string> steps;
  for (const char* step : kStepTemplates) {
    steps.push_back(absl::StrReplaceAll(
        step, {{"{BIGINT}", pg ? "BIGINT" : "INTEGER"},
               {"{REAL}", pg ? "DOUBLE PRECISION" : "REAL"},
               {"{BLOB}", pg ? "BYTEA" : "BLOB"},
               {"{BYTEWISE}", pg ? " COLLATE \"C\"" : ""}}));
  }
  return steps;
}

}  // namespace

const std::vector<std::string>& MigrationSteps(SqlDialect dialect) {
  static const auto* sqlite =
      new std::vector<std::string>(Render(SqlDialect::kSqlite));
  static const auto* postgres =
      new std::vector<std::string>(Render(SqlDialect::kPostgres));
  return dialect == SqlDialect::kPostgres ? *postgres : *sqlite;
}

const char kSelectFamilyProblemsSql[] =
    "SELECT fingerprint, family_key, model_key, model_name, "
    "input_tokens_log2, output_tokens_log2, concurrency_bucket, ttft_bucket, "
    "tpot_bucket, weight_dtype, kv_cache_dtype, cost_model_version, "
    "updated_at_ms FROM problems WHERE family_key = $1 AND EXISTS (SELECT 1 "
    "FROM plans WHERE plans.fingerprint = problems.fingerprint) ORDER BY "
    "updated_at_ms DESC LIMIT 5000";

const char kSelectExactProblemSql[] =
    "SELECT fingerprint, family_key, model_key, model_name, "
    "input_tokens_log2, output_tokens_log2, concurrency_bucket, ttft_bucket, "
    "tpot_bucket, weight_dtype, kv_cache_dtype, cost_model_version, "
    "updated_at_ms FROM problems WHERE fingerprint = $1 AND EXISTS (SELECT 1 "
    "FROM plans WHERE plans.fingerprint = problems.fingerprint)";

// A problem is kept while it is among the $1 most recently searched and was
// searched at or after $2 (ms); its plans go first (they reference it), and a
// family's weights go with its last problem.
const char kPrunePlansSql[] =
    "DELETE FROM plans WHERE fingerprint IN (SELECT fingerprint FROM problems "
    "WHERE updated_at_ms < $2 OR fingerprint NOT IN (SELECT fingerprint FROM "
    "problems ORDER BY updated_at_ms DESC, fingerprint LIMIT $1))";
const char kPruneProblemsSql[] =
    "DELETE FROM problems WHERE updated_at_ms < $2 OR fingerprint NOT IN "
    "(SELECT fingerprint FROM problems ORDER BY updated_at_ms DESC, "
    "fingerprint LIMIT $1)";
const char kPruneWeightsSql[] =
    "DELETE FROM policy_weights WHERE NOT EXISTS (SELECT 1 FROM problems "
    "WHERE problems.family_key = policy_weights.family_key)";

const char kUpsertProblemSql[] =
    "INSERT INTO problems (fingerprint, family_key, model_key, model_name, "
    "input_tokens_log2, output_tokens_log2, concurrency_bucket, ttft_bucket, "
    "tpot_bucket, weight_dtype, kv_cache_dtype, cost_model_version, "
    "updated_at_ms, searches) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, "
    "$10, $11, $12, $13, 1) ON CONFLICT (fingerprint) DO UPDATE SET searches "
    "= problems.searches + 1, updated_at_ms = excluded.updated_at_ms";

std::vector<std::string> ProblemRowParams(const ProblemRow& row) {
  const ProblemKey& k = row.key;
  return {k.fingerprint,
          k.family_key,
          k.model_key,
          k.model_name,
          absl::StrCat(k.input_tokens_log2),
          absl::StrCat(k.output_tokens_log2),
          absl::StrCat(k.concurrency_bucket),
          absl::StrCat(k.ttft_bucket),
          absl::StrCat(k.tpot_bucket),
          k.weight_dtype,
          k.kv_cache_dtype,
          absl::StrCat(k.cost_model_version),
          absl::StrCat(row.updated_at_ms)};
}

absl::StatusOr<ProblemRow> ProblemRowFromText(
    absl::Span<const std::string> columns) {
  if (columns.size() != kProblemColumnCount) {
    return absl::InternalError(
        absl::StrCat("elite store: a problems row has ", columns.size(),
                     " columns, expected ", kProblemColumnCount));
  }
  ProblemRow row;
  ProblemKey& k = row.key;
  k.fingerprint = columns[kFingerprint];
  k.family_key = columns[kFamilyKey];
  k.model_key = columns[kModelKey];
  k.model_name = columns[kModelName];
  k.weight_dtype = columns[kWeightDtype];
  k.kv_cache_dtype = columns[kKvCacheDtype];
  const std::pair<int, int*> ints[] = {
      {kInputTokensLog2, &k.input_tokens_log2},
      {kOutputTokensLog2, &k.output_tokens_log2},
      {kConcurrencyBucket, &k.concurrency_bucket},
      {kTtftBucket, &k.ttft_bucket},
      {kTpotBucket, &k.tpot_bucket},
      {kCostModelVersion, &k.cost_model_version}};
  for (const auto& [column, out] : ints) {
    if (!absl::SimpleAtoi(columns[column], out)) {
      return absl::InternalError(
          absl::StrCat("elite store: problem ", k.fingerprint, " column ",
                       column, " is not an integer: ", columns[column]));
    }
  }
  if (!absl::SimpleAtoi(columns[kUpdatedAtMs], &row.updated_at_ms)) {
    return absl::InternalError(absl::StrCat("elite store: problem ",
                                            k.fingerprint,
                                            " has a malformed updated_at_ms"));
  }
  return row;
}

void AppendProblemRow(absl::Span<const std::string> columns,
                      std::vector<ProblemRow>* rows) {
  absl::StatusOr<ProblemRow> row = ProblemRowFromText(columns);
  if (!row.ok()) {
    // One damaged row must not cost the other problems their warm starts.
    LOG(WARNING) << "elite store: skipping unreadable problems row: "
                 << row.status();
    return;
  }
  rows->push_back(*std::move(row));
}

std::optional<ChosenProblem> ChooseWarmStartProblem(
    const ProblemKey& key, absl::Span<const ProblemRow> candidates) {
  const ProblemRow* best = nullptr;
  double best_distance = std::numeric_limits<double>::infinity();
  for (const ProblemRow& row : candidates) {
    const double distance = row.key.fingerprint == key.fingerprint
                                ? -1  // exact beats any distance
                                : WorkloadDistance(key, row.key);
    if (distance < best_distance || (distance == best_distance &&
                                     row.updated_at_ms > best->updated_at_ms)) {
      best = &row;
      best_distance = distance;
    }
  }
  if (best == nullptr) return std::nullopt;
  ChosenProblem chosen;
  chosen.fingerprint = best->key.fingerprint;
  chosen.exact = best->key.fingerprint == key.fingerprint;
  chosen.distance = chosen.exact ? 0 : best_distance;
  return chosen;
}

absl::StatusOr<std::optional<ChosenProblem>> QueryWarmStartProblem(
    const ProblemKey& key, TextQuery query) {
  std::vector<ProblemRow> problems;
  for (const auto& [sql, param] :
       {std::pair<const char*, const std::string*>{kSelectExactProblemSql,
                                                   &key.fingerprint},
        std::pair<const char*, const std::string*>{kSelectFamilyProblemsSql,
                                                   &key.family_key}}) {
    ASSIGN_OR_RETURN(const TextRows rows, query(sql, *param));
    for (const std::vector<std::string>& columns : rows) {
      AppendProblemRow(columns, &problems);
    }
    if (!problems.empty()) break;
  }
  return ChooseWarmStartProblem(key, problems);
}

const char kSelectPlansSql[] =
    "SELECT plan_json, reward, output_tokens_per_s, prediction_json FROM "
    "plans WHERE fingerprint = $1 ORDER BY reward DESC, plan_json";

const char kUpsertPlanSql[] =
    "INSERT INTO plans (fingerprint, plan_json, reward, prediction_json, "
    "output_tokens_per_s) VALUES ($1, $2, $3, $4, $5) ON CONFLICT "
    "(fingerprint, plan_json) DO UPDATE SET reward = excluded.reward, "
    "prediction_json = excluded.prediction_json, output_tokens_per_s = "
    "excluded.output_tokens_per_s";

// Per kind: disaggregated plans (their JSON has a "prefill" pool) rank
// against the same Megatron reference as aggregated ones and would be
// trimmed whenever the aggregated plans are better, leaving the next
// disaggregated search of the problem without a warm start.
const char kTrimPlansSql[] =
    "DELETE FROM plans WHERE fingerprint = $1 AND plan_json NOT IN (SELECT "
    "plan_json FROM plans WHERE fingerprint = $1 AND plan_json NOT LIKE "
    "'%\"prefill\"%' ORDER BY reward DESC, plan_json LIMIT $2) AND plan_json "
    "NOT IN (SELECT plan_json FROM plans WHERE fingerprint = $1 AND plan_json "
    "LIKE '%\"prefill\"%' ORDER BY reward DESC, plan_json LIMIT $2)";

const char kCountPlansSql[] = "SELECT COUNT(*) FROM plans";

std::vector<StoredPlan> StoredPlansFromRows(const std::string& fingerprint,
                                            absl::Span<const PlanRow> rows) {
  std::vector<StoredPlan> plans;
  for (const PlanRow& row : rows) {
    absl::StatusOr<simulator::PlanDims> plan =
        PlanFromStoredJson(row.plan_json);
    if (!plan.ok()) {
      LOG(WARNING) << "elite store: skipping unreadable plan of " << fingerprint
                   << ": " << plan.status();
      continue;
    }
    StoredPlan stored;
    stored.plan = *plan;
    stored.reward = row.reward;
    stored.output_tokens_per_s = row.output_tokens_per_s;
    stored.prediction_json = row.prediction_json;
    plans.push_back(std::move(stored));
  }
  return plans;
}

const char kSelectProfilesSql[] =
    "SELECT name, engine, profile_json, report, updated_at_ms FROM "
    "calibration_profiles ORDER BY name";

const char kProfilesStampSql[] =
    "SELECT COUNT(*), COALESCE(MAX(updated_at_ms), 0), "
    "COALESCE(SUM(LENGTH(profile_json)), 0) FROM calibration_profiles";

const char kUpsertProfileSql[] =
    "INSERT INTO calibration_profiles (name, engine, profile_json, report, "
    "updated_at_ms) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (name) DO UPDATE "
    "SET engine = excluded.engine, profile_json = excluded.profile_json, "
    "report = excluded.report, updated_at_ms = excluded.updated_at_ms";

}  // namespace shardplan::server::store
