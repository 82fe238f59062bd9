// Plan space construction: degree-tuple enumeration, mask tables and the
// size of the space (policy/plan_space.h); the decisions over it are in
// plan_space.cc.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "glog/logging.h"
#include "policy/internal/plan_space_choices.h"
#include "policy/plan_space.h"
#include "proto/status_macros.h"
#include "simulator/disaggregated.h"
#include "simulator/engine_capability.h"
#include "simulator/placement.h"

namespace shardplan::policy {
namespace {

using internal::AutoBatchChoice;
using internal::NumBatchChoices;
using internal::Popcount;
using simulator::OpKind;
using simulator::PlanDims;
using simulator::ShardDim;

bool OpExists(const simulator::ModelDims& m, OpKind op) {
  switch (op) {
    case OpKind::kMlpUp:
    case OpKind::kMlpDown:
      return m.dense_layers() > 0;
    case OpKind::kRouter:
    case OpKind::kExpertUp:
    case OpKind::kExpertDown:
      return m.is_moe() && m.moe_layers() > 0;
    default:
      return true;
  }
}

bool IsExpertOp(OpKind op) {
  return op == OpKind::kExpertUp || op == OpKind::kExpertDown;
}

// Lower bound of the bytes per GPU a replica needs for `batch` requests in
// flight: every weight is stored at least once over an instance's GPUs, and
// the GPUs of a replica (an MoE replica's attention dp ranks each take their
// share of the requests) together hold at least the full context's
// (ISL + OSL) KV cache of each request, as the cost model charges it.
double MemoryLowerBoundBytes(const simulator::Problem& p, const Degrees& g,
                             int batch) {
  const simulator::ModelDims& m = p.model;
  const double weight_bytes =
      m.TotalParams() * simulator::BytesPerElement(p.workload.weight_dtype) /
      std::max(1, g.tp * g.pp * (m.is_moe() ? g.dp : 1));
  double kv_per_token_layer = 0;
  if (m.is_mla()) {
    kv_per_token_layer = m.kv_lora_rank + m.qk_rope_head_dim;
  } else {
    kv_per_token_layer = 2.0 * m.kv_heads * m.head_dim;
  }
  const double kv_bytes =
      static_cast<double>(batch) *
      (static_cast<double>(p.workload.input_tokens) +
       p.workload.output_tokens) *
      m.layers * kv_per_token_layer *
      simulator::KvCacheBytesPerElement(p.workload.kv_cache_dtype) /
      std::max(1, g.tp * g.pp * (m.is_moe() ? g.dp : 1));
  return weight_bytes + kv_bytes;
}

// Whether an instance of `gpus` GPUs can hold the weights at all (raw HBM).
bool HoldsWeights(const simulator::Problem& p, int gpus) {
  const double weight_bytes =
      p.model.TotalParams() *
      simulator::BytesPerElement(p.workload.weight_dtype);
  return weight_bytes <= gpus * p.cluster.hardware.hbm_bytes;
}

// Calls fn(Degrees) for every (dp, tp, pp, ep) of one instance of `instance`
// GPUs the divisibility rules allow (replicas 1); ValidatePlan decides the
// rest.
template <typename Fn>
void ForEachInstanceDegrees(const simulator::ModelDims& m, int instance,
                            Fn fn) {
  for (int tp = 1; tp <= instance; ++tp) {
    if (instance % tp != 0) continue;
    if (m.heads > 0 && m.heads % tp != 0) continue;
    if (m.kv_heads > 0 && m.kv_heads % tp != 0 && tp % m.kv_heads != 0)
      continue;
    for (int pp = 1; pp <= instance / tp; ++pp) {
      if ((instance / tp) % pp != 0 || pp > m.layers ||
          pp > simulator::kMaxPipelineStages) {
        continue;
      }
      const int dp = instance / (tp * pp);
      for (int ep = 1; ep <= dp * tp; ++ep) {
        if ((dp * tp) % ep != 0) continue;
        if (!m.is_moe() && ep != 1) continue;
        if (m.is_moe() && m.experts % ep != 0) continue;
        fn(Degrees{dp, tp, pp, ep, 1});
      }
    }
  }
}

using OpMasks = std::array<uint64_t, simulator::kNumOpKinds>;

// The masks of one layout (an aggregated plan or one pool instance).
struct LayoutMasks {
  OpMasks ops{};
  uint64_t micro = 0;
  std::array<uint64_t, kMicroBatchMultipliers.size()> batch{};
};

// The operator dims of layout `plan` (degrees `g`) that `valid` accepts, each
// varied alone from `plan`'s; Megatron's alone where the operator is absent
// or its group is one rank (every dim is the same plan there). With an engine
// named (`engine` non-empty), only the dims it launches
// (simulator::EngineExpressesOpDim; PlanSpace::Decode then prices a mix it
// cannot launch as launched).
template <typename Valid>
OpMasks ComputeOpMasks(const simulator::ModelDims& m, absl::string_view engine,
                       const PlanDims& plan, const Degrees& g,
                       const Valid& valid) {
  const simulator::ShardDims megatron_dims = simulator::MegatronShardDims();
  OpMasks out{};
  for (int o = 0; o < simulator::kNumOpKinds; ++o) {
    const OpKind op = static_cast<OpKind>(o);
    const uint64_t fixed = uint64_t{1} << static_cast<int>(megatron_dims[o]);
    const int group = IsExpertOp(op) ? g.tp_expert() : g.tp;
    if (!OpExists(m, op) || group <= 1) {
      out[o] = fixed;
      continue;
    }
    uint64_t mask = 0;
    for (int d = 0; d < simulator::kNumShardDims; ++d) {
      const ShardDim dim = static_cast<ShardDim>(d);
      if ((op == OpKind::kAttention || op == OpKind::kRouter) &&
          dim == ShardDim::kRow) {
        continue;
      }
      if (!engine.empty() &&
          !simulator::EngineExpressesOpDim(engine, m.is_moe(), op, dim)) {
        continue;
      }
      PlanDims variant = plan;
      variant.dims[o] = dim;
      if (valid(variant)) mask |= uint64_t{1} << d;
    }
    out[o] = mask != 0 ? mask : fixed;
  }
  return out;
}

// Derives `plan`'s masks by checking every single-decision variation with
// `valid`; micro-batches pp only unless `vary_micro_batches`. False when no
// micro-batch and batch choice is left.
template <typename Valid>
bool ComputeLayoutMasks(const simulator::CostModel& model, const PlanDims& plan,
                        const Degrees& g, const PlanSpaceOptions& options,
                        const Valid& valid, bool vary_micro_batches,
                        LayoutMasks* out) {
  const simulator::Problem& p = model.problem();
  const bool concurrency_fixed = p.workload.concurrency > 0;
  const std::vector<int>& batches = simulator::BatchSizeCandidates();
  out->ops = ComputeOpMasks(p.model, p.workload.engine, plan, g, valid);

  // Micro-batches (meaningless without a pipeline) and batch sizes.
  for (int k = 0; k < static_cast<int>(kMicroBatchMultipliers.size()); ++k) {
    if ((g.pp == 1 || !vary_micro_batches) && k > 0) continue;
    PlanDims variant = plan;
    variant.micro_batches = kMicroBatchMultipliers[k] * g.pp;
    if (!valid(variant)) continue;
    uint64_t bmask = 0;
    if (concurrency_fixed) {
      bmask = uint64_t{1} << AutoBatchChoice();
    } else {
      // Choice b is one attention dp rank's load (PlanSpace::Decode).
      const int ranks = simulator::AttentionDpRanks(plan, p.model.is_moe());
      int smallest_valid = -1;
      for (int b = 0; b < static_cast<int>(batches.size()); ++b) {
        PlanDims with_batch = variant;
        with_batch.batch_size = batches[b] * ranks;
        if (!valid(with_batch)) continue;
        if (smallest_valid < 0) smallest_valid = b;
        if (options.memory_bound_batches &&
            MemoryLowerBoundBytes(p, g, with_batch.batch_size) >
                model.capacity_bytes()) {
          continue;
        }
        bmask |= uint64_t{1} << b;
      }
      // Keep the smallest valid batch so the tuple stays representable (its
      // plans are infeasible, which the cost model reports).
      if (bmask == 0 && smallest_valid >= 0)
        bmask = uint64_t{1} << smallest_valid;
    }
    if (bmask == 0) continue;
    out->micro |= uint64_t{1} << k;
    out->batch[k] = bmask;
  }
  return out->micro != 0;
}

// `plan` with pool `role`'s instance degrees set to `g`.
PlanDims WithPool(PlanDims plan, const Degrees& g, simulator::PoolRole role) {
  const bool prefill = role == simulator::PoolRole::kPrefill;
  (prefill ? plan.prefill.dp : plan.dp) = g.dp;
  (prefill ? plan.prefill.tp : plan.tp) = g.tp;
  (prefill ? plan.prefill.pp : plan.pp) = g.pp;
  (prefill ? plan.prefill.ep : plan.ep) = g.ep;
  return plan;
}

// A disaggregated plan of one prefill instance of `prefill` and one decode
// instance of `decode` (Megatron's dims), for the engine's per-pool rules.
PlanDims PoolPairPlan(const Degrees& prefill, const Degrees& decode) {
  PlanDims plan;
  plan.disaggregated = true;
  plan.prefill_instances = 1;
  plan.decode_instances = 1;
  return WithPool(WithPool(plan, prefill, simulator::PoolRole::kPrefill),
                  decode, simulator::PoolRole::kDecode);
}

// What the workload's engine (simulator/engine_capability.h; with no engine
// named: at least one engine) can run, judged with Megatron's dims, and the
// first refusal of a named engine, for the error when nothing is left.
class EngineRefusal {
 public:
  explicit EngineRefusal(const simulator::Problem& p) : p_(p) {}

