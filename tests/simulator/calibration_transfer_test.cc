// Transfer across GPU generations, both directions of the
// leave-one-hardware-out check: AIConfigurator's B200 and GB200 rows
// predicted on their own hardware with the compiled-in profiles (fitted on
// H100 rows only), and the H100 rows predicted with profiles fitted on the
// B200 rows only. The figures are the ones docs/cost-model-and-calibration.md
// reports; a group or a hardware total that gets more than 2 points worse
// fails. The cross-hardware bands are recomputed and their coverage checked
// on the direction they were not computed from.
#include "simulator/calibration_transfer.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "simulator/calibration.h"

namespace shardplan::simulator {
namespace {

std::string DataFile(const std::string& name) {
  std::ifstream in(std::string(SHARDPLAN_SOURCE_DIR) +
                   "/simulator/calibration/data/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(CalibrationTransferTest, HeldOutHardwareIsRefused) {
  for (const char* system : {"h200_sxm", "b300_sxm", "gb300"}) {
    absl::StatusOr<std::string> hardware = CatalogHardwareOfRun(system);
    ASSERT_TRUE(hardware.ok()) << hardware.status();
    EXPECT_TRUE(IsHeldOutHardware(*hardware)) << system;
  }
  EXPECT_EQ(*CatalogHardwareOfRun("b200_sxm"), "b200-sxm-180gb");
  EXPECT_EQ(*CatalogHardwareOfRun("gb200"), "gb200-nvl72");
  EXPECT_EQ(*CatalogHardwareOfRun("gb200-nvl72"), "gb200-nvl72");
  EXPECT_FALSE(IsHeldOutHardware("b200-sxm-180gb"));
  EXPECT_TRUE(absl::IsNotFound(CatalogHardwareOfRun("a100").status()));

  // The same rows relabelled as H200 are never read.
  const std::string text = DataFile("h100_validation_latency.csv");
  ASSERT_FALSE(text.empty());
  absl::StatusOr<ParsedMeasurements> h100 = ParseMeasurements(text, true);
  ASSERT_TRUE(h100.ok()) << h100.status();
  ASSERT_EQ(h100->rows.size(), 45u);
  for (const MeasuredRow& r : h100->rows)
    EXPECT_EQ(r.hardware, "h100-sxm-80gb");
  absl::StatusOr<ParsedMeasurements> h200 = ParseMeasurements(
      absl::StrReplaceAll(text, {{",h100_sxm,", ",h200_sxm,"}}), true);
  ASSERT_TRUE(h200.ok()) << h200.status();
  EXPECT_TRUE(h200->rows.empty());
  EXPECT_EQ(h200->skipped_held_out_hardware, 45);
}

// Documented out-of-sample figures (percent): hardware, engine, model,
// weights ("*" for a hardware total), rows, infeasible rows (layouts the plan
// rules refuse: DeepSeek's 128 heads over tp 28 on GB200), TPOT MAPE, TTFT
// MAPE.
struct Documented {
  const char* hardware;
  const char* engine;
  const char* model;
  const char* dtype;
  int rows;
  int infeasible;
  double tpot_mape;
  double ttft_mape;
};
constexpr double kRegressionPoints = 2.0;

// Fit H100 -> test B200/GB200 (the compiled-in profiles).
constexpr Documented kH100ToBlackwell[] = {
    {"b200-sxm-180gb", "sglang", "deepseek-v3", "fp4", 51, 0, 40.8, 73.8},
    {"b200-sxm-180gb", "sglang", "deepseek-v3", "fp8", 52, 4, 27.1, 97.0},
    {"b200-sxm-180gb", "trtllm", "deepseek-v3", "fp4", 73, 0, 39.9, 42.5},
    {"b200-sxm-180gb", "trtllm", "deepseek-v3", "fp8", 71, 5, 42.4, 25.7},
    {"b200-sxm-180gb", "trtllm", "gpt-oss-120b", "fp4", 82, 0, 13.7, 103.9},
    {"b200-sxm-180gb", "trtllm", "llama-3.1-70b", "fp4", 72, 0, 10.8, 64.1},
    {"b200-sxm-180gb", "trtllm", "llama-3.1-70b", "fp8", 72, 0, 10.9, 63.0},
    {"b200-sxm-180gb", "vllm", "gpt-oss-120b", "fp4", 66, 0, 10.5, 13.2},
    {"b200-sxm-180gb", "vllm", "llama-3.1-70b", "fp4", 60, 0, 9.6, 43.1},
    {"b200-sxm-180gb", "vllm", "llama-3.1-70b", "fp8", 60, 0, 8.3, 69.1},
    {"gb200-nvl72", "sglang", "deepseek-v3", "fp8", 2, 2, 0.0, 0.0},
    {"gb200-nvl72", "trtllm", "deepseek-v3", "fp4", 18, 17, 64.7, 99.3},
    {"gb200-nvl72", "trtllm", "qwen3-32b", "bf16", 15, 0, 67.3, 48.7},
    {"gb200-nvl72", "trtllm", "qwen3-32b", "fp4", 2, 0, 46.0, 96.6},
    {"b200-sxm-180gb", "*", "*", "*", 659, 9, 20.8, 59.2},
    {"gb200-nvl72", "*", "*", "*", 37, 19, 64.8, 56.8},
    {"b200-sxm-180gb", "*", "attention dp > 1", "*", 20, 0, 58.4, 62.2},
};

// Fit B200 -> test H100 and GB200 (FitOnHardware on the B200 rows).
constexpr Documented kB200ToOthers[] = {
    {"gb200-nvl72", "sglang", "deepseek-v3", "fp8", 2, 2, 0.0, 0.0},
    {"gb200-nvl72", "trtllm", "deepseek-v3", "fp4", 18, 17, 67.0, 99.5},
    {"gb200-nvl72", "trtllm", "qwen3-32b", "bf16", 15, 0, 68.0, 68.5},
    {"gb200-nvl72", "trtllm", "qwen3-32b", "fp4", 2, 0, 50.8, 97.4},
    {"h100-sxm-80gb", "sglang", "qwen3-32b", "bf16", 84, 0, 8.4, 43.7},
    {"h100-sxm-80gb", "trtllm", "llama-3.1-8b", "bf16", 177, 0, 10.0, 45.2},
    {"h100-sxm-80gb", "trtllm", "qwen3-235b-a22b", "fp8", 127, 0, 11.7, 27.9},
    {"h100-sxm-80gb", "trtllm", "qwen3-32b", "fp8", 180, 0, 19.4, 35.2},
    {"h100-sxm-80gb", "vllm", "gpt-oss-120b", "fp4", 45, 0, 17.0, 13.8},
    {"h100-sxm-80gb", "vllm", "llama-3.1-70b", "fp8", 45, 0, 8.7, 40.9},
    {"h100-sxm-80gb", "vllm", "qwen3-32b", "bf16", 90, 0, 13.8, 14.9},
    {"h100-sxm-80gb", "vllm", "qwen3-32b", "fp8", 3, 0, 58.4, 169.3},
    {"gb200-nvl72", "*", "*", "*", 37, 19, 66.1, 73.4},
    {"h100-sxm-80gb", "*", "*", "*", 751, 0, 13.3, 34.4},
};

void ExpectWithinDocumented(const TransferReport& report,
                            const Documented* begin, const Documented* end) {
  std::vector<TransferGroup> all = report.groups;
  all.insert(all.end(), report.hardware_totals.begin(),
             report.hardware_totals.end());
  ASSERT_EQ(all.size(), static_cast<size_t>(end - begin)) << report.Markdown();
  for (const TransferGroup& g : all) {
    SCOPED_TRACE(g.hardware + " " + g.engine + " " + g.model + " " + g.dtype);
    const Documented* doc = nullptr;
    for (const Documented* d = begin; d != end; ++d) {
      if (std::tie(g.hardware, g.engine, g.model, g.dtype) ==
          std::tie(d->hardware, d->engine, d->model, d->dtype)) {
        doc = d;
      }
    }
    ASSERT_NE(doc, nullptr) << report.Markdown();
    EXPECT_EQ(g.rows, doc->rows);
    EXPECT_EQ(g.infeasible, doc->infeasible);
    EXPECT_LE(g.tpot_mape, doc->tpot_mape + kRegressionPoints)
        << report.Markdown();
    EXPECT_LE(g.ttft_mape, doc->ttft_mape + kRegressionPoints)
        << report.Markdown();
  }
}

std::vector<MeasuredRow> Rows(const char* file) {
  absl::StatusOr<ParsedMeasurements> parsed =
      ParseMeasurements(DataFile(file), /*validation_only=*/true);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok()) return {};
  EXPECT_EQ(parsed->skipped_held_out_hardware, 0) << file;
  return DropRepeatedRuns(parsed->rows).rows;
}

TEST(CalibrationTransferTest, H100FitOnBlackwellStaysWithinDocumentedErrors) {
  const std::vector<MeasuredRow> rows = Rows("blackwell_measured_latency.csv");
  ASSERT_FALSE(rows.empty()) << "Blackwell CSV missing";
  absl::StatusOr<TransferReport> report =
      ComputeTransfer(rows, CalibrationProfiles());
  ASSERT_TRUE(report.ok()) << report.status();
  ExpectWithinDocumented(*report, std::begin(kH100ToBlackwell),
                         std::end(kH100ToBlackwell));
}

// The bands Blackwell predictions carry are what the harness computes from
// the Blackwell rows with the compiled-in profiles.
TEST(CalibrationTransferTest, CompiledTransferBandsEqualRecomputed) {
  const std::vector<MeasuredRow> rows = Rows("blackwell_measured_latency.csv");
  absl::StatusOr<std::vector<ErrorBand>> bands =
      ComputeTransferBands(rows, CalibrationProfiles());
  ASSERT_TRUE(bands.ok()) << bands.status();
  const std::vector<ErrorBand>& compiled = CompiledTransferBands();
  ASSERT_EQ(bands->size(), compiled.size()) << ErrorBandsCpp(*bands);
  for (size_t i = 0; i < bands->size(); ++i) {
    const ErrorBand& b = (*bands)[i];
    const ErrorBand& c = compiled[i];
    SCOPED_TRACE(absl::StrCat(b.engine, b.moe ? " moe " : " dense ", b.dtype));
    EXPECT_EQ(std::tie(b.engine, b.moe, b.dtype, b.rows),
              std::tie(c.engine, c.moe, c.dtype, c.rows));
    EXPECT_NEAR(b.ttft_low, c.ttft_low, 1e-5 * c.ttft_low);
    EXPECT_NEAR(b.ttft_high, c.ttft_high, 1e-5 * c.ttft_high);
    EXPECT_NEAR(b.tpot_low, c.tpot_low, 1e-5 * c.tpot_low);
    EXPECT_NEAR(b.tpot_high, c.tpot_high, 1e-5 * c.tpot_high);
  }
  // A prediction on B200 takes them (with a note); one on H100 does not.
  BandRegime regime;
  regime.profile = "h100-vllm";
  regime.weight_dtype = Dtype::kFp8;
  const PredictionBand own = FindPredictionBand(regime);
  regime.across_hardware = true;
  regime.hardware = "b200-sxm-180gb";
  const PredictionBand across = FindPredictionBand(regime);
  EXPECT_GT(std::log(across.ttft_high / across.ttft_low),
            std::log(own.ttft_high / own.ttft_low));
  ASSERT_FALSE(across.notes.empty());
  EXPECT_NE(across.notes.front().find("cross-hardware"), std::string::npos);
}

// The other direction: profiles fitted on the B200 rows only predict the
// H100 rows (and GB200's); the cross-hardware bands, computed from the first
// direction, are checked on this one (target 75-85%).
TEST(CalibrationTransferTest, B200FitOnH100StaysWithinDocumentedErrors) {
  std::vector<MeasuredRow> rows = Rows("blackwell_measured_latency.csv");
  for (const char* file : {"h100_measured_latency.csv", "h100_moe_latency.csv",
                           "h100_validation_latency.csv"}) {
    std::vector<MeasuredRow> more = Rows(file);
    rows.insert(rows.end(), more.begin(), more.end());
  }
  absl::StatusOr<std::vector<CalibrationProfile>> fitted =
      FitOnHardware(rows, "b200-sxm-180gb", TransferFitOptions());
  ASSERT_TRUE(fitted.ok()) << fitted.status();
  std::vector<MeasuredRow> test;
  for (const MeasuredRow& r : rows) {
    if (r.hardware != "b200-sxm-180gb") test.push_back(r);
  }
  absl::StatusOr<TransferReport> report =
      ComputeTransfer(test, *fitted, "b200-sxm-180gb");
  ASSERT_TRUE(report.ok()) << report.status();
  ExpectWithinDocumented(*report, std::begin(kB200ToOthers),
                         std::end(kB200ToOthers));
  for (const TransferGroup& t : report->hardware_totals) {
    if (t.hardware != "h100-sxm-80gb") continue;
    // Documented: 76% (TPOT) and 87% (TTFT) of the H100 measurements inside
    // the cross-hardware bands; the target is 75-85%.
    EXPECT_GE(t.tpot_in_band, 0.70);
    EXPECT_LE(t.tpot_in_band, 0.90);
    EXPECT_GE(t.ttft_in_band, 0.70);
    EXPECT_LE(t.ttft_in_band, 0.92);
  }
}

// A user's 20 runs on Blackwell: FitProfile (the Calibrate RPC's fit) on 20
// B200 runs of one group from the engine's profile, measured on the group's
// other runs. The held-out MAPE after the fit (percent) is documented per
// group; DeepSeek-V3's TPOT is not halved (the fitted parameters cannot
// reach its MoE/MLA decode terms), which the docs say; a regression of more
// than 2 points fails.
TEST(CalibrationTransferTest, TwentyBlackwellRunsOfOneGroup) {
  // B200 rows: GB200's DeepSeek layouts (tp 72 over 128 heads) are refused
  // by the plan rules, which FitProfile reports as bad input.
  std::vector<MeasuredRow> b200;
  for (const MeasuredRow& r : Rows("blackwell_measured_latency.csv")) {
    if (r.hardware == "b200-sxm-180gb") b200.push_back(r);
  }
  struct Group {
    const char* engine;
    const char* model;
    double tpot_before, tpot_after, ttft_before, ttft_after;
  };
  for (const Group& g :
       {Group{"sglang", "deepseek-v3", 32.9, 30.3, 85.8, 76.4},
        Group{"trtllm", "deepseek-v3", 41.6, 40.5, 36.5, 29.3},
        Group{"trtllm", "gpt-oss-120b", 13.5, 8.7, 108.1, 19.2},
        Group{"vllm", "llama-3.1-70b", 8.3, 8.2, 57.6, 61.2}}) {
    SCOPED_TRACE(std::string(g.engine) + ":" + g.model);
    absl::StatusOr<CalibrationProfile> start = FindCalibrationProfile(g.engine);
    ASSERT_TRUE(start.ok()) << start.status();
    absl::StatusOr<std::vector<MeasuredRow>> rows =
        UserFitRows(b200, g.engine, g.model, 20, *start);
    ASSERT_TRUE(rows.ok()) << rows.status();
    absl::StatusOr<ProfileFit> fit = FitProfile("user", *rows, *start);
    ASSERT_TRUE(fit.ok()) << fit.status();
    // The docs table's row.
    std::printf("| %s:%s | 20 / %d | %.1f%% -> %.1f%% | %.1f%% -> %.1f%% |\n",
                g.engine, g.model, fit->held_out_rows, fit->tpot_mape_before,
                fit->tpot_mape_after, fit->ttft_mape_before,
                fit->ttft_mape_after);
    EXPECT_EQ(fit->fit_rows, 20);
    EXPECT_GE(fit->held_out_rows, 60);
    EXPECT_NEAR(fit->tpot_mape_before, g.tpot_before, 0.1);
    EXPECT_NEAR(fit->ttft_mape_before, g.ttft_before, 0.1);
    EXPECT_LE(fit->tpot_mape_after, g.tpot_after + kRegressionPoints);
    EXPECT_LE(fit->ttft_mape_after, g.ttft_after + kRegressionPoints);
  }
}

}  // namespace
}  // namespace shardplan::simulator
