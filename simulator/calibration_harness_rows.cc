// Calibration harness: measured rows. The one CSV reader of the simulator,
// the aggregated and disaggregated row parsers, each row's Problem + PlanDims
// and its prediction.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "proto/engine_version.h"
#include "proto/status_macros.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/calibration.h"
#include "simulator/calibration_harness.h"
#include "simulator/calibration_transfer.h"
#include "simulator/cost_model.h"
#include "simulator/internal/calibration_harness.h"
#include "simulator/spec.h"
#include "simulator/user_text.h"

namespace shardplan::simulator {
namespace {

// Splits one CSV line (RFC 4180 quotes).
std::vector<std::string> SplitCsvLine(absl::string_view line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted) {
      if (ch == '"') {
        if (i + 1 < line.size() && line[i + 1] == '"') {
          cur.push_back('"');
          ++i;
        } else {
          quoted = false;
        }
      } else {
        cur.push_back(ch);
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur.push_back(ch);
    }
  }
  out.push_back(std::move(cur));
  return out;
}

absl::StatusOr<int> IntField(absl::string_view value, int fallback, int line,
                             absl::string_view column) {
  if (value.empty()) return fallback;
  int v = 0;
  if (!absl::SimpleAtoi(value, &v)) {
    double d = 0;
    if (!absl::SimpleAtod(value, &d) || !std::isfinite(d)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "csv line %d: column %s: not a number: \"%s\"", line, column, value));
    }
    v = static_cast<int>(d);
  }
  return v;
}

constexpr absl::string_view kHeldOutModel = "llama-3.1-8b";

const CalibrationProfile& ProfileFor(
    const std::vector<CalibrationProfile>& profiles, absl::string_view engine) {
  for (const CalibrationProfile& p : profiles) {
    if (p.engine == engine) return p;
  }
  return profiles.front();
}

}  // namespace

namespace internal {

const char* CatalogNameFor(absl::string_view model_path) {
  // DeepSeek-R1 is DeepSeek-V3's architecture with other weights.
  static constexpr std::pair<absl::string_view, const char*> kCatalogNames[] = {
      {"Qwen/Qwen3-32B", "qwen3-32b"},
      {"Qwen/Qwen3-235B-A22B-FP8", "qwen3-235b-a22b"},
      {"Qwen/Qwen3-235B-A22B", "qwen3-235b-a22b"},
      {"meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"},
      {"meta-llama/Llama-3.1-8B", "llama-3.1-8b"},
      {"openai/gpt-oss-120b", "gpt-oss-120b"},
      {"deepseek-ai/DeepSeek-R1", "deepseek-v3"},
      {"deepseek-ai/DeepSeek-V3", "deepseek-v3"},
      {"meta-llama/Llama-3.1-70B", "llama-3.1-70b"},
      {"meta-llama/Llama-3.1-70B-Instruct", "llama-3.1-70b"},
      // The 2026 models, under the paths the Blackwell export gives them
      // (GLM-5 under its former organisation's name) and their own.
      {"moonshotai/Kimi-K2.5", "kimi-k2.5"},
      {"zhipuai/GLM-5", "glm-5"},
      {"zai-org/GLM-5", "glm-5"},
      {"Qwen/Qwen3.5-397B-A17B", "qwen3.5-397b-a17b"},
      {"MiniMaxAI/MiniMax-M2.5", "minimax-m2.5"},
      // NVIDIA's NVFP4 checkpoints: the same architectures (the row's
      // precision column gives the weights' dtype).
      {"nvidia/DeepSeek-R1-NVFP4", "deepseek-v3"},
      {"nvidia/DeepSeek-V3.1-NVFP4", "deepseek-v3"},
      {"nvidia/Qwen3-32B-NVFP4", "qwen3-32b"},
  };
  for (const auto& [path, name] : kCatalogNames) {
    if (path == model_path) return name;
  }
  return nullptr;
}

}  // namespace internal

using internal::CatalogNameFor;
using internal::Mape;

// --- Rows ---

namespace {

// A calibration CSV: column index by name and the non-empty data lines
// (1-based line number, fields).
struct CsvTable {
  std::map<std::string, int> col;
  std::vector<std::pair<int, std::vector<std::string>>> rows;

  // One data line: its number and its fields by column name.
  struct Row {
    int line;
    const std::vector<std::string>* fields;
    std::map<std::string, int>* col;
    // The field of column `name` (a column the table lacks reads column 0:
    // std::map::operator[] adds it).
    const std::string& operator()(const std::string& name) const {
      return (*fields)[(*col)[name]];
    }
  };
  std::vector<Row> Rows() {
    std::vector<Row> out;
    for (const auto& [line, fields] : rows)
      out.push_back({line, &fields, &col});
    return out;
  }
};

// INVALID_ARGUMENT on a missing `required` column or a line whose field count
// differs from the header's.
absl::StatusOr<CsvTable> ReadCsvTable(
    absl::string_view csv_text, const std::vector<std::string>& required) {
  std::vector<absl::string_view> lines = absl::StrSplit(csv_text, '\n');
  if (lines.empty()) return absl::InvalidArgumentError("csv: empty");
  const std::vector<std::string> header =
      SplitCsvLine(absl::StripSuffix(lines[0], "\r"));
  CsvTable table;
  for (size_t i = 0; i < header.size(); ++i)
    table.col[header[i]] = static_cast<int>(i);
  for (const std::string& r : required) {
    if (table.col.find(r) == table.col.end()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("csv: missing column \"%s\"", r));
    }
  }
  for (size_t li = 1; li < lines.size(); ++li) {
    absl::string_view line = absl::StripSuffix(lines[li], "\r");
    if (line.empty()) continue;
    const int line_no = static_cast<int>(li) + 1;
    std::vector<std::string> f = SplitCsvLine(line);
    if (f.size() != header.size()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("csv line %d: %d fields, header has %d", line_no,
                          f.size(), header.size()));
    }
    table.rows.emplace_back(line_no, std::move(f));
  }
  return table;
}

// A row's measured TTFT and TPOT (the CSV's milliseconds, in seconds); false
// when either is missing or not positive.
bool MeasuredLatencies(const std::string& ttft_ms_text,
                       const std::string& tpot_ms_text, double* ttft_seconds,
                       double* tpot_seconds) {
  double ttft_ms = 0, tpot_ms = 0;
  if (!absl::SimpleAtod(ttft_ms_text, &ttft_ms) ||
      !absl::SimpleAtod(tpot_ms_text, &tpot_ms) || !(ttft_ms > 0) ||
      !(tpot_ms > 0)) {
    return false;
  }
  *ttft_seconds = ttft_ms / 1e3;
  *tpot_seconds = tpot_ms / 1e3;
  return true;
}

// The columns an aggregated and a disaggregated row both start with: line, id,
// backend, model path, catalog model and the measured latencies. False (the
// row is skipped) when the model is not in the catalog or a latency is
// missing.
template <typename Row, typename Get>
bool ReadRowStart(int line_no, const Get& get, Row& row) {
  row.line = line_no;
  row.id = get("id");
  row.engine = get("backend");
  row.model_path = get("model_path");
  const char* catalog = CatalogNameFor(row.model_path);
  if (catalog == nullptr ||
      !MeasuredLatencies(get("silicon_ttft_ms"), get("silicon_tpot_ms"),
                         &row.ttft_seconds, &row.tpot_seconds)) {
    return false;
  }
  row.catalog_model = catalog;
  return true;
}