  // Whether the engine runs aggregated `plan`.
  bool Runs(const PlanDims& plan) {
    if (simulator::WorkloadEngineCanRun(p_, plan)) return true;
    Note([&] {
      return simulator::CheckEngineCanRun(p_.workload.engine,
                                          p_.workload.engine_version, p_, plan);
    });
    return false;
  }

  // The layouts of `layouts` the engine can run as pool `role` (rules of
  // scope kInstance: the instance alone).
  template <typename Layout>
  std::vector<Layout> Runnable(const std::vector<Layout>& layouts,
                               simulator::PoolRole role) {
    std::vector<Layout> out;
    for (const Layout& l : layouts) {
      if (RunsPool(Plan(l.g, role, nullptr), role,
                   simulator::RuleScope::kInstance)) {
        out.push_back(l);
      }
    }
    return out;
  }

  // The indices of the layouts of `layouts` (one instance size) the engine
  // can run as pool `role` where `split` (a plan of the pool split, any
  // layouts of these sizes) places it (rules of scope up to kPlacement).
  template <typename Layout>
  std::vector<int> RunnableHere(const std::vector<Layout>& layouts,
                                simulator::PoolRole role,
                                const PlanDims& split) {
    std::vector<int> out;
    for (size_t k = 0; k < layouts.size(); ++k) {
      if (RunsPool(Plan(layouts[k].g, role, &split), role,
                   simulator::RuleScope::kPlacement)) {
        out.push_back(static_cast<int>(k));
      }
    }
    return out;
  }

