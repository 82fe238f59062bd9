// The cost model's pipeline terms against the only public serving rows with
// pp > 1 and their layouts: TensorRT-LLM's trtllm-bench maximum-throughput
// runs on RTX PRO 6000 Blackwell Server Edition (PCIe, no NVLink),
// simulator/calibration/data/pipeline_parallel_throughput.csv (a source_url on
// every row). The cost model keeps its H100 trtllm profile and only the
// hardware changes (the datasheet figures below). One parameter,
// Calibration::pipeline_request_overhead_seconds, is fitted on the v1.0
// page's Llama-3.3-70B 1000/1000 rows (CompiledOverheadIsTheFitOnOneLength);
// every other row is held out.
//
// What a row can check. The absolute figures rest on hardware constants the
// calibration never saw (GDDR7, native FP4), so the test holds them only
// loosely. The ratio of two layouts on the same GPU (pp > 1 against pp 1, per
// GPU) largely cancels those constants and isolates the pipeline terms:
// micro-batch scheduling (m = pp micro-batches, each re-reading its stage's
// weights), the host's walk over the active requests per micro-batch, the
// stage-to-stage sends, and the KV-cache room the extra GPUs add. The test
// asserts how far the constants cancel, which terms the rows exercise, and
// that a schedule without micro-batching is ruled out. The tables and the
// reasons for every bound are in docs/cost-model-and-calibration.md
// ("Pipeline-parallel measurements").
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/calibration.h"
#include "simulator/cost_model.h"
#include "simulator/spec.h"