// FP8 weights: the CSV says so in precision or in the GEMM quantisation.
bool Fp8Weights(const std::string& precision,
                const std::string& gemm_quant_mode) {
  return absl::StrContains(precision, "fp8") ||
         absl::StartsWith(gemm_quant_mode, "fp8");
}

// An "agg" row that is a disaggregated deployment's GPU count, not a layout:
// one tensor-parallel group over more GPUs than a node, with the MoE model's
// experts tensor-parallel over all of them and no expert parallelism. The
// GB200 rows of AIConfigurator's InferenceMAX export (source_file=
// 2026-04-06.csv) read so (DeepSeek-R1 at tp 12-72 = moe_tp, concurrency up
// to 8192): InferenceMAX runs every GB200 configuration multinode
// disaggregated (dsr1-fp4-gb200-dynamo-trt: 5 prefill workers of tp 4 and
// one decode worker of tp 8 = 28 GPUs at concurrency 2150), and the same
// file lists each of these layouts again as a disaggregated row with
// prefill_tp_size = decode_tp_size = that count (TPOT equal within 2% where
// the concurrency matches). No engine deploys DeepSeek's 256 experts
// tensor-parallel over 12-72 GPUs; the CSV's README (tp_size and moe_tp_size
// are the instance's layout) does not describe these rows.
// `silicon_concurrency=N` of AIConfigurator's silicon_data_source field; 0
// when it has none.
absl::StatusOr<int> SiliconConcurrency(absl::string_view source, int line) {
  constexpr absl::string_view kKey = "silicon_concurrency=";
  const size_t at = source.find(kKey);
  if (at == absl::string_view::npos) return 0;
  const absl::string_view rest = source.substr(at + kKey.size());
  return IntField(rest.substr(0, rest.find(';')), 0, line,
                  "silicon_data_source");
}

// A run that decoded speculatively although its row does not say so.
// AIConfigurator's InferenceMAX export names each run's container image in
// silicon_data_source, and InferenceMAX gives its DeepSeek-R1 TensorRT-LLM
// configurations on B200 two images: 1.2.0rc6.post2 for the standard
// (one-token) ones and 1.2.0rc6.post3 for the MTP ones (dsr1-fp4-b200-trt
// and dsr1-fp8-b200-trt against dsr1-fp4-b200-trt-mtp and
// dsr1-fp8-b200-trt-mtp, .github/configs/nvidia-master.yaml of
// https://github.com/SemiAnalysisAI/InferenceX at c3ed0f8; "Unified TRT LLM
// image tag across STP and MTP configs (previously used different .postN
// variants)", SemiAnalysisAI/InferenceX issue 135). The rows agree: on the
// 23 FP4 and 16 FP8 layouts and loads measured with both images, .post2's
// TPOT is 1.52x and 1.71x .post3's (median), where the image alone is
// worth ~15%. The cost model has no speculative decoding, so these rows
// measure something it does not predict; a user's own runs (no image in
// the row) are never skipped by this rule.
// Before the split, both kinds ran 1.1.0rc2.post2, and the MTP kind
// (dsr1-fp4-b200-trt-mtp, dsr1-fp8-b200-trt-mtp) was added on 2026-01-14
// (InferenceX commit bf3456727, PR 392, committed 22:26 UTC) with a
// perf-changelog entry that names only the MTP configurations, so that
// day's sweep ran them alone (one copy is stamped 22:26:21 UTC). The
// export's 32 B200 rows measured that day are MTP's by their layouts too
// (FP4 1k/1k at tp 4 ep 4 from 16 clients, where the standard configuration
// keeps ep 1 to 32; FP4 1k/8k at tp 8 ep 8 with 8 and 16 clients, where it
// keeps ep 1 to 16; FP8 1k/1k with attention dp at 128 clients, where the
// standard search ends at 64) and by their decode: TPOT 7.8 / 9.6 ms at 4 / 8
// clients on FP8 tp 8 ep 8 against 14.6 / 15.5 ms for the database's standard
// runs of the same layout and image (2025-12-15), with TTFT 313 / 308 ms
// against 213 / 208 ms.
constexpr absl::string_view kSharedImageMtpSweepDay = "2026-01-14";

std::string MeasuredDate(absl::string_view source);

bool SpeculativeRunOfExport(absl::string_view source, const MeasuredRow& row) {
  // The export spells the registry both ways (nvcr.io#nvidia/...,
  // nvcr.io/nvidia/...).
  constexpr absl::string_view kKey = "image=";
  const size_t at = source.find(kKey);
  if (at == absl::string_view::npos) return false;
  const absl::string_view image =
      source.substr(at + kKey.size())
          .substr(0, source.find(';', at) - at - kKey.size());
  if (row.engine != "trtllm" || row.catalog_model != "deepseek-v3") {
    return false;
  }
  return absl::EndsWith(image, "/tensorrt-llm/release:1.2.0rc6.post3") ||
         (absl::EndsWith(image, "/tensorrt-llm/release:1.1.0rc2.post2") &&
          MeasuredDate(source) == kSharedImageMtpSweepDay);
}

// A run of AIConfigurator's gap analyses (files it collected where its own
// model and the silicon disagree, silicon_data_source
// "source_file=.../aic-auto-gap-analysis/data/<system>/<engine>/<version>/
// <model>.csv") served by TensorRT-LLM 1.3.0rc1: those files' runs do not
// measure steady decoding. GB200 Qwen3-32B BF16 (tp 2): TPOT 8.1 ms and
// 41.9 ms for the same batch of one request per replica (2000/500), 8.2 and
// 21.2 ms (4000/1000), then 50.7, 94.1, 103.2, 133.3 ms at 1, 2, 4, 8
// requests per replica and 71.8 ms at 16 (a 64 GB model on two GPUs streams
// its weights in ~4 ms); B200 DeepSeek-R1 NVFP4 (tp 4 and 8, 4000/1000):
// TPOT 85-92 ms at every load from 5 to 56 requests, where the same layouts'
// runs of 1.1.0rc2, 1.2.0rc6 and the gap analysis of 1.3.0rc5 decode in
// 5.3-21 ms at 4-64 requests. No layout or setting the row carries explains
// either, so they are not a test of the cost model; the later gap analyses
// (1.3.0rc5) agree with the other runs and are kept.
bool UnsteadyGapAnalysisRun(absl::string_view source, const MeasuredRow& row) {
  absl::string_view file = source.substr(0, source.find(';'));
  return row.engine == "trtllm" && row.engine_version == "1.3.0rc1" &&
         absl::StartsWith(file, "source_file=") &&
         absl::StrContains(file, "/aic-auto-gap-analysis/");
}

