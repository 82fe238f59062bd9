// Transfer across GPU generations, both directions of the
// leave-one-hardware-out check: AIConfigurator's B200 and GB200 rows
// predicted on their own hardware with the compiled-in profiles (fitted on
// H100 rows only), and the H100 rows predicted with profiles fitted on the
// B200 rows only. The figures are the ones docs/cost-model-and-calibration.md
// reports; a group or a hardware total that gets more than 2 points worse
// fails. The cross-hardware bands are recomputed and their coverage checked
// on the direction they were not computed from.
#include "simulator/calibration_transfer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "simulator/calibration.h"
#include "simulator/calibration_harness.h"
#include "simulator/cost_model.h"

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

// The columns of AIConfigurator's export the aggregated rows need.
constexpr char kExportHeader[] =
    "id,silicon_data_source,backend,backend_version,model_path,system,"
    "precision,mode,isl,osl,gemm_quant_mode,batch_size,tp_size,pp_size,"
    "attention_dp_size,moe_tp_size,moe_ep_size,silicon_ttft_ms,"
    "silicon_tpot_ms\n";

// AIConfigurator's InferenceMAX export writes a single-node run of g GPUs
// with expert parallelism e as moe_tp g x moe_ep e = tp (or attention dp)
// g x e; the harness reads it back as the g GPUs it measures. GB200 "agg"
// rows whose tp = moe_tp is a disaggregated deployment's GPU count are
// skipped as disaggregated.
TEST(CalibrationTransferTest, ExportedLayoutsAreReadAsTheRunTheyMeasure) {
  const std::string header = kExportHeader;
  const std::string csv =
      header +
      // dp 64 = moe_tp 8 x moe_ep 8, 4 per rank: 8 GPUs, dp 8, ep 8, 256.
      "a,silicon_concurrency=256,trtllm,1,deepseek-ai/DeepSeek-R1,b200_sxm,"
      "fp4,agg,1024,1024,nvfp4,4,1,1,64,8,8,791,23.9\n"
      // The same run as the export's other file writes it: one run kept.
      "b,silicon_concurrency=256,trtllm,1,deepseek-ai/DeepSeek-R1,b200_sxm,"
      "fp4,agg,1024,1024,nvfp4,32,1,1,8,1,8,791,23.9\n"
      // tp 64 = 8 x 8 without attention dp: tp 8, ep 8.
      "c,silicon_concurrency=4,sglang,1,deepseek-ai/DeepSeek-R1,b200_sxm,"
      "fp4,agg,1024,1024,nvfp4,4,64,1,1,8,8,189,8.0\n"
      // The export's request count wins over batch x dp (32, not 2048).
      "d,silicon_concurrency=32,trtllm,1,deepseek-ai/DeepSeek-R1,b200_sxm,"
      "fp4,agg,8192,1024,nvfp4,32,1,1,64,8,8,1807,15.1\n"
      // A mixed layout inside a node is a layout: kept as is.
      "e,,trtllm,1,deepseek-ai/DeepSeek-R1,b200_sxm,fp4,agg,1024,1024,"
      "nvfp4,8,8,1,1,4,2,300,9.0\n"
      // GB200 tp 28 = moe_tp 28: a disaggregated deployment's GPU count.
      "f,silicon_concurrency=12,trtllm,,deepseek-ai/DeepSeek-R1,gb200,fp4,"
      "agg,8192,1024,nvfp4,12,28,1,1,28,1,538,8.0\n";
  absl::StatusOr<ParsedMeasurements> parsed = ParseMeasurements(csv, true);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->exported_layouts_read_as_node, 3);
  EXPECT_EQ(parsed->skipped_disaggregated, 1);
  ASSERT_EQ(parsed->rows.size(), 5u);
  const MeasuredRow& a = parsed->rows[0];
  EXPECT_EQ(std::tie(a.tp, a.attention_dp, a.moe_tp, a.moe_ep, a.concurrency),
            std::make_tuple(1, 8, 1, 8, 256));
  const MeasuredRow& b = parsed->rows[1];
  EXPECT_EQ(std::tie(b.tp, b.attention_dp, b.moe_tp, b.moe_ep, b.concurrency),
            std::make_tuple(1, 8, 1, 8, 256));
  const MeasuredRow& c = parsed->rows[2];
  EXPECT_EQ(std::tie(c.tp, c.attention_dp, c.moe_tp, c.moe_ep, c.concurrency),
            std::make_tuple(8, 1, 1, 8, 4));
  EXPECT_EQ(parsed->rows[3].concurrency, 32);
  const MeasuredRow& e = parsed->rows[4];
  EXPECT_EQ(std::tie(e.tp, e.moe_tp, e.moe_ep), std::make_tuple(8, 4, 2));
  const DedupedRows runs = DropRepeatedRuns(parsed->rows);
  EXPECT_EQ(runs.rows.size(), 4u);
  EXPECT_EQ(runs.repeats, 1);
  EXPECT_EQ(runs.conflicting_layouts, 0);
}

// The export writes a vLLM run of tp g with expert parallelism (experts over
// the tp ranks, no attention dp) as tp g, attention dp g, moe_ep g x g; the
// harness reads it back as tp g, ep g holding the exported requests. A real
// attention-dp layout (tp 1, dp 4, ep 4), other engines and other products
// are kept as written.
TEST(CalibrationTransferTest, VllmExpertParallelExportIsReadAsTheTpRun) {
  const std::string csv =
      std::string(kExportHeader) +
      // Kimi-K2.5 "tp 4, dp 4, moe_ep 16", batch 16 of 64: tp 4, ep 4.
      "a,silicon_concurrency=64,vllm,0.17.0,moonshotai/Kimi-K2.5,b200_sxm,"
      "fp4,agg,1024,1024,nvfp4,16,4,1,4,1,16,332.54,27.87\n"
      // The same measurement as the gap analysis writes it: one run kept.
      "b,silicon_concurrency=64,vllm,0.17.0,moonshotai/Kimi-K2.5,b200_sxm,"
      "fp4,agg,1024,1024,nvfp4,64,4,1,1,1,4,332.54,27.87\n"
      // MiniMax-M2.5 "tp 2, dp 2, moe_ep 4", batch 128 of 256: tp 2, ep 2.
      "c,silicon_concurrency=256,vllm,0.19.0,MiniMaxAI/MiniMax-M2.5,"
      "b200_sxm,fp8,agg,1024,1024,fp8,128,2,1,2,1,4,528.5,38.04\n"
      // Attention dp 4 over 4 GPUs with expert parallelism 4: kept.
      "d,silicon_concurrency=64,vllm,0.19.0,MiniMaxAI/MiniMax-M2.5,"
      "b200_sxm,fp8,agg,1024,1024,fp8,16,1,1,4,1,4,150,15.0\n"
      // The same numbers on TensorRT-LLM: not this export, kept.
      "e,silicon_concurrency=64,trtllm,1.2.0,deepseek-ai/DeepSeek-R1,"
      "b200_sxm,fp4,agg,1024,1024,nvfp4,16,2,1,2,1,4,300,20.0\n";
  absl::StatusOr<ParsedMeasurements> parsed = ParseMeasurements(csv, true);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->exported_layouts_read_as_node, 2);
  ASSERT_EQ(parsed->rows.size(), 5u);
  auto layout = [](const MeasuredRow& r) {
    return std::make_tuple(r.tp, r.attention_dp, r.moe_tp, r.moe_ep,
                           r.concurrency);
  };
  EXPECT_EQ(layout(parsed->rows[0]), std::make_tuple(4, 1, 1, 4, 64));
  EXPECT_EQ(layout(parsed->rows[1]), std::make_tuple(4, 1, 1, 4, 64));
  EXPECT_EQ(layout(parsed->rows[2]), std::make_tuple(2, 1, 1, 2, 256));
  EXPECT_EQ(layout(parsed->rows[3]), std::make_tuple(1, 4, 1, 4, 64));
  EXPECT_EQ(layout(parsed->rows[4]), std::make_tuple(2, 2, 1, 4, 32));
  const DedupedRows runs = DropRepeatedRuns(parsed->rows);
  EXPECT_EQ(runs.rows.size(), 4u);
  EXPECT_EQ(runs.repeats, 1);
  EXPECT_EQ(runs.conflicting_layouts, 0);
}

// The gap-analysis files copy runs of the other files with both latencies
// rounded to 0.01 ms: one run, kept once as first read. A run that differs
// by 0.01 ms is another run.
TEST(CalibrationTransferTest, RoundedCopiesOfARunAreOneRun) {
  // SGLang Qwen3.5 FP8, tp 4, 1k/1k at 4 clients: TTFT and TPOT in ms.
  auto run = [](const char* id, const char* latencies) {
    return absl::StrCat(id,
                        ",silicon_concurrency=4,sglang,0.5.9,"
                        "Qwen/Qwen3.5-397B-A17B,b200_sxm,fp8,agg,1024,1024,"
                        "fp8,4,4,1,1,1,1,",
                        latencies, "\n");
  };
  absl::StatusOr<ParsedMeasurements> parsed = ParseMeasurements(
      absl::StrCat(kExportHeader,
                   run("a", "338.3364140507183,6.332719125474412"),
                   run("b", "338.34,6.33"), run("c", "338.35,6.33")),
      true);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->rows.size(), 3u);
  const DedupedRows runs = DropRepeatedRuns(parsed->rows);
  ASSERT_EQ(runs.rows.size(), 2u);
  EXPECT_EQ(runs.repeats, 1);
  EXPECT_DOUBLE_EQ(runs.rows[0].ttft_seconds, 0.3383364140507183);
  EXPECT_DOUBLE_EQ(runs.rows[1].ttft_seconds, 0.33835);
}

