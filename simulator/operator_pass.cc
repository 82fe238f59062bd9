// The operator pass (see cost_model.cc for the layout conventions): per
// operator, seconds = max(FLOPs / achievable FLOP/s, bytes / achievable HBM
// bytes/s) plus the collective that reshards its input, derived from one rule
// table (TransitionCollective).
#include "simulator/internal/operator_pass.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "simulator/cost_model.h"
#include "simulator/internal/collectives.h"
#include "simulator/internal/cost_context.h"
#include "simulator/internal/cost_layers.h"
#include "simulator/placement.h"

namespace shardplan::simulator::internal {
namespace {

// The engine's expert parallelism with one attention dp rank
// (Calibration::expert_parallel_all_reduces_without_dp): the expert group is
// the tensor-parallel group, whose ranks all hold every token.
bool ExpertAllReducesOverTp(const CostConstants& k, const PlanCtx& p) {
  return k.expert_all_reduce_without_dp && p.attention_dp_group.n <= 1 &&
         p.ep > 1;
}

double ShareCeil(double tokens, int n) {
  if (n <= 1 || tokens <= 0) return 1.0;
  return std::ceil(tokens / n) / tokens;
}

// One pass of `tokens` tokens (of `requests` requests attending over `ctx`
// tokens each) through operators of a layer for one replica micro-batch.
class Pass {
 public:
  // Costs go to `*result` (the caller's return value: no copy).
  Pass(const CostConstants& k, const PlanCtx& p, bool decode, double tokens,
       double requests, double ctx, std::vector<CollectiveRecord>* records,
       LayerResult* result)
      : k_(k),
        p_(p),
        decode_(decode),
        tokens_(tokens),
        requests_(requests),
        ctx_(ctx),
        records_(records),
        r_(*result) {}

  // Reshards an activation of `elems` per token over `tokens` tokens for `op`'s
  // input. Most transitions move nothing (matching layouts or a group of
  // one): that test is inlined at every call.
  __attribute__((always_inline)) void Transition(OpKind op, Layout from,
                                                 Layout to, bool matching,
                                                 double elems, double tokens,
                                                 const Group& g) {
    const Collective c = TransitionCollective(from, to, matching);
    if (c == Collective::kNone || g.n <= 1) return;
    Reshard(op, c, elems, tokens, g);
  }

  void Reshard(OpKind op, Collective c, double elems, double tokens,
               const Group& g) {
    double bytes = tokens * elems * kActivationBytes;
    if (c == Collective::kAllToAll) bytes /= g.n;
    Comm(op, c, bytes, g);
  }

  void Comm(OpKind op, Collective c, double bytes, const Group& g) {
    if (g.n <= 1 || bytes <= 0) return;
    r_.comm[static_cast<int>(op)] +=
        c == Collective::kAllReduce
            ? TensorParallelAllReduceSeconds(k_, bytes, g, &r_.traffic)
            : CollectiveSeconds(k_, c, bytes, g, &r_.traffic);
    if (records_ != nullptr) records_->push_back({op, c, bytes, g.n});
  }

