// Invariants of the cost model (DESIGN.md) on small hand-computed cases, the
// rule table, plan validation, the Megatron heuristic and a fuzz over every
// catalog model.
#include "simulator/cost_model.h"

#include <cmath>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/calibration.h"
#include "simulator/internal/collectives.h"
#include "simulator/internal/cost_context.h"
#include "simulator/internal/cost_layers.h"
#include "simulator/megatron.h"
#include "simulator/spec.h"
#include "simulator/types.h"

namespace shardplan::simulator {
namespace {

using internal::Collective;
using internal::CollectiveRecord;
using internal::CostModelInspector;
using internal::Layout;
using internal::TransitionCollective;
using ::testing::HasSubstr;
using ::testing::StartsWith;

struct Setup {
  std::string model = "llama-3.1-70b";
  std::string hardware = "h100-sxm-80gb";
  int gpus = 8;
  int gpus_per_node = 8;
  int isl = 2048;
  int osl = 256;
  int concurrency = 16;
  std::string weight_dtype = "bf16";
  std::string kv_cache_dtype = "bf16";
  double max_ttft_ms = 0;
  double max_tpot_ms = 0;
  // A calibration profile name; empty: DefaultCalibration().
  std::string profile = "";
  // WorkloadDims::fused_all_reduce_max_bytes.
  double fused_all_reduce_max_bytes = 0;
};

std::unique_ptr<const CostModel> Make(const Setup& s) {
  shardplan::v1::ModelSource source;
  source.set_catalog_name(s.model);
  shardplan::v1::ClusterSpec cluster;
  cluster.set_hardware(s.hardware);
  cluster.set_num_gpus(s.gpus);
  cluster.set_gpus_per_node(std::min(s.gpus, s.gpus_per_node));
  shardplan::v1::Workload workload;
  workload.set_input_tokens(s.isl);
  workload.set_output_tokens(s.osl);
  workload.set_concurrency(s.concurrency);
  workload.set_weight_dtype(s.weight_dtype);
  workload.set_kv_cache_dtype(s.kv_cache_dtype);
  workload.set_max_ttft_ms(s.max_ttft_ms);
  workload.set_max_tpot_ms(s.max_tpot_ms);
  absl::StatusOr<Problem> problem = ProblemFromProto(source, cluster, workload);
  EXPECT_TRUE(problem.ok()) << problem.status();
  if (!problem.ok()) return nullptr;
  Calibration calibration = DefaultCalibration();
  if (!s.profile.empty()) {
    absl::StatusOr<CalibrationProfile> profile =
        FindCalibrationProfile(s.profile);
    EXPECT_TRUE(profile.ok()) << profile.status();
    if (!profile.ok()) return nullptr;
    calibration = profile->calibration;
  }
  problem->workload.fused_all_reduce_max_bytes = s.fused_all_reduce_max_bytes;
  absl::StatusOr<std::unique_ptr<const CostModel>> model =
      CostModel::Create(*problem, calibration);
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return nullptr;
  return std::move(*model);
}

// Inside a TEST body `Setup` names testing::Test::Setup.
using CaseSetup = Setup;

PlanDims Plan(int dp, int tp, int pp, int ep = 1, int batch = 0) {
  PlanDims p;
  p.dp = dp;
  p.tp = tp;
  p.pp = pp;
  p.ep = ep;
  p.batch_size = batch;
  return p;
}

double TotalComm(const Evaluation& e) {
  double s = 0;
  for (const OpCost& c : e.decode) s += c.comm_seconds;
  for (const OpCost& c : e.prefill) s += c.comm_seconds;
  return s;
}

TEST(CostModelTest, OneGpuNeedsNoCommunication) {
  auto model = Make({.model = "llama-3.1-8b", .gpus = 1});
  ASSERT_NE(model, nullptr);
  const PlanDims plan = Plan(1, 1, 1);
  ASSERT_TRUE(model->ValidatePlan(plan).ok());
  const Evaluation e = model->Evaluate(plan);
  EXPECT_TRUE(e.feasible) << InfeasibleReasonText(e);
  EXPECT_EQ(TotalComm(e), 0);
  EXPECT_EQ(e.nvlink_decode_bytes + e.ib_decode_bytes, 0);
  EXPECT_EQ(e.nvlink_prefill_bytes + e.ib_prefill_bytes, 0);
}

TEST(CostModelTest, DataParallelDenseReplicasNeedNoCommunication) {
  auto model = Make({.model = "llama-3.1-8b", .gpus = 8});
  ASSERT_NE(model, nullptr);
  // Any dims are equivalent with tp = 1: still no communication.
  PlanDims plan = Plan(8, 1, 1);
  plan.dims[static_cast<int>(OpKind::kAttention)] = ShardDim::kBatch;
  plan.dims[static_cast<int>(OpKind::kMlpUp)] = ShardDim::kReplicate;
  ASSERT_TRUE(model->ValidatePlan(plan).ok());
  const Evaluation e = model->Evaluate(plan);
  EXPECT_EQ(TotalComm(e), 0);
  EXPECT_EQ(e.nvlink_decode_bytes + e.ib_decode_bytes, 0);
}

TEST(CostModelTest, MoeOnOneRankNeedsNoCommunication) {
  auto model =
      Make({.model = "gpt-oss-120b", .gpus = 2, .weight_dtype = "fp8"});
  ASSERT_NE(model, nullptr);
  const PlanDims plan = Plan(1, 1, 2);  // pp = 2: only the stage boundary sends
  ASSERT_TRUE(model->ValidatePlan(plan).ok());
  const std::vector<CollectiveRecord> records =
      CostModelInspector::LayerCollectives(*model, plan, /*moe_layer=*/true,
                                           true, 16);
  EXPECT_TRUE(records.empty());
}

TEST(CostModelTest, WeightMemoryFallsAsTpTimesPpGrows) {
  auto model = Make({.model = "llama-3.1-70b", .gpus = 16});
  ASSERT_NE(model, nullptr);
  double previous = 1e300;
  // tp * pp = 1, 2, 4, 8, 16 (dp fills the rest).
  for (const auto& [tp, pp] : std::vector<std::pair<int, int>>{
           {1, 1}, {2, 1}, {2, 2}, {8, 1}, {8, 2}}) {
    const PlanDims plan = Plan(16 / (tp * pp), tp, pp, 1, 1);
    ASSERT_TRUE(model->ValidatePlan(plan).ok()) << tp << " " << pp;
    const Evaluation e = model->Evaluate(plan);
    EXPECT_LT(e.weights_bytes, previous) << "tp " << tp << " pp " << pp;
    previous = e.weights_bytes;
  }
}

// Megatron dense layer: attention column->row and MLP column->row, each ending
// in one all-reduce of the [tokens x hidden] activation: B*S*H elements, 2
// bytes each (bf16).
TEST(CostModelTest, MegatronLayerHasTwoAllReduces) {
  auto model = Make({.model = "llama-3.1-70b", .gpus = 8});
  ASSERT_NE(model, nullptr);
  const PlanDims plan = Plan(1, 8, 1);
  ASSERT_TRUE(model->ValidatePlan(plan).ok());
  const double hidden = 8192;
  // Prefill of one request of S = 2048 tokens (B = 1) and a decode step of B =
  // 16 tokens.
  for (const auto& [decode, tokens] :
       std::vector<std::pair<bool, int>>{{false, 2048}, {true, 16}}) {
    const std::vector<CollectiveRecord> records =
        CostModelInspector::LayerCollectives(*model, plan, false, decode,
                                             tokens);
    ASSERT_EQ(records.size(), 2u) << "decode " << decode;
    EXPECT_EQ(records[0].op, OpKind::kAttnOut);
    EXPECT_EQ(records[1].op, OpKind::kMlpDown);
    for (const CollectiveRecord& r : records) {
      EXPECT_EQ(r.kind, Collective::kAllReduce);
      EXPECT_DOUBLE_EQ(r.bytes, tokens * hidden * 2);
      EXPECT_EQ(r.group_size, 8);
    }
  }
}

// The tensor-parallel all-reduce inside a node costs what the engine's own
// kernel measures (AIConfigurator's custom_allreduce_perf tables,
// collectives.h kCustomAllReduceSeconds), not the ring formula: Llama-3.1-70B
// on 8 GPUs decoding 64 requests all-reduces 64 x 8,192 bf16 elements (1 MiB)
// twice per layer. Measured at that size: TensorRT-LLM 17.2 us on B200 and
// 19.6 us on H100, vLLM 16.7 / 14.8 us, SGLang 27.2 / 17.3 us; the ring
// formula with the fitted per-hop latency gave 12.1 / 14.6 us to every engine.
TEST(CostModelTest, TensorParallelAllReduceIsTheEnginesMeasuredKernel) {
  struct Case {
    std::string hardware;
    std::string profile;
    double seconds;
  };
  for (const Case& c :
       std::vector<Case>{{"b200-sxm-180gb", "", 17.2e-6},
                         {"b200-sxm-180gb", "vllm", 16.7e-6},
                         {"b200-sxm-180gb", "sglang", 27.2e-6},
                         {"h100-sxm-80gb", "", 19.6e-6},
                         {"h100-sxm-80gb", "vllm", 14.8e-6},
                         {"h100-sxm-80gb", "sglang", 17.3e-6}}) {
    auto model =
        Make({.hardware = c.hardware, .concurrency = 64, .profile = c.profile});
    ASSERT_NE(model, nullptr);
    const PlanDims plan = Plan(1, 8, 1, 1, 64);
    ASSERT_TRUE(model->ValidatePlan(plan).ok());
    const std::vector<CollectiveRecord> records =
        CostModelInspector::LayerCollectives(*model, plan, false, true, 64);
    ASSERT_EQ(records.size(), 2u);
    EXPECT_DOUBLE_EQ(records[0].bytes, 64 * 8192 * 2);
    const Evaluation e = model->Evaluate(plan);
    const double layers = 80;
    for (OpKind op : {OpKind::kAttnOut, OpKind::kMlpDown}) {
      EXPECT_NEAR(e.decode[static_cast<int>(op)].comm_seconds / layers,
                  c.seconds, 0.01 * c.seconds)
          << c.hardware << " " << c.profile;
    }
  }
}

// vLLM's all-reduce + RMSNorm fusion runs FlashInfer's port of TensorRT-LLM's
// allreduce-fusion kernel up to the launch's size limit and vLLM's custom
// all-reduce above it. Llama-3.1-70B on 8 B200s decoding 16 requests
// all-reduces 256 kB twice per layer: vLLM's custom kernel measures 26.0 us
// there (its two-shot step; 9.4 us at 128 kB, 16.7 us at 1 MB),
// TensorRT-LLM's 8.1 us, so under an 8 MB limit the step loses 2 x 80 x
// 17.9 us. A limit below the message leaves vLLM's kernel.
TEST(CostModelTest, VllmFusedAllReduceRunsTensorRtLlmsKernelUpToItsLimit) {
  struct Case {
    double limit_bytes;
    double seconds;
  };
  for (const Case& c : std::vector<Case>{
           {0, 26.0e-6}, {8 << 20, 8.1e-6}, {128 << 10, 26.0e-6}}) {
    auto model = Make({.hardware = "b200-sxm-180gb",
                       .concurrency = 16,
                       .profile = "vllm",
                       .fused_all_reduce_max_bytes = c.limit_bytes});
    ASSERT_NE(model, nullptr);
    const PlanDims plan = Plan(1, 8, 1, 1, 16);
    ASSERT_TRUE(model->ValidatePlan(plan).ok());
    const Evaluation e = model->Evaluate(plan);
    for (OpKind op : {OpKind::kAttnOut, OpKind::kMlpDown}) {
      EXPECT_NEAR(e.decode[static_cast<int>(op)].comm_seconds / 80, c.seconds,
                  0.01 * c.seconds)
          << c.limit_bytes;
    }
  }
}

// Between the measured sizes the time is interpolated in log(size), above the
// largest one it grows with the bytes, a group larger than the measured 8
// ranks pays at least the 8-rank time, and a group spanning nodes keeps the
// hierarchical ring formula.
TEST(CostModelTest, MeasuredAllReduceInterpolatesAndSpansNodesByFormula) {
  internal::CostConstants k;
  k.nccl_table = 1;         // Blackwell
  k.all_reduce_kernel = 0;  // TensorRT-LLM
  k.nv_bytes_per_s = 900e9 * 0.8;
  k.ib_bytes_per_s = 50e9 * 0.8;
  k.nv_latency_seconds = 3e-6 * 0.27;
  k.ib_latency_seconds = 10e-6;
  internal::Traffic t;
  const internal::Group node{8, 8};
  // 512k and 1M elements: 17.2 and 24.7 us; halfway in log(size).
  EXPECT_NEAR(internal::TensorParallelAllReduceSeconds(k, 1 << 20, node, &t),
              17.2e-6, 1e-9);
  EXPECT_NEAR(internal::TensorParallelAllReduceSeconds(
                  k, std::sqrt(2.0) * (1 << 20), node, &t),
              (17.2e-6 + 24.7e-6) / 2, 1e-9);
  // The largest measured message, 512M elements (1 GiB): 2,600 us; twice as
  // large, twice the time.
  const double gib = 1024.0 * 1024 * 1024;
  EXPECT_NEAR(internal::TensorParallelAllReduceSeconds(k, 2 * gib, node, &t),
              2 * 2600.1e-6, 1e-9);
  // 16 ranks in one NVLink domain: the 8-rank time or the formula's, the
  // larger.
  const internal::Group domain{16, 16};
  EXPECT_DOUBLE_EQ(
      internal::TensorParallelAllReduceSeconds(k, 1 << 20, domain, &t),
      std::max(17.2e-6, internal::CollectiveSeconds(k, Collective::kAllReduce,
                                                    1 << 20, domain, &t)));
  const internal::Group two_nodes{16, 8};
  EXPECT_DOUBLE_EQ(
      internal::TensorParallelAllReduceSeconds(k, 1 << 20, two_nodes, &t),
      internal::CollectiveSeconds(k, Collective::kAllReduce, 1 << 20, two_nodes,
                                  &t));
}

// The measured kernel times belong to the NVLink they were measured on: a
// hardware spec with a slower link (an A100's 300 GB/s) keeps the ring formula
// over its own link instead of borrowing H100's times.
TEST(CostModelTest, MeasuredAllReduceOnlyOnTheLinkItWasMeasuredOn) {
  EXPECT_TRUE(internal::MeasuredAllReduceLinkMatches(0, 450e9));
  EXPECT_TRUE(internal::MeasuredAllReduceLinkMatches(1, 900e9));
  EXPECT_FALSE(internal::MeasuredAllReduceLinkMatches(0, 300e9));
  EXPECT_FALSE(internal::MeasuredAllReduceLinkMatches(1, 450e9));
  internal::CostConstants k;
  k.nccl_table = 0;
  k.nv_bytes_per_s = 300e9 * 0.8;
  k.nv_latency_seconds = 3e-6 * 0.27;
  k.measured_all_reduce_link = false;
  internal::Traffic t;
  const internal::Group node{8, 8};
  const double formula =
      internal::CollectiveSeconds(k, Collective::kAllReduce, 1 << 20, node, &t);
  EXPECT_DOUBLE_EQ(
      internal::TensorParallelAllReduceSeconds(k, 1 << 20, node, &t), formula);
  k.measured_all_reduce_link = true;
  EXPECT_NE(internal::TensorParallelAllReduceSeconds(k, 1 << 20, node, &t),
            formula);
}

TEST(CostModelTest, SequenceParallelResidualUsesReduceScatterAndAllGather) {
  auto model = Make({.model = "llama-3.1-70b", .gpus = 8});
  ASSERT_NE(model, nullptr);
  PlanDims plan = Plan(1, 8, 1);
  // A batch-split embedding leaves the residual token-split: each block then
  // starts with an all-gather and ends with a reduce-scatter (Megatron sequence
  // parallelism).
  plan.dims[static_cast<int>(OpKind::kMlpDown)] = ShardDim::kRow;
  plan.dims[static_cast<int>(OpKind::kAttnOut)] = ShardDim::kBatch;
  plan.dims[static_cast<int>(OpKind::kAttention)] = ShardDim::kBatch;
  plan.dims[static_cast<int>(OpKind::kQkv)] = ShardDim::kBatch;
  ASSERT_TRUE(model->ValidatePlan(plan).ok());
  const std::vector<CollectiveRecord> records =
      CostModelInspector::LayerCollectives(*model, plan, false, true, 16);
  // qkv/attention/attn_out batch: no collective; mlp_up column from TokenSplit:
  // all-gather; mlp_down row -> PartialSum -> TokenSplit residual:
  // reduce-scatter.
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].kind, Collective::kAllGather);
  EXPECT_EQ(records[1].kind, Collective::kReduceScatter);
}