// InferenceMAX's MTP configurations of DeepSeek-R1 on TensorRT-LLM ran the
// 1.2.0rc6.post3 image (either spelling of the registry): skipped; the
// standard ones (.post2), other models on that image and a user's row that
// names no image are kept.
// The 2026 models under the export's paths, NVIDIA's NVFP4 checkpoints as
// their architectures, and INT4 weight-only rows as 4-bit weights.
TEST(CalibrationTransferTest, TheExportsNewModelsAndCheckpointsAreRead) {
  std::string csv = kExportHeader;
  for (const auto& [path, precision, quant] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"moonshotai/Kimi-K2.5", "int4", "int4_wo"},
           {"zhipuai/GLM-5", "fp8", "fp8"},
           {"Qwen/Qwen3.5-397B-A17B", "", ""},
           {"MiniMaxAI/MiniMax-M2.5", "fp4", "nvfp4"},
           {"nvidia/DeepSeek-R1-NVFP4", "fp4", "nvfp4"}}) {
    csv += absl::StrCat("r,,vllm,1,", path, ",b200_sxm,", precision,
                        ",agg,1024,1024,", quant, ",8,8,1,1,8,1,300,9.0\n");
  }
  absl::StatusOr<ParsedMeasurements> parsed = ParseMeasurements(csv, true);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->rows.size(), 5u);
  const std::vector<std::string> want = {
      "kimi-k2.5", "glm-5", "qwen3.5-397b-a17b", "minimax-m2.5", "deepseek-v3"};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(parsed->rows[i].catalog_model, want[i]);
  }
  EXPECT_TRUE(parsed->rows[0].fp4);  // INT4 weight-only
  EXPECT_TRUE(parsed->rows[1].fp8 && !parsed->rows[1].fp4);
  EXPECT_FALSE(parsed->rows[2].fp8 || parsed->rows[2].fp4);
  EXPECT_TRUE(parsed->rows[3].fp4 && parsed->rows[4].fp4);
}

TEST(CalibrationTransferTest, SpeculativeDecodingRunsOfTheExportAreSkipped) {
  const std::string header = kExportHeader;
  const std::string layout =
      "b200_sxm,fp4,agg,1024,1024,nvfp4,32,8,1,1,1,8,300,9.0\n";
  const std::string csv =
      header +
      "a,model=DeepSeek-R1; image=nvcr.io#nvidia/tensorrt-llm/release:"
      "1.2.0rc6.post3,trtllm,1.2.0rc6.post3,deepseek-ai/DeepSeek-R1," +
      layout +
      "b,image=nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc6.post3; wip=False,"
      "trtllm,1.2.0rc6.post3,deepseek-ai/DeepSeek-R1," +
      layout +
      "c,image=nvcr.io#nvidia/tensorrt-llm/release:1.2.0rc6.post2,trtllm,"
      "1.2.0rc6.post2,deepseek-ai/DeepSeek-R1," +
      layout +
      "d,image=nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc6.post3,trtllm,"
      "1.2.0rc6.post3,openai/gpt-oss-120b," +
      layout + "e,,trtllm,1.2.0rc6.post3,deepseek-ai/DeepSeek-R1," + layout;
  absl::StatusOr<ParsedMeasurements> parsed = ParseMeasurements(csv, true);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->skipped_speculative, 2);
  ASSERT_EQ(parsed->rows.size(), 3u);
  EXPECT_EQ(parsed->rows[0].id, "c");
  EXPECT_EQ(parsed->rows[1].id, "d");
  EXPECT_EQ(parsed->rows[2].id, "e");
}

// Before InferenceMAX gave its DeepSeek-R1 MTP configurations their own
// image, both kinds ran 1.1.0rc2.post2, and the MTP ones were swept alone on
// 2026-01-14 (calibration_harness_rows.cc, SpeculativeRunOfExport): the
// export's runs of that image measured that day are skipped; the same
// image's runs of other days, other models that day and a row without a
// measured date are kept.
TEST(CalibrationTransferTest, SharedImageMtpSweepOfTheExportIsSkipped) {
  const std::string header = kExportHeader;
  const std::string layout =
      "b200_sxm,fp8,agg,1024,1024,fp8,8,8,1,1,1,8,300,9.0\n";
  auto row = [&](const std::string& id, const std::string& measured,
                 const std::string& path) {
    return absl::StrCat(id, ",model=DeepSeek-R1; ", measured,
                        "wip=False; image=nvcr.io/nvidia/tensorrt-llm/release:"
                        "1.1.0rc2.post2,trtllm,1.1.0rc2.post2,",
                        path, ",", layout);
  };
  const std::string csv =
      header +
      row("mtp", "measured=2026-01-14T00:00:00.000Z; ",
          "deepseek-ai/DeepSeek-R1") +
      row("standard", "measured=2025-12-15T00:00:00.000Z; ",
          "deepseek-ai/DeepSeek-R1") +
      row("other-model", "measured=2026-01-14T00:00:00.000Z; ",
          "openai/gpt-oss-120b") +
      row("undated", "", "deepseek-ai/DeepSeek-R1");
  absl::StatusOr<ParsedMeasurements> parsed = ParseMeasurements(csv, true);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->skipped_speculative, 1);
  ASSERT_EQ(parsed->rows.size(), 3u);
  EXPECT_EQ(parsed->rows[0].id, "standard");
  EXPECT_EQ(parsed->rows[1].id, "other-model");
  EXPECT_EQ(parsed->rows[2].id, "undated");
}

// AIConfigurator's gap-analysis runs of TensorRT-LLM 1.3.0rc1 do not measure
// steady decoding (calibration_harness_rows.cc, UnsteadyGapAnalysisRun):
// skipped. The same files' later releases, other engines' runs and the
// database dumps are kept.
TEST(CalibrationTransferTest, UnsteadyGapAnalysisRunsAreSkipped) {
  const std::string header = kExportHeader;
  const std::string layout =
      "b200_sxm,fp4,agg,4000,1000,nvfp4,8,8,1,1,1,8,300,9.0\n";
  const std::string gap =
      "source_file=/Users/x/projects/aic-auto-gap-analysis/data/b200_sxm/"
      "trtllm/";
  const std::string csv =
      header + "a," + gap +
      "1.3.0rc1/nvidia_DeepSeek-R1-NVFP4.csv; silicon_concurrency=8,trtllm,"
      "1.3.0rc1,deepseek-ai/DeepSeek-R1," +
      layout + "b," + gap +
      "1.3.0rc5/nvidia_DeepSeek-V3.1-NVFP4.csv; silicon_concurrency=8,trtllm,"
      "1.3.0rc5,deepseek-ai/DeepSeek-R1," +
      layout +
      "c,db-dump/2026-04-27; silicon_concurrency=8,trtllm,1.3.0rc1,"
      "deepseek-ai/DeepSeek-R1," +
      layout;
  absl::StatusOr<ParsedMeasurements> parsed = ParseMeasurements(csv, true);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->skipped_unsteady, 1);
  ASSERT_EQ(parsed->rows.size(), 2u);
  EXPECT_EQ(parsed->rows[0].id, "b");
  EXPECT_EQ(parsed->rows[1].id, "c");
}

// AIConfigurator's gap-analysis runs whose load was not recorded (no
// silicon_concurrency; calibration_harness_rows.cc, GapAnalysisRunWithoutLoad)
// are skipped on every hardware; the same files' runs with their load, a
// database dump and a user's row without a source are kept.
TEST(CalibrationTransferTest, GapAnalysisRunsWithoutTheirLoadAreSkipped) {
  const std::string header = kExportHeader;
  const std::string layout =
      ",agg,4000,1000,nvfp4,28,8,1,1,1,8,39682.8,31.49\n";
  const std::string gap =
      "source_file=/Users/x/projects/aic-auto-gap-analysis/data/";
  const std::string csv =
      header + "gb200-no-load," + gap +
      "gb200/trtllm/1.2.0rc6.post1/deepseek_r1.csv; gtl_job_id=23364591; "
      "dynamo_version=0.8.0,trtllm,1.2.0rc6.post1,deepseek-ai/DeepSeek-R1,"
      "gb200,fp4" +
      layout + "h100-no-load," + gap +
      "h100_sxm/trtllm/1.2.0rc6.post1/qwen3_32b.csv; gtl_job_id=23364591,"
      "trtllm,1.2.0rc6.post1,Qwen/Qwen3-32B,h100_sxm,fp8" +
      layout + "gb200-load," + gap +
      "gb200/trtllm/1.3.0rc5/nvidia_DeepSeek-V3.1-NVFP4.csv; "
      "silicon_concurrency=320,trtllm,1.3.0rc5,nvidia/DeepSeek-V3.1-NVFP4,"
      "gb200,fp4" +
      layout +
      "db-dump,db-dump/2026-04-27; config_id=759,trtllm,1.2.0rc6.post1,"
      "deepseek-ai/DeepSeek-R1,gb200,fp4" +
      layout + "user,,trtllm,1.2.0rc6.post1,deepseek-ai/DeepSeek-R1,gb200,fp4" +
      layout;
  absl::StatusOr<ParsedMeasurements> parsed = ParseMeasurements(csv, true);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->skipped_unrecorded_load, 2);
  EXPECT_EQ(parsed->skipped_unsteady, 0);
  ASSERT_EQ(parsed->rows.size(), 3u);
  EXPECT_EQ(parsed->rows[0].id, "gb200-load");
  EXPECT_EQ(parsed->rows[1].id, "db-dump");
  EXPECT_EQ(parsed->rows[2].id, "user");
}

