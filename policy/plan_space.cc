// Plan space: degree-tuple enumeration, mask tables and encoding
// (policy/plan_space.h).
#include "policy/plan_space.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "glog/logging.h"
#include "simulator/disaggregated.h"
#include "simulator/engine_capability.h"
#include "simulator/placement.h"
#include "simulator/status_macros.h"

namespace shardplan::policy {
namespace {

using simulator::OpKind;
using simulator::PlanDims;
using simulator::ShardDim;

int NumBatchChoices() {
  return static_cast<int>(simulator::BatchSizeCandidates().size()) + 1;
}
int AutoBatchChoice() { return NumBatchChoices() - 1; }

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

int Popcount(uint64_t x) { return __builtin_popcountll(x); }

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
      simulator::BytesPerElement(p.workload.kv_cache_dtype) /
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
// or its group is one rank (every dim is the same plan there).
template <typename Valid>
OpMasks ComputeOpMasks(const simulator::ModelDims& m, const PlanDims& plan,
                       const Degrees& g, const Valid& valid) {
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
  out->ops = ComputeOpMasks(p.model, plan, g, valid);

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
      int smallest_valid = -1;
      for (int b = 0; b < static_cast<int>(batches.size()); ++b) {
        PlanDims with_batch = variant;
        with_batch.batch_size = batches[b];
        if (!valid(with_batch)) continue;
        if (smallest_valid < 0) smallest_valid = b;
        if (options.memory_bound_batches &&
            MemoryLowerBoundBytes(p, g, batches[b]) > model.capacity_bytes()) {
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
        pre.ops = ComputeOpMasks(m, plan, g, valid);
        prefill.push_back(pre);
      }
    });
    if (decode.empty() && prefill.empty()) continue;
    sizes.push_back(gpus);
    space->decode_layouts_.push_back(std::move(decode));
    space->prefill_layouts_.push_back(std::move(prefill));
  }

  // Pool splits: every x * pg + y * dg = n by instance sizes, each with
  // every (prefill layout, decode layout) pair as its joint tuples.
  int64_t tuples = 0;
  for (size_t pi = 0; pi < sizes.size(); ++pi) {
    for (size_t di = 0; di < sizes.size(); ++di) {
      const int pg = sizes[pi], dg = sizes[di];
      const int64_t count =
          static_cast<int64_t>(space->prefill_layouts_[pi].size()) *
          static_cast<int64_t>(space->decode_layouts_[di].size());
      if (count == 0) continue;
      for (int x = 1; x * pg < n; ++x) {
        if ((n - x * pg) % dg != 0) continue;
        PoolSplit split;
        split.prefill_instances = x;
        split.decode_instances = (n - x * pg) / dg;
        split.prefill_size = static_cast<int>(pi);
        split.decode_size = static_cast<int>(di);
        split.first = tuples;
        space->splits_.push_back(split);
        tuples += count;
      }
    }
  }
  // Disaggregated tuples are indexed, not stored: the engine's rules apply
  // when a plan is scored (the search marks a plan the engine cannot launch
  // infeasible), not by filtering a tuple list here.
  // A decision is an int32 index.
  if (tuples > std::numeric_limits<int32_t>::max()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%d joint (pool split, prefill layout, decode layout) tuples for %s on "
        "%d GPUs exceed a decision's index range",
        tuples, m.name, n));
  }
  space->num_joint_tuples_ = tuples;
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
  const simulator::ShardDims megatron = simulator::MegatronShardDims();
  for (int o = 0; o < simulator::kNumOpKinds; ++o) {
    d[kFirstOpDecision + o] = static_cast<int>(megatron[o]);
    if (disaggregated_)
      d[kFirstPrefillOpDecision + o] = static_cast<int>(megatron[o]);
  }
  return Decode(d);
}

