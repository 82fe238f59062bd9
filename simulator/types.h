// Compact, proto-free types the cost model works on: the validated problem
// (model, cluster, workload), a plan, and the evaluation of a plan. Built from
// the proto messages by simulator/spec.h; read by policy/ and server/.
#ifndef SHARDPLAN_SIMULATOR_TYPES_H_
#define SHARDPLAN_SIMULATOR_TYPES_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "simulator/traffic.h"

namespace shardplan::simulator {

enum class Dtype : uint8_t { kBf16 = 0, kFp8 = 1, kFp4 = 2 };
inline constexpr int kNumDtypes = 3;

// Bytes per element: 2, 1, 0.5.
double BytesPerElement(Dtype dtype);
// Bytes a KV-cache element takes in the engines' caches, its share of the
// quantisation scales included: 2, 1 (one scale per tensor), and for FP4
// 0.5 + 1/16 (a one-byte scale per 16 values).
double KvCacheBytesPerElement(Dtype dtype);
// "bf16", "fp8", "fp4".
absl::string_view DtypeName(Dtype dtype);
// Parses a dtype name; "" gives `fallback`. INVALID_ARGUMENT names `field_path`
// and the value.
absl::StatusOr<Dtype> ParseDtype(absl::string_view name,
                                 absl::string_view field_path,
                                 Dtype fallback = Dtype::kBf16);

// The operator kinds of a layer whose sharding dimension a plan chooses, in
// decision order.
enum class OpKind : uint8_t {
  kEmbedding = 0,
  kQkv,         // Q, K, V projections (MLA: the down/up projections)
  kAttention,   // attention core: QK^T, softmax, PV over the KV cache
  kAttnOut,     // attention output projection
  kMlpUp,       // dense MLP gate+up
  kMlpDown,     // dense MLP down
  kRouter,      // MoE gate
  kExpertUp,    // routed (and shared) experts gate+up
  kExpertDown,  // routed (and shared) experts down
  kLmHead,      // final norm + LM head
};
inline constexpr int kNumOpKinds = 10;
// "embedding", "qkv", "attention", "attn_out", "mlp_up", "mlp_down", "router",
// "expert_up", "expert_down", "lm_head".
absl::string_view OpKindName(OpKind op);
absl::StatusOr<OpKind> ParseOpKind(absl::string_view name,
                                   absl::string_view field_path);

// How an operator's work is split over the ranks of its tensor-parallel group.
enum class ShardDim : uint8_t {
  kColumn = 0,  // split output features / heads
  kRow,         // split input features; output is a partial sum
  kReplicate,   // full weights and full work on every rank
  kBatch,       // split tokens/requests; weights replicated
  kSequence,    // split the sequence (context parallel for attention)
};
inline constexpr int kNumShardDims = 5;
absl::string_view ShardDimName(ShardDim dim);
absl::StatusOr<ShardDim> ParseShardDim(absl::string_view name,
                                       absl::string_view field_path);

using ShardDims = std::array<ShardDim, kNumOpKinds>;
// Megatron's pattern: embedding row (vocab split), qkv column, attention column
// (heads), attn_out row, mlp_up column, mlp_down row, router replicate,
// expert_up column, expert_down row, lm_head column (vocab split).
ShardDims MegatronShardDims();

struct ModelDims {
  std::string name;
  std::string family;
  // The published checkpoint (ModelSpec.hugging_face_id, native_dtype): what
  // an engine loads, and the weight dtype a workload defaults to.
  std::string hugging_face_id;
  Dtype native_dtype = Dtype::kBf16;
  // ModelSpec.nvfp4_hugging_face_id: the NVFP4 checkpoint engines load on GPUs
  // with FP4 tensor cores; "" = none.
  std::string nvfp4_hugging_face_id;
  int hidden = 0;
  int layers = 0;
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  int intermediate = 0;
  int vocab = 0;
  bool tie_embeddings = false;
  // MoE (experts == 0: dense).
  int experts = 0;
  int experts_per_token = 0;
  int moe_intermediate = 0;
  int shared_experts = 0;
  int first_k_dense = 0;
  // MLA (kv_lora_rank == 0: standard multi-head / grouped-query attention).
  int kv_lora_rank = 0;
  int q_lora_rank = 0;
  int qk_rope_head_dim = 0;
  int qk_nope_head_dim = 0;
  int v_head_dim = 0;
  // Hybrid linear attention (full_attention_interval > 0): every
  // full_attention_interval-th layer is full attention, the others are
  // linear-attention layers (Gated DeltaNet) with a fixed-size state per
  // request and no KV cache.
  int full_attention_interval = 0;
  int linear_num_key_heads = 0;
  int linear_num_value_heads = 0;
  int linear_key_head_dim = 0;
  int linear_value_head_dim = 0;
  int linear_conv_kernel_dim = 0;
  bool attention_output_gate = false;  // query projection twice as wide
  // DeepSeek sparse attention (index_topk > 0, MLA only): an indexer scores
  // every cached token, attention reads the index_topk best.
  int index_topk = 0;
  int index_n_heads = 0;
  int index_head_dim = 0;