  // A GEMM-like operator: per-rank weights (elements) streamed from HBM, FLOPs,
  // the token count that sets the GEMM's efficiency, and activation bytes read
  // and written.
  void Gemm(OpKind op, double weights_rank, double flops_rank,
            double gemm_tokens, double act_bytes) {
    Gemm(op, weights_rank, flops_rank, gemm_tokens, act_bytes,
         k_.weight_stream_bytes);
  }
  // `stream_bytes`: bytes per weight element the weights cost to stream.
  void Gemm(OpKind op, double weights_rank, double flops_rank,
            double gemm_tokens, double act_bytes, double stream_bytes) {
    const double t = std::max(gemm_tokens, 1.0);
    const double eff = t / (t + k_.cal.gemm_half_efficiency_tokens);
    const int i = static_cast<int>(op);
    r_.compute[i] += flops_rank / (k_.gemm_flops_per_s * eff);
    r_.memory[i] +=
        (weights_rank * stream_bytes + act_bytes) / k_.hbm_bytes_per_s;
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

  // One operator run as a sharded GEMM over the tensor-parallel group: its
  // input moved from `from` to the layout it reads, then the GEMM.
  OpLayouts GemmOperator(OpKind op, ShardDim dim, Layout from, bool matching,
                         double w, double tokens, double in_elems,
                         double out_elems, int n) {
    const OpLayouts l = OperatorLayouts(op, dim, decode_);
    Transition(op, from, l.in, matching, in_elems, tokens, p_.tp_group);
    ShardedGemm(op, dim, w, tokens, in_elems, out_elems, n);
    return l;
  }

  // A block's output projection `op` (weights `w`, `in_elems` per token in,
  // the hidden size out) on its input in layout `from`, its output merged
  // back into the residual layout `residual`.
  Layout OutputProjection(OpKind op, Layout from, double w, double in_elems,
                          Layout residual) {
    const ShardDim dim = p_.dims[static_cast<int>(op)];
    const OpLayouts l = GemmOperator(op, dim, from, dim == ShardDim::kRow, w,
                                     tokens_, in_elems, k_.hidden, p_.tp);
    return Merge(op, l.out, residual);
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
    const double T = tokens_;
    // QKV projections.
    const OpLayouts lq = OperatorLayouts(OpKind::kQkv, dq, decode_);
    Transition(OpKind::kQkv, residual, lq.in, false, k_.hidden, T, p_.tp_group);
    if (dq == ShardDim::kColumn) {
      const double w_rank = p_.qkv_column_weights;
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
    // Linear-attention layers' state (hybrid models): decode reads and
    // writes it, prefill writes it once.
    double state_bytes = 0;
    const double topk = k_.attn_topk;
    if (decode_) {
      // Sparse attention reads the top-k cached tokens; its indexer scores
      // every one.
      const double read = topk > 0 ? std::min<double>(ctx_, topk) : ctx_;
      flops = T * (read * k_.attn_decode_flops + ctx_ * k_.index_flops +
                   k_.linear_decode_flops);
      kv_bytes = requests_ * (read * k_.kv_per_token_layer * k_.kv_bytes +
                              ctx_ * k_.index_bytes_per_token_layer);
      state_bytes = 2 * requests_ * k_.linear_state_bytes;
    } else {
      // Each request attends over its own ISL tokens (ctx_): the quadratic
      // term is per request, not over the pass's T = requests x ISL tokens.
      // With top-k selection a query attends to min(position, k) tokens.
      const double pairs =
          topk > 0 && ctx_ > topk ? 2 * topk * ctx_ - topk * topk : ctx_ * ctx_;
      flops = requests_ * (pairs * k_.attn_prefill_flops +
                           0.5 * ctx_ * ctx_ * k_.index_flops) +
              T * k_.linear_prefill_flops;
      kv_bytes = T * (k_.kv_per_token_layer * k_.kv_bytes +
                      k_.index_bytes_per_token_layer);
      state_bytes = requests_ * k_.linear_state_bytes;
    }
    double flop_share = 1, kv_share = 1;
    switch (da) {
      case ShardDim::kColumn:
      case ShardDim::kRow:  // invalid for attention (ValidatePlan); costed like
                            // column
        flop_share = p_.inv_tp;
        kv_share = k_.mla ? 1.0 : p_.kv_head_share;
        break;
      case ShardDim::kReplicate:
        break;
      case ShardDim::kBatch:
        flop_share = kv_share = ShareCeil(requests_, n);
        break;
      case ShardDim::kSequence:
        flop_share = kv_share = p_.inv_tp;
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
    // The state is split by heads (column) or requests (batch), whole
    // otherwise.
    const double state_share = da == ShardDim::kSequence ? 1.0 : flop_share;
    r_.memory[ia] +=
        (kv_bytes * kv_share + state_bytes * state_share +
         T * flop_share * (k_.qkv_out + k_.attn_out) * kActivationBytes) /
        k_.hbm_bytes_per_s;
    return OutputProjection(OpKind::kAttnOut, la.out, k_.w_attn_out,
                            k_.attn_out, residual);
  }

  Layout DenseMlp(Layout residual) {
    const OpLayouts lu = GemmOperator(
        OpKind::kMlpUp, p_.dims[static_cast<int>(OpKind::kMlpUp)], residual,
        false, k_.w_mlp_up, tokens_, k_.hidden, k_.intermediate, p_.tp);
    return OutputProjection(OpKind::kMlpDown, lu.out, k_.w_mlp_down,
                            k_.intermediate, residual);
  }

  Layout Moe(Layout residual) {
    const int n = p_.tp;
    const ShardDim dr = p_.dims[static_cast<int>(OpKind::kRouter)];
    const ShardDim du = p_.dims[static_cast<int>(OpKind::kExpertUp)];
    const ShardDim dd = p_.dims[static_cast<int>(OpKind::kExpertDown)];
    const double T = tokens_;
    // Router.
    const OpLayouts lr = GemmOperator(OpKind::kRouter, dr, residual, false,
                                      k_.w_router, T, k_.hidden, k_.experts, n);
    const bool all_reduce = AllReducesOverTp();
    // Without dispatch every rank reads all tokens and their routing.
    const Layout expert_in = all_reduce ? Layout::kFull : Layout::kTokenSplit;
    Transition(OpKind::kRouter, lr.out, expert_in, false, k_.experts, T,
               p_.tp_group);
    if (all_reduce) {
      Transition(OpKind::kExpertUp, residual, Layout::kFull, false, k_.hidden,
                 T, p_.tp_group);
    }
    // Dispatch: each rank holds T/tp of its replica's tokens (a Full residual
    // is sliced locally) and sends each to the distinct expert groups it is
    // routed to.
    const double domain_tokens = p_.dp * T;
    // distinct destination groups per token
    const double dests = p_.dispatch_fanout * k_.top_k;
    if (all_reduce) {
      // Nothing moves: each rank runs its experts on the tokens it holds.
    } else if (GathersOverDp()) {
      // All-gather of every dp rank's hidden states, top-k ids and weights.
      GatherScatter(OpKind::kExpertUp, Collective::kAllGather,
                    domain_tokens * (k_.hidden * kActivationBytes +
                                     k_.top_k * kTopkBytesPerExpert));
    } else {
      ExpertAllToAll(OpKind::kExpertUp, T / n, /*combine=*/false);
    }
    // Tokens at one expert group: token-expert pairs, distinct tokens,
    // shared-expert tokens.
    // The busiest expert group sets the pace. With tokens routed
    // independently, a group's load is ~Poisson(mean) and the largest of ep
    // such loads is ~mean + sqrt(2 mean ln ep): the least imbalance there is
    // without a balancer (real routers are more skewed; EPLB-style replication
    // of hot experts brings it back towards this).
    const double mean_pairs = domain_tokens * k_.top_k / p_.ep;
    const double imbalance = p_.ep > 1
                                 ? 1.0 + std::sqrt(2.0 * p_.ep_rates.log_ep /
                                                   std::max(1.0, mean_pairs))
                                 : 1.0;
    const double pairs =
        std::min(mean_pairs * imbalance,
                 domain_tokens * std::min(k_.top_k, p_.experts_rank));
    const double unique =
        std::min(domain_tokens * dests / p_.ep * imbalance, domain_tokens);
    const double shared_tokens = domain_tokens / p_.ep;
    const double experts_rank = p_.experts_rank;
    // Fraction of this group's routed experts that receive at least one token
    // this step.
    // (A prefill of one request per dp rank reads it from the table.)
    const bool at_isl = !decode_ && T == k_.isl &&
                        p_.dp < static_cast<int>(k_.untouched_at_isl.size());
    const double touched =
        k_.experts > 0
            ? 1.0 - (at_isl ? k_.untouched_at_isl[p_.dp]
                            : UntouchedExpertShare(k_, domain_tokens))
            : 0;
    const double tokens_per_expert =
        domain_tokens * k_.top_k / std::max(1.0, k_.experts);
    const ExpertLoad load{pairs, shared_tokens, experts_rank, touched,
                          tokens_per_expert};
    const OpLayouts lu =
        ExpertOperator(OpKind::kExpertUp, du, expert_in, false, unique,
                       k_.w_expert_up, load, k_.hidden, k_.moe_intermediate);
    const OpLayouts ld =
        ExpertOperator(OpKind::kExpertDown, dd, lu.out, dd == ShardDim::kRow,
                       pairs + shared_tokens, k_.w_expert_down, load,
                       k_.moe_intermediate, k_.hidden);
    // Without dispatch each rank holds its experts' share of every token's
    // output: one all-reduce over the group, as a dense MLP's down projection.
    if (all_reduce) {
      return Merge(OpKind::kExpertDown, Layout::kPartialSum, residual);
    }
    // Outputs are summed per token locally, reduced within the expert group,
    // and combined back to the tokens' ranks by a second all-to-all.
    Transition(OpKind::kExpertDown, ld.out, Layout::kTokenSplit, false,
               k_.hidden, unique, p_.tp_expert_group);
    if (GathersOverDp()) {
      GatherScatter(OpKind::kExpertDown, Collective::kReduceScatter,
                    domain_tokens * k_.hidden * kActivationBytes);
    } else {
      ExpertAllToAll(OpKind::kExpertDown, T / n, /*combine=*/true);
    }
    return Merge(OpKind::kExpertDown, Layout::kTokenSplit, residual);
  }

  // The engine's expert-parallel path without all-to-all kernels, under
  // attention dp (Calibration::expert_dispatch_gathers_over_dp): every rank
  // gathers the tokens of all attention dp ranks and runs its own experts on
  // them, then the outputs are reduce-scattered back. Where the launch
  // selects all-to-all kernels the all-to-all below prices them instead:
  // vLLM's across nodes (DeepEP over InfiniBand, FlashInfer's over the trays
  // of an NVLink domain: client/emit/vllm.cc), SGLang's when the experts are
  // not tensor-split (DeepEP takes the whole group: client/emit/sglang.cc).
  bool GathersOverDp() const {
    if (!k_.expert_dispatch_gathers || p_.attention_dp_group.n <= 1) {
      return false;
    }
    if (k_.expert_a2a_needs_whole_group) return p_.ep != p_.dp * p_.tp;
    return !p_.ep_crosses_nodes;
  }
  bool AllReducesOverTp() const { return ExpertAllReducesOverTp(k_, p_); }
  // Top-k expert id (int32) and weight (fp32) per routed expert.
  static constexpr double kTopkBytesPerExpert = 8;
  void GatherScatter(OpKind op, Collective c, double bytes) {
    const Group& g = p_.attention_dp_group;
    if (g.n <= 1 || bytes <= 0) return;
    r_.comm[static_cast<int>(op)] +=
        NcclGatherScatterSeconds(k_, c, bytes, g, &r_.traffic);
    if (records_ != nullptr) records_->push_back({op, c, bytes, g.n});
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
    // DeepEP's bandwidths at this ep, scaled to the NIC (p_.ep_rates).
    double seconds = 0;
    // An engine that launches one DeepEP mode per server runs an aggregated
    // server's prefill through the low-latency kernels too, in chunks.
    const bool low_latency =
        decode_ ||
        (k_.expert_a2a_low_latency_chunk_tokens > 0 && !p_.prefill_pool);
    if (low_latency) {
      const double bytes = tokens_rank * k_.top_k * k_.hidden * elem;
      const double bw = combine ? p_.ep_rates.low_latency_combine_bytes_per_s
                                : p_.ep_rates.low_latency_dispatch_bytes_per_s;
      const double chunks =
          decode_
              ? 1.0
              : std::ceil(tokens_rank / k_.expert_a2a_low_latency_chunk_tokens);
      seconds = chunks * k_.ib_latency_seconds + bytes / bw;
      r_.traffic.nv += bytes * (gi - 1) / n;
      r_.traffic.ib += bytes * (n - gi) / n;
    } else {
      const double rdma = deduped * (n - gi) / n;
      const double nvl = deduped * (gi - 1) / n;
      seconds = k_.ib_latency_seconds +
                std::max(rdma / p_.ep_rates.normal_rdma_bytes_per_s,
                         nvl / k_.nv_bytes_per_s);
      r_.traffic.nv += nvl;
      r_.traffic.ib += rdma;
    }
    r_.comm[i] += seconds;
    if (records_ != nullptr) {
      records_->push_back({op, Collective::kAllToAll, deduped, g.n});
    }
  }

  // What one expert group computes in a step (see Moe): token-expert pairs,
  // shared-expert tokens, routed experts per rank, the fraction of them any
  // token touches, and tokens per expert.
  struct ExpertLoad {
    double pairs, shared_tokens, experts_rank, touched, tokens_per_expert;
  };

  // One expert operator: its input moved from `from` (`transition_tokens`
  // tokens) to the layout it reads over the expert tp group, then its GEMM.
  OpLayouts ExpertOperator(OpKind op, ShardDim dim, Layout from, bool matching,
                           double transition_tokens, double w_expert,
                           const ExpertLoad& load, double in_elems,
                           double out_elems) {
    const OpLayouts l = OperatorLayouts(op, dim, decode_);
    Transition(op, from, l.in, matching, in_elems, transition_tokens,
               p_.tp_expert_group);
    ExpertGemm(op, dim, w_expert, load, p_.tp_expert, in_elems, out_elems);
    return l;
  }

  void ExpertGemm(OpKind op, ShardDim dim, double w_expert,
                  const ExpertLoad& load, int n, double in_elems,
                  double out_elems) {
    const double pairs = load.pairs, shared_tokens = load.shared_tokens;
    double w_div = 1, t_share = 1, gemm_tokens = load.tokens_per_expert;
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
        gemm_tokens = load.tokens_per_expert * t_share;
        break;
    }
    const double routed = load.touched * load.experts_rank;
    const double w_read = (routed + k_.shared_experts) * w_expert / w_div;
    // Routed experts run as a grouped GEMM, shared ones as a dense GEMM.
    const double stream_bytes =
        routed + k_.shared_experts > 0
            ? (routed * k_.expert_weight_stream_bytes +
               k_.shared_experts * k_.weight_stream_bytes) /
                  (routed + k_.shared_experts)
            : k_.weight_stream_bytes;
    const double flops = 2.0 * (pairs + shared_tokens * k_.shared_experts) *
                         t_share * w_expert / w_div;
    Gemm(op, w_read, flops, gemm_tokens,
         (pairs + shared_tokens) * t_share * (in_elems + out_elems) *
             kActivationBytes,
         stream_bytes);
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
    const OpLayouts ll =
        GemmOperator(OpKind::kLmHead, dl, residual, false, k_.w_embedding, T,
                     k_.hidden, k_.vocab, p_.tp);
    if (ll.out == Layout::kFeatureSplit || ll.out == Layout::kPartialSum) {
      Transition(OpKind::kLmHead, ll.out, Layout::kFull, false, k_.vocab, T,
                 p_.tp_group);
    }
  }

  // Sums the operators first..last (the ones this pass charges; the others
  // are zero) into the result's seconds.
  void Finish(const OpRange& ops) {
    r_.first_op = static_cast<int>(ops.first);
    r_.last_op = static_cast<int>(ops.last);
    double s = 0;
    for (int i = r_.first_op; i <= r_.last_op; ++i) {
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
  LayerResult& r_;
};

// Residual-stream merge rule (see Pass::Merge), on layouts only.
Layout MergeLayout(Layout x, Layout residual) {
  if (x == Layout::kPartialSum || x == Layout::kFeatureSplit) return residual;
  return (x == Layout::kTokenSplit || residual == Layout::kTokenSplit)
             ? Layout::kTokenSplit
             : Layout::kFull;
}

Group ToGroup(const GroupShape& shape) {
  Group g;
  g.n = shape.n;
  g.per_node = std::min(shape.per_node, shape.n);
  return g;
}

}  // namespace

// Flattened: the layer's operator steps (Attention, DenseMlp, Moe, the GEMMs
// and each transition's collective) are inlined into one function, so each
// call site's constants (the operator, the group, the collective a layout pair
// allows) fold into its collective's costing: 8% (llama-3.1-70b) and 12%
// (kimi-k2.5) fewer instructions per evaluation than separate calls. The
// embedding and LM-head passes gain nothing from it.
__attribute__((flatten)) const LayerResult& CostLayerInto(
    const CostConstants& k, const PlanCtx& p, bool moe_layer, bool decode,
    double tokens, double requests, double ctx, Layout residual,
    std::vector<CollectiveRecord>* records, LayerResult* result) {
  Pass pass(k, p, decode, tokens, requests, ctx, records, result);
  Layout r = pass.Attention(residual);
  r = moe_layer ? pass.Moe(r) : pass.DenseMlp(r);
  result->residual = r;
  pass.Finish(moe_layer ? kMoeLayerOps : kDenseLayerOps);
  return *result;
}

LayerResult CostLayer(const CostConstants& k, const PlanCtx& p, bool moe_layer,
                      bool decode, double tokens, double requests, double ctx,
                      Layout residual, std::vector<CollectiveRecord>* records) {
  LayerResult result;
  CostLayerInto(k, p, moe_layer, decode, tokens, requests, ctx, residual,
                records, &result);
  return result;
}

void CostEmbeddingInto(const CostConstants& k, const PlanCtx& p, bool decode,
                       double tokens, double requests, double ctx,
                       Layout residual, LayerResult* result) {
  Pass pass(k, p, decode, tokens, requests, ctx, nullptr, result);
  pass.Embedding(residual);
  pass.Finish(kEmbeddingOps);
}

void CostLmHeadInto(const CostConstants& k, const PlanCtx& p, bool decode,
                    double tokens, double requests, double ctx, Layout residual,
                    LayerResult* result) {
  Pass pass(k, p, decode, tokens, requests, ctx, nullptr, result);
  pass.LmHead(residual);
  pass.Finish(kLmHeadOps);
}

LayerResult CostEmbedding(const CostConstants& k, const PlanCtx& p, bool decode,
                          double tokens, double requests, double ctx,
                          Layout residual) {
  LayerResult result;
  CostEmbeddingInto(k, p, decode, tokens, requests, ctx, residual, &result);
  return result;
}

LayerResult CostLmHead(const CostConstants& k, const PlanCtx& p, bool decode,
                       double tokens, double requests, double ctx,
                       Layout residual) {
  LayerResult result;
  CostLmHeadInto(k, p, decode, tokens, requests, ctx, residual, &result);
  return result;
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
    // Tokens stay split after the experts' combine; an all-reduce instead
    // leaves every rank the whole residual, as a dense layer does.
    res.moe = ExpertAllReducesOverTp(k, p)
                  ? MergeLayout(out_of(OpKind::kAttnOut), Layout::kFull)
                  : Layout::kTokenSplit;
    if (k.dense_layers == 0) res.first = res.moe;
    res.last = res.moe;
  }
  return res;
}

PlanCtx MakePlanCtx(const CostConstants& k, const PlanDims& plan, int num_gpus,
                    const PlanPlacement* replica_class) {
  PlanCtx p;
  MakePlanCtxInto(k, plan, num_gpus, replica_class, &p);
  return p;
}

void MakePlanCtxInto(const CostConstants& k, const PlanDims& plan, int num_gpus,
                     const PlanPlacement* replica_class, PlanCtx* out) {
  PlanCtx& p = *out;
  p.prefill_pool = false;
  // The whole cluster as it is (node sizes included; its block shapes are
  // in the table), or a pool of a disaggregated plan on uniform nodes (no
  // heap: names and node groups stay empty).
  auto place_on_pool = [&] {
    ClusterDims pool;
    pool.num_gpus = num_gpus;
    pool.gpus_per_node = k.cluster.gpus_per_node;
    pool.nvlink_domain_gpus = k.cluster.nvlink_domain_gpus;
    return PlacePlan(plan, pool, k.moe);
  };
  const PlanPlacement place =
      replica_class != nullptr ? *replica_class
      : num_gpus != k.cluster.num_gpus
          ? place_on_pool()
          : PlacePlan(plan, k.cluster, k.moe, &k.block_shapes);
  p.replicas = place.replicas;
  p.dp = place.dp;
  p.tp = plan.tp;
  p.inv_tp = 1.0 / p.tp;
  p.kv_head_share = std::max(p.inv_tp, 1.0 / std::max(1.0, k.kv_heads));
  p.qkv_column_weights =
      k.w_q / p.tp + k.w_kv * (k.mla ? p.inv_tp : p.kv_head_share) + k.w_latent;
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
  p.dp_group.n = p.dp;
  p.dp_group.per_node =
      place.domain.spans_nodes()
          ? std::max(1, std::min(p.dp, place.domain.per_node / p.tp))
          : p.dp;
  const bool batch_attention =
      p.tp > 1 && p.dims[static_cast<int>(OpKind::kQkv)] == ShardDim::kBatch &&
      p.dims[static_cast<int>(OpKind::kAttention)] == ShardDim::kBatch &&
      p.dims[static_cast<int>(OpKind::kAttnOut)] == ShardDim::kBatch;
  if (batch_attention) {
    p.attention_dp_group.n = domain;
    p.attention_dp_group.per_node = place.domain.spans_nodes()
                                        ? std::max(1, place.domain.per_node)
                                        : domain;
  } else {
    p.attention_dp_group = p.dp_group;
  }
  // Trays of one NVLink domain: a stage bigger than a node, inside a link
  // domain that spans nodes (uniform nodes only).
  const ClusterDims& c = k.cluster;
  p.ep_crosses_nodes =
      place.domain.spans_nodes() ||
      (c.node_gpus.empty() && c.nvlink_domain_gpus > c.gpus_per_node &&
       domain > c.gpus_per_node);
  p.p2p_inter_node = place.p2p_inter_node;
  p.p2p_ib_boundaries =
      p.p2p_inter_node
          ? std::clamp(place.p2p_inter_node_boundaries, 1, plan.pp - 1)
          : 0;
  p.tp_nodes = place.tp.nodes;
  p.ep_nodes = p.ep > 1 ? place.domain.nodes : 1;
  p.replica_nodes = place.replica.nodes;
  // (No ceil without experts: a dense model's zero.)
  p.experts_rank =
      k.experts > 0 ? std::ceil(k.experts / std::max(1, p.ep)) : 0.0;
  if (k.moe && k.experts > 0 && p.ep > 1) {
    const bool tabled = p.ep < static_cast<int>(k.dispatch_fanout.size());
    p.dispatch_fanout =
        tabled ? k.dispatch_fanout[p.ep] : DispatchFanout(k, p.ep);
    p.ep_rates = tabled ? k.ep_rates[p.ep] : ExpertParallelRatesOf(k, p.ep);
  } else {
    // ep == 1: every token goes to one group
    p.dispatch_fanout = 1.0 / std::max(1.0, k.top_k);
    p.ep_rates = ExpertParallelRates();
  }
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

std::vector<OpKind> CostModelInspector::ChargedOutsideDeclaredRange(
    const CostModel& model, const PlanDims& plan, int tokens) {
  const CostConstants& k = *model.constants_;
  const PlanCtx p = MakePlanCtx(k, plan, k.num_gpus);
  const Residuals r = SteadyResiduals(k, p);
  std::array<bool, kNumOpKinds> outside{};
  for (bool decode : {false, true}) {
    const double t = tokens;
    const double requests = decode ? t : 1;
    const double ctx = decode ? k.ctx_decode : t;
    for (const LayerResult& l :
         {CostLayer(k, p, false, decode, t, requests, ctx, r.dense, nullptr),
          CostLayer(k, p, true, decode, t, requests, ctx, r.moe, nullptr),
          CostEmbedding(k, p, decode, t, requests, ctx, r.first),
          CostLmHead(k, p, decode, t, requests, ctx, r.last)}) {
      for (int i = 0; i < kNumOpKinds; ++i) {
        if ((i < l.first_op || i > l.last_op) &&
            (l.compute[i] != 0 || l.memory[i] != 0 || l.comm[i] != 0)) {
          outside[i] = true;
        }
      }
    }
  }
  std::vector<OpKind> ops;
  for (int i = 0; i < kNumOpKinds; ++i) {
    if (outside[i]) ops.push_back(static_cast<OpKind>(i));
  }
  return ops;
}

}  // namespace shardplan::simulator::internal