  // FAILED_PRECONDITION: no `kind` plan is left that the engine can run.
  absl::Status NoPlanLeft(const char* kind) const {
    return absl::FailedPreconditionError(absl::StrFormat(
        "no %s plan of %s on %d GPUs that %s can launch; e.g. %s", kind,
        p_.model.name, p_.cluster.num_gpus,
        p_.workload.engine.empty() ? std::string("any engine")
                                   : p_.workload.engine,
        first_.ok() ? "no engine can run any layout" : first_.message()));
  }

 private:
  // `g` as pool `role` of `split` (a one-instance pair when null).
  static PlanDims Plan(const Degrees& g, simulator::PoolRole role,
                       const PlanDims* split) {
    return WithPool(split != nullptr ? *split : PoolPairPlan(g, g), g, role);
  }

  bool RunsPool(const PlanDims& plan, simulator::PoolRole role,
                simulator::RuleScope scope) {
    if (simulator::WorkloadEngineCanRunPool(p_, plan, role, scope)) {
      return true;
    }
    Note([&] {
      return simulator::CheckEngineCanRunPool(p_.workload.engine,
                                              p_.workload.engine_version, p_,
                                              plan, role, scope);
    });
    return false;
  }

  // Keeps the first refusal of a named engine.
  template <typename Check>
  void Note(const Check& check) {
    if (first_.ok() && !p_.workload.engine.empty()) first_ = check();
  }