absl::Status PlanSpace::KeepTuplesTheEngineRuns() {
  const simulator::Problem& p = model_->problem();
  size_t kept = 0;
  absl::Status first_refusal = absl::OkStatus();
  for (size_t t = 0; t < degrees_.size(); ++t) {
    const PlanDims plan = TuplePlan(static_cast<int>(t));
    if (!simulator::WorkloadEngineCanRun(p, plan)) {
      if (first_refusal.ok() && !p.workload.engine.empty()) {
        first_refusal = simulator::CheckEngineCanRun(
            p.workload.engine, p.workload.engine_version, p, plan);
      }
      continue;
    }
    degrees_[kept] = degrees_[t];
    op_masks_[kept] = op_masks_[t];
    micro_masks_[kept] = micro_masks_[t];
    batch_masks_[kept] = batch_masks_[t];
    ++kept;
  }
  if (kept == 0 && !degrees_.empty()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "no %s plan of %s on %d GPUs that %s can launch; e.g. %s",
        disaggregated_ ? "disaggregated" : "aggregated", p.model.name,
        p.cluster.num_gpus,
        p.workload.engine.empty() ? std::string("any engine")
                                  : p.workload.engine,
        first_refusal.ok() ? "no engine can run any layout"
                           : first_refusal.message()));
  }
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
      size += prefill[split.prefill_size] * decode[split.decode_size];
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

int PlanSpace::NumChoices(int decision) const {
  if (decision == kDegreesDecision) {
    return disaggregated_ ? static_cast<int>(num_joint_tuples_)
                          : static_cast<int>(degrees_.size());
  }
  return MaxChoices(decision);
}

PlanSpace::JointTuple PlanSpace::Joint(int tuple) const {
  const auto it = std::upper_bound(
      splits_.begin(), splits_.end(), static_cast<int64_t>(tuple),
      [](int64_t t, const PoolSplit& split) { return t < split.first; });
  const PoolSplit& split = *(it - 1);
  const std::vector<InstanceLayout>& decode =
      decode_layouts_[split.decode_size];
  const int64_t r = tuple - split.first;
  const int64_t d = static_cast<int64_t>(decode.size());
  return {&split, &prefill_layouts_[split.prefill_size][r / d], &decode[r % d]};
}

Degrees PlanSpace::TupleDegrees(int i) const {
  if (!disaggregated_) return degrees_[i];
  const JointTuple j = Joint(i);
  Degrees g = j.decode->g;
  g.replicas = j.split->decode_instances;
  g.prefill_instances = j.split->prefill_instances;
  g.prefill_dp = j.prefill->g.dp;
  g.prefill_tp = j.prefill->g.tp;
  g.prefill_pp = j.prefill->g.pp;
  g.prefill_ep = j.prefill->g.ep;
  return g;
}

uint64_t PlanSpace::MaskBits(int decision,
                             absl::Span<const int32_t> prefix) const {
  DCHECK_NE(decision, kDegreesDecision);
  const int t = prefix[kDegreesDecision];
  if (disaggregated_) {
    const JointTuple j = Joint(t);
    if (decision < kMicroBatchesDecision)
      return j.decode->ops[decision - kFirstOpDecision];
    // The micro-batch decision is the prefill batch.
    if (decision == kMicroBatchesDecision) return j.prefill->batches;
    if (decision == kBatchDecision) return j.decode->batches;
    return j.prefill->ops[decision - kFirstPrefillOpDecision];
  }
  if (decision < kMicroBatchesDecision)
    return op_masks_[t][decision - kFirstOpDecision];
  if (decision == kMicroBatchesDecision) return micro_masks_[t];
  if (decision == kBatchDecision)
    return batch_masks_[t][prefix[kMicroBatchesDecision]];
  // The prefill dims: an aggregated space has none (0 is their only value).
  return uint64_t{1};
}

std::vector<uint8_t> PlanSpace::Mask(int decision,
                                     absl::Span<const int32_t> prefix) const {
  std::vector<uint8_t> mask(NumChoices(decision), 0);
  if (decision == kDegreesDecision) {
    std::fill(mask.begin(), mask.end(), 1);
    return mask;
  }
  const uint64_t bits = MaskBits(decision, prefix);
  for (size_t i = 0; i < mask.size(); ++i) mask[i] = (bits >> i) & 1;
  return mask;
}