// A run of AIConfigurator's gap analyses whose load was not recorded: no
// silicon_concurrency in its source and an empty concurrency in its id
// ("..._agg_4000x1000_c_tp8_..." where the other gap-analysis runs say
// "_c320_"). All such rows are one campaign (gtl_job_id 23364591, Dynamo
// 0.8.0 images, 4000/1000) on H100 and GB200, and their batch_size is not
// the load they measured: it doubles with tp (H100 TensorRT-LLM Qwen3-32B
// 32, 64, 128, 224 at tp 1-8; GB200 144, 256, 384 at tp 1-4), and the
// latencies read at it go both ways. On H100 the four TensorRT-LLM Qwen3-32B
// runs decode 1.25-1.43x faster than predicted at that batch, where the
// model's 176 other runs of that engine and model have a median of 0.91 and
// a p90 of 1.05. On GB200 and H100 MoE runs the mean TTFT exceeds a whole
// request's decode (DeepSeek-R1 tp 8 ep 8 "28 requests": 39.7 s against
// 1000 x 31.5 ms; Qwen3-32B tp 2 "256": 53.9 s against 53.5 s; Qwen3-235B
// tp 4 "28": 29.0 s against 23.2 s): a closed loop whose clients all fit
// the batch never waits for another request to finish, so more requests
// than batch_size were queued. The same GB200 layout of the 1.3.0rc5 gap
// analysis, whose load is recorded (DeepSeek-V3.1 NVFP4, tp 8 ep 8, 40
// requests per replica), measures TTFT 0.35 s and TPOT 17.3 ms.
bool GapAnalysisRunWithoutLoad(absl::string_view source) {
  absl::string_view file = source.substr(0, source.find(';'));
  return absl::StartsWith(file, "source_file=") &&
         absl::StrContains(file, "/aic-auto-gap-analysis/") &&
         !absl::StrContains(source, "silicon_concurrency=");
}

bool DisaggregatedRunExportedAsAgg(const MeasuredRow& row, int node_gpus) {
  if (row.moe_ep > 1 || row.attention_dp > 1 || row.moe_tp != row.tp)
    return false;
  const absl::StatusOr<shardplan::v1::ModelSpec> model =
      FindCatalogModel(row.catalog_model);
  return model.ok() && model->num_experts() > 0 && row.tp * row.pp > node_gpus;
}

// The same export writes a single-node expert-parallel run of g GPUs with
// expert parallelism e (InferenceMAX's tp g, ep e, with or without attention
// dp) as moe_tp_size g, moe_ep_size e and tp_size (or attention_dp_size) g x
// e: a layout of g x e GPUs over several nodes. The file proves it: the
// same measurement (TTFT and TPOT to 9 digits) appears once as "tp 1, dp 8,
// moe_tp 1, moe_ep 8, batch 32" and once as "tp 1, dp 64, moe_tp 8, moe_ep
// 8, batch 4" (TensorRT-LLM 1.2.0rc6.post3 DeepSeek-R1 FP4, 8192/1024, 256
// requests), and "tp 64 = moe_tp 8 x moe_ep 8" rows measure what 8 GPUs do
// (TPOT 8.0 ms at 4 requests, as the tp 8 rows). Read back as g GPUs:
// attention tp (or dp) g, experts ep e x moe_tp g / e; the concurrency,
// batch_size x attention_dp_size as exported, is kept. Applies only to
// layouts larger than a node (a genuine mixed layout inside a node, e.g. tp
// 8 = moe_tp 4 x moe_ep 2, reads the same as the export's and is kept).
// False when the row is not such an export.
bool NormaliseExportedExpertLayout(MeasuredRow* row, int node_gpus) {
  const int claimed = row->tp * row->attention_dp;
  const int g = row->moe_tp, e = row->moe_ep;
  if (g <= 1 || e <= 1 || claimed != g * e || claimed <= node_gpus ||
      (row->tp > 1 && row->attention_dp > 1) || g % e != 0) {
    return false;
  }
  if (row->attention_dp > 1) {
    row->attention_dp = g;
  } else {
    row->tp = g;
  }
  row->moe_tp = g / e;
  return true;
}

// The export writes a vLLM run of tensor parallelism g with expert
// parallelism (vLLM's --enable-expert-parallel: experts over the g tp ranks,
// no attention dp) as tp_size g, attention_dp_size g, moe_ep_size g x g and
// batch_size concurrency / g. The file proves it: its 15 Kimi-K2.5 NVFP4
// rows "tp 4, dp 4, moe_ep 16" (vLLM 0.17.0, db-dump config 635) carry the
// TTFT and TPOT, to the digits AIConfigurator's own gap analysis prints, of
// that analysis's "tp4_ep4" runs ("tp 4, dp 1, moe_ep 4", 1024/1024 at 64
// requests: 332.54 ms and 27.87 ms both), and its MiniMax-M2.5 FP8 "tp 2,
// dp 2, moe_ep 4" rows (vLLM 0.19.0, config 690) repeat the "tp2_ep2" runs
// of the same workflow within 1.2% at every load from 4 to 256 requests.
// InferenceX's scripts for both launch `vllm serve --tensor-parallel-size
// $TP --enable-expert-parallel` without --data-parallel-size
// (benchmarks/single_node/kimik2.5_fp4_b200.sh and minimaxm2.5_fp8_b200.sh
// of SemiAnalysisAI/InferenceX). Read back as tp g, ep g on g GPUs holding
// the exported concurrency. False when the row is not such an export.
bool NormaliseExportedVllmExpertLayout(MeasuredRow* row) {
  const int g = row->tp;
  if (row->engine != "vllm" || g <= 1 || row->attention_dp != g ||
      row->moe_tp != 1 || row->moe_ep != g * g) {
    return false;
  }
  row->attention_dp = 1;
  row->moe_ep = g;
  return true;
}

// AIConfigurator's export names the source of each run in
// `silicon_data_source`: its own database dumps ("db-dump/..."), its gap
// analyses ("source_file=/Users/.../aic-auto-gap-analysis/...") and the
// InferenceMAX result tables it imported ("source_file=2026-04-06.csv": the
// file of the day, whose GB200 rows are InferenceMAX's disaggregated
// configurations, DisaggregatedRunExportedAsAgg above).
bool InferenceMaxExport(absl::string_view source) {
  absl::string_view file = source.substr(0, source.find(';'));
  if (!absl::ConsumePrefix(&file, "source_file=") ||
      !absl::ConsumeSuffix(&file, ".csv") || file.size() != 10) {
    return false;
  }
  for (size_t i = 0; i < file.size(); ++i) {
    const bool dash = i == 4 || i == 7;
    if (dash ? file[i] != '-' : !absl::ascii_isdigit(file[i])) return false;
  }
  return true;
}

// "YYYY-MM-DD" of the `measured=` field of silicon_data_source
// ("measured=2025-11-10T00:00:00.000Z"); empty when there is none.
std::string MeasuredDate(absl::string_view source) {
  constexpr absl::string_view kKey = "measured=";
  const size_t at = source.find(kKey);
  if (at == absl::string_view::npos) return "";
  const absl::string_view date = source.substr(at + kKey.size(), 10);
  for (size_t i = 0; i < date.size(); ++i) {
    const bool dash = i == 4 || i == 7;
    if (dash ? date[i] != '-' : !absl::ascii_isdigit(date[i])) return "";
  }
  return date.size() == 10 ? std::string(date) : "";
}

