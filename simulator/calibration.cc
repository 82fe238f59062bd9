// The built-in calibration profiles and error bands (simulator/calibration.h).
// Their constants are the output of the calibration harness
// (simulator/calibration_harness.h, shardplan-calibrate).
#include "simulator/calibration.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "simulator/user_text.h"

namespace shardplan::simulator {
namespace {

// The fitted constants, produced by
//   build/bin/shardplan-calibrate --csv
//   simulator/calibration/data/h100_measured_latency.csv
//   --csv simulator/calibration/data/h100_moe_latency.csv --fit
// (coordinate descent on the absolute percentage error of TPOT and TTFT over
// the fit rows only: Llama-3.1-8B and every 4th row of the other models are
// held out; the tool prints every value exactly as written here). The shared
// parameters are the same in every profile; each engine has two of its own:
// prefill_overhead_s (fixed per-request latency before the first token: API
// server, tokenisation, scheduling) and prefill_queue_fraction (how much its
// scheduler makes concurrent requests queue behind each other's prefills
// instead of interleaving them with decode steps).
Calibration SharedFit() {
  Calibration c;
  c.gemm_efficiency = 0.662890625;
  c.gemm_half_efficiency_tokens = 46.95507812;
  c.hbm_efficiency = 0.95;  // upper bound of its fit range
  c.attention_efficiency = 0.2515625;
  // not fitted (datasheet-level NCCL bus bandwidth)
  c.intra_node_efficiency = 0.8;
  c.inter_node_efficiency = 0.8;  // not fitted (no multi-node rows)
  // Scales intra-node latency only (the fit rows are single-node).
  c.collective_latency_scale = 0.2749023437;
  c.decode_step_overhead_seconds = 0.0;
  c.layer_overhead_seconds = 5.9765625e-05;
  c.ttft_wait_iterations = 0.9765625;
  c.ttft_inflight_prefills = 1.5625;
  // gpt-oss-120b MXFP4 rows (vLLM, H100): the dequantising kernels cost ~1.45x
  // a pure 4-bit read.
  c.fp4_dequant_bytes_per_weight = 0.7255859375;
  return c;
}

// disagg_request_overhead_seconds and disagg_prefill_queue_fraction (the last
// two arguments) come from
//   build/bin/shardplan-calibrate --disagg-csv
//   simulator/calibration/data/h100_disagg_latency.csv --fit
// (FitDisaggregatedOverheads: TTFT MAPE of the engine's non-held-out
// disaggregated rows; vLLM's rows, without a concurrency, leave it at 0).
// Tokens one SGLang prefill step packs from the waiting prompts
// (Calibration::prefill_batch_tokens): its chunked_prefill_size, 8,192 on
// GPUs below 160 GB (ServerArgs._handle_gpu_memory_settings,
// python/sglang/srt/server_args.py; doubled on larger GPUs there, in
// PackedPrefillShareSeconds). SGLang runs a prefill batch alone, ahead of the
// decode batch, so closed-loop prompts that arrive together are prefilled
// together. vLLM and TensorRT-LLM mix prefill chunks into decode steps and
// keep 0 (measured, not kept for them: docs/cost-model-and-calibration.md).
constexpr double kSglangPrefillBatchTokens = 8192;

// SGLang's own two constants, refitted on the H100 fit rows with its queue
// term priced at the packed step (every other constant as shipped):
//   build/bin/shardplan-calibrate --csv .../h100_measured_latency.csv
//   --csv .../h100_moe_latency.csv --fit-engine-terms sglang
// (22 ms and 0.480 with the queue at one prompt's own prefill). The H100
// SGLang rows (16-128 clients) leave more of their TTFT to the per-request
// time once the queue ahead is priced at the packed share.
constexpr double kSglangPrefillOverheadSeconds = 0.11015625;
constexpr double kSglangPrefillQueueFraction = 0.48828125;
// Its disaggregated per-request time, refitted on top of that
// (--disagg-csv .../h100_disagg_latency.csv --fit): 0.17 s before, with the
// 22 ms above; the sum, what a disaggregated request pays, stays 0.19 s.
constexpr double kSglangDisaggRequestOverheadSeconds = 0.08;

Calibration WithPrefillBatchTokens(Calibration c, double tokens) {
  c.prefill_batch_tokens = tokens;
  return c;
}

Calibration EngineFit(double prefill_overhead_seconds,
                      double prefill_queue_fraction,
                      double kv_reserved_output_fraction,
                      bool preempts_on_kv_overflow,
                      double disagg_request_overhead_seconds,
                      double disagg_prefill_queue_fraction) {
  Calibration c = SharedFit();
  c.preempts_on_kv_overflow = preempts_on_kv_overflow;
  c.disagg_request_overhead_seconds = disagg_request_overhead_seconds;
  c.disagg_prefill_queue_fraction = disagg_prefill_queue_fraction;
  c.prefill_overhead_seconds = prefill_overhead_seconds;
  c.prefill_queue_fraction = prefill_queue_fraction;
  c.kv_reserved_output_fraction = kv_reserved_output_fraction;
  return c;
}

// KV-cache admission per engine (engine behaviour, not fitted):
// TensorRT-LLM's default capacity scheduler, GUARANTEED_NO_EVICT, admits a
// request only when the KV cache of its whole prompt + maximum output fits
// (https://nvidia.github.io/TensorRT-LLM/performance/performance-tuning-guide/useful-runtime-flags.html,
// "Capacity Scheduler Policy"): 1. vLLM allocates KV blocks on demand as
// tokens are generated and preempts when they run out (PagedAttention,
// https://arxiv.org/abs/2309.06180, section 4.2), SGLang likewise from a
// token-level pool
// (https://docs.sglang.ai/advanced_features/hyperparameter_tuning.html,
// "new_token_ratio" / --schedule-conservativeness): in steady state a running
// request holds its prompt and, on average, half its output: 0.5.
constexpr double kTrtllmKvReservedOutput = 1.0;

// TensorRT-LLM's pipeline loop: host seconds per active request per
// micro-batch step (Calibration::pipeline_request_overhead_seconds). Fitted,
// one parameter, on the Llama-3.3-70B 1000/1000 rows of TensorRT-LLM's
// v1.0 performance overview on RTX PRO 6000 (TP1 with PP 2, 4 and 8 against
// PP 1, per-GPU throughput ratios;
// https://github.com/NVIDIA/TensorRT-LLM/blob/00f37686aa854010d68bcbd0f4ab000221541ca6/docs/source/performance/perf-overview.md),
// every other length, depth and model of those pages held out
// (tests/simulator/pipeline_parallel_measured_test.cc recomputes the fit and
// checks the held-out rows). A host-side cost, so it carries to H100 hosts;
// vLLM and SGLang overlap their pipeline scheduling with the GPU and have no
// pp rows: 0.
constexpr double kTrtllmPipelineRequestOverheadSeconds = 6.5e-6;

// TensorRT-LLM sizes its KV-cache pool after loading the weights, as
// kv_cache_config.free_gpu_memory_fraction (default 0.9) of the GPU memory
// left free
// (https://nvidia.github.io/TensorRT-LLM/performance/performance-tuning-guide/useful-runtime-flags.html,
// "KV Cache Free GPU Memory Fraction"); vLLM's --gpu-memory-utilization and
// SGLang's --mem-fraction-static are fractions of the whole memory.
constexpr bool kTrtllmKvPoolFromFreeMemory = true;

// vLLM's fitted per-request time before the first token
// (Calibration::prefill_overhead_seconds of its profile, from the fit above).
constexpr double kVllmPrefillOverheadSeconds = 0.009375;

// TensorRT-LLM with num_postprocess_workers > 0
// (Calibration::offloaded_detokenisation_request_overhead_seconds): the
// workers detokenise and stream the responses in processes of their own
// (`num_postprocess_workers`, "the number of processes used for
// postprocessing the generated tokens, including detokenization",
// tensorrt_llm/llmapi/llm_args.py), so the process that runs the executor
// and the HTTP server no longer does it for every token of every request.
// vLLM's server is built that way (its API server and detokeniser run in
// processes apart from the engine core), so such a run gets vLLM's fitted
// per-request time, not the 93 ms fitted on TensorRT-LLM rows served
// without workers (AIConfigurator's H100 runs). Measured on B200 (InferenceMAX
// runs; nothing fitted there): TTFT minus one prefill at 4-8 clients is
// 23-64 ms on its Llama-3.1-70B and gpt-oss-120b runs with workers and
// 117-348 ms on its DeepSeek-R1 runs without (dsr1_*_b200_trt.sh).
constexpr double kTrtllmOffloadedDetokenisationRequestOverheadSeconds =
    kVllmPrefillOverheadSeconds;

Calibration WithTrtllmHostBehaviour(Calibration c, double seconds) {
  c.pipeline_request_overhead_seconds = seconds;
  c.kv_pool_from_free_memory = kTrtllmKvPoolFromFreeMemory;
  c.offloaded_detokenisation_request_overhead_seconds =
      kTrtllmOffloadedDetokenisationRequestOverheadSeconds;
  return c;
}
constexpr double kPagedKvReservedOutput = 0.5;
// What happens when the cache runs out (Calibration::preempts_on_kv_overflow):
// vLLM admits waiting requests whenever their prompt's blocks are free and
// preempts running requests (RECOMPUTE) when a decode step finds no free block
// (https://docs.vllm.ai/en/v0.10.1.1/configuration/optimization.html,
// "Preemption"); SGLang admits a request only when the running requests'
// estimated remaining output (new_token_ratio) still fits and retracts only
// when the estimate fails
// (https://docs.sglang.ai/advanced_features/hyperparameter_tuning.html,
// "--schedule-conservativeness"), and its queueing Qwen3-32B rows keep the
// wait before the first token (TTFT 16-89 s measured with TPOT below the
// running batch's); TensorRT-LLM's GUARANTEED_NO_EVICT never evicts.
constexpr bool kVllmPreempts = true;
// Native FP4 routed experts (Calibration::fp4_grouped_gemm_bandwidth_ratio):
// SGLang's ModelOpt NVFP4 MoE runs CUTLASS's block-scaled grouped GEMM
// (cutlass_moe_fp4, python/sglang/srt/layers/moe/cutlass_moe.py, called from
// ModelOptNvFp4FusedMoEMethod.apply in
// python/sglang/srt/layers/quantization/modelopt_quant.py). That kernel on
// B200 with DeepSeek's expert shapes (m = 16 tokens per expert, n x k = 2048
// x 7168 and 7168 x 2048, 32 groups) streams "not much higher than 3
// TB/sec", about 4 with tuned tiles, where the same GEMM in MXFP8 comes
// "much closer to 6 TB/sec" (https://github.com/NVIDIA/cutlass/issues/2266):
// 3.5 / 6 at the midpoint, so per weight an FP4 expert costs about what an
// FP8 one does. The measured rows agree: SGLang DeepSeek-R1 on B200 at the
// same layout and load decodes FP8 only 1.0-1.2x slower than FP4, TensorRT-LLM
// (its own fused MoE kernels) 1.3-1.4x. TensorRT-LLM keeps 1, and so does
// vLLM, whose FP4 experts on Blackwell (MXFP4, gpt-oss) run FlashInfer's
// TensorRT-LLM-generated trtllm_fp4_block_scale_moe by default (backend
// SM100_FI_MXFP4_BF16, vllm/model_executor/layers/quantization/mxfp4.py).
constexpr double kSglangFp4GroupedGemmBandwidthRatio = 3.5 / 6.0;

Calibration WithFp4GroupedGemmRatio(Calibration c, double ratio) {
  c.fp4_grouped_gemm_bandwidth_ratio = ratio;
  return c;
}

// BF16 and FP8 routed experts on Blackwell
// (Calibration::bf16_grouped_gemm_bandwidth_ratio and fp8_...): the
// fraction of the datasheet HBM bandwidth each engine's grouped MoE kernel
// streams expert weights at on B200, over the fraction on H100, from
// AIConfigurator's measured MoE tables (moe_perf.parquet of
// https://github.com/ai-dynamo/aiconfigurator/tree/095f58a51c4ca8e61b66ec108d86f223f8d559ce/aic-core/src/aiconfigurator_core/systems/data,
// {h100_sxm,b200_sxm}/moe/{vllm/0.19.0,sglang/0.5.9,trtllm/1.2.0rc5}; the
// collector runs the engine's own FusedMoE module with the serving backend
// selection, collector/vllm/collect_moe.py). Fitted per kernel and GPU as
// latency = floor + touched expert bytes / (fraction x HBM), balanced
// routing, 1-256 tokens, moe_tp x moe_ep <= 8, every shape of the table
// (the per-shape fractions of DeepSeek's, MiniMax-M2.5's, GLM-5's and
// Qwen3.5's experts agree within 0.05): on H100 every engine's kernel
// streams at 0.78-0.81, on B200 vLLM's fused MoE at 0.74 (BF16) and 0.48
// (block FP8), SGLang's Triton fused MoE at 0.70 and 0.68, TensorRT-LLM's
// CUTLASS MoE at 0.80 (BF16) and its block-FP8 experts, which run DeepGEMM
// on B200 (the table's kernel there; CUTLASS on H100, 0.81), at 0.58. The
// floors (40-110 us per MoE call, launches and routing) are host-side and
// already in layer_overhead_s. A property of the engine's kernels, not
// fitted on any serving row.
constexpr double kVllmBf16GroupedGemmBandwidthRatio = 0.74 / 0.81;
constexpr double kVllmFp8GroupedGemmBandwidthRatio = 0.48 / 0.79;
constexpr double kSglangBf16GroupedGemmBandwidthRatio = 0.70 / 0.80;
constexpr double kSglangFp8GroupedGemmBandwidthRatio = 0.68 / 0.80;
constexpr double kTrtllmFp8GroupedGemmBandwidthRatio = 0.58 / 0.81;

// Native FP4 dense GEMMs (Calibration::fp4_dense_gemm_bandwidth_ratio): each
// engine's NVFP4 linear layer quantises its activations to NVFP4 and runs a
// block-scaled FP4 GEMM (vLLM's ModelOptNvFp4LinearMethod.apply:
// scaled_fp4_quant, then flashinfer_scaled_fp4_mm with the default
// "flashinfer-cutlass" backend when FlashInfer is installed,
// vllm/model_executor/layers/quantization/modelopt.py). AIConfigurator
// measured each engine's own dense GEMMs per dtype on B200 (gemm_perf.parquet
// of
// https://github.com/ai-dynamo/aiconfigurator/tree/095f58a51c4ca8e61b66ec108d86f223f8d559ce/aic-core/src/aiconfigurator_core/systems/data,
// b200_sxm/gemm/{vllm/0.19.0,trtllm/1.2.0rc5,sglang/0.5.9}; vLLM's collector
// times the linear layer's forward, quantisation included,
// collector/vllm/collect_gemm.py). Fitted as latency = floor + weight bytes
// / (fraction x HBM) over n, k in 1,024-16,384 and the decode token counts
// m = 4-128 (NVFP4 at 0.5625 bytes per weight), the NVFP4 GEMMs stream at
// 0.491 (vLLM), 0.475 (TensorRT-LLM) and 0.452 (SGLang) of B200's HBM, the
// same engines' FP8 GEMMs at 0.636, 0.689 and 0.667 (floors 7-16 us, kernel
// launches, in layer_overhead_s). The FP8 rate is what the H100-fitted
// hbm_efficiency reproduces on B200 (Llama-3.1-70B FP8 decode within 0.94-1.06
// of measured on vLLM and TensorRT-LLM), so an FP4 weight costs the FP8
// kernel's time per byte divided by the measured FP4 / FP8 ratio. A property
// of the engines' kernels, not fitted on any serving row.
constexpr double kVllmFp4DenseGemmBandwidthRatio = 0.491 / 0.636;
constexpr double kTrtllmFp4DenseGemmBandwidthRatio = 0.475 / 0.689;
constexpr double kSglangFp4DenseGemmBandwidthRatio = 0.452 / 0.667;

// Expert parallelism under attention dp
// (Calibration::expert_dispatch_gathers_over_dp): vLLM's default all2all
// backend is "allgather_reducescatter" (ParallelConfig.all2all_backend,
// vllm/config/parallel.py), whose AgRsAll2AllManager dispatches by
// all_gatherv of the hidden states, top-k weights and ids over the dp group
// and combines by reduce_scatterv over it
// (vllm/distributed/device_communicators/all2all.py at
// https://github.com/vllm-project/vllm/blob/001430048e8175c8dff1bc57e1a81a1fa75460f9/vllm/distributed/device_communicators/all2all.py,
// AgRsAll2AllManager.dispatch and .combine). The launch selects all-to-all
// kernels only where the expert group crosses nodes (client/emit/vllm.cc:
// DeepEP over InfiniBand, FlashInfer's over NVLink trays), and those are
// priced as all-to-alls. SGLang gathers the same way under DP attention
// without DeepEP (CommunicateWithAllReduceAndLayerNormFn.
// _gather_hidden_states_and_residual, dp_gather when attn_dp_size != 1, in
// python/sglang/srt/layers/communicator.py of
// https://github.com/sgl-project/sglang), and its launch selects DeepEP
// (--moe-a2a-backend deepep) only when the experts are not tensor-split
// (client/emit/sglang.cc; DeepEP sets ep_size = tp_size). TensorRT-LLM
// dispatches with its own all-to-all kernels.
constexpr bool kVllmExpertDispatchGathersOverDp = true;
// Across nodes vLLM's aggregated servers run DeepEP's low-latency kernels
// (client/emit/vllm.cc), the prefill in VLLM_MOE_DP_CHUNK_SIZE = 256 tokens
// per DP rank ("All DP ranks process the activations in
// VLLM_MOE_DP_CHUNK_SIZE units", vllm/envs.py of
// https://github.com/vllm-project/vllm).
constexpr double kVllmLowLatencyChunkTokens = 256;
// With one attention DP rank vLLM runs no dispatch whatever the launch's
// --all2all-backend: FusedMoEParallelConfig.use_all2all_kernels is
// use_ep and (dp_size > 1 or pcp_size > 1 or is_sequence_parallel)
// (vllm/model_executor/layers/fused_moe/config.py at
// https://github.com/vllm-project/vllm/blob/002d6073aa034d4f5545d45021b0e56d1f3c3593/vllm/model_executor/layers/fused_moe/config.py,
// the property after FUSED_MOE_UNQUANTIZED_CONFIG), and without all-to-all
// kernels every EP rank (ep_size = tp_size there, make()) computes its own
// experts on all of the TP group's tokens and FusedMoE sums the outputs with
// tensor_model_parallel_all_reduce (maybe_all_reduce_tensor_model_parallel,
// vllm/model_executor/layers/fused_moe/layer.py). The launch enables neither
// prefill context parallelism nor sequence-parallel MoE.
constexpr bool kVllmExpertParallelAllReducesWithoutDp = true;

// Each engine's tensor-parallel all-reduce inside a node
// (Calibration::all_reduce_kernel): vLLM and SGLang run their own custom
// all-reduce kernels under CUDA graphs (CustomAllreduce in
// vllm/distributed/device_communicators/custom_all_reduce.py and
// python/sglang/srt/distributed/device_communicators/custom_all_reduce.py),
// TensorRT-LLM its AllReduce op (AUTO strategy, the default 0); each is
// priced at its own measured table (internal/collectives.h,
// kCustomAllReduceSeconds).
constexpr int kVllmAllReduceKernel = 1;
constexpr int kSglangAllReduceKernel = 2;

Calibration WithVllmExpertDispatch(Calibration c) {
  c.expert_a2a_low_latency_chunk_tokens = kVllmLowLatencyChunkTokens;
  c.expert_parallel_all_reduces_without_dp =
      kVllmExpertParallelAllReducesWithoutDp;
  c.all_reduce_kernel = kVllmAllReduceKernel;
  return c;
}

// SGLang without DP attention runs the same way as vLLM with one DP rank:
// with the default --moe-a2a-backend "none" the StandardDispatcher moves no
// token (dispatch only maps the top-k ids onto this EP rank's experts,
// -1 for the others; combine returns the local output unless the FP4
// all-gather path is on, which needs DP attention:
// should_use_flashinfer_cutlass_moe_fp4_allgather in
// python/sglang/srt/layers/moe/utils.py), every rank of the TP group holds
// all tokens after the attention's all-reduce, and the MoE block sums its
// experts' outputs (with the shared experts') by
// tensor_model_parallel_all_reduce over the TP group (Qwen2MoeSparseMoeBlock
// .forward, which Qwen3.5 uses, and DeepseekV2MoE.forward_normal, fused
// with the next RMSNorm under --enable-flashinfer-allreduce-fusion:
// https://github.com/sgl-project/sglang/blob/0115497da8f2340cdce444597387cf2a4d499f5c/python/sglang/srt/models/qwen2_moe.py,
// https://github.com/sgl-project/sglang/blob/008b79d2358b08adf9b6c879625030f890c8c4e2/python/sglang/srt/layers/moe/token_dispatcher/standard.py).
// InferenceMAX's SGLang expert-parallel runs launch exactly that:
// --tensor-parallel-size $TP --data-parallel-size=1 --ep-size $EP_SIZE and
// no --moe-a2a-backend (benchmarks/single_node/dsr1_fp4_b200.sh,
// qwen3.5_fp8_b200.sh of https://github.com/SemiAnalysisAI/InferenceX), and
// shardplan's launch selects DeepEP only under DP attention
// (client/emit/sglang.cc).
constexpr bool kSglangExpertParallelAllReducesWithoutDp = true;

Calibration WithSglangExpertDispatch(Calibration c) {
  c.expert_dispatch_gathers_over_dp = true;
  c.expert_a2a_needs_whole_group_ep = true;
  c.expert_parallel_all_reduces_without_dp =
      kSglangExpertParallelAllReducesWithoutDp;
  c.all_reduce_kernel = kSglangAllReduceKernel;
  return c;
}

Calibration WithBlackwellGroupedGemmRatios(
    Calibration c, double bf16, double fp8,
    bool expert_dispatch_gathers_over_dp = false) {
  c.bf16_grouped_gemm_bandwidth_ratio = bf16;
  c.fp8_grouped_gemm_bandwidth_ratio = fp8;
  c.expert_dispatch_gathers_over_dp = expert_dispatch_gathers_over_dp;
  return c;
}

Calibration WithFp4DenseGemmRatio(Calibration c, double ratio) {
  c.fp4_dense_gemm_bandwidth_ratio = ratio;
  return c;
}

}  // namespace

// --- Profiles ---

const std::vector<CalibrationProfile>& CalibrationProfiles() {
  static const std::vector<CalibrationProfile>* const kProfiles =
      new std::vector<CalibrationProfile>{
          {"h100-trtllm", "trtllm",
           WithFp4DenseGemmRatio(
               WithBlackwellGroupedGemmRatios(
                   WithTrtllmHostBehaviour(
                       EngineFit(0.09296875, 0.05859375,
                                 kTrtllmKvReservedOutput, false, 6.77, 0.02),
                       kTrtllmPipelineRequestOverheadSeconds),
                   1.0, kTrtllmFp8GroupedGemmBandwidthRatio),
               kTrtllmFp4DenseGemmBandwidthRatio)},
          {"h100-sglang", "sglang",
           WithFp4DenseGemmRatio(
               WithSglangExpertDispatch(WithBlackwellGroupedGemmRatios(
                   WithFp4GroupedGemmRatio(
                       WithPrefillBatchTokens(
                           EngineFit(kSglangPrefillOverheadSeconds,
                                     kSglangPrefillQueueFraction,
                                     kPagedKvReservedOutput, false,
                                     kSglangDisaggRequestOverheadSeconds, 0.16),
                           kSglangPrefillBatchTokens),
                       kSglangFp4GroupedGemmBandwidthRatio),
                   kSglangBf16GroupedGemmBandwidthRatio,
                   kSglangFp8GroupedGemmBandwidthRatio)),
               kSglangFp4DenseGemmBandwidthRatio)},
          {"h100-vllm", "vllm",
           WithFp4DenseGemmRatio(
               WithVllmExpertDispatch(WithBlackwellGroupedGemmRatios(
                   EngineFit(kVllmPrefillOverheadSeconds, 0.056640625,
                             kPagedKvReservedOutput, kVllmPreempts, 0, 0),
                   kVllmBf16GroupedGemmBandwidthRatio,
                   kVllmFp8GroupedGemmBandwidthRatio,
                   kVllmExpertDispatchGathersOverDp)),
               kVllmFp4DenseGemmBandwidthRatio)},
      };
  return *kProfiles;
}

const CalibrationProfile& DefaultCalibrationProfile() {
  return CalibrationProfiles().front();
}

const CalibrationProfile& EngineAgnosticCalibrationProfile() {
  static const CalibrationProfile* const kProfile = new CalibrationProfile{
      kEngineAgnosticProfileName, "", DefaultCalibration()};
  return *kProfile;
}

std::vector<std::string> BuiltInProfileNames() {
  std::vector<std::string> names;
  for (const CalibrationProfile& p : CalibrationProfiles()) {
    names.push_back(p.name);
  }
  names.push_back(kEngineAgnosticProfileName);
  return names;
}

absl::Status CheckCalibrationRanges(const Calibration& c) {
  struct Range {
    const char* field;
    double value, lo, hi;
  };
  const Range ranges[] = {
      {"gemm_efficiency", c.gemm_efficiency, 0.01, 1},
      {"gemm_half_efficiency_tokens", c.gemm_half_efficiency_tokens, 0, 1e6},
      {"hbm_efficiency", c.hbm_efficiency, 0.01, 1},
      {"attention_efficiency", c.attention_efficiency, 0.01, 1},
      {"intra_node_efficiency", c.intra_node_efficiency, 0.01, 1},
      {"inter_node_efficiency", c.inter_node_efficiency, 0.01, 1},
      {"collective_latency_scale", c.collective_latency_scale, 0.01, 100},
      {"decode_step_overhead_s", c.decode_step_overhead_seconds, 0, 10},
      {"layer_overhead_s", c.layer_overhead_seconds, 0, 10},
      {"prefill_overhead_s", c.prefill_overhead_seconds, 0, 10},
      {"prefill_queue_fraction", c.prefill_queue_fraction, 0, 1},
      {"ttft_wait_iterations", c.ttft_wait_iterations, 0, 1000},
      {"ttft_inflight_prefills", c.ttft_inflight_prefills, 0, 1000},
      {"fp4_dequant_bytes_per_weight", c.fp4_dequant_bytes_per_weight, 0, 64},
      {"fp4_grouped_gemm_bandwidth_ratio", c.fp4_grouped_gemm_bandwidth_ratio,
       0.01, 1},
      {"bf16_grouped_gemm_bandwidth_ratio", c.bf16_grouped_gemm_bandwidth_ratio,
       0.01, 1},
      {"fp8_grouped_gemm_bandwidth_ratio", c.fp8_grouped_gemm_bandwidth_ratio,
       0.01, 1},
      {"fp4_dense_gemm_bandwidth_ratio", c.fp4_dense_gemm_bandwidth_ratio, 0.01,
       1},
      {"kv_reserved_output_fraction", c.kv_reserved_output_fraction, 0, 1},
      {"pipeline_request_overhead_s", c.pipeline_request_overhead_seconds, 0,
       10},
      {"disagg_request_overhead_s", c.disagg_request_overhead_seconds, 0, 10},
      {"disagg_prefill_queue_fraction", c.disagg_prefill_queue_fraction, 0, 1},
  };
  for (const Range& r : ranges) {
    if (!(r.value >= r.lo && r.value <= r.hi)) {  // NaN fails too
      return absl::InvalidArgumentError(
          absl::StrFormat("%s must be a finite number in [%g, %g], got %g",
                          r.field, r.lo, r.hi, r.value));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<CalibrationProfile> FindCalibrationProfile(
    absl::string_view name) {
  for (const CalibrationProfile& p : CalibrationProfiles()) {
    if (p.name == name || p.engine == name) return p;
  }
  if (name == kEngineAgnosticProfileName) {
    return EngineAgnosticCalibrationProfile();
  }
  return absl::NotFoundError(absl::StrFormat(
      "calibration profile %s not found; known: %s", QuoteUserText(name),
      absl::StrJoin(BuiltInProfileNames(), ", ")));
}

const Calibration& DefaultCalibration() {
  static const Calibration* const kDefault = [] {
    Calibration* c = new Calibration(DefaultCalibrationProfile().calibration);
    // Engine-agnostic disaggregated plans get the per-request overhead fitted
    // to SGLang (TTFT 211 ms at concurrency 1 for a ~70 ms prefill), not the
    // ~6.8 s fitted to the TensorRT-LLM rows, which is a property of that
    // Dynamo 0.8.1 deployment (docs/cost-model-and-calibration.md); naming
    // the engine (workload.engine) applies its own value.
    c->disagg_request_overhead_seconds = kEngineAgnosticDisaggOverheadS;
    // Engine-agnostic requests size the KV cache from the whole memory.
    c->kv_pool_from_free_memory = false;
    return c;
  }();
  return *kDefault;
}

// --- Error bars ---

namespace {

const ErrorBand* FindBand(const std::vector<ErrorBand>& bands,
                          absl::string_view engine, bool moe,
                          absl::string_view dtype) {
  for (const ErrorBand& b : bands) {
    if (b.engine == engine && b.moe == moe && b.dtype == dtype) return &b;
  }
  return nullptr;
}

}  // namespace

const std::vector<ErrorBand>& CompiledErrorBands() {
  // Produced by
  //   build/bin/shardplan-calibrate --csv
  //   simulator/calibration/data/h100_measured_latency.csv --csv
  //   simulator/calibration/data/h100_moe_latency.csv --validation-csv
  //   simulator/calibration/data/h100_validation_latency.csv --bands
  // with the compiled-in profiles; calibration_test recomputes it.
  // engine, moe, weight dtype, held-out rows, TTFT p10, p90, TPOT p10, p90
  // of measured / predicted ("any": engine-agnostic predictions).
  static const std::vector<ErrorBand>* const kBands =
      new std::vector<ErrorBand>{
          {"*", false, "*", 309, 0.66532, 2.26956, 0.874146, 1.16716},
          {"*", true, "*", 46, 0.861832, 1.34964, 0.811785, 1.17956},
          {"any", false, "*", 309, 0.556908, 3.03338, 0.840849, 1.16388},
          {"any", false, "bf16", 220, 0.650453, 3.95682, 0.819409, 1.0816},
          {"any", false, "fp8", 89, 0.423692, 1.187, 0.960366, 1.22383},
          {"any", true, "*", 46, 0.410325, 1.30285, 0.811785, 1.17956},
          {"any", true, "fp4", 15, 0.28549, 0.974832, 0.845687, 1.16584},
          {"any", true, "fp8", 31, 0.828675, 1.37569, 0.787205, 1.17835},
          {"sglang", false, "*", 21, 0.845839, 1.23197, 0.871083, 1.0735},
          {"sglang", false, "bf16", 21, 0.845839, 1.23197, 0.871083, 1.0735},
          {"trtllm", false, "*", 221, 0.677443, 2.51532, 0.857731, 1.15356},
          {"trtllm", false, "bf16", 177, 0.66114, 2.84376, 0.848154, 1.07048},
          {"trtllm", false, "fp8", 44, 0.809944, 1.22462, 0.926819, 1.19177},
          {"trtllm", true, "*", 31, 0.828675, 1.37569, 0.787205, 1.17835},
          {"trtllm", true, "fp8", 31, 0.828675, 1.37569, 0.787205, 1.17835},
          {"vllm", false, "*", 67, 0.615704, 1.10257, 0.986698, 1.21277},
          {"vllm", false, "bf16", 22, 0.886244, 1.1811, 0.959273, 1.14128},
          {"vllm", false, "fp8", 45, 0.567547, 0.89219, 1.03307, 1.25941},
          {"vllm", true, "*", 15, 0.889909, 1.26659, 0.845687, 1.16584},
          {"vllm", true, "fp4", 15, 0.889909, 1.26659, 0.845687, 1.16584},
      };
  return *kBands;
}

const std::vector<ErrorBand>& CompiledTransferBands() {
  // Produced by
  //   build/bin/shardplan-calibrate --transfer-csv
  //   simulator/calibration/data/blackwell_measured_latency.csv
  //   --transfer-csv simulator/calibration/data/h100_measured_latency.csv
  //   --transfer-csv simulator/calibration/data/h100_moe_latency.csv
  //   --transfer-csv simulator/calibration/data/h100_validation_latency.csv
  //   --bands
  // with the compiled-in profiles (ComputeTransferBands, pooled);
  // calibration_transfer_test recomputes it. Same columns as
  // CompiledErrorBands; each band is symmetric in log space.
  static const std::vector<ErrorBand>* const kBands =
      new std::vector<ErrorBand>{
          {"*", false, "*", 837, 0.688038, 1.45341, 0.865829, 1.15496},
          {"*", true, "*", 854, 0.662473, 1.50949, 0.790951, 1.2643},
          {"any", false, "*", 837, 0.561293, 1.7816, 0.847354, 1.18014},
          {"any", false, "bf16", 351, 0.329767, 3.03245, 0.797113, 1.25453},
          {"any", false, "fp4", 133, 0.655279, 1.52607, 0.904828, 1.10518},
          {"any", false, "fp8", 353, 0.648911, 1.54104, 0.853657, 1.17143},
          {"any", true, "*", 854, 0.520422, 1.92152, 0.789944, 1.26591},
          {"any", true, "bf16", 16, 0.63767, 1.56821, 0.851493, 1.17441},
          {"any", true, "fp4", 445, 0.47533, 2.1038, 0.792388, 1.26201},
          {"any", true, "fp8", 393, 0.558731, 1.78977, 0.774754, 1.29073},
          {"sglang", false, "*", 84, 0.822143, 1.21633, 0.88809, 1.12601},
          {"sglang", false, "bf16", 84, 0.822143, 1.21633, 0.88809, 1.12601},
          {"sglang", true, "*", 188, 0.597947, 1.67239, 0.783225, 1.27677},
          {"sglang", true, "bf16", 16, 0.843883, 1.185, 0.913719, 1.09443},
          {"sglang", true, "fp4", 67, 0.529864, 1.88728, 0.801777, 1.24723},
          {"sglang", true, "fp8", 105, 0.616633, 1.62171, 0.753771, 1.32666},
          {"trtllm", false, "*", 498, 0.649229, 1.54029, 0.86386, 1.15759},
          {"trtllm", false, "bf16", 177, 0.561808, 1.77997, 0.869651, 1.14989},
          {"trtllm", false, "fp4", 73, 0.733854, 1.36267, 0.906099, 1.10363},
          {"trtllm", false, "fp8", 248, 0.741822, 1.34803, 0.853541, 1.17159},
          {"trtllm", true, "*", 297, 0.725334, 1.37867, 0.810384, 1.23398},
          {"trtllm", true, "fp4", 137, 0.644103, 1.55255, 0.816392, 1.2249},
          {"trtllm", true, "fp8", 160, 0.775952, 1.28874, 0.806874, 1.23935},
          {"vllm", false, "*", 255, 0.721505, 1.38599, 0.867784, 1.15236},
          {"vllm", false, "bf16", 90, 0.816887, 1.22416, 0.883633, 1.13169},
          {"vllm", false, "fp4", 60, 0.684405, 1.46112, 0.872154, 1.14659},
          {"vllm", false, "fp8", 105, 0.666662, 1.50001, 0.852255, 1.17336},
          {"vllm", true, "*", 369, 0.683721, 1.46258, 0.787135, 1.27043},
          {"vllm", true, "fp4", 241, 0.658903, 1.51767, 0.787608, 1.26967},
          {"vllm", true, "fp8", 128, 0.736124, 1.35847, 0.788794, 1.26776},
      };
  return *kBands;
}

PredictionBand FindPredictionBand(
    const BandRegime& regime, const std::vector<ErrorBand>& own_bands,
    const std::vector<ErrorBand>& transfer_bands) {
  PredictionBand out;
  const std::vector<ErrorBand>& bands =
      regime.across_hardware ? transfer_bands : own_bands;
  if (regime.across_hardware) {
    out.notes.push_back(absl::StrFormat(
        "hardware %s: the profiles are fitted on %s only; range from "
        "cross-hardware errors (H100-fitted profiles on B200 measurements and "
        "B200-fitted ones on H100 measurements)",
        regime.hardware.empty() ? "(unnamed)" : regime.hardware,
        kProfileFitHardware));
  }
  const std::string profile_name =
      regime.profile.empty() ? kEngineAgnosticProfileName : regime.profile;
  // An engine-agnostic prediction is measured against every engine's rows.
  std::string engine = regime.profile.empty() ? kEngineAgnosticBandEngine : "";
  for (const CalibrationProfile& p : CalibrationProfiles()) {
    if (p.name == profile_name) engine = p.engine;
  }
  const std::string engine_label =
      engine == kEngineAgnosticBandEngine ? "every engine" : engine;
  const absl::string_view kind = regime.moe ? "MoE" : "dense";
  const std::string dtype(DtypeName(regime.weight_dtype));
  const ErrorBand* band = nullptr;
  // Levels of the cell hierarchy passed over: a parent cell's rows do not
  // measure this dtype on this engine (one), or this engine at all (two);
  // each is an unvalidated term, widened below like pp and multi-node.
  int borrowed_levels = 0;
  if (!engine.empty()) {
    band = FindBand(bands, engine, regime.moe, dtype);
    if (band == nullptr) {
      band = FindBand(bands, engine, regime.moe, "*");
      if (band != nullptr) {
        borrowed_levels = 1;
        out.notes.push_back(absl::StrFormat(
            "%s %s weights on %s: fewer than %d held-out rows; range from all "
            "held-out %s rows of %s, widened",
            kind, dtype, engine_label, kMinBandRows, kind, engine_label));
      }
    }
  }
  if (band == nullptr) {
    band = FindBand(bands, "*", regime.moe, "*");
    borrowed_levels = 2;
    out.notes.push_back(absl::StrFormat(
        "%s models on profile %s: no held-out rows of this engine; range "
        "pooled over the held-out %s rows of every engine, widened",
        kind, profile_name, kind));
  }
  if (band != nullptr) {
    out.ttft_low = band->ttft_low;
    out.ttft_high = band->ttft_high;
    out.tpot_low = band->tpot_low;
    out.tpot_high = band->tpot_high;
  }
  if (!regime.engine_given) {
    out.notes.push_back(absl::StrFormat(
        "engine not set: predicted with the engine-agnostic profile %s "
        "(TensorRT-LLM's fitted constants); the range covers every engine's "
        "held-out measurements (set workload.engine for a narrower one)",
        profile_name));
  }
  // Terms no measured row exercises. Each is taken to be as uncertain as the
  // validated model and independent of it: log-errors add in quadrature.
  // Pipelines stay widened although public pp rows now exist: per-GPU
  // throughput ratios on another GPU (RTX PRO 6000) and one engine, from
  // maximum-throughput runs whose batches hide the sends and bubbles
  // (tests/simulator/pipeline_parallel_measured_test.cc), with no TTFT or
  // TPOT; they support the stage and host terms, not a band.
  int unvalidated = borrowed_levels;
  if (regime.pipeline_stages > 1) {
    ++unvalidated;
    out.notes.push_back(
        "pipeline parallelism: no H100 rows; TensorRT-LLM's RTX PRO 6000 "
        "rows (2-8 stages against 1, per-GPU throughput at maximum load) are "
        "predicted within 3% (median, held out); sends, small-batch bubbles "
        "and other engines untested; range widened");
  }
  if (regime.replica_nodes > 1) {
    ++unvalidated;
    out.notes.push_back(
        regime.expert_domain_spans_nodes
            ? "multi-node collectives: no measured serving rows; DeepEP "
              "kernel figures only; range widened"
            : "multi-node collectives: no measured serving rows; InfiniBand "
              "datasheet figures only; range widened");
  }
  const double widen = std::sqrt(1.0 + unvalidated);
  auto apply = [&](double* low, double* high) {
    if (unvalidated > 0 && *low > 0 && *high > 0) {
      const double center = 0.5 * (std::log(*low) + std::log(*high));
      const double half = 0.5 * (std::log(*high) - std::log(*low));
      *low = std::exp(center - widen * half);
      *high = std::exp(center + widen * half);
    }
    // The band always contains the prediction itself.
    *low = std::min(*low, 1.0);
    *high = std::max(*high, 1.0);
  };
  apply(&out.ttft_low, &out.ttft_high);
  apply(&out.tpot_low, &out.tpot_high);
  return out;
}

BandRegime RegimeOf(const Evaluation& e, const Problem& problem) {
  BandRegime regime;
  regime.profile = problem.workload.calibration_profile;
  // WorkloadDimsFromProto leaves the profile empty only when neither the
  // engine nor a profile was named.
  regime.engine_given = !problem.workload.calibration_profile.empty();
  regime.moe = problem.model.is_moe();
  regime.weight_dtype = problem.workload.weight_dtype;
  regime.pipeline_stages = e.pipeline_stages;
  regime.replica_nodes = e.replica_nodes;
  regime.expert_domain_spans_nodes = e.ep_nodes > 1;
  regime.hardware = problem.cluster.hardware.name;
  regime.across_hardware = regime.hardware != kProfileFitHardware;
  return regime;
}

double ConservativeOutputTokensPerS(const Evaluation& e,
                                    const Problem& problem) {
  if (!e.feasible) return 0;
  return e.output_tokens_per_s /
         FindPredictionBand(RegimeOf(e, problem)).tpot_high;
}

Calibration WithEngineBehaviour(Calibration c, absl::string_view engine) {
  absl::StatusOr<CalibrationProfile> own = FindCalibrationProfile(engine);
  if (!own.ok()) return c;
  const Calibration& e = own->calibration;
  c.kv_reserved_output_fraction = e.kv_reserved_output_fraction;
  c.preempts_on_kv_overflow = e.preempts_on_kv_overflow;
  c.kv_pool_from_free_memory = e.kv_pool_from_free_memory;
  c.pipeline_request_overhead_seconds = e.pipeline_request_overhead_seconds;
  c.disagg_request_overhead_seconds = e.disagg_request_overhead_seconds;
  c.disagg_prefill_queue_fraction = e.disagg_prefill_queue_fraction;
  c.fp4_grouped_gemm_bandwidth_ratio = e.fp4_grouped_gemm_bandwidth_ratio;
  c.bf16_grouped_gemm_bandwidth_ratio = e.bf16_grouped_gemm_bandwidth_ratio;
  c.fp8_grouped_gemm_bandwidth_ratio = e.fp8_grouped_gemm_bandwidth_ratio;
  c.fp4_dense_gemm_bandwidth_ratio = e.fp4_dense_gemm_bandwidth_ratio;
  c.expert_dispatch_gathers_over_dp = e.expert_dispatch_gathers_over_dp;
  c.prefill_batch_tokens = e.prefill_batch_tokens;
  c.expert_a2a_needs_whole_group_ep = e.expert_a2a_needs_whole_group_ep;
  c.expert_a2a_low_latency_chunk_tokens = e.expert_a2a_low_latency_chunk_tokens;
  c.expert_parallel_all_reduces_without_dp =
      e.expert_parallel_all_reduces_without_dp;
  c.all_reduce_kernel = e.all_reduce_kernel;
  c.offloaded_detokenisation_request_overhead_seconds =
      e.offloaded_detokenisation_request_overhead_seconds;
  return c;
}

}  // namespace shardplan::simulator