// The shipped files hold that campaign's runs on GB200 (4 aggregated rows)
// and H100 (8): none of them is predicted, and GB200 keeps the 1.3.0rc5 gap
// analysis's three aggregated runs of catalogued models, whose load is
// recorded.
TEST(CalibrationTransferTest, ShippedRunsWithoutTheirLoadAreNotPredicted) {
  absl::StatusOr<ParsedMeasurements> blackwell =
      ParseMeasurements(DataFile("blackwell_measured_latency.csv"), true);
  ASSERT_TRUE(blackwell.ok()) << blackwell.status();
  EXPECT_EQ(blackwell->skipped_unrecorded_load, 4);
  int gb200 = 0;
  for (const MeasuredRow& r : blackwell->rows) {
    if (r.hardware != "gb200-nvl72") continue;
    ++gb200;
    EXPECT_EQ(r.engine_version, "1.3.0rc5") << r.id;
  }
  EXPECT_EQ(gb200, 3);
  absl::StatusOr<ParsedMeasurements> h100 =
      ParseMeasurements(DataFile("h100_measured_latency.csv"));
  ASSERT_TRUE(h100.ok()) << h100.status();
  EXPECT_EQ(h100->skipped_unrecorded_load, 8);
}

// A row faster than any run of its recorded layout and load can be at the
// datasheet peak (calibration_harness_rows.cc, BelowPeakRateFloors) is
// skipped: vLLM Qwen3-32B FP8 on two H100s, 4000/1000 at 48 requests, with
// TPOT 11.63 ms and TTFT 184.6 ms (one uncontested prefill). The same row
// with a decode slow enough for interleaved prefills, or a TTFT long enough
// for queued ones, is kept, as is the same run's eight-GPU row. (The shipped
// rows lack silicon_concurrency and fall to GapAnalysisRunWithoutLoad first;
// here the load is recorded, so the floors alone decide.)
TEST(CalibrationTransferTest, RowsBelowPeakRateFloorsAreSkipped) {
  auto row = [](const char* id, const char* tp, const char* clients,
                const char* ttft, const char* tpot) {
    return absl::StrCat(
        id, ",source_file=/x/aic-auto-gap-analysis/data/",
        "h100_sxm/vllm/0.12.0/qwen3_32b.csv; silicon_concurrency=", clients,
        ",vllm,0.12.0,", "Qwen/Qwen3-32B,h100_sxm,fp8,agg,4000,1000,fp8,",
        clients, ",", tp, ",1,,0,0,", ttft, ",", tpot, "\n");
  };
  const std::string csv = std::string(kExportHeader) +
                          row("fast", "2", "48", "184.6", "11.63") +
                          row("slow-decode", "2", "48", "184.6", "30.0") +
                          row("queued", "2", "48", "20000", "11.63") +
                          row("eight-gpus", "8", "144", "953.5", "23.41");
  absl::StatusOr<ParsedMeasurements> parsed = ParseMeasurements(csv, true);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->skipped_below_peak_floors, 1);
  ASSERT_EQ(parsed->rows.size(), 3u);
  EXPECT_EQ(parsed->rows[0].id, "slow-decode");
  EXPECT_EQ(parsed->rows[1].id, "queued");
  EXPECT_EQ(parsed->rows[2].id, "eight-gpus");
}

// InferenceMAX's SGLang DeepSeek-R1 runs on B200 measured before its harness
// warmed the server up (2026-01-21) whose first wave of prompts (0.9 x ISL x
// clients) spans more than the script's chunked-prefill step (16,384 tokens
// NVFP4, 32,768 FP8) are dropped, whichever copy of the run is kept; the
// one-chunk runs of the same days, the runs after the warm-up, other models
// and AIConfigurator's own runs are kept.
TEST(CalibrationTransferTest, UnwarmedChunkedFirstWavesAreDropped) {
  auto run = [](const char* id, const char* source, const char* precision,
                const char* isl, const char* clients, const char* ttft) {
    return absl::StrCat(id, ",", source, "; silicon_concurrency=", clients,
                        ",sglang,,deepseek-ai/DeepSeek-R1,b200_sxm,", precision,
                        ",agg,", isl, ",1024,", precision, ",", clients,
                        ",8,1,1,8,1,", ttft, ",20.0\n");
  };
  constexpr char kNov[] =
      "source_file=2026-04-06.csv; measured=2025-11-10T00:00:00.000Z";
  constexpr char kDbNov[] =
      "db-dump/2026-04-27; measured=2025-11-10T00:00:00.000Z";
  constexpr char kMar[] =
      "source_file=2026-03-25.csv; measured=2026-03-25T16:34:14Z";
  constexpr char kWarm[] =
      "source_file=2026-04-06.csv; measured=2026-01-21T00:00:00.000Z";
  const std::string csv = absl::StrCat(
      kExportHeader,
      // 32 x 922 tokens > 16,384: dropped, and its database copy with it.
      run("a", kNov, "fp4", "1024", "32", "8621.3"),
      run("b", kDbNov, "fp4", "1024", "32", "8621.3"),
      // 16 x 922 tokens fit one step: kept.
      run("c", kNov, "fp4", "1024", "16", "592.7"),
      // FP8's step is 32,768: 32 clients of 1k fit, 8 of 8k do not.
      run("d", kNov, "fp8", "1024", "32", "531.0"),
      run("e", kNov, "fp8", "8192", "8", "1927.2"),
      // Measured with the warm-up: kept.
      run("f", kMar, "fp4", "8192", "32", "998.0"),
      run("g", kWarm, "fp4", "8192", "32", "998.5"),
      // AIConfigurator's own run (no InferenceMAX copy): kept.
      run("h", kDbNov, "fp4", "8192", "64", "1584.0"),
      // Another model on the same days: kept.
      "i,", kNov,
      "; silicon_concurrency=64,sglang,,Qwen/Qwen3.5-397B-A17B,b200_sxm,fp8,"
      "agg,8192,1024,fp8,64,8,1,1,8,1,3000,30.0\n");
  absl::StatusOr<ParsedMeasurements> parsed = ParseMeasurements(csv, true);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->rows.size(), 9u);
  EXPECT_EQ(parsed->rows[0].measured_date, "2025-11-10");
  EXPECT_EQ(parsed->rows[5].measured_date, "2026-03-25");
  const DedupedRows runs = DropRepeatedRuns(parsed->rows);
  EXPECT_EQ(runs.unwarmed_first_waves, 2);
  EXPECT_EQ(runs.repeats, 1);
  std::vector<std::string> kept;
  for (const MeasuredRow& r : runs.rows) kept.push_back(r.id);
  EXPECT_EQ(kept, (std::vector<std::string>{"c", "d", "f", "g", "h", "i"}));
}

// What the rule stands on, in the export itself: on the unwarmed NVFP4 runs
// of 2025-11-10 (tp 8) the TTFT jumps from one chunk to two while the TPOT
// grows a little, and the surplus is flat in the output length (1k and 8k
// outputs, whose arrivals differ 6x), where a steady queue grows with the
// arrivals. The runs of SGLang 0.5.9 (warmed up) on the same layout grow
// smoothly. If the data or the rule change, this fails.
TEST(CalibrationTransferTest, UnwarmedFirstWaveStallIsFlatInLoadAndOutput) {
  const std::string text = DataFile("blackwell_measured_latency.csv");
  ASSERT_FALSE(text.empty());
  absl::StatusOr<ParsedMeasurements> parsed = ParseMeasurements(text, true);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  auto find = [&](absl::string_view date, absl::string_view version, int osl,
                  int clients) -> const MeasuredRow* {
    for (const MeasuredRow& r : parsed->rows) {
      if (r.engine == "sglang" && r.catalog_model == "deepseek-v3" && r.fp4 &&
          r.hardware == "b200-sxm-180gb" && r.inferencemax &&
          r.measured_date == date && r.engine_version == version && r.tp == 8 &&
          r.isl == 1024 && r.osl == osl && r.concurrency == clients) {
        return &r;
      }
    }
    return nullptr;
  };
  for (int osl : {1024, 8192}) {
    const MeasuredRow* one_chunk = find("2025-11-10", "", osl, 16);
    ASSERT_NE(one_chunk, nullptr) << osl;
    double lo = 1e9, hi = 0;
    for (int clients : {32, 64, 128}) {
      const MeasuredRow* r = find("2025-11-10", "", osl, clients);
      ASSERT_NE(r, nullptr) << osl << " " << clients;
      lo = std::min(lo, r->ttft_seconds);
      hi = std::max(hi, r->ttft_seconds);
      // Over ten times the one-chunk run's TTFT.
      EXPECT_GT(r->ttft_seconds, 10 * one_chunk->ttft_seconds) << clients;
    }
    // From 16 to 32 clients the TPOT grows 1.2-1.5x, the TTFT 12-15x.
    EXPECT_LT(find("2025-11-10", "", osl, 32)->tpot_seconds,
              1.6 * one_chunk->tpot_seconds);
    // Flat from 32 to 128 clients: a steady queue would grow 4x.
    EXPECT_LT(hi / lo, 1.25) << osl;
    // The warmed-up release on the same layout: no jump.
    const MeasuredRow* warm16 = find("2026-03-25", "0.5.9", osl, 16);
    const MeasuredRow* warm32 = find("2026-03-25", "0.5.9", osl, 32);
    ASSERT_NE(warm16, nullptr);
    ASSERT_NE(warm32, nullptr);
    EXPECT_LT(warm32->ttft_seconds, 2 * warm16->ttft_seconds) << osl;
  }
  // Flat in the output length: 1k and 8k outputs stall alike at 32-128.
  for (int clients : {32, 64, 128}) {
    const double ratio = find("2025-11-10", "", 8192, clients)->ttft_seconds /
                         find("2025-11-10", "", 1024, clients)->ttft_seconds;
    EXPECT_GT(ratio, 0.8) << clients;
    EXPECT_LT(ratio, 1.2) << clients;
  }
}

