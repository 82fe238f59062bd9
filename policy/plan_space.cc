// Plan space decisions: masks, encoding and decoding, hashing, sampling and
// moves between tuples (policy/plan_space.h); the construction is in
// plan_space_build.cc.
#include "policy/plan_space.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "glog/logging.h"
#include "policy/internal/plan_space_choices.h"
#include "proto/status_macros.h"
#include "simulator/engine_capability.h"

namespace shardplan::policy {
namespace {

using internal::AutoBatchChoice;
using internal::Popcount;
using simulator::OpKind;
using simulator::PlanDims;
using simulator::ShardDim;

}  // namespace

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
      decode_layouts_[split.decode_list];
  const int64_t r = tuple - split.first;
  const int64_t d = static_cast<int64_t>(decode.size());
  return {&split, &prefill_layouts_[split.prefill_list][r / d], &decode[r % d]};
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
  // With an engine named, the operator dims it launches: the masks offer only
  // dims it expresses one by one, but not every mix of them (the attention
  // operators are batch-split all three or none).
  plan = simulator::WorkloadEngineLaunchedPlan(model_->problem(), plan);
  // The batch choice is one attention dp rank's load; the plan carries the
  // replica's (or decode instance's).
  const int b = decisions[kBatchDecision];
  plan.batch_size = b == AutoBatchChoice()
                        ? 0
                        : simulator::BatchSizeCandidates()[b] *
                              simulator::AttentionDpRanks(
                                  plan, model_->problem().model.is_moe());
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
      const auto& prefill = prefill_layouts_[split.prefill_list];
      const auto& decode = decode_layouts_[split.decode_list];
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
    const int ranks =
        simulator::AttentionDpRanks(plan, model_->problem().model.is_moe());
    const std::vector<int>& batches = simulator::BatchSizeCandidates();
    for (size_t i = 0; i < batches.size(); ++i) {
      if (batches[i] * ranks == batch) b = static_cast<int>(i);
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
    const int64_t d = decode_layouts_[j.split->decode_list].size();
    const int64_t p = prefill_layouts_[j.split->prefill_list].size();
    const int64_t r = tuple - j.split->first;
    const int64_t pi = r / d, di = r % d;
    for (int64_t k = 0; k < d; ++k)
      considered.push_back(static_cast<int>(j.split->first + pi * d + k));
    for (int64_t k = 0; k < p; ++k)
      considered.push_back(static_cast<int>(j.split->first + k * d + di));
    for (const PoolSplit& other : splits_) {
      if (&other != j.split && other.prefill_list == j.split->prefill_list &&
          other.decode_list == j.split->decode_list) {
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