bool PlanSpace::IsAllowed(int decision, absl::Span<const int32_t> prefix,
                          int choice) const {
  if (choice < 0 || choice >= NumChoices(decision)) return false;
  if (decision == kDegreesDecision) return true;
  return (MaskBits(decision, prefix) >> choice) & 1;
}

bool PlanSpace::IsValid(const Decisions& decisions) const {
  for (int d = 0; d < kNumDecisions; ++d) {
    if (!IsAllowed(d, decisions, decisions[d])) return false;
  }
  return true;
}

PlanDims PlanSpace::Decode(const Decisions& decisions) const {
  PlanDims plan;
  const Degrees g = TupleDegrees(decisions[kDegreesDecision]);
  plan.replicas = g.replicas;
  plan.dp = g.dp;
  plan.tp = g.tp;
  plan.pp = g.pp;
  plan.ep = g.ep;
  for (int o = 0; o < simulator::kNumOpKinds; ++o) {
    plan.dims[o] = static_cast<ShardDim>(decisions[kFirstOpDecision + o]);
  }
  if (disaggregated_) {
    plan.disaggregated = true;
    plan.replicas = 1;
    plan.decode_instances = g.replicas;
    plan.prefill_instances = g.prefill_instances;
    plan.prefill.dp = g.prefill_dp;
    plan.prefill.tp = g.prefill_tp;
    plan.prefill.pp = g.prefill_pp;
    plan.prefill.ep = g.prefill_ep;
    plan.prefill.batch_size = kPrefillBatches[decisions[kPrefillBatchDecision]];
    for (int o = 0; o < simulator::kNumOpKinds; ++o) {
      plan.prefill.dims[o] =
          static_cast<ShardDim>(decisions[kFirstPrefillOpDecision + o]);
    }
    plan.micro_batches = g.pp;
  } else {
    plan.micro_batches =
        kMicroBatchMultipliers[decisions[kMicroBatchesDecision]] * g.pp;
  }
  const int b = decisions[kBatchDecision];
  plan.batch_size =
      b == AutoBatchChoice() ? 0 : simulator::BatchSizeCandidates()[b];
  return plan;
}