// Evaluates `plan` of `problem` with TensorRT-LLM's shipped profile.
Evaluation EvaluateTrtllm(const Problem& problem, const PlanDims& plan) {
  const CalibrationProfile& trtllm = CalibrationProfiles().front();
  EXPECT_EQ(trtllm.engine, "trtllm");
  absl::StatusOr<std::unique_ptr<const CostModel>> m =
      CostModel::Create(problem, trtllm.calibration);
  EXPECT_TRUE(m.ok()) << m.status();
  return (*m)->Evaluate(plan);
}

TEST(CalibrationTransferTest, InferenceMaxRunsGetTheirServerSettings) {
  const std::string header = kExportHeader;
  const std::string llama =
      ",trtllm,,meta-llama/Llama-3.1-70B,b200_sxm,fp8,agg,1024,1024,fp8,4,2,"
      "1,1,2,1,255.7,9.69\n";
  const std::string csv =
      header + "a,source_file=2026-04-06.csv; silicon_concurrency=4" + llama +
      "b,db-dump/2026-04-27; silicon_concurrency=4" + llama +
      // tp 8: the script leaves batch waiting off.
      "c,source_file=2026-04-06.csv,trtllm,,meta-llama/Llama-3.1-70B,"
      "b200_sxm,fp8,agg,1024,1024,fp8,4,8,1,1,8,1,61.7,5.45\n"
      // DeepSeek-R1's TensorRT-LLM script runs no postprocess workers.
      "d,source_file=2026-03-25.csv,trtllm,1,deepseek-ai/DeepSeek-R1,"
      "b200_sxm,fp4,agg,1024,1024,nvfp4,4,8,1,1,1,8,208,8.0\n";
  absl::StatusOr<ParsedMeasurements> parsed = ParseMeasurements(csv, true);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->rows.size(), 4u);
  EXPECT_TRUE(parsed->rows[0].inferencemax);
  EXPECT_FALSE(parsed->rows[1].inferencemax);
  absl::StatusOr<Problem> imx = RowProblem(parsed->rows[0]);
  absl::StatusOr<Problem> own = RowProblem(parsed->rows[1]);
  absl::StatusOr<Problem> tp8 = RowProblem(parsed->rows[2]);
  absl::StatusOr<Problem> dsr1 = RowProblem(parsed->rows[3]);
  ASSERT_TRUE(imx.ok() && own.ok() && tp8.ok() && dsr1.ok());
  // Lengths uniform in [0.8 L, L]: mean 0.9 L.
  EXPECT_EQ(imx->workload.input_tokens, 922);
  EXPECT_EQ(own->workload.input_tokens, 1024);
  EXPECT_EQ(imx->workload.batch_wait_timeout_iterations, 20);
  EXPECT_EQ(own->workload.batch_wait_timeout_iterations, 0);
  EXPECT_EQ(tp8->workload.batch_wait_timeout_iterations, 0);
  EXPECT_TRUE(imx->workload.detokenises_off_executor);
  EXPECT_FALSE(own->workload.detokenises_off_executor);
  EXPECT_FALSE(dsr1->workload.detokenises_off_executor);
  EXPECT_EQ(dsr1->workload.kv_cache_dtype, Dtype::kFp8);

  // The batch wait holds a request's prefill for about W decode iterations
  // when arrivals are rare (4 clients, 1,024-token outputs: lambda W = 0.08,
  // 19.6 iterations), and the postprocess workers replace TensorRT-LLM's
  // per-request time with vLLM's.
  const CalibrationProfile& trtllm = CalibrationProfiles().front();
  ASSERT_EQ(trtllm.engine, "trtllm");
  Problem waiting = *imx;
  waiting.workload.detokenises_off_executor = false;
  Problem plain = waiting;
  plain.workload.batch_wait_timeout_iterations = 0;
  const PlanDims plan = RowPlan(parsed->rows[0]);
  auto evaluate = [&](const Problem& p) { return EvaluateTrtllm(p, plan); };
  const Evaluation base = evaluate(plain);
  const Evaluation wait = evaluate(waiting);
  const Evaluation workers = evaluate(*imx);
  const double lambda_w = 4.0 / 922 * 20;
  EXPECT_NEAR(
      wait.ttft_seconds - base.ttft_seconds,
      20 * (1 + lambda_w / 2) / (1 + lambda_w) * base.decode_iteration_seconds,
      1e-9);
  EXPECT_EQ(wait.tpot_seconds, base.tpot_seconds);
  EXPECT_NEAR(
      wait.ttft_seconds - workers.ttft_seconds,
      (trtllm.calibration.prefill_overhead_seconds -
       trtllm.calibration.offloaded_detokenisation_request_overhead_seconds),
      1e-9);
  EXPECT_LT(workers.ttft_seconds, wait.ttft_seconds);
}

// The rows of an export with kExportHeader's columns.
std::vector<MeasuredRow> ExportRows(const std::string& rows) {
  absl::StatusOr<ParsedMeasurements> parsed =
      ParseMeasurements(kExportHeader + rows, true);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return parsed.ok() ? parsed->rows : std::vector<MeasuredRow>{};
}

// Each row's problem (RowProblem); a row that fails fails the test.
std::vector<Problem> RowProblems(const std::vector<MeasuredRow>& rows) {
  std::vector<Problem> problems;
  for (const MeasuredRow& row : rows) {
    absl::StatusOr<Problem> p = RowProblem(row);
    EXPECT_TRUE(p.ok()) << p.status();
    if (p.ok()) problems.push_back(*p);
  }
  return problems;
}

// vLLM fuses the tensor-parallel all-reduce with the next RMSNorm into
// FlashInfer's port of TensorRT-LLM's kernel where the run turned the pass on:
// InferenceMAX's Llama-3.1-70B B200 scripts with their own size limits (8 MB
// at tp 8, 32 MB below), its gpt-oss-120b B200 script with vLLM's defaults,
// and every run of vLLM 0.16.0 or later by default (Blackwell 64 / 32 / 1 MB,
// Hopper 64 / 2 / 1 MB at tp 2 / 4 / 8), except DeepSeek-V3-architecture NVFP4
// checkpoints. Older releases, TensorRT-LLM and tp 1 keep the engine's own
// all-reduce.
TEST(CalibrationTransferTest, VllmRunsFuseTheAllReduceWhereTheirLaunchDid) {
  struct Case {
    std::string row;
    double mib;
  };
  const std::vector<Case> cases = {
      {"a,source_file=2026-03-25.csv,vllm,,meta-llama/Llama-3.1-70B,b200_sxm,"
       "fp4,agg,1024,1024,nvfp4,4,8,1,1,1,1,84.3,6.31\n",
       8},
      {"b,source_file=2026-03-25.csv,vllm,,meta-llama/Llama-3.1-70B,b200_sxm,"
       "fp8,agg,1024,1024,fp8,4,4,1,1,1,1,78.3,7.23\n",
       32},
      {"c,source_file=2026-03-25.csv,vllm,0.15.1,openai/gpt-oss-120b,b200_sxm,"
       "fp4,agg,1024,1024,nvfp4,4,4,1,1,4,1,30.2,3.0\n",
       32},
      {"d,db-dump/2026-04-27,vllm,0.19.0,MiniMaxAI/MiniMax-M2.5,b200_sxm,fp8,"
       "agg,1024,1024,fp8,4,2,1,1,2,1,90.0,9.4\n",
       64},
      {"e,source_file=2026-03-25.csv,vllm,0.18.0,openai/gpt-oss-120b,h100_sxm,"
       "fp4,agg,1024,1024,nvfp4,64,4,1,1,4,1,300.0,9.0\n",
       2},
      {"f,db-dump/2026-04-27,vllm,0.17.0,moonshotai/Kimi-K2.5,b200_sxm,fp4,agg,"
       "1024,1024,nvfp4,4,4,1,1,4,1,74.1,8.2\n",
       0},
      {"g,db-dump/2026-04-27,vllm,0.12.0,Qwen/Qwen3-32B,h100_sxm,bf16,agg,1024,"
       "1024,bf16,8,4,1,1,1,1,60.0,8.0\n",
       0},
      {"h,source_file=2026-03-25.csv,vllm,0.15.1,openai/gpt-oss-120b,b200_sxm,"
       "fp4,agg,1024,1024,nvfp4,4,1,1,1,1,1,30.2,3.5\n",
       0},
      {"i,source_file=2026-04-06.csv,trtllm,,meta-llama/Llama-3.1-70B,b200_sxm,"
       "fp8,agg,1024,1024,fp8,4,8,1,1,8,1,61.7,5.45\n",
       0},
  };
  for (const Case& c : cases) {
    const std::vector<Problem> problems = RowProblems(ExportRows(c.row));
    ASSERT_EQ(problems.size(), 1u) << c.row;
    EXPECT_DOUBLE_EQ(problems[0].workload.fused_all_reduce_max_bytes,
                     c.mib * 1024 * 1024)
        << c.row;
  }
}

