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
#include "simulator/calibration_parameters.h"
#include "simulator/types.h"

namespace shardplan::simulator {

// Loads (requests in flight per replica, spread over its attention dp ranks)
// the plan space offers and the batch choice scans, ascending: 1, 2, 4, 8,
// 12, 16, 24, 32, 48, ... up to kMaxBatchSize.
const std::vector<int>& BatchSizeCandidates();
// The loads the cost model's own batch choice scans (plan.batch_size and the
// concurrency 0): BatchSizeCandidates(), then on in the same steps up to
// kMaxRequestsInFlight; a replica's scan stops at kMaxBatchSize on each of
// its attention dp ranks.
const std::vector<int>& ScanLoads();

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
// 8: Workload.concurrency and plan.batch_size are requests in flight per
// replica (per decode instance), spread over its attention dp ranks; they
// were each rank's batch, so attention-dp plans served dp times the load.
// 9: native FP4 routed experts stream at the engine's grouped-GEMM rate
// (Calibration::fp4_grouped_gemm_bandwidth_ratio: SGLang's CUTLASS NVFP4
// grouped GEMM 3.5/6 of FP8's); other engines and dtypes unchanged.
// 10: the cross-hardware error bands are computed without the Blackwell
// rows of speculative-decoding (MTP) runs (calibration_harness_rows.cc,
// SpeculativeRunOfExport); point predictions are unchanged.
// 11: MLA decode layers pay 13/9 of the per-layer launch overhead (their
// serial kernel count against a grouped-query attention layer's), and the
// cross-hardware bands include the 2026 models' Blackwell rows.
// 12: BF16 and FP8 routed experts on Blackwell stream at the engine's
// grouped-GEMM bandwidth ratio (Calibration::bf16_/fp8_grouped_gemm_
// bandwidth_ratio: each engine's MoE kernel's fraction of HBM on B200 over
// its fraction on H100, from AIConfigurator's kernel tables), and decode
// layers with DeepSeek sparse attention pay the indexer's 15 serial kernels
// on top of the MLA layer's 13 (28/9 of the per-layer launch overhead);
// hybrid models' Gated DeltaNet layers 2 more than a grouped-query attention
// layer and their gated full-attention layers 5 more.
// 13: the cross-hardware bands read AIConfigurator's own FP8/NVFP4 runs with
// the FP8 KV cache its generator deploys on every engine; point predictions
// are unchanged.
// 14: vLLM's expert parallelism under attention dp inside a node moves the
// tokens by NCCL all-gather and reduce-scatter over the dp group at
// AIConfigurator's measured NCCL latencies
// (Calibration::expert_dispatch_gathers_over_dp, collectives.h
// kNcclGatherScatterSeconds); the cross-hardware bands leave out the
// Blackwell rows of AIConfigurator's TensorRT-LLM 1.3.0rc1 gap analyses,
// which do not measure steady decoding (calibration_harness_rows.cc,
// UnsteadyGapAnalysisRun).
// 16: SGLang's TTFT queue term prices each prompt queued ahead at its share of
// one packed prefill step (chunked_prefill_size: 8,192 tokens below 160 GB,
// 16,384 above; Calibration::prefill_batch_tokens), not at a prefill of its
// own; SGLang's per-request time, queue fraction and disaggregated
// per-request time refitted on the H100 rows under it.
// 17: a request naming TensorRT-LLM is priced with the per-request time of a
// server that detokenises in postprocess workers, which its launches now
// start (WorkloadDims::detokenises_off_executor).
// 18: the cross-hardware bands read the export's vLLM "tp g, attention dp
// g, moe_ep g x g" rows as the tp g, ep g runs they measure
// (calibration_harness_rows.cc, NormaliseExportedVllmExpertLayout); point
// predictions are unchanged.
// 19: the experts' dispatch is priced as the launch runs it: vLLM gathers
// over the ranks attention runs data-parallel over (the whole stage under
// batch-split attention) and uses all-to-all kernels only across nodes or
// NVLink trays, its aggregated servers' prefill through DeepEP's low-latency
// kernels in 256-token chunks; SGLang gathers under DP attention unless its
// experts take the whole group (DeepEP)
// (Calibration::expert_a2a_needs_whole_group_ep,
// expert_a2a_low_latency_chunk_tokens).
// 20: a closed loop of random prompt and output lengths (InferenceMAX's
// runs: WorkloadDims::lengths_desynchronise) puts every prefill in the
// decoding requests' TPOT, not the share the profiles' prefill queue
// fraction leaves there; the API's workloads and the other harness rows are
// unchanged. The cross-hardware bands read AIConfigurator's database copies
// of InferenceMAX runs as those runs (calibration_transfer.h,
// DropRepeatedRuns).
// 21: the cross-hardware bands count a run the gap-analysis files copy with
// its latencies rounded to 0.01 ms once (calibration_transfer.cc,
// DropRepeatedRuns); point predictions are unchanged.
// 22: at a request rate the prefill queue's capacity falls with its backlog
// (the decode batch climbs towards Little's law at full-chunk iterations
// while prompts are queued), and a backlogged prompt's last iteration is
// filled by the prompts arriving behind it from its realised wait until
// that iteration starts (simulator/queueing.cc): longer TTFT tails near
// saturation, shorter prefill-pool medians.
// 23: SGLang's --scheduler-recv-interval N holds a new request N / 2 decode
// iterations before its prefill (WorkloadDims::scheduler_recv_interval, set
// from InferenceMAX's SGLang scripts).
// 24: vLLM's expert parallelism with one attention dp rank is priced as it
// runs: no dispatch or combine, the experts' outputs summed by an all-reduce
// over the tensor-parallel group and the residual left whole
// (Calibration::expert_parallel_all_reduces_without_dp).
// 25: the tensor-parallel all-reduce inside a node (on the NVLink of the GPUs
// measured) is priced at the engine's measured kernel time
// (Calibration::all_reduce_kernel, collectives.h kCustomAllReduceSeconds:
// AIConfigurator's TensorRT-LLM, vLLM and SGLang custom all-reduce tables on
// H100 and B200) instead of the ring formula; the shared
// collective_latency_scale, layer_overhead_seconds and attention_efficiency
// refitted on the H100 rows under it. 26: under SGLang's
// --scheduler-recv-interval N > 1 a prompt waits for the next poll, which a
// prefill running when it arrives ends: the profile's in-flight prefills are no
// longer added on top of the N / 2 decode iterations (serving.cc,
// InflightPrefillWaits). 27: SGLang's expert parallelism without DP attention
// is priced as in 24 (its default MoE backend dispatches nothing and
// all-reduces the experts' outputs over the TP group); its launch selects
// DeepEP only under DP attention. 28: at a request rate, pipeline stages
// prefill different micro-batches at once: a prompt occupies the engine loop
// for its busiest stage (and the per-request overhead), each micro-batch has
// its own chunk budget, and the rest of the chain is latency of that prompt
// alone (StepTimes::pipeline_lag_token_seconds, simulator/traffic_costing.cc).
// 29: not used.
// 30: the cross-hardware bands leave out InferenceMAX's SGLang DeepSeek-R1 B200
// runs measured before its harness warmed the server up whose first wave of
// prompts spans more than one chunked-prefill step: their means carry the
// first chunked prefill's one-off stall (calibration_transfer.cc,
// UnwarmedChunkedFirstWave); point predictions are unchanged.
// 31: a vLLM run that fuses the tensor-parallel all-reduce with the next
// RMSNorm (WorkloadDims::fused_all_reduce_max_bytes, set from the run's
// launch and vLLM version) prices the all-reduces up to the launch's size
// limit at TensorRT-LLM's measured kernel, which FlashInfer's fusion ports.
// 32: the plans the server answers with (streamed updates, EvaluatePlan,
// capacity picks) take their TTFT mean and percentiles at a request rate from
// the prompt queue's bulk-service chain solved on a token grid
// (PredictStreamedTraffic, simulator/internal/bulk_chain.h); the search and
// max_request_rate keep the closed forms (max_request_rate: until 37).
// 33: not used.
// 34: the cross-hardware bands also leave out InferenceMAX's TensorRT-LLM
// DeepSeek-R1 B200 runs of 2026-01-14, the MTP configurations' first sweep on
// the image the standard ones shared (calibration_harness_rows.cc,
// SpeculativeRunOfExport); point predictions are unchanged.
// 35, 36: not used.
// 37: a streamed plan's max_request_rate is the highest rate whose streamed
// percentiles (the chain's TTFT) meet the SLOs, by bisection
// (PredictStreamedTraffic), and its goodput's shares are held to those
// percentiles; the search keeps the closed forms.
// 38: native-FP4 dense GEMMs on sm100/sm103 stream their weights at the
// engine's measured FP4/FP8 bandwidth ratio (Calibration::
// fp4_dense_gemm_bandwidth_ratio, HardwareSpec.architecture).
// 39: a range borrowed from a parent band cell (no cell of the regime's
// dtype or engine) is widened by sqrt(1 + levels passed over), like the pp
// and multi-node terms (FindPredictionBand); point predictions are unchanged.
// 40: the calibration rows leave out AIConfigurator's gap-analysis runs whose
// load was not recorded (calibration_harness_rows.cc,
// GapAnalysisRunWithoutLoad: 8 H100 and 4 GB200 runs whose batch_size is not
// the load they measured), so the bands and accuracy figures computed from
// the H100 rows change; point predictions are unchanged.
// 41: calibration rows faster than their layout and load allow at the
// datasheet peak rates are left out (calibration_harness_rows.cc,
// BelowPeakRateFloors), a guard on users' runs; the two shipped rows it
// catches are among v40's, so no figure changes.
inline constexpr int kCostModelVersion = 41;

namespace internal {
struct CostConstants;      // per-problem constants precomputed by Create
                           // (internal/cost_context.h)
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
