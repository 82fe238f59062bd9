#include "server/store/profile_store.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "glog/logging.h"
#include "proto/limits.h"
#include "proto/spec_text.h"
#include "proto/status_macros.h"
#include "simulator/calibration_transfer.h"
#include "simulator/cost_model.h"
#include "simulator/spec.h"
#include "simulator/user_text.h"

namespace shardplan::server {
namespace {

using shardplan::v1::CalibrateRequest;
using shardplan::v1::CalibrateResponse;
using shardplan::v1::MeasuredRun;

using limits::kMaxCalibrateRuns;
using limits::kMinCalibrateRuns;
// Characters of a run's `source` kept in its id (and so in the stored report).
constexpr size_t kMaxSourceChars = 120;

absl::Status CheckName(const std::string& name) {
  if (name.empty() || name.size() > 64) {
    return absl::InvalidArgumentError(absl::StrCat(
        "name must be 1-64 characters, got ", name.size(), " characters"));
  }
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' &&
        c != '_' && c != '-') {
      return absl::InvalidArgumentError(
          absl::StrFormat("name must use only [A-Za-z0-9._-], got %s",
                          simulator::QuoteUserText(name)));
    }
  }
  // Engine names too: FindCalibrationProfile accepts them as profile names.
  std::vector<std::string> taken = simulator::BuiltInProfileNames();
  for (const simulator::CalibrationProfile& p :
       simulator::CalibrationProfiles()) {
    taken.push_back(p.engine);
  }
  if (std::find(taken.begin(), taken.end(), name) != taken.end()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "name %s is a built-in calibration profile; choose another",
        simulator::QuoteUserText(name)));
  }
  return absl::OkStatus();
}

// "runs[3] (results.json:4): " for messages.
std::string RunPath(int i, const MeasuredRun& run) {
  return run.source().empty()
             ? absl::StrCat("runs[", i, "]")
             : absl::StrFormat("runs[%d] (%s)", i,
                               simulator::QuoteUserText(run.source()));
}

absl::StatusOr<int> Degree(int value, const std::string& path,
                           const char* field) {
  if (value < 0 || value > 1024) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s.%s must be in [0, 1024] (0 = 1), got %d", path, field, value));
  }
  return std::max(1, value);
}