  bool is_moe() const { return experts > 0; }
  bool is_mla() const { return kv_lora_rank > 0; }
  bool is_hybrid() const { return full_attention_interval > 0; }
  bool is_sparse_attention() const { return index_topk > 0; }
  // Layers with a growing KV cache (hybrid: the last of each group of
  // full_attention_interval layers).
  int full_attention_layers() const {
    return is_hybrid() ? layers / full_attention_interval : layers;
  }
  int linear_attention_layers() const {
    return layers - full_attention_layers();
  }
  // Elements of one linear-attention layer's state per request: the
  // recurrent state (value heads x key dim x value dim) and the causal
  // convolution's window over q, k, v (kernel - 1 tokens).
  double LinearStateElementsPerLayer() const {
    const double conv_channels =
        2.0 * linear_num_key_heads * linear_key_head_dim +
        static_cast<double>(linear_num_value_heads) * linear_value_head_dim;
    return static_cast<double>(linear_num_value_heads) * linear_key_head_dim *
               linear_value_head_dim +
           conv_channels * std::max(0, linear_conv_kernel_dim - 1);
  }
  int dense_layers() const { return is_moe() ? first_k_dense : layers; }
  int moe_layers() const { return layers - dense_layers(); }
  // Parameter counts (embeddings and LM head included once, or twice when
  // untied).
  double TotalParams() const;
  double ActiveParams() const;
};

// Parameters (elements) of each weight of one layer, and of the embedding
// table: the one count that TotalParams, ActiveParams and the transition diff
// (simulator/transition.h) share. Norms are negligible and left out.
struct LayerParams {
  double q = 0;                // query projection (MLA: q down + up)
  double kv = 0;               // key/value projections (MLA: kv down + up)
  double attn_out = 0;         // attention output projection
  double mlp_up = 0;           // dense MLP gate + up
  double mlp_down = 0;         // dense MLP down
  double router = 0;           // MoE gate
  double expert_up = 0;        // one expert's gate + up
  double expert_down = 0;      // one expert's down
  double embedding_table = 0;  // vocab x hidden (the LM head has as many)
};
LayerParams LayerParamsOf(const ModelDims& model);

// The CUDA compute capability family (HardwareSpec.architecture): measured
// kernel terms apply only on the architecture they were measured on.
enum class GpuArchitecture { kUnknown, kSm90, kSm100, kSm103, kSm120 };

struct HardwareDims {
  std::string name;
  GpuArchitecture architecture = GpuArchitecture::kUnknown;
  std::array<double, kNumDtypes> peak_flops_per_s{};  // indexed by Dtype
  double hbm_bytes = 0;
  double hbm_bytes_per_s = 0;
  double intra_node_bytes_per_s = 0;
  double inter_node_bytes_per_s = 0;
  double intra_node_latency_seconds = 0;
  double inter_node_latency_seconds = 0;
};

struct NodeGroupDims {
  std::string name;
  int num_nodes = 0;
  int gpus_per_node = 0;  // the cluster's when the group did not say
};

struct ClusterDims {
  HardwareDims hardware;
  int num_gpus = 0;
  int gpus_per_node = 0;
  // GPUs of one NVLink domain, a multiple of gpus_per_node (NVL72 racks: 72
  // over nodes of 4); 0 or gpus_per_node: the node. Placement measures the
  // link of a group by the domains it spans (simulator/placement.h).
  int nvlink_domain_gpus = 0;
  // The last node may be partial (num_gpus not a multiple of gpus_per_node).
  int num_nodes() const {
    if (!node_gpus.empty()) return static_cast<int>(node_gpus.size());
    return (num_gpus + gpus_per_node - 1) / gpus_per_node;
  }
  std::vector<NodeGroupDims> node_groups;
  // GPUs of each node in rank order when node groups differ in size (then
  // gpus_per_node is the smallest node's); empty = uniform nodes.
  // simulator/placement.h reads it.
  std::vector<int> node_gpus;
};

struct WorkloadDims {
  int input_tokens = 0;
  int output_tokens = 0;
  // Requests in flight per replica (per decode instance of a disaggregated
  // plan; a dense model's dp copies are replicas), spread over the replica's
  // attention dp ranks (RankBatch). 0: choose the best load.
  int concurrency = 0;
  double max_ttft_seconds = 0;  // 0: no SLO
  double max_tpot_seconds = 0;  // 0: no SLO
  Dtype weight_dtype = Dtype::kBf16;
  Dtype kv_cache_dtype = Dtype::kBf16;
  // Serving engine ("" = engine-agnostic), its version ("" = newest; the
  // capability rules read both, simulator/engine_capability.h), and the
  // calibration profile the cost model uses (resolved by
  // WorkloadDimsFromProto from the engine or the profile name; "" = neither
  // was given: the default profile). Not read by Evaluate.
  std::string engine;
  std::string engine_version;
  std::string calibration_profile;
  // TensorRT-LLM's batch_wait_timeout_iters server setting (0, its default:
  // off): a context request waits up to this many iterations for others to
  // join its prefill while requests decode. Set by the calibration harness
  // from the measured run's server configuration; not in the proto.
  int batch_wait_timeout_iterations = 0;
  // TensorRT-LLM's attention_dp_config with enable_balance (timeout_iters;
  // 0: balance off, its default) and batching_wait_iters: with attention dp
  // a context request is held until every rank has one or the timeout
  // passes. Set by the calibration harness; not in the proto.
  int attention_dp_balance_timeout_iterations = 0;
  int attention_dp_balance_batching_wait_iterations = 0;
  // SGLang's --scheduler-recv-interval (0 or 1, its default: the scheduler
  // takes new requests before every iteration): while requests decode, new
  // ones are taken every N decode iterations. Set by the calibration harness
  // from the measured run's server configuration; not in the proto.
  int scheduler_recv_interval = 0;
  // TensorRT-LLM's num_postprocess_workers > 0: responses are detokenised
  // and streamed by worker processes instead of the process that runs the
  // executor (Calibration::offloaded_detokenisation_request_overhead_seconds).
  // Not in the proto: WorkloadDimsFromProto sets it for engine "trtllm",
  // whose emitted launches run the workers; the calibration harness sets it
  // from the measured run's server configuration.
  bool detokenises_off_executor = false;
  // Closed-loop clients whose prompt and output lengths are drawn at random
  // (a benchmark's random dataset with a length range: InferenceMAX's
  // --random-range-ratio 0.8), so requests finish and arrive out of step
  // and every prefill runs while the other requests decode: it lands in
  // their TPOT whole. False: the share of the prefill work the profiles
  // were fitted with (1 - Calibration::prefill_queue_fraction). Set by the
  // calibration harness from the measured run's benchmark settings; not in
  // the proto.
  bool lengths_desynchronise = false;
  // vLLM's all-reduce + RMSNorm fusion (PassConfig fuse_allreduce_rms, in
  // older releases enable_fi_allreduce_fusion): a tensor-parallel all-reduce
  // of at most this many bytes runs FlashInfer's port of TensorRT-LLM's
  // allreduce-fusion kernel instead of vLLM's custom all-reduce
  // (Calibration::all_reduce_kernel). 0: off. Set by the calibration harness
  // from the measured run's engine version and launch; not in the proto.
  double fused_all_reduce_max_bytes = 0;
  // Open-loop traffic (request_rate 0: the closed loop above). Not read by
  // Evaluate; the queueing model (simulator/traffic_costing.h) reads it.
  TrafficDims traffic;
};

// A validated planning problem.
struct Problem {
  ModelDims model;
  ClusterDims cluster;
  WorkloadDims workload;
};

inline constexpr int kMaxPipelineStages = 128;
// Requests per attention dp rank at most, and the largest load the batch
// scan offers (BatchSizeCandidates).
inline constexpr int kMaxBatchSize = 4096;
// Requests in flight per replica at most (Workload.concurrency,
// plan.batch_size): kMaxBatchSize on each of many attention dp ranks (a wide
// expert-parallel decode instance of 144 ranks runs 18,432).
inline constexpr int kMaxRequestsInFlight = 1 << 18;

// The layout of one prefill instance of a disaggregated plan (see PlanDims):
// its degrees and operator dims, and how many requests it prefills in one
// forward pass. Its layers are split as evenly as possible over its stages.
struct PrefillLayout {
  int dp = 1;
  int tp = 1;
  int pp = 1;
  int ep = 1;
  ShardDims dims = MegatronShardDims();
  int micro_batches = 0;  // 0: pp
  int batch_size = 0;     // requests per prefill pass; 0: 1

