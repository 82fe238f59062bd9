// The analytical H100 cost model (DESIGN.md, "The cost model").
//
// Structure. Create() turns the Problem into per-problem constants (weights per
// layer and operator, activation sizes, achievable rates). Evaluate() then
// costs a plan with closed forms: the layers of one kind (dense, MoE) are
// identical, so each kind is costed once per phase (decode, prefill) and
// multiplied by its count in every pipeline stage. No heap allocation, no
// strings, no per-layer loops in the hot path.
//
// Per operator: seconds = max(FLOPs / achievable FLOP/s, bytes / achievable HBM
// bytes/s), GEMM efficiency falling off for small token counts (eff = e * t /
// (t + t_half)), plus the collective that reshards its input, derived from ONE
// rule table (TransitionCollective) from the layouts the consecutive operators'
// sharding dims produce and consume.
//
// Layout conventions (see internal/cost_layers.h):
//  - column: Full -> FeatureSplit; row: FeatureSplit -> PartialSum; replicate:
//  Full -> Full;
//    batch and sequence: TokenSplit -> TokenSplit. Attention column splits
//    heads (FeatureSplit -> FeatureSplit). Attention sequence (context
//    parallel): decode takes the full queries and leaves per-rank partial
//    softmax results (a PartialSum over the heads' outputs, combined by the
//    next transition); prefill splits the sequence and ring-passes the KV
//    shards (an all-gather of the layer's KV).
//  - The residual stream between blocks is Full or TokenSplit. A block output
//  in PartialSum
//    or FeatureSplit is converted to the residual's layout (all-reduce /
//    all-gather, or reduce-scatter / all-to-all when the residual is
//    TokenSplit); a Full or TokenSplit output is added locally and the residual
//    becomes TokenSplit if either side is. Every layer is costed in the
//    residual layout it settles into (steady state).
//  - MoE layers: attention runs on dp x tp ranks; the dp*tp ranks of a stage
//  are one expert
//    domain: experts spread over `ep` ranks, each expert split tp_expert =
//    dp*tp/ep ways (expert_up/expert_down dims apply within tp_expert). Tokens
//    reach their experts by an all-to-all over ep (deduplicated per destination
//    group) and come back by another. Shared experts ride along as
//    always-active experts on every expert group.
//  - Rank order tp (innermost), pp, dp: a tp group of <= gpus_per_node stays in
//  a node.
//    Collectives use the ring formulas of DESIGN.md with a per-step latency; a
//    group that spans nodes is hierarchical (NVLink inside, InfiniBand across)
//    and never cheaper than the NVLink ring of the same size.
//
// Serving (continuous batching, per replica, batch B, OSL output tokens per
// request):
//   iteration = max over stages of (m * t_stage(B/m) + (B/OSL) * prefill_stage)
//   (pipelined; with pp > 1 t_stage includes the host's walk over the B
//   active requests, pipeline_request_overhead_seconds * B, per micro-batch),
//               at least the micro-batch's trip through all stages, + step
//               overhead;
//   TPOT = iteration; throughput = dp * B / iteration;
//   TTFT = prefill of one request through all stages + queueing behind
//          ttft_inflight_prefills * (B - 1) / B + prefill_queue_fraction *
//          (B - 1) other prefills + ttft_wait_iterations decode iterations.
// Memory per GPU: weight shard of the worst stage + KV cache for B contexts of
// ISL+OSL tokens
// + activation workspace, against (1 - kMemoryReserveFraction) of HBM.
#include "simulator/cost_model.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "simulator/calibration.h"
#include "simulator/disaggregated.h"
#include "simulator/internal/cost_layers.h"
#include "simulator/internal/pool_costing.h"
#include "simulator/placement.h"
#include "simulator/status_macros.h"

namespace shardplan::simulator {

// Fraction of HBM kept free for the CUDA context, NCCL and cuBLAS workspaces
// and allocator fragmentation (serving engines default to using ~90% of device
// memory).
inline constexpr double kMemoryReserveFraction = 0.10;
// Activations are exchanged in bf16 whatever the weight dtype.
inline constexpr double kActivationBytes = 2.0;

namespace internal {

struct CostConstants {
  // Model.
  double hidden = 0, heads = 0, kv_heads = 0, vocab = 0, intermediate = 0;
  double experts = 0, top_k = 0, moe_intermediate = 0, shared_experts = 0;
  int layers = 0, dense_layers = 0, moe_layers = 0;
  bool moe = false, mla = false, tied = false;
  // Weights per layer, in elements.
  // query projection (split by heads under column, by input under row)
  double w_q = 0;
  // GQA K and V projections (replicate when tp > kv_heads, column)
  double w_kv = 0;
  double w_latent = 0;  // MLA down-projections (replicated under column)
  double w_attn_out = 0, w_mlp_up = 0, w_mlp_down = 0, w_router = 0;
  double w_expert_up = 0, w_expert_down = 0;  // one expert
  double w_embedding = 0;                     // also the LM head
  // Activations per token, in elements.
  double qkv_out = 0, attn_out = 0;
  // KV cache elements per token per layer (all heads)
  double kv_per_token_layer = 0;
  double attn_decode_flops = 0;  // per query token per context token per layer
  // per request per (sequence length)^2 per layer
  double attn_prefill_flops = 0;
  // Dtypes.
  double weight_bytes = 2, kv_bytes = 2;
  // Achievable rates.
  double gemm_flops_per_s = 0, hbm_bytes_per_s = 0;
  // Attention math: prefill (flash attention, fitted attention_efficiency) and
  // decode (batched GEMV-like per head; when compute bound, e.g. MLA, it
  // reaches GEMM-class efficiency, so it uses gemm_efficiency).
  double attention_prefill_flops_per_s = 0, attention_decode_flops_per_s = 0;
  double nv_bytes_per_s = 0, ib_bytes_per_s = 0, nv_latency_seconds = 0,
         ib_latency_seconds = 0;
  // The link's datasheet bandwidth, for kernels costed from measurements.
  double ib_raw_bytes_per_s = 0;
  // Expert dispatch bytes per element (FP8 with FP8/FP4 weights, as DeepEP
  // and the engines dispatch; combine is always bf16).
  double dispatch_bytes = 2;
  // FP4 weights on hardware without FP4 tensor cores (Hopper): weight-only
  // dequantising kernels, costed as streaming this many bytes per weight
  // element instead of 0.5 (Calibration::fp4_dequant_bytes_per_weight).
  bool fp4_dequant = false;
  // Bytes per weight element a GEMM's time is charged for (weight_bytes, or
  // the dequantising kernels' equivalent).
  double weight_stream_bytes = 2;
  int gpus_per_node = 8, num_gpus = 1;
  ClusterDims cluster;
  double capacity_bytes = 0;
  // Workload.
  double isl = 0, osl = 0, ctx_decode = 0;
  double ctx_max = 0;  // KV tokens a running request holds (memory)
  double max_ttft_seconds = 0, max_tpot_seconds = 0;
  Calibration cal;
};

namespace {

struct Group {
  int n = 1;
  // members of the group inside one node (n: all inside one node)
  int per_node = 1;
};

struct Traffic {
  double nv = 0;
  double ib = 0;
};

// Plan-dependent constants shared by all phases of one evaluation.
struct PlanCtx {
  // replicas: independent copies of the model (dense: replicas * dp, see
  // simulator/placement.h); dp: attention data-parallel ranks of an MoE stage.
  int replicas = 1, dp = 1, tp = 1, pp = 1, ep = 1, tp_expert = 1;
  ShardDims dims{};
  Group tp_group, tp_expert_group, ep_group;
  int micro_batches = 1;
  bool p2p_inter_node = false;
  // Stage boundaries whose sends cross nodes (the others ride NVLink).
  int p2p_ib_boundaries = 0;
  // Nodes spanned (reported in the Evaluation).
  int tp_nodes = 1, ep_nodes = 1, replica_nodes = 1;
  // Expected distinct expert groups a token is sent to, divided by top_k (a
  // token routed to several experts of one group is sent there once).
  double dispatch_fanout = 1;
  // Routed-expert slots per expert-parallel rank: ceil(experts / ep). When ep
  // does not divide the experts, engines fill the spare slots with copies of
  // hot experts (EPLB's redundant experts: SGLang
  // --ep-num-redundant-experts, vLLM --num-redundant-experts), so every rank
  // holds and reads this many.
  double experts_rank = 0;
};

double ShareCeil(double tokens, int n) {
  if (n <= 1 || tokens <= 0) return 1.0;
  return std::ceil(tokens / n) / tokens;
}

// Seconds of collective `c` over `g`. `bytes` is the whole logical tensor for
// all-reduce, all-gather and reduce-scatter and the bytes each rank holds for
// all-to-all. Adds the bytes each GPU sends per link class to `t`.
double CollectiveSeconds(const CostConstants& k, Collective c, double bytes,
                         const Group& g, Traffic* t) {
  if (c == Collective::kNone || g.n <= 1 || bytes <= 0) return 0;
  const double n = g.n;
  const double gi = std::max(1, std::min(g.per_node, g.n));
  if (c == Collective::kPointToPoint) {
    if (g.per_node >= g.n) {
      t->nv += bytes;
      return bytes / k.nv_bytes_per_s + k.nv_latency_seconds;
    }
    t->ib += bytes;
    return bytes / k.ib_bytes_per_s + k.ib_latency_seconds;
  }
  if (c == Collective::kAllToAll) {
    const double intra =
        (n - 1) / n * bytes / k.nv_bytes_per_s + (n - 1) * k.nv_latency_seconds;
    const double nv_share = (gi - 1) / n * bytes;
    const double ib_share = (n - gi) / n * bytes;
    t->nv += nv_share;
    t->ib += ib_share;
    if (g.per_node >= g.n) return intra;
    const double spanning =
        nv_share / k.nv_bytes_per_s + ib_share / k.ib_bytes_per_s +
        (gi - 1) * k.nv_latency_seconds + (n - gi) * k.ib_latency_seconds;
    return std::max(spanning, intra);
  }
  const double f = c == Collective::kAllReduce ? 2.0 : 1.0;
  const double intra = f * (n - 1) / n * bytes / k.nv_bytes_per_s +
                       f * (n - 1) * k.nv_latency_seconds;
  if (g.per_node >= g.n) {
    t->nv += f * (n - 1) / n * bytes;
    return intra;
  }
  const double m = n / gi;  // nodes
  const double nv_bytes = f * (gi - 1) / gi * bytes;
  const double ib_bytes = f * (m - 1) / m * bytes / gi;
  t->nv += nv_bytes;
  t->ib += ib_bytes;
  const double hier =
      nv_bytes / k.nv_bytes_per_s + f * (gi - 1) * k.nv_latency_seconds +
      ib_bytes / k.ib_bytes_per_s + f * (m - 1) * k.ib_latency_seconds;
  return std::max(hier, intra);
}

// Expert dispatch/combine across nodes, measured: DeepEP's kernels on H800
// with one CX7 400 Gb/s NIC per GPU (the NIC of an H100 DGX/HGX node),
// https://github.com/deepseek-ai/DeepEP (README, "Performance"). Bandwidth per
// GPU in bytes/s by EP size (log2 8..256). Low-latency kernels (decode, 128
// tokens per rank, top-8, hidden 7168): every routed copy counted, local ones
// included. Normal kernels (prefill, 4096 tokens): RDMA bytes only.
constexpr std::array<double, 6> kLowLatencyDispatchBytesPerS = {
    98e9, 63e9, 48e9, 43e9, 39e9, 39e9};
constexpr std::array<double, 6> kLowLatencyCombineBytesPerS = {
    127e9, 74e9, 53e9, 46e9, 39e9, 40e9};
constexpr std::array<double, 6> kNormalRdmaBytesPerS = {43e9, 43e9, 58e9,
                                                        51e9, 51e9, 51e9};
// The NIC those tables were measured with (CX7, 400 Gb/s = 50 GB/s); other
// hardware scales them by its inter-node bandwidth.
constexpr double kDeepEpNicBytesPerS = 50e9;

// Table lookup, linear in log2(ep) between EP 8 and 256 (clamped).
double DeepEpBytesPerS(const std::array<double, 6>& table, int ep) {
  const double x = std::clamp(std::log2(std::max(ep, 1)) - 3.0, 0.0, 5.0);
  const int i = std::min(4, static_cast<int>(x));
  const double f = x - i;
  return table[i] * (1 - f) + table[i + 1] * f;
}

struct LayerResult {
  std::array<double, kNumOpKinds> compute{};
  std::array<double, kNumOpKinds> memory{};
  std::array<double, kNumOpKinds> comm{};
  Traffic traffic;
  double seconds = 0;  // sum over operators of max(compute, memory) + comm
  Layout residual = Layout::kFull;
};

// One pass of `tokens` tokens (of `requests` requests attending over `ctx`
// tokens each) through operators of a layer for one replica micro-batch.
class Pass {
 public:
  Pass(const CostConstants& k, const PlanCtx& p, bool decode, double tokens,
       double requests, double ctx, std::vector<CollectiveRecord>* records)
      : k_(k),
        p_(p),
        decode_(decode),
        tokens_(tokens),
        requests_(requests),
        ctx_(ctx),
        records_(records) {}