TEST(CostModelTest, RuleTable) {
  EXPECT_EQ(TransitionCollective(Layout::kFull, Layout::kFeatureSplit, false),
            Collective::kNone);
  EXPECT_EQ(TransitionCollective(Layout::kFull, Layout::kTokenSplit, false),
            Collective::kNone);
  EXPECT_EQ(
      TransitionCollective(Layout::kFeatureSplit, Layout::kFeatureSplit, true),
      Collective::kNone);
  EXPECT_EQ(
      TransitionCollective(Layout::kFeatureSplit, Layout::kFeatureSplit, false),
      Collective::kAllGather);
  EXPECT_EQ(TransitionCollective(Layout::kFeatureSplit, Layout::kFull, false),
            Collective::kAllGather);
  EXPECT_EQ(
      TransitionCollective(Layout::kFeatureSplit, Layout::kTokenSplit, false),
      Collective::kAllToAll);
  EXPECT_EQ(TransitionCollective(Layout::kPartialSum, Layout::kFull, false),
            Collective::kAllReduce);
  EXPECT_EQ(
      TransitionCollective(Layout::kPartialSum, Layout::kTokenSplit, false),
      Collective::kReduceScatter);
  EXPECT_EQ(
      TransitionCollective(Layout::kPartialSum, Layout::kFeatureSplit, false),
      Collective::kReduceScatter);
  EXPECT_EQ(TransitionCollective(Layout::kTokenSplit, Layout::kFull, false),
            Collective::kAllGather);
  EXPECT_EQ(
      TransitionCollective(Layout::kTokenSplit, Layout::kFeatureSplit, false),
      Collective::kAllToAll);
  EXPECT_EQ(
      TransitionCollective(Layout::kTokenSplit, Layout::kTokenSplit, false),
      Collective::kNone);
}

TEST(CostModelTest, ExpertParallelDispatchAndCombineAreAllToAll) {
  auto model =
      Make({.model = "qwen3-235b-a22b", .gpus = 8, .weight_dtype = "fp8"});
  ASSERT_NE(model, nullptr);
  // attention data parallel, experts over 8 ranks
  PlanDims plan = Plan(8, 1, 1, 8);
  plan.dims[static_cast<int>(OpKind::kAttention)] = ShardDim::kBatch;
  ASSERT_TRUE(model->ValidatePlan(plan).ok());
  const std::vector<CollectiveRecord> records =
      CostModelInspector::LayerCollectives(*model, plan, true, true, 32);
  int all_to_all = 0;
  for (const CollectiveRecord& r : records) {
    if (r.kind == Collective::kAllToAll && r.group_size == 8) ++all_to_all;
  }
  EXPECT_EQ(all_to_all, 2);
  const Evaluation e = model->Evaluate(plan);
  EXPECT_GT(e.decode[static_cast<int>(OpKind::kExpertUp)].comm_seconds, 0);
  EXPECT_GT(e.decode[static_cast<int>(OpKind::kExpertDown)].comm_seconds, 0);
}