  int gpus() const { return dp * tp * pp; }
  bool operator==(const PrefillLayout& other) const;
  bool operator!=(const PrefillLayout& other) const {
    return !(*this == other);
  }
};

// A plan in compact form. Value type, cheap to copy, no heap.
//
// Aggregated (disaggregated == false): every GPU prefills and decodes.
// Disaggregated: `prefill_instances` prefill instances of layout `prefill`
// and `decode_instances` decode instances whose layout is the fields below
// (replicas must be 1; dp, tp, pp, ep, dims, micro_batches, batch_size,
// stage_layers describe one decode instance), with the KV cache of each
// request moving from a prefill instance to a decode instance.
// prefill_instances * prefill.gpus() + decode_instances * dp * tp * pp =
// num_gpus; which pool takes the lowest ranks: simulator/placement.h
// (DecodePoolFirst).
struct PlanDims {
  // Independent model instances (see simulator/placement.h); each has pp
  // stages of dp x tp GPUs. replicas * dp * tp * pp = num_gpus.
  int replicas = 1;
  int dp = 1;
  int tp = 1;
  int pp = 1;
  int ep = 1;
  ShardDims dims = MegatronShardDims();
  int micro_batches = 0;  // 0: pp
  // Requests in flight per replica (disaggregated: per decode instance), as
  // Workload.concurrency: each attention dp rank runs RankBatch(batch_size,
  // dp) of them. 0: the workload's concurrency, or the best load when that
  // is 0.
  int batch_size = 0;
  // Explicit layers per stage when num_stage_layers == pp; 0: as uniform as
  // possible.
  int num_stage_layers = 0;
  std::array<int16_t, kMaxPipelineStages> stage_layers{};

