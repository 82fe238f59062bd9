// The persistent elite history: per problem, the top-K plans a search found
// (with reward and prediction), and per problem family the policy weights, in
// one SQLite file. Searches read it for warm starts and write it after they
// end, both on worker threads.
//
// Crash safety: WAL journal, synchronous=FULL, one transaction per finished
// search. A commit is durable once sqlite3_step(COMMIT) returns (the WAL frame
// is fsync'ed), and the server sends a search's final update only after its
// commit, so a client that saw `final: true` can rely on the search being in
// the store even if the server is SIGKILLed or the machine loses power right
// after. A kill during a write loses at most that uncommitted transaction; WAL
// recovery on the next open discards it and the file stays consistent (checked
// by the e2e SIGKILL loop with PRAGMA integrity_check).
#ifndef SHARDPLAN_SERVER_ELITE_STORE_H_
#define SHARDPLAN_SERVER_ELITE_STORE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "simulator/types.h"

struct sqlite3;

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
  std::string model_name;  // for humans reading the file
  int input_tokens_log2 = 0;
  int output_tokens_log2 = 0;
  int concurrency_bucket = 0;  // 0 = auto, else 1 + round(log2(concurrency))
  int ttft_bucket = 0;         // 0 = no SLO, else 1 + round(log2(ms))
  int tpot_bucket = 0;
  std::string weight_dtype;
  std::string kv_cache_dtype;
  int cost_model_version = 0;
};

// Deterministic across processes and platforms (FNV-1a over a canonical text).
ProblemKey MakeProblemKey(const simulator::Problem& problem);

// The documented similarity used for nearest lookups between two problems of
// the same family (same model family, hardware, num_gpus, gpus_per_node;
// otherwise not comparable):
//   |Δ log2 input_tokens| + |Δ log2 output_tokens| + |Δ concurrency bucket|
//   + |Δ TTFT bucket| + |Δ TPOT bucket| + 2 per differing dtype
//   + 8 when the architectures differ (another model of the family)
//   + 4 when the cost-model versions differ.
double WorkloadDistance(const ProblemKey& a, const ProblemKey& b);

// A plan as stored: the compact plan plus what the search knew about it.
struct StoredPlan {
  simulator::PlanDims plan;
  double reward = 0;
  double output_tokens_per_s = 0;
  std::string prediction_json;  // proto3 JSON of shardplan.v1.Prediction
};

struct WarmStartData {
  bool exact = false;       // the same fingerprint; else the nearest problem
  std::string fingerprint;  // of the stored problem used
  double distance = 0;      // WorkloadDistance to it (0 when exact)
  std::vector<StoredPlan> plans;  // best first
  std::string policy_weights;     // of the family, possibly empty
};

class EliteStore {
 public:
  static constexpr int kSchemaVersion = 2;

  struct Options {
    std::string path;
    int top_k = 16;              // plans kept per problem
    int busy_timeout_ms = 5000;  // another process holding the write lock
    int64_t max_page_count =
        0;  // tests only: > 0 caps the file (simulates a full disk)
  };

  // Opens or creates the store and migrates its schema to kSchemaVersion in one
  // transaction. FAILED_PRECONDITION when the file has a newer schema than this
  // server knows (it is left untouched); UNAVAILABLE/INTERNAL when it cannot be
  // opened, is not a database, or is read-only.
  static absl::StatusOr<std::unique_ptr<EliteStore>> Open(
      const Options& options);
  ~EliteStore();
  EliteStore(const EliteStore&) = delete;
  EliteStore& operator=(const EliteStore&) = delete;

  // Warm-start data for `key`: the exact fingerprint if stored, else the
  // nearest problem of the same family by WorkloadDistance (ties: most recently
  // updated), else nullopt. Plans that no longer parse are skipped.
  // Thread-safe.
  absl::StatusOr<std::optional<WarmStartData>> Lookup(const ProblemKey& key);

  // Merges `plans` into the problem's top-K (distinct plans, by reward), and
  // replaces the family's policy weights when `policy_weights` is non-empty;
  // one transaction, durable on return. Plans are serialised against `problem`
  // (proto3 JSON, placement dropped). Thread-safe.
  absl::Status Record(const ProblemKey& key, const simulator::Problem& problem,
                      absl::Span<const StoredPlan> plans,
                      const std::string& policy_weights);

  // Total plans stored (for shardplan_elite_store_plans).
  absl::StatusOr<int64_t> CountPlans();
  // Checkpoints the WAL into the main file (called at shutdown); the data is
  // durable without it.
  absl::Status Flush();

  const std::string& path() const { return options_.path; }

 private:
  EliteStore(const Options& options, sqlite3* db);
  absl::Status Exec(const char* sql) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Migrate() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::vector<StoredPlan>> LoadPlans(
      const std::string& fingerprint) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  absl::Mutex mu_;
  sqlite3* db_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shardplan::server

#endif  // SHARDPLAN_SERVER_ELITE_STORE_H_