TEST(CostModelTest, TpGroupSpanningNodesIsNeverFaster) {
  for (int batch : {1, 16, 128}) {
    // tp = 16: one 16-GPU node (NVLink) vs two 8-GPU nodes (InfiniBand
    // between).
    auto inside =
        Make({.model = "llama-3.1-405b", .gpus = 16, .gpus_per_node = 16});
    auto spanning =
        Make({.model = "llama-3.1-405b", .gpus = 16, .gpus_per_node = 8});
    ASSERT_NE(inside, nullptr);
    ASSERT_NE(spanning, nullptr);
    const PlanDims plan = Plan(1, 16, 1, 1, batch);
    ASSERT_TRUE(inside->ValidatePlan(plan).ok());
    const Evaluation a = inside->Evaluate(plan);
    const Evaluation b = spanning->Evaluate(plan);
    EXPECT_GE(b.tpot_seconds, a.tpot_seconds) << batch;
    EXPECT_GE(b.ttft_seconds, a.ttft_seconds) << batch;
    EXPECT_LE(b.output_tokens_per_s, a.output_tokens_per_s) << batch;
    EXPECT_EQ(a.ib_decode_bytes, 0);
    EXPECT_GT(b.ib_decode_bytes, 0);
    // tp = 8 over 4-GPU nodes vs inside an 8-GPU node.
    auto inside8 =
        Make({.model = "llama-3.1-70b", .gpus = 8, .gpus_per_node = 8});
    auto spanning8 =
        Make({.model = "llama-3.1-70b", .gpus = 8, .gpus_per_node = 4});
    const PlanDims plan8 = Plan(1, 8, 1, 1, batch);
    EXPECT_GE(spanning8->Evaluate(plan8).tpot_seconds,
              inside8->Evaluate(plan8).tpot_seconds)
        << batch;
  }
}

