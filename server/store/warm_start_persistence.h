// The server's use of the elite store: warm-start lookups and writes after a
// search, with the "store off" state. A store that cannot be opened, read or
// written turns warm starts off for the rest of the process with one logged
// warning; searches go on cold. A store that recovers by itself (PostgreSQL,
// EliteStore::recovers_from_failures) is kept: a failed call only makes that
// search cold (warm start "disabled") and logs a warning. Keeps the
// shardplan_elite_store_plans gauge and counts
// shardplan_warm_starts_total{result}. Called only on worker threads (and at
// startup/shutdown), never on gRPC threads.
#ifndef SHARDPLAN_SERVER_STORE_WARM_START_PERSISTENCE_H_
#define SHARDPLAN_SERVER_STORE_WARM_START_PERSISTENCE_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "policy/searcher.h"
#include "server/metrics.h"
#include "server/store/elite_store.h"
#include "simulator/types.h"

namespace shardplan::server {

class WarmStartPersistence {
 public:
  // `store` may be null (could not be opened: warm starts are off). `metrics`
  // outlives this.
  WarmStartPersistence(std::shared_ptr<EliteStore> store,
                       ServerMetrics& metrics);

  struct Found {
    std::optional<policy::WarmStart> warm_start;  // set on a hit
    std::string result;                           // a kWarmStart* metric label
  };
  // Looks up warm-start state for `key` (when `wanted`), counts the outcome in
  // shardplan_warm_starts_total and returns it. The WarmStart's source is
  // "exact" or "nearest:<fingerprint>".
  Found Find(const ProblemKey& key, bool wanted);

  // Persists the search's plans (and policy weights, when non-empty); durable
  // on return. A failure disables the store (logged once). Thread-safe.
  void Record(const ProblemKey& key, const simulator::Problem& problem,
              const std::vector<StoredPlan>& plans,
              const std::string& policy_weights);

  // Checkpoints the WAL (shutdown).
  void Flush();

  bool enabled() const;

 private:
  void Disable(const absl::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UpdateGauge() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  ServerMetrics& metrics_;
  mutable absl::Mutex mu_;
  // The store serialises its own calls; mu_ only guards the pointer (Disable
  // resets it).
  std::shared_ptr<EliteStore> store_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<EliteStore> Get() const;
};

}  // namespace shardplan::server

#endif  // SHARDPLAN_SERVER_STORE_WARM_START_PERSISTENCE_H_