  bool disaggregated = false;
  PrefillLayout prefill;      // read only when disaggregated
  int prefill_instances = 0;  // read only when disaggregated
  int decode_instances = 0;   // read only when disaggregated

  // GPUs of one decode instance (aggregated: of one replica).
  int instance_gpus() const { return dp * tp * pp; }

  bool operator==(const PlanDims& other) const;
  bool operator!=(const PlanDims& other) const { return !(*this == other); }
};

// Requests the fullest attention data-parallel rank runs when `requests` are
// in flight over `dp` ranks: ceil(requests / dp); the others run one fewer.
inline int RankBatch(int requests, int dp) {
  const int d = std::max(1, dp);
  return (std::max(0, requests) + d - 1) / d;
}

// Attention data-parallel ranks a replica (or pool instance) of `plan`
// spreads its requests over: dp for an MoE model; 1 for a dense model,
// whose dp ranks are independent copies (simulator/placement.h).
inline int AttentionDpRanks(const PlanDims& plan, bool moe) {
  return moe ? std::max(1, plan.dp) : 1;
}

// Units that each carry Workload.concurrency requests: the replicas (a dense
// model's dp copies among them), or a disaggregated plan's decode instances
// (times their copies).
inline int LoadReplicas(const PlanDims& plan, bool moe) {
  const int copies = moe ? 1 : std::max(1, plan.dp);
  return (plan.disaggregated ? std::max(1, plan.decode_instances)
                             : std::max(1, plan.replicas)) *
         copies;
}

enum class InfeasibleReason : uint8_t {
  kNone = 0,
  kWeightsExceedMemory,   // value: weight bytes per GPU, limit: capacity
  kKvCacheExceedsMemory,  // the batch's KV cache does not fit beside the
                          // weights
  kTtftSlo,               // value: predicted TTFT s, limit: max TTFT s
  kTpotSlo,               // value: predicted TPOT s, limit: max TPOT s
  kNoBatchFits,           // concurrency 0 and no batch meets memory and SLOs
  kTransitionTooSlow,     // re-planning: value: transition s, limit: max s
  kEngineCannotRun,       // the workload's engine cannot launch the layout
                          // (simulator/engine_capability.h names the rule)
};

enum class Bottleneck : uint8_t {
  kCompute = 0,
  kMemory,
  kCommunication,
  kPipeline
};
absl::string_view BottleneckName(Bottleneck b);

// Seconds one operator kind costs per step (summed over the layers of the
// slowest stage).
struct OpCost {
  float compute_seconds = 0;
  float memory_seconds = 0;
  float comm_seconds = 0;
};

// The cost model's prediction for one plan. Plain data, no heap.
struct Evaluation {
  bool feasible = false;
  InfeasibleReason reason = InfeasibleReason::kNone;
  double reason_value = 0;
  double reason_limit = 0;