// Roofline: every output token needs at least 2 FLOPs per active matmul
// parameter (the embedding lookup is not a matmul), so the cluster cannot
// exceed num_gpus * peak / (2 * matmul params per token).
TEST(CostModelTest, ThroughputNeverExceedsClusterRoofline) {
  std::mt19937 rng(7);
  for (const char* name :
       {"llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "deepseek-v3"}) {
    const int gpus = std::string(name) == "deepseek-v3" ? 32 : 8;
    auto model = Make({.model = name, .gpus = gpus, .concurrency = 0});
    ASSERT_NE(model, nullptr);
    const ModelDims& m = model->problem().model;
    const double matmul_params =
        m.ActiveParams() -
        (m.tie_embeddings ? 0.0 : static_cast<double>(m.vocab) * m.hidden);
    const double peak = model->problem().cluster.hardware.peak_flops_per_s[0];
    const double roofline = gpus * peak / (2 * matmul_params);
    int checked = 0;
    for (int tp = 1; tp <= 8; tp *= 2) {
      for (int batch : {1, 8, 64, 512, 4096}) {
        PlanDims plan = Plan(gpus / tp, tp, 1, 1, batch);
        if (m.is_moe()) plan.ep = std::min(m.experts, gpus);
        for (int i = 0; i < kNumOpKinds; ++i) {
          if (rng() % 3 == 0)
            plan.dims[i] = static_cast<ShardDim>(rng() % kNumShardDims);
        }
        if (!model->ValidatePlan(plan).ok()) continue;
        const Evaluation e = model->Evaluate(plan);
        ++checked;
        EXPECT_LE(e.output_tokens_per_s, roofline)
            << name << " tp " << tp << " b " << batch;
      }
    }
    EXPECT_GT(checked, 5) << name;
  }
}

// llama-3.1-70b, tp = 8, Megatron dims (every matmul and the vocab split 8
// ways):
//   per layer: qkv 8192*(64+2*8)*128 = 83,886,080; attn_out 8192*8192 =
//   67,108,864;
//              MLP 3*8192*28672 = 704,643,072; sum 855,638,016; x 80 =
//              68,451,041,280
//   embedding and LM head (untied): 2 * 128256*8192 = 2,101,346,304
//   total 70,552,387,584 params / 8 ranks * 2 bytes = 17,638,096,896 bytes per
//   GPU.
// KV cache: 2 (K,V) * 8 heads * 128 * 2 bytes = 4096 bytes per token per layer,
// 1 KV head
//   per rank at tp = 8 -> 512 bytes; x 80 layers = 40,960 bytes per token per
//   GPU; batch 16 x (2048 + 256) tokens -> 16 * 2304 * 40,960 = 1,509,949,440
//   bytes.
TEST(CostModelTest, GoldenLlama70bTp8Memory) {
  auto model =
      Make({.model = "llama-3.1-70b", .gpus = 8, .isl = 2048, .osl = 256});
  ASSERT_NE(model, nullptr);
  const Evaluation e = model->Evaluate(Plan(1, 8, 1, 1, 16));
  EXPECT_DOUBLE_EQ(e.weights_bytes, 17638096896.0);
  EXPECT_DOUBLE_EQ(e.kv_cache_bytes, 1509949440.0);
  EXPECT_TRUE(e.feasible) << InfeasibleReasonText(e);
  EXPECT_EQ(e.batch_size, 16);
}

// An FP4 KV cache holds 0.5 bytes of data and a one-byte block scale per 16
// values (every engine's FP4 cache; simulator/types.cc cites the allocations):
// the 512 bytes per token per layer and GPU of the golden above become
// 512 / 2 * 0.5625 = 144, so 16 x 2304 x 80 x 144 = 424,673,280 bytes; and
// a decode step reads the scales too, so its attention streams 0.5625 / 1 of
// the FP8 cache's KV bytes, not half.
TEST(CostModelTest, GoldenFp4KvCacheCarriesItsScales) {
  auto fp4 = Make({.model = "llama-3.1-70b",
                   .gpus = 8,
                   .isl = 2048,
                   .osl = 256,
                   .kv_cache_dtype = "fp4"});
  auto fp8 = Make({.model = "llama-3.1-70b",
                   .gpus = 8,
                   .isl = 2048,
                   .osl = 256,
                   .kv_cache_dtype = "fp8"});
  ASSERT_NE(fp4, nullptr);
  ASSERT_NE(fp8, nullptr);
  const Evaluation e4 = fp4->Evaluate(Plan(1, 8, 1, 1, 16));
  const Evaluation e8 = fp8->Evaluate(Plan(1, 8, 1, 1, 16));
  EXPECT_DOUBLE_EQ(e4.kv_cache_bytes, 424673280.0);
  EXPECT_DOUBLE_EQ(e4.kv_cache_bytes / e8.kv_cache_bytes, 0.5625);
  const int attention = static_cast<int>(OpKind::kAttention);
  EXPECT_NEAR(
      e4.decode[attention].memory_seconds / e8.decode[attention].memory_seconds,
      0.5625, 0.02);
}

// SGLang names its fp4_e2m1 KV cache "mxfp4", yet it keeps one exponent byte
// per 16 values, not per 32 as OCP MX would (simulator/types.cc cites
// kvfp4_tensor.py): its profile sizes the cache exactly as the NVFP4 engines'.
TEST(CostModelTest, SglangFp4KvCacheScalesEvery16Values) {
  const auto sglang = [](const std::string& kv_cache_dtype) {
    return Make({.model = "llama-3.1-70b",
                 .gpus = 8,
                 .isl = 2048,
                 .osl = 256,
                 .kv_cache_dtype = kv_cache_dtype,
                 .profile = "h100-sglang"});
  };
  auto fp4 = sglang("fp4");
  auto fp8 = sglang("fp8");
  ASSERT_NE(fp4, nullptr);
  ASSERT_NE(fp8, nullptr);
  // 0.5 + 1 / 16 bytes a value against FP8's 1; a 32-value block would give
  // 0.5 + 1 / 32 = 0.53125.
  EXPECT_DOUBLE_EQ(fp4->Evaluate(Plan(1, 8, 1, 1, 16)).kv_cache_bytes /
                       fp8->Evaluate(Plan(1, 8, 1, 1, 16)).kv_cache_bytes,
                   0.5625);
}

TEST(CostModelTest, KvHeadsReplicateBeyondKvHeadCount) {
  // llama-3.1-70b has 8 KV heads: at tp = 16 each rank still holds one full KV
  // head.
  auto model = Make({.model = "llama-3.1-70b", .gpus = 16});
  auto model8 = Make({.model = "llama-3.1-70b", .gpus = 8});
  const Evaluation e16 = model->Evaluate(Plan(1, 16, 1, 1, 16));
  const Evaluation e8 = model8->Evaluate(Plan(1, 8, 1, 1, 16));
  EXPECT_DOUBLE_EQ(e16.kv_cache_bytes, e8.kv_cache_bytes);
}

// DeepSeek-V3 MLA: the KV cache is the latent, kv_lora_rank + qk_rope_head_dim
// = 512 + 64 = 576 elements per token per layer, replicated over a head-split
// (column) tp group; 64 requests per replica over its 4 attention dp ranks:
//   16 requests x 2304 tokens x 61 layers x 576 x 2 bytes = 2,590,507,008 bytes
//   per GPU.
// A batch-split attention keeps ceil(16 / 8) = 2 requests per rank: 323,813,376
// bytes.
TEST(CostModelTest, GoldenMlaLatentKvCache) {
  auto model = Make({.model = "deepseek-v3", .gpus = 32});
  ASSERT_NE(model, nullptr);
  PlanDims plan = Plan(4, 8, 1, 32, 64);
  ASSERT_TRUE(model->ValidatePlan(plan).ok());
  EXPECT_DOUBLE_EQ(model->Evaluate(plan).kv_cache_bytes, 2590507008.0);
  plan.dims[static_cast<int>(OpKind::kAttention)] = ShardDim::kBatch;
  ASSERT_TRUE(model->ValidatePlan(plan).ok());
  EXPECT_DOUBLE_EQ(model->Evaluate(plan).kv_cache_bytes, 323813376.0);
}

// An MLA decode layer runs 13 kernels one after another where a grouped-query
// attention layer runs 9 (TensorRT-LLM's MLA.forward_absorption_generation
// adds the split projections, their RMSNorms and the absorbed k_b/v_b BMMs),
// so it is charged 13/9 of the per-layer overhead in decode (28/9 with
// DeepSeek sparse attention's indexer; hybrid linear-attention models pay
// their Gated DeltaNet and gated full-attention kernels), and prefill keeps
// the plain per-layer charge. With no prefill interleaved into decode
// (prefill_queue_fraction = 1) and one stage, raising layer_overhead_seconds
// by d adds layers x d x scale to the decode iteration.
TEST(CostModelTest, MlaDecodeLayersPayMoreKernelLaunchOverhead) {
  struct Case {
    std::string model;
    int gpus;
    PlanDims plan;
    double layers;
    double scale;
  };
  const std::vector<Case> cases = {
      {"deepseek-v3", 32, Plan(4, 8, 1, 32, 64), 61, 13.0 / 9.0},
      // DeepSeek sparse attention's indexer: 15 more kernels in series
      // (SGLang's Indexer.forward_cuda).
      {"deepseek-v3.2", 32, Plan(4, 8, 1, 32, 64), 61, 28.0 / 9.0},
      // Hybrid: 45 Gated DeltaNet layers at 2 more kernels and 15 gated
      // full-attention layers at 5 more (SGLang's Qwen3-Next layers).
      {"qwen3.5-397b-a17b", 16, Plan(2, 8, 1, 16, 32), 60,
       (9.0 + 0.75 * 2 + 0.25 * 5) / 9.0},
      {"llama-3.1-70b", 8, Plan(1, 8, 1, 1, 16), 80, 1.0},
  };
  constexpr double kDelta = 1e-4;
  for (const Case& c : cases) {
    shardplan::v1::ModelSource source;
    source.set_catalog_name(c.model);
    shardplan::v1::ClusterSpec cluster;
    cluster.set_hardware("h100-sxm-80gb");
    cluster.set_num_gpus(c.gpus);
    cluster.set_gpus_per_node(8);
    shardplan::v1::Workload workload;
    workload.set_input_tokens(2048);
    workload.set_output_tokens(256);
    workload.set_concurrency(16);
    workload.set_weight_dtype("bf16");
    workload.set_kv_cache_dtype("bf16");
    absl::StatusOr<Problem> problem =
        ProblemFromProto(source, cluster, workload);
    ASSERT_TRUE(problem.ok()) << problem.status();
    Calibration base = DefaultCalibration();
    base.prefill_queue_fraction = 1.0;
    base.layer_overhead_seconds = 0;
    Calibration more = base;
    more.layer_overhead_seconds = kDelta;
    absl::StatusOr<std::unique_ptr<const CostModel>> m0 =
        CostModel::Create(*problem, base);
    absl::StatusOr<std::unique_ptr<const CostModel>> m1 =
        CostModel::Create(*problem, more);
    ASSERT_TRUE(m0.ok() && m1.ok()) << c.model;
    ASSERT_TRUE((*m0)->ValidatePlan(c.plan).ok()) << c.model;
    const Evaluation e0 = (*m0)->Evaluate(c.plan);
    const Evaluation e1 = (*m1)->Evaluate(c.plan);
    EXPECT_NEAR(e1.decode_iteration_seconds - e0.decode_iteration_seconds,
                c.layers * kDelta * c.scale, 1e-9)
        << c.model;
    // Prefill pays the plain per-layer charge.
    EXPECT_NEAR(e1.prefill_seconds - e0.prefill_seconds, c.layers * kDelta,
                1e-9)
        << c.model;
  }
}

// MiniMax-M2.5 FP8 on 4 GPUs of an 8-GPU node, 1k/1k at `concurrency`, with
// KV-cache dtype `kv_dtype` ("": the default).
absl::StatusOr<Problem> MiniMaxOnFourGpus(const std::string& hardware,
                                          int concurrency,
                                          const std::string& kv_dtype) {
  shardplan::v1::ModelSource source;
  source.set_catalog_name("minimax-m2.5");
  shardplan::v1::ClusterSpec cluster;
  cluster.set_hardware(hardware);
  cluster.set_num_gpus(4);
  cluster.set_gpus_per_node(8);
  shardplan::v1::Workload workload;
  workload.set_input_tokens(1024);
  workload.set_output_tokens(1024);
  workload.set_concurrency(concurrency);
  workload.set_weight_dtype("fp8");
  if (!kv_dtype.empty()) workload.set_kv_cache_dtype(kv_dtype);
  return ProblemFromProto(source, cluster, workload);
}

// Routed BF16/FP8 experts on Blackwell stream their weights at the engine's
// grouped-GEMM bandwidth ratio (the fraction of HBM its MoE kernel reaches on
// B200 over the fraction on H100, from AIConfigurator's kernel tables): the
// shipped vLLM profile's block-FP8 fused MoE reaches 0.48 of B200's HBM
// where H100's reaches 0.79, so a memory-bound decode step's expert memory
// time is 0.79/0.48 of what a ratio of 1 gives; on H100 (the profiles' fit
// hardware) the ratio does not apply, and the dense GEMMs never see it.
TEST(CostModelTest, BlackwellGroupedExpertGemmsStreamAtTheEnginesRatio) {
  absl::StatusOr<CalibrationProfile> vllm = FindCalibrationProfile("vllm");
  ASSERT_TRUE(vllm.ok()) << vllm.status();
  const PlanDims plan = Plan(1, 4, 1, 1, 4);
  for (const std::string hardware : {"b200-sxm-180gb", "h100-sxm-80gb"}) {
    absl::StatusOr<Problem> problem = MiniMaxOnFourGpus(hardware, 4, "fp8");
    ASSERT_TRUE(problem.ok()) << problem.status();
    Calibration same = vllm->calibration;
    same.fp8_grouped_gemm_bandwidth_ratio = 1;
    absl::StatusOr<std::unique_ptr<const CostModel>> shipped =
        CostModel::Create(*problem, vllm->calibration);
    absl::StatusOr<std::unique_ptr<const CostModel>> at_one =
        CostModel::Create(*problem, same);
    ASSERT_TRUE(shipped.ok() && at_one.ok()) << hardware;
    ASSERT_TRUE((*shipped)->ValidatePlan(plan).ok()) << hardware;
    const Evaluation e = (*shipped)->Evaluate(plan);
    const Evaluation e1 = (*at_one)->Evaluate(plan);
    const double factor = hardware == "b200-sxm-180gb" ? 0.79 / 0.48 : 1.0;
    for (OpKind op : {OpKind::kExpertUp, OpKind::kExpertDown}) {
      const OpCost& c = e.decode[static_cast<int>(op)];
      const OpCost& c1 = e1.decode[static_cast<int>(op)];
      ASSERT_GT(c1.memory_seconds, c1.compute_seconds) << hardware;
      // Activations are a few kB against ~100 MB of expert weights a layer.
      EXPECT_NEAR(c.memory_seconds / c1.memory_seconds, factor, 0.01)
          << hardware;
    }
    const OpCost& qkv = e.decode[static_cast<int>(OpKind::kQkv)];
    EXPECT_EQ(qkv.memory_seconds,
              e1.decode[static_cast<int>(OpKind::kQkv)].memory_seconds)
        << hardware;
  }
}

// Native FP4 dense GEMMs on Blackwell stream their weights at the engine's
// dense FP4 bandwidth ratio (its NVFP4 GEMM's fraction of HBM over its FP8
// GEMM's on B200, from AIConfigurator's kernel tables): vLLM's NVFP4 linear
// layer reaches 0.491 of B200's HBM where its FP8 one reaches 0.636, so a
// memory-bound decode step's dense GEMM memory time is 0.636/0.491 of what a
// ratio of 1 gives. FP8 weights on B200 and FP4 weights on H100 (weight-only
// dequantising kernels, no FP4 tensor cores) do not see it.
TEST(CostModelTest, BlackwellFp4DenseGemmsStreamAtTheEnginesRatio) {
  struct Case {
    std::string hardware, weights;
    double factor;
    // The B200 figures with another architecture: the ratio is an SM100
    // measurement, so an SM120 part with FP4 tensor cores streams at 1.
    std::optional<GpuArchitecture> architecture;
  };
  for (const Case& c :
       {Case{"b200-sxm-180gb", "fp4", 0.636 / 0.491, std::nullopt},
        Case{"b200-sxm-180gb", "fp4", 0.636 / 0.491, GpuArchitecture::kSm103},
        Case{"b200-sxm-180gb", "fp4", 1.0, GpuArchitecture::kSm120},
        Case{"b200-sxm-180gb", "fp4", 1.0, GpuArchitecture::kUnknown},
        Case{"b200-sxm-180gb", "fp8", 1.0, std::nullopt},
        Case{"h100-sxm-80gb", "fp4", 1.0, std::nullopt}}) {
    const std::string label =
        absl::StrCat(c.hardware, " ", c.weights, " architecture ",
                     c.architecture ? static_cast<int>(*c.architecture) : -1);
    auto made = Make({.hardware = c.hardware,
                      .gpus = 4,
                      .concurrency = 4,
                      .weight_dtype = c.weights,
                      .kv_cache_dtype = "fp8",
                      .profile = "vllm"});
    ASSERT_NE(made, nullptr) << label;
    Problem problem = made->problem();
    if (c.architecture) problem.cluster.hardware.architecture = *c.architecture;
    Calibration same = made->calibration();
    absl::StatusOr<std::unique_ptr<const CostModel>> shipped =
        CostModel::Create(problem, same);
    ASSERT_TRUE(shipped.ok()) << shipped.status();
    same.fp4_dense_gemm_bandwidth_ratio = 1;
    absl::StatusOr<std::unique_ptr<const CostModel>> at_one =
        CostModel::Create(problem, same);
    ASSERT_TRUE(at_one.ok()) << at_one.status();
    const PlanDims plan = Plan(1, 4, 1);
    ASSERT_TRUE((*shipped)->ValidatePlan(plan).ok()) << label;
    const Evaluation e = (*shipped)->Evaluate(plan);
    const Evaluation e1 = (*at_one)->Evaluate(plan);
    for (OpKind op :
         {OpKind::kQkv, OpKind::kAttnOut, OpKind::kMlpUp, OpKind::kMlpDown}) {
      const OpCost& o = e.decode[static_cast<int>(op)];
      const OpCost& o1 = e1.decode[static_cast<int>(op)];
      ASSERT_GT(o1.memory_seconds, o1.compute_seconds) << label;
      // Activations are a few kB against ~100 MB of weights a layer.
      EXPECT_NEAR(o.memory_seconds / o1.memory_seconds, c.factor, 0.01)
          << label << " " << OpKindName(op);
    }
    // The KV-cache read is not a GEMM's weight stream.
    EXPECT_EQ(e.decode[static_cast<int>(OpKind::kAttention)].memory_seconds,
              e1.decode[static_cast<int>(OpKind::kAttention)].memory_seconds)
        << label;
  }
}

// The routed experts' grouped GEMMs keep their own ratio: the dense FP4 ratio
// does not reach them.
TEST(CostModelTest, Fp4DenseGemmRatioLeavesRoutedExpertsAlone) {
  absl::StatusOr<CalibrationProfile> vllm = FindCalibrationProfile("vllm");
  ASSERT_TRUE(vllm.ok()) << vllm.status();
  absl::StatusOr<Problem> problem = MiniMaxOnFourGpus("b200-sxm-180gb", 4, "");
  ASSERT_TRUE(problem.ok()) << problem.status();
  problem->workload.weight_dtype = Dtype::kFp4;
  Calibration same = vllm->calibration;
  same.fp4_dense_gemm_bandwidth_ratio = 1;
  absl::StatusOr<std::unique_ptr<const CostModel>> shipped =
      CostModel::Create(*problem, vllm->calibration);
  absl::StatusOr<std::unique_ptr<const CostModel>> at_one =
      CostModel::Create(*problem, same);
  ASSERT_TRUE(shipped.ok() && at_one.ok());
  const PlanDims plan = Plan(1, 4, 1, 1, 4);
  ASSERT_TRUE((*shipped)->ValidatePlan(plan).ok());
  const Evaluation e = (*shipped)->Evaluate(plan);
  const Evaluation e1 = (*at_one)->Evaluate(plan);
  for (OpKind op : {OpKind::kExpertUp, OpKind::kExpertDown}) {
    EXPECT_EQ(e.decode[static_cast<int>(op)].memory_seconds,
              e1.decode[static_cast<int>(op)].memory_seconds);
  }
  EXPECT_GT(e.decode[static_cast<int>(OpKind::kQkv)].memory_seconds,
            e1.decode[static_cast<int>(OpKind::kQkv)].memory_seconds);
}

// vLLM's default expert parallelism under attention dp (all2all backend
// allgather_reducescatter): each MoE layer all-gathers every dp rank's
// tokens (hidden states, top-k ids and weights) over the dp group and
// reduce-scatters the outputs back, NCCL collectives whose measured floor
// (AIConfigurator's B200 table: 8.6-8.7 us for two ranks) the per-hop ring
// latency does not reach. Without attention dp, or with the engines that
// dispatch by all-to-all, nothing changes.
TEST(CostModelTest, VllmExpertParallelGathersOverTheDpGroup) {
  absl::StatusOr<CalibrationProfile> vllm = FindCalibrationProfile("vllm");
  ASSERT_TRUE(vllm.ok()) << vllm.status();
  ASSERT_TRUE(vllm->calibration.expert_dispatch_gathers_over_dp);
  absl::StatusOr<Problem> problem = MiniMaxOnFourGpus("b200-sxm-180gb", 16, "");
  ASSERT_TRUE(problem.ok()) << problem.status();
  Calibration a2a = vllm->calibration;
  a2a.expert_dispatch_gathers_over_dp = false;
  absl::StatusOr<std::unique_ptr<const CostModel>> gathers =
      CostModel::Create(*problem, vllm->calibration);
  absl::StatusOr<std::unique_ptr<const CostModel>> all_to_all =
      CostModel::Create(*problem, a2a);
  ASSERT_TRUE(gathers.ok() && all_to_all.ok());
  const double hidden = 3072, top_k = 8;
  constexpr int kTokens = 8;  // per dp rank
  {
    const PlanDims plan = Plan(2, 2, 1, 4, 16);
    ASSERT_TRUE((*gathers)->ValidatePlan(plan).ok());
    const std::vector<CollectiveRecord> g =
        CostModelInspector::LayerCollectives(
            **gathers, plan, /*moe_layer=*/true, /*decode=*/true, kTokens);
    bool gathered = false, scattered = false;
    for (const CollectiveRecord& r : g) {
      EXPECT_NE(r.kind, Collective::kAllToAll);
      if (r.op == OpKind::kExpertUp && r.kind == Collective::kAllGather) {
        gathered = true;
        EXPECT_EQ(r.group_size, 2);
        EXPECT_DOUBLE_EQ(r.bytes, 2 * kTokens * (hidden * 2 + top_k * 8));
      }
      if (r.op == OpKind::kExpertDown && r.kind == Collective::kReduceScatter) {
        scattered = true;
        EXPECT_EQ(r.group_size, 2);
        EXPECT_DOUBLE_EQ(r.bytes, 2 * kTokens * hidden * 2);
      }
    }
    EXPECT_TRUE(gathered && scattered);
    bool dispatched = false;
    for (const CollectiveRecord& r : CostModelInspector::LayerCollectives(
             **all_to_all, plan, true, true, kTokens)) {
      dispatched |= r.kind == Collective::kAllToAll;
    }
    EXPECT_TRUE(dispatched);
    const Evaluation e = (*gathers)->Evaluate(plan);
    const Evaluation e1 = (*all_to_all)->Evaluate(plan);
    const double up =
        e.decode[static_cast<int>(OpKind::kExpertUp)].comm_seconds;
    const double up1 =
        e1.decode[static_cast<int>(OpKind::kExpertUp)].comm_seconds;
    // At least the measured two-rank floor per MoE layer where the ring
    // formula's all-to-all gives a fraction of it.
    EXPECT_GT(up, 2 * up1);
  }
  {
    // No attention dp: the experts' path is the all-to-all model's.
    const PlanDims plan = Plan(1, 4, 1, 4, 16);
    const std::vector<CollectiveRecord> g =
        CostModelInspector::LayerCollectives(**gathers, plan, true, true,
                                             kTokens);
    const std::vector<CollectiveRecord> g1 =
        CostModelInspector::LayerCollectives(**all_to_all, plan, true, true,
                                             kTokens);
    ASSERT_EQ(g.size(), g1.size());
    for (size_t i = 0; i < g.size(); ++i) {
      EXPECT_EQ(g[i].kind, g1[i].kind);
      EXPECT_EQ(g[i].bytes, g1[i].bytes);
    }
    EXPECT_EQ((*gathers)->Evaluate(plan).tpot_seconds,
              (*all_to_all)->Evaluate(plan).tpot_seconds);
  }
}

// SGLang's expert parallelism without DP attention (the default
// --moe-a2a-backend "none"): every rank of the TP group holds all tokens,
// runs its own experts on them and the MoE block all-reduces the outputs over
// the TP group; nothing is dispatched or combined, and the residual stays
// whole (no all-gather before the next attention). Under DP attention the
// dispatch is still the all-gather over the DP ranks.
TEST(CostModelTest, SglangExpertParallelWithoutDpAttentionAllReduces) {
  absl::StatusOr<CalibrationProfile> sglang = FindCalibrationProfile("sglang");
  ASSERT_TRUE(sglang.ok()) << sglang.status();
  ASSERT_TRUE(sglang->calibration.expert_parallel_all_reduces_without_dp);
  absl::StatusOr<Problem> problem = MiniMaxOnFourGpus("b200-sxm-180gb", 16, "");
  ASSERT_TRUE(problem.ok()) << problem.status();
  absl::StatusOr<std::unique_ptr<const CostModel>> model =
      CostModel::Create(*problem, sglang->calibration);
  ASSERT_TRUE(model.ok()) << model.status();
  const double hidden = 3072;
  constexpr int kTokens = 16;
  {
    const PlanDims plan = Plan(1, 4, 1, 4, 16);
    ASSERT_TRUE((*model)->ValidatePlan(plan).ok());
    int expert_reduces = 0;
    for (const CollectiveRecord& r : CostModelInspector::LayerCollectives(
             **model, plan, /*moe_layer=*/true, /*decode=*/true, kTokens)) {
      EXPECT_NE(r.kind, Collective::kAllToAll) << static_cast<int>(r.op);
      EXPECT_NE(r.kind, Collective::kAllGather) << static_cast<int>(r.op);
      if (r.op == OpKind::kExpertDown && r.kind == Collective::kAllReduce) {
        ++expert_reduces;
        EXPECT_EQ(r.group_size, 4);
        EXPECT_DOUBLE_EQ(r.bytes, kTokens * hidden * 2);
      }
    }
    EXPECT_EQ(expert_reduces, 1);
  }
  // DP attention: experts split over part of the group are reached by the
  // all-gather, over the whole group by DeepEP's all-to-all.
  for (const int ep : {2, 4}) {
    const PlanDims plan = Plan(2, 2, 1, ep, 16);
    ASSERT_TRUE((*model)->ValidatePlan(plan).ok()) << ep;
    bool gathered = false, dispatched = false;
    for (const CollectiveRecord& r : CostModelInspector::LayerCollectives(
             **model, plan, true, true, kTokens)) {
      if (r.op != OpKind::kExpertUp) continue;
      gathered |= r.kind == Collective::kAllGather;
      dispatched |= r.kind == Collective::kAllToAll;
    }
    EXPECT_EQ(gathered, ep == 2) << ep;
    EXPECT_EQ(dispatched, ep == 4) << ep;
  }
}

TEST(CostModelTest, ValidatePlanErrorsNameTheField) {
  auto model = Make({.model = "llama-3.1-70b", .gpus = 8});
  ASSERT_NE(model, nullptr);
  struct Case {
    PlanDims plan;
    std::string prefix;
  };
  std::vector<Case> cases;
  cases.push_back({Plan(1, 8, 2), "plan.replicas*dp*tp*pp"});
  cases.push_back({Plan(0, 8, 1), "plan.dp"});
  cases.push_back({Plan(8, 1, 1, 2), "plan.ep"});
  {
    PlanDims p = Plan(8, 1, 1);
    p.dims[static_cast<int>(OpKind::kAttention)] = ShardDim::kRow;
    cases.push_back({p, "plan.operator_sharding.attention"});
  }
  {
    PlanDims p = Plan(8, 1, 1);
    p.dims[static_cast<int>(OpKind::kRouter)] = ShardDim::kRow;
    cases.push_back({p, "plan.operator_sharding.router"});
  }
  {
    PlanDims p = Plan(4, 1, 2);
    p.num_stage_layers = 2;
    p.stage_layers[0] = 10;
    p.stage_layers[1] = 10;
    cases.push_back({p, "plan.stage_layers"});
  }
  {
    PlanDims p = Plan(8, 1, 1);
    p.batch_size = -1;
    cases.push_back({p, "plan.batch_size"});
  }
  {
    PlanDims p = Plan(8, 1, 1);
    p.micro_batches = kMaxBatchSize + 1;
    cases.push_back({p, "plan.micro_batches"});
  }
  for (const Case& c : cases) {
    const absl::Status s = model->ValidatePlan(c.plan);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.prefix;
    EXPECT_THAT(std::string(s.message()), StartsWith(c.prefix));
  }
  // tp = 3 does not divide 64 heads (on a 24-GPU cluster so the product is
  // right).
  auto model24 = Make({.model = "llama-3.1-70b", .gpus = 24});
  const absl::Status s = model24->ValidatePlan(Plan(8, 3, 1));
  EXPECT_THAT(std::string(s.message()),
              StartsWith("plan.tp must divide num_attention_heads"));
  // MoE: ep at most the experts (it need not divide them: redundant slots),
  // and it must divide dp*tp.
  auto moe = Make({.model = "mixtral-8x7b", .gpus = 8});
  EXPECT_THAT(std::string(moe->ValidatePlan(Plan(1, 8, 1, 16)).message()),
              StartsWith("plan.ep must be at most num_experts"));
}

// An ep that does not divide the experts (EP72 of DeepSeek's 256, as SGLang
// deploys it with EPLB's redundant experts) gives every rank ceil(256 / 72) =
// 4 expert slots: the same weights per GPU as EP64, where 4 divides evenly,
// and more than EP128's 2.
TEST(CostModelTest, RedundantExpertSlotsAreCeilOfExpertsOverEp) {
  auto weights = [](int ep) {
    auto model = Make({.model = "deepseek-v3",
                       .gpus = ep,
                       .concurrency = 8,
                       .weight_dtype = "fp8"});
    const PlanDims p = Plan(ep, 1, 1, ep);
    EXPECT_TRUE(model->ValidatePlan(p).ok()) << model->ValidatePlan(p);
    return model->Evaluate(p).weights_bytes;
  };
  const double ep64 = weights(64);
  EXPECT_GT(ep64, 0);
  EXPECT_DOUBLE_EQ(weights(72), ep64);
  EXPECT_LT(weights(128), ep64);
}

TEST(CostModelTest, UnvalidatedGarbagePlanIsInfeasibleNotACrash) {
  auto model = Make({.model = "llama-3.1-8b", .gpus = 8});
  PlanDims p = Plan(8, 1, 1);
  p.pp = 1000;
  EXPECT_FALSE(model->Evaluate(p).feasible);
  p = Plan(0, 0, 1);
  EXPECT_FALSE(model->Evaluate(p).feasible);
  p = Plan(4, 1, 2);
  p.num_stage_layers = 2;
  p.stage_layers[0] = -5;
  p.stage_layers[1] = 37;
  EXPECT_FALSE(model->Evaluate(p).feasible);
}

TEST(CostModelTest, Llama405bOnOneGpuIsInfeasibleWithReason) {
  auto model = Make({.model = "llama-3.1-405b", .gpus = 1});
  ASSERT_NE(model, nullptr);
  const Evaluation e = model->Evaluate(Plan(1, 1, 1));
  EXPECT_FALSE(e.feasible);
  EXPECT_EQ(e.reason, InfeasibleReason::kWeightsExceedMemory);
  EXPECT_GT(e.reason_value, 800e9);  // ~405e9 params * 2 bytes
  EXPECT_EQ(e.output_tokens_per_s, 0);
  EXPECT_THAT(InfeasibleReasonText(e), HasSubstr("weights need"));
}

TEST(CostModelTest, KvCacheOverflowIsInfeasible) {
  auto model =
      Make({.model = "llama-3.1-70b", .gpus = 8, .isl = 8192, .osl = 2048});
  const Evaluation e = model->Evaluate(Plan(1, 8, 1, 1, 4096));
  EXPECT_FALSE(e.feasible);
  EXPECT_EQ(e.reason, InfeasibleReason::kKvCacheExceedsMemory);
}

// At the workload's fixed concurrency, requests beyond what the KV cache holds
// queue: the engine runs the batch that fits, and each request waits, by
// Little's law over the closed loop, S * queued / running for a slot held
// S = TTFT + (OSL - 1) * TPOT.
TEST(CostModelTest, KvCacheOverflowQueuesAtFixedConcurrency) {
  const CaseSetup setup{.model = "llama-3.1-70b",
                        .gpus = 2,
                        .isl = 8192,
                        .osl = 1024,
                        .concurrency = 64,
                        .weight_dtype = "fp8"};
  auto model = Make(setup);
  ASSERT_NE(model, nullptr);
  const Evaluation e = model->Evaluate(Plan(1, 2, 1));
  ASSERT_TRUE(e.feasible) << InfeasibleReasonText(e);
  EXPECT_EQ(e.batch_size, 64);
  ASSERT_GE(e.running_batch, 1);
  ASSERT_LT(e.running_batch, 64);
  EXPECT_EQ(e.queued_requests, 64 - e.running_batch);
  EXPECT_LE(e.weights_bytes + e.kv_cache_bytes + e.activations_bytes,
            e.capacity_bytes);

  // The running batch is the largest that fits: one more does not.
  CaseSetup free_batch = setup;
  free_batch.concurrency = 0;
  auto chooser = Make(free_batch);
  const Evaluation more =
      chooser->Evaluate(Plan(1, 2, 1, 1, e.running_batch + 1));
  EXPECT_FALSE(more.feasible);
  EXPECT_EQ(more.reason, InfeasibleReason::kKvCacheExceedsMemory);

  // Throughput and TPOT are the running batch's; TTFT adds the queue wait.
  const Evaluation running =
      chooser->Evaluate(Plan(1, 2, 1, 1, e.running_batch));
  ASSERT_TRUE(running.feasible);
  EXPECT_DOUBLE_EQ(e.output_tokens_per_s, running.output_tokens_per_s);
  EXPECT_DOUBLE_EQ(e.tpot_seconds, running.tpot_seconds);
  const double slot_seconds =
      running.ttft_seconds + (1024 - 1) * running.tpot_seconds;
  EXPECT_NEAR(e.queue_wait_seconds,
              slot_seconds * (64 - e.running_batch) / e.running_batch,
              1e-9 * slot_seconds);
  EXPECT_NEAR(e.ttft_seconds, running.ttft_seconds + e.queue_wait_seconds,
              1e-9 * e.ttft_seconds);

  // No overflow: nothing queues.
  CaseSetup small = setup;
  small.concurrency = e.running_batch;
  const Evaluation fits = Make(small)->Evaluate(Plan(1, 2, 1));
  EXPECT_EQ(fits.queued_requests, 0);
  EXPECT_EQ(fits.running_batch, e.running_batch);
  EXPECT_EQ(fits.queue_wait_seconds, 0);
}

// TensorRT-LLM sizes its KV pool as a share of the memory left free after
// the weights (Calibration::kv_pool_from_free_memory), so the reserve is not
// taken from the weights again: more requests run than under a share of the
// whole memory, and the largest batch that fits is the one whose KV cache
// is within (1 - reserve) x (HBM - weights - activations).
TEST(CostModelTest, TrtllmKvPoolIsAShareOfTheFreeMemory) {
  const CaseSetup setup{.model = "llama-3.1-70b",
                        .gpus = 2,
                        .isl = 8192,
                        .osl = 1024,
                        .concurrency = 64,
                        .weight_dtype = "fp8",
                        .profile = "trtllm"};
  auto free_pool = Make(setup);
  ASSERT_NE(free_pool, nullptr);
  ASSERT_TRUE(free_pool->calibration().kv_pool_from_free_memory);
  Calibration whole = free_pool->calibration();
  whole.kv_pool_from_free_memory = false;
  absl::StatusOr<std::unique_ptr<const CostModel>> whole_pool =
      CostModel::Create(free_pool->problem(), whole);
  ASSERT_TRUE(whole_pool.ok()) << whole_pool.status();

  const Evaluation f = free_pool->Evaluate(Plan(1, 2, 1));
  const Evaluation w = (*whole_pool)->Evaluate(Plan(1, 2, 1));
  ASSERT_TRUE(f.feasible && w.feasible);
  ASSERT_GT(w.queued_requests, 0);
  EXPECT_GT(f.running_batch, w.running_batch);
  EXPECT_DOUBLE_EQ(w.kv_room_bytes,
                   w.capacity_bytes - w.weights_bytes - w.activations_bytes);
  const double hbm = free_pool->problem().cluster.hardware.hbm_bytes;
  EXPECT_NEAR(f.kv_room_bytes,
              0.9 * (hbm - f.weights_bytes - f.activations_bytes),
              1e-6 * f.kv_room_bytes);
  // The running batch is the largest whose KV cache fits that room.
  const double per_request = f.kv_cache_bytes / f.running_batch;
  EXPECT_LE(f.running_batch * per_request, f.kv_room_bytes);
  EXPECT_GT((f.running_batch + 1) * per_request, f.kv_room_bytes);
}

// vLLM admits a request once its prompt fits and preempts running requests
// when the cache runs out: the same Little's-law wait, but the share of a
// running request's KV taken after admission ((ctx - ISL) / ctx, ctx = ISL +
// OSL / 2) falls after the first token, in the per-request TPOT. SGLang holds
// the same KV per request but admits against the running requests' estimated
// output, so its wait stays before the first token.
TEST(CostModelTest, KvCacheOverflowPreemptsOnVllm) {
  const CaseSetup setup{.model = "llama-3.1-70b",
                        .gpus = 2,
                        .isl = 1024,
                        .osl = 8192,
                        .concurrency = 64,
                        .weight_dtype = "fp8",
                        .profile = "h100-vllm"};
  const Evaluation e = Make(setup)->Evaluate(Plan(1, 2, 1));
  ASSERT_TRUE(e.feasible) << InfeasibleReasonText(e);
  ASSERT_GE(e.running_batch, 1);
  ASSERT_LT(e.running_batch, 64);
  CaseSetup free_batch = setup;
  free_batch.concurrency = 0;
  const Evaluation running =
      Make(free_batch)->Evaluate(Plan(1, 2, 1, 1, e.running_batch));
  ASSERT_TRUE(running.feasible);
  const double slot_seconds =
      running.ttft_seconds + (8192 - 1) * running.tpot_seconds;
  const double wait_seconds =
      slot_seconds * (64 - e.running_batch) / e.running_batch;
  const double share = 4096.0 / (1024 + 4096);  // OSL / 2 of ISL + OSL / 2
  EXPECT_NEAR(e.queue_wait_seconds + e.preemption_wait_seconds, wait_seconds,
              1e-9 * wait_seconds);
  EXPECT_NEAR(e.preemption_wait_seconds, share * wait_seconds,
              1e-9 * wait_seconds);
  EXPECT_NEAR(e.ttft_seconds, running.ttft_seconds + e.queue_wait_seconds,
              1e-9 * e.ttft_seconds);
  EXPECT_NEAR(e.tpot_seconds,
              running.tpot_seconds + e.preemption_wait_seconds / (8192 - 1),
              1e-9 * e.tpot_seconds);
  // The engine's token rate is the running batch's.
  EXPECT_DOUBLE_EQ(e.output_tokens_per_s, running.output_tokens_per_s);
  // SGLang: the same running batch, the whole wait before the first token.
  CaseSetup sglang = setup;
  sglang.profile = "h100-sglang";
  const Evaluation g = Make(sglang)->Evaluate(Plan(1, 2, 1));
  EXPECT_EQ(g.running_batch, e.running_batch);
  EXPECT_EQ(g.preemption_wait_seconds, 0);
  EXPECT_GT(g.queue_wait_seconds, e.queue_wait_seconds);
}

TEST(CostModelTest, KvCacheOverflowStaysInfeasibleWhenNoRequestFits) {
  // BF16 Llama-3.1-70B on 2 GPUs: ~70 GB of weights per GPU leave room for
  // less than one 64k-token context.
  auto model = Make({.model = "llama-3.1-70b",
                     .gpus = 2,
                     .isl = 60000,
                     .osl = 4096,
                     .concurrency = 8});
  ASSERT_NE(model, nullptr);
  const Evaluation e = model->Evaluate(Plan(1, 2, 1));
  EXPECT_FALSE(e.feasible);
  EXPECT_EQ(e.reason, InfeasibleReason::kKvCacheExceedsMemory);
  EXPECT_EQ(e.queued_requests, 0);
}

TEST(CostModelTest, KvCacheQueueWaitCountsAgainstTheTtftSlo) {
  CaseSetup setup{.model = "llama-3.1-70b",
                  .gpus = 2,
                  .isl = 8192,
                  .osl = 1024,
                  .concurrency = 64,
                  .weight_dtype = "fp8"};
  const Evaluation queued = Make(setup)->Evaluate(Plan(1, 2, 1));
  ASSERT_TRUE(queued.feasible);
  ASSERT_GT(queued.queue_wait_seconds, 0);
  // An SLO the running batch meets but the queued requests do not.
  setup.max_ttft_ms =
      (queued.ttft_seconds - 0.5 * queued.queue_wait_seconds) * 1e3;
  const Evaluation e = Make(setup)->Evaluate(Plan(1, 2, 1));
  EXPECT_FALSE(e.feasible);
  EXPECT_EQ(e.reason, InfeasibleReason::kTtftSlo);
  EXPECT_EQ(e.output_tokens_per_s, 0);
}

TEST(CostModelTest, SloViolationsAreInfeasible) {
  auto tpot = Make({.model = "llama-3.1-70b", .gpus = 8, .max_tpot_ms = 1});
  const Evaluation a = tpot->Evaluate(Plan(1, 8, 1, 1, 16));
  EXPECT_FALSE(a.feasible);
  EXPECT_EQ(a.reason, InfeasibleReason::kTpotSlo);
  auto ttft = Make({.model = "llama-3.1-70b", .gpus = 8, .max_ttft_ms = 1});
  const Evaluation b = ttft->Evaluate(Plan(1, 8, 1, 1, 16));
  EXPECT_FALSE(b.feasible);
  EXPECT_EQ(b.reason, InfeasibleReason::kTtftSlo);
}

TEST(CostModelTest, BestBatchMaximisesThroughputWithinSlo) {
  auto model = Make({.model = "llama-3.1-70b",
                     .gpus = 8,
                     .concurrency = 0,
                     .max_tpot_ms = 40});
  ASSERT_NE(model, nullptr);
  const Evaluation best = model->Evaluate(Plan(1, 8, 1));
  ASSERT_TRUE(best.feasible) << InfeasibleReasonText(best);
  EXPECT_LE(best.tpot_seconds, 0.040);
  for (int b : BatchSizeCandidates()) {
    const Evaluation e = model->Evaluate(Plan(1, 8, 1, 1, b));
    if (e.feasible) {
      EXPECT_LE(e.output_tokens_per_s, best.output_tokens_per_s) << b;
    }
  }
  // Concurrency set: the batch is the concurrency.
  auto fixed = Make({.model = "llama-3.1-70b", .gpus = 8, .concurrency = 24});
  EXPECT_EQ(fixed->Evaluate(Plan(1, 8, 1)).batch_size, 24);
}

TEST(CostModelTest, PipelineStagesSendActivations) {
  auto model = Make({.model = "llama-3.1-70b", .gpus = 16});
  const Evaluation e = model->Evaluate(Plan(1, 8, 2, 1, 16));
  EXPECT_GT(e.ib_decode_bytes, 0);  // stage boundary between two 8-GPU nodes
  EXPECT_TRUE(e.feasible);
  // An explicit, uneven stage split changes the worst stage.
  PlanDims uneven = Plan(1, 8, 2, 1, 16);
  uneven.num_stage_layers = 2;
  uneven.stage_layers[0] = 60;
  uneven.stage_layers[1] = 20;
  ASSERT_TRUE(model->ValidatePlan(uneven).ok());
  const Evaluation u = model->Evaluate(uneven);
  EXPECT_GT(u.weights_bytes, e.weights_bytes);
  EXPECT_GT(u.tpot_seconds, e.tpot_seconds);
}

TEST(CostModelTest, EvaluateIsDeterministic) {
  auto a = Make({.model = "deepseek-v3", .gpus = 32});
  auto b = Make({.model = "deepseek-v3", .gpus = 32});
  PlanDims plan = Plan(4, 8, 1, 32, 64);
  plan.dims[static_cast<int>(OpKind::kAttention)] = ShardDim::kBatch;
  ASSERT_TRUE(a->ValidatePlan(plan).ok());
  const Evaluation x = a->Evaluate(plan);
  const Evaluation y = a->Evaluate(plan);
  const Evaluation z = b->Evaluate(plan);
  for (const Evaluation* e : {&y, &z}) {
    EXPECT_EQ(x.output_tokens_per_s, e->output_tokens_per_s);
    EXPECT_EQ(x.ttft_seconds, e->ttft_seconds);
    EXPECT_EQ(x.tpot_seconds, e->tpot_seconds);
    EXPECT_EQ(x.weights_bytes, e->weights_bytes);
    EXPECT_EQ(x.nvlink_decode_bytes, e->nvlink_decode_bytes);
    EXPECT_EQ(x.ib_decode_bytes, e->ib_decode_bytes);
    for (int i = 0; i < kNumOpKinds; ++i) {
      EXPECT_EQ(x.decode[i].comm_seconds, e->decode[i].comm_seconds);
      EXPECT_EQ(x.prefill[i].compute_seconds, e->prefill[i].compute_seconds);
    }
  }
}

// Evaluate's guard refuses a dim code out of range at any operator (a
// caller that skipped ValidatePlan) and lets every valid code through: the
// codes are tested all at once, so the edges of the byte test are covered
// (the first invalid code, 127/128, and codes whose test carries into the
// next operator's byte).
TEST(CostModelTest, EvaluateRefusesOutOfRangeDimCodes) {
  auto model = Make({.model = "llama-3.1-70b", .gpus = 8});
  const PlanDims base = Plan(1, 8, 1, 1, 16);
  ASSERT_TRUE(model->ValidatePlan(base).ok());
  ASSERT_TRUE(model->Evaluate(base).feasible);
  for (int op = 0; op < kNumOpKinds; ++op) {
    for (int code :
         {kNumShardDims, kNumShardDims + 1, 127, 128, 132, 133, 200, 255}) {
      PlanDims plan = base;
      plan.dims[op] = static_cast<ShardDim>(code);
      const Evaluation e = model->Evaluate(plan);
      EXPECT_FALSE(e.feasible) << "operator " << op << " code " << code;
      EXPECT_EQ(e.reason, InfeasibleReason::kNone)
          << "operator " << op << " code " << code;
      EXPECT_EQ(e.output_tokens_per_s, 0);
    }
    for (int code = 0; code < kNumShardDims; ++code) {
      // Every valid code passes the guard: the evaluation runs (a predicted
      // TPOT), feasible or not.
      PlanDims plan = base;
      plan.dims[op] = static_cast<ShardDim>(code);
      EXPECT_GT(model->Evaluate(plan).tpot_seconds, 0)
          << "operator " << op << " code " << code;
    }
  }
}

TEST(CostModelTest, MegatronPlanRules) {
  {
    auto model = Make({.model = "llama-3.1-70b", .gpus = 16});
    const PlanDims p = MegatronPlan(*model);
    EXPECT_EQ(p.tp, 8);
    EXPECT_EQ(p.pp, 1);
    EXPECT_EQ(p.dp, 2);
    EXPECT_EQ(p.dims, MegatronShardDims());
    EXPECT_TRUE(model->ValidatePlan(p).ok());
  }
  {
    // 405B bf16 = ~811 GB of weights: 101 GB per GPU at tp = 8 does not fit; pp
    // = 2 does.
    auto model = Make({.model = "llama-3.1-405b", .gpus = 16});
    const PlanDims p = MegatronPlan(*model);
    EXPECT_EQ(p.tp, 8);
    EXPECT_EQ(p.pp, 2);
    EXPECT_EQ(p.dp, 1);
    EXPECT_TRUE(model->Evaluate(p).feasible);
  }
  {
    auto model = Make({.model = "mixtral-8x7b", .gpus = 16});
    const PlanDims p = MegatronPlan(*model);
    EXPECT_EQ(p.tp, 8);
    EXPECT_EQ(p.ep, 8);  // largest divisor of 8 experts dividing dp*tp = 16
    EXPECT_TRUE(model->ValidatePlan(p).ok());
  }
  {
    // Does not fit at all: still a valid plan, infeasible with a reason.
    auto model = Make({.model = "llama-3.1-405b", .gpus = 2});
    const PlanDims p = MegatronPlan(*model);
    EXPECT_TRUE(model->ValidatePlan(p).ok());
    EXPECT_FALSE(model->Evaluate(p).feasible);
  }
}

// Random degrees on `gpus` GPUs (tp up to 8, pp up to 4, dp filling the
// rest, ep up to 32) and random operator dims; false (nothing more drawn)
// when tp x pp does not divide the GPUs.
bool RandomDegreesAndDims(int gpus, std::mt19937* rng, PlanDims* p) {
  p->tp = 1 << ((*rng)() % 4);
  p->pp = 1 << ((*rng)() % 3);
  if (gpus % (p->tp * p->pp) != 0) return false;
  p->dp = gpus / (p->tp * p->pp);
  p->ep = 1 << ((*rng)() % 6);
  for (int d = 0; d < kNumOpKinds; ++d) {
    p->dims[d] = static_cast<ShardDim>((*rng)() % 5);
  }
  return true;
}

// Every catalog model, a stream of random valid plans: finite, non-negative
// predictions.
TEST(CostModelTest, FuzzEveryCatalogModel) {
  std::mt19937 rng(1234);
  for (const shardplan::v1::ModelSpec& spec : CatalogModels()) {
    for (int gpus : {8, 32}) {
      auto model = Make({.model = spec.name(), .gpus = gpus, .concurrency = 0});
      ASSERT_NE(model, nullptr) << spec.name();
      int valid = 0;
      for (int i = 0; i < 200; ++i) {
        PlanDims p;
        if (!RandomDegreesAndDims(gpus, &rng, &p)) continue;
        p.micro_batches = static_cast<int>(rng() % 5);
        p.batch_size = (rng() % 4 == 0) ? 0 : static_cast<int>(rng() % 600);
        if (!model->ValidatePlan(p).ok()) continue;
        ++valid;
        const Evaluation e = model->Evaluate(p);
        EXPECT_TRUE(std::isfinite(e.tpot_seconds) && e.tpot_seconds > 0)
            << spec.name();
        EXPECT_TRUE(std::isfinite(e.ttft_seconds) && e.ttft_seconds > 0)
            << spec.name();
        EXPECT_TRUE(std::isfinite(e.output_tokens_per_s) &&
                    e.output_tokens_per_s >= 0);
        EXPECT_GE(e.weights_bytes, 0);
        EXPECT_GE(e.kv_cache_bytes, 0);
        EXPECT_GE(e.nvlink_decode_bytes, 0);
        EXPECT_GE(e.ib_decode_bytes, 0);
        EXPECT_GE(e.batch_size, 1);
        if (e.feasible) {
          EXPECT_GT(e.output_tokens_per_s, 0);
        }
      }
      EXPECT_GT(valid, 0) << spec.name();
    }
  }
}

// The breakdown and the per-pass seconds sum only the operators a pass
// declares it charges; a cost put on any other operator would be lost. Every
// catalog model, random valid plans (every dim, MoE layers priced for dense
// models too), decode and prefill.
TEST(CostModelTest, PassesChargeOnlyTheirDeclaredOperators) {
  std::mt19937 rng(99);
  for (const shardplan::v1::ModelSpec& spec : CatalogModels()) {
    auto model = Make({.model = spec.name(), .gpus = 32, .concurrency = 0});
    ASSERT_NE(model, nullptr) << spec.name();
    int valid = 0;
    for (int i = 0; i < 100; ++i) {
      PlanDims p;
      if (!RandomDegreesAndDims(32, &rng, &p) || !model->ValidatePlan(p).ok()) {
        continue;
      }
      ++valid;
      for (int tokens : {1, 37, 4096}) {
        EXPECT_THAT(
            CostModelInspector::ChargedOutsideDeclaredRange(*model, p, tokens),
            ::testing::IsEmpty())
            << spec.name() << " tp " << p.tp << " pp " << p.pp << " ep " << p.ep
            << " tokens " << tokens;
      }
    }
    EXPECT_GT(valid, 0) << spec.name();
  }
}

TEST(CostModelTest, BatchSizeCandidatesAscendToMax) {
  const std::vector<int>& c = BatchSizeCandidates();
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c.front(), 1);
  EXPECT_EQ(c.back(), kMaxBatchSize);
  for (size_t i = 1; i < c.size(); ++i) EXPECT_LT(c[i - 1], c[i]);
  EXPECT_THAT(c, ::testing::IsSupersetOf({1, 2, 4, 8, 12, 16, 24, 32, 48, 64}));
}