// A row that no run of its recorded layout, precision, lengths and request
// count can produce: the cost model at the datasheet peak (every efficiency
// 1, no overhead, latency or wait beyond the prefills' queue) puts the
// requests' prefill work either inside their decode (TPOT) or, as far as
// they arrive together, in front of their first token (TTFT; the queue
// fraction q); the row is below both floors for every q. Such a row measured
// something else (fewer requests per instance, or prompts served from a
// prefix cache) and is not a test of the model. vLLM 0.12.0 Qwen3-32B FP8 on
// two H100s (AIConfigurator's Dynamo gap analysis, 4000/1000, 48 requests):
// TPOT 11.6 ms where interleaved prefills make the floor 14.3 ms, and TTFT
// 185 ms, one uncontested prefill, where queued ones would add seconds.
bool BelowPeakRateFloors(const MeasuredRow& row) {
  if (!(row.tpot_seconds > 0) || !(row.ttft_seconds > 0)) return false;
  const absl::StatusOr<Problem> problem = RowProblem(row);
  if (!problem.ok()) return false;
  Calibration peak;
  peak.gemm_efficiency = 1;
  peak.gemm_half_efficiency_tokens = 0;
  peak.hbm_efficiency = 1;
  peak.attention_efficiency = 1;
  peak.intra_node_efficiency = 1;
  peak.inter_node_efficiency = 1;
  peak.collective_latency_scale = 0;
  peak.decode_step_overhead_seconds = 0;
  peak.layer_overhead_seconds = 0;
  peak.prefill_overhead_seconds = 0;
  peak.ttft_wait_iterations = 0;
  peak.ttft_inflight_prefills = 0;
  peak.fp4_dequant_bytes_per_weight = 0.5;  // a pure 4-bit read
  constexpr int kSteps = 20;
  for (int i = 0; i <= kSteps; ++i) {
    peak.prefill_queue_fraction = static_cast<double>(i) / kSteps;
    absl::StatusOr<std::unique_ptr<const CostModel>> model =
        CostModel::Create(*problem, peak);
    if (!model.ok()) return false;
    const Evaluation e = (*model)->Evaluate(RowPlan(row));
    if (!(e.tpot_seconds > 0) || !(e.ttft_seconds > 0)) return false;
    if (row.tpot_seconds >= e.tpot_seconds &&
        row.ttft_seconds >= e.ttft_seconds) {
      return false;
    }
  }
  return true;
}

}  // namespace

absl::StatusOr<ParsedMeasurements> ParseMeasurements(absl::string_view csv_text,
                                                     bool validation_only) {
  ASSIGN_OR_RETURN(
      CsvTable table,
      ReadCsvTable(
          csv_text,
          {"id", "backend", "backend_version", "model_path", "precision",
           "mode", "isl", "osl", "gemm_quant_mode", "batch_size", "tp_size",
           "pp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size",
           "silicon_ttft_ms", "silicon_tpot_ms"}));
  ParsedMeasurements out;
  int data_index = 0;
  for (const CsvTable::Row& get : table.Rows()) {
    const int line_no = get.line;
    const int index = data_index++;
    if (get("mode") != "agg") {
      ++out.skipped_disaggregated;
      continue;
    }
    MeasuredRow row;
    row.engine_version = get("backend_version");
    if (!ReadRowStart(line_no, get, row)) {
      ++out.skipped_other;
      continue;
    }
    if (table.col.count("silicon_data_source") != 0 &&
        SpeculativeRunOfExport(get("silicon_data_source"), row)) {
      ++out.skipped_speculative;
      continue;
    }
    if (table.col.count("silicon_data_source") != 0 &&
        UnsteadyGapAnalysisRun(get("silicon_data_source"), row)) {
      ++out.skipped_unsteady;
      continue;
    }
    if (table.col.count("silicon_data_source") != 0 &&
        GapAnalysisRunWithoutLoad(get("silicon_data_source"))) {
      ++out.skipped_unrecorded_load;
      continue;
    }
    if (table.col.count("system") != 0) {
      absl::StatusOr<std::string> hardware =
          CatalogHardwareOfRun(get("system"));
      if (!hardware.ok()) {
        ++out.skipped_other;
        continue;
      }
      if (IsHeldOutHardware(*hardware)) {
        ++out.skipped_held_out_hardware;
        continue;
      }
      row.hardware = *std::move(hardware);
    }
    if (table.col.count("silicon_data_source") != 0) {
      row.inferencemax = InferenceMaxExport(get("silicon_data_source"));
      row.measured_date = MeasuredDate(get("silicon_data_source"));
    }
    row.fp8 = Fp8Weights(get("precision"), get("gemm_quant_mode"));
    // 4-bit weights: FP4, or INT4 weight-only (Kimi-K2.5's release), which
    // streams the same bytes and is planned as fp4 like the catalog's entry.
    row.fp4 = get("precision") == "fp4" || get("precision") == "int4" ||
              absl::StrContains(get("gemm_quant_mode"), "fp4") ||
              absl::StrContains(get("gemm_quant_mode"), "int4");
    ASSIGN_OR_RETURN(row.isl, IntField(get("isl"), 0, line_no, "isl"));
    ASSIGN_OR_RETURN(row.osl, IntField(get("osl"), 0, line_no, "osl"));
    int rank_batch = 0;
    ASSIGN_OR_RETURN(rank_batch,
                     IntField(get("batch_size"), 0, line_no, "batch_size"));
    ASSIGN_OR_RETURN(row.tp, IntField(get("tp_size"), 1, line_no, "tp_size"));
    ASSIGN_OR_RETURN(row.pp, IntField(get("pp_size"), 1, line_no, "pp_size"));
    ASSIGN_OR_RETURN(row.attention_dp, IntField(get("attention_dp_size"), 1,
                                                line_no, "attention_dp_size"));
    ASSIGN_OR_RETURN(row.moe_tp,
                     IntField(get("moe_tp_size"), 1, line_no, "moe_tp_size"));
    ASSIGN_OR_RETURN(row.moe_ep,
                     IntField(get("moe_ep_size"), 1, line_no, "moe_ep_size"));
    row.tp = std::max(1, row.tp);
    row.pp = std::max(1, row.pp);
    row.attention_dp = std::max(1, row.attention_dp);
    row.moe_tp = std::max(1, row.moe_tp);
    row.moe_ep = std::max(1, row.moe_ep);
    // AIConfigurator's batch_size is the batch of one attention dp rank: its
    // agg estimate scales throughput and concurrency by attention_dp_size
    // ("correct output_throughput and concurrency for attention dp (global
    // batch)", run_agg in aic-core/src/aiconfigurator_core/sdk/backends/
    // base_backend.py:1361-1364 of ai-dynamo/aiconfigurator 095f58a51), and
    // its deployment adapters derive it as concurrency // (replicas *
    // attention_dp) (sdk/config_adapter/dynamo.py:658-664); the rows' own
    // silicon_concurrency is batch_size x attention_dp_size. The instance
    // measured held that many requests.
    row.concurrency = rank_batch * row.attention_dp;
    if (row.isl <= 0 || row.osl <= 0 || rank_batch <= 0) {
      ++out.skipped_other;
      continue;
    }
    {
      const absl::StatusOr<shardplan::v1::HardwareSpec> hardware =
          FindCatalogHardware(row.hardware);
      const int node_gpus =
          hardware.ok() ? std::max(1, hardware->default_gpus_per_node()) : 8;
      if (DisaggregatedRunExportedAsAgg(row, node_gpus)) {
        ++out.skipped_disaggregated;
        continue;
      }
      if (NormaliseExportedExpertLayout(&row, node_gpus) ||
          NormaliseExportedVllmExpertLayout(&row)) {
        ++out.exported_layouts_read_as_node;
        // The export's own request count where it gives one: most of its
        // rows have batch_size x attention_dp_size = silicon_concurrency,
        // one (TensorRT-LLM 1.1.0rc2.post2 DeepSeek-R1 FP4 8192/1024,
        // "batch 32 x dp 64") says 32.
        if (table.col.count("silicon_data_source") != 0) {
          int exported = 0;
          ASSIGN_OR_RETURN(exported, SiliconConcurrency(
                                         get("silicon_data_source"), line_no));
          if (exported > 0) row.concurrency = exported;
        }
        rank_batch = std::max(
            1, (row.concurrency + row.attention_dp - 1) / row.attention_dp);
      }
    }
    row.held_out_model = validation_only || row.catalog_model == kHeldOutModel;
    row.held_out_row = !row.held_out_model && index % 4 == 3;
    // The engine queues past this many requests per rank.
    if (rank_batch > limits::kMaxFitConcurrency) {
      out.high_concurrency_rows.push_back(std::move(row));
      continue;
    }
    if (BelowPeakRateFloors(row)) {
      ++out.skipped_below_peak_floors;
      continue;
    }
    out.rows.push_back(std::move(row));
  }
  return out;
}