absl::StatusOr<simulator::MeasuredRow> RowOfRun(int i, const MeasuredRun& run) {
  const std::string path = RunPath(i, run);
  simulator::MeasuredRow row;
  // The id ends up in the stored report: a bounded prefix of the source, so
  // that megabytes of `source` are neither stored nor echoed.
  row.id =
      run.source().empty()
          ? absl::StrCat("runs[", i, "]")
          : absl::StrCat(
                "runs[", i, "] ",
                simulator::EscapeForLog(
                    absl::string_view(run.source()).substr(0, kMaxSourceChars)),
                run.source().size() > kMaxSourceChars ? "..." : "");
  if (run.engine() != "vllm" && run.engine() != "sglang" &&
      run.engine() != "trtllm") {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s.engine must be one of vllm, sglang, trtllm, got %s",
                        path, simulator::QuoteUserText(run.engine())));
  }
  row.engine = run.engine();
  row.engine_version = run.engine_version();
  if (!run.hardware().empty()) {
    absl::StatusOr<std::string> hardware =
        simulator::CatalogHardwareOfRun(run.hardware());
    if (!hardware.ok()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s.hardware must be a catalog hardware name or an AIConfigurator "
          "system name, got %s",
          path, simulator::QuoteUserText(run.hardware())));
    }
    row.hardware = *std::move(hardware);
  }
  absl::StatusOr<std::string> catalog =
      simulator::CatalogModelOfRun(run.model());
  if (!catalog.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".model: ", catalog.status().message()));
  }
  row.model_path = run.model();
  row.catalog_model = *catalog;
  const std::string& dtype = run.weight_dtype();
  if (dtype != "" && dtype != "bf16" && dtype != "fp8" && dtype != "fp4") {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s.weight_dtype must be bf16, fp8 or fp4, got %s",
                        path, simulator::QuoteUserText(dtype)));
  }
  row.fp8 = dtype == "fp8";
  row.fp4 = dtype == "fp4";
  const std::pair<int, const char*> counts[] = {
      {run.input_tokens(), "input_tokens"},
      {run.output_tokens(), "output_tokens"},
      {run.concurrency(), "concurrency"}};
  for (const auto& [value, field] : counts) {
    if (value < 1 || value > limits::kMaxTokens) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s.%s must be in [1, %d], got %d", path, field,
                          limits::kMaxTokens, value));
    }
  }
  // Per attention dp rank: each rank queues past the limit.
  const int ranks = std::max(1, run.dp());
  if ((run.concurrency() + ranks - 1) / ranks > limits::kMaxFitConcurrency) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s.concurrency must be at most %d per dp rank (above it the engine "
        "queues requests and the run measures its queue), got %d over %d",
        path, limits::kMaxFitConcurrency, run.concurrency(), ranks));
  }
  row.isl = run.input_tokens();
  row.osl = run.output_tokens();
  row.concurrency = run.concurrency();
  ASSIGN_OR_RETURN(row.tp, Degree(run.tp(), path, "tp"));
  ASSIGN_OR_RETURN(row.pp, Degree(run.pp(), path, "pp"));
  ASSIGN_OR_RETURN(row.attention_dp, Degree(run.dp(), path, "dp"));
  ASSIGN_OR_RETURN(row.moe_ep, Degree(run.ep(), path, "ep"));
  const std::pair<double, const char*> times[] = {{run.ttft_ms(), "ttft_ms"},
                                                  {run.tpot_ms(), "tpot_ms"}};
  for (const auto& [value, field] : times) {
    if (!(value > 0) || !std::isfinite(value) || value > 1e7) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s.%s must be a positive number of milliseconds, got %g", path,
          field, value));
    }
  }
  row.ttft_seconds = run.ttft_ms() / 1e3;
  row.tpot_seconds = run.tpot_ms() / 1e3;
  // The plan checks the fit runs on every row, here, so that the error names
  // the run and its source rather than a CSV line the request never had.
  absl::Status fits = simulator::RowProblem(row).status();
  if (fits.ok()) {
    absl::StatusOr<simulator::CalibrationProfile> base =
        simulator::FindCalibrationProfile(row.engine);
    if (!base.ok()) return base.status();
    absl::StatusOr<std::unique_ptr<const simulator::CostModel>> model =
        simulator::CostModel::Create(*simulator::RowProblem(row),
                                     base->calibration);
    fits = model.ok() ? (*model)->ValidatePlan(simulator::RowPlan(row))
                      : model.status();
  }
  if (!fits.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": the layout does not fit the model: ", fits.message()));
  }
  return row;
}

std::string ProfileJson(const simulator::CalibrationProfile& profile) {
  return spec_text::ToJson(simulator::CalibrationToProto(profile.calibration),
                           /*pretty=*/false);
}

}  // namespace

absl::Status CheckCalibrationParameters(
    const shardplan::v1::CalibrationParameters& p) {
  return simulator::CheckCalibrationRanges(simulator::CalibrationFromProto(p));
}

absl::StatusOr<simulator::CalibrationProfile> ProfileFromStored(
    const StoredProfile& stored) {
  const std::string name = simulator::QuoteUserText(stored.name);
  shardplan::v1::CalibrationParameters parameters;
  absl::Status parsed = spec_text::Parse(stored.profile_json, &parameters);
  if (parsed.ok()) parsed = CheckCalibrationParameters(parameters);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "stored calibration profile ", name, ": ", parsed.message()));
  }
  // The proto form holds the fitted parameters; the engine's behaviour (KV
  // admission, preemption) comes from the engine the runs were measured on.
  return simulator::CalibrationProfile{
      stored.name, stored.engine,
      simulator::WithEngineBehaviour(
          simulator::CalibrationFromProto(parameters), stored.engine)};
}

absl::StatusOr<std::vector<simulator::MeasuredRow>> RowsOfCalibrateRequest(
    const CalibrateRequest& request) {
  RETURN_IF_ERROR(CheckName(request.name()));
  if (request.runs_size() < kMinCalibrateRuns ||
      request.runs_size() > kMaxCalibrateRuns) {
    return absl::InvalidArgumentError(absl::StrCat(
        "runs must hold ", kMinCalibrateRuns, " to ", kMaxCalibrateRuns,
        " measured runs (a third is held out to measure the fit), got ",
        request.runs_size()));
  }
  std::vector<simulator::MeasuredRow> rows;
  for (int i = 0; i < request.runs_size(); ++i) {
    ASSIGN_OR_RETURN(simulator::MeasuredRow row, RowOfRun(i, request.runs(i)));
    if (!rows.empty() && row.engine != rows.front().engine) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s.engine is %s but runs[0].engine is %s: a profile is for one "
          "engine",
          RunPath(i, request.runs(i)), row.engine, rows.front().engine));
    }
    rows.push_back(std::move(row));
  }
  simulator::SplitUserRows(rows);
  return rows;
}