// InferenceMAX's clients draw every prompt and output length at random
// (--random-range-ratio 0.8), so their requests fall out of step and each
// prefill stalls the others' decoding: the whole prefill work lands in TPOT,
// not the share the profiles' prefill queue fraction leaves there (0.49 for
// SGLang). Its SGLang Qwen3.5-397B-A17B FP8 run at 8k/1k and 128 clients on
// 4 B200s measures TPOT 52.7 ms; the in-step share predicts 28 ms, the
// whole prefill work 33 ms. The database copy of a run keeps the fitted
// share.
TEST(CalibrationTransferTest, InferenceMaxRandomLengthsPutEveryPrefillInTpot) {
  const std::string run =
      ",sglang,0.5.9,Qwen/Qwen3.5-397B-A17B,b200_sxm,fp8,agg,8192,1024,fp8,"
      "128,4,1,1,4,1,4413.1,52.69\n";
  const std::vector<MeasuredRow> rows =
      ExportRows("a,source_file=2026-03-25.csv; silicon_concurrency=128" + run +
                 "b,db-dump/2026-04-27; silicon_concurrency=128" + run);
  ASSERT_EQ(rows.size(), 2u);
  const std::vector<Problem> problems = RowProblems(rows);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_TRUE(problems[0].workload.lengths_desynchronise);
  EXPECT_FALSE(problems[1].workload.lengths_desynchronise);

  const CalibrationProfile* sglang = nullptr;
  for (const CalibrationProfile& p : CalibrationProfiles()) {
    if (p.engine == "sglang") sglang = &p;
  }
  ASSERT_NE(sglang, nullptr);
  ASSERT_GT(sglang->calibration.prefill_queue_fraction, 0.3);
  auto evaluate = [&](const Problem& problem, const Calibration& c) {
    absl::StatusOr<std::unique_ptr<const CostModel>> m =
        CostModel::Create(problem, c);
    EXPECT_TRUE(m.ok()) << m.status();
    return (*m)->Evaluate(RowPlan(rows[0]));
  };
  Problem in_step = problems[0];
  in_step.workload.lengths_desynchronise = false;
  Calibration no_queue = sglang->calibration;
  no_queue.prefill_queue_fraction = 0;
  const Evaluation desynchronised = evaluate(problems[0], sglang->calibration);
  const Evaluation stepped = evaluate(in_step, sglang->calibration);
  ASSERT_TRUE(desynchronised.feasible && stepped.feasible);
  EXPECT_DOUBLE_EQ(desynchronised.tpot_seconds,
                   evaluate(in_step, no_queue).tpot_seconds);
  EXPECT_GT(desynchronised.tpot_seconds, 1.15 * stepped.tpot_seconds);
  EXPECT_LT(std::abs(desynchronised.tpot_seconds / 0.05269 - 1),
            std::abs(stepped.tpot_seconds / 0.05269 - 1));
}

// AIConfigurator's database dumps hold copies of InferenceMAX's runs: the
// same layout, lengths and load, both latencies to 9 significant digits
// (SGLang Qwen3.5-397B-A17B FP8 on 4 B200s, 1k/1k at 4 clients: TTFT
// 338.3 ms and TPOT 6.33 ms in both files). Such a copy is that run, read
// with InferenceMAX's harness (mean lengths 0.9 L, FP8 KV cache, random
// lengths) whichever copy is kept; a database run with other latencies or
// another layout keeps AIConfigurator's reading.
TEST(CalibrationTransferTest, DatabaseCopiesOfInferenceMaxRunsAreThoseRuns) {
  const std::string run =
      ",sglang,0.5.9,Qwen/Qwen3.5-397B-A17B,b200_sxm,fp8,agg,1024,1024,fp8,"
      "4,4,1,1,4,1,338.33129,6.3312781\n";
  const std::vector<MeasuredRow> rows = ExportRows(
      "a,db-dump/2026-04-27; silicon_concurrency=4" + run +
      "b,source_file=2026-03-25.csv; silicon_concurrency=4" + run +
      // Another layout (ep 4) of the same numbers would be a conflict; other
      // latencies (apart by more than the 0.01 ms runs are compared at) are
      // another run.
      "c,db-dump/2026-04-27; silicon_concurrency=4,sglang,0.5.9,"
      "Qwen/Qwen3.5-397B-A17B,b200_sxm,fp8,agg,1024,1024,fp8,4,4,1,1,4,1,"
      "338.35129,6.3312781\n");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_FALSE(rows[0].inferencemax);
  EXPECT_TRUE(rows[1].inferencemax);
  const DedupedRows runs = DropRepeatedRuns(rows);
  EXPECT_EQ(runs.copies_read_as_inferencemax, 1);
  EXPECT_EQ(runs.repeats, 1);
  ASSERT_EQ(runs.rows.size(), 2u);
  EXPECT_EQ(runs.rows[0].line, rows[0].line);
  EXPECT_TRUE(runs.rows[0].inferencemax);
  EXPECT_FALSE(runs.rows[1].inferencemax);
  const std::vector<Problem> problems = RowProblems(runs.rows);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].workload.input_tokens, 922);
  EXPECT_TRUE(problems[0].workload.lengths_desynchronise);
  // The script's flags too: the Qwen3.5 script's recv interval below 16
  // clients.
  EXPECT_EQ(problems[0].workload.scheduler_recv_interval, 10);
  EXPECT_EQ(problems[1].workload.input_tokens, 1024);
  EXPECT_FALSE(problems[1].workload.lengths_desynchronise);
  EXPECT_EQ(problems[1].workload.scheduler_recv_interval, 0);
}

// AIConfigurator's own runs (not InferenceMAX's) deploy its generator's
// KV-cache dtype: FP8 under its "fp8" and "nvfp4" precision profiles on every
// engine, the model dtype under "bfloat16" and MXFP4 (gpt-oss-120b). With an
// FP8 cache the measured vLLM MiniMax-M2.5 FP8 run on 2 B200s holds its 64
// clients of 8k + 1k tokens (TTFT 831 ms, TPOT 31.5 ms, no queue), which a
// bf16 cache cannot (it would queue for seconds).
TEST(CalibrationTransferTest,
     AiConfiguratorRunsGetTheirGeneratorsKvCacheDtype) {
  const std::vector<MeasuredRow> rows = ExportRows(
      "a,db-dump/2026-04-27; silicon_concurrency=64,vllm,0.19.0,"
      "MiniMaxAI/MiniMax-M2.5,b200_sxm,fp8,agg,8192,1024,fp8,64,2,1,1,2,1,"
      "831.2,31.54\n"
      "b,db-dump/2026-04-27; silicon_concurrency=4,sglang,0.5.9,"
      "Qwen/Qwen3.5-397B-A17B,b200_sxm,bf16,agg,1024,1024,,4,8,1,1,8,1,"
      "231.8,8.07\n"
      "c,db-dump/2026-04-27; silicon_concurrency=4,vllm,0.19.0,"
      "openai/gpt-oss-120b,b200_sxm,fp4,agg,1024,1024,nvfp4,4,1,1,1,1,1,"
      "50,5\n"
      "d,db-dump/2026-04-27; silicon_concurrency=4,sglang,0.5.9,"
      "deepseek-ai/DeepSeek-V3,b200_sxm,fp4,agg,1024,1024,nvfp4,4,8,1,1,1,8,"
      "365,8.3\n");
  ASSERT_EQ(rows.size(), 4u);
  for (const MeasuredRow& row : rows) EXPECT_FALSE(row.inferencemax);
  const std::vector<Problem> problems = RowProblems(rows);
  ASSERT_EQ(problems.size(), rows.size());
  EXPECT_EQ(problems[0].workload.kv_cache_dtype, Dtype::kFp8);
  EXPECT_EQ(problems[1].workload.kv_cache_dtype, Dtype::kBf16);
  EXPECT_EQ(problems[2].workload.kv_cache_dtype, Dtype::kBf16);
  EXPECT_EQ(problems[3].workload.kv_cache_dtype, Dtype::kFp8);

  const CalibrationProfile* vllm = nullptr;
  for (const CalibrationProfile& p : CalibrationProfiles()) {
    if (p.engine == "vllm") vllm = &p;
  }
  ASSERT_NE(vllm, nullptr);
  absl::StatusOr<std::unique_ptr<const CostModel>> m =
      CostModel::Create(problems[0], vllm->calibration);
  ASSERT_TRUE(m.ok()) << m.status();
  const Evaluation e = (*m)->Evaluate(RowPlan(rows[0]));
  ASSERT_TRUE(e.feasible);
  EXPECT_EQ(e.queued_requests, 0);
  EXPECT_LT(e.ttft_seconds, 2 * 0.8312);
}

