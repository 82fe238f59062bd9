// Measured vLLM runs of Llama-3.1-70B (FP8) on H100 SXM, one engine instance
// of tp GPUs, as a Calibrate request: the tests of the Calibrate RPC in-process
// (tests/server/calibrate_test.cc) and against the server binary
// (tests/e2e/hardening_e2e_test.cc) fit profiles to them.
#ifndef SHARDPLAN_TESTS_COMMON_MEASURED_RUNS_H_
#define SHARDPLAN_TESTS_COMMON_MEASURED_RUNS_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "shardplan/v1/shardplan.pb.h"

namespace shardplan::testing_runs {

struct MeasuredRunRow {
  int isl, osl, concurrency, tp;
  double ttft_ms, tpot_ms;
};

// The first rows of simulator/calibration/data/h100_validation_latency.csv
// (AIConfigurator silicon_sample.csv,
// https://github.com/ai-dynamo/aiconfigurator, Apache-2.0), minus one run at
// concurrency 64 on 2 GPUs whose TTFT (31 s) measures the engine's queue.
constexpr MeasuredRunRow kLlama70bH100Runs[] = {
    {1024, 1024, 16, 4, 121.41327284043655, 13.192185948816437},
    {1024, 8192, 4, 4, 85.90665296651423, 11.995474820029195},
    {1024, 8192, 16, 4, 127.9143214924261, 14.094837221545944},
    {1024, 8192, 32, 4, 171.7333970038453, 18.385865163938522},
    {1024, 8192, 16, 8, 93.18378494353965, 11.583957083446606},
    {1024, 8192, 4, 2, 124.01656934525818, 17.971309306706264},
    {8192, 1024, 8, 4, 582.9275265336037, 15.766184796596576},
    {1024, 8192, 64, 8, 176.19665098318364, 16.48915841245971},
};

// A CalibrateRequest named `name` with the first `rows` of kLlama70bH100Runs,
// `copies` times over; run i's source is "<file>:<i + 2>" (the CSV line of a
// file with a header).
inline shardplan::v1::CalibrateRequest MeasuredCalibrateRequest(
    const std::string& name, absl::string_view file, int rows, int copies = 1) {
  shardplan::v1::CalibrateRequest request;
  request.set_name(name);
  int line = 2;
  for (int copy = 0; copy < copies; ++copy) {
    for (int i = 0; i < rows; ++i) {
      const MeasuredRunRow& r = kLlama70bH100Runs[i];
      shardplan::v1::MeasuredRun* run = request.add_runs();
      run->set_source(absl::StrCat(file, ":", line++));
      run->set_engine("vllm");
      run->set_model("meta-llama/Llama-3.1-70B");
      run->set_weight_dtype("fp8");
      run->set_input_tokens(r.isl);
      run->set_output_tokens(r.osl);
      run->set_concurrency(r.concurrency);
      run->set_tp(r.tp);
      run->set_ttft_ms(r.ttft_ms);
      run->set_tpot_ms(r.tpot_ms);
    }
  }
  return request;
}

}  // namespace shardplan::testing_runs

#endif  // SHARDPLAN_TESTS_COMMON_MEASURED_RUNS_H_
