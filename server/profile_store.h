// Calibration profiles fitted from users' measurements: the Calibrate RPC's
// work (validate the runs, fit on two thirds, measure on the rest, store) and
// the profiles requests name in workload.calibration_profile.
//
// Profiles live in the server's store (EliteStore::SaveProfile, SQLite or
// PostgreSQL), so they survive restarts and every replica on a shared
// PostgreSQL store sees them: the profiles are read at startup and re-read
// every `refresh_interval` on this object's own thread. Fits and store I/O run
// on that thread too, never on a gRPC thread; lookups (Find) only read the
// in-memory copy. Without a store, profiles last until the server stops.
#ifndef SHARDPLAN_SERVER_PROFILE_STORE_H_
#define SHARDPLAN_SERVER_PROFILE_STORE_H_

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/elite_store.h"
#include "server/validation.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/calibration_harness.h"

namespace shardplan::server {

// The runs of a CalibrateRequest as calibration rows, after validating the
// request: INVALID_ARGUMENT naming the field path (runs[i].tpot_ms) and the
// run's source ("results.json:1").
absl::StatusOr<std::vector<simulator::MeasuredRow>> RowsOfCalibrateRequest(
    const shardplan::v1::CalibrateRequest& request);

class CalibrationProfileStore : public UserProfiles {
 public:
  // `store` may be null (profiles kept in memory only). Reads the stored
  // profiles (a failure is logged; they are read again on the next refresh)
  // and starts the thread.
  CalibrationProfileStore(std::shared_ptr<EliteStore> store,
                          absl::Duration refresh_interval = absl::Seconds(2));
  // Stops the thread after the queued calibrations; their callbacks run.
  ~CalibrationProfileStore() override;
  CalibrationProfileStore(const CalibrationProfileStore&) = delete;
  CalibrationProfileStore& operator=(const CalibrationProfileStore&) = delete;

  // Validates, fits and stores: the whole RPC, on the calling thread.
  // INVALID_ARGUMENT for bad runs or names; UNAVAILABLE/INTERNAL when the
  // store fails (nothing is kept then).
  absl::StatusOr<shardplan::v1::CalibrateResponse> Calibrate(
      const shardplan::v1::CalibrateRequest& request);

  // Queues Calibrate on this object's thread; `done` runs there with its
  // result. RESOURCE_EXHAUSTED (and `done` is not called) when
  // kMaxQueued calibrations are waiting.
  static constexpr int kMaxQueued = 4;
  using Done =
      std::function<void(absl::StatusOr<shardplan::v1::CalibrateResponse>)>;
  absl::Status Submit(shardplan::v1::CalibrateRequest request, Done done);

  // UserProfiles: the in-memory copy; never blocks on the store.
  std::optional<simulator::CalibrationProfile> Find(
      const std::string& name) const override;
  std::vector<std::string> Names() const override;

  // Re-reads the store now (tests; the thread does it periodically).
  absl::Status Refresh();

 private:
  void Run();

  const std::shared_ptr<EliteStore> store_;
  const absl::Duration refresh_interval_;
  mutable absl::Mutex mu_;
  std::map<std::string, simulator::CalibrationProfile> profiles_
      ABSL_GUARDED_BY(mu_);
  struct Job {
    shardplan::v1::CalibrateRequest request;
    Done done;
  };
  std::deque<Job> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace shardplan::server

#endif  // SHARDPLAN_SERVER_PROFILE_STORE_H_