int RowReplicaConcurrency(const MeasuredRow& row) {
  // A dense model's dp ranks are independent copies (the cost model's
  // replicas), each with its share; an MoE instance is one replica.
  const absl::StatusOr<shardplan::v1::ModelSpec> spec =
      FindCatalogModel(row.catalog_model);
  const bool moe = row.moe_ep > 1 || row.moe_tp > 1 ||
                   (spec.ok() && spec->num_experts() > 0);
  const int copies = moe ? 1 : std::max(1, row.attention_dp);
  return std::max(1, (row.concurrency + copies - 1) / copies);
}

namespace {

// What InferenceMAX's harness and server scripts set for a run
// (MeasuredRow::inferencemax), from the scripts of its B200 and H100 runs in
// https://github.com/SemiAnalysisAI/InferenceX (benchmarks/: vLLM
// 70b_fp8_b200_docker.sh, 70b_fp4_b200_docker.sh, gptoss_fp4_b200.sh;
// TensorRT-LLM 70b_fp8_b200_trt_slurm.sh, 70b_fp4_b200_trt_slurm.sh,
// gptoss_fp4_b200_trt.sh; SGLang dsr1_fp8_b200.sh, dsr1_fp4_b200.sh).
struct InferenceMaxSettings {
  // benchmark_serving.py --dataset-name random --random-range-ratio 0.8:
  // input and output lengths uniform in [0.8 L, L], mean 0.9 L (the same
  // harness as ../shared/calibration/inferencemax_h100.csv, whose README
  // quotes it; the recipes of the same CI give random_range_ratio 0.8).
  double length_scale = 1;
  bool random_lengths = false;
  // Every script above serves an FP8 KV cache: vLLM `kv-cache-dtype: fp8`,
  // TensorRT-LLM `kv_cache_config: dtype: fp8`, SGLang `--kv-cache-dtype
  // fp8_e4m3`, whatever the checkpoint's own default; so do its H100 runs
  // of Llama-3.1-70B (70b_fp8_h100_slurm.sh), but not those of gpt-oss-120b
  // (gptoss_fp4_h100.sh sets no KV dtype).
  bool fp8_kv_cache = false;
  // TensorRT-LLM Llama-3.x-70B at 1k/1k below tp 8 (both 70b_*_b200_trt
  // scripts): `batch_wait_timeout_iters: 20`, `batch_wait_max_tokens_ratio:
  // 0.9`; DeepSeek-R1 FP8 at 1k/1k with 64-255 clients (dsr1_fp8_b200_trt.sh,
  // DELAY_BATCHING): `batch_wait_timeout_iters: 40`,
  // `batch_wait_max_tokens_ratio: 0.8` of max_num_tokens 8,192, which the
  // ~lambda W = 3-6 held 1k prompts do not reach. TensorRT-LLM skips batch
  // waiting under attention dp (PyExecutor._schedule: `not
  // self.enable_attention_dp and self.enable_batch_waiting`), so the
  // attention-dp runs of that script do not wait. Every other run keeps
  // TensorRT-LLM's default 0.
  int batch_wait_timeout_iterations = 0;
  // TensorRT-LLM attention_dp_config on the attention-dp runs: the DeepSeek-R1
  // scripts (dsr1_fp8_b200_trt.sh, dsr1_fp4_b200_trt.sh) set
  // `enable_balance: true, timeout_iters: 60, batching_wait_iters: 0`;
  // gptoss_fp4_b200_trt.sh sets `enable_balance: true` alone, keeping the
  // AttentionDpConfig defaults timeout_iters 50, batching_wait_iters 10
  // (tensorrt_llm/llmapi/llm_args.py, NVIDIA/TensorRT-LLM). 0: balance off.
  int attention_dp_balance_timeout_iterations = 0;
  int attention_dp_balance_batching_wait_iterations = 0;
  // TensorRT-LLM `num_postprocess_workers`: 2 in the Llama-70B scripts, 4 in
  // gptoss_fp4_b200_trt.sh, unset (0) in the DeepSeek-R1 ones
  // (dsr1_fp4_b200_trt.sh, dsr1_fp8_b200_trt.sh).
  int trtllm_postprocess_workers = 0;
  // SGLang --scheduler-recv-interval: 30 from 16 clients up, 10 below, in
  // the DeepSeek-R1 scripts (dsr1_fp8_b200.sh since 2025-09-23,
  // dsr1_fp4_b200.sh since 2025-09-21; the FP8 script's tp 4 lane, 8k/1k
  // only, keeps 10) and the Qwen3.5 ones (qwen3.5_bf16_b200.sh from
  // 2026-02-19, before its runs of 2026-02-20; qwen3.5_fp8_b200.sh from its
  // first version of 2026-03-03), read in the repository's history
  // (benchmarks/single_node/ since 2026-02-19, benchmarks/ before). The
  // GLM-5 scripts set none before 2026-04-09, after their runs. 0: SGLang's
  // default, every iteration.
  int sglang_scheduler_recv_interval = 0;
};

// AIConfigurator's own runs deploy what its generator writes: the precision
// profile's kvcache_quant_mode (fp8 for its "fp8" and "nvfp4" profiles,
// bfloat16 for "bfloat16" and "mxfp4"; `_quants` in
// src/aiconfigurator/sdk/task.py) becomes every engine's KV-cache dtype
// (vLLM and SGLang --kv-cache-dtype, TensorRT-LLM kv_cache_config.dtype;
// `kv_cache_dtype` in generator/module_bridge.py and
// generator/config/backend_config_mapping.yaml, ai-dynamo/aiconfigurator).
// gpt-oss-120b is an MXFP4 checkpoint (bfloat16 KV cache). InferenceMAX's
// runs follow their own scripts (InferenceMaxSettingsOf).
bool AicFp8KvCache(const MeasuredRow& row) {
  if (row.inferencemax || !(row.fp8 || row.fp4)) return false;
  return row.engine == "trtllm" || row.catalog_model != "gpt-oss-120b";
}

InferenceMaxSettings InferenceMaxSettingsOf(const MeasuredRow& row) {
  InferenceMaxSettings s;
  if (!row.inferencemax) return s;
  s.length_scale = 0.9;
  s.random_lengths = true;
  // gptoss_fp4_h100.sh alone leaves vLLM's default (the model dtype).
  s.fp8_kv_cache =
      !(row.hardware == "h100-sxm-80gb" && row.catalog_model == "gpt-oss-120b");
  if (row.engine == "sglang" && row.hardware == "b200-sxm-180gb" &&
      (row.catalog_model == "deepseek-v3" ||
       row.catalog_model == "qwen3.5-397b-a17b")) {
    const bool fp8_tp4_lane = row.catalog_model == "deepseek-v3" && row.fp8 &&
                              !row.fp4 && row.tp == 4;
    s.sglang_scheduler_recv_interval =
        row.concurrency >= 16 && !fp8_tp4_lane ? 30 : 10;
  }
  if (row.engine != "trtllm") return s;
  if (row.catalog_model == "llama-3.1-70b") {
    s.trtllm_postprocess_workers = 2;
  } else if (row.catalog_model == "gpt-oss-120b") {
    s.trtllm_postprocess_workers = 4;
  }
  if (row.catalog_model == "llama-3.1-70b" && row.isl == 1024 &&
      row.osl == 1024 && row.tp < 8) {
    s.batch_wait_timeout_iterations = 20;
  }
  // The DeepSeek and gpt-oss TensorRT-LLM scripts above are B200 ones; the
  // GB200 rows of the export are disaggregated configurations.
  if (row.hardware != "b200-sxm-180gb") return s;
  const bool deepseek = row.catalog_model == "deepseek-v3";
  if (deepseek && row.fp8 && !row.fp4 && row.attention_dp <= 1 &&
      row.isl == 1024 && row.osl == 1024 && row.concurrency >= 64 &&
      row.concurrency < 256) {
    s.batch_wait_timeout_iterations = 40;
  }
  if (row.attention_dp > 1) {
    if (deepseek) {
      s.attention_dp_balance_timeout_iterations = 60;
    } else if (row.catalog_model == "gpt-oss-120b") {
      s.attention_dp_balance_timeout_iterations = 50;
      s.attention_dp_balance_batching_wait_iterations = 10;
    }
  }
  return s;
}

// vLLM's all-reduce + RMSNorm fusion on the run (WorkloadDims::
// fused_all_reduce_max_bytes): the largest tensor-parallel all-reduce, in
// bytes, that runs FlashInfer's trtllm_allreduce_fusion kernel (TensorRT-LLM's
// allreduce-fusion kernel, include/flashinfer/comm/trtllm_allreduce_fusion.cuh
// of flashinfer-ai/flashinfer); larger ones fall back to vLLM's own
// all-reduce (call_trtllm_fused_allreduce_norm, vllm/compilation/
// collective_fusion.py). 0 where the run did not fuse. The pass needs tp > 1
// on Hopper or Blackwell; vLLM 0.16-0.19 also skip it under data parallelism
// (enable_allreduce_rms_fusion, vllm/config/vllm.py). The runs that have it:
// - InferenceMAX's vLLM Llama-3.1-70B B200 runs set enable_fi_allreduce_fusion
//   with VLLM_FLASHINFER_ALLREDUCE_FUSION_THRESHOLDS_MB {"2":32,"4":32,"8":8}
//   (benchmarks/70b_fp8_b200_docker.sh, 70b_fp4_b200_docker.sh of
//   https://github.com/SemiAnalysisAI/InferenceX); its gpt-oss-120b B200 runs
//   set fuse_allreduce_rms (benchmarks/gptoss_fp4_b200.sh) with the default
//   thresholds.
// - From vLLM 0.16.0 on the -O2 default turns it on (vllm-project/vllm pull
//   34299, merged 2026-02-11; "Default at O2 (Hopper/Blackwell + TP > 1)" in
//   https://docs.vllm.ai/en/v0.18.2/design/fusions/), except for DeepSeek-V3
//   NVFP4 checkpoints (pull 34392: accuracy), so Kimi-K2.5 NVFP4 is left out.
//   Default thresholds (PassConfig.fi_allreduce_fusion_max_size_mb,
//   vllm/config/compilation.py): Hopper 64 / 2 / 1 MB and Blackwell
//   64 / 32 / 1 MB at tp 2 / 4 / 8.
// vLLM 0.15.1 and older, and the runs whose scripts set nothing (the H100
// Llama-3.1-70B ones, of no recorded version), keep the custom all-reduce.
double VllmFusedAllReduceMaxBytes(const MeasuredRow& row) {
  if (row.engine != "vllm" || row.tp < 2 || row.attention_dp > 1 ||
      row.pp > 1) {
    return 0;
  }
  const bool blackwell =
      row.hardware == "b200-sxm-180gb" || row.hardware == "gb200-nvl72";
  if (!blackwell && row.hardware != "h100-sxm-80gb") return 0;
  constexpr double kMiB = 1024.0 * 1024.0;
  if (row.inferencemax && blackwell && row.catalog_model == "llama-3.1-70b") {
    return (row.tp >= 8 ? 8 : 32) * kMiB;
  }
  const double default_bytes = (row.tp <= 2   ? 64
                                : row.tp <= 4 ? (blackwell ? 32 : 2)
                                              : 1) *
                               kMiB;
  if (row.inferencemax && blackwell && row.catalog_model == "gpt-oss-120b") {
    return default_bytes;
  }
  const bool default_on = absl::StartsWith(row.engine_version, "nightly") ||
                          (!row.engine_version.empty() &&
                           CompareVersions(row.engine_version, "0.16.0") >= 0);
  if (!default_on || (row.catalog_model == "kimi-k2.5" && row.fp4)) return 0;
  return default_bytes;
}

}  // namespace

