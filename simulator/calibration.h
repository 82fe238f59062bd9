// The cost model's built-in calibration: the named calibration profiles (one
// per serving engine; the default is one of them) and the error bars (p10-p90
// bands of measured/predicted on held-out rows, per regime) that predictions
// carry. Used per request; the harness that produces these constants (measured
// rows, accuracy report, fit) is simulator/calibration_harness.h.
#ifndef SHARDPLAN_SIMULATOR_CALIBRATION_H_
#define SHARDPLAN_SIMULATOR_CALIBRATION_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "simulator/calibration_parameters.h"
#include "simulator/types.h"

namespace shardplan::simulator {

// --- Profiles ---

struct CalibrationProfile {
  std::string name;    // "h100-trtllm", "h100-sglang", "h100-vllm"
  std::string engine;  // the CSV's backend column: "trtllm", "sglang", "vllm"
  Calibration calibration;
};

// All profiles; the first is the default (DefaultCalibration()).
const std::vector<CalibrationProfile>& CalibrationProfiles();
const CalibrationProfile& DefaultCalibrationProfile();
// What a request that names no engine (and no profile) is predicted with:
// DefaultCalibration() (TensorRT-LLM's fitted constants with the
// engine-agnostic disaggregated request overhead) under its own name, with
// error bars from every engine's held-out rows (band engine
// kEngineAgnosticBandEngine). Its engine is "".
inline constexpr char kEngineAgnosticProfileName[] = "h100-engine-agnostic";
const CalibrationProfile& EngineAgnosticCalibrationProfile();
// Every built-in profile name a request may give: the engines' profiles, then
// the engine-agnostic one (what "known: ..." messages list).
std::vector<std::string> BuiltInProfileNames();
// By profile name or engine name. NOT_FOUND listing the known names.
absl::StatusOr<CalibrationProfile> FindCalibrationProfile(
    absl::string_view name);

// Every constant of `c` finite and inside a range wider than the fit
// searches: a value outside it is damage, not a measurement, and would give
// "feasible" plans of 0 tok/s or NaN latencies. INVALID_ARGUMENT naming the
// field (as CalibrationParameters spells it) and the value.
absl::Status CheckCalibrationRanges(const Calibration& c);

// `c` with the behaviour of `engine`'s built-in profile (KV-cache admission,
// preemption, the pipeline host term and the disaggregated overheads fitted on
// that engine's rows): what
// a measured run's engine does, not what a fit of efficiency parameters
// learns. A profile fitted from user runs or read back from its proto form
// (which holds only the fitted parameters) gets it here. `c` unchanged for an
// engine without a built-in profile.
Calibration WithEngineBehaviour(Calibration c, absl::string_view engine);

// --- Error bars ---
//
// How far measurements fall from predictions: per regime, the p10 and p90 of
// measured / predicted TTFT and TPOT over the held-out rows (never fitted).
// The compiled-in table (CompiledErrorBands) is the output of
// ComputeErrorBands (simulator/calibration_harness.h) on the calibration CSVs;
// calibration_test recomputes it so they cannot drift.

// One regime's band. `engine` and `dtype` are "*" for a band pooled over
// engines / weight dtypes (each row predicted with its engine's profile);
// engine kEngineAgnosticBandEngine is every engine's rows predicted with the
// engine-agnostic profile (what a request that names no engine gets).
inline constexpr char kEngineAgnosticBandEngine[] = "any";
struct ErrorBand {
  std::string engine;  // the profile's engine ("trtllm", "sglang", "vllm")
  bool moe = false;
  std::string dtype;  // weight dtype ("bf16", "fp8", "fp4")
  int rows = 0;       // held-out rows behind the band
  double ttft_low = 1;
  double ttft_high = 1;
  double tpot_low = 1;
  double tpot_high = 1;
};

// Fewest held-out rows a band is computed from: below it the p10/p90 of the
// ratios rest on one or two rows each (a lookup falls back to a pooled band).
inline constexpr int kMinBandRows = 15;

// The table shipped with this build (printed by `shardplan-calibrate
// --bands`).
const std::vector<ErrorBand>& CompiledErrorBands();

// The hardware every built-in profile is fitted on. A prediction on other
// hardware carries the cross-hardware bands below.
inline constexpr char kProfileFitHardware[] = "h100-sxm-80gb";

// Bands measured across hardware: the central 80% of |log measured /
// predicted| of the built-in (H100-fitted) profiles on the B200 rows and of
// profiles fitted on the B200 rows only on the H100 rows, pooled
// (ComputeTransferBands in simulator/calibration_transfer.h; `shardplan-
// calibrate --transfer-csv ... --bands`; calibration_transfer_test recomputes
// it and checks each direction's bands on the other direction's rows).
const std::vector<ErrorBand>& CompiledTransferBands();

// The band a prediction gets: multipliers of the predicted TTFT and TPOT
// (throughput follows from TPOT) and the notes that say what it rests on.
struct PredictionBand {
  double ttft_low = 1;
  double ttft_high = 1;
  double tpot_low = 1;
  double tpot_high = 1;
  std::vector<std::string> notes;
};

// The regime of a prediction.
struct BandRegime {
  std::string profile;  // calibration profile name; "" = the default profile
  bool engine_given = true;  // false: engine-agnostic request
  bool moe = false;
  Dtype weight_dtype = Dtype::kBf16;
  int pipeline_stages = 1;
  int replica_nodes = 1;  // nodes one replica spans
  bool expert_domain_spans_nodes = false;
  // The prediction's hardware is not the one its profile was fitted on
  // (kProfileFitHardware): the band comes from the cross-hardware table.
  bool across_hardware = false;
  std::string hardware;  // for the note
};

// Looks the regime's band up in `bands` (`transfer_bands` when the regime is
// across hardware, with a note): (engine, moe, dtype), else (engine, moe, any
// dtype), else (any engine, moe) with a note. Regimes without
// measured rows (pp > 1, a replica over several nodes) widen the band: each
// unvalidated term is taken to be as uncertain as the validated model and
// independent of it, so the log-width grows by sqrt(1 + terms). A band
// borrowed from a parent cell counts each level passed over (the dtype, the
// engine) as one such term: its rows measure other regimes. The band is
// finally extended to contain 1 (the prediction itself). Cost: a scan of the
// table and a few strings; never called by Evaluate.
PredictionBand FindPredictionBand(
    const BandRegime& regime,
    const std::vector<ErrorBand>& bands = CompiledErrorBands(),
    const std::vector<ErrorBand>& transfer_bands = CompiledTransferBands());

// The regime of an evaluated plan: the problem's profile, model kind and
// weight dtype, the plan's stages and placement.
BandRegime RegimeOf(const Evaluation& evaluation, const Problem& problem);

// The low end of the plan's throughput range (what
// Prediction.output_tokens_per_s_range.low says): the expected throughput
// divided by the high end of its TPOT band. 0 when infeasible. Cost: one
// FindPredictionBand (not for the cost model's hot path).
double ConservativeOutputTokensPerS(const Evaluation& evaluation,
                                    const Problem& problem);

}  // namespace shardplan::simulator

#endif  // SHARDPLAN_SIMULATOR_CALIBRATION_H_
