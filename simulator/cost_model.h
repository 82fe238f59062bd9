// The analytical H100 cost model: given a validated Problem, predicts
// throughput, latency, memory and a per-operator breakdown for any plan. See
// ../shared/DESIGN.md for the physics and docs/cost-model-and-calibration.md
// for the calibration against measured H100 serving numbers.
#ifndef SHARDPLAN_SIMULATOR_COST_MODEL_H_
#define SHARDPLAN_SIMULATOR_COST_MODEL_H_

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "simulator/types.h"

namespace shardplan::simulator {

// Achievable-efficiency parameters, fitted by the calibration
// (simulator/calibration.h). Every field is a physically meaningful fraction or
// overhead.
struct Calibration {
  double gemm_efficiency = 0.70;  // fraction of peak FLOP/s for large GEMMs
  double gemm_half_efficiency_tokens =
      64;  // GEMM efficiency halves at this many tokens
  double hbm_efficiency =
      0.85;  // fraction of peak HBM bandwidth when streaming
  double attention_efficiency = 0.5;  // fraction of peak for attention math
  double intra_node_efficiency =
      0.8;  // NCCL bus bandwidth / link bandwidth (NVLink)
  double inter_node_efficiency = 0.8;  // same, InfiniBand
  double collective_latency_scale =
      1.0;  // multiplies the hardware per-step latency
  double decode_step_overhead_seconds =
      0.0;  // launch/scheduling per decode iteration
  double layer_overhead_seconds = 0.0;    // kernel launches per layer per step
  double prefill_overhead_seconds = 0.0;  // per request, before its first token
  // TTFT queueing: a new request waits behind this fraction of the prefills of
  // the other (batch - 1) requests of its replica; the same fraction of the
  // prefill work leaves the decode iterations (TPOT). 0: staggered arrivals,
  // prefills interleave with decode steps; 1: requests arrive together and are
  // prefilled before decoding (closed-loop waves).
  double prefill_queue_fraction = 0.5;
  // TTFT: decode iterations a new request waits before and while its prefill is
  // scheduled (iteration-level scheduling, chunked prefill sharing the step's
  // token budget).
  double ttft_wait_iterations = 1.0;
  // TTFT: prefills of other requests a new request waits for even when
  // requests do not arrive together: the prefill already running or batched
  // into the same iteration as its own (continuous batching mixes a prefill
  // into an iteration with decodes and, on average, another request's
  // prefill). Scaled by (B - 1) / B: nobody else to wait for at batch 1.
  // AIConfigurator's aggregated-serving model charges TTFT = 2 x the mixed
  // prefill+decode step (https://github.com/ai-dynamo/aiconfigurator/blob/
  // 00ae653b588ef03c8db1b6d7565222080723782e/src/aiconfigurator/sdk/backends/
  // trtllm_backend.py), i.e. one prefill besides its own; 1 is the prior.
  double ttft_inflight_prefills = 1.0;
  // FP4 weights on hardware without FP4 tensor cores (Hopper): the
  // dequantising weight-only kernels cost as much time as streaming this many
  // bytes per weight element (a pure 4-bit read would be 0.5). Fitted on the
  // H100 gpt-oss-120b (MXFP4) vLLM rows (simulator/calibration.cc).
  double fp4_dequant_bytes_per_weight = 2.0;
  // KV cache a running request holds, as the fraction of its output tokens
  // reserved on top of its prompt: 1 = the whole output up front
  // (TensorRT-LLM's default GUARANTEED_NO_EVICT capacity scheduler); 0.5 =
  // blocks allocated as tokens are generated (vLLM PagedAttention, SGLang's
  // token pool), so a request at a uniformly random point of its decode holds
  // half its output. Decides how many requests fit memory and how many queue.
  // Engine behaviour, not fitted (simulator/calibration.cc cites the sources).
  double kv_reserved_output_fraction = 1.0;
  // Pipeline-parallel plans only: host time per active request of a rank that
  // every micro-batch step costs in series with the GPU. An executor that
  // overlaps its scheduling with the GPU hides this at pp = 1; TensorRT-LLM's
  // PyTorch pipeline loop (_executor_loop_pp in
  // https://github.com/NVIDIA/TensorRT-LLM, tensorrt_llm/_torch/pyexecutor/
  // py_executor.py) runs without the overlap scheduler and, on every rank,
  // schedules over all active requests and hands tokens back through the
  // host once per micro-batch, so the cost grows with the requests the
  // pipeline's KV room admits. 0 where no engine measurement exists; fitted
  // for trtllm on TensorRT-LLM's RTX PRO 6000 pp rows
  // (simulator/calibration.cc).
  double pipeline_request_overhead_seconds = 0.0;
  // When a fixed concurrency needs more KV cache than fits: true = the engine
  // admits a request once its prompt fits and preempts running requests when
  // the cache runs out (vLLM: recompute), so part of the queue wait falls
  // after the first token; false = admission waits until the request's
  // reserved KV fits (TensorRT-LLM's whole-output reservation; SGLang's
  // scheduler reserves for the running requests' estimated remaining output),
  // so the whole wait is before the first token. Engine behaviour, not fitted
  // (simulator/calibration.cc cites the sources).
  bool preempts_on_kv_overflow = false;
  // Disaggregated plans only: fixed latency per request before its first
  // token on top of the prefill (routing to two servers, the KV-transfer
  // bootstrap handshake and the decode server admitting the transferred
  // request). Fitted per engine on the non-held-out disaggregated H100 rows
  // (simulator/calibration.cc).
  double disagg_request_overhead_seconds = 0.0;
  // Disaggregated plans with closed-loop clients: a new request waits behind
  // this fraction of the prefills of the other clients of its prefill
  // instance. Closed-loop clients with one ISL/OSL run in lockstep waves
  // (they start together, decode equally long and resubmit together), so
  // requests reach the prefill pool in bursts that Poisson (M/D/1) arrivals
  // do not have; the counterpart of prefill_queue_fraction. Fitted per
  // engine with disagg_request_overhead_seconds.
  double disagg_prefill_queue_fraction = 0.0;
};

// Calibration::disagg_request_overhead_seconds of the engine-agnostic default
// (the SGLang profile's fitted value).
inline constexpr double kEngineAgnosticDisaggOverheadS = 0.17;

// The calibration shipped with this version (constants produced by the fit).
const Calibration& DefaultCalibration();

// Decode batch sizes (per replica) the plan space offers and the batch choice
// scans, ascending: 1, 2, 4, 8, 12, 16, 24, 32, 48, ... up to kMaxBatchSize.
const std::vector<int>& BatchSizeCandidates();

// Version of the cost model; part of the elite store's problem fingerprint.
// 5: a disaggregated prefill pass of several requests pays the attention
// quadratic term per request (it was charged over the whole pass).
// 6: on engines that preempt (vLLM) the KV-overflow wait is split between
// TTFT and TPOT.
// 7: disaggregated pools are placed and priced on the nodes they occupy
// (where node sizes differ, the pool with the bigger instances on the bigger
// nodes: placement.h DecodePoolFirst); the KV transfer rides NVLink for
// the instance pairs inside one node. Uniform clusters change only where a
// prefill and a decode instance share a node or an instance is not aligned
// to the nodes. Replicas placed differently (node groups of different sizes,
// a partial last node) shape an expert's tensor-parallel group per replica
// class too (it was the worst over the cluster).
inline constexpr int kCostModelVersion = 7;

namespace internal {
struct CostConstants;      // per-problem constants precomputed by Create
                           // (cost_model.cc)
class CostModelInspector;  // test access to intermediate results
                           // (internal/cost_layers.h)
class PoolCosting;         // one instance of a pool of a disaggregated plan
                           // (internal/pool_costing.h)
}  // namespace internal

// Immutable after Create; Evaluate is thread-safe and allocation-free.
class CostModel {
 public:
  ~CostModel();