namespace shardplan::simulator {
namespace {

struct Row {
  std::string model;
  int isl = 0, osl = 0, gpus = 0, tp = 1, pp = 1, dp = 1, ep = 1;
  double measured_per_gpu = 0;  // output tokens/s per GPU
  std::string source_url;
};

std::vector<Row> ReadRows() {
  const std::string path =
      std::string(SHARDPLAN_SOURCE_DIR) +
      "/simulator/calibration/data/pipeline_parallel_throughput.csv";
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::vector<Row> rows;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const std::vector<std::string> f = absl::StrSplit(line, ',');
    EXPECT_EQ(f.size(), 13u) << line;
    if (f.size() != 13) continue;
    Row r;
    r.model = f[0];
    r.isl = std::stoi(f[4]);
    r.osl = std::stoi(f[5]);
    r.gpus = std::stoi(f[6]);
    r.tp = std::stoi(f[7]);
    r.pp = std::stoi(f[8]);
    r.dp = std::stoi(f[9]);
    r.ep = std::stoi(f[10]);
    r.measured_per_gpu = std::stod(f[11]);
    r.source_url = f[12];
    rows.push_back(r);
  }
  return rows;
}

// Perturbations of the constants the rows cannot pin down.
struct Knobs {
  double compute_scale = 1;
  double memory_bandwidth_scale = 1;
  double link_bandwidth_scale = 1;
  double link_latency_scale = 1;
  int micro_batches = 0;  // 0: pp, as TensorRT-LLM schedules
  // NVIDIA's ModelOpt NVFP4 checkpoints carry an FP8 KV cache, which
  // TensorRT-LLM takes from the checkpoint; the pp ratios hold with a bf16
  // cache too (KvCacheDtypeDoesNotDecideTheRatio).
  std::string kv_cache_dtype = "fp8";
  // Calibration::pipeline_request_overhead_seconds; < 0: the profile's.
  double pipeline_request_overhead_seconds = -1;
};

// NVIDIA RTX PRO 6000 Blackwell Server Edition, datasheet figures from
// https://www.nvidia.com/en-us/data-center/rtx-pro-6000-blackwell-server-edition/
// (96 GB GDDR7 with ECC at 1597 GB/s; 4 PFLOPS FP4 AI performance, quoted
// with 2:4 sparsity, so 2 PFLOPS dense FP4; Blackwell tensor cores halve the
// rate per doubling of the operand width: 1 PFLOPS FP8, 0.5 PFLOPS BF16
// dense; PCIe Gen5 x16, 128 GB/s bidirectional = 64 GB/s per direction, no
// NVLink). The per-transfer latency of a PCIe peer-to-peer send has no
// datasheet figure: 10 us is assumed, and PipelineSendsAreNotWhatTheRowsTest
// shows the rows do not depend on it. Compute capability 12.0
// (https://developer.nvidia.com/cuda-gpus): kernel terms measured on B200
// (SM100) do not apply.
shardplan::v1::HardwareSpec RtxPro6000Server(const Knobs& k) {
  shardplan::v1::HardwareSpec hw;
  hw.set_name("rtx-pro-6000-blackwell-server");
  hw.set_architecture("sm120");
  hw.set_peak_bf16_flops_per_s(0.5e15 * k.compute_scale);
  hw.set_peak_fp8_flops_per_s(1.0e15 * k.compute_scale);
  hw.set_peak_fp4_flops_per_s(2.0e15 * k.compute_scale);
  hw.set_hbm_bytes(96e9);
  hw.set_hbm_bytes_per_s(1.597e12 * k.memory_bandwidth_scale);
  hw.set_intra_node_bytes_per_s(64e9 * k.link_bandwidth_scale);
  hw.set_inter_node_bytes_per_s(50e9);  // unused: every row fits one host
  hw.set_intra_node_latency_s(10e-6 * k.link_latency_scale);
  hw.set_inter_node_latency_s(10e-6);
  hw.set_default_gpus_per_node(8);
  return hw;
}

shardplan::v1::ModelSource ModelOf(const std::string& name) {
  shardplan::v1::ModelSource m;
  if (name != "qwen3-30b-a3b") {
    m.set_catalog_name(name);
    return m;
  }
  // Not in the catalog:
  // https://huggingface.co/Qwen/Qwen3-30B-A3B/blob/main/config.json (48 layers,
  // every one MoE: 128 experts, top-8, moe_intermediate_size 768; GQA 32/4
  // heads of 128; hidden 2048; vocab 151936; untied embeddings).
  shardplan::v1::ModelSpec* s = m.mutable_spec();
  s->set_name("qwen3-30b-a3b");
  s->set_family("qwen");
  s->set_hidden_size(2048);
  s->set_num_layers(48);
  s->set_num_attention_heads(32);
  s->set_num_key_value_heads(4);
  s->set_head_dim(128);
  s->set_intermediate_size(6144);
  s->set_vocab_size(151936);
  s->set_tie_word_embeddings(false);
  s->set_num_experts(128);
  s->set_experts_per_token(8);
  s->set_moe_intermediate_size(768);
  return m;
}

// trtllm-bench queues its whole dataset at once on the one instance: the
// request counts of the pages' "Number of Requests" tables (both versions;
// capped at the cost model's largest batch per attention dp rank, which is
// also trtllm-bench's cap on the requests in flight per rank), spread over
// the instance's dp ranks. Any count above what the KV cache holds predicts
// the same: the engine runs the resident batch and queues the rest
// (EvaluateQueued).
int BenchmarkRequests(int isl, int osl, int dp) {
  static const std::map<std::pair<int, int>, int>* const kRequests =
      new std::map<std::pair<int, int>, int>{
          {{128, 128}, 30000},   {{128, 2048}, 3000},  {{128, 4096}, 1500},
          {{500, 2000}, 3000},   {{1000, 1000}, 3000}, {{1000, 2000}, 1500},
          {{2048, 128}, 3000},   {{2048, 2048}, 1500}, {{5000, 500}, 1500},
          {{20000, 2000}, 1000}, {{1024, 1024}, 3000}, {{8192, 1024}, 1500},
          {{1024, 8192}, 1500},  {{32768, 1024}, 1000}};
  const auto it = kRequests->find({isl, osl});
  EXPECT_NE(it, kRequests->end()) << isl << "/" << osl;
  return std::min(kMaxBatchSize * dp,
                  it == kRequests->end() ? 1000 : it->second);
}

struct Predicted {
  double per_gpu = 0;
  int running_batch = 0;
};

Predicted Predict(const Row& r, const Knobs& k = {}) {
  shardplan::v1::ClusterSpec cluster;
  *cluster.mutable_hardware_spec() = RtxPro6000Server(k);
  cluster.set_num_gpus(r.gpus);
  cluster.set_gpus_per_node(8);
  shardplan::v1::Workload workload;
  workload.set_input_tokens(r.isl);
  workload.set_output_tokens(r.osl);
  workload.set_concurrency(BenchmarkRequests(r.isl, r.osl, r.dp));
  workload.set_weight_dtype("fp4");
  workload.set_kv_cache_dtype(k.kv_cache_dtype);
  workload.set_engine("trtllm");
  absl::StatusOr<Problem> problem =
      ProblemFromProto(ModelOf(r.model), cluster, workload);
  EXPECT_TRUE(problem.ok()) << problem.status();
  if (!problem.ok()) return {};
  absl::StatusOr<CalibrationProfile> profile =
      FindCalibrationProfile(problem->workload.calibration_profile);
  EXPECT_TRUE(profile.ok()) << profile.status();
  if (!profile.ok()) return {};
  Calibration calibration = profile->calibration;
  if (k.pipeline_request_overhead_seconds >= 0) {
    calibration.pipeline_request_overhead_seconds =
        k.pipeline_request_overhead_seconds;
  }
  absl::StatusOr<std::unique_ptr<const CostModel>> model =
      CostModel::Create(*problem, calibration);
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return {};
  PlanDims plan;
  plan.tp = r.tp;
  plan.pp = r.pp;
  plan.dp = r.dp;
  plan.ep = r.ep;
  plan.micro_batches = k.micro_batches;
  const absl::Status valid = (*model)->ValidatePlan(plan);
  EXPECT_TRUE(valid.ok()) << valid;
  if (!valid.ok()) return {};
  const Evaluation e = (*model)->Evaluate(plan);
  EXPECT_TRUE(e.feasible) << r.model << " " << r.gpus << " GPUs";
  return {e.output_tokens_per_s_per_gpu, e.running_batch};
}

// A pp > 1 row and the row of the same model, lengths and stage layout (tp,
// attention dp, ep) with one stage: the same GPU, so hardware constants
// cancel in the per-GPU ratio.
struct Pair {
  Row base;
  Row piped;
};

std::vector<Pair> PipelinePairs(const std::vector<Row>& rows) {
  std::vector<Pair> pairs;
  for (const Row& p : rows) {
    if (p.pp < 2) continue;
    for (const Row& b : rows) {
      if (b.pp == 1 && b.model == p.model && b.isl == p.isl && b.osl == p.osl &&
          b.tp == p.tp && b.dp == p.dp && b.ep == p.ep &&
          b.source_url == p.source_url) {
        pairs.push_back({b, p});
      }
    }
  }
  return pairs;
}

double MeasuredRatio(const Pair& p) {
  return p.piped.measured_per_gpu / p.base.measured_per_gpu;
}

// `k.micro_batches` applies to the pipelined row only (one stage has
// nothing to overlap).
double PredictedRatio(const Pair& p, const Knobs& k = {}) {
  Knobs base = k;
  base.micro_batches = 0;
  return Predict(p.piped, k).per_gpu / Predict(p.base, base).per_gpu;
}

std::string Layout(const Row& r) {
  if (r.dp > 1) return absl::StrFormat("DEP%d,PP%d", r.dp, r.pp);
  return absl::StrFormat("TP%d,PP%d", r.tp, r.pp);
}

bool Dense(const Pair& p) { return p.base.model == "llama-3.3-70b"; }

// The two-stage dense pairs, the regime the pipeline terms are validated in.
bool DenseTwoStages(const Pair& p) { return Dense(p) && p.piped.pp == 2; }

const char* PageVersion(const Row& r) {
  return r.source_url.find("00f37686") != std::string::npos ? "v1.0"
                                                            : "03e27c7d";
}

// Every row, as docs/cost-model-and-calibration.md shows it.
TEST(PipelineParallelMeasuredTest, EveryRowIsPredictedAndPrinted) {
  const std::vector<Row> rows = ReadRows();
  ASSERT_EQ(rows.size(), 73u);
  std::cout << "| page | model | GPUs | layout | ISL/OSL | measured tok/s/GPU "
               "| predicted | pred/meas | running batch |\n"
               "|---|---|---|---|---|---|---|---|---|\n";
  for (const Row& r : rows) {
    EXPECT_NE(r.source_url.find("https://github.com/NVIDIA/TensorRT-LLM/"),
              std::string::npos);
    const Predicted p = Predict(r);
    EXPECT_GT(p.per_gpu, 0) << r.model;
    std::cout << absl::StrFormat(
        "| %s | %s | %d | %s | %d/%d | %.0f | %.0f | %.2f | "
        "%d |\n",
        PageVersion(r), r.model, r.gpus, Layout(r), r.isl, r.osl,
        r.measured_per_gpu, p.per_gpu, p.per_gpu / r.measured_per_gpu,
        p.running_batch);
  }
}

// The two-stage dense pairs (Llama-3.3-70B, TP1,PP2 on 2 GPUs against
// TP1,PP1 on 1, both page versions, 13 lengths; the 1000/1000 v1.0 pair is
// one of the three the host term was fitted on): measured 0.94-1.12x per
// GPU. The micro-batched stage term with the KV room of the second GPU and
// the host term predicts them with a median error of 3% and none above 25%
// (the worst, +15% at 1000/2000 on v1.0, is the one length where the measured
// pipeline loses per GPU).
TEST(PipelineParallelMeasuredTest, DenseTwoStagesPerGpuRatio) {
  std::vector<double> errors;
  for (const Pair& p : PipelinePairs(ReadRows())) {
    if (!DenseTwoStages(p)) continue;
    const double measured = MeasuredRatio(p);
    const Predicted base = Predict(p.base);
    const Predicted piped = Predict(p.piped);
    const double predicted = piped.per_gpu / base.per_gpu;
    const double error = predicted / measured - 1;
    errors.push_back(std::abs(error));
    std::cout << absl::StrFormat(
        "| %s | %d/%d | %.3f | %.3f | %+.1f%% | %d -> %d |\n",
        PageVersion(p.base), p.base.isl, p.base.osl, measured, predicted,
        100 * error, base.running_batch, piped.running_batch);
    EXPECT_LT(std::abs(error), 0.25) << p.base.isl << "/" << p.base.osl;
    // The gain is the KV room: the second GPU holds half the weights of the
    // first, so the pipeline keeps well over twice the requests resident.
    EXPECT_GT(piped.running_batch, 2.2 * base.running_batch) << p.base.isl;
  }
  ASSERT_EQ(errors.size(), 13u);
  std::sort(errors.begin(), errors.end());
  EXPECT_LT(errors[errors.size() / 2], 0.05);
}

// Without micro-batching one batch walks through the stages in turn and each
// GPU idles half the time; the rows (0.94-1.12x) rule that schedule out. More
// micro-batches than stages re-read every stage's weights once more per
// micro-batch and lose too: m = pp is the schedule the rows support.
TEST(PipelineParallelMeasuredTest, MicroBatchesEqualToStagesIsWhatTheRowsShow) {
  for (const Pair& p : PipelinePairs(ReadRows())) {
    if (!DenseTwoStages(p)) continue;
    const double measured = MeasuredRatio(p);
    Knobs one;
    one.micro_batches = 1;
    Knobs four;
    four.micro_batches = 4;
    EXPECT_LT(PredictedRatio(p, one), 0.8 * measured) << p.base.isl;
    EXPECT_LT(PredictedRatio(p, four), PredictedRatio(p)) << p.base.isl;
  }
}

// The ratio rests much less on the datasheet memory bandwidth than the
// absolute figure does: +-20% moves the one-GPU prediction by 3-18% and the
// ratio by at most 7%, never more than half as much. Compute matters more
// where the pipeline's 2.7x larger batch makes decode attention compute-bound
// (long outputs): +-25% compute moves the ratio by up to 8.7%, the size of
// the measured-vs-predicted spread, so the agreement is within the
// constants' reach, not finer.
TEST(PipelineParallelMeasuredTest, HardwareConstantsCancelInTheRatio) {
  for (const Pair& p : PipelinePairs(ReadRows())) {
    if (!DenseTwoStages(p)) continue;
    const double nominal = PredictedRatio(p);
    const double one_gpu = Predict(p.base).per_gpu;
    for (double m : {0.8, 1.2}) {
      Knobs k;
      k.memory_bandwidth_scale = m;
      const double ratio_change = std::abs(PredictedRatio(p, k) / nominal - 1);
      const double absolute_change =
          std::abs(Predict(p.base, k).per_gpu / one_gpu - 1);
      EXPECT_LT(ratio_change, 0.08) << p.base.isl << "/" << p.base.osl << m;
      EXPECT_LE(ratio_change, 0.5 * absolute_change)
          << p.base.isl << "/" << p.base.osl << " " << m;
    }
    for (double c : {0.75, 1.25}) {
      Knobs k;
      k.compute_scale = c;
      EXPECT_LT(std::abs(PredictedRatio(p, k) / nominal - 1), 0.10)
          << p.base.isl << "/" << p.base.osl << " " << c;
    }
  }
}

// What two-stage rows cannot validate: the stage-to-stage sends. At the
// batches a maximum-throughput run keeps resident, one hidden vector per
// request per stage boundary is a few MB against tens of ms of stage work, so
// ten times the send latency with a quarter of the PCIe bandwidth moves the
// ratio by under 1%.
TEST(PipelineParallelMeasuredTest, PipelineSendsAreNotWhatTheRowsTest) {
  for (const Pair& p : PipelinePairs(ReadRows())) {
    if (!DenseTwoStages(p)) continue;
    const double nominal = PredictedRatio(p);
    Knobs slow;
    slow.link_latency_scale = 10;
    slow.link_bandwidth_scale = 0.25;
    EXPECT_NEAR(PredictedRatio(p, slow) / nominal, 1.0, 0.01) << p.base.isl;
  }
}

TEST(PipelineParallelMeasuredTest, KvCacheDtypeDoesNotDecideTheRatio) {
  std::vector<double> errors;
  for (const Pair& p : PipelinePairs(ReadRows())) {
    if (!DenseTwoStages(p)) continue;
    Knobs bf16;
    bf16.kv_cache_dtype = "bf16";
    errors.push_back(std::abs(PredictedRatio(p, bf16) / MeasuredRatio(p) - 1));
  }
  ASSERT_FALSE(errors.empty());
  std::sort(errors.begin(), errors.end());
  EXPECT_LT(errors[errors.size() / 2], 0.06);
}

// Four and eight stages (v1.0 page, Llama-3.3-70B TP1,PP4 on 4 GPUs and
// TP1,PP8 on 8): the measured throughput per GPU falls with every doubling of
// the stages beyond two, on every length. On the GPU alone the KV room of the
// extra GPUs would pay for the micro-batches' extra weight reads and keep it
// flat; what falls is the host's share: each rank walks all its active
// requests once per micro-batch, and a deeper pipeline admits more requests
// while each stage's GPU work shrinks (Calibration::
// pipeline_request_overhead_seconds; HeldOutLengthsAndDepths checks the
// model's ratios). This test checks the data's shape and prints both.
TEST(PipelineParallelMeasuredTest, DeeperPipelinesLosePerGpu) {
  Knobs without;
  without.pipeline_request_overhead_seconds = 0;
  struct Ratios {
    double measured, predicted, without_host;
  };
  std::map<std::pair<int, int>, std::map<int, Ratios>> by;
  for (const Pair& p : PipelinePairs(ReadRows())) {
    if (!Dense(p) || std::string(PageVersion(p.base)) != "v1.0") continue;
    by[{p.base.isl, p.base.osl}][p.piped.pp] = {
        MeasuredRatio(p), PredictedRatio(p), PredictedRatio(p, without)};
  }
  ASSERT_EQ(by.size(), 10u);
  for (const auto& [lengths, r] : by) {
    ASSERT_EQ(r.size(), 3u);
    std::string line =
        absl::StrFormat("| %d/%d |", lengths.first, lengths.second);
    for (int pp : {2, 4, 8}) {
      absl::StrAppendFormat(&line, " %.2f / %.2f / %.2f |", r.at(pp).measured,
                            r.at(pp).predicted, r.at(pp).without_host);
    }
    std::cout << line << "\n";
    EXPECT_LT(r.at(4).measured, r.at(2).measured) << lengths.first;
    EXPECT_LT(r.at(8).measured, r.at(4).measured) << lengths.first;
  }
}

// Absolute figures on hardware the calibration never saw: the dense rows with
// one or two stages are within 40% (from -27% at a 32k-token prompt, a
// prefill-bound run, to +36%; most over-predicted by 5-25%). Deeper pipelines
// are not: see DeeperPipelinesLosePerGpu.
TEST(PipelineParallelMeasuredTest, DenseAbsoluteWithinFortyPercent) {
  for (const Row& r : ReadRows()) {
    if (r.model != "llama-3.3-70b" || r.pp > 2) continue;
    EXPECT_NEAR(Predict(r).per_gpu / r.measured_per_gpu, 1.0, 0.40)
        << PageVersion(r) << " " << r.isl << "/" << r.osl << " pp " << r.pp;
  }
}

// Qwen3-30B-A3B (held out: MoE, attention data parallel, FP4 experts),
// DEP2,PP2 on 4 GPUs against DEP2,PP1 on 2: measured 0.84x per GPU, predicted
// within 10% by the same stage and host terms that fit dense Llama (each DP
// rank's scheduler walks its own ~1700 requests per micro-batch). What the
// model misses on this GPU is the exchange, not the pipeline: DEP2,PP1 against
// one GPU, with no pipeline at all, is measured 0.85x and predicted ~1.0x
// (expert all-to-alls on PCIe cross the host fabric, which the cost model
// charges at the per-GPU link rate without contention).
TEST(PipelineParallelMeasuredTest, MoePipelineHoldsTheExchangeMisses) {
  const std::vector<Row> rows = ReadRows();
  auto find = [&](int gpus, int pp, int dp) -> const Row* {
    for (const Row& r : rows) {
      if (r.model == "qwen3-30b-a3b" && r.isl == 1000 && r.gpus == gpus &&
          r.pp == pp && r.dp == dp) {
        return &r;
      }
    }
    return nullptr;
  };
  const Row* tp1 = find(1, 1, 1);
  const Row* dep2 = find(2, 1, 2);
  const Row* dep2pp2 = find(4, 2, 2);
  ASSERT_TRUE(tp1 && dep2 && dep2pp2);
  const Pair pipeline{*dep2, *dep2pp2};
  const Pair exchange{*tp1, *dep2};
  const double pipeline_error =
      PredictedRatio(pipeline) / MeasuredRatio(pipeline) - 1;
  const double exchange_error =
      PredictedRatio(exchange) / MeasuredRatio(exchange) - 1;
  std::cout << absl::StrFormat(
      "qwen3-30b-a3b 1000/1000: DEP2,PP2/DEP2,PP1 measured %.3f predicted "
      "%.3f; DEP2,PP1/TP1,PP1 measured %.3f predicted %.3f\n",
      MeasuredRatio(pipeline), PredictedRatio(pipeline),
      MeasuredRatio(exchange), PredictedRatio(exchange));
  EXPECT_LT(std::abs(pipeline_error), 0.10);
  EXPECT_GT(std::abs(exchange_error), std::abs(pipeline_error));
}

// The v1.0 page's dense pairs at one length, 1000/1000 (pp 2, 4 and 8 against
// pp 1): the rows Calibration::pipeline_request_overhead_seconds is fitted on.
bool FitPair(const Pair& p) {
  return Dense(p) && std::string(PageVersion(p.base)) == "v1.0" &&
         p.base.isl == 1000 && p.base.osl == 1000;
}

// Least squares in the log of the per-GPU ratio over the fit pairs, on a grid
// of 0.25 us up to 50 us.
double FitPipelineRequestOverhead(const std::vector<Pair>& pairs) {
  double best = 0, best_error = -1;
  for (int i = 0; i <= 200; ++i) {
    Knobs k;
    k.pipeline_request_overhead_seconds = i * 0.25e-6;
    double error = 0;
    for (const Pair& p : pairs) {
      if (!FitPair(p)) continue;
      const double e = std::log(PredictedRatio(p, k) / MeasuredRatio(p));
      error += e * e;
    }
    if (best_error < 0 || error < best_error) {
      best_error = error;
      best = k.pipeline_request_overhead_seconds;
    }
  }
  return best;
}

// The compiled trtllm value is that fit (so it cannot drift from the rows).
TEST(PipelineParallelMeasuredTest, CompiledOverheadIsTheFitOnOneLength) {
  absl::StatusOr<CalibrationProfile> trtllm = FindCalibrationProfile("trtllm");
  ASSERT_TRUE(trtllm.ok());
  EXPECT_DOUBLE_EQ(trtllm->calibration.pipeline_request_overhead_seconds,
                   FitPipelineRequestOverhead(PipelinePairs(ReadRows())));
  // Engines without pipeline rows carry none.
  for (const char* engine : {"vllm", "sglang"}) {
    absl::StatusOr<CalibrationProfile> p = FindCalibrationProfile(engine);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->calibration.pipeline_request_overhead_seconds, 0) << engine;
  }
}

