// The cost model's pipeline terms against the only public serving rows with
// pp > 1 and their layouts: TensorRT-LLM's trtllm-bench maximum-throughput
// runs on RTX PRO 6000 Blackwell Server Edition (PCIe, no NVLink),
// simulator/calibration/data/pipeline_parallel_throughput.csv (a source_url on
// every row). These rows were never fitted; the cost model keeps its H100
// trtllm profile and only the hardware changes (the datasheet figures below).
//
// What a row can check. The absolute figures rest on hardware constants the
// calibration never saw (GDDR7, native FP4), so the test holds them only
// loosely. The ratio of two layouts on the same GPU (pp 2 against pp 1, per
// GPU) cancels those constants and isolates the pipeline terms: micro-batch
// scheduling (m = pp micro-batches, each re-reading its stage's weights),
// the bubble (only in the one-trip chain bound), the stage-to-stage sends,
// and the KV-cache room the extra GPU adds. The test asserts that the
// constants do cancel (the ratio moves little when they change), which terms
// the rows exercise, and that a schedule without micro-batching is ruled out.
// The table and the reasons for every bound are in
// docs/cost-model-and-calibration.md ("Pipeline-parallel measurements").
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

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
};

// NVIDIA RTX PRO 6000 Blackwell Server Edition, datasheet figures from
// https://www.nvidia.com/en-us/data-center/rtx-pro-6000-blackwell-server-edition/
// (96 GB GDDR7 with ECC at 1597 GB/s; 4 PFLOPS FP4 AI performance, quoted
// with 2:4 sparsity, so 2 PFLOPS dense FP4; Blackwell tensor cores halve the
// rate per doubling of the operand width: 1 PFLOPS FP8, 0.5 PFLOPS BF16
// dense; PCIe Gen5 x16, 128 GB/s bidirectional = 64 GB/s per direction, no
// NVLink). The per-transfer latency of a PCIe peer-to-peer send has no
// datasheet figure: 10 us is assumed, and PipelineSendsAreNotWhatTheRowsTest
// shows the rows do not depend on it.
shardplan::v1::HardwareSpec RtxPro6000Server(const Knobs& k) {
  shardplan::v1::HardwareSpec hw;
  hw.set_name("rtx-pro-6000-blackwell-server");
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

// trtllm-bench queues its whole dataset at once; the request counts are the
// page's "Number of Requests" table (1000/1000 is not listed: the count of
// 1024/1024). Any count above what the KV cache holds predicts the same: the
// engine runs the resident batch and queues the rest (EvaluateQueued).
int BenchmarkRequests(int isl, int osl) {
  if (isl >= 32768 || osl >= 32768) return 1000;
  if (isl >= 8192 || osl >= 8192) return 1500;
  return 3000;
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
  workload.set_concurrency(BenchmarkRequests(r.isl, r.osl));
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
  absl::StatusOr<std::unique_ptr<const CostModel>> model =
      CostModel::Create(*problem, profile->calibration);
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
          b.tp == p.tp && b.dp == p.dp && b.ep == p.ep) {
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

// Every row, as docs/cost-model-and-calibration.md shows it.
TEST(PipelineParallelMeasuredTest, EveryRowIsPredictedAndPrinted) {
  const std::vector<Row> rows = ReadRows();
  ASSERT_EQ(rows.size(), 27u);
  std::cout << "| model | GPUs | layout | ISL/OSL | measured tok/s/GPU | "
               "predicted | pred/meas | running batch |\n"
               "|---|---|---|---|---|---|---|---|\n";
  for (const Row& r : rows) {
    EXPECT_NE(r.source_url.find("https://github.com/NVIDIA/TensorRT-LLM/"),
              std::string::npos);
    const Predicted p = Predict(r);
    EXPECT_GT(p.per_gpu, 0) << r.model;
    std::cout << absl::StrFormat(
        "| %s | %d | %s | %d/%d | %.0f | %.0f | %.2f | "
        "%d |\n",
        r.model, r.gpus, Layout(r), r.isl, r.osl, r.measured_per_gpu, p.per_gpu,
        p.per_gpu / r.measured_per_gpu, p.running_batch);
  }
}

// The dense pairs (Llama-3.3-70B, TP1,PP2 on 2 GPUs against TP1,PP1 on 1):
// measured 1.10x per GPU at three lengths. The model's micro-batched stage
// term with the KV room of the second GPU predicts it within 5%.
TEST(PipelineParallelMeasuredTest, DensePp2OverPp1PerGpuWithinFivePercent) {
  const std::vector<Pair> pairs = PipelinePairs(ReadRows());
  int dense = 0;
  for (const Pair& p : pairs) {
    if (!Dense(p)) continue;
    ++dense;
    const double measured = MeasuredRatio(p);
    const Predicted base = Predict(p.base);
    const Predicted piped = Predict(p.piped);
    const double predicted = piped.per_gpu / base.per_gpu;
    std::cout << absl::StrFormat(
        "%s %d/%d: pp2/pp1 per GPU measured %.3f predicted %.3f (%+.1f%%); "
        "running batch %d -> %d\n",
        p.base.model, p.base.isl, p.base.osl, measured, predicted,
        100 * (predicted / measured - 1), base.running_batch,
        piped.running_batch);
    EXPECT_NEAR(predicted / measured, 1.0, 0.05) << p.base.isl;
    // The gain is the KV room: the second GPU holds half the weights of the
    // first, so the pipeline keeps well over twice the requests resident.
    EXPECT_GT(predicted, 1.0);
    EXPECT_GT(piped.running_batch, 2.2 * base.running_batch);
  }
  EXPECT_EQ(dense, 3);
}

// Without micro-batching one batch walks through the stages in turn and each
// GPU idles half the time; the rows (1.10x) rule that schedule out. More
// micro-batches than stages re-read every stage's weights once more per
// micro-batch and lose too: m = pp is the schedule the rows support.
TEST(PipelineParallelMeasuredTest, MicroBatchesEqualToStagesIsWhatTheRowsShow) {
  for (const Pair& p : PipelinePairs(ReadRows())) {
    if (!Dense(p)) continue;
    const double measured = MeasuredRatio(p);
    Knobs one;
    one.micro_batches = 1;
    Knobs four;
    four.micro_batches = 4;
    EXPECT_LT(PredictedRatio(p, one), 0.75 * measured) << p.base.isl;
    EXPECT_LT(PredictedRatio(p, four), 0.9 * measured) << p.base.isl;
  }
}

// The ratio does not rest on the datasheet figures: +-25% compute or +-20%
// memory bandwidth move the one-GPU row by 5-15% but the pp2/pp1 ratio by at
// most half as much (at most 5.3%, against a measured-vs-predicted gap of
// 1.3-2.7%).
TEST(PipelineParallelMeasuredTest, HardwareConstantsCancelInTheRatio) {
  for (const Pair& p : PipelinePairs(ReadRows())) {
    if (!Dense(p)) continue;
    const double nominal = PredictedRatio(p);
    const double one_gpu = Predict(p.base).per_gpu;
    std::vector<Knobs> changed(4);
    changed[0].compute_scale = 0.75;
    changed[1].compute_scale = 1.25;
    changed[2].memory_bandwidth_scale = 0.8;
    changed[3].memory_bandwidth_scale = 1.2;
    for (const Knobs& k : changed) {
      const double ratio_change = std::abs(PredictedRatio(p, k) / nominal - 1);
      const double absolute_change =
          std::abs(Predict(p.base, k).per_gpu / one_gpu - 1);
      EXPECT_LT(ratio_change, 0.06) << p.base.isl << " " << k.compute_scale
                                    << " " << k.memory_bandwidth_scale;
      EXPECT_LE(ratio_change, 0.5 * absolute_change)
          << p.base.isl << " " << k.compute_scale << " "
          << k.memory_bandwidth_scale;
    }
  }
}

// What these rows cannot validate: the stage-to-stage sends. At the batches a
// maximum-throughput run keeps resident, one hidden vector per request per
// stage boundary is a few MB against tens of ms of stage work, so ten times
// the send latency or a quarter of the PCIe bandwidth moves the ratio by
// under 1%.
TEST(PipelineParallelMeasuredTest, PipelineSendsAreNotWhatTheRowsTest) {
  for (const Pair& p : PipelinePairs(ReadRows())) {
    if (!Dense(p)) continue;
    const double nominal = PredictedRatio(p);
    Knobs slow;
    slow.link_latency_scale = 10;
    slow.link_bandwidth_scale = 0.25;
    EXPECT_NEAR(PredictedRatio(p, slow) / nominal, 1.0, 0.01) << p.base.isl;
  }
}

TEST(PipelineParallelMeasuredTest, KvCacheDtypeDoesNotDecideTheRatio) {
  for (const Pair& p : PipelinePairs(ReadRows())) {
    if (!Dense(p)) continue;
    Knobs bf16;
    bf16.kv_cache_dtype = "bf16";
    EXPECT_NEAR(PredictedRatio(p, bf16) / MeasuredRatio(p), 1.0, 0.05)
        << p.base.isl;
  }
}

// Absolute figures on hardware the calibration never saw: the dense rows are
// within 30% (most over-predicted by ~20%; the 32k-token prompt row, a
// prefill-bound run, under-predicted by ~27%).
TEST(PipelineParallelMeasuredTest, DenseAbsoluteWithinThirtyPercent) {
  for (const Row& r : ReadRows()) {
    if (r.model != "llama-3.3-70b") continue;
    EXPECT_NEAR(Predict(r).per_gpu / r.measured_per_gpu, 1.0, 0.30)
        << r.isl << "/" << r.osl << " pp " << r.pp;
  }
}

// Qwen3-30B-A3B, DEP2,PP2 (4 GPUs) against DEP2,PP1 (2 GPUs): measured 0.84x
// per GPU, predicted ~1.0x. The same model's DEP2,PP1 against TP1,PP1 (one
// GPU), which has no pipeline at all, is over-predicted by the same factor
// (measured 0.85x, predicted ~1.0x): the miss is common to every layout that
// exchanges tokens between GPUs over PCIe (expert all-to-alls through the
// host fabric, which the cost model charges at the per-GPU link rate without
// contention), not a pipeline term. The test holds the two errors within 5%
// of each other.
TEST(PipelineParallelMeasuredTest, MoeMissIsCommonToMultiGpuLayouts) {
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
      PredictedRatio(pipeline) / MeasuredRatio(pipeline);
  const double exchange_error =
      PredictedRatio(exchange) / MeasuredRatio(exchange);
  std::cout << absl::StrFormat(
      "qwen3-30b-a3b 1000/1000: DEP2,PP2/DEP2,PP1 measured %.3f predicted "
      "%.3f; "
      "DEP2,PP1/TP1,PP1 measured %.3f predicted %.3f\n",
      MeasuredRatio(pipeline), PredictedRatio(pipeline),
      MeasuredRatio(exchange), PredictedRatio(exchange));
  EXPECT_NEAR(pipeline_error / exchange_error, 1.0, 0.05);
}

}  // namespace
}  // namespace shardplan::simulator
