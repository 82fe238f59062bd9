// The persistent elite history: per problem, the top-K plans a search found
// (with reward and prediction), and per problem family the policy weights.
// Searches read it for warm starts and write it after they end, both on worker
// threads. This header is the backend-neutral interface; see sqlite_store.h
// (crash-safety argument for the embedded file) and postgres_store.h (shared
// by several replicas: consistency under concurrent writers, reconnects).
#ifndef SHARDPLAN_SERVER_STORE_ELITE_STORE_H_
#define SHARDPLAN_SERVER_STORE_ELITE_STORE_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "simulator/types.h"

namespace shardplan::server {

// Where a problem sits in the store. Buckets make nearby workloads share a key:
// lengths are rounded to the nearest power of two (log2 kept), concurrency and
// SLOs likewise (0 = none).
struct ProblemKey {
  std::string fingerprint;  // 16 hex digits: hash of everything below +
                            // cost-model version
  std::string
      family_key;  // model family + cluster shape: "llama|h100-sxm-80gb|16x8"
  std::string
      model_key;  // hash of the model's architecture fields (name excluded)
  // For humans reading the file. A problem predicted with a calibration
  // profile other than the default carries it here as a suffix,
  // "llama-3.1-70b @profile=h100-vllm" (kProfileSuffix): the stores keep
  // their schema, and rows written before profiles existed (all default)
  // read back unchanged.
  std::string model_name;
  int input_tokens_log2 = 0;
  int output_tokens_log2 = 0;
  int concurrency_bucket = 0;  // 0 = auto, else 1 + round(log2(concurrency))
  int ttft_bucket = 0;         // 0 = no SLO, else 1 + round(log2(ms))
  int tpot_bucket = 0;
  std::string weight_dtype;
  std::string kv_cache_dtype;
  int cost_model_version = 0;
};

// Separator of the calibration profile folded into ProblemKey::model_name.
inline constexpr char kProfileSuffix[] = " @profile=";

// Deterministic across processes and platforms (FNV-1a over a canonical text).
// The fingerprint covers the calibration profile unless it is the default
// one, so default-profile fingerprints are those of earlier versions.
ProblemKey MakeProblemKey(const simulator::Problem& problem);

// The calibration profile of a key (parsed from model_name; the default
// profile's name when there is no suffix).
std::string ProfileOfKey(const ProblemKey& key);

// The documented similarity used for nearest lookups between two problems of
// the same family (same model family, hardware, num_gpus, gpus_per_node;
// otherwise not comparable):
//   |Δ log2 input_tokens| + |Δ log2 output_tokens| + |Δ concurrency bucket|
//   + |Δ TTFT bucket| + |Δ TPOT bucket| + 2 per differing dtype
//   + 8 when the architectures differ (another model of the family)
//   + 4 when the cost-model versions differ
//   + 1 when the calibration profiles differ (engines share every fitted
//     parameter but two TTFT terms, so plans rank much alike).
double WorkloadDistance(const ProblemKey& a, const ProblemKey& b);

// A plan as stored: the compact plan plus what the search knew about it.
struct StoredPlan {
  simulator::PlanDims plan;
  double reward = 0;
  double output_tokens_per_s = 0;
  std::string prediction_json;  // proto3 JSON of shardplan.v1.Prediction
};

// The rows the backends move (their statements: server/store/store_schema.h).
namespace store {
struct ProblemRow {
  ProblemKey key;
  int64_t updated_at_ms = 0;
};
// A plan row as stored.
struct PlanRow {
  std::string plan_json;
  double reward = 0;
  double output_tokens_per_s = 0;
  std::string prediction_json;
};
// The problem a warm start uses (store::ChooseWarmStartProblem).
struct ChosenProblem {
  std::string fingerprint;
  bool exact = false;
  double distance = 0;
};
}  // namespace store

struct WarmStartData {
  bool exact = false;       // the same fingerprint; else the nearest problem
  std::string fingerprint;  // of the stored problem used
  double distance = 0;      // WorkloadDistance to it (0 when exact)
  std::vector<StoredPlan> plans;  // best first
  std::string policy_weights;     // of the family, possibly empty
};

// A calibration profile fitted from a user's measurements (the Calibrate RPC):
// the simulator::Calibration as proto3 JSON (CalibrationParameters) and the
// fit's accuracy report.
struct StoredProfile {
  std::string name;
  std::string engine;  // "" = engine-agnostic
  std::string profile_json;
  std::string report;
  int64_t updated_at_ms = 0;
};

// The store interface. Two backends: SQLite (server/store/sqlite_store.h, the
// embedded default, one file per server) and PostgreSQL
// (server/store/postgres_store.h, shared by several replicas). Both keep the
// same schema, statements, row mapping and lookup rule
// (server/store/store_schema.h, the contract: backends only move rows);
// tests/server/store_conformance_test.cc runs one suite over both.
class EliteStore {
 public:
  static constexpr int kSchemaVersion = 4;