// Held out: the v1.0 page's other nine lengths at 2, 4 and 8 stages (27
// per-GPU ratios). With the fitted host term the median error is a few
// percent; without it (0, the pipeline as the GPU alone would run it) the
// model keeps deep pipelines' per-GPU throughput flat and misses by up to
// 2.2x.
TEST(PipelineParallelMeasuredTest, HeldOutLengthsAndDepths) {
  Knobs without;
  without.pipeline_request_overhead_seconds = 0;
  std::vector<double> with_term, without_term;
  for (const Pair& p : PipelinePairs(ReadRows())) {
    if (!Dense(p) || std::string(PageVersion(p.base)) != "v1.0" || FitPair(p)) {
      continue;
    }
    const double measured = MeasuredRatio(p);
    with_term.push_back(std::abs(PredictedRatio(p) / measured - 1));
    without_term.push_back(std::abs(PredictedRatio(p, without) / measured - 1));
  }
  ASSERT_EQ(with_term.size(), 27u);
  std::sort(with_term.begin(), with_term.end());
  std::sort(without_term.begin(), without_term.end());
  const size_t mid = with_term.size() / 2;
  std::cout << absl::StrFormat(
      "held-out per-GPU ratios: median |error| %.1f%% (max %.1f%%) with the "
      "host term, %.1f%% (max %.1f%%) without\n",
      100 * with_term[mid], 100 * with_term.back(), 100 * without_term[mid],
      100 * without_term.back());
  EXPECT_LT(with_term[mid], 0.06);
  EXPECT_LT(with_term.back(), 0.25);
  EXPECT_LT(with_term[mid], 0.5 * without_term[mid]);
}

}  // namespace
}  // namespace shardplan::simulator