  double output_tokens_per_s = 0;  // whole cluster
  double output_tokens_per_s_per_gpu = 0;
  double ttft_seconds = 0;
  double tpot_seconds = 0;
  double prefill_seconds = 0;           // one request's prefill
  double decode_iteration_seconds = 0;  // one decode step of the whole batch
  // Requests in flight per replica evaluated (disaggregated: per decode
  // instance in decode), and the decode batch of one attention dp rank
  // (RankBatch(batch_size, dp); = batch_size without attention dp).
  int batch_size = 0;
  int batch_per_rank = 0;
  // KV-cache overflow at the workload's fixed concurrency: the engine runs
  // the requests whose KV cache fits (running_batch, per replica) and queues
  // the rest. Without overflow running_batch = batch_size and the queue is
  // empty.
  int running_batch = 0;
  int queued_requests = 0;
  double queue_wait_seconds = 0;  // included in ttft_seconds
  // Engines that preempt (vLLM, SGLang): the part of the wait spent after the
  // first token, preempted and recomputed; spread over tpot_seconds.
  double preemption_wait_seconds = 0;

  // Per GPU, worst stage.
  double weights_bytes = 0;
  double kv_cache_bytes = 0;
  double activations_bytes = 0;
  double capacity_bytes = 0;
  // What the KV cache may take beside the weights and activations of the
  // worst stage (Calibration::kv_pool_from_free_memory decides how).
  double kv_room_bytes = 0;

  std::array<OpCost, kNumOpKinds> decode{};
  std::array<OpCost, kNumOpKinds> prefill{};
  // Per GPU: one decode iteration, one request's prefill.
  double nvlink_decode_bytes = 0;
  double ib_decode_bytes = 0;
  double nvlink_prefill_bytes = 0;
  double ib_prefill_bytes = 0;

  Bottleneck bottleneck = Bottleneck::kMemory;
  OpKind bottleneck_op = OpKind::kQkv;

  // Placement (simulator/placement.h): nodes spanned by the worst-placed tp
  // group, expert (EP) group and replica; whether a stage boundary crosses
  // nodes. 1 / false: on NVLink.
  int tp_nodes = 1;
  int ep_nodes = 1;
  int replica_nodes = 1;
  bool pipeline_crosses_nodes = false;
  // Pipeline stages of the plan evaluated (the error bars' regime).
  int pipeline_stages = 1;

  // Disaggregated plans only (simulator/disaggregated.h); zero otherwise.
  // The fields above then describe the whole plan (throughput, TTFT, TPOT,
  // feasibility) and the decode pool (memory, breakdown, placement).
  bool disaggregated = false;
  double prefill_queue_seconds = 0;     // mean wait for a prefill instance
  double kv_transfer_seconds = 0;       // exposed KV-cache transfer per request
  double kv_transfer_bytes = 0;         // KV cache bytes per request moved
  bool kv_transfer_inter_node = false;  // some over InfiniBand (else NVLink)
  // Share of (prefill, decode) instance pairs inside one node (NVLink).
  double kv_transfer_nvlink_share = 0;
  double prefill_utilization = 0;  // offered load / prefill pool capacity
  // Requests per second each pool sustains (the plan runs at the minimum).
  double prefill_requests_per_s = 0;
  double decode_requests_per_s = 0;
  // Per GPU of a prefill instance (worst stage), at its prefill batch.
  double prefill_weights_bytes = 0;
  double prefill_kv_cache_bytes = 0;
  double prefill_activations_bytes = 0;
  int prefill_batch_size = 0;
  int prefill_instances = 0, prefill_instance_gpus = 0;
  int decode_instances = 0, decode_instance_gpus = 0;
};

// "weights need 141.2 GB per GPU, 80.0 GB available"; "" when feasible.
std::string InfeasibleReasonText(const Evaluation& evaluation);

}  // namespace shardplan::simulator

#endif  // SHARDPLAN_SIMULATOR_TYPES_H_
