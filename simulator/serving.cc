// Serving and queueing (see cost_model.cc for the formulas): continuous
// batching per replica, the KV-overflow queue (Little's law), the batch choice
// and the SLO checks.
#include "simulator/internal/serving.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <new>
#include <utility>
#include <vector>

#include "simulator/cost_model.h"
#include "simulator/internal/collectives.h"
#include "simulator/internal/cost_context.h"
#include "simulator/internal/operator_pass.h"
#include "simulator/internal/pool_costing.h"
#include "simulator/placement.h"

namespace shardplan::simulator::internal {
namespace {

double AttentionKvShare(const CostConstants& k, ShardDim da, const PlanCtx& p) {
  switch (da) {
    case ShardDim::kColumn:
    case ShardDim::kRow:
      return k.mla ? 1.0 : p.kv_head_share;
    case ShardDim::kReplicate:
    case ShardDim::kBatch:  // handled per request count by the caller
      return 1.0;
    case ShardDim::kSequence:
      return p.inv_tp;
  }
  return 1.0;
}

// Room for a LayerResult that is constructed (zeroed) only when a layer kind
// is costed: std::optional zero-fills its storage up front (GCC 12), and the
// zeroing of a kind the model lacks is a measurable share of an evaluation.
class LayerSlot {
 public:
  LayerSlot() {}
  LayerResult* Fresh() { return new (&result_) LayerResult(); }