  LayerResult& result() { return r_; }

  // Reshards an activation of `elems` per token over `tokens` tokens for `op`'s
  // input.
  void Transition(OpKind op, Layout from, Layout to, bool matching,
                  double elems, double tokens, const Group& g) {
    const Collective c = TransitionCollective(from, to, matching);
    if (c == Collective::kNone || g.n <= 1) return;
    double bytes = tokens * elems * kActivationBytes;
    if (c == Collective::kAllToAll) bytes /= g.n;
    Comm(op, c, bytes, g);
  }

  void Comm(OpKind op, Collective c, double bytes, const Group& g) {
    if (g.n <= 1 || bytes <= 0) return;
    r_.comm[static_cast<int>(op)] +=
        CollectiveSeconds(k_, c, bytes, g, &r_.traffic);
    if (records_ != nullptr) records_->push_back({op, c, bytes, g.n});
  }

  // A GEMM-like operator: per-rank weights (elements) streamed from HBM, FLOPs,
  // the token count that sets the GEMM's efficiency, and activation bytes read
  // and written.
  void Gemm(OpKind op, double weights_rank, double flops_rank,
            double gemm_tokens, double act_bytes) {
    const double t = std::max(gemm_tokens, 1.0);
    const double eff = t / (t + k_.cal.gemm_half_efficiency_tokens);
    const int i = static_cast<int>(op);
    r_.compute[i] += flops_rank / (k_.gemm_flops_per_s * eff);
    r_.memory[i] += (weights_rank * k_.weight_stream_bytes + act_bytes) /
                    k_.hbm_bytes_per_s;
  }

  // Weights and FLOPs per rank of a dense GEMM with `w` weight elements, split
  // over `g` by `dim`, for `tokens` tokens (in elements `in_elems`, out
  // `out_elems` per token).
  void ShardedGemm(OpKind op, ShardDim dim, double w, double tokens,
                   double in_elems, double out_elems, int n) {
    double w_rank = w, t_rank = tokens, gemm_tokens = tokens;
    double in_rank = in_elems, out_rank = out_elems;
    switch (dim) {
      case ShardDim::kColumn:
        w_rank = w / n;
        out_rank = out_elems / n;
        break;
      case ShardDim::kRow:
        w_rank = w / n;
        in_rank = in_elems / n;
        break;
      case ShardDim::kReplicate:
        break;
      case ShardDim::kBatch:
      case ShardDim::kSequence:
        t_rank = tokens * ShareCeil(tokens, n);
        gemm_tokens = t_rank;
        break;
    }
    Gemm(op, w_rank, 2.0 * t_rank * w_rank, gemm_tokens,
         t_rank * (in_rank + out_rank) * kActivationBytes);
  }

  // Converts block output `x` (produced by `op`) back into the residual layout
  // `residual`.
  Layout Merge(OpKind op, Layout x, Layout residual) {
    if (x == Layout::kPartialSum || x == Layout::kFeatureSplit) {
      Transition(op, x, residual, false, k_.hidden, tokens_, p_.tp_group);
      return residual;
    }
    return (x == Layout::kTokenSplit || residual == Layout::kTokenSplit)
               ? Layout::kTokenSplit
               : Layout::kFull;
  }

  Layout Attention(Layout residual) {
    const int n = p_.tp;
    const ShardDim dq = p_.dims[static_cast<int>(OpKind::kQkv)];
    const ShardDim da = p_.dims[static_cast<int>(OpKind::kAttention)];
    const ShardDim dout = p_.dims[static_cast<int>(OpKind::kAttnOut)];
    const double T = tokens_;
    // QKV projections.
    const OpLayouts lq = OperatorLayouts(OpKind::kQkv, dq, decode_);
    Transition(OpKind::kQkv, residual, lq.in, false, k_.hidden, T, p_.tp_group);
    if (dq == ShardDim::kColumn) {
      const double kv_share =
          std::max(1.0 / n, 1.0 / std::max(1.0, k_.kv_heads));
      const double w_rank =
          k_.w_q / n + k_.w_kv * (k_.mla ? 1.0 / n : kv_share) + k_.w_latent;
      Gemm(OpKind::kQkv, w_rank, 2.0 * T * w_rank, T,
           T * (k_.hidden + k_.qkv_out / n) * kActivationBytes);
    } else {
      ShardedGemm(OpKind::kQkv, dq, k_.w_q + k_.w_kv + k_.w_latent, T,
                  k_.hidden, k_.qkv_out, n);
    }
    // Attention core.
    const OpLayouts la = OperatorLayouts(OpKind::kAttention, da, decode_);
    Transition(OpKind::kAttention, lq.out, la.in,
               dq == ShardDim::kColumn && da == ShardDim::kColumn, k_.qkv_out,
               T, p_.tp_group);
    double flops = 0, kv_bytes = 0;
    if (decode_) {
      flops = T * ctx_ * k_.attn_decode_flops;
      kv_bytes = requests_ * ctx_ * k_.kv_per_token_layer * k_.kv_bytes;
    } else {
      // Each request attends over its own ISL tokens (ctx_): the quadratic
      // term is per request, not over the pass's T = requests x ISL tokens.
      flops = requests_ * ctx_ * ctx_ * k_.attn_prefill_flops;
      kv_bytes = T * k_.kv_per_token_layer * k_.kv_bytes;
    }
    double flop_share = 1, kv_share = 1;
    switch (da) {
      case ShardDim::kColumn:
      case ShardDim::kRow:  // invalid for attention (ValidatePlan); costed like
                            // column
        flop_share = 1.0 / n;
        kv_share =
            k_.mla ? 1.0 : std::max(1.0 / n, 1.0 / std::max(1.0, k_.kv_heads));
        break;
      case ShardDim::kReplicate:
        break;
      case ShardDim::kBatch:
        flop_share = kv_share = ShareCeil(requests_, n);
        break;
      case ShardDim::kSequence:
        flop_share = kv_share = 1.0 / n;
        if (!decode_) {
          // Ring pass of the KV shards (context parallel prefill).
          Comm(OpKind::kAttention, Collective::kAllGather,
               T * k_.kv_per_token_layer * k_.kv_bytes, p_.tp_group);
        }
        break;
    }
    const int ia = static_cast<int>(OpKind::kAttention);
    r_.compute[ia] += flops * flop_share /
                      (decode_ ? k_.attention_decode_flops_per_s
                               : k_.attention_prefill_flops_per_s);
    r_.memory[ia] +=
        (kv_bytes * kv_share +
         T * flop_share * (k_.qkv_out + k_.attn_out) * kActivationBytes) /
        k_.hbm_bytes_per_s;
    // Output projection.
    const OpLayouts lo = OperatorLayouts(OpKind::kAttnOut, dout, decode_);
    Transition(OpKind::kAttnOut, la.out, lo.in, dout == ShardDim::kRow,
               k_.attn_out, T, p_.tp_group);
    ShardedGemm(OpKind::kAttnOut, dout, k_.w_attn_out, T, k_.attn_out,
                k_.hidden, n);
    return Merge(OpKind::kAttnOut, lo.out, residual);
  }