absl::StatusOr<Decisions> PlanSpace::Encode(const PlanDims& plan,
                                            int resolved_batch) const {
  Decisions d{};
  if (plan.disaggregated != disaggregated_) {
    return absl::InvalidArgumentError(
        plan.disaggregated
            ? "a disaggregated plan is not in an aggregated plan space"
            : "an aggregated plan is not in a disaggregated plan space");
  }
  int t = -1;
  auto same = [](const Degrees& g, const auto& instance) {
    return g.dp == instance.dp && g.tp == instance.tp && g.pp == instance.pp &&
           g.ep == instance.ep;
  };
  if (disaggregated_) {
    // The split, then each pool's layout in its size's list.
    for (const PoolSplit& split : splits_) {
      if (plan.replicas != 1 ||
          split.prefill_instances != plan.prefill_instances ||
          split.decode_instances != plan.decode_instances) {
        continue;
      }
      const auto& prefill = prefill_layouts_[split.prefill_size];
      const auto& decode = decode_layouts_[split.decode_size];
      if (prefill[0].g.dp * prefill[0].g.tp * prefill[0].g.pp !=
              plan.prefill.gpus() ||
          decode[0].g.dp * decode[0].g.tp * decode[0].g.pp !=
              plan.instance_gpus()) {
        continue;
      }
      int pi = -1, di = -1;
      for (size_t i = 0; i < prefill.size() && pi < 0; ++i)
        if (same(prefill[i].g, plan.prefill)) pi = static_cast<int>(i);
      for (size_t i = 0; i < decode.size() && di < 0; ++i)
        if (same(decode[i].g, plan)) di = static_cast<int>(i);
      if (pi >= 0 && di >= 0) {
        t = static_cast<int>(split.first +
                             static_cast<int64_t>(pi) * decode.size() + di);
      }
      break;
    }
  } else {
    for (size_t i = 0; i < degrees_.size(); ++i) {
      if (degrees_[i].replicas == plan.replicas && same(degrees_[i], plan)) {
        t = static_cast<int>(i);
        break;
      }
    }
  }
  if (t < 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "degrees (replicas %d, dp %d, tp %d, pp %d, ep %d%s) are not in the "
        "plan space",
        plan.replicas, plan.dp, plan.tp, plan.pp, plan.ep,
        disaggregated_
            ? absl::StrFormat("; %d prefill instances of dp %d, tp %d, pp %d, "
                              "ep %d and %d decode instances",
                              plan.prefill_instances, plan.prefill.dp,
                              plan.prefill.tp, plan.prefill.pp, plan.prefill.ep,
                              plan.decode_instances)
            : ""));
  }
  if (plan.num_stage_layers != 0) {
    return absl::InvalidArgumentError(
        "explicit stage splits are not in the plan space");
  }
  d[kDegreesDecision] = t;
  // Dims fixed by the mask (absent operators, groups of one rank) are
  // canonicalised, so equal plans encode (and hash) equal.
  auto encode_dims = [&](const simulator::ShardDims& dims, const OpMasks& masks,
                         int first, absl::string_view what) -> absl::Status {
    for (int o = 0; o < simulator::kNumOpKinds; ++o) {
      const uint64_t mask = masks[o];
      int dim = static_cast<int>(dims[o]);
      if (Popcount(mask) == 1) dim = __builtin_ctzll(mask);
      if (!((mask >> dim) & 1)) {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s%s dim %s is not in the plan space", what,
                            simulator::OpKindName(static_cast<OpKind>(o)),
                            simulator::ShardDimName(dims[o])));
      }
      d[first + o] = dim;
    }
    return absl::OkStatus();
  };
  if (disaggregated_) {
    const JointTuple j = Joint(t);
    RETURN_IF_ERROR(
        encode_dims(plan.dims, j.decode->ops, kFirstOpDecision, "decode "));
    RETURN_IF_ERROR(encode_dims(plan.prefill.dims, j.prefill->ops,
                                kFirstPrefillOpDecision, "prefill "));
  } else {
    RETURN_IF_ERROR(encode_dims(plan.dims, op_masks_[t], kFirstOpDecision, ""));
  }
  const int micro = plan.micro_batches == 0 ? plan.pp : plan.micro_batches;
  int k = -1;
  if (disaggregated_) {
    // Both instances run pp micro-batches.
    if ((plan.prefill.micro_batches != 0 &&
         plan.prefill.micro_batches != plan.prefill.pp) ||
        micro != plan.pp) {
      return absl::InvalidArgumentError(
          "micro-batches other than pp are not in the disaggregated plan "
          "space");
    }
    const int prefill_batch = std::max(1, plan.prefill.batch_size);
    for (int i = 0; i < static_cast<int>(kPrefillBatches.size()); ++i) {
      if (kPrefillBatches[i] == prefill_batch) k = i;
    }
    if (k < 0 || !((MaskBits(kMicroBatchesDecision, d) >> k) & 1)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "prefill batch_size %d is not in the plan space", prefill_batch));
    }
  } else {
    for (int i = 0; i < static_cast<int>(kMicroBatchMultipliers.size()); ++i) {
      if (kMicroBatchMultipliers[i] * plan.pp == micro) k = i;
    }
    if (k < 0 || !((MaskBits(kMicroBatchesDecision, d) >> k) & 1)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("micro_batches %d is not in the plan space", micro));
    }
  }
  d[kMicroBatchesDecision] = k;
  const bool concurrency_fixed = model_->problem().workload.concurrency > 0;
  int b = -1;
  if (concurrency_fixed) {
    if (plan.batch_size == 0 ||
        plan.batch_size == model_->problem().workload.concurrency) {
      b = AutoBatchChoice();
    }
  } else {
    const int batch = plan.batch_size != 0 ? plan.batch_size : resolved_batch;
    const std::vector<int>& batches = simulator::BatchSizeCandidates();
    for (size_t i = 0; i < batches.size(); ++i) {
      if (batches[i] == batch) b = static_cast<int>(i);
    }
  }
  if (b < 0 || !((MaskBits(kBatchDecision, d) >> b) & 1)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "batch_size %d is not in the plan space", plan.batch_size));
  }
  d[kBatchDecision] = b;
  return d;
}