// DeepSeek-R1 FP8 at 1k/1k with 64-255 clients waits 40 iterations for a
// batch (dsr1_fp8_b200_trt.sh) unless it runs attention dp, which TensorRT-
// LLM's batch waiting skips; the attention-dp runs hold a request until every
// rank has one or the balance timeout passes (60 iterations for DeepSeek-R1,
// the defaults 50 and 10 for gpt-oss).
TEST(CalibrationTransferTest, InferenceMaxAttentionDpRunsWaitForEveryRank) {
  const std::string dsr1 =
      ",trtllm,1,deepseek-ai/DeepSeek-R1,b200_sxm,fp8,agg,1024,1024,fp8,";
  const std::vector<MeasuredRow> rows = ExportRows(
      "a,source_file=2026-03-25.csv; silicon_concurrency=64" + dsr1 +
      "64,8,1,1,8,1,642.5,21.5\n"
      "b,source_file=2026-03-25.csv; silicon_concurrency=256" +
      dsr1 +
      "256,8,1,1,8,1,1403,21.0\n"
      "c,source_file=2026-04-06.csv; silicon_concurrency=64" +
      dsr1 +
      "1,1,1,64,8,8,1809,18.9\n"
      "d,source_file=2026-04-06.csv; silicon_concurrency=64,trtllm,1,"
      "openai/gpt-oss-120b,b200_sxm,fp4,agg,1024,1024,nvfp4,16,1,1,4,1,4,"
      "194,6.4\n"
      // A's run as AIConfigurator's database exports it.
      "e,db-dump/2026-04-27; silicon_concurrency=64" +
      dsr1 +
      "64,8,1,1,8,1,642.5,21.5\n"
      "f,source_file=2026-04-06.csv; silicon_concurrency=256,trtllm,1,"
      "openai/gpt-oss-120b,b200_sxm,fp4,agg,1024,1024,nvfp4,128,1,1,2,1,2,"
      "171,6.8\n");
  ASSERT_EQ(rows.size(), 6u);
  const std::vector<Problem> problems = RowProblems(rows);
  ASSERT_EQ(problems.size(), rows.size());
  const WorkloadDims& a = problems[0].workload;
  const WorkloadDims& b = problems[1].workload;
  const WorkloadDims& c = problems[2].workload;
  const WorkloadDims& d = problems[3].workload;
  EXPECT_EQ(a.batch_wait_timeout_iterations, 40);
  EXPECT_EQ(a.attention_dp_balance_timeout_iterations, 0);
  EXPECT_EQ(b.batch_wait_timeout_iterations, 0);  // 256 clients
  EXPECT_EQ(c.batch_wait_timeout_iterations, 0);
  EXPECT_EQ(c.attention_dp_balance_timeout_iterations, 60);
  EXPECT_EQ(c.attention_dp_balance_batching_wait_iterations, 0);
  EXPECT_EQ(d.attention_dp_balance_timeout_iterations, 50);
  EXPECT_EQ(d.attention_dp_balance_batching_wait_iterations, 10);

  auto wait_iterations = [&](Problem p, const PlanDims& plan) {
    const Evaluation on = EvaluateTrtllm(p, plan);
    p.workload.attention_dp_balance_timeout_iterations = 0;
    const Evaluation off = EvaluateTrtllm(p, plan);
    EXPECT_EQ(on.tpot_seconds, off.tpot_seconds);
    return (on.ttft_seconds - off.ttft_seconds) / off.decode_iteration_seconds;
  };
  // 64 clients on 8 ranks of 922-token outputs: a rank receives a request
  // every 115 iterations, so the 60-iteration clock nearly always ends the
  // wait first: T / 2 on average, the chance that all 8 ranks fill first
  // being (1 - e^{-60 / 115})^8 < 0.001.
  const double timeout_wait = wait_iterations(problems[2], RowPlan(rows[2]));
  EXPECT_GT(timeout_wait, 29.5);
  EXPECT_LE(timeout_wait, 30.0);
  // Two ranks, 256 clients, the timeout out of reach and no batching wait:
  // mu = 256 / (922 x 2) per rank and iteration, and a cycle ends at the fill
  // time F (both ranks receive one), P(F > t) = 2 e^{-mu t} - e^{-2 mu t}:
  // E[F^2] / (2 E[F]) = (3.5 / mu^2) / (2 x 1.5 / mu) = 7 / (6 mu).
  Problem two = problems[5];
  two.workload.attention_dp_balance_timeout_iterations = 1000;
  two.workload.attention_dp_balance_batching_wait_iterations = 0;
  const PlanDims two_ranks = RowPlan(rows[5]);
  ASSERT_EQ(two_ranks.dp, 2);
  const double mu = 256.0 / (922 * 2);
  EXPECT_NEAR(wait_iterations(two, two_ranks), 7 / (6 * mu), 0.05);
}

// Evaluates `plan` of `problem` with the shipped profile of `engine`.
Evaluation EvaluateEngine(const std::string& engine, const Problem& problem,
                          const PlanDims& plan) {
  for (const CalibrationProfile& profile : CalibrationProfiles()) {
    if (profile.engine != engine) continue;
    absl::StatusOr<std::unique_ptr<const CostModel>> m =
        CostModel::Create(problem, profile.calibration);
    EXPECT_TRUE(m.ok()) << m.status();
    return (*m)->Evaluate(plan);
  }
  ADD_FAILURE() << "no profile for " << engine;
  return {};
}

// InferenceMAX's SGLang scripts of DeepSeek-R1 and Qwen3.5 on B200 launch
// with --scheduler-recv-interval 30 from 16 clients up and 10 below (10 in
// the DeepSeek FP8 script's tp 4 lane); its GLM-5 scripts and
// AIConfigurator's own runs keep SGLang's default. While requests decode,
// SGLang takes new ones every N decode iterations and at once after a
// prefill: N / 2 iterations of wait before a prompt's prefill, none at batch
// 1, and decoding is unchanged. A prefill running when a prompt arrives is
// part of that wait (the poll after it takes the prompt), so the profile's
// in-flight prefills are not added on top.
TEST(CalibrationTransferTest, InferenceMaxSglangRunsTakeRequestsEveryInterval) {
  const std::string dsr1_fp8 =
      ",sglang,0.5.9,deepseek-ai/DeepSeek-R1,b200_sxm,fp8,agg,";
  const std::vector<MeasuredRow> rows = ExportRows(
      "a,source_file=2026-03-25.csv; silicon_concurrency=64" + dsr1_fp8 +
      "1024,1024,fp8,64,8,1,1,8,1,966,25.0\n"
      "b,source_file=2026-03-25.csv; silicon_concurrency=8" +
      dsr1_fp8 +
      "1024,1024,fp8,8,8,1,1,8,1,300,12.0\n"
      "c,source_file=2026-03-25.csv; silicon_concurrency=32" +
      dsr1_fp8 +
      "8192,1024,fp8,32,4,1,1,4,1,1600,20.0\n"
      "d,source_file=2026-03-25.csv; silicon_concurrency=32,sglang,0.5.9,"
      "Qwen/Qwen3.5-397B-A17B,b200_sxm,fp8,agg,1024,1024,fp8,32,4,1,1,4,1,"
      "795,15.0\n"
      "e,source_file=2026-03-25.csv; silicon_concurrency=64,sglang,"
      "nightly-dev,zhipuai/GLM-5,b200_sxm,fp8,agg,1024,1024,fp8,64,8,1,1,8,"
      "1,394,20.0\n"
      "f,db-dump/2026-04-27; silicon_concurrency=64" +
      dsr1_fp8 + "1024,1024,fp8,64,8,1,1,8,1,799,25.0\n");
  ASSERT_EQ(rows.size(), 6u);
  const std::vector<Problem> problems = RowProblems(rows);
  ASSERT_EQ(problems.size(), rows.size());
  EXPECT_EQ(problems[0].workload.scheduler_recv_interval, 30);
  EXPECT_EQ(problems[1].workload.scheduler_recv_interval, 10);
  EXPECT_EQ(problems[2].workload.scheduler_recv_interval, 10);
  EXPECT_EQ(problems[3].workload.scheduler_recv_interval, 30);
  EXPECT_EQ(problems[4].workload.scheduler_recv_interval, 0);
  EXPECT_EQ(problems[5].workload.scheduler_recv_interval, 0);

  const PlanDims plan = RowPlan(rows[0]);
  Problem polled = problems[0];
  Problem every = polled;
  every.workload.scheduler_recv_interval = 0;
  const Evaluation on = EvaluateEngine("sglang", polled, plan);
  const Evaluation off = EvaluateEngine("sglang", every, plan);
  EXPECT_EQ(on.tpot_seconds, off.tpot_seconds);
  absl::StatusOr<CalibrationProfile> profile = FindCalibrationProfile("sglang");
  ASSERT_TRUE(profile.ok()) << profile.status();
  const Calibration& sglang = profile->calibration;
  ASSERT_GT(sglang.ttft_inflight_prefills, 0);
  // One prompt's prefill on the run's one stage, without the per-request
  // time (Evaluation::prefill_seconds includes it).
  const double prefill = off.prefill_seconds - sglang.prefill_overhead_seconds;
  EXPECT_NEAR(on.ttft_seconds - off.ttft_seconds,
              15 * off.decode_iteration_seconds -
                  sglang.ttft_inflight_prefills * 63.0 / 64 * prefill,
              1e-12);
  PlanDims alone = plan;
  alone.batch_size = 1;
  EXPECT_EQ(EvaluateEngine("sglang", polled, alone).ttft_seconds,
            EvaluateEngine("sglang", every, alone).ttft_seconds);
}