  Layout DenseMlp(Layout residual) {
    const int n = p_.tp;
    const ShardDim du = p_.dims[static_cast<int>(OpKind::kMlpUp)];
    const ShardDim dd = p_.dims[static_cast<int>(OpKind::kMlpDown)];
    const double T = tokens_;
    const OpLayouts lu = OperatorLayouts(OpKind::kMlpUp, du, decode_);
    Transition(OpKind::kMlpUp, residual, lu.in, false, k_.hidden, T,
               p_.tp_group);
    ShardedGemm(OpKind::kMlpUp, du, k_.w_mlp_up, T, k_.hidden, k_.intermediate,
                n);
    const OpLayouts ld = OperatorLayouts(OpKind::kMlpDown, dd, decode_);
    Transition(OpKind::kMlpDown, lu.out, ld.in, dd == ShardDim::kRow,
               k_.intermediate, T, p_.tp_group);
    ShardedGemm(OpKind::kMlpDown, dd, k_.w_mlp_down, T, k_.intermediate,
                k_.hidden, n);
    return Merge(OpKind::kMlpDown, ld.out, residual);
  }

  Layout Moe(Layout residual) {
    const int n = p_.tp;
    const ShardDim dr = p_.dims[static_cast<int>(OpKind::kRouter)];
    const ShardDim du = p_.dims[static_cast<int>(OpKind::kExpertUp)];
    const ShardDim dd = p_.dims[static_cast<int>(OpKind::kExpertDown)];
    const double T = tokens_;
    // Router.
    const OpLayouts lr = OperatorLayouts(OpKind::kRouter, dr, decode_);
    Transition(OpKind::kRouter, residual, lr.in, false, k_.hidden, T,
               p_.tp_group);
    ShardedGemm(OpKind::kRouter, dr, k_.w_router, T, k_.hidden, k_.experts, n);
    Transition(OpKind::kRouter, lr.out, Layout::kTokenSplit, false, k_.experts,
               T, p_.tp_group);
    // Dispatch: each rank holds T/tp of its replica's tokens (a Full residual
    // is sliced locally) and sends each to the distinct expert groups it is
    // routed to.
    const double domain_tokens = p_.dp * T;
    // distinct destination groups per token
    const double dests = p_.dispatch_fanout * k_.top_k;
    ExpertAllToAll(OpKind::kExpertUp, T / n, /*combine=*/false);
    // Tokens at one expert group: token-expert pairs, distinct tokens,
    // shared-expert tokens.
    // The busiest expert group sets the pace. With tokens routed
    // independently, a group's load is ~Poisson(mean) and the largest of ep
    // such loads is ~mean + sqrt(2 mean ln ep): the least imbalance there is
    // without a balancer (real routers are more skewed; EPLB-style replication
    // of hot experts brings it back towards this).
    const double mean_pairs = domain_tokens * k_.top_k / p_.ep;
    const double imbalance =
        p_.ep > 1 ? 1.0 + std::sqrt(2.0 * std::log(static_cast<double>(p_.ep)) /
                                    std::max(1.0, mean_pairs))
                  : 1.0;
    const double pairs =
        std::min(mean_pairs * imbalance,
                 domain_tokens * std::min(k_.top_k, p_.experts_rank));
    const double unique =
        std::min(domain_tokens * dests / p_.ep * imbalance, domain_tokens);
    const double shared_tokens = domain_tokens / p_.ep;
    const double experts_rank = p_.experts_rank;
    const int ne = p_.tp_expert;
    // Fraction of this group's routed experts that receive at least one token
    // this step.
    const double touched =
        k_.experts > 0
            ? 1.0 - std::pow(1.0 - k_.top_k / k_.experts, domain_tokens)
            : 0;
    const double tokens_per_expert =
        domain_tokens * k_.top_k / std::max(1.0, k_.experts);
    const OpLayouts lu = OperatorLayouts(OpKind::kExpertUp, du, decode_);
    Transition(OpKind::kExpertUp, Layout::kTokenSplit, lu.in, false, k_.hidden,
               unique, p_.tp_expert_group);
    ExpertGemm(OpKind::kExpertUp, du, k_.w_expert_up, pairs, shared_tokens,
               experts_rank, touched, tokens_per_expert, ne, k_.hidden,
               k_.moe_intermediate);
    const OpLayouts ld = OperatorLayouts(OpKind::kExpertDown, dd, decode_);
    Transition(OpKind::kExpertDown, lu.out, ld.in, dd == ShardDim::kRow,
               k_.moe_intermediate, pairs + shared_tokens, p_.tp_expert_group);
    ExpertGemm(OpKind::kExpertDown, dd, k_.w_expert_down, pairs, shared_tokens,
               experts_rank, touched, tokens_per_expert, ne,
               k_.moe_intermediate, k_.hidden);
    // Outputs are summed per token locally, reduced within the expert group,
    // and combined back to the tokens' ranks by a second all-to-all.
    Transition(OpKind::kExpertDown, ld.out, Layout::kTokenSplit, false,
               k_.hidden, unique, p_.tp_expert_group);
    ExpertAllToAll(OpKind::kExpertDown, T / n, /*combine=*/true);
    return Merge(OpKind::kExpertDown, Layout::kTokenSplit, residual);
  }

  // Dispatch (or combine) of `tokens_rank` tokens per rank to their experts
  // over the EP group. Inside a node: the NVLink all-to-all of the ring
  // formulas, one copy per destination rank. Across nodes: DeepEP's measured
  // bandwidths (see kLowLatencyDispatchBytesPerS) plus one inter-node latency;
  // decode uses the low-latency kernels (one copy per routed expert), prefill
  // the normal ones (one copy per destination rank over RDMA, NVLink
  // forwarding in parallel).
  void ExpertAllToAll(OpKind op, double tokens_rank, bool combine) {
    const Group& g = p_.ep_group;
    if (g.n <= 1 || tokens_rank <= 0) return;
    const double elem = combine ? kActivationBytes : k_.dispatch_bytes;
    const double deduped =
        tokens_rank * p_.dispatch_fanout * k_.top_k * k_.hidden * elem;
    const int i = static_cast<int>(op);
    if (g.per_node >= g.n) {
      Comm(op, Collective::kAllToAll, deduped, g);
      return;
    }
    const double n = g.n;
    const double gi = std::max(1, std::min(g.per_node, g.n));
    const double nic_scale = k_.ib_raw_bytes_per_s / kDeepEpNicBytesPerS;
    double seconds = 0;
    if (decode_) {
      const double bytes = tokens_rank * k_.top_k * k_.hidden * elem;
      const double bw = DeepEpBytesPerS(combine ? kLowLatencyCombineBytesPerS
                                                : kLowLatencyDispatchBytesPerS,
                                        g.n) *
                        nic_scale;
      seconds = k_.ib_latency_seconds + bytes / bw;
      r_.traffic.nv += bytes * (gi - 1) / n;
      r_.traffic.ib += bytes * (n - gi) / n;
    } else {
      const double rdma = deduped * (n - gi) / n;
      const double nvl = deduped * (gi - 1) / n;
      seconds = k_.ib_latency_seconds +
                std::max(rdma / (DeepEpBytesPerS(kNormalRdmaBytesPerS, g.n) *
                                 nic_scale),
                         nvl / k_.nv_bytes_per_s);
      r_.traffic.nv += nvl;
      r_.traffic.ib += rdma;
    }
    r_.comm[i] += seconds;
    if (records_ != nullptr) {
      records_->push_back({op, Collective::kAllToAll, deduped, g.n});
    }
  }

