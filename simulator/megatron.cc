// The Megatron-style heuristic plan (the baseline every search reports its
// speedup against).
//
// Rules, in order:
//  1. tp = the largest divisor of both num_attention_heads and
//  num_key_value_heads (for MLA
//     models: of num_attention_heads) that is <= gpus_per_node and divides
//     num_gpus — tensor parallelism stays inside one NVLink node (powers of two
//     in practice). With node groups of different sizes: <= the biggest node,
//     skipping tp whose groups the placement would split over nodes.
//  2. pp = 1 if the weights plus the KV cache of a modest batch (the workload's
//  concurrency
//     when set, at most 8 requests) fit in GPU memory; otherwise the smallest
//     pp that divides num_gpus / tp, is <= num_layers and fits (stages then
//     span nodes). If none fits, the largest such pp (the plan is then
//     infeasible and the Evaluation says why).
//  3. Dense: dp = num_gpus / (tp * pp) (dense dp ranks are independent
//     copies). MoE: replicas = num_gpus / (tp * pp) and dp = 1, what the
//     engines recommend: one instance per node when the model fits a node
//     (expert domain = the node's tp ranks, on NVLink), instances replicated
//     across nodes, stages across nodes only when a node is too small.
//  4. MoE: ep = the largest divisor of num_experts that divides tp (experts
//     spread over the stage's ranks inside the node; tp_expert = tp / ep).
//  5. Operator dims = MegatronShardDims() (column/row for attention and MLP,
//  vocab-split
//     embedding and LM head), uniform stage split, micro_batches = pp.
//  6. batch_size = 0: the cost model then uses the workload's concurrency, or
//  the best batch
//     for this layout within memory and the SLOs — the baseline gets a fair
//     batch choice.
// If a rule yields a plan ValidatePlan rejects (e.g. tp not dividing the MLP
// width), or one the workload's engine cannot launch (with no engine named:
// that no engine can; simulator/engine_capability.h), tp is halved until it
// passes.
#include "simulator/megatron.h"

#include <algorithm>

#include "simulator/engine_capability.h"
#include "simulator/placement.h"

namespace shardplan::simulator {
namespace {

bool MemoryFits(const CostModel& model, PlanDims plan) {
  const int concurrency = model.problem().workload.concurrency;
  plan.batch_size = concurrency > 0 ? std::min(concurrency, 8) : 8;
  const Evaluation e = model.Evaluate(plan);
  // Queued requests (KV-cache overflow at the workload's concurrency) mean
  // the modest batch does not fit either.
  return e.reason != InfeasibleReason::kWeightsExceedMemory &&
         e.reason != InfeasibleReason::kKvCacheExceedsMemory &&
         e.queued_requests == 0;
}

int LargestDivisor(int n, int limit, int also_divides) {
  for (int d = std::min(n, limit); d >= 1; --d) {
    if (n % d == 0 && also_divides % d == 0) return d;
  }
  return 1;
}

}  // namespace

PlanDims MegatronPlan(const CostModel& model) {
  const ModelDims& m = model.problem().model;
  const ClusterDims& c = model.problem().cluster;
  const int n = c.num_gpus;
  const int heads_gcd = [&] {
    int a = m.heads, b = m.is_mla() ? m.heads : m.kv_heads;
    while (b != 0) {
      const int t = a % b;
      a = b;
      b = t;
    }
    return std::max(1, a);
  }();
  // Tensor parallelism within a node: up to the biggest node when node
  // groups differ in size, as long as every tp group is placed inside one.
  int tp = LargestDivisor(heads_gcd, LargestNodeGpus(c), n);
  PlanDims best;
  for (; tp >= 1; tp = tp > 1 ? tp / 2 : 0) {
    if (n % tp != 0) continue;
    const int rest = n / tp;
    PlanDims fallback;
    bool have_fallback = false;
    for (int pp = 1; pp <= rest; ++pp) {
      if (rest % pp != 0 || pp > m.layers || pp > kMaxPipelineStages) continue;
      PlanDims plan;
      plan.tp = tp;
      plan.pp = pp;
      if (m.is_moe()) {
        plan.replicas = rest / pp;
        plan.dp = 1;
        plan.ep = LargestDivisor(m.experts, m.experts, tp);
      } else {
        plan.dp = rest / pp;
      }
      plan.dims = MegatronShardDims();
      plan.micro_batches = 0;
      plan.batch_size = 0;
      if (!model.ValidatePlan(plan).ok()) continue;
      if (!WorkloadEngineCanRun(model.problem(), plan)) continue;
      if (tp > c.gpus_per_node &&
          PlacePlan(plan, c, m.is_moe()).tp.spans_nodes()) {
        continue;
      }
      if (MemoryFits(model, plan)) return plan;
      fallback = plan;
      have_fallback = true;
    }
    if (have_fallback) return fallback;
  }
  // Unreachable for validated problems (tp = pp = 1, dp = n always validates);
  // keep a structurally sensible answer anyway.
  best.dp = n;
  return best;
}

}  // namespace shardplan::simulator