uint64_t PlanSpace::Hash(const Decisions& decisions) {
  // FNV-1a over the decision values, then a final avalanche (splitmix64).
  uint64_t h = 1469598103934665603ULL;
  for (int i = 0; i < kNumAggregatedDecisions; ++i) {
    h ^= static_cast<uint32_t>(decisions[i]);
    h *= 1099511628211ULL;
  }
  // The prefill dims enter with their position, and only when not 0: an
  // aggregated plan (all 0) hashes as before they existed, so hash-ordered
  // ties break as they did.
  for (int i = kFirstPrefillOpDecision; i < kNumDecisions; ++i) {
    if (decisions[i] == 0) continue;
    h ^= static_cast<uint32_t>(i) << 8 | static_cast<uint32_t>(decisions[i]);
    h *= 1099511628211ULL;
  }
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h;
}

int SampleBit(uint64_t mask, std::mt19937_64& rng) {
  const int count = Popcount(mask);
  if (count == 0) return -1;
  int pick = static_cast<int>(rng() % static_cast<uint64_t>(count));
  for (int i = 0; i < 64; ++i) {
    if ((mask >> i) & 1) {
      if (pick == 0) return i;
      --pick;
    }
  }
  return -1;
}

void PlanSpace::CompleteUniform(Decisions& d, int from,
                                std::mt19937_64& rng) const {
  for (int i = from; i < num_decisions(); ++i) {
    if (i == kDegreesDecision) {
      d[i] = static_cast<int32_t>(rng() % NumChoices(kDegreesDecision));
    } else {
      d[i] = SampleBit(MaskBits(i, d), rng);
    }
  }
}

void PlanSpace::Repair(Decisions& d, int from, std::mt19937_64& rng) const {
  for (int i = std::max(from, 1); i < num_decisions(); ++i) {
    const uint64_t mask = MaskBits(i, d);
    if (d[i] < 0 || d[i] >= 64 || !((mask >> d[i]) & 1))
      d[i] = SampleBit(mask, rng);
  }
}

int TranslateBatch(int choice, const Degrees& from, const Degrees& to) {
  static const std::vector<double> logs = [] {
    std::vector<double> l;  // ascending, like the candidates
    for (int b : simulator::BatchSizeCandidates()) l.push_back(std::log(b));
    return l;
  }();
  const int n = static_cast<int>(logs.size());
  if (choice < 0 || choice >= n) return choice;
  const double target =
      logs[choice] + std::log(to.tp * to.pp) - std::log(from.tp * from.pp);
  // The nearest candidate in log space, the smaller one on a tie.
  const int hi = static_cast<int>(
      std::lower_bound(logs.begin(), logs.end(), target) - logs.begin());
  if (hi == 0) return 0;
  if (hi == n) return n - 1;
  return target - logs[hi - 1] <= logs[hi] - target ? hi - 1 : hi;
}

Decisions PlanSpace::MoveToTuple(const Decisions& d, int tuple,
                                 std::mt19937_64& rng) const {
  Decisions out = d;
  out[kDegreesDecision] = tuple;
  out[kBatchDecision] =
      TranslateBatch(d[kBatchDecision], TupleDegrees(d[kDegreesDecision]),
                     TupleDegrees(tuple));
  Repair(out, kDegreesDecision + 1, rng);
  return out;
}