  void ExpertGemm(OpKind op, ShardDim dim, double w_expert, double pairs,
                  double shared_tokens, double experts_rank, double touched,
                  double tokens_per_expert, int n, double in_elems,
                  double out_elems) {
    double w_div = 1, t_share = 1, gemm_tokens = tokens_per_expert;
    switch (dim) {
      case ShardDim::kColumn:
      case ShardDim::kRow:
        w_div = n;
        break;
      case ShardDim::kReplicate:
        break;
      case ShardDim::kBatch:
      case ShardDim::kSequence:
        t_share = ShareCeil(pairs, n);
        gemm_tokens = tokens_per_expert * t_share;
        break;
    }
    const double w_read =
        (touched * experts_rank + k_.shared_experts) * w_expert / w_div;
    const double flops = 2.0 * (pairs + shared_tokens * k_.shared_experts) *
                         t_share * w_expert / w_div;
    Gemm(op, w_read, flops, gemm_tokens,
         (pairs + shared_tokens) * t_share * (in_elems + out_elems) *
             kActivationBytes);
  }

  // Embedding lookup; its output converted to the residual layout `residual`.
  void Embedding(Layout residual) {
    const ShardDim de = p_.dims[static_cast<int>(OpKind::kEmbedding)];
    const int i = static_cast<int>(OpKind::kEmbedding);
    const double share = (de == ShardDim::kBatch || de == ShardDim::kSequence)
                             ? ShareCeil(tokens_, p_.tp)
                             : 1.0;
    r_.memory[i] +=
        tokens_ * share * k_.hidden * k_.weight_bytes / k_.hbm_bytes_per_s;
    Layout out = Layout::kFull;
    switch (de) {
      case ShardDim::kColumn:
        out = Layout::kFeatureSplit;
        break;
      case ShardDim::kRow:
        out = Layout::kPartialSum;
        break;
      case ShardDim::kReplicate:
        out = Layout::kFull;
        break;
      case ShardDim::kBatch:
      case ShardDim::kSequence:
        out = Layout::kTokenSplit;
        break;
    }
    Transition(OpKind::kEmbedding, out, residual, false, k_.hidden, tokens_,
               p_.tp_group);
  }

  // Final norm + LM head over the tokens that need logits; logits end Full or
  // TokenSplit.
  void LmHead(Layout residual) {
    const ShardDim dl = p_.dims[static_cast<int>(OpKind::kLmHead)];
    const double T = decode_ ? tokens_ : requests_;  // prefill: last token only
    const OpLayouts ll = OperatorLayouts(OpKind::kLmHead, dl, decode_);
    Transition(OpKind::kLmHead, residual, ll.in, false, k_.hidden, T,
               p_.tp_group);
    ShardedGemm(OpKind::kLmHead, dl, k_.w_embedding, T, k_.hidden, k_.vocab,
                p_.tp);
    if (ll.out == Layout::kFeatureSplit || ll.out == Layout::kPartialSum) {
      Transition(OpKind::kLmHead, ll.out, Layout::kFull, false, k_.vocab, T,
                 p_.tp_group);
    }
  }

  void Finish() {
    double s = 0;
    for (int i = 0; i < kNumOpKinds; ++i) {
      s += std::max(r_.compute[i], r_.memory[i]) + r_.comm[i];
    }
    r_.seconds = s;
  }