absl::StatusOr<Problem> RowProblem(const MeasuredRow& row) {
  shardplan::v1::ModelSource model;
  model.set_catalog_name(row.catalog_model);
  shardplan::v1::ClusterSpec cluster;
  cluster.set_hardware(row.hardware);
  const int gpus = row.tp * row.pp * row.attention_dp;
  cluster.set_num_gpus(gpus);
  ASSIGN_OR_RETURN(shardplan::v1::HardwareSpec hardware,
                   FindCatalogHardware(row.hardware));
  cluster.set_gpus_per_node(
      std::min(std::max(1, hardware.default_gpus_per_node()), gpus));
  shardplan::v1::Workload workload;
  const InferenceMaxSettings settings = InferenceMaxSettingsOf(row);
  workload.set_input_tokens(
      static_cast<int>(std::lround(row.isl * settings.length_scale)));
  workload.set_output_tokens(
      static_cast<int>(std::lround(row.osl * settings.length_scale)));
  workload.set_concurrency(RowReplicaConcurrency(row));
  workload.set_weight_dtype(row.fp4 ? "fp4" : row.fp8 ? "fp8" : "bf16");
  // The KV-cache dtype the run deployed (AicFp8KvCache, InferenceMAX's
  // scripts). The measured rows agree: TensorRT-LLM Qwen3-32B FP8 on one H100
  // runs 64 requests of 4.2k tokens without queueing, vLLM MiniMax-M2.5 FP8 on
  // two B200s 64 of 9.2k, which a bf16 cache cannot hold. NVIDIA's ModelOpt
  // NVFP4 checkpoints also set kv_cache_quant_algo FP8 in
  // hf_quant_config.json.
  workload.set_kv_cache_dtype(
      settings.fp8_kv_cache || AicFp8KvCache(row) ? "fp8" : "bf16");
  ASSIGN_OR_RETURN(Problem problem, ProblemFromProto(model, cluster, workload));
  problem.workload.batch_wait_timeout_iterations =
      settings.batch_wait_timeout_iterations;
  problem.workload.attention_dp_balance_timeout_iterations =
      settings.attention_dp_balance_timeout_iterations;
  problem.workload.attention_dp_balance_batching_wait_iterations =
      settings.attention_dp_balance_batching_wait_iterations;
  problem.workload.detokenises_off_executor =
      settings.trtllm_postprocess_workers > 0;
  problem.workload.lengths_desynchronise = settings.random_lengths;
  problem.workload.fused_all_reduce_max_bytes = VllmFusedAllReduceMaxBytes(row);
  problem.workload.scheduler_recv_interval =
      settings.sglang_scheduler_recv_interval;
  return problem;
}