  struct Options {
    // A file path = SQLite; `postgresql://...` or `postgres://...` (a libpq
    // connection URI) = PostgreSQL.
    std::string path;
    int top_k = 16;              // plans kept per problem
    int busy_timeout_ms = 5000;  // SQLite: another process holding the lock
    int64_t max_page_count =
        0;  // SQLite tests only: > 0 caps the file (simulates a full disk)
    // PostgreSQL: after a failed connection attempt, the next one waits this
    // long, doubling up to the maximum (calls in between fail at once).
    int reconnect_backoff_initial_ms = 200;
    int reconnect_backoff_max_ms = 3000;
    // PostgreSQL: the longest one store call may wait on the network (connect
    // and statements, retries included). A database that stops answering
    // (host frozen, network partition with the TCP session still up) fails
    // the call with UNAVAILABLE after this, however libpq is blocked.
    int call_timeout_ms = 5000;
    // Pruning (every kPruneEvery records, and at open): problems beyond the
    // `max_problems` most recently searched, or last searched more than
    // `max_age_days` ago, are deleted with their plans; a family's weights go
    // with its last problem. 0 = no bound of that kind.
    int64_t max_problems = 10000;
    int max_age_days = 0;
  };
  static constexpr int kPruneEvery = 16;

  // Opens or creates the store (the backend chosen by `options.path`, see
  // IsPostgresUrl) and migrates its schema to kSchemaVersion in one
  // transaction. FAILED_PRECONDITION when the store has a newer schema than
  // this server knows (it is left untouched); UNAVAILABLE/INTERNAL when it
  // cannot be opened, is not a database, or is read-only.
  static absl::StatusOr<std::unique_ptr<EliteStore>> Open(
      const Options& options);
  virtual ~EliteStore() = default;
  EliteStore(const EliteStore&) = delete;
  EliteStore& operator=(const EliteStore&) = delete;

  // Warm-start data for `key`: the exact fingerprint if stored (found by its
  // key), else the nearest of the family's 5,000 most recently searched
  // problems (store::ChooseWarmStartProblem), else nullopt. Rows that no
  // longer decode (problems, plans) are skipped and logged. Thread-safe.
  absl::StatusOr<std::optional<WarmStartData>> Lookup(const ProblemKey& key);

  // Merges `plans` into the problem's top-K (distinct plans, by reward), and
  // replaces the family's policy weights when `policy_weights` is non-empty;
  // one transaction, durable on return. Plans are serialised against `problem`
  // (proto3 JSON, placement dropped). Thread-safe; concurrent writers (threads
  // or processes sharing the store) never lose or duplicate plans.
  absl::Status Record(const ProblemKey& key, const simulator::Problem& problem,
                      absl::Span<const StoredPlan> plans,
                      const std::string& policy_weights);

  // Applies the pruning rule of Options now (Record does it every
  // kPruneEvery writes). Thread-safe.
  absl::Status Prune();