CalibrationProfileStore::CalibrationProfileStore(
    std::shared_ptr<EliteStore> store, absl::Duration refresh_interval)
    : store_(std::move(store)), refresh_interval_(refresh_interval) {
  absl::Status loaded = Refresh();
  if (!loaded.ok()) {
    LOG(WARNING) << "calibration profiles: could not read the store yet: "
                 << loaded;
  }
  thread_ = std::thread([this] { Run(); });
}

CalibrationProfileStore::~CalibrationProfileStore() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

absl::Status CalibrationProfileStore::Refresh() {
  if (store_ == nullptr) return absl::OkStatus();
  // Every profile row only when one was added or replaced since the last read.
  ASSIGN_OR_RETURN(std::string stamp, store_->ProfilesStamp());
  {
    absl::MutexLock lock(&mu_);
    if (stamp == loaded_stamp_) return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(std::vector<StoredProfile> stored, store_->LoadProfiles());
  std::map<std::string, simulator::CalibrationProfile> loaded;
  for (const StoredProfile& s : stored) {
    absl::StatusOr<simulator::CalibrationProfile> profile =
        ProfileFromStored(s);
    if (!profile.ok()) {
      LOG(WARNING) << "calibration profile " << simulator::EscapeForLog(s.name)
                   << " is unreadable, skipped: " << profile.status();
      continue;
    }
    loaded[s.name] = *std::move(profile);
  }
  absl::MutexLock lock(&mu_);
  loaded_stamp_ = stamp;
  // Profiles made here but not (yet) in the store stay (store writes that
  // failed are reported to the caller and never reach profiles_).
  for (auto& [name, profile] : loaded) profiles_[name] = std::move(profile);
  return absl::OkStatus();
}

absl::StatusOr<CalibrationProfileStore::Fitted> CalibrationProfileStore::Fit(
    const CalibrateRequest& request) {
  ASSIGN_OR_RETURN(std::vector<simulator::MeasuredRow> rows,
                   RowsOfCalibrateRequest(request));
  // The fit starts from the built-in profile of the runs' engine.
  ASSIGN_OR_RETURN(simulator::CalibrationProfile base,
                   simulator::FindCalibrationProfile(rows.front().engine));
  absl::StatusOr<simulator::ProfileFit> fit =
      simulator::FitProfile(request.name(), rows, base);
  if (!fit.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("calibration: ", fit.status().message()));
  }
  Fitted out;
  CalibrateResponse& response = out.response;
  response.set_name(request.name());
  response.set_engine(fit->profile.engine);
  response.set_base_profile(base.name);
  response.set_fit_runs(fit->fit_rows);
  response.set_held_out_runs(fit->held_out_rows);
  response.set_held_out_tpot_mape_before(fit->tpot_mape_before);
  response.set_held_out_tpot_mape_after(fit->tpot_mape_after);
  response.set_held_out_ttft_mape_before(fit->ttft_mape_before);
  response.set_held_out_ttft_mape_after(fit->ttft_mape_after);
  *response.mutable_parameters() =
      simulator::CalibrationToProto(fit->profile.calibration);
  response.set_report(fit->report);
  absl::Status usable = CheckCalibrationParameters(response.parameters());
  if (!usable.ok()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "calibration: the fit of %s is unusable, not stored: %s",
        simulator::QuoteUserText(request.name()), usable.message()));
  }
  out.profile = fit->profile;
  return out;
}

absl::StatusOr<CalibrateResponse> CalibrationProfileStore::Save(Fitted fitted) {
  const std::string& name = fitted.response.name();
  if (store_ != nullptr) {
    RETURN_IF_ERROR(store_->SaveProfile(
        {name, fitted.profile.engine, ProfileJson(fitted.profile),
         fitted.response.report(), absl::ToUnixMillis(absl::Now())}));
  }
  absl::MutexLock lock(&mu_);
  profiles_[name] = std::move(fitted.profile);
  return std::move(fitted.response);
}