TEST(CostModelTest, CreateRejectsBadCalibration) {
  auto model = Make({.model = "llama-3.1-8b", .gpus = 1});
  Calibration bad;
  bad.hbm_efficiency = 0;
  EXPECT_EQ(CostModel::Create(model->problem(), bad).status().code(),
            absl::StatusCode::kInvalidArgument);
  Calibration nan;
  nan.gemm_efficiency = std::nan("");
  EXPECT_FALSE(CostModel::Create(model->problem(), nan).ok());
  Calibration negative;
  negative.ttft_inflight_prefills = -1;
  EXPECT_EQ(CostModel::Create(model->problem(), negative).status().code(),
            absl::StatusCode::kInvalidArgument);
  Calibration zero_fp4_ratio;
  zero_fp4_ratio.fp4_dense_gemm_bandwidth_ratio = 0;
  EXPECT_EQ(CostModel::Create(model->problem(), zero_fp4_ratio).status().code(),
            absl::StatusCode::kInvalidArgument);
  Calibration above_one;
  above_one.fp4_dense_gemm_bandwidth_ratio = 1.5;
  EXPECT_THAT(CheckCalibrationRanges(above_one).message(),
              HasSubstr("fp4_dense_gemm_bandwidth_ratio"));
}

// TTFT term by term (pp = 1, so the prefill's worst stage is the whole
// prefill): each in-flight prefill adds (B - 1) / B of one request's prefill,
// each queued one (prefill_queue_fraction) (B - 1) prefills, each wait
// iteration (B - 1) / B decode iterations; nothing at batch 1.
TEST(CostModelTest, TtftTermsAddUp) {
  auto base = Make({.model = "llama-3.1-8b", .gpus = 1});
  ASSERT_NE(base, nullptr);
  Calibration c;  // struct defaults, then only the TTFT terms varied
  c.prefill_overhead_seconds = 0;
  c.prefill_queue_fraction = 0;
  c.ttft_wait_iterations = 0;
  c.ttft_inflight_prefills = 0;
  for (int batch : {1, 4, 16}) {
    const PlanDims plan = Plan(1, 1, 1, 1, batch);
    auto eval = [&](const Calibration& cal) {
      absl::StatusOr<std::unique_ptr<const CostModel>> m =
          CostModel::Create(base->problem(), cal);
      EXPECT_TRUE(m.ok()) << m.status();
      return (*m)->Evaluate(plan);
    };
    const Evaluation bare = eval(c);
    EXPECT_DOUBLE_EQ(bare.ttft_seconds, bare.prefill_seconds) << batch;
    const double others = (batch - 1.0) / batch;
    Calibration inflight = c;
    inflight.ttft_inflight_prefills = 1.5;
    const Evaluation a = eval(inflight);
    EXPECT_NEAR(a.ttft_seconds - bare.ttft_seconds,
                1.5 * others * bare.prefill_seconds, 1e-12)
        << batch;
    EXPECT_EQ(a.tpot_seconds, bare.tpot_seconds) << batch;  // TTFT only
    Calibration wait = c;
    wait.ttft_wait_iterations = 2;
    const Evaluation w = eval(wait);
    EXPECT_NEAR(w.ttft_seconds - bare.ttft_seconds,
                2 * others * bare.tpot_seconds, 1e-12)
        << batch;
  }
}