// Documented out-of-sample figures (percent): hardware, engine, model,
// weights ("*" for a hardware total), rows, infeasible rows (layouts that do
// not fit memory, e.g. DeepSeek-V3 FP8 on 4 B200s), TPOT MAPE, TTFT MAPE.
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
    {"b200-sxm-180gb", "sglang", "deepseek-v3", "fp4", 45, 0, 14.8, 50.9},
    {"b200-sxm-180gb", "sglang", "deepseek-v3", "fp8", 45, 4, 14.8, 18.7},
    {"b200-sxm-180gb", "sglang", "glm-5", "fp4", 10, 0, 17.5, 15.7},
    {"b200-sxm-180gb", "sglang", "glm-5", "fp8", 18, 0, 10.2, 41.3},
    {"b200-sxm-180gb", "sglang", "qwen3.5-397b-a17b", "bf16", 16, 0, 5.9, 23.2},
    {"b200-sxm-180gb", "sglang", "qwen3.5-397b-a17b", "fp4", 12, 0, 5.1, 42.1},
    {"b200-sxm-180gb", "sglang", "qwen3.5-397b-a17b", "fp8", 46, 0, 18.8, 28.4},
    {"b200-sxm-180gb", "trtllm", "deepseek-v3", "fp4", 54, 0, 13.7, 31.6},
    {"b200-sxm-180gb", "trtllm", "deepseek-v3", "fp8", 39, 5, 17.3, 23.0},
    {"b200-sxm-180gb", "trtllm", "gpt-oss-120b", "fp4", 83, 0, 13.4, 17.6},
    {"b200-sxm-180gb", "trtllm", "llama-3.1-70b", "fp4", 72, 0, 6.4, 22.2},
    {"b200-sxm-180gb", "trtllm", "llama-3.1-70b", "fp8", 72, 0, 10.1, 25.3},
    {"b200-sxm-180gb", "trtllm", "qwen3-32b", "fp4", 1, 0, 18.0, 60.8},
    {"b200-sxm-180gb", "vllm", "gpt-oss-120b", "fp4", 66, 0, 8.3, 15.6},
    {"b200-sxm-180gb", "vllm", "kimi-k2.5", "fp4", 58, 0, 11.4, 30.1},
    {"b200-sxm-180gb", "vllm", "llama-3.1-70b", "fp4", 60, 0, 8.5, 20.2},
    {"b200-sxm-180gb", "vllm", "llama-3.1-70b", "fp8", 60, 0, 7.8, 20.0},
    {"b200-sxm-180gb", "vllm", "minimax-m2.5", "fp4", 72, 0, 18.3, 21.8},
    {"b200-sxm-180gb", "vllm", "minimax-m2.5", "fp8", 128, 0, 13.5, 18.5},
    {"gb200-nvl72", "trtllm", "deepseek-v3", "fp4", 1, 0, 16.0, 11.6},
    {"gb200-nvl72", "trtllm", "qwen3-32b", "fp4", 2, 0, 20.0, 28.6},
    {"b200-sxm-180gb", "*", "*", "*", 957, 9, 12.2, 24.0},
    {"gb200-nvl72", "*", "*", "*", 3, 0, 18.7, 22.9},
    {"b200-sxm-180gb", "*", "attention dp > 1", "*", 19, 0, 23.2, 24.1},
};