 private:
  const CostConstants& k_;
  const PlanCtx& p_;
  bool decode_;
  double tokens_, requests_, ctx_;
  std::vector<CollectiveRecord>* records_;
  LayerResult r_;
};

// Steady-state residual layouts for the dense and the MoE layers.
struct Residuals {
  Layout dense = Layout::kFull;
  Layout moe = Layout::kFull;
  // what the embedding produces for the first layer
  Layout first = Layout::kFull;
  Layout last = Layout::kFull;  // what the LM head receives
};

LayerResult CostLayer(const CostConstants& k, const PlanCtx& p, bool moe_layer,
                      bool decode, double tokens, double requests, double ctx,
                      Layout residual, std::vector<CollectiveRecord>* records) {
  Pass pass(k, p, decode, tokens, requests, ctx, records);
  Layout r = pass.Attention(residual);
  r = moe_layer ? pass.Moe(r) : pass.DenseMlp(r);
  pass.result().residual = r;
  pass.Finish();
  return pass.result();
}

// Residual-stream merge rule (see Pass::Merge), on layouts only.
Layout MergeLayout(Layout x, Layout residual) {
  if (x == Layout::kPartialSum || x == Layout::kFeatureSplit) return residual;
  return (x == Layout::kTokenSplit || residual == Layout::kTokenSplit)
             ? Layout::kTokenSplit
             : Layout::kFull;
}

// The residual layout each layer kind settles into, derived from the dims alone
// (the same rules Pass applies): a dense layer merges attn_out's and mlp_down's
// outputs; an MoE layer's combine returns tokens split, so its residual is
// TokenSplit.
Residuals SteadyResiduals(const CostConstants& k, const PlanCtx& p) {
  auto out_of = [&](OpKind op) {
    return OperatorLayouts(op, p.dims[static_cast<int>(op)], true).out;
  };
  auto dense_out = [&](Layout in) {
    return MergeLayout(out_of(OpKind::kMlpDown),
                       MergeLayout(out_of(OpKind::kAttnOut), in));
  };
  Residuals res;
  if (k.dense_layers > 0) {
    Layout r = dense_out(Layout::kFull);
    if (r != Layout::kFull) r = dense_out(r);
    res.dense = r;
    res.first = r;
    res.last = r;
  }
  if (k.moe_layers > 0) {
    res.moe = Layout::kTokenSplit;
    if (k.dense_layers == 0) res.first = res.moe;
    res.last = res.moe;
  }
  return res;
}

Group ToGroup(const GroupShape& shape) {
  Group g;
  g.n = shape.n;
  g.per_node = std::min(shape.per_node, shape.n);
  return g;
}

// `num_gpus`: the GPUs the plan is placed on (the cluster's, or one instance's
// for a pool of a disaggregated plan, placed from a node boundary).
// `replica_class`: the shapes of some of the replicas (ReplicaClasses), or of
// some pool instances (InstanceClasses), or null for the worst of all.
PlanCtx MakePlanCtx(const CostConstants& k, const PlanDims& plan, int num_gpus,
                    const PlanPlacement* replica_class = nullptr) {
  PlanCtx p;
  // The whole cluster as it is (node sizes included), or a pool of a
  // disaggregated plan on uniform nodes (no heap: names and node groups stay
  // empty).
  ClusterDims pool;
  const ClusterDims* placed = &k.cluster;
  if (num_gpus != k.cluster.num_gpus) {
    pool.num_gpus = num_gpus;
    pool.gpus_per_node = k.cluster.gpus_per_node;
    placed = &pool;
  }
  const PlanPlacement place = replica_class != nullptr
                                  ? *replica_class
                                  : PlacePlan(plan, *placed, k.moe);
  p.replicas = place.replicas;
  p.dp = place.dp;
  p.tp = plan.tp;
  p.pp = plan.pp;
  p.ep = k.moe ? plan.ep : 1;
  p.dims = plan.dims;
  p.micro_batches = plan.micro_batches > 0 ? plan.micro_batches : plan.pp;
  p.tp_group = ToGroup(place.tp);
  // Expert domain: the dp*tp ranks of one stage of one replica, contiguous.
  const int domain = place.stage_size;
  p.tp_expert = std::max(1, domain / std::max(1, p.ep));
  // Expert tp groups are consecutive domain members; an EP group takes one
  // rank of each, so it has 1/tp_expert of the domain's members in each node.
  p.tp_expert_group = ToGroup(place.expert_tp);
  p.ep_group.n = p.ep;
  p.ep_group.per_node =
      place.domain.spans_nodes()
          ? std::max(1, std::min(p.ep, place.domain.per_node / p.tp_expert))
          : p.ep;
  p.p2p_inter_node = place.p2p_inter_node;
  p.p2p_ib_boundaries =
      p.p2p_inter_node
          ? std::clamp(place.p2p_inter_node_boundaries, 1, plan.pp - 1)
          : 0;
  p.tp_nodes = place.tp.nodes;
  p.ep_nodes = p.ep > 1 ? place.domain.nodes : 1;
  p.replica_nodes = place.replica.nodes;
  p.experts_rank = std::ceil(k.experts / std::max(1, p.ep));
  if (k.moe && k.experts > 0 && p.ep > 1) {
    p.dispatch_fanout =
        p.ep * (1.0 - std::pow(1.0 - 1.0 / p.ep, k.top_k)) / k.top_k;
  } else {
    // ep == 1: every token goes to one group
    p.dispatch_fanout = 1.0 / std::max(1.0, k.top_k);
  }
  return p;
}

// Per-stage layer counts.
struct StageLayers {
  int dense = 0;
  int moe = 0;
};

// Plan state shared by every batch size: groups, residual layouts, prefill
// costs, weights.
struct PlanState {
  PlanCtx ctx;
  Residuals residuals;
  int num_stages = 1;
  std::array<StageLayers, kMaxPipelineStages> stages{};
  // Prefill of one request (ISL tokens).
  LayerResult pre_dense, pre_moe, pre_embed, pre_head;
  std::array<double, kMaxPipelineStages> prefill_stage_seconds{};
  double prefill_chain_seconds = 0;
  double prefill_max_stage_seconds = 0;
  int prefill_worst_stage = 0;
  double p2p_prefill_seconds = 0;        // the slowest stage boundary
  double p2p_prefill_chain_seconds = 0;  // all boundaries, each over its link
  Traffic p2p_prefill_traffic;
  // Memory per GPU per stage (weights) and per layer (KV for one request).
  std::array<double, kMaxPipelineStages> weights_bytes{};
  double kv_bytes_per_request_layer = 0;  // per rank, excluding the batch split
  double activations_bytes = 0;
};

double AttentionKvShare(const CostConstants& k, ShardDim da, int tp) {
  switch (da) {
    case ShardDim::kColumn:
    case ShardDim::kRow:
      return k.mla ? 1.0 : std::max(1.0 / tp, 1.0 / std::max(1.0, k.kv_heads));
    case ShardDim::kReplicate:
    case ShardDim::kBatch:  // handled per request count by the caller
      return 1.0;
    case ShardDim::kSequence:
      return 1.0 / tp;
  }
  return 1.0;
}

double DimShare(ShardDim d, int n) {
  return (d == ShardDim::kColumn || d == ShardDim::kRow) ? 1.0 / n : 1.0;
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

// `prefill_requests` requests of ISL tokens are prefilled together (1 in
// aggregated serving, the prefill batch of a disaggregated prefill instance).
void PreparePlan(const CostConstants& k, const PlanDims& plan, int num_gpus,
                 int prefill_requests, PlanState* s,
                 const PlanPlacement* replica_class = nullptr) {
  s->ctx = MakePlanCtx(k, plan, num_gpus, replica_class);
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
  s->pre_dense = k.dense_layers > 0 ? CostLayer(k, p, false, false, T, R, k.isl,
                                                s->residuals.dense, nullptr)
                                    : LayerResult{};
  s->pre_moe = k.moe_layers > 0 ? CostLayer(k, p, true, false, T, R, k.isl,
                                            s->residuals.moe, nullptr)
                                : LayerResult{};
  {
    Pass e(k, p, false, T, R, k.isl, nullptr);
    e.Embedding(s->residuals.first);
    e.Finish();
    s->pre_embed = e.result();
    Pass h(k, p, false, T, R, k.isl, nullptr);
    h.LmHead(s->residuals.last);
    h.Finish();
    s->pre_head = h.result();
  }
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

  // Weights per GPU per stage.
  const int n = plan.tp;
  const ShardDim* d = plan.dims.data();
  auto dim = [&](OpKind op) { return d[static_cast<int>(op)]; };
  double qkv_rank;
  if (dim(OpKind::kQkv) == ShardDim::kColumn) {
    const double kv_share = std::max(1.0 / n, 1.0 / std::max(1.0, k.kv_heads));
    qkv_rank = k.w_q / n + k.w_kv * (k.mla ? 1.0 / n : kv_share) + k.w_latent;
  } else {
    qkv_rank = (k.w_q + k.w_kv + k.w_latent) * DimShare(dim(OpKind::kQkv), n);
  }
  const double attn_rank =
      qkv_rank + k.w_attn_out * DimShare(dim(OpKind::kAttnOut), n);
  const double dense_rank = attn_rank +
                            k.w_mlp_up * DimShare(dim(OpKind::kMlpUp), n) +
                            k.w_mlp_down * DimShare(dim(OpKind::kMlpDown), n);
  double moe_rank = 0;
  if (k.moe) {
    const double experts_rank = p.experts_rank + k.shared_experts;
    moe_rank =
        attn_rank + k.w_router * DimShare(dim(OpKind::kRouter), n) +
        experts_rank *
            (k.w_expert_up * DimShare(dim(OpKind::kExpertUp), p.tp_expert) +
             k.w_expert_down * DimShare(dim(OpKind::kExpertDown), p.tp_expert));
  }
  const double emb_rank = k.w_embedding * DimShare(dim(OpKind::kEmbedding), n);
  const double head_rank = k.w_embedding * DimShare(dim(OpKind::kLmHead), n);
  for (int st = 0; st < plan.pp; ++st) {
    const StageLayers& sl = s->stages[st];
    double w = sl.dense * dense_rank + sl.moe * moe_rank;
    if (st == 0) w += emb_rank;
    if (st == plan.pp - 1 && !(k.tied && plan.pp == 1)) w += head_rank;
    s->weights_bytes[st] = w * k.weight_bytes;
  }
  s->kv_bytes_per_request_layer =
      k.ctx_max * k.kv_per_token_layer * k.kv_bytes *
      AttentionKvShare(k, dim(OpKind::kAttention), n);
  // Activation workspace: the prefill of one request's ISL tokens (hidden
  // states, QKV, the widest MLP activation) plus the decode logits.
  const double widest = std::max(k.dense_layers > 0 ? k.intermediate : 0.0,
                                 k.moe ? k.top_k * k.moe_intermediate : 0.0);
  s->activations_bytes =
      T * (4 * k.hidden + (k.qkv_out + 2 * widest) / n) * kActivationBytes;
}

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

void AddOps(const LayerResult& r, double times,
            std::array<OpCost, kNumOpKinds>* out) {
  for (int i = 0; i < kNumOpKinds; ++i) {
    (*out)[i].compute_seconds += static_cast<float>(r.compute[i] * times);
    (*out)[i].memory_seconds += static_cast<float>(r.memory[i] * times);
    (*out)[i].comm_seconds += static_cast<float>(r.comm[i] * times);
  }
}

// `decode_only`: a decode instance of a disaggregated plan: no prefill work
// interleaves with its iterations and TTFT/SLOs are left to the caller.
Evaluation EvaluateState(const CostConstants& k, const PlanState& s, int batch,
                         bool decode_only = false) {
  Evaluation e;
  e.batch_size = batch;
  e.running_batch = batch;
  e.capacity_bytes = k.capacity_bytes;
  const PlanCtx& p = s.ctx;
  const int pp = s.num_stages;
  e.pipeline_stages = pp;

  // Memory: the worst stage.
  double worst_total = -1, max_weights = 0;
  int worst_mem_stage = 0;
  for (int st = 0; st < pp; ++st) {
    const int n = s.stages[st].dense + s.stages[st].moe;
    const double total = s.weights_bytes[st] + KvBytesPerGpu(k, s, n, batch) +
                         s.activations_bytes;
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
  }

  // Decode: m micro-batches of b requests each, pipelined over the stages.
  const double B = batch;
  const int m = std::max(1, std::min(p.micro_batches, batch));
  const double b = std::ceil(B / m);
  const LayerResult dense =
      k.dense_layers > 0 ? CostLayer(k, p, false, true, b, b, k.ctx_decode,
                                     s.residuals.dense, nullptr)
                         : LayerResult{};
  const LayerResult moe = k.moe_layers > 0
                              ? CostLayer(k, p, true, true, b, b, k.ctx_decode,
                                          s.residuals.moe, nullptr)
                              : LayerResult{};
  LayerResult embed, head;
  {
    Pass pe(k, p, true, b, b, k.ctx_decode, nullptr);
    pe.Embedding(s.residuals.first);
    pe.Finish();
    embed = pe.result();
    Pass ph(k, p, true, b, b, k.ctx_decode, nullptr);
    ph.LmHead(s.residuals.last);
    ph.Finish();
    head = ph.result();
  }
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
  // (prefill_queue_fraction -> 1), the less lands in TPOT.
  const double share =
      decode_only ? 0.0
                  : B / std::max(1.0, k.osl) *
                        (1.0 - std::min(1.0, k.cal.prefill_queue_fraction));
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
               (sl.dense + sl.moe) * k.cal.layer_overhead_seconds +
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
  e.ttft_seconds = s.prefill_chain_seconds +
                   (k.cal.ttft_inflight_prefills * others +
                    k.cal.prefill_queue_fraction * (B - 1)) *
                       s.prefill_max_stage_seconds +
                   k.cal.ttft_wait_iterations * iteration * others;
  e.output_tokens_per_s = p.replicas * p.dp * B / iteration;
  e.output_tokens_per_s_per_gpu = e.output_tokens_per_s / k.num_gpus;

  // Breakdown: the slowest stage's decode iteration and one request's worst
  // prefill stage.
  {
    const StageLayers& sl = s.stages[slow];
    AddOps(dense, static_cast<double>(m) * sl.dense, &e.decode);
    AddOps(moe, static_cast<double>(m) * sl.moe, &e.decode);
    if (slow == 0) AddOps(embed, m, &e.decode);
    if (slow == pp - 1) AddOps(head, m, &e.decode);
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
    AddOps(s.pre_dense, pl.dense, &e.prefill);
    AddOps(s.pre_moe, pl.moe, &e.prefill);
    if (ps == 0) AddOps(s.pre_embed, 1, &e.prefill);
    if (ps == pp - 1) AddOps(s.pre_head, 1, &e.prefill);
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
  for (int i = 0; i < kNumOpKinds; ++i) {
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
  }
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
    e.reason_limit =
        std::max(0.0, k.capacity_bytes - e.weights_bytes - e.activations_bytes);
  }
  // A disaggregated plan's SLOs are checked on the whole plan.
  ApplySlos(decode_only ? 0 : k.max_ttft_seconds,
            decode_only ? 0 : k.max_tpot_seconds, &e);
  return e;
}

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
        k.capacity_bytes - s.weights_bytes[st] - s.activations_bytes;
    limit = std::min(limit, std::floor(room / per_request) * spread);
  }
  return static_cast<int>(std::max(0.0, limit));
}

// The workload's fixed concurrency C needs more KV cache than fits: engines
// (vLLM, SGLang, TensorRT-LLM) admit the R requests whose KV cache fits and
// queue the rest. Throughput and TPOT are the running batch's. With C
// closed-loop clients and R slots each held for S = TTFT(R) + (OSL - 1)
// TPOT(R), requests complete at R / S, so by Little's law a request spends
// C·S/R in the system: it waits S·(C - R)/R in the queue before its prefill.
Evaluation EvaluateQueued(const CostConstants& k, const PlanState& s,
                          int concurrency) {
  // The resident limit first (a loop over the stages), so an overflowing plan
  // costs one evaluation, not two.
  const int running = ResidentBatchLimit(k, s);
  if (running >= concurrency || running < 1) {
    // Fits, or not even one request fits (infeasible with the reason).
    return EvaluateState(k, s, concurrency);
  }
  Evaluation e = EvaluateState(k, s, running);
  if (e.reason == InfeasibleReason::kKvCacheExceedsMemory)
    return EvaluateState(k, s, concurrency);  // rounding at the limit
  const double slot_seconds =
      e.ttft_seconds + std::max(0.0, k.osl - 1) * e.tpot_seconds;
  e.batch_size = concurrency;
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

// The GEMM peak to use for a weight dtype. FP4 without FP4 tensor cores
// (Hopper) runs weight-only dequantising kernels: weights expanded to bf16 in
// registers, bf16 tensor-core math (vLLM's Marlin MXFP4/NVFP4 path).
double GemmPeak(const HardwareDims& hw, Dtype dtype) {
  const double peak = hw.peak_flops_per_s[static_cast<int>(dtype)];
  if (peak > 0) return peak;
  return hw.peak_flops_per_s[static_cast<int>(Dtype::kBf16)];
}

bool Positive(double x) { return std::isfinite(x) && x > 0; }

Collective TransitionCollective(Layout from, Layout to, bool matching_split) {
  switch (from) {
    case Layout::kFull:
      return Collective::kNone;  // every target is a local slice (or the tensor
                                 // itself)
    case Layout::kFeatureSplit:
      switch (to) {
        case Layout::kFeatureSplit:
          return matching_split ? Collective::kNone : Collective::kAllGather;
        case Layout::kFull:
          return Collective::kAllGather;
        case Layout::kTokenSplit:
          return Collective::kAllToAll;
        case Layout::kPartialSum:
          return Collective::kNone;  // a slice is a valid partial sum (zero
                                     // elsewhere)
      }
      break;
    case Layout::kPartialSum:
      switch (to) {
        case Layout::kFull:
          return Collective::kAllReduce;
        case Layout::kTokenSplit:
        case Layout::kFeatureSplit:
          return Collective::kReduceScatter;
        case Layout::kPartialSum:
          return Collective::kNone;
      }
      break;
    case Layout::kTokenSplit:
      switch (to) {
        case Layout::kFull:
          return Collective::kAllGather;
        case Layout::kFeatureSplit:
          return Collective::kAllToAll;
        case Layout::kTokenSplit:
          return Collective::kNone;
        case Layout::kPartialSum:
          return Collective::kAllGather;
      }
      break;
  }
  return Collective::kNone;
}

OpLayouts OperatorLayouts(OpKind op, ShardDim dim, bool decode) {
  switch (dim) {
    case ShardDim::kColumn:
      if (op == OpKind::kAttention)
        return {Layout::kFeatureSplit, Layout::kFeatureSplit};
      return {Layout::kFull, Layout::kFeatureSplit};
    case ShardDim::kRow:
      return {Layout::kFeatureSplit, Layout::kPartialSum};
    case ShardDim::kReplicate:
      return {Layout::kFull, Layout::kFull};
    case ShardDim::kBatch:
      return {Layout::kTokenSplit, Layout::kTokenSplit};
    case ShardDim::kSequence:
      if (op == OpKind::kAttention && decode)
        return {Layout::kFull, Layout::kPartialSum};
      return {Layout::kTokenSplit, Layout::kTokenSplit};
  }
  return {Layout::kFull, Layout::kFull};
}

std::vector<CollectiveRecord> CostModelInspector::LayerCollectives(
    const CostModel& model, const PlanDims& plan, bool moe_layer, bool decode,
    int tokens) {
  const CostConstants& k = *model.constants_;
  const PlanCtx p = MakePlanCtx(k, plan, k.num_gpus);
  const Residuals r = SteadyResiduals(k, p);
  std::vector<CollectiveRecord> records;
  const double t = tokens;
  CostLayer(k, p, moe_layer, decode, t, decode ? t : 1,
            decode ? k.ctx_decode : t, moe_layer ? r.moe : r.dense, &records);
  return records;
}

}  // namespace internal

// ----------------------------------------------------------------------------------------

const Calibration& DefaultCalibration() {
  static const Calibration* const kDefault = [] {
    Calibration* c = new Calibration(DefaultCalibrationProfile().calibration);
    // Engine-agnostic disaggregated plans get the per-request overhead fitted
    // to SGLang (TTFT 211 ms at concurrency 1 for a ~70 ms prefill), not the
    // ~6.8 s fitted to the TensorRT-LLM rows, which is a property of that
    // Dynamo 0.8.1 deployment (docs/cost-model-and-calibration.md); naming
    // the engine (workload.engine) applies its own value.
    c->disagg_request_overhead_seconds = kEngineAgnosticDisaggOverheadS;
    return c;
  }();
  return *kDefault;
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

CostModel::CostModel(Problem problem, const Calibration& calibration)
    : problem_(std::move(problem)), calibration_(calibration) {}

CostModel::~CostModel() = default;

double CostModel::capacity_bytes() const { return constants_->capacity_bytes; }

absl::StatusOr<std::unique_ptr<const CostModel>> CostModel::Create(
    Problem problem, const Calibration& calibration) {
  const ModelDims& m = problem.model;
  const ClusterDims& c = problem.cluster;
  const WorkloadDims& w = problem.workload;
  const HardwareDims& hw = c.hardware;
  // Defensive checks: spec.cc validates specs; the cost model must never divide
  // by zero.
  if (m.hidden <= 0 || m.layers <= 0 || m.heads <= 0 || m.kv_heads <= 0 ||
      m.head_dim <= 0 || m.vocab <= 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "model: hidden_size, num_layers, num_attention_heads, "
        "num_key_value_heads, head_dim "
        "and vocab_size must be > 0, got %d, %d, %d, %d, %d, %d",
        m.hidden, m.layers, m.heads, m.kv_heads, m.head_dim, m.vocab));
  }
  if (!m.is_moe() && m.intermediate <= 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "model.intermediate_size must be > 0 for a dense model, got %d",
        m.intermediate));
  }
  if (m.is_moe() &&
      (m.experts_per_token <= 0 || m.experts_per_token > m.experts ||
       m.moe_intermediate <= 0 || m.first_k_dense < 0 ||
       m.first_k_dense > m.layers ||
       (m.first_k_dense > 0 && m.intermediate <= 0))) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "model: MoE fields inconsistent (num_experts %d, experts_per_token %d, "
        "moe_intermediate_size %d, first_k_dense_layers %d, intermediate_size "
        "%d)",
        m.experts, m.experts_per_token, m.moe_intermediate, m.first_k_dense,
        m.intermediate));
  }
  if (c.num_gpus <= 0 || c.gpus_per_node <= 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "cluster.num_gpus and cluster.gpus_per_node must be > 0, got %d, %d",
        c.num_gpus, c.gpus_per_node));
  }
  if (!internal::Positive(hw.hbm_bytes) ||
      !internal::Positive(hw.hbm_bytes_per_s) ||
      !internal::Positive(hw.intra_node_bytes_per_s) ||
      !internal::Positive(hw.inter_node_bytes_per_s) ||
      !internal::Positive(
          hw.peak_flops_per_s[static_cast<int>(Dtype::kBf16)]) ||
      !(hw.intra_node_latency_seconds >= 0) ||
      !(hw.inter_node_latency_seconds >= 0)) {
    return absl::InvalidArgumentError(
        "cluster.hardware: peak bf16 FLOP/s, HBM bytes and bandwidth and link "
        "bandwidths "
        "must be finite and > 0, latencies >= 0");
  }
  if (w.input_tokens <= 0 || w.output_tokens <= 0 || w.concurrency < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("workload: input_tokens and output_tokens must be > 0 "
                        "and concurrency >= 0, got %d, "
                        "%d, %d",
                        w.input_tokens, w.output_tokens, w.concurrency));
  }
  const Calibration& cal = calibration;
  if (!internal::Positive(cal.gemm_efficiency) ||
      !internal::Positive(cal.hbm_efficiency) ||
      !internal::Positive(cal.attention_efficiency) ||
      !internal::Positive(cal.intra_node_efficiency) ||
      !internal::Positive(cal.inter_node_efficiency) ||
      !(cal.gemm_half_efficiency_tokens >= 0) ||
      !(cal.collective_latency_scale >= 0) ||
      !(cal.decode_step_overhead_seconds >= 0) ||
      !(cal.layer_overhead_seconds >= 0) ||
      !(cal.prefill_overhead_seconds >= 0) ||
      !(cal.prefill_queue_fraction >= 0) || !(cal.ttft_wait_iterations >= 0) ||
      !(cal.ttft_inflight_prefills >= 0) ||
      !(cal.disagg_request_overhead_seconds >= 0) ||
      !(cal.pipeline_request_overhead_seconds >= 0) ||
      !(cal.disagg_prefill_queue_fraction >= 0)) {
    return absl::InvalidArgumentError(
        "calibration: efficiencies must be > 0, overheads >= 0");
  }

  auto model = std::unique_ptr<CostModel>(
      new CostModel(std::move(problem), calibration));
  auto k = std::make_unique<internal::CostConstants>();
  const ModelDims& md = model->problem_.model;
  const double h = md.hidden;
  k->hidden = h;
  k->heads = md.heads;
  k->kv_heads = md.kv_heads;
  k->vocab = md.vocab;
  k->intermediate = md.intermediate;
  k->moe = md.is_moe();
  k->mla = md.is_mla();
  k->tied = md.tie_embeddings;
  k->layers = md.layers;
  k->dense_layers = md.dense_layers();
  k->moe_layers = md.moe_layers();
  if (k->moe) {
    k->experts = md.experts;
    k->top_k = md.experts_per_token;
    k->moe_intermediate = md.moe_intermediate;
    k->shared_experts = md.shared_experts;
  }
  const double nh = md.heads;
  if (k->mla) {
    const double qk = md.qk_nope_head_dim + md.qk_rope_head_dim;
    const double v = md.v_head_dim > 0 ? md.v_head_dim : md.head_dim;
    const double latent = md.kv_lora_rank + md.qk_rope_head_dim;
    if (md.q_lora_rank > 0) {
      k->w_q = md.q_lora_rank * nh * qk;
      k->w_latent = h * md.q_lora_rank + h * latent;
    } else {
      k->w_q = h * nh * qk;
      k->w_latent = h * latent;
    }
    // split by heads
    k->w_kv = md.kv_lora_rank * nh * (md.qk_nope_head_dim + v);
    k->w_attn_out = nh * v * h;
    k->qkv_out = nh * (2 * qk + v);
    k->attn_out = nh * v;
    k->kv_per_token_layer = latent;
    // Decode with absorbed projections: scores over the latent + rope, values
    // in the latent.
    k->attn_decode_flops = 2 * nh * (latent + md.kv_lora_rank);
    // causal: 2 * nh * (qk + v) * S^2 / 2
    k->attn_prefill_flops = nh * (qk + v);
  } else {
    const double hd = md.head_dim;
    k->w_q = h * nh * hd;
    k->w_kv = 2 * h * md.kv_heads * hd;
    k->w_attn_out = nh * hd * h;
    k->qkv_out = (nh + 2.0 * md.kv_heads) * hd;
    k->attn_out = nh * hd;
    k->kv_per_token_layer = 2.0 * md.kv_heads * hd;
    k->attn_decode_flops = 4 * nh * hd;
    k->attn_prefill_flops = 2 * nh * hd;  // causal: 4 * nh * hd * S^2 / 2
  }
  k->w_mlp_up = 2 * h * md.intermediate;
  k->w_mlp_down = h * md.intermediate;
  if (k->moe) {
    k->w_router = h * md.experts;
    k->w_expert_up = 2 * h * md.moe_intermediate;
    k->w_expert_down = h * md.moe_intermediate;
  }
  k->w_embedding = static_cast<double>(md.vocab) * h;
  const WorkloadDims& wd = model->problem_.workload;
  const HardwareDims& hd = model->problem_.cluster.hardware;
  k->weight_bytes = BytesPerElement(wd.weight_dtype);
  k->fp4_dequant = wd.weight_dtype == Dtype::kFp4 &&
                   !(hd.peak_flops_per_s[static_cast<int>(Dtype::kFp4)] > 0);
  k->weight_stream_bytes =
      k->fp4_dequant ? cal.fp4_dequant_bytes_per_weight : k->weight_bytes;
  k->dispatch_bytes = wd.weight_dtype == Dtype::kBf16 ? 2.0 : 1.0;
  k->kv_bytes = BytesPerElement(wd.kv_cache_dtype);
  k->gemm_flops_per_s =
      internal::GemmPeak(hd, wd.weight_dtype) * cal.gemm_efficiency;
  k->attention_prefill_flops_per_s =
      hd.peak_flops_per_s[static_cast<int>(Dtype::kBf16)] *
      cal.attention_efficiency;
  k->attention_decode_flops_per_s =
      hd.peak_flops_per_s[static_cast<int>(Dtype::kBf16)] * cal.gemm_efficiency;
  k->hbm_bytes_per_s = hd.hbm_bytes_per_s * cal.hbm_efficiency;
  k->nv_bytes_per_s = hd.intra_node_bytes_per_s * cal.intra_node_efficiency;
  k->ib_bytes_per_s = hd.inter_node_bytes_per_s * cal.inter_node_efficiency;
  k->nv_latency_seconds =
      hd.intra_node_latency_seconds * cal.collective_latency_scale;
  // The latency scale is fitted on single-node rows only: inter-node
  // collectives keep the link's own latency.
  k->ib_latency_seconds = hd.inter_node_latency_seconds;
  k->ib_raw_bytes_per_s = hd.inter_node_bytes_per_s;
  k->gpus_per_node = model->problem_.cluster.gpus_per_node;
  k->cluster = model->problem_.cluster;
  k->num_gpus = model->problem_.cluster.num_gpus;
  k->capacity_bytes = hd.hbm_bytes * (1 - kMemoryReserveFraction);
  k->isl = wd.input_tokens;
  k->osl = wd.output_tokens;
  k->ctx_decode = wd.input_tokens + wd.output_tokens / 2.0;
  k->ctx_max =
      wd.input_tokens +
      std::clamp(cal.kv_reserved_output_fraction, 0.0, 1.0) * wd.output_tokens;
  k->max_ttft_seconds = wd.max_ttft_seconds;
  k->max_tpot_seconds = wd.max_tpot_seconds;
  k->cal = cal;
  model->constants_ = std::move(k);
  return std::unique_ptr<const CostModel>(std::move(model));
}