// The queue term under a prefill token budget (SGLang's packed prefill
// batches): a prompt queued ahead costs its share of one step that packs
// floor(budget / ISL) prompts, less than a prefill of its own when the step
// shares the per-layer launches and an MoE layer's expert reads, and exactly
// a prefill of its own when the budget holds one prompt. The budget doubles
// on GPUs of 160 GB and more (SGLang's chunked_prefill_size default).
TEST(CostModelTest, QueuedPromptsCostTheirShareOfAPackedPrefill) {
  auto queue_growth = [](const std::string& hardware, int isl, double budget) {
    auto base = Make({.model = "qwen3-235b-a22b",
                      .hardware = hardware,
                      .isl = isl,
                      .osl = 1024,
                      .weight_dtype = "fp8"});
    EXPECT_NE(base, nullptr);
    Calibration c;
    c.prefill_overhead_seconds = 0;
    c.ttft_wait_iterations = 0;
    c.ttft_inflight_prefills = 0;
    c.prefill_queue_fraction = 1;
    c.prefill_batch_tokens = budget;
    absl::StatusOr<std::unique_ptr<const CostModel>> m =
        CostModel::Create(base->problem(), c);
    EXPECT_TRUE(m.ok()) << m.status();
    const Evaluation one = (*m)->Evaluate(Plan(1, 8, 1, 8, 1));
    const Evaluation many = (*m)->Evaluate(Plan(1, 8, 1, 8, 9));
    // Per prompt ahead, against one prompt's own prefill.
    return std::make_pair((many.ttft_seconds - one.ttft_seconds) / 8,
                          one.prefill_seconds);
  };
  const auto [unpacked, prefill] = queue_growth("h100-sxm-80gb", 1024, 0);
  EXPECT_NEAR(unpacked, prefill, 1e-9 * prefill);
  const auto [packed, prefill_again] =
      queue_growth("h100-sxm-80gb", 1024, 8192);
  EXPECT_EQ(prefill_again, prefill);  // the prompt's own prefill is unchanged
  EXPECT_GT(packed, 0);
  EXPECT_LT(packed, 0.8 * unpacked);
  // ISL = budget: one prompt per step on H100, two on B200.
  const auto [h100_full, h100_prefill] =
      queue_growth("h100-sxm-80gb", 8192, 8192);
  EXPECT_NEAR(h100_full, h100_prefill, 1e-9 * h100_prefill);
  const auto [b200_full, b200_prefill] =
      queue_growth("b200-sxm-180gb", 8192, 8192);
  EXPECT_LT(b200_full, b200_prefill);
}

}  // namespace
}  // namespace shardplan::simulator
