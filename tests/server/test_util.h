// Helpers for the server tests: requests and problems on catalog models, temp
// dirs, and a fake Searcher whose behaviour each test scripts (no LibTorch, no
// real search).
#ifndef SHARDPLAN_TESTS_SERVER_TEST_UTIL_H_
#define SHARDPLAN_TESTS_SERVER_TEST_UTIL_H_

#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "policy/searcher.h"
#include "proto/status_macros.h"
#include "server/store/elite_store.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/cost_model.h"
#include "simulator/megatron.h"
#include "simulator/spec.h"

namespace shardplan::server::testing {

inline shardplan::v1::PlanRequest MakePlanRequest(const std::string& model,
                                                  int gpus,
                                                  int input_tokens = 2048,
                                                  int output_tokens = 512) {
  shardplan::v1::PlanRequest request;
  request.mutable_model()->set_catalog_name(model);
  request.mutable_cluster()->set_hardware("h100-sxm-80gb");
  request.mutable_cluster()->set_num_gpus(gpus);
  request.mutable_cluster()->set_gpus_per_node(gpus < 8 ? gpus : 8);
  request.mutable_workload()->set_input_tokens(input_tokens);
  request.mutable_workload()->set_output_tokens(output_tokens);
  request.mutable_options()->set_method("random");
  request.mutable_options()->set_max_evaluations(50);
  return request;
}

inline absl::StatusOr<simulator::Problem> MakeProblem(const std::string& model,
                                                      int gpus,
                                                      int input_tokens = 2048,
                                                      int output_tokens = 512) {
  shardplan::v1::PlanRequest request =
      MakePlanRequest(model, gpus, input_tokens, output_tokens);
  return simulator::ProblemFromProto(request.model(), request.cluster(),
                                     request.workload());
}

// A fresh directory under TEST_TMPDIR (or /tmp), removed by the destructor.
class TempDir {
 public:
  TempDir() {
    const char* base = getenv("TEST_TMPDIR");
    std::string pattern =
        absl::StrCat(base != nullptr ? base : "/tmp", "/shardplan-XXXXXX");
    path_ = mkdtemp(pattern.data()) != nullptr ? pattern : "";
  }
  ~TempDir() {
    if (!path_.empty()) {
      const std::string command = absl::StrCat("rm -rf '", path_, "'");
      (void)!system(command.c_str());
    }
  }
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const {
    return absl::StrCat(path_, "/", name);
  }

 private:
  std::string path_;
};

// What the fake searcher does; shared by every searcher the factory makes.
// Thread-safe.
struct FakeScript {
  int improvements = 3;  // reported before returning (each 10% better)
  bool block_until_cancelled = false;
  bool fail_internal = false;  // return INTERNAL instead of a result
  absl::Notification* finished_improvements =
      nullptr;  // notified after the reports

  absl::Mutex mu;
  int searches_started ABSL_GUARDED_BY(mu) = 0;
  int searches_cancelled ABSL_GUARDED_BY(mu) = 0;
  std::vector<std::string> warm_sources ABSL_GUARDED_BY(mu);  // "" = cold
  std::vector<int> warm_plan_counts ABSL_GUARDED_BY(mu);

  int started() {
    absl::MutexLock lock(&mu);
    return searches_started;
  }
  int cancelled() {
    absl::MutexLock lock(&mu);
    return searches_cancelled;
  }
  std::vector<std::string> sources() {
    absl::MutexLock lock(&mu);
    return warm_sources;
  }
};

// Reports `improvements` plans whose predicted throughput is the baseline's
// times 1.1, 1.2,
// ...; the plans are valid alternatives (different batch sizes of the Megatron
// plan) so they round-trip through the store.
class FakeSearcher final : public policy::Searcher {
 public:
  explicit FakeSearcher(FakeScript& script) : script_(script) {}
  absl::string_view method() const override { return "random"; }