  // Precomputes per-problem constants. INVALID_ARGUMENT on an inconsistent
  // problem.
  static absl::StatusOr<std::unique_ptr<const CostModel>> Create(
      Problem problem, const Calibration& calibration = DefaultCalibration());

  const Problem& problem() const { return problem_; }
  const Calibration& calibration() const { return calibration_; }
  // Usable HBM per GPU: the hardware's less the reserve for the CUDA context,
  // NCCL/cuBLAS workspaces and fragmentation.
  double capacity_bytes() const;

  // Structural validity of `plan` for this problem (a disaggregated plan:
  // each pool's instance and the instance counts, messages naming
  // plan.prefill.* / plan.decode.*): degrees positive with product = GPUs,
  // divisibility (heads by tp, experts by ep, ...), dims allowed for each
  // operator, stage split, micro-batches, batch size. INVALID_ARGUMENT whose
  // message starts with the field path ("plan.tp must divide
  // num_attention_heads (64), got 3").
  absl::Status ValidatePlan(const PlanDims& plan) const;

  // Predicts `plan`, which must have passed ValidatePlan. Pure and
  // deterministic; no heap allocation. A plan that does not fit memory or the
  // SLOs comes back feasible = false with its reason. With batch_size == 0 and
  // concurrency == 0, picks the best batch.
  Evaluation Evaluate(const PlanDims& plan) const;

 private:
  friend class internal::CostModelInspector;
  friend class internal::PoolCosting;
  // ValidatePlan of an aggregated plan (or one instance) on `num_gpus` GPUs.
  absl::Status ValidateLayout(const PlanDims& plan, int num_gpus) const;
  CostModel(Problem problem, const Calibration& calibration);
  Problem problem_;
  Calibration calibration_;
  std::unique_ptr<const internal::CostConstants> constants_;
};

}  // namespace shardplan::simulator

#endif  // SHARDPLAN_SIMULATOR_COST_MODEL_H_