absl::Status CostModel::ValidatePlan(const PlanDims& plan) const {
  if (plan.disaggregated) return ValidateDisaggregatedPlan(*this, plan);
  return ValidateLayout(plan, problem_.cluster.num_gpus);
}

absl::Status CostModel::ValidateLayout(const PlanDims& plan,
                                       int num_gpus) const {
  const ModelDims& m = problem_.model;
  auto positive = [](const char* field, int v) -> absl::Status {
    if (v >= 1) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrFormat("plan.%s must be >= 1, got %d", field, v));
  };
  RETURN_IF_ERROR(positive("replicas", plan.replicas));
  RETURN_IF_ERROR(positive("dp", plan.dp));
  RETURN_IF_ERROR(positive("tp", plan.tp));
  RETURN_IF_ERROR(positive("pp", plan.pp));
  RETURN_IF_ERROR(positive("ep", plan.ep));
  const int64_t product =
      static_cast<int64_t>(plan.replicas) * plan.dp * plan.tp * plan.pp;
  if (product != num_gpus) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "plan.replicas*dp*tp*pp must equal cluster.num_gpus (%d), got "
        "%d*%d*%d*%d = %d",
        num_gpus, plan.replicas, plan.dp, plan.tp, plan.pp, product));
  }
  if (plan.pp > m.layers || plan.pp > kMaxPipelineStages) {
    return absl::InvalidArgumentError(
        absl::StrFormat("plan.pp must be <= num_layers (%d) and <= %d, got %d",
                        m.layers, kMaxPipelineStages, plan.pp));
  }
  const int tp = plan.tp;
  auto dim = [&](OpKind op) { return plan.dims[static_cast<int>(op)]; };
  for (int i = 0; i < kNumOpKinds; ++i) {
    const int d = static_cast<int>(plan.dims[i]);
    if (d < 0 || d >= kNumShardDims) {
      return absl::InvalidArgumentError(
          absl::StrFormat("plan.operator_sharding.%s: unknown dim %d",
                          OpKindName(static_cast<OpKind>(i)), d));
    }
  }
  if (dim(OpKind::kAttention) == ShardDim::kRow) {
    return absl::InvalidArgumentError(
        "plan.operator_sharding.attention must not be row (attention has no "
        "input-feature "
        "split); use column, replicate, batch or sequence");
  }
  if (dim(OpKind::kRouter) == ShardDim::kRow) {
    return absl::InvalidArgumentError(
        "plan.operator_sharding.router must not be row; use column, replicate, "
        "batch or "
        "sequence");
  }
  const bool split_heads = dim(OpKind::kQkv) == ShardDim::kColumn ||
                           dim(OpKind::kQkv) == ShardDim::kRow ||
                           dim(OpKind::kAttention) == ShardDim::kColumn ||
                           dim(OpKind::kAttnOut) == ShardDim::kColumn ||
                           dim(OpKind::kAttnOut) == ShardDim::kRow;
  if (split_heads && tp > 1) {
    if (m.heads % tp != 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("plan.tp must divide num_attention_heads (%d) when "
                          "attention is split by heads, "
                          "got %d",
                          m.heads, tp));
    }
    if (!m.is_mla() && m.kv_heads % tp != 0 && tp % m.kv_heads != 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("plan.tp must divide or be a multiple of "
                          "num_key_value_heads (%d), got %d",
                          m.kv_heads, tp));
    }
  }
  if (m.dense_layers() > 0 && tp > 1) {
    for (OpKind op : {OpKind::kMlpUp, OpKind::kMlpDown}) {
      if ((dim(op) == ShardDim::kColumn || dim(op) == ShardDim::kRow) &&
          m.intermediate % tp != 0) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "plan.tp must divide intermediate_size (%d) for %s %s, got %d",
            m.intermediate, OpKindName(op), ShardDimName(dim(op)), tp));
      }
    }
  }
  if (dim(OpKind::kEmbedding) == ShardDim::kColumn && m.hidden % tp != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "plan.tp must divide hidden_size (%d) for embedding column, got %d",
        m.hidden, tp));
  }
  if (!m.is_moe()) {
    if (plan.ep != 1) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "plan.ep must be 1 for a dense model, got %d", plan.ep));
    }
  } else {
    // ep need not divide the experts: the spare slots of ceil(experts / ep)
    // per rank hold redundant copies (see PlanCtx::experts_rank), as in
    // DeepSeek's EP144 and SGLang's EP72 deployments of 256 experts.
    if (plan.ep > m.experts) {
      return absl::InvalidArgumentError(
          absl::StrFormat("plan.ep must be at most num_experts (%d), got %d",
                          m.experts, plan.ep));
    }
    const int domain = plan.dp * plan.tp;
    if (domain % plan.ep != 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("plan.ep must divide dp*tp (%d), the expert-parallel "
                          "domain of a stage, got %d",
                          domain, plan.ep));
    }
    const int tpe = domain / plan.ep;
    for (OpKind op : {OpKind::kExpertUp, OpKind::kExpertDown}) {
      if ((dim(op) == ShardDim::kColumn || dim(op) == ShardDim::kRow) &&
          m.moe_intermediate % tpe != 0) {
        return absl::InvalidArgumentError(
            absl::StrFormat("plan.ep: tp_expert = dp*tp/ep = %d must divide "
                            "moe_intermediate_size (%d) for "
                            "%s %s, got ep %d",
                            tpe, m.moe_intermediate, OpKindName(op),
                            ShardDimName(dim(op)), plan.ep));
      }
    }
  }
  if (plan.micro_batches < 0 || plan.micro_batches > kMaxBatchSize) {
    return absl::InvalidArgumentError(
        absl::StrFormat("plan.micro_batches must be in [0, %d], got %d",
                        kMaxBatchSize, plan.micro_batches));
  }
  if (plan.batch_size < 0 || plan.batch_size > kMaxBatchSize) {
    return absl::InvalidArgumentError(
        absl::StrFormat("plan.batch_size must be in [0, %d], got %d",
                        kMaxBatchSize, plan.batch_size));
  }
  if (plan.num_stage_layers != 0) {
    if (plan.num_stage_layers != plan.pp) {
      return absl::InvalidArgumentError(
          absl::StrFormat("plan.stage_layers must list pp (%d) stages, got %d",
                          plan.pp, plan.num_stage_layers));
    }
    int sum = 0;
    for (int i = 0; i < plan.pp; ++i) {
      if (plan.stage_layers[i] < 1) {
        return absl::InvalidArgumentError(
            absl::StrFormat("plan.stage_layers[%d] must be >= 1, got %d", i,
                            plan.stage_layers[i]));
      }
      sum += plan.stage_layers[i];
    }
    if (sum != m.layers) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "plan.stage_layers must sum to num_layers (%d), got %d", m.layers,
          sum));
    }
  }
  return absl::OkStatus();
}