std::vector<int> PlanSpace::NearestTuples(int tuple, int limit) const {
  const auto origin = DegreeFeatures(tuple);
  const auto origin_pools = PoolFeatures(tuple);
  // The tuples considered: all, or in a joint space of more than
  // kLargeJointSpace tuples those that change one pool's layout or move the
  // same layouts to another split of the same instance sizes (a scan of
  // every tuple would cost seconds per call there).
  std::vector<int> considered;
  if (disaggregated_ && NumChoices(kDegreesDecision) > kLargeJointSpace) {
    const JointTuple j = Joint(tuple);
    const int64_t d = decode_layouts_[j.split->decode_size].size();
    const int64_t p = prefill_layouts_[j.split->prefill_size].size();
    const int64_t r = tuple - j.split->first;
    const int64_t pi = r / d, di = r % d;
    for (int64_t k = 0; k < d; ++k)
      considered.push_back(static_cast<int>(j.split->first + pi * d + k));
    for (int64_t k = 0; k < p; ++k)
      considered.push_back(static_cast<int>(j.split->first + k * d + di));
    for (const PoolSplit& other : splits_) {
      if (&other != j.split && other.prefill_size == j.split->prefill_size &&
          other.decode_size == j.split->decode_size) {
        considered.push_back(static_cast<int>(other.first + r));
      }
    }
    std::sort(considered.begin(), considered.end());
    considered.erase(std::unique(considered.begin(), considered.end()),
                     considered.end());
  } else {
    considered.resize(NumChoices(kDegreesDecision));
    for (size_t i = 0; i < considered.size(); ++i)
      considered[i] = static_cast<int>(i);
  }
  std::vector<std::pair<double, int>> order;
  for (int i : considered) {
    if (i == tuple) continue;
    const auto f = DegreeFeatures(i);
    double d2 = 0;
    for (size_t k = 0; k < f.size(); ++k)
      d2 += (f[k] - origin[k]) * (f[k] - origin[k]);
    if (disaggregated_) {
      const auto pools = PoolFeatures(i);
      for (size_t k = 0; k < pools.size(); ++k)
        d2 += (pools[k] - origin_pools[k]) * (pools[k] - origin_pools[k]);
    }
    order.emplace_back(d2, i);
  }
  if (limit >= 0 && static_cast<size_t>(limit) < order.size()) {
    std::partial_sort(order.begin(), order.begin() + limit, order.end());
    order.resize(limit);
  } else {
    std::sort(order.begin(), order.end());
  }
  std::vector<int> out;
  out.reserve(order.size());
  for (const auto& entry : order) out.push_back(entry.second);
  return out;
}

Decisions PlanSpace::SampleUniform(std::mt19937_64& rng) const {
  Decisions d{};
  CompleteUniform(d, 0, rng);
  return d;
}

bool PlanSpace::ForEachFrom(
    Decisions& d, int decision,
    const std::function<bool(const Decisions&)>& fn) const {
  if (decision == num_decisions()) return fn(d);
  const int n = NumChoices(decision);
  const uint64_t mask =
      decision == kDegreesDecision ? ~uint64_t{0} : MaskBits(decision, d);
  for (int c = 0; c < n; ++c) {
    if (decision != kDegreesDecision && !((mask >> c) & 1)) continue;
    d[decision] = c;
    if (!ForEachFrom(d, decision + 1, fn)) return false;
  }
  return true;
}

std::array<float, PlanSpace::kDegreeFeatures> PlanSpace::DegreeFeatures(
    int i) const {
  const Degrees g = TupleDegrees(i);
  const int gpn = std::max(1, model_->problem().cluster.gpus_per_node);
  auto lg = [](double x) {
    return static_cast<float>(std::log2(std::max(1.0, x)) / 10.0);
  };
  return {lg(g.dp),
          lg(g.tp),
          lg(g.pp),
          lg(g.ep),
          lg(g.tp_expert()),
          g.tp > gpn ? 1.0f : 0.0f,
          g.tp_expert() > gpn ? 1.0f : 0.0f,
          lg(static_cast<double>(g.tp) * g.pp),
          lg(g.replicas)};
}

std::array<float, PlanSpace::kPoolFeatures> PlanSpace::PoolFeatures(
    int i) const {
  const Degrees g = TupleDegrees(i);
  if (!g.disaggregated()) return {};
  auto lg = [](double x) {
    return static_cast<float>(std::log2(std::max(1.0, x)) / 10.0);
  };
  const double n = std::max(1, model_->problem().cluster.num_gpus);
  return {lg(g.prefill_dp),
          lg(g.prefill_tp),
          lg(g.prefill_pp),
          lg(g.prefill_ep),
          lg(g.prefill_instances),
          static_cast<float>(g.prefill_instances * g.prefill_gpus() / n)};
}

}  // namespace shardplan::policy
