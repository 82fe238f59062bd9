#include "server/store/warm_start_persistence.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace shardplan::server {

WarmStartPersistence::WarmStartPersistence(std::shared_ptr<EliteStore> store,
                                           ServerMetrics& metrics)
    : metrics_(metrics), store_(std::move(store)) {
  absl::MutexLock lock(&mu_);
  UpdateGauge();
}

std::shared_ptr<EliteStore> WarmStartPersistence::Get() const {
  absl::MutexLock lock(&mu_);
  return store_;
}

bool WarmStartPersistence::enabled() const { return Get() != nullptr; }

void WarmStartPersistence::Disable(const absl::Status& status) {
  if (store_ == nullptr) return;
  if (store_->recovers_from_failures()) {
    // PostgreSQL: only this call failed; the store reconnects by itself.
    LOG(WARNING) << "elite store " << store_->path()
                 << " unavailable; this search runs without it (warm start "
                    "off / result not shared), retried on later searches: "
                 << status;
    return;
  }
  LOG(WARNING)
      << "elite store " << store_->path()
      << " failed; warm starts are off until restart, searches go on cold: "
      << status;
  store_.reset();
}

void WarmStartPersistence::UpdateGauge() {
  if (store_ == nullptr) return;
  absl::StatusOr<int64_t> count = store_->CountPlans();
  if (!count.ok()) {
    Disable(count.status());
    return;
  }
  metrics_.elite_store_plans().Set(static_cast<double>(*count));
}

WarmStartPersistence::Found WarmStartPersistence::Find(const ProblemKey& key,
                                                       bool wanted) {
  Found found;
  std::shared_ptr<EliteStore> store = Get();
  if (!wanted || store == nullptr) {
    found.result = std::string(kWarmStartDisabled);
    metrics_.CountWarmStart(found.result);
    return found;
  }
  absl::StatusOr<std::optional<WarmStartData>> data = store->Lookup(key);
  if (!data.ok()) {
    absl::MutexLock lock(&mu_);
    if (store_ == store) Disable(data.status());
    found.result = std::string(kWarmStartDisabled);
  } else if (!data->has_value() || (*data)->plans.empty()) {
    found.result = std::string(kWarmStartMiss);
  } else {
    WarmStartData& hit = **data;
    policy::WarmStart warm;
    warm.elite_plans.reserve(hit.plans.size());
    for (const StoredPlan& plan : hit.plans)
      warm.elite_plans.push_back(plan.plan);
    warm.policy_weights = std::move(hit.policy_weights);
    warm.source =
        hit.exact ? "exact" : absl::StrCat("nearest:", hit.fingerprint);
    found.warm_start = std::move(warm);
    found.result =
        std::string(hit.exact ? kWarmStartHitExact : kWarmStartHitNearest);
  }
  metrics_.CountWarmStart(found.result);
  return found;
}

void WarmStartPersistence::Record(const ProblemKey& key,
                                  const simulator::Problem& problem,
                                  const std::vector<StoredPlan>& plans,
                                  const std::string& policy_weights) {
  std::shared_ptr<EliteStore> store = Get();
  if (store == nullptr || (plans.empty() && policy_weights.empty())) return;
  absl::Status status = store->Record(key, problem, plans, policy_weights);
  // Counted outside mu_: a store call may wait on the network, and mu_ is
  // every search's.
  absl::StatusOr<int64_t> count =
      status.ok() ? store->CountPlans() : absl::StatusOr<int64_t>(status);
  absl::MutexLock lock(&mu_);
  if (store_ != store) return;
  if (!count.ok()) {
    Disable(count.status());
    return;
  }
  metrics_.elite_store_plans().Set(static_cast<double>(*count));
}

void WarmStartPersistence::Flush() {
  std::shared_ptr<EliteStore> store = Get();
  if (store == nullptr) return;
  absl::Status status = store->Flush();
  if (!status.ok()) LOG(WARNING) << "elite store flush: " << status;
}

}  // namespace shardplan::server