Evaluation CostModel::Evaluate(const PlanDims& plan) const {
  const internal::CostConstants& k = *constants_;
  if (plan.disaggregated) return EvaluateDisaggregated(*this, plan);
  // Evaluate requires a plan that passed ValidatePlan; this cheap guard keeps a
  // caller's mistake from indexing out of bounds or dividing by zero (the
  // result is infeasible).
  bool evaluable =
      plan.replicas >= 1 && plan.dp >= 1 && plan.tp >= 1 && plan.pp >= 1 &&
      static_cast<int64_t>(plan.replicas) * plan.dp * plan.tp * plan.pp ==
          k.num_gpus &&
      plan.ep >= 1 && plan.pp <= kMaxPipelineStages && plan.pp <= k.layers &&
      plan.batch_size >= 0 && plan.batch_size <= kMaxBatchSize &&
      plan.micro_batches >= 0;
  for (int i = 0; evaluable && i < kNumOpKinds; ++i) {
    const int d = static_cast<int>(plan.dims[i]);
    evaluable = d >= 0 && d < kNumShardDims;
  }
  if (evaluable && plan.num_stage_layers != 0) {
    int sum = 0;
    evaluable = plan.num_stage_layers == plan.pp;
    for (int i = 0; evaluable && i < plan.pp; ++i) {
      evaluable = plan.stage_layers[i] >= 1;
      sum += plan.stage_layers[i];
    }
    evaluable = evaluable && sum == k.layers;
  }
  if (!evaluable) {
    Evaluation e;
    e.capacity_bytes = k.capacity_bytes;
    return e;  // feasible = false, reason kNone ("infeasible")
  }
  // Replicas placed differently (node groups of different sizes, a partial
  // last node) are costed class by class: throughput adds up over the
  // replicas, latency is the slowest class's (memory is the same for all).
  std::vector<ReplicaClass> classes;
  if (ReplicasMayDiffer(k.cluster)) {
    classes = ReplicaClasses(plan, k.cluster, k.moe);
  }
  if (classes.size() <= 1) classes.clear();
  // One state on the stack in the common case (uniform nodes).
  internal::PlanState state;
  std::vector<internal::PlanState> class_states(classes.size());
  if (classes.empty()) internal::PreparePlan(k, plan, k.num_gpus, 1, &state);
  for (size_t i = 0; i < classes.size(); ++i) {
    internal::PreparePlan(k, plan, k.num_gpus, 1, &class_states[i],
                          &classes[i].placement);
  }
  // Workload.concurrency is per replica (see the proto). Requests beyond what
  // the KV cache holds queue; a batch the plan chooses itself (no fixed
  // concurrency) must fit.
  const int concurrency =
      std::min(kMaxBatchSize, problem_.workload.concurrency);
  auto at = [&](int batch, bool queued) {
    auto one = [&](const internal::PlanState& state) {
      return queued ? internal::EvaluateQueued(k, state, batch)
                    : internal::EvaluateState(k, state, batch);
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
  for (int b : BatchSizeCandidates()) {
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

}  // namespace shardplan::simulator

namespace shardplan::simulator::internal {

absl::Status PoolCosting::ValidateInstance(const CostModel& model,
                                           const PlanDims& instance) {
  if (instance.replicas != 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "plan.replicas must be 1 in a pool instance (the pool's size is "
        "the instance count), got %d",
        instance.replicas));
  }
  return model.ValidateLayout(instance, instance.instance_gpus());
}

Evaluation PoolCosting::DecodeInstance(const CostModel& model,
                                       const PlanDims& instance, int batch,
                                       const PlanPlacement* placement) {
  const CostConstants& k = *model.constants_;
  PlanState state;
  PreparePlan(k, instance, instance.instance_gpus(), 1, &state, placement);
  return EvaluateState(k, state, batch, /*decode_only=*/true);
}

PrefillInstanceCost PoolCosting::PrefillInstance(
    const CostModel& model, const PlanDims& instance, int requests,
    const PlanPlacement* placement) {
  const CostConstants& k = *model.constants_;
  PlanState state;
  PreparePlan(k, instance, instance.instance_gpus(), requests, &state,
              placement);
  // Memory as a decode step of the same batch would hold it, the KV cache
  // scaled from ISL+OSL contexts to the ISL tokens a prefill leaves.
  const Evaluation e =
      EvaluateState(k, state, std::max(1, requests), /*decode_only=*/true);
  PrefillInstanceCost c;
  c.chain_seconds = state.prefill_chain_seconds;
  c.max_stage_seconds = state.prefill_max_stage_seconds;
  c.weights_bytes = e.weights_bytes;
  c.kv_cache_bytes = e.kv_cache_bytes * k.isl / std::max(1.0, k.ctx_max);
  c.activations_bytes = e.activations_bytes;
  c.fits = c.weights_bytes + c.kv_cache_bytes + c.activations_bytes <=
           k.capacity_bytes;
  c.tp_nodes = e.tp_nodes;
  c.ep_nodes = e.ep_nodes;
  c.replica_nodes = e.replica_nodes;
  return c;
}

double PoolCosting::KvBytesPerToken(const CostModel& model) {
  const CostConstants& k = *model.constants_;
  return k.kv_per_token_layer * k.layers * k.kv_bytes;
}

double PoolCosting::LinkBytesPerS(const CostModel& model, bool inter_node) {
  const CostConstants& k = *model.constants_;
  return inter_node ? k.ib_bytes_per_s : k.nv_bytes_per_s;
}

double PoolCosting::LinkLatencyS(const CostModel& model, bool inter_node) {
  const CostConstants& k = *model.constants_;
  return inter_node ? k.ib_latency_seconds : k.nv_latency_seconds;
}

}  // namespace shardplan::simulator::internal