PlanDims RowPlan(const MeasuredRow& row) {
  PlanDims plan;
  plan.dp = row.attention_dp;
  plan.tp = row.tp;
  plan.pp = row.pp;
  plan.ep = row.moe_ep;  // 1 for dense models
  plan.dims = MegatronShardDims();
  plan.batch_size = RowReplicaConcurrency(row);
  return plan;
}

namespace {

// Predicts each row (aggregated or disaggregated) with its engine's profile.
template <typename Row, typename ProblemOf, typename PlanOf>
absl::StatusOr<std::vector<RowPrediction>> PredictEachRow(
    const std::vector<Row>& rows,
    const std::vector<CalibrationProfile>& profiles, ProblemOf problem_of,
    PlanOf plan_of, bool engine_agnostic_too = false) {
  if (profiles.empty())
    return absl::InvalidArgumentError("no calibration profiles");
  // As DefaultCalibration() is made from the compiled-in profiles.
  Calibration agnostic = ProfileFor(profiles, "trtllm").calibration;
  agnostic.disagg_request_overhead_seconds = kEngineAgnosticDisaggOverheadS;
  agnostic.kv_pool_from_free_memory = false;
  std::vector<RowPrediction> out;
  out.reserve(rows.size());
  for (const Row& row : rows) {
    ASSIGN_OR_RETURN(Problem problem, problem_of(row));
    ASSIGN_OR_RETURN(
        std::unique_ptr<const CostModel> model,
        CostModel::Create(problem,
                          ProfileFor(profiles, row.engine).calibration));
    const PlanDims plan = plan_of(row);
    RETURN_IF_ERROR(Annotate(model->ValidatePlan(plan),
                             absl::StrCat("csv line ", row.line)));
    const Evaluation e = model->Evaluate(plan);
    RowPrediction p{e.ttft_seconds,
                    e.tpot_seconds,
                    e.feasible,
                    e.prefill_seconds,
                    e.decode_iteration_seconds,
                    e.queue_wait_seconds};
    if (engine_agnostic_too) {
      ASSIGN_OR_RETURN(std::unique_ptr<const CostModel> agnostic_model,
                       CostModel::Create(std::move(problem), agnostic));
      const Evaluation a = agnostic_model->Evaluate(plan);
      p.agnostic_ttft_seconds = a.ttft_seconds;
      p.agnostic_tpot_seconds = a.tpot_seconds;
      p.agnostic_feasible = a.feasible;
    }
    out.push_back(p);
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<RowPrediction>> PredictRows(
    const std::vector<MeasuredRow>& rows,
    const std::vector<CalibrationProfile>& profiles) {
  return PredictEachRow(rows, profiles, RowProblem, RowPlan);
}

absl::StatusOr<std::vector<RowPrediction>> PredictRowsForBands(
    const std::vector<MeasuredRow>& rows,
    const std::vector<CalibrationProfile>& profiles) {
  return PredictEachRow(rows, profiles, RowProblem, RowPlan,
                        /*engine_agnostic_too=*/true);
}

// --- Disaggregated rows ---

namespace {

// A pool's layout; the vLLM quirk (tp_size 1 beside moe_tp 2 or 4, see the
// CSV's README) resolved as tp = moe_tp * moe_ep / attention_dp.
MeasuredPool ResolvePool(MeasuredPool pool) {
  pool.batch_size = std::max(0, pool.batch_size);
  pool.workers = std::max(1, pool.workers);
  pool.tp = std::max(1, pool.tp);
  pool.pp = std::max(1, pool.pp);
  pool.attention_dp = std::max(1, pool.attention_dp);
  pool.moe_tp = std::max(1, pool.moe_tp);
  pool.moe_ep = std::max(1, pool.moe_ep);
  const int moe_ranks = pool.moe_tp * pool.moe_ep;
  if (pool.tp == 1 && moe_ranks > pool.attention_dp &&
      moe_ranks % pool.attention_dp == 0) {
    pool.tp = moe_ranks / pool.attention_dp;
  }
  return pool;
}

bool SamePool(const MeasuredPool& a, const MeasuredPool& b) {
  return a.batch_size == b.batch_size && a.workers == b.workers &&
         a.tp == b.tp && a.pp == b.pp && a.attention_dp == b.attention_dp &&
         a.moe_tp == b.moe_tp && a.moe_ep == b.moe_ep;
}

// Equal to the last digits a re-export changes (13693.258112009305 and
// ...304 are one number).
bool SameMeasuredValue(double a, double b) {
  return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b));
}

// The same run exported more than once (the source merges database dumps
// and CSV exports): rows with the same model, engine, ISL, OSL, concurrency
// and the same measured TTFT and TPOT to the last digits are one
// measurement. Under one layout it is kept once (the first row; the split
// flag of that row stays, so a measurement is never on both sides of the
// split). Under different layouts the deployment that produced it is
// unknown (e.g. one TensorRT-LLM run reported both as 1 prefill worker of
// dp16 + 3 decode workers of tp16 and as 1 + 1 workers of tp16): every copy
// is dropped, since no layout can be predicted for it.
void DropRepeatedMeasurements(ParsedDisaggregated& out) {
  std::vector<DisaggregatedRow> kept;
  std::vector<bool> used(out.rows.size(), false);
  for (size_t i = 0; i < out.rows.size(); ++i) {
    if (used[i]) continue;
    const DisaggregatedRow& a = out.rows[i];
    std::vector<size_t> copies = {i};
    bool conflicting = false;
    for (size_t j = i + 1; j < out.rows.size(); ++j) {
      const DisaggregatedRow& b = out.rows[j];
      if (used[j] || a.catalog_model != b.catalog_model ||
          a.engine != b.engine || a.isl != b.isl || a.osl != b.osl ||
          a.concurrency != b.concurrency ||
          !SameMeasuredValue(a.ttft_seconds, b.ttft_seconds) ||
          !SameMeasuredValue(a.tpot_seconds, b.tpot_seconds)) {
        continue;
      }
      copies.push_back(j);
      conflicting = conflicting || !SamePool(a.prefill, b.prefill) ||
                    !SamePool(a.decode, b.decode);
    }
    for (size_t j : copies) used[j] = true;
    if (conflicting) {
      out.skipped_conflicting_layouts += static_cast<int>(copies.size());
      continue;
    }
    out.skipped_duplicates += static_cast<int>(copies.size()) - 1;
    kept.push_back(a);
  }
  out.rows = std::move(kept);
}

}  // namespace

absl::StatusOr<ParsedDisaggregated> ParseDisaggregatedRows(
    absl::string_view csv_text) {
  std::vector<std::string> required = {"id",
                                       "silicon_data_source",
                                       "backend",
                                       "model_path",
                                       "precision",
                                       "mode",
                                       "isl",
                                       "osl",
                                       "gemm_quant_mode",
                                       "silicon_ttft_ms",
                                       "silicon_tpot_ms"};
  for (const char* pool : {"prefill_", "decode_"}) {
    for (const char* f : {"batch_size", "num_workers", "tp_size", "pp_size",
                          "attention_dp_size", "moe_tp_size", "moe_ep_size"}) {
      required.push_back(absl::StrCat(pool, f));
    }
  }
  ASSIGN_OR_RETURN(CsvTable table, ReadCsvTable(csv_text, required));
  ParsedDisaggregated out;
  int data_index = 0;
  for (const CsvTable::Row& get : table.Rows()) {
    if (get("mode") != "disagg") continue;
    const int line_no = get.line;
    const int index = data_index++;
    DisaggregatedRow row;
    if (!ReadRowStart(line_no, get, row)) {
      ++out.skipped;
      continue;
    }
    row.fp8 = Fp8Weights(get("precision"), get("gemm_quant_mode"));
    ASSIGN_OR_RETURN(row.isl, IntField(get("isl"), 0, line_no, "isl"));
    ASSIGN_OR_RETURN(row.osl, IntField(get("osl"), 0, line_no, "osl"));
    ASSIGN_OR_RETURN(row.concurrency,
                     SiliconConcurrency(get("silicon_data_source"), line_no));
    for (const std::pair<const char*, MeasuredPool*>& side :
         {std::pair<const char*, MeasuredPool*>{"prefill_", &row.prefill},
          {"decode_", &row.decode}}) {
      const char* const prefix = side.first;
      MeasuredPool* const pool = side.second;
      auto field = [&](const char* name, int fallback) {
        const std::string c = absl::StrCat(prefix, name);
        return IntField(get(c), fallback, line_no, c);
      };
      ASSIGN_OR_RETURN(pool->batch_size, field("batch_size", 0));
      ASSIGN_OR_RETURN(pool->workers, field("num_workers", 1));
      ASSIGN_OR_RETURN(pool->tp, field("tp_size", 1));
      ASSIGN_OR_RETURN(pool->pp, field("pp_size", 1));
      ASSIGN_OR_RETURN(pool->attention_dp, field("attention_dp_size", 1));
      ASSIGN_OR_RETURN(pool->moe_tp, field("moe_tp_size", 1));
      ASSIGN_OR_RETURN(pool->moe_ep, field("moe_ep_size", 1));
      *pool = ResolvePool(*pool);
    }
    if (row.isl <= 0 || row.osl <= 0 ||
        (row.concurrency <= 0 && row.decode.batch_size <= 0)) {
      ++out.skipped;
      continue;
    }
    // Per attention dp rank of a decode worker (decode_batch_size is one
    // rank's, as for aggregated rows; silicon_concurrency is the whole
    // deployment's: decode_num_workers x decode_attention_dp_size x
    // decode_batch_size in the rows that have both).
    const int per_rank =
        row.decode.batch_size > 0
            ? row.decode.batch_size
            : row.concurrency /
                  (row.decode.workers * std::max(1, row.decode.attention_dp));
    if (per_rank > limits::kMaxFitConcurrency) {
      ++out.skipped_queueing;
      continue;
    }
    row.held_out_row = index % 4 == 3;
    out.rows.push_back(std::move(row));
  }
  DropRepeatedMeasurements(out);
  return out;
}

namespace {

// Independent copies in a decode worker: a dense model's attention dp ranks.
int DecodeCopies(const DisaggregatedRow& row) {
  const absl::StatusOr<shardplan::v1::ModelSpec> spec =
      FindCatalogModel(row.catalog_model);
  const bool moe = row.decode.moe_ep > 1 || row.decode.moe_tp > 1 ||
                   (spec.ok() && spec->num_experts() > 0);
  return moe ? 1 : std::max(1, row.decode.attention_dp);
}

}  // namespace

absl::StatusOr<Problem> DisaggregatedRowProblem(const DisaggregatedRow& row) {
  shardplan::v1::ModelSource model;
  model.set_catalog_name(row.catalog_model);
  shardplan::v1::ClusterSpec cluster;
  cluster.set_hardware("h100-sxm-80gb");
  const int gpus = row.prefill.workers * row.prefill.gpus() +
                   row.decode.workers * row.decode.gpus();
  cluster.set_num_gpus(gpus);
  cluster.set_gpus_per_node(std::min(8, gpus));
  shardplan::v1::Workload workload;
  workload.set_input_tokens(row.isl);
  workload.set_output_tokens(row.osl);
  workload.set_weight_dtype(row.fp8 ? "fp8" : "bf16");
  workload.set_kv_cache_dtype("bf16");
  // The benchmark's closed-loop clients, per decode instance (the replica
  // unit of Workload.concurrency; a dense model's dp copies are units too);
  // every row's concurrency divides evenly.
  if (row.concurrency > 0) {
    const int units = row.decode.workers * DecodeCopies(row);
    workload.set_concurrency((row.concurrency + units - 1) / units);
  }
  return ProblemFromProto(model, cluster, workload);
}

PlanDims DisaggregatedRowPlan(const DisaggregatedRow& row) {
  PlanDims plan;
  plan.disaggregated = true;
  plan.prefill_instances = row.prefill.workers;
  plan.decode_instances = row.decode.workers;
  plan.prefill.dp = row.prefill.attention_dp;
  plan.prefill.tp = row.prefill.tp;
  plan.prefill.pp = row.prefill.pp;
  plan.prefill.ep = row.prefill.moe_ep;
  plan.prefill.batch_size = std::max(1, row.prefill.batch_size);
  plan.dp = row.decode.attention_dp;
  plan.tp = row.decode.tp;
  plan.pp = row.decode.pp;
  plan.ep = row.decode.moe_ep;
  // With a concurrency, the closed-loop model derives the decode batch
  // (Little's law, simulator/disaggregated.h). Else the requests of a decode
  // worker (a dense model: of each dp copy): its ranks' batches.
  if (row.concurrency > 0) return plan;
  plan.batch_size =
      std::max(1, row.decode.batch_size * std::max(1, row.decode.attention_dp) /
                      DecodeCopies(row));
  return plan;
}

absl::StatusOr<std::vector<RowPrediction>> PredictDisaggregatedRows(
    const std::vector<DisaggregatedRow>& rows,
    const std::vector<CalibrationProfile>& profiles) {
  return PredictEachRow(rows, profiles, DisaggregatedRowProblem,
                        DisaggregatedRowPlan);
}

}  // namespace shardplan::simulator