  // Stores `profile` (replacing one of the same name); durable on return.
  // Thread-safe.
  virtual absl::Status SaveProfile(const StoredProfile& profile) = 0;
  // Every stored calibration profile, by name. Thread-safe.
  virtual absl::StatusOr<std::vector<StoredProfile>> LoadProfiles() = 0;
  // Changes whenever a profile is added or replaced
  // (store::kProfilesStampSql), read instead of every profile row when
  // nothing changed. Thread-safe.
  virtual absl::StatusOr<std::string> ProfilesStamp() = 0;

  // Total plans stored (for shardplan_elite_store_plans).
  virtual absl::StatusOr<int64_t> CountPlans() = 0;
  // Makes the data durable beyond what a commit already does (SQLite: WAL
  // checkpoint at shutdown; PostgreSQL: nothing).
  virtual absl::Status Flush() = 0;

  // True when a failed call does not mean the store is broken for good: the
  // backend reconnects by itself (PostgreSQL). The server then keeps the store
  // and only runs the affected searches cold; a SQLite failure (disk full,
  // corrupt file) turns the store off until restart.
  virtual bool recovers_from_failures() const { return false; }

  // For logs: the file path, or the connection URI without its password.
  const std::string& path() const { return display_path_; }

 protected:
  EliteStore(std::string display_path, const Options& options)
      : display_path_(std::move(display_path)),
        top_k_(std::max(1, options.top_k)),
        max_problems_(options.max_problems),
        max_age_days_(options.max_age_days) {}

  // What a backend reads for Lookup, in one consistent snapshot: the family's
  // problems (store::kSelectFamilyProblemsSql), the one
  // store::ChooseWarmStartProblem picks, its plan rows
  // (store::kSelectPlansSql) and the family's policy weights.
  struct WarmStartRows {
    std::optional<store::ChosenProblem> chosen;  // none: nothing stored
    std::vector<store::PlanRow> plans;
    std::string policy_weights;
  };
  virtual absl::StatusOr<WarmStartRows> ReadWarmStartRows(
      const ProblemKey& key) = 0;

  // What a backend writes for Record, in one transaction: upsert `problem`
  // (store::kUpsertProblemSql), each plan (store::kUpsertPlanSql), trim to
  // `top_k` (store::kTrimPlansSql), and the family's weights when non-empty.
  struct RecordRows {
    store::ProblemRow problem;
    std::vector<store::PlanRow> plans;
    std::string policy_weights;
    int top_k = 1;
  };
  virtual absl::Status WriteRecordRows(const RecordRows& rows) = 0;

  // store::kPrunePlansSql, kPruneProblemsSql, kPruneWeightsSql in one
  // transaction with `keep` (problems kept) and `oldest_ms`.
  virtual absl::Status PruneRows(int64_t keep, int64_t oldest_ms) = 0;

 private:
  const std::string display_path_;
  const int top_k_;
  const int64_t max_problems_;
  const int max_age_days_;
  std::atomic<int64_t> records_{0};
};

// True for `postgresql://...` and `postgres://...` store locations.
bool IsPostgresUrl(absl::string_view path);
// `path` with any password in a connection URI replaced by "***" (for logs).
std::string RedactStorePath(absl::string_view path);
// True when the connection URI `path` carries a password (user:PASSWORD@ or
// ?password=): it is then visible to every local user in ps and /proc. libpq
// reads PGPASSWORD or a PGPASSFILE (~/.pgpass) when the URI has none.
bool StorePathHasPassword(absl::string_view path);

// The serialised form of a stored plan (proto3 JSON, placement dropped) and
// back; shared by the backends. Parsing fails for plans this build no longer
// understands.
std::string PlanToStoredJson(const simulator::PlanDims& plan,
                             const simulator::Problem& problem);
absl::StatusOr<simulator::PlanDims> PlanFromStoredJson(const std::string& json);

}  // namespace shardplan::server

#endif  // SHARDPLAN_SERVER_STORE_ELITE_STORE_H_