  const simulator::Problem& p_;
  absl::Status first_ = absl::OkStatus();
};

}  // namespace

int MaxChoices(int decision) {
  if (decision == kDegreesDecision) return 0;
  if (IsOpDecision(decision)) return simulator::kNumShardDims;
  if (decision == kMicroBatchesDecision) return kMicroBatchMultipliers.size();
  return NumBatchChoices();
}

absl::StatusOr<std::unique_ptr<PlanSpace>> PlanSpace::NewEmpty(
    const simulator::CostModel& model) {
  if (NumBatchChoices() > 64) {
    return absl::InternalError(
        "too many batch-size candidates for the plan space");
  }
  std::unique_ptr<PlanSpace> space(new PlanSpace());
  space->model_ = &model;
  return space;
}

absl::StatusOr<std::unique_ptr<const PlanSpace>> PlanSpace::Create(
    const simulator::CostModel& model, const PlanSpaceOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<PlanSpace> space, NewEmpty(model));
  const simulator::Problem& p = model.problem();
  const simulator::ModelDims& m = p.model;
  const int n = p.cluster.num_gpus;

  // Replicas (MoE only; see Degrees): an instance must at least hold the
  // weights, so instances too small for them are not offered.
  for (int replicas = 1; replicas <= (m.is_moe() ? n : 1); ++replicas) {
    if (n % replicas != 0) continue;
    const int instance = n / replicas;
    if (replicas > 1 && !HoldsWeights(p, instance)) continue;
    ForEachInstanceDegrees(m, instance, [&](Degrees g) {
      g.replicas = replicas;
      PlanDims plan;
      plan.replicas = replicas;
      plan.dp = g.dp;
      plan.tp = g.tp;
      plan.pp = g.pp;
      plan.ep = g.ep;
      auto valid = [&](const PlanDims& variant) {
        return model.ValidatePlan(variant).ok();
      };
      if (!valid(plan)) return;
      LayoutMasks masks;
      if (!ComputeLayoutMasks(model, plan, g, options, valid,
                              /*vary_micro_batches=*/true, &masks)) {
        return;
      }
      space->degrees_.push_back(g);
      space->op_masks_.push_back(masks.ops);
      space->micro_masks_.push_back(masks.micro);
      space->batch_masks_.push_back(masks.batch);
    });
  }
  RETURN_IF_ERROR(space->KeepTuplesTheEngineRuns());
  if (space->degrees_.empty()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "no valid (replicas, dp, tp, pp, ep) for %s on %d GPUs", m.name, n));
  }
  space->ComputeSize();
  return std::unique_ptr<const PlanSpace>(std::move(space));
}