 private:
  union {
    LayerResult result_;
  };
};

// One pass of every layer kind at `tokens` tokens of `requests` requests
// (decode or prefill), the layer kinds the model lacks read as the zero
// result without zeroing one per evaluation.
struct LayerPass {
  LayerSlot dense_slot, moe_slot;
  const LayerResult* dense;
  const LayerResult* moe;
  LayerResult embed, head;
};

inline void CostLayerPass(const CostConstants& k, const PlanCtx& p,
                          const Residuals& r, bool decode, double tokens,
                          double requests, double ctx, LayerPass* out) {
  static const LayerResult kNoLayer;
  out->dense = k.dense_layers > 0
                   ? &CostLayerInto(k, p, false, decode, tokens, requests, ctx,
                                    r.dense, nullptr, out->dense_slot.Fresh())
                   : &kNoLayer;
  out->moe = k.moe_layers > 0
                 ? &CostLayerInto(k, p, true, decode, tokens, requests, ctx,
                                  r.moe, nullptr, out->moe_slot.Fresh())
                 : &kNoLayer;
  CostEmbeddingInto(k, p, decode, tokens, requests, ctx, r.first, &out->embed);
  CostLmHeadInto(k, p, decode, tokens, requests, ctx, r.last, &out->head);
}

// A weight's share per rank under `d` over n ranks (`inv_n` = 1 / n).
double DimShare(ShardDim d, double inv_n) {
  return (d == ShardDim::kColumn || d == ShardDim::kRow) ? inv_n : 1.0;
}

// Seconds of one send of `bytes` across every stage boundary in turn: the
// boundaries inside a node over NVLink, the ones between nodes over
// InfiniBand (a stage pair inside one node never leaves it, even when its
// replica spans nodes).
double P2pChainSeconds(const CostConstants& k, const PlanCtx& p, int pp,
                       double bytes) {
  if (pp <= 1) return 0;
  Traffic unused;
  Group nv;
  nv.n = 2;
  nv.per_node = 2;
  Group ib = nv;
  ib.per_node = 1;
  const int inter = p.p2p_ib_boundaries;
  return inter * CollectiveSeconds(k, Collective::kPointToPoint, bytes, ib,
                                   &unused) +
         (pp - 1 - inter) * CollectiveSeconds(k, Collective::kPointToPoint,
                                              bytes, nv, &unused);
}

// Decode iterations a new request's prefill is held back by TensorRT-LLM's
// batch waiting (WorkloadDims::batch_wait_timeout_iterations = W). The
// scheduler holds context requests while requests decode until W iterations
// have passed since it started holding, then schedules every held request
// and restarts the count (PyExecutor._waiting_requests and its caller in
// tensorrt_llm/_torch/pyexecutor/py_executor.py, NVIDIA/TensorRT-LLM). In a
// closed loop of B clients a request arrives every OSL / B iterations, so a
// window opened by one arrival collects lambda W more (lambda = B / OSL),
// which wait W / 2 on average: W (1 + lambda W / 2) / (1 + lambda W) per
// request. The token threshold (batch_wait_max_tokens_ratio x
// max_num_tokens) ends a window early only when ~lambda W prompts fill it,
// which the measured runs never reach (InferenceMAX: 0.9 x 16,384 tokens
// against a few 1k prompts). No wait at batch 1: nothing decodes.
double BatchWaitIterations(const CostConstants& k, double batch) {
  const double w = k.batch_wait_timeout_iterations;
  if (!(w > 0) || batch <= 1) return 0;
  const double lambda_w = batch / std::max(1.0, k.osl) * w;
  return w * (1 + lambda_w / 2) / (1 + lambda_w);
}

// Decode iterations a new request's prefill is held back by TensorRT-LLM's
// attention dp balance (attention_dp_config.enable_balance, timeout T,
// batching_wait_iters Wb; PyExecutor._balance_adp_requests in
// tensorrt_llm/_torch/pyexecutor/py_executor.py, NVIDIA/TensorRT-LLM).
// Every iteration in which some rank holds no context request advances a
// counter; context requests are released when every rank holds one (after
// Wb more iterations while every rank decodes) or when the counter reaches
// T, and either resets it; no wait while some rank decodes nothing. The
// counter runs whether or not requests wait, so it is a clock of period at
// most T. New requests go to the rank that has room (executor_request_queue
// .py, _balance_requests_across_ranks: ranks at the expected count are
// excluded); in a closed loop that is the rank where a request just ended,
// so each of the D ranks receives arrivals at mu = B / (OSL D) per
// iteration, independently. A cycle ends at L = min(T, F), F the time for
// all D ranks to receive one: P(F > t) = 1 - (1 - e^{-mu t})^D. Arrivals
// fall uniformly in a cycle and wait for its end, E[L^2] / (2 E[L]) on
// average (renewal reward), plus Wb when the cycle ended on F < T.
double AttentionDpBalanceWaitIterations(const CostConstants& k, int requests,
                                        int dp) {
  const double t_max = k.attention_dp_balance_timeout_iterations;
  if (!(t_max > 0) || dp <= 1 || RankBatch(requests, dp) <= 1) return 0;
  const double mu = requests / (std::max(1.0, k.osl) * dp);
  // Midpoint rule over [0, min(T, t_fill)], t_fill the time by which every
  // rank has received one with probability 1 - 1e-9 (D e^{-mu t} = 1e-9):
  // past it the survival is nil, and the step stays a small part of 1 / mu.
  constexpr int kSteps = 256;
  const double span = std::min(t_max, std::log(dp * 1e9) / mu);
  const double dt = span / kSteps;
  double mean_l = 0, mean_l2 = 0;
  for (int i = 0; i < kSteps; ++i) {
    const double t = (i + 0.5) * dt;
    const double survive = 1 - std::pow(1 - std::exp(-mu * t), dp);
    mean_l += survive * dt;
    mean_l2 += 2 * t * survive * dt;
  }
  const double filled = std::pow(1 - std::exp(-mu * t_max), dp);
  return mean_l2 / (2 * mean_l) +
         filled * k.attention_dp_balance_batching_wait_iterations;
}

// Decode iterations a new request waits before SGLang's scheduler takes it,
// under --scheduler-recv-interval N (WorkloadDims::scheduler_recv_interval).
// Scheduler.recv_requests asks SchedulerRecvSkipper.handle, which adds the
// weight of the last batch's forward mode to a counter and takes requests
// only once it reaches N, then resets it (python/sglang/srt/managers/
// scheduler_recv_skipper.py, https://github.com/sgl-project/sglang/blob/
// 70310f051068e3ea8dbaaecd4e408919cd431417/python/sglang/srt/managers/
// scheduler_recv_skipper.py): a decode iteration or an idle pass weighs 1,
// any other batch (a prefill) 1,000 (SGLANG_SCHEDULER_RECV_SKIPPER_WEIGHT_*
// in python/sglang/srt/environ.py). While requests decode, new ones are
// taken every N decode iterations, and the one a prompt brings in is
// followed by a poll at once; a prompt arriving at a uniform time in the
// window waits N / 2 iterations on average. At batch 1 nothing decodes and
// the idle passes take no GPU time: no wait.
double SchedulerRecvWaitIterations(const CostConstants& k, double batch) {
  const double n = k.scheduler_recv_interval;
  if (!(n > 1) || batch <= 1) return 0;
  return n / 2;
}

// Prefills in flight that a new prompt waits for before its own
// (Calibration::ttft_inflight_prefills, fitted on runs whose scheduler takes
// a prompt at once, so it waits out a prefill running when it arrives).
// Under --scheduler-recv-interval N > 1 SGLang takes prompts only on a poll
// (SchedulerRecvSkipper.handle, scheduler_recv_skipper.py:26-38 at the
// commit above): every N decode iterations, and at once after any prefill
// batch (weight 1,000); the prompts a poll takes run as the next
// batch ("Run prefill first if possible", Scheduler.get_next_batch_to_run,
// python/sglang/srt/managers/scheduler.py), packed together (the queue
// term). So a prompt's wait before its prefill is the time to the next
// poll: a prefill running when it arrives ends that window (the poll right
// after it takes the prompt) and is part of that wait, not added to it.
// SchedulerRecvWaitIterations prices the wait for the poll.
double InflightPrefillWaits(const CostConstants& k) {
  return k.scheduler_recv_interval > 1 ? 0.0 : k.cal.ttft_inflight_prefills;
}

// Prompts that queue for their prefill do not run one after another: an
// engine that runs prefill batches apart from decode (SGLang) packs the
// waiting prompts into one forward pass up to its token budget
// (Calibration::prefill_batch_tokens). The slowest stage of a step of
// n = floor(budget / ISL) prompts, divided by n, is what one more prompt ahead
// in the queue costs: the per-layer launches and the weight reads (an MoE
// prompt of 1k tokens streams every expert for a few tokens each) are paid
// once per step, the FLOPs per prompt at the packed batch's efficiency. One
// prompt's own stage time when the budget holds one prompt (or none is set,
// or the prompts are already a disaggregated prefill batch).
double PackedPrefillShareSeconds(const CostConstants& k, const PlanState& s,
                                 int prefill_requests) {
  const double own = s.prefill_max_stage_seconds;
  const double n = k.packed_prefill_prompts;
  if (prefill_requests > 1 || n < 2) return own;
  const double T = k.isl * n;
  LayerPass pass;
  CostLayerPass(k, s.ctx, s.residuals, false, T, n, k.isl, &pass);
  double worst = 0;
  for (int st = 0; st < s.num_stages; ++st) {
    const StageLayers& sl = s.stages[st];
    double t = sl.dense * pass.dense->seconds + sl.moe * pass.moe->seconds +
               (sl.dense + sl.moe) * k.cal.layer_overhead_seconds;
    if (st == 0) t += pass.embed.seconds;
    if (st == s.num_stages - 1) t += pass.head.seconds;
    worst = std::max(worst, t);
  }
  // The stage boundary's send grows with the tokens: n prompts' worth.
  worst = std::max(worst, n * s.p2p_prefill_seconds);
  return std::min(own, worst / n);
}

}  // namespace

// SGLang sizes its chunked_prefill_size by the GPU's memory: 8,192 tokens
// below 160 GB (H100, H200), 16,384 above (B200)
// (ServerArgs._handle_gpu_memory_settings, python/sglang/srt/server_args.py).
constexpr double kLargeMemoryGpuBytes = 160.0 * 1024 * 1024 * 1024;

double PackedPrefillPrompts(const CostConstants& k) {
  if (!(k.cal.prefill_batch_tokens > 0) || !(k.isl > 0)) return 0;
  const double hbm_bytes = k.capacity_bytes / (1 - kMemoryReserveFraction);
  const double budget = k.cal.prefill_batch_tokens *
                        (hbm_bytes >= kLargeMemoryGpuBytes ? 2.0 : 1.0);
  return std::floor(budget / k.isl);
}

// `prefill_requests` requests of ISL tokens are prefilled together (1 in
// aggregated serving, the prefill batch of a disaggregated prefill instance).
void PreparePlan(const CostConstants& k, const PlanDims& plan, int num_gpus,
                 int prefill_requests, PlanState* s,
                 const PlanPlacement* replica_class, bool prefill_pool) {
  MakePlanCtxInto(k, plan, num_gpus, replica_class, &s->ctx);
  s->ctx.prefill_pool = prefill_pool;
  const PlanCtx& p = s->ctx;
  s->residuals = SteadyResiduals(k, p);
  s->num_stages = plan.pp;
  // Stage split.
  int start = 0;
  const int base = k.layers / plan.pp;
  const int rem = k.layers % plan.pp;
  for (int st = 0; st < plan.pp; ++st) {
    const int n = plan.num_stage_layers == plan.pp ? plan.stage_layers[st]
                                                   : base + (st < rem ? 1 : 0);
    const int dense = std::clamp(k.dense_layers - start, 0, n);
    s->stages[st] = {dense, n - dense};
    start += n;
  }
  // Prefill costs.
  const double R = std::max(1, prefill_requests);
  const double T = k.isl * R;
  // Written into the fresh state's zero results (no copies); a layer kind
  // the model lacks keeps its zero result.
  if (k.dense_layers > 0) {
    CostLayerInto(k, p, false, false, T, R, k.isl, s->residuals.dense, nullptr,
                  &s->pre_dense);
  }
  if (k.moe_layers > 0) {
    CostLayerInto(k, p, true, false, T, R, k.isl, s->residuals.moe, nullptr,
                  &s->pre_moe);
  }
  CostEmbeddingInto(k, p, false, T, R, k.isl, s->residuals.first,
                    &s->pre_embed);
  CostLmHeadInto(k, p, false, T, R, k.isl, s->residuals.last, &s->pre_head);
  Group p2p_group;
  p2p_group.n = 2;
  p2p_group.per_node = p.p2p_inter_node ? 1 : 2;
  s->p2p_prefill_seconds =
      plan.pp > 1 ? CollectiveSeconds(k, Collective::kPointToPoint,
                                      T * k.hidden * kActivationBytes / plan.tp,
                                      p2p_group, &s->p2p_prefill_traffic)
                  : 0;
  s->p2p_prefill_chain_seconds =
      P2pChainSeconds(k, p, plan.pp, T * k.hidden * kActivationBytes / plan.tp);
  double chain = 0, worst = 0;
  int worst_stage = 0;
  for (int st = 0; st < plan.pp; ++st) {
    const StageLayers& sl = s->stages[st];
    double t = sl.dense * s->pre_dense.seconds + sl.moe * s->pre_moe.seconds +
               (sl.dense + sl.moe) * k.cal.layer_overhead_seconds;
    if (st == 0) t += s->pre_embed.seconds;
    if (st == plan.pp - 1) t += s->pre_head.seconds;
    s->prefill_stage_seconds[st] = t;
    chain += t;
    if (t > worst) {
      worst = t;
      worst_stage = st;
    }
  }
  s->prefill_chain_seconds =
      chain + s->p2p_prefill_chain_seconds + k.cal.prefill_overhead_seconds;
  s->prefill_max_stage_seconds = std::max(worst, s->p2p_prefill_seconds);
  s->prefill_worst_stage = worst_stage;
  s->prefill_batched_share_seconds =
      PackedPrefillShareSeconds(k, *s, prefill_requests);

  // Weights per GPU per stage.
  const int n = plan.tp;
  const double inv_n = p.inv_tp;
  const ShardDim* d = plan.dims.data();
  auto dim = [&](OpKind op) { return d[static_cast<int>(op)]; };
  double qkv_rank;
  if (dim(OpKind::kQkv) == ShardDim::kColumn) {
    qkv_rank = p.qkv_column_weights;
  } else {
    qkv_rank =
        (k.w_q + k.w_kv + k.w_latent) * DimShare(dim(OpKind::kQkv), inv_n);
  }
  const double attn_rank =
      qkv_rank + k.w_attn_out * DimShare(dim(OpKind::kAttnOut), inv_n);
  const double dense_rank =
      attn_rank + k.w_mlp_up * DimShare(dim(OpKind::kMlpUp), inv_n) +
      k.w_mlp_down * DimShare(dim(OpKind::kMlpDown), inv_n);
  double moe_rank = 0;
  if (k.moe) {
    const double experts_rank = p.experts_rank + k.shared_experts;
    const double inv_tp_expert = 1.0 / p.tp_expert;
    moe_rank =
        attn_rank + k.w_router * DimShare(dim(OpKind::kRouter), inv_n) +
        experts_rank *
            (k.w_expert_up * DimShare(dim(OpKind::kExpertUp), inv_tp_expert) +
             k.w_expert_down *
                 DimShare(dim(OpKind::kExpertDown), inv_tp_expert));
  }
  const double emb_rank =
      k.w_embedding * DimShare(dim(OpKind::kEmbedding), inv_n);
  const double head_rank =
      k.w_embedding * DimShare(dim(OpKind::kLmHead), inv_n);
  for (int st = 0; st < plan.pp; ++st) {
    const StageLayers& sl = s->stages[st];
    double w = sl.dense * dense_rank + sl.moe * moe_rank;
    if (st == 0) w += emb_rank;
    if (st == plan.pp - 1 && !(k.tied && plan.pp == 1)) w += head_rank;
    s->weights_bytes[st] = w * k.weight_bytes;
  }
  s->kv_bytes_per_request_layer =
      k.ctx_max *
          (k.kv_per_token_layer * k.kv_bytes + k.index_bytes_per_token_layer) *
          AttentionKvShare(k, dim(OpKind::kAttention), p) +
      k.linear_state_bytes * DimShare(dim(OpKind::kAttention), inv_n);
  // Activation workspace: the prefill of one request's ISL tokens (hidden
  // states, QKV, the widest MLP activation) plus the decode logits.
  const double widest = std::max(k.dense_layers > 0 ? k.intermediate : 0.0,
                                 k.moe ? k.top_k * k.moe_intermediate : 0.0);
  s->activations_bytes =
      T * (4 * k.hidden + (k.qkv_out + 2 * widest) / n) * kActivationBytes;
}

namespace {

double KvBytesPerGpu(const CostConstants& k, const PlanState& s,
                     int stage_layers, int batch) {
  double requests = batch;
  if (s.ctx.dims[static_cast<int>(OpKind::kAttention)] == ShardDim::kBatch &&
      s.ctx.tp > 1) {
    requests = std::ceil(static_cast<double>(batch) / s.ctx.tp);
  }
  (void)k;
  return requests * stage_layers * s.kv_bytes_per_request_layer;
}

// One entry of a stage's operator breakdown: `times` x the costs of `layer`
// added to `out`. A stage's entries are added in turn (dense layers, MoE
// layers, embedding, LM head), so each operator's sum takes them in that
// order; an entry repeated 0 times adds nothing (its costs are finite), nor
// do the operators an entry does not charge (their costs are +0). `kOps`:
// the range `layer`'s kind of pass charges (its first_op..last_op), a
// constant, so the loop unrolls.
template <const OpRange& kOps>
inline void AddOps(const LayerResult& layer, double times,
                   std::array<OpCost, kNumOpKinds>* out) {
  if (times == 0) return;
  for (int i = static_cast<int>(kOps.first); i <= static_cast<int>(kOps.last);
       ++i) {
    OpCost& c = (*out)[i];
    c.compute_seconds += static_cast<float>(layer.compute[i] * times);
    c.memory_seconds += static_cast<float>(layer.memory[i] * times);
    c.comm_seconds += static_cast<float>(layer.comm[i] * times);
  }
}

}  // namespace

// `decode_only`: a decode instance of a disaggregated plan: no prefill work
// interleaves with its iterations and TTFT/SLOs are left to the caller.
Evaluation EvaluateState(const CostConstants& k, const PlanState& s,
                         int requests, bool decode_only) {
  Evaluation e;
  const PlanCtx& p = s.ctx;
  // The replica's requests spread over its attention dp ranks; the ranks
  // step together (the expert all-to-all), so the fullest rank sets the
  // iteration and the others run one request fewer.
  const int batch = RankBatch(requests, p.dp);
  e.batch_size = requests;
  e.running_batch = requests;
  e.batch_per_rank = batch;
  e.capacity_bytes = k.capacity_bytes;
  const int pp = s.num_stages;
  e.pipeline_stages = pp;

  // Memory: the worst stage.
  double worst_total = -1, max_weights = 0;
  int worst_mem_stage = 0;
  for (int st = 0; st < pp; ++st) {
    const int n = s.stages[st].dense + s.stages[st].moe;
    const double total =
        k.kv_room_fixed_share * (s.weights_bytes[st] + s.activations_bytes) +
        KvBytesPerGpu(k, s, n, batch);
    if (total > worst_total) {
      worst_total = total;
      worst_mem_stage = st;
    }
    max_weights = std::max(max_weights, s.weights_bytes[st]);
  }
  {
    const int n =
        s.stages[worst_mem_stage].dense + s.stages[worst_mem_stage].moe;
    e.weights_bytes = s.weights_bytes[worst_mem_stage];
    e.kv_cache_bytes = KvBytesPerGpu(k, s, n, batch);
    e.activations_bytes = s.activations_bytes;
    e.kv_room_bytes = std::max(
        0.0, k.capacity_bytes - k.kv_room_fixed_share *
                                    (e.weights_bytes + e.activations_bytes));
  }

  // Decode: m micro-batches of b requests each, pipelined over the stages.
  const double B = batch;
  const int m = std::max(1, std::min(p.micro_batches, batch));
  const double b = std::ceil(B / m);
  LayerPass pass;
  CostLayerPass(k, p, s.residuals, true, b, b, k.ctx_decode, &pass);
  const LayerResult& dense = *pass.dense;
  const LayerResult& moe = *pass.moe;
  const LayerResult& embed = pass.embed;
  const LayerResult& head = pass.head;
  Traffic p2p_traffic;
  double p2p_seconds = 0;
  if (pp > 1) {
    Group g;
    g.n = 2;
    g.per_node = p.p2p_inter_node ? 1 : 2;
    p2p_seconds = CollectiveSeconds(k, Collective::kPointToPoint,
                                    b * k.hidden * kActivationBytes / p.tp, g,
                                    &p2p_traffic);
  }
  // Prefills per decode iteration that interleave with the decode steps. The
  // rest of the prefill work happens in bursts while requests queue for their
  // first token (TTFT): the more requests arrive together
  // (prefill_queue_fraction -> 1), the less lands in TPOT. Requests of
  // random lengths fall out of step, and then each prefill stalls the
  // others' decoding whole (WorkloadDims::lengths_desynchronise).
  const double in_step = k.lengths_desynchronise
                             ? 0.0
                             : std::min(1.0, k.cal.prefill_queue_fraction);
  const double share =
      decode_only ? 0.0 : B / std::max(1.0, k.osl) * (1.0 - in_step);
  // Host work per micro-batch step in series with the GPU (see
  // Calibration::pipeline_request_overhead_seconds): each rank's scheduler
  // walks its B active requests once per micro-batch.
  const double host_seconds =
      pp > 1 ? k.cal.pipeline_request_overhead_seconds * B : 0.0;
  double max_work = 0, chain = 0;
  int slow = 0;
  for (int st = 0; st < pp; ++st) {
    const StageLayers& sl = s.stages[st];
    double t = sl.dense * dense.seconds + sl.moe * moe.seconds +
               (sl.dense + sl.moe) * k.cal.layer_overhead_seconds *
                   k.decode_layer_overhead_scale +
               host_seconds;
    if (st == 0) t += embed.seconds;
    if (st == pp - 1) t += head.seconds;
    const double work =
        std::max(m * t + share * s.prefill_stage_seconds[st],
                 m * p2p_seconds + share * s.p2p_prefill_seconds);
    if (work > max_work) {
      max_work = work;
      slow = st;
    }
    chain += t + share / m * s.prefill_stage_seconds[st];
  }
  chain += (pp > 1 ? P2pChainSeconds(k, p, pp,
                                     b * k.hidden * kActivationBytes / p.tp)
                   : 0) +
           share / m * s.p2p_prefill_chain_seconds;
  const double iteration =
      std::max(max_work, chain) + k.cal.decode_step_overhead_seconds;

  e.decode_iteration_seconds = iteration;
  e.tp_nodes = p.tp_nodes;
  e.ep_nodes = p.ep_nodes;
  e.replica_nodes = p.replica_nodes;
  e.pipeline_crosses_nodes = p.p2p_inter_node;
  e.tpot_seconds = iteration;
  e.prefill_seconds = s.prefill_chain_seconds;
  const double others = (B - 1) / B;  // 0 at batch 1: nobody to wait for
  e.ttft_seconds =
      s.prefill_chain_seconds +
      InflightPrefillWaits(k) * others * s.prefill_max_stage_seconds +
      k.cal.prefill_queue_fraction * (B - 1) * s.prefill_batched_share_seconds +
      k.cal.ttft_wait_iterations * iteration * others +
      (BatchWaitIterations(k, B) +
       AttentionDpBalanceWaitIterations(k, requests, p.dp) +
       SchedulerRecvWaitIterations(k, B)) *
          iteration;
  // Little's law: the replica's requests, not dp full ranks' worth.
  e.output_tokens_per_s =
      static_cast<double>(p.replicas) * requests / iteration;
  e.output_tokens_per_s_per_gpu = e.output_tokens_per_s / k.num_gpus;

  // Breakdown: the slowest stage's decode iteration and one request's worst
  // prefill stage.
  {
    const StageLayers& sl = s.stages[slow];
    AddOps<kDenseLayerOps>(dense, static_cast<double>(m) * sl.dense, &e.decode);
    AddOps<kMoeLayerOps>(moe, static_cast<double>(m) * sl.moe, &e.decode);
    if (slow == 0) AddOps<kEmbeddingOps>(embed, m, &e.decode);
    if (slow == pp - 1) AddOps<kLmHeadOps>(head, m, &e.decode);
    e.nvlink_decode_bytes =
        m * (sl.dense * dense.traffic.nv + sl.moe * moe.traffic.nv +
             (slow == 0 ? embed.traffic.nv : 0) +
             (slow == pp - 1 ? head.traffic.nv : 0) + p2p_traffic.nv);
    e.ib_decode_bytes =
        m * (sl.dense * dense.traffic.ib + sl.moe * moe.traffic.ib +
             (slow == 0 ? embed.traffic.ib : 0) +
             (slow == pp - 1 ? head.traffic.ib : 0) + p2p_traffic.ib);
    const int ps = s.prefill_worst_stage;
    const StageLayers& pl = s.stages[ps];
    AddOps<kDenseLayerOps>(s.pre_dense, pl.dense, &e.prefill);
    AddOps<kMoeLayerOps>(s.pre_moe, pl.moe, &e.prefill);
    if (ps == 0) AddOps<kEmbeddingOps>(s.pre_embed, 1.0, &e.prefill);
    if (ps == pp - 1) AddOps<kLmHeadOps>(s.pre_head, 1.0, &e.prefill);
    e.nvlink_prefill_bytes =
        pl.dense * s.pre_dense.traffic.nv + pl.moe * s.pre_moe.traffic.nv +
        (ps == 0 ? s.pre_embed.traffic.nv : 0) +
        (ps == pp - 1 ? s.pre_head.traffic.nv : 0) + s.p2p_prefill_traffic.nv;
    e.ib_prefill_bytes =
        pl.dense * s.pre_dense.traffic.ib + pl.moe * s.pre_moe.traffic.ib +
        (ps == 0 ? s.pre_embed.traffic.ib : 0) +
        (ps == pp - 1 ? s.pre_head.traffic.ib : 0) + s.p2p_prefill_traffic.ib;
  }
  double compute_seconds = 0, memory_seconds = 0, comm_seconds = 0,
         best_op_seconds = -1;
  auto visit = [&](int i) {
    const OpCost& c = e.decode[i];
    if (c.compute_seconds > c.memory_seconds) {
      compute_seconds += c.compute_seconds;
    } else {
      memory_seconds += c.memory_seconds;
    }
    comm_seconds += c.comm_seconds;
    const double op_seconds =
        std::max(c.compute_seconds, c.memory_seconds) + c.comm_seconds;
    if (op_seconds > best_op_seconds) {
      best_op_seconds = op_seconds;
      e.bottleneck_op = static_cast<OpKind>(i);
    }
  };
  // In operator order. A model without MoE layers charges no router or
  // expert operator: their entries are +0, which changes no sum, and once an
  // operator has been looked at (the embedding) neither the bottleneck, so
  // they are skipped.
  const int layer_ops_end =
      static_cast<int>(k.moe_layers > 0 ? OpKind::kLmHead : OpKind::kRouter);
  static_assert(static_cast<int>(OpKind::kLmHead) == kNumOpKinds - 1,
                "the LM head is the last operator");
  for (int i = 0; i < layer_ops_end; ++i) visit(i);
  visit(static_cast<int>(OpKind::kLmHead));
  if (chain > max_work * 1.000001 && pp > 1) {
    e.bottleneck = Bottleneck::kPipeline;
  } else if (comm_seconds >= compute_seconds &&
             comm_seconds >= memory_seconds) {
    e.bottleneck = Bottleneck::kCommunication;
  } else if (compute_seconds >= memory_seconds) {
    e.bottleneck = Bottleneck::kCompute;
  } else {
    e.bottleneck = Bottleneck::kMemory;
  }

  // Feasibility.
  e.feasible = true;
  if (max_weights > k.capacity_bytes) {
    e.feasible = false;
    e.reason = InfeasibleReason::kWeightsExceedMemory;
    e.reason_value = max_weights;
    e.reason_limit = k.capacity_bytes;
  } else if (worst_total > k.capacity_bytes) {
    e.feasible = false;
    e.reason = InfeasibleReason::kKvCacheExceedsMemory;
    e.reason_value = e.kv_cache_bytes;
    e.reason_limit = e.kv_room_bytes;
  }
  // A disaggregated plan's SLOs are checked on the whole plan.
  ApplySlos(decode_only ? 0 : k.max_ttft_seconds,
            decode_only ? 0 : k.max_tpot_seconds, &e);
  return e;
}

namespace {

// The largest batch whose KV cache fits every stage beside its weights and
// activations; 0 when not even one request fits.
int ResidentBatchLimit(const CostConstants& k, const PlanState& s) {
  // Batch-split attention spreads the requests over the tp ranks.
  const int spread =
      s.ctx.dims[static_cast<int>(OpKind::kAttention)] == ShardDim::kBatch
          ? std::max(1, s.ctx.tp)
          : 1;
  double limit = kMaxBatchSize;
  for (int st = 0; st < s.num_stages; ++st) {
    const double per_request =
        (s.stages[st].dense + s.stages[st].moe) * s.kv_bytes_per_request_layer;
    if (per_request <= 0) continue;
    const double room =
        k.capacity_bytes -
        k.kv_room_fixed_share * (s.weights_bytes[st] + s.activations_bytes);
    limit = std::min(limit, std::floor(room / per_request) * spread);
  }
  return static_cast<int>(std::max(0.0, limit));
}

// The workload's fixed concurrency C (per replica) needs more KV cache than
// fits: engines (vLLM, SGLang, TensorRT-LLM) admit the requests whose KV
// cache fits and queue the rest, each attention dp rank with its own share
// (ceil(C/dp) or one fewer) against its own memory. Throughput and TPOT are
// the running batch's. With C closed-loop clients and R of them running,
// each slot held for S = TTFT(R) + (OSL - 1) TPOT(R), requests complete at
// R / S, so by Little's law a request spends C·S/R in the system: it waits
// S·(C - R)/R in the queue before its prefill.
Evaluation EvaluateQueued(const CostConstants& k, const PlanState& s,
                          int concurrency) {
  // The resident limit first (a loop over the stages), so an overflowing plan
  // costs one evaluation, not two.
  const int dp = std::max(1, s.ctx.dp);
  const int share = RankBatch(concurrency, dp);
  const int limit = ResidentBatchLimit(k, s);
  if (limit >= share || limit < 1) {
    // Fits, or not even one request fits (infeasible with the reason).
    return EvaluateState(k, s, concurrency);
  }
  // Ranks holding the full share, and the others (one request fewer).
  const int full_ranks = concurrency - dp * (share - 1);
  const int running =
      full_ranks * limit + (dp - full_ranks) * std::min(share - 1, limit);
  Evaluation e = EvaluateState(k, s, running);
  if (e.reason == InfeasibleReason::kKvCacheExceedsMemory)
    return EvaluateState(k, s, concurrency);  // rounding at the limit
  const double slot_seconds =
      e.ttft_seconds + std::max(0.0, k.osl - 1) * e.tpot_seconds;
  e.batch_size = concurrency;
  e.batch_per_rank = share;
  e.queued_requests = concurrency - running;
  const double wait_seconds = slot_seconds * e.queued_requests / running;
  // Where the wait shows. An engine that admits a request only when its
  // reserved KV fits never evicts: the whole wait is before the first token.
  // An engine that admits a request once its prompt fits and preempts running
  // requests when the cache runs out (Calibration::preempts_on_kv_overflow:
  // vLLM, whose default RECOMPUTE mode recomputes them later,
  // https://docs.vllm.ai/en/v0.10.1.1/configuration/optimization.html,
  // "Preemption"): of the KV a running request holds (ctx_max), the prompt is
  // taken at admission and the rest while it decodes, so that share of the
  // wait moves behind the first token, into the per-request TPOT
  // ((E2E - TTFT) / (OSL - 1), as the benchmarks report it). Little's law
  // still fixes the total time in the system. Evidence: the two vLLM
  // Llama-3.1-70B rows that queue measure TTFT 30.8 s / 6.5 s and TPOT
  // 41.7 / 52.4 ms where a wait before the first token predicts 114 s / 18 s
  // with the running batch's 28.4 / 42.4 ms, while their end-to-end latency
  // (372 s / 60 s) is within 7% of Little's.
  const bool evicts = k.cal.preempts_on_kv_overflow && k.osl > 1;
  const double preempted_share =
      evicts && k.ctx_max > 0 ? std::max(0.0, k.ctx_max - k.isl) / k.ctx_max
                              : 0.0;
  e.queue_wait_seconds = wait_seconds * (1 - preempted_share);
  e.preemption_wait_seconds = wait_seconds * preempted_share;
  e.ttft_seconds += e.queue_wait_seconds;
  if (evicts) e.tpot_seconds += e.preemption_wait_seconds / (k.osl - 1);
  ApplySlos(k.max_ttft_seconds, k.max_tpot_seconds,
            &e);  // the TTFT SLO now sees the wait
  return e;
}

}  // namespace

void ApplySlos(double max_ttft_seconds, double max_tpot_seconds,
               Evaluation* e) {
  if (e->feasible && max_ttft_seconds > 0 &&
      e->ttft_seconds > max_ttft_seconds) {
    e->feasible = false;
    e->reason = InfeasibleReason::kTtftSlo;
    e->reason_value = e->ttft_seconds;
    e->reason_limit = max_ttft_seconds;
  } else if (e->feasible && max_tpot_seconds > 0 &&
             e->tpot_seconds > max_tpot_seconds) {
    e->feasible = false;
    e->reason = InfeasibleReason::kTpotSlo;
    e->reason_value = e->tpot_seconds;
    e->reason_limit = max_tpot_seconds;
  }
  if (!e->feasible) {
    e->output_tokens_per_s = 0;
    e->output_tokens_per_s_per_gpu = 0;
  }
}

Evaluation EvaluateAggregated(const CostConstants& k, const PlanDims& plan,
                              int workload_concurrency) {
  // Replicas placed differently (node groups of different sizes, a partial
  // last node) are costed class by class: throughput adds up over the
  // replicas, latency is the slowest class's (memory is the same for all).
  std::vector<ReplicaClass> classes;
  if (k.replicas_may_differ) {
    classes = ReplicaClasses(plan, k.cluster, k.moe);
  }
  if (classes.size() <= 1) classes.clear();
  // One state on the stack in the common case (uniform nodes).
  PlanState state;
  std::vector<PlanState> class_states(classes.size());
  if (classes.empty()) PreparePlan(k, plan, k.num_gpus, 1, &state);
  for (size_t i = 0; i < classes.size(); ++i) {
    PreparePlan(k, plan, k.num_gpus, 1, &class_states[i],
                &classes[i].placement);
  }
  // Workload.concurrency and plan.batch_size are requests in flight per
  // replica (see the proto), spread over its attention dp ranks; the scan
  // below steps over the same per-replica loads. Requests beyond what the KV
  // cache holds queue; a batch the plan chooses itself (no fixed concurrency)
  // must fit.
  const int concurrency = std::min(kMaxRequestsInFlight, workload_concurrency);
  auto at = [&](int batch, bool queued) {
    auto one = [&](const PlanState& state) {
      return queued ? EvaluateQueued(k, state, batch)
                    : EvaluateState(k, state, batch);
    };
    if (classes.empty()) return one(state);
    Evaluation worst;
    double tokens_per_s = 0, ttft_seconds = 0;
    for (size_t i = 0; i < classes.size(); ++i) {
      Evaluation e = one(class_states[i]);
      if (!e.feasible) return e;
      tokens_per_s += e.output_tokens_per_s * classes[i].count /
                      std::max(1, classes[i].placement.replicas);
      ttft_seconds = std::max(ttft_seconds, e.ttft_seconds);
      if (i == 0 || e.tpot_seconds > worst.tpot_seconds) worst = std::move(e);
    }
    worst.ttft_seconds = ttft_seconds;
    worst.output_tokens_per_s = tokens_per_s;
    worst.output_tokens_per_s_per_gpu = tokens_per_s / k.num_gpus;
    return worst;
  };
  if (concurrency > 0 &&
      (plan.batch_size == 0 || plan.batch_size == concurrency)) {
    return at(concurrency, /*queued=*/true);
  }
  if (plan.batch_size > 0) return at(plan.batch_size, false);
  // Scan the candidates: memory and both SLOs only get worse with the batch, so
  // stop at the first batch that fails one of them.
  Evaluation best;
  bool have_best = false;
  Evaluation first;
  const int rank_dp =
      std::max(1, classes.empty() ? state.ctx.dp : class_states[0].ctx.dp);
  for (int b : ScanLoads()) {
    if (b > kMaxBatchSize * static_cast<int64_t>(rank_dp)) break;
    Evaluation e = at(b, false);
    if (!e.feasible) {
      if (!have_best) {
        if (b == 1) first = e;
        if (e.reason == InfeasibleReason::kWeightsExceedMemory) return e;
      }
      break;
    }
    if (!have_best || e.output_tokens_per_s > best.output_tokens_per_s) {
      best = e;
      have_best = true;
    }
  }
  if (have_best) return best;
  return first;
}

}  // namespace shardplan::simulator::internal

namespace shardplan::simulator {

const std::vector<int>& ScanLoads() {
  static const std::vector<int>* const kLoads = [] {
    auto* v = new std::vector<int>(BatchSizeCandidates());
    for (int64_t p = kMaxBatchSize; p * 2 <= kMaxRequestsInFlight; p *= 2) {
      v->push_back(static_cast<int>(p * 3 / 2));
      v->push_back(static_cast<int>(p * 2));
    }
    return v;
  }();
  return *kLoads;
}

const std::vector<int>& BatchSizeCandidates() {
  static const std::vector<int>* const kCandidates = [] {
    auto* v = new std::vector<int>{1, 2};
    for (int p = 4; p <= kMaxBatchSize; p *= 2) {
      v->push_back(p);
      if (p * 3 / 2 <= kMaxBatchSize && p >= 8) v->push_back(p * 3 / 2);
    }
    std::sort(v->begin(), v->end());
    return v;
  }();
  return *kCandidates;
}

}  // namespace shardplan::simulator