  absl::StatusOr<policy::SearchResult> Search(
      const simulator::CostModel& model, const policy::SearchOptions& options,
      const policy::CancellationToken& cancel,
      policy::SearchObserver& observer) override {
    // Aggregated plans only: the server then sweeps disaggregated plans, as
    // for a searcher that cannot search them.
    if (options.disaggregated) {
      return absl::UnimplementedError("the fake searches aggregated plans");
    }
    {
      absl::MutexLock lock(&script_.mu);
      ++script_.searches_started;
      script_.warm_sources.push_back(
          options.warm_start != nullptr ? options.warm_start->source : "");
      script_.warm_plan_counts.push_back(
          options.warm_start != nullptr
              ? static_cast<int>(options.warm_start->elite_plans.size())
              : 0);
    }
    policy::SearchResult result;
    result.baseline.plan = simulator::MegatronPlan(model);
    result.baseline.evaluation = model.Evaluate(result.baseline.plan);
    result.best = result.baseline;
    const double base_tps = result.baseline.evaluation.output_tokens_per_s;
    for (int i = 1; i <= script_.improvements; ++i) {
      policy::ScoredPlan scored = result.baseline;
      scored.plan.batch_size = i;  // distinct plans
      scored.evaluation.feasible = true;
      scored.evaluation.output_tokens_per_s = base_tps * (1.0 + 0.1 * i);
      scored.reward = std::log(1.0 + 0.1 * i);
      result.best = scored;
      result.elite.insert(result.elite.begin(), scored);
      if (static_cast<int>(result.elite.size()) > options.elite_size)
        result.elite.pop_back();
      policy::Improvement improvement;
      improvement.best = scored;
      improvement.evaluations = i * 10;
      improvement.speedup_vs_baseline = 1.0 + 0.1 * i;
      observer.OnImprovement(improvement);
      policy::SearchProgress progress;
      progress.evaluations_delta = 10;
      progress.iterations_delta = 1;
      progress.evaluations = i * 10;
      progress.best_speedup = 1.0 + 0.1 * i;
      observer.OnProgress(progress);
    }
    if (script_.finished_improvements != nullptr)
      script_.finished_improvements->Notify();
    if (script_.block_until_cancelled) {
      while (!cancel.WaitForCancellation(absl::Milliseconds(50))) {
      }
    }
    result.evaluations = script_.improvements * 10;
    result.iterations = script_.improvements;
    result.stop_reason = policy::StopReason::kBudget;
    result.space_size = 1234;
    result.warm_started = options.warm_start != nullptr;
    if (cancel.cancelled()) {
      absl::MutexLock lock(&script_.mu);
      ++script_.searches_cancelled;
      // As every searcher: a cancelled search returns what it found.
      result.stop_reason = policy::StopReason::kCancelled;
      return result;
    }
    if (script_.fail_internal) return absl::InternalError("fake failure");
    return result;
  }

 private:
  FakeScript& script_;
};

// `n` distinct valid plans for 8 GPUs, rewards descending from `top_reward`,
// each with its own prediction JSON (so store round trips are checked per
// plan).
inline std::vector<StoredPlan> Plans(int n, double top_reward = 1.0) {
  const int tps[] = {1, 2, 4, 8};
  std::vector<StoredPlan> plans;
  for (int i = 0; i < n; ++i) {
    StoredPlan stored;
    stored.plan.tp = tps[i % 4];
    stored.plan.dp = 8 / stored.plan.tp;
    stored.plan.batch_size = 16 * (1 + i / 4);
    stored.plan.micro_batches = 1;  // explicit, as the store writes it back
    stored.reward = top_reward - 0.1 * i;
    stored.output_tokens_per_s = 1000.0 - i;
    stored.prediction_json = absl::StrCat("{\"feasible\":true,\"i\":", i, "}");
    plans.push_back(stored);
  }
  return plans;
}

// MAX(version) of the schema_version table of the SQLite store at `path`; -1
// when it cannot be read.
inline int SqliteSchemaVersion(const std::string& path) {
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_stmt* stmt = nullptr;
  int version = -1;
  if (sqlite3_prepare_v2(db, "SELECT MAX(version) FROM schema_version", -1,
                         &stmt, nullptr) == SQLITE_OK &&
      sqlite3_step(stmt) == SQLITE_ROW) {
    version = sqlite3_column_int(stmt, 0);
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return version;
}

}  // namespace shardplan::server::testing

#endif  // SHARDPLAN_TESTS_SERVER_TEST_UTIL_H_
