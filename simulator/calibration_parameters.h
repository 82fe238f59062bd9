// Calibration constants of the cost model: the achievable-efficiency and
// overhead parameters a calibration profile sets (simulator/calibration.h
// holds the built-in profiles; the harness that fits them is
// simulator/calibration_harness.h). Depends on nothing: the bottom of the
// simulator's cost layers.
#ifndef SHARDPLAN_SIMULATOR_CALIBRATION_PARAMETERS_H_
#define SHARDPLAN_SIMULATOR_CALIBRATION_PARAMETERS_H_

namespace shardplan::simulator {

// Achievable-efficiency parameters, fitted by the calibration harness
// (simulator/calibration_harness.h). Every field is a physically meaningful
// fraction or overhead.
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
  // prefill_overhead_seconds of a run whose server detokenises and streams
  // responses in separate worker processes
  // (WorkloadDims::detokenises_off_executor); 0: the same. Engine behaviour,
  // not fitted (simulator/calibration.cc gives the value's source).
  double offloaded_detokenisation_request_overhead_seconds = 0.0;
  // TTFT queueing: a new request waits behind this fraction of the prefills of
  // the other (batch - 1) requests of its replica; the same fraction of the
  // prefill work leaves the decode iterations (TPOT). 0: staggered arrivals,
  // prefills interleave with decode steps; 1: requests arrive together and are
  // prefilled before decoding (closed-loop waves).
  double prefill_queue_fraction = 0.5;
  // Token budget of one prefill step on GPUs below 160 GB (twice this from
  // 160 GB up, as SGLang's chunked_prefill_size default): the engine packs
  // waiting prompts into one forward pass up to this many tokens, so a prompt
  // queued ahead costs its share of a packed step, not a prefill of its own
  // (the queue term above). 0: a prefill each. Engine behaviour, not fitted
  // (simulator/calibration.cc cites the source).
  double prefill_batch_tokens = 0;
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
  // Native FP4 routed experts (hardware with FP4 tensor cores): the rate at
  // which the engine's grouped expert GEMM streams FP4 weights, as a fraction
  // of the rate of the dense FP4 GEMMs (1: as fast). Set by the engine's MoE
  // kernel library; engine behaviour, not fitted (simulator/calibration.cc
  // cites the kernels and their measurements).
  double fp4_grouped_gemm_bandwidth_ratio = 1.0;
  // BF16 and FP8 routed experts on Blackwell (hardware with FP4 tensor
  // cores): the fraction of its HBM bandwidth the engine's grouped expert
  // GEMM streams weights at there, divided by the fraction its kernel reaches
  // on the profiles' fit hardware (H100), whose rows fix hbm_efficiency (1:
  // the same fraction on both). Set by the engine's MoE kernel library from
  // measured kernel tables; engine behaviour, not fitted
  // (simulator/calibration.cc cites the tables).
  double bf16_grouped_gemm_bandwidth_ratio = 1.0;
  double fp8_grouped_gemm_bandwidth_ratio = 1.0;
  // Native FP4 dense GEMMs (hardware with FP4 tensor cores): the rate at
  // which the engine's dense NVFP4 GEMM, with the activation quantisation it
  // runs before it, streams weights, as a fraction of the rate of the same
  // engine's FP8 GEMM on the same GPU (1: as fast), whose rate the
  // H100-fitted hbm_efficiency reproduces. Set by the engine's GEMM library
  // from measured kernel tables; engine behaviour, not fitted
  // (simulator/calibration.cc cites the tables).
  double fp4_dense_gemm_bandwidth_ratio = 1.0;
  // Expert parallelism with attention data parallelism (dp > 1): true = the
  // engine moves tokens to the experts by an all-gather of every dp rank's
  // tokens and brings the outputs back by a reduce-scatter, both NCCL
  // collectives over the dp group (vLLM's default all2all backend); false =
  // dispatch and combine all-to-alls (DeepEP-style kernels). Engine
  // behaviour, not fitted (simulator/calibration.cc cites the source).
  bool expert_dispatch_gathers_over_dp = false;
  // With expert_dispatch_gathers_over_dp: true = the engine's all-to-all
  // kernels run only when the experts are not tensor-split (ep = dp x tp:
  // SGLang's DeepEP), false = when the expert group crosses nodes (vLLM's
  // DeepEP and multi-node NVLink backends, as the launch selects them).
  // Engine behaviour, not fitted (simulator/calibration.cc cites the source).
  bool expert_a2a_needs_whole_group_ep = false;
  // Expert groups across nodes: 0 = prefill through DeepEP's high-throughput
  // kernels (SGLang's auto mode, TensorRT-LLM); > 0 = an aggregated server
  // launches the low-latency kernels alone (vLLM, one --all2all-backend per
  // server) and runs a prefill's tokens through them in chunks of this many
  // tokens per DP rank. Prefill instances of disaggregated plans take the
  // high-throughput kernels either way. Engine behaviour, not fitted
  // (simulator/calibration.cc cites the source).
  double expert_a2a_low_latency_chunk_tokens = 0;
  // Expert parallelism with a single attention data-parallel rank: true =
  // every rank of the tensor-parallel group already holds all tokens, runs
  // its own experts on them and the outputs are summed by an all-reduce over
  // that group, with no dispatch or combine (vLLM, whose all-to-all backends
  // run only with data parallelism; SGLang, whose default MoE backend moves
  // no token without DP attention); false = the dispatch and combine of the
  // expert group are priced as with attention dp. Engine behaviour, not
  // fitted (simulator/calibration.cc cites the source).
  bool expert_parallel_all_reduces_without_dp = false;
  // The kernel that runs the tensor-parallel all-reduce inside a node, priced
  // at its measured time (internal/collectives.h, kCustomAllReduceSeconds):
  // 0 = TensorRT-LLM's AllReduce (also the engine-agnostic default), 1 =
  // vLLM's custom all-reduce, 2 = SGLang's. Engine behaviour, not fitted.
  int all_reduce_kernel = 0;
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
  // Where the KV cache pool comes from. false: a fraction of the whole HBM
  // holds weights, activations and the KV cache (vLLM's
  // --gpu-memory-utilization, SGLang's --mem-fraction-static): the KV cache
  // gets (1 - reserve) x HBM - weights - activations. true: the engine loads
  // the weights first and gives the KV cache a fraction of the memory left
  // free (TensorRT-LLM's kv_cache_config.free_gpu_memory_fraction, 0.9 by
  // default): (1 - reserve) x (HBM - weights - activations), so the reserve
  // is not taken again from the weights. Engine behaviour, not fitted
  // (simulator/calibration.cc cites the sources).
  bool kv_pool_from_free_memory = false;
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
// (fitted on the SGLang rows with SGLang's per-request time before the first
// token at 22 ms, as the fit of cost model v14 had it).
inline constexpr double kEngineAgnosticDisaggOverheadS = 0.17;

// The calibration shipped with this version (constants produced by the fit;
// defined with the built-in profiles, simulator/calibration.cc).
const Calibration& DefaultCalibration();

}  // namespace shardplan::simulator

#endif  // SHARDPLAN_SIMULATOR_CALIBRATION_PARAMETERS_H_