absl::StatusOr<std::unique_ptr<const PlanSpace>> PlanSpace::CreateDisaggregated(
    const simulator::CostModel& model, const PlanSpaceOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<PlanSpace> space, NewEmpty(model));
  space->disaggregated_ = true;
  const simulator::Problem& p = model.problem();
  const simulator::ModelDims& m = p.model;
  const int n = p.cluster.num_gpus;
  // Whole nodes by the real node sizes (node groups of different sizes: every
  // sum of some of the nodes, e.g. 12 = 8 + 4 on 8- and 4-GPU nodes).
  const std::vector<int> whole_nodes = simulator::WholeNodeSizes(p.cluster);

  // Instance sizes engines deploy (powers of two, whole nodes) that hold the
  // weights, and on each the layouts of one instance: as a decode instance
  // (with its masks) and as a prefill instance (with its prefill batches).
  std::vector<int> sizes;
  std::vector<std::vector<InstanceLayout>> all_decode, all_prefill;
  for (int gpus = 1; gpus < n; ++gpus) {
    const bool power_of_two = (gpus & (gpus - 1)) == 0;
    if (!power_of_two &&
        !std::binary_search(whole_nodes.begin(), whole_nodes.end(), gpus)) {
      continue;
    }
    if (!HoldsWeights(p, gpus)) continue;
    std::vector<InstanceLayout> decode;
    std::vector<InstanceLayout> prefill;
    ForEachInstanceDegrees(m, gpus, [&](const Degrees& g) {
      // A dense instance's dp ranks are copies: more instances say the same.
      if (!m.is_moe() && g.dp != 1) return;
      PlanDims plan;
      plan.dp = g.dp;
      plan.tp = g.tp;
      plan.pp = g.pp;
      plan.ep = g.ep;
      auto valid = [&](const PlanDims& variant) {
        return simulator::ValidateInstancePlan(model, variant).ok();
      };
      if (!valid(plan)) return;
      LayoutMasks masks;
      if (ComputeLayoutMasks(model, plan, g, options, valid,
                             /*vary_micro_batches=*/false, &masks)) {
        // The decode batch does not depend on the micro-batch decision (the
        // prefill batch there).
        decode.push_back({g, masks.ops, masks.batch[0]});
      }
      InstanceLayout pre{g, {}, 0};
      for (int k = 0; k < static_cast<int>(kPrefillBatches.size()); ++k) {
        PlanDims variant = plan;
        variant.batch_size = kPrefillBatches[k];
        if (valid(variant)) pre.batches |= uint64_t{1} << k;
      }
      if (pre.batches != 0) {
        pre.ops = ComputeOpMasks(m, p.workload.engine, plan, g, valid);
        prefill.push_back(pre);
      }
    });
    if (decode.empty() && prefill.empty()) continue;
    sizes.push_back(gpus);
    all_decode.push_back(std::move(decode));
    all_prefill.push_back(std::move(prefill));
  }

  // Each size's layouts the workload's engine can run in each pool, by the
  // rules that read one instance (simulator::RuleScope::kInstance: e.g.
  // SGLang's decode server without pp, vLLM's NixlConnector without pp,
  // TensorRT-LLM's attention dp without tp).
  EngineRefusal refusal(p);
  for (size_t i = 0; i < sizes.size(); ++i) {
    space->prefill_layouts_.push_back(
        refusal.Runnable(all_prefill[i], simulator::PoolRole::kPrefill));
    space->decode_layouts_.push_back(
        refusal.Runnable(all_decode[i], simulator::PoolRole::kDecode));
  }

  // Pool splits: every x * pg + y * dg = n by instance sizes, each with
  // every (prefill layout, decode layout) pair as its joint tuples. Where a
  // split places a pool so that a rule reading the placement refuses it
  // (kPlacement: e.g. an SGLang instance over nodes that hold different
  // numbers of its GPUs), the split gets that size's list less the refused
  // layouts (lists shared between splits that refuse the same ones). Rules
  // reading both pools at once (kPlan: prefill_pp, decode_pp; none in the
  // table today) and, with no engine named, whether one engine runs both
  // pools, cannot be split into per-pool lists: SearchRun marks such a plan
  // infeasible when it is scored (kEngineCannotRun).
  std::map<std::pair<int, std::vector<int>>, int> prefill_lists, decode_lists;
  auto list_for = [&](std::vector<std::vector<InstanceLayout>>& lists,
                      std::map<std::pair<int, std::vector<int>>, int>& known,
                      size_t size, const PlanDims& plan,
                      simulator::PoolRole role) {
    if (!simulator::PoolPlacementMayRefuse(p, plan, role)) {
      return static_cast<int>(size);
    }
    const std::vector<int> kept = refusal.RunnableHere(lists[size], role, plan);
    if (kept.size() == lists[size].size()) return static_cast<int>(size);
    const auto key = std::make_pair(static_cast<int>(size), kept);
    const auto it = known.find(key);
    if (it != known.end()) return it->second;
    std::vector<InstanceLayout> list;
    for (int k : kept) list.push_back(lists[size][k]);
    lists.push_back(std::move(list));
    known.emplace(key, static_cast<int>(lists.size()) - 1);
    return static_cast<int>(lists.size()) - 1;
  };
  int64_t tuples = 0, tuples_without_engine = 0;
  for (size_t pi = 0; pi < sizes.size(); ++pi) {
    for (size_t di = 0; di < sizes.size(); ++di) {
      const int pg = sizes[pi], dg = sizes[di];
      if (all_prefill[pi].empty() || all_decode[di].empty()) continue;
      for (int x = 1; x * pg < n; ++x) {
        if ((n - x * pg) % dg != 0) continue;
        tuples_without_engine += static_cast<int64_t>(all_prefill[pi].size()) *
                                 all_decode[di].size();
        if (space->prefill_layouts_[pi].empty() ||
            space->decode_layouts_[di].empty()) {
          continue;
        }
        PoolSplit split;
        split.prefill_instances = x;
        split.decode_instances = (n - x * pg) / dg;
        // The pools' placement depends on the split and the instance sizes
        // only, not on the layouts: judge it on the first of each.
        PlanDims plan = PoolPairPlan(space->prefill_layouts_[pi][0].g,
                                     space->decode_layouts_[di][0].g);
        plan.prefill_instances = split.prefill_instances;
        plan.decode_instances = split.decode_instances;
        split.prefill_list = list_for(space->prefill_layouts_, prefill_lists,
                                      pi, plan, simulator::PoolRole::kPrefill);
        split.decode_list = list_for(space->decode_layouts_, decode_lists, di,
                                     plan, simulator::PoolRole::kDecode);
        const int64_t count =
            static_cast<int64_t>(
                space->prefill_layouts_[split.prefill_list].size()) *
            static_cast<int64_t>(
                space->decode_layouts_[split.decode_list].size());
        if (count == 0) continue;
        split.first = tuples;
        space->splits_.push_back(split);
        tuples += count;
      }
    }
  }
  // A decision is an int32 index.
  if (tuples > std::numeric_limits<int32_t>::max()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%d joint (pool split, prefill layout, decode layout) tuples for %s on "
        "%d GPUs exceed a decision's index range",
        tuples, m.name, n));
  }
  space->num_joint_tuples_ = tuples;
  if (tuples == 0 && tuples_without_engine > 0) {
    return refusal.NoPlanLeft("disaggregated");
  }
  if (tuples == 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "no valid disaggregated plan (prefill and decode pools) for %s on %d "
        "GPUs",
        m.name, n));
  }
  space->ComputeSize();
  return std::unique_ptr<const PlanSpace>(std::move(space));
}