absl::StatusOr<CalibrateResponse> CalibrationProfileStore::Calibrate(
    const CalibrateRequest& request) {
  ASSIGN_OR_RETURN(Fitted fitted, Fit(request));
  return Save(std::move(fitted));
}

void CalibrationProfileStore::Drain(absl::Time deadline) {
  std::deque<Job> queued;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    queued.swap(queue_);
  }
  for (Job& job : queued) {
    job.done(absl::UnavailableError(absl::StrFormat(
        "the server is shutting down: calibration %s was not run and nothing "
        "was stored; send it again",
        simulator::QuoteUserText(job.request.name()))));
  }
  Done dropped;
  std::string dropped_name;
  {
    absl::MutexLock lock(&mu_);
    auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return phase_ == Phase::kIdle;
    };
    mu_.AwaitWithDeadline(absl::Condition(&idle), deadline);
    if (phase_ == Phase::kFitting) {
      // Run sees running_done_ taken and stores nothing.
      dropped = std::move(running_done_);
      running_done_ = nullptr;
      dropped_name = running_name_;
    } else {
      // A write in progress: its outcome is what the client must hear.
      mu_.Await(absl::Condition(&idle));
    }
  }
  if (dropped) {
    dropped(absl::UnavailableError(absl::StrFormat(
        "the server is shutting down: the fit of calibration %s did not end "
        "within --shutdown_grace_seconds and nothing was stored; send it "
        "again",
        simulator::QuoteUserText(dropped_name))));
  }
}

absl::Status CalibrationProfileStore::Submit(CalibrateRequest request,
                                             Done done) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return absl::UnavailableError("server is shutting down");
  if (static_cast<int>(queue_.size()) >= kMaxQueued) {
    return absl::ResourceExhaustedError(absl::StrCat(
        kMaxQueued, " calibrations are already queued; retry later"));
  }
  queue_.push_back({std::move(request), std::move(done)});
  return absl::OkStatus();
}

void CalibrationProfileStore::Run() {
  absl::Time next_refresh = absl::Now() + refresh_interval_;
  while (true) {
    std::optional<Job> job;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !queue_.empty();
      };
      mu_.AwaitWithDeadline(absl::Condition(&ready), next_refresh);
      if (!queue_.empty()) {
        job = std::move(queue_.front());
        queue_.pop_front();
      } else if (stopping_) {
        return;
      }
    }
    if (job.has_value()) {
      {
        absl::MutexLock lock(&mu_);
        phase_ = Phase::kFitting;
        running_done_ = std::move(job->done);
        running_name_ = job->request.name();
      }
      absl::StatusOr<Fitted> fitted = Fit(job->request);
      Done done;
      {
        absl::MutexLock lock(&mu_);
        done = std::move(running_done_);
        running_done_ = nullptr;
        // Without a callback Drain has answered for this fit: store nothing.
        phase_ = done ? Phase::kSaving : Phase::kIdle;
      }
      if (done) {
        absl::StatusOr<CalibrateResponse> result =
            fitted.ok() ? Save(*std::move(fitted))
                        : absl::StatusOr<CalibrateResponse>(fitted.status());
        done(std::move(result));
        absl::MutexLock lock(&mu_);
        phase_ = Phase::kIdle;
      }
      continue;
    }
    if (absl::Now() >= next_refresh) {
      absl::Status refreshed = Refresh();
      if (!refreshed.ok()) {
        VLOG(1) << "calibration profiles: refresh failed: " << refreshed;
      }
      next_refresh = absl::Now() + refresh_interval_;
    }
  }
}

bool CalibrationProfileStore::fitting() const {
  absl::MutexLock lock(&mu_);
  return phase_ == Phase::kFitting;
}

std::optional<simulator::CalibrationProfile> CalibrationProfileStore::Find(
    const std::string& name) const {
  absl::MutexLock lock(&mu_);
  auto it = profiles_.find(name);
  if (it == profiles_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> CalibrationProfileStore::Names() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> names;
  for (const auto& [name, profile] : profiles_) names.push_back(name);
  return names;
}

}  // namespace shardplan::server