// Fit B200 -> test H100 and GB200 (FitOnHardware on the B200 rows).
constexpr Documented kB200ToOthers[] = {
    {"gb200-nvl72", "trtllm", "deepseek-v3", "fp4", 1, 0, 14.3, 11.5},
    {"gb200-nvl72", "trtllm", "qwen3-32b", "fp4", 2, 0, 24.9, 15.1},
    {"h100-sxm-80gb", "sglang", "qwen3-32b", "bf16", 84, 0, 8.1, 16.3},
    {"h100-sxm-80gb", "trtllm", "llama-3.1-8b", "bf16", 177, 0, 9.6, 37.3},
    {"h100-sxm-80gb", "trtllm", "qwen3-235b-a22b", "fp8", 126, 0, 11.3, 12.9},
    {"h100-sxm-80gb", "trtllm", "qwen3-32b", "fp8", 176, 0, 10.0, 17.4},
    {"h100-sxm-80gb", "vllm", "gpt-oss-120b", "fp4", 45, 0, 12.7, 13.5},
    {"h100-sxm-80gb", "vllm", "llama-3.1-70b", "fp8", 45, 0, 11.4, 37.3},
    {"h100-sxm-80gb", "vllm", "qwen3-32b", "bf16", 90, 0, 7.3, 14.9},
    {"gb200-nvl72", "*", "*", "*", 3, 0, 21.4, 13.9},
    {"h100-sxm-80gb", "*", "*", "*", 743, 0, 9.8, 21.9},
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

std::vector<MeasuredRow> H100AndBlackwellRows() {
  std::vector<MeasuredRow> rows = Rows("blackwell_measured_latency.csv");
  for (const char* file : {"h100_measured_latency.csv", "h100_moe_latency.csv",
                           "h100_validation_latency.csv"}) {
    std::vector<MeasuredRow> more = Rows(file);
    rows.insert(rows.end(), more.begin(), more.end());
  }
  return rows;
}

const TransferGroup* HardwareTotal(const TransferReport& report,
                                   const std::string& hardware) {
  for (const TransferGroup& t : report.hardware_totals) {
    if (t.hardware == hardware && t.model == "*") return &t;
  }
  return nullptr;
}

// The bands predictions on other hardware carry are what the harness
// computes from both directions' residuals, and each direction's bands hold
// their share of the other direction's measurements.
TEST(CalibrationTransferTest, CompiledTransferBandsEqualRecomputed) {
  absl::StatusOr<TransferBands> bands =
      ComputeTransferBands(H100AndBlackwellRows(), CalibrationProfiles());
  ASSERT_TRUE(bands.ok()) << bands.status();
  const std::vector<ErrorBand>& compiled = CompiledTransferBands();
  ASSERT_EQ(bands->pooled.size(), compiled.size())
      << ErrorBandsCpp(bands->pooled);
  for (size_t i = 0; i < compiled.size(); ++i) {
    const ErrorBand& b = bands->pooled[i];
    const ErrorBand& c = compiled[i];
    SCOPED_TRACE(absl::StrCat(b.engine, b.moe ? " moe " : " dense ", b.dtype));
    EXPECT_EQ(std::tie(b.engine, b.moe, b.dtype, b.rows),
              std::tie(c.engine, c.moe, c.dtype, c.rows));
    EXPECT_NEAR(b.ttft_low, c.ttft_low, 1e-5 * c.ttft_low);
    EXPECT_NEAR(b.ttft_high, c.ttft_high, 1e-5 * c.ttft_high);
    EXPECT_NEAR(b.tpot_low, c.tpot_low, 1e-5 * c.tpot_low);
    EXPECT_NEAR(b.tpot_high, c.tpot_high, 1e-5 * c.tpot_high);
    // Log-symmetric: the band's ends are reciprocal.
    EXPECT_NEAR(c.ttft_low * c.ttft_high, 1, 1e-5);
    EXPECT_NEAR(c.tpot_low * c.tpot_high, 1, 1e-5);
  }
  // The pooled cells hold both directions' rows (SGLang's dense cell only
  // H100's, its MoE cell only B200's).
  auto pooled_cell_rows = [](const std::vector<ErrorBand>& bands) {
    int rows = 0;
    for (const ErrorBand& b : bands) rows += b.engine == "*" ? b.rows : 0;
    return rows;
  };
  EXPECT_GT(pooled_cell_rows(bands->from_profile_fit), 0);
  EXPECT_GT(pooled_cell_rows(bands->from_band_hw_fit), 0);
  EXPECT_EQ(pooled_cell_rows(bands->pooled),
            pooled_cell_rows(bands->from_profile_fit) +
                pooled_cell_rows(bands->from_band_hw_fit));

  // Held out: the share of `hardware`'s `rows` feasible measurements inside
  // the bands of the other direction's errors, held to 2 points either side
  // of the documented figures (a band that widens is a regression too) and
  // inside the 70-90% the held-out hardware checks accept. A cell of the
  // regime missing from the other direction's rows borrows its parent's band,
  // widened (FindPredictionBand).
  struct Coverage {
    const TransferReport* report;
    const char* hardware;
    int rows;
    double tpot, ttft;
  };
  for (const Coverage& c :
       {// The H100 -> B200 errors' bands on the H100 rows predicted by the
        // B200 fit: documented 88% (TPOT) / 85% (TTFT); TPOT above the
        // 75-85% target (TensorRT-LLM dense BF16 and SGLang dense have no
        // B200 cell and borrow a widened band).
        Coverage{&bands->from_profile_fit_scored, "h100-sxm-80gb", 743, 0.88,
                 0.85},
        // The B200 -> H100 errors' bands on the B200 rows predicted by the
        // compiled-in profiles: documented 84% / 71%; TTFT below the target
        // (H100 has no MLA or attention-dp rows, whose errors are B200's
        // widest, inside cells that do exist).
        Coverage{&bands->from_band_hw_fit_scored, "b200-sxm-180gb", 948, 0.84,
                 0.71}}) {
    SCOPED_TRACE(c.hardware);
    const TransferGroup* t = HardwareTotal(*c.report, c.hardware);
    ASSERT_NE(t, nullptr) << c.report->Markdown();
    EXPECT_EQ(t->rows - t->infeasible, c.rows);
    EXPECT_GE(t->tpot_in_band, c.tpot - 0.02) << c.report->CoverageMarkdown();
    EXPECT_LE(t->tpot_in_band, std::min(c.tpot + 0.02, 0.90))
        << c.report->CoverageMarkdown();
    EXPECT_GE(t->ttft_in_band, c.ttft - 0.02) << c.report->CoverageMarkdown();
    EXPECT_LE(t->ttft_in_band, std::min(c.ttft + 0.02, 0.90))
        << c.report->CoverageMarkdown();
    EXPECT_GE(t->tpot_in_band, 0.70);
    EXPECT_GE(t->ttft_in_band, 0.70);
    std::printf("%s held-out coverage: TPOT %.4f TTFT %.4f\n", c.hardware,
                t->tpot_in_band, t->ttft_in_band);
  }

  // A prediction on B200 takes the compiled bands (with a note); one on H100
  // does not.
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

// The band of log-symmetric errors holds 80% of them around the prediction,
// whichever way they lean.
TEST(CalibrationTransferTest, LogSymmetricBandHoldsEightyPercent) {
  std::vector<MeasuredRow> rows;
  std::vector<RowPrediction> pred;
  // 15 rows all measured faster than predicted: |log r| = 0.1 ... 1.5.
  for (int i = 1; i <= 15; ++i) {
    MeasuredRow r;
    r.engine = "vllm";
    r.catalog_model = "llama-3.1-70b";
    r.fp8 = true;
    r.held_out_model = true;
    r.ttft_seconds = std::exp(-0.1 * i);
    r.tpot_seconds = std::exp(-0.1 * i);
    rows.push_back(r);
    RowPrediction p;
    p.feasible = true;
    p.ttft_seconds = p.tpot_seconds = 1;
    pred.push_back(p);
  }
  const std::vector<ErrorBand> plain = ComputeErrorBands(rows, pred);
  const std::vector<ErrorBand> symmetric =
      ComputeErrorBands(rows, pred, /*log_symmetric=*/true);
  ASSERT_EQ(plain.size(), 3u);
  ASSERT_EQ(symmetric.size(), 3u);
  for (const ErrorBand& b : symmetric) {
    // p80 of 0.1 ... 1.5 (type 7): position 11.2, 1.2 + 0.2 * 0.1.
    EXPECT_NEAR(std::log(b.ttft_high), 1.22, 1e-9);
    EXPECT_NEAR(std::log(b.ttft_low), -1.22, 1e-9);
    EXPECT_NEAR(std::log(b.tpot_high), 1.22, 1e-9);
    int inside = 0;
    for (const MeasuredRow& r : rows) {
      inside += r.ttft_seconds >= b.ttft_low && r.ttft_seconds <= b.ttft_high;
    }
    EXPECT_EQ(inside, 12);  // 80% of 15
  }
  // The plain p10-p90 band lies below 1; the envelope of it and its
  // inverse, exp(-1.36) to exp(1.36), would hold 14 of 15.
  EXPECT_LT(plain.front().ttft_high, 1);
}

// The other direction: profiles fitted on the B200 rows only predict the
// H100 rows (and GB200's).
TEST(CalibrationTransferTest, B200FitOnH100StaysWithinDocumentedErrors) {
  const std::vector<MeasuredRow> rows = H100AndBlackwellRows();
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
}

// The B200 fit keeps SGLang's queue fraction at the wave position a prompt
// holds among prompts that arrive together (1/2): B200's SGLang rows are
// random-length runs but for 12, which do not measure it, while H100's
// fixed-length SGLang runs queue in such waves. Fitted on B200 anyway, the
// fraction falls below 0.35 and the H100 SGLang Qwen3-32B runs are priced
// with too little queue before the first token (TTFT median below 0.7) and
// too much prefill in the decode steps (TPOT median above 1.15); held, both
// medians are within 15%. The other engines' fractions are still fitted.
TEST(CalibrationTransferTest, B200FitKeepsSglangLockstepWaveQueue) {
  std::vector<MeasuredRow> rows = Rows("blackwell_measured_latency.csv");
  std::vector<MeasuredRow> sglang_h100;
  for (const MeasuredRow& r : Rows("h100_measured_latency.csv")) {
    if (r.engine == "sglang") sglang_h100.push_back(r);
  }
  ASSERT_GT(sglang_h100.size(), 50u);
  int random_length = 0, sglang_b200 = 0;
  for (const MeasuredRow& r : rows) {
    if (r.engine != "sglang" || r.hardware != "b200-sxm-180gb") continue;
    ++sglang_b200;
    random_length += r.inferencemax;
  }
  EXPECT_GE(random_length, sglang_b200 - 12);
  struct Medians {
    double queue_fraction, ttft, tpot;
  };
  auto fit = [&](bool fit_fraction) -> Medians {
    FitOptions options = TransferFitOptions();
    options.fit_packed_prefill_queue_fraction = fit_fraction;
    absl::StatusOr<std::vector<CalibrationProfile>> fitted =
        FitOnHardware(rows, "b200-sxm-180gb", options);
    EXPECT_TRUE(fitted.ok()) << fitted.status();
    if (!fitted.ok()) return {};
    double fraction = -1;
    for (const CalibrationProfile& p : *fitted) {
      if (p.engine == "sglang") fraction = p.calibration.prefill_queue_fraction;
      // Engines that mix prefill chunks into decode steps keep theirs fitted.
      if (p.engine != "sglang" && !fit_fraction) {
        EXPECT_NE(p.calibration.prefill_queue_fraction, 0.5) << p.engine;
      }
    }
    absl::StatusOr<TransferReport> report =
        ComputeTransfer(sglang_h100, *fitted, "b200-sxm-180gb");
    EXPECT_TRUE(report.ok()) << report.status();
    if (!report.ok() || report->groups.size() != 1) return {};
    return {fraction, report->groups[0].ttft_median_ratio,
            report->groups[0].tpot_median_ratio};
  };
  const Medians held = fit(false);
  EXPECT_EQ(held.queue_fraction, 0.5);
  EXPECT_GT(held.ttft, 0.85);
  EXPECT_LT(held.ttft, 1.15);
  EXPECT_GT(held.tpot, 0.85);
  EXPECT_LT(held.tpot, 1.15);
  const Medians fitted = fit(true);
  EXPECT_LT(fitted.queue_fraction, 0.35);
  EXPECT_LT(fitted.ttft, 0.7);
  EXPECT_GT(fitted.tpot, 1.15);
}

// A user's 20 runs on Blackwell: FitProfile (the Calibrate RPC's fit) on 20
// B200 runs of one group from the engine's profile, measured on the group's
// other runs. The held-out MAPE after the fit (percent) is documented per
// group; DeepSeek-V3's TPOT is not halved (the fitted parameters cannot
// reach its MoE/MLA decode terms), which the docs say; a regression of more
// than 2 points fails.
TEST(CalibrationTransferTest, TwentyBlackwellRunsOfOneGroup) {
  // B200 rows (GB200's 18 are too few for a group of 20 fit runs).
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
       {Group{"sglang", "deepseek-v3", 15.4, 15.3, 36.8, 22.9},
        Group{"trtllm", "deepseek-v3", 15.3, 11.8, 26.5, 24.1},
        Group{"trtllm", "gpt-oss-120b", 13.6, 13.9, 17.2, 18.2},
        Group{"vllm", "llama-3.1-70b", 8.0, 5.3, 19.7, 13.6},
        // The 2026 models (GLM-5's 28 runs leave too few held out).
        Group{"sglang", "qwen3.5-397b-a17b", 14.9, 13.9, 29.0, 26.9},
        Group{"vllm", "minimax-m2.5", 15.5, 13.2, 19.5, 17.8},
        Group{"vllm", "kimi-k2.5", 11.1, 11.9, 29.9, 28.0}}) {
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
    // Enough held-out runs to measure on (Kimi-K2.5 keeps 38 once the gap
    // analysis' rounded copies count once).
    EXPECT_GE(fit->held_out_rows, 30);
    EXPECT_NEAR(fit->tpot_mape_before, g.tpot_before, 0.1);
    EXPECT_NEAR(fit->ttft_mape_before, g.ttft_before, 0.1);
    EXPECT_LE(fit->tpot_mape_after, g.tpot_after + kRegressionPoints);
    EXPECT_LE(fit->ttft_mape_after, g.ttft_after + kRegressionPoints);
  }
}

}  // namespace
}  // namespace shardplan::simulator