simulator::PlanDims PlanSpace::TuplePlan(int tuple) const {
  Decisions d{};
  d[kDegreesDecision] = tuple;
  return Decode(WithMegatronDims(d));
}

Decisions PlanSpace::WithMegatronDims(const Decisions& decisions) const {
  Decisions d = decisions;
  const simulator::ShardDims megatron = simulator::MegatronShardDims();
  for (int o = 0; o < simulator::kNumOpKinds; ++o) {
    d[kFirstOpDecision + o] = static_cast<int>(megatron[o]);
    if (disaggregated_)
      d[kFirstPrefillOpDecision + o] = static_cast<int>(megatron[o]);
  }
  return d;
}

absl::Status PlanSpace::KeepTuplesTheEngineRuns() {
  EngineRefusal refusal(model_->problem());
  size_t kept = 0;
  for (size_t t = 0; t < degrees_.size(); ++t) {
    if (!refusal.Runs(TuplePlan(static_cast<int>(t)))) continue;
    degrees_[kept] = degrees_[t];
    op_masks_[kept] = op_masks_[t];
    micro_masks_[kept] = micro_masks_[t];
    batch_masks_[kept] = batch_masks_[t];
    ++kept;
  }
  if (kept == 0 && !degrees_.empty()) return refusal.NoPlanLeft("aggregated");
  degrees_.resize(kept);
  op_masks_.resize(kept);
  micro_masks_.resize(kept);
  batch_masks_.resize(kept);
  return absl::OkStatus();
}

void PlanSpace::ComputeSize() {
  double size = 0;
  if (disaggregated_) {
    // A split's plans: (its prefill plans) x (its decode plans), each summed
    // over the pool's layouts (operator dims x batch choices).
    auto plans = [](const std::vector<InstanceLayout>& layouts) {
      double sum = 0;
      for (const InstanceLayout& l : layouts) {
        double ops = Popcount(l.batches);
        for (uint64_t mask : l.ops) ops *= Popcount(mask);
        sum += ops;
      }
      return sum;
    };
    std::vector<double> prefill, decode;
    for (const auto& l : prefill_layouts_) prefill.push_back(plans(l));
    for (const auto& l : decode_layouts_) decode.push_back(plans(l));
    for (const PoolSplit& split : splits_)
      size += prefill[split.prefill_list] * decode[split.decode_list];
    size_ = size;
    return;
  }
  for (size_t t = 0; t < degrees_.size(); ++t) {
    double ops = 1;
    for (uint64_t mask : op_masks_[t]) ops *= Popcount(mask);
    double tail = 0;
    for (int k = 0; k < static_cast<int>(kMicroBatchMultipliers.size()); ++k) {
      if (micro_masks_[t] >> k & 1) tail += Popcount(batch_masks_[t][k]);
    }
    size += ops * tail;
  }
  size_ = size;
}

}  // namespace shardplan::policy
