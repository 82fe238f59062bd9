// The discrete plan space every searcher works in: a plan is a fixed-length
// vector of decisions taken in a fixed order (the (dp, tp, pp, ep) tuple, then
// each operator's sharding dimension, then micro-batches, then the decode batch
// size), with masks so that only plans CostModel::ValidatePlan accepts can be
// produced, decode/encode to PlanDims, a canonical hash for de-duplication and
// the size of the space. Torch-free.
//
// A disaggregated space (PlanSpace::CreateDisaggregated) has the same decision
// vector plus the prefill dims, read as a prefill/decode plan
// (simulator/disaggregated.h), degrees first as in the aggregated space:
//  - kDegreesDecision: the joint degree tuple: the pool split (prefill
//    instances x, decode instances y), the prefill instance's (dp, tp, pp,
//    ep) and the decode instance's (dp, tp, pp, ep);
//  - kFirstOpDecision + o: the decode instance's operator dims;
//  - kMicroBatchesDecision (= kPrefillBatchDecision): the prefill batch,
//    kPrefillBatches[choice] requests per pass; the decode instance runs pp
//    micro-batches;
//  - kBatchDecision: the decode batch, as in the aggregated space;
//  - kFirstPrefillOpDecision + o: the prefill instance's operator dims, masked
//    per joint tuple by what ValidateInstancePlan accepts for the prefill
//    instance (Megatron's where its tensor-parallel group is one rank).
// The prefill dims come last so that the aggregated space keeps its decision
// indices: there they do not exist (num_decisions() stops before them; their
// value is always 0, the only choice their masks allow), so the aggregated
// searchers take, draw and hash exactly what they did before. Searching the
// prefill dims finds no better plan on the held-out generated cases but 5-15%
// more where a long prompt's prefill decides the TTFT (docs/benchmarks.md,
// "Searched prefill operator dims: before and after").
// So every searcher (RL, baselines, moves) and SearchRun work on either.
#ifndef SHARDPLAN_POLICY_PLAN_SPACE_H_
#define SHARDPLAN_POLICY_PLAN_SPACE_H_

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "simulator/cost_model.h"
#include "simulator/types.h"

namespace shardplan::policy {

// Decision indices, in the order they are taken.
inline constexpr int kDegreesDecision = 0;
inline constexpr int kFirstOpDecision = 1;  // + static_cast<int>(OpKind)
inline constexpr int kMicroBatchesDecision =
    kFirstOpDecision + simulator::kNumOpKinds;
inline constexpr int kBatchDecision = kMicroBatchesDecision + 1;
// Decisions of an aggregated space (PlanSpace::num_decisions()).
inline constexpr int kNumAggregatedDecisions = kBatchDecision + 1;
// Disaggregated spaces only: the prefill instance's operator dims.
inline constexpr int kFirstPrefillOpDecision = kNumAggregatedDecisions;
inline constexpr int kNumDecisions =
    kFirstPrefillOpDecision + simulator::kNumOpKinds;
// Whether `decision` is one of an instance's operator dims (decode or
// aggregated: kFirstOpDecision + o; prefill: kFirstPrefillOpDecision + o).
inline constexpr bool IsOpDecision(int decision) {
  return (decision >= kFirstOpDecision && decision < kMicroBatchesDecision) ||
         decision >= kFirstPrefillOpDecision;
}

// Micro-batches offered: pp times one of these.
inline constexpr std::array<int, 3> kMicroBatchMultipliers = {1, 2, 4};
// In a disaggregated space the micro-batch decision is the prefill batch
// (requests per prefill pass), one of these (the sweep's choices).
inline constexpr int kPrefillBatchDecision = kMicroBatchesDecision;
inline constexpr std::array<int, kMicroBatchMultipliers.size()>
    kPrefillBatches = {1, 2, 4};
// Problem-independent number of choices per decision, used to size network
// heads (the degrees decision has a problem-dependent count; see
// PlanSpace::NumChoices). Batch: index i < BatchSizeCandidates().size() is that
// candidate as each attention dp rank's load (the plan's batch_size, per
// replica, is it times the replica's attention dp ranks); the last index is
// "0" (the workload's concurrency), offered only when the workload fixes the
// concurrency.
int MaxChoices(int decision);

// A plan as decisions; entry d is the chosen index for decision d.
using Decisions = std::array<int32_t, kNumDecisions>;

// One of the set bits of `mask` (a choice index), uniformly: one draw from
// `rng`. -1 when the mask is empty.
int SampleBit(uint64_t mask, std::mt19937_64& rng);

struct Degrees {
  int dp = 1;
  int tp = 1;
  int pp = 1;
  int ep = 1;
  // Independent model instances (MoE only: a dense model's dp ranks already
  // are independent copies, so dense tuples keep replicas = 1).
  int replicas = 1;
  // Disaggregated joint tuples (PlanSpace::disaggregated()): the fields above
  // are one decode instance's, with replicas = the number of decode
  // instances; these are the prefill pool's. prefill_instances 0: an
  // aggregated tuple.
  int prefill_instances = 0;
  int prefill_dp = 1;
  int prefill_tp = 1;
  int prefill_pp = 1;
  int prefill_ep = 1;
  // (dp * tp) / ep: the tensor-parallel width inside an expert group (1 for
  // dense models).
  int tp_expert() const { return ep > 0 ? dp * tp / ep : 1; }
  bool disaggregated() const { return prefill_instances > 0; }
  int prefill_gpus() const { return prefill_dp * prefill_tp * prefill_pp; }
};

// A batch choice (index into simulator::BatchSizeCandidates()) moved from
// degree tuple `from` to `to`: the candidate nearest in log space to the same
// decode batch per GPU of a replica (tp * pp GPUs), whose KV-cache use per
// GPU is what made the batch good. Other indices (the workload's
// concurrency) are returned unchanged.
int TranslateBatch(int choice, const Degrees& from, const Degrees& to);

struct PlanSpaceOptions {
  // Mask batch sizes whose KV cache certainly cannot fit beside the weights (a
  // cheap, conservative bound; the cost model still decides feasibility).
  bool memory_bound_batches = true;
};

// Immutable after Create; all methods are const and thread-safe. Holds a
// pointer to the CostModel, which must outlive it.
class PlanSpace {
 public:
  // Enumerates the valid degree tuples and derives each decision's mask table,
  // checking every single-decision variation against model.ValidatePlan.
  // FAILED_PRECONDITION when no degree tuple is valid for the problem.
  static absl::StatusOr<std::unique_ptr<const PlanSpace>> Create(
      const simulator::CostModel& model, const PlanSpaceOptions& options = {});
  // The disaggregated space of the same problem (see the file comment).
  // Instance sizes: powers of two and multiples of a node below num_gpus that
  // can hold the weights; each instance's layouts are the aggregated space's
  // degree tuples of one instance on its GPUs (dense models: dp 1, the
  // instance count carries the copies), each checked once with
  // simulator::ValidateInstancePlan; joint tuples are every pool split
  // x * prefill GPUs + y * decode GPUs = num_gpus times every prefill layout
  // times every decode layout, so every decoded plan passes
  // model.ValidatePlan. None is left out but what the workload's engine
  // cannot launch (with no engine named: what no engine can), judged per
  // pool with Megatron's dims (simulator::WorkloadEngineCanRunPool): a
  // layout a rule refuses in its pool role leaves its size's list, and one a
  // rule refuses where a split places it leaves that split's list; rules
  // reading both pools are SearchRun's when a plan is scored. The tuples are
  // not stored but indexed (split, prefill layout, decode layout), so memory
  // grows with the layouts, not with their product. FAILED_PRECONDITION when
  // no disaggregated plan is valid (e.g. one GPU, or no instance smaller than
  // the cluster holds the weights), when the engine can launch none (naming
  // the engine and a rule), or when the joint tuples overflow a decision's
  // 32-bit index.
  static absl::StatusOr<std::unique_ptr<const PlanSpace>> CreateDisaggregated(
      const simulator::CostModel& model, const PlanSpaceOptions& options = {});

  bool disaggregated() const { return disaggregated_; }
  // Decisions [0, num_decisions()) are taken; the rest (the prefill dims of
  // an aggregated space) stay 0.
  int num_decisions() const {
    return disaggregated_ ? kNumDecisions : kNumAggregatedDecisions;
  }

  const simulator::CostModel& model() const { return *model_; }
  // The degree tuples of an aggregated space (empty in a disaggregated one,
  // whose joint tuples are indexed, not stored: use TupleDegrees).
  const std::vector<Degrees>& degrees() const { return degrees_; }
  // Degree tuple i (0 <= i < NumChoices(kDegreesDecision)), either kind.
  Degrees TupleDegrees(int i) const;

  // Number of choice indices of `decision` (the degrees decision: number of
  // valid tuples; otherwise MaxChoices(decision)). Which of them are valid
  // depends on the prefix.
  int NumChoices(int decision) const;
  // Valid choices of `decision` given the decisions before it (prefix[0,
  // decision)); mask[i] is 1 when choice i is valid. At least one choice is
  // always valid.
  std::vector<uint8_t> Mask(int decision,
                            absl::Span<const int32_t> prefix) const;
  // The same as a bit set (bit i = choice i), for decisions other than degrees.
  uint64_t MaskBits(int decision, absl::Span<const int32_t> prefix) const;
  // Whether `choice` is valid for `decision` given the prefix.
  bool IsAllowed(int decision, absl::Span<const int32_t> prefix,
                 int choice) const;
  // Whether every decision follows the masks.
  bool IsValid(const Decisions& decisions) const;

  // Decisions -> plan (uniform stage split). The decisions must be valid
  // (IsValid).
  simulator::PlanDims Decode(const Decisions& decisions) const;
  // Plan -> decisions. Operators whose dimension is fixed by the mask (absent
  // operators, groups of one rank) are canonicalised. batch_size 0 with
  // concurrency 0 takes `resolved_batch` (the batch the cost model picked).
  // INVALID_ARGUMENT when the plan is not representable in this space.
  absl::StatusOr<Decisions> Encode(const simulator::PlanDims& plan,
                                   int resolved_batch = 0) const;
  // Canonical hash of a valid decision vector (equal plans hash equal).
  static uint64_t Hash(const Decisions& decisions);

  // Completes decisions [from, num_decisions()) by sampling each uniformly
  // among the choices valid for its prefix.
  void CompleteUniform(Decisions& decisions, int from,
                       std::mt19937_64& rng) const;
  // Keeps decisions [from, ...) that stay valid after an earlier change;
  // resamples the rest.
  void Repair(Decisions& decisions, int from, std::mt19937_64& rng) const;
  Decisions SampleUniform(std::mt19937_64& rng) const;
  // `decisions` (valid) with Megatron's operator dims in each pool. Valid:
  // every layout's dims vary one at a time from Megatron's, which the layout
  // passed with.
  Decisions WithMegatronDims(const Decisions& decisions) const;
  // `decisions` (valid) moved to degree tuple `tuple`: the batch translated
  // (TranslateBatch), every other decision kept where it stays valid and
  // resampled uniformly where not.
  Decisions MoveToTuple(const Decisions& decisions, int tuple,
                        std::mt19937_64& rng) const;
  // Every degree tuple but `tuple`, nearest first by the squared distance of
  // their DegreeFeatures (and PoolFeatures in a disaggregated space; ties:
  // lower index first); only the nearest `limit` when limit >= 0 (a partial
  // sort). A joint space of more than kLargeJointSpace tuples lists only the
  // tuples that change one pool's layout or move both layouts to another
  // split of the same instance sizes.
  std::vector<int> NearestTuples(int tuple, int limit = -1) const;

  // Number of distinct valid plans (exact; may exceed 2^53 only as a double).
  double Size() const { return size_; }
  // Calls `fn(decisions)` for every valid plan in lexicographic order until it
  // returns false.
  template <typename Fn>
  void ForEach(Fn fn) const;

  // Problem-independent features of degree tuple i (log-scaled, roughly in [0,
  // 1]), kDegreeFeatures of them; for the RL policy. In a disaggregated space
  // they describe the decode instance (replicas: decode instances).
  static constexpr int kDegreeFeatures = 9;
  // See NearestTuples.
  static constexpr int kLargeJointSpace = 4096;
  std::array<float, kDegreeFeatures> DegreeFeatures(int i) const;
  // What only a disaggregated joint tuple has: the prefill instance's degrees
  // (log-scaled as above), its prefill instance count and the prefill pool's
  // share of the GPUs. All 0 for aggregated tuples.
  static constexpr int kPoolFeatures = 6;
  std::array<float, kPoolFeatures> PoolFeatures(int i) const;

 private:
  PlanSpace() = default;
  // An empty space of `model` (INTERNAL when the batch candidates do not fit
  // a 64-bit mask); Create* fill it.
  static absl::StatusOr<std::unique_ptr<PlanSpace>> NewEmpty(
      const simulator::CostModel& model);
  // The plan of degree tuple `tuple` with Megatron's operator dims and the
  // first batch choice (for checks that depend on the degrees only).
  simulator::PlanDims TuplePlan(int tuple) const;
  // Drops the degree tuples the workload's engine cannot launch (with no
  // engine named: that no engine can; simulator/engine_capability.h), judged
  // with Megatron's dims; SearchRun re-checks each evaluated plan, whose
  // batch-split attention can change that. FAILED_PRECONDITION naming the
  // engine and a rule when it drops every tuple. Aggregated spaces only
  // (CreateDisaggregated filters the pools' layouts as it builds them).
  absl::Status KeepTuplesTheEngineRuns();
  void ComputeSize();
  bool ForEachFrom(Decisions& d, int decision,
                   const std::function<bool(const Decisions&)>& fn) const;

  using OpMasks = std::array<uint64_t, simulator::kNumOpKinds>;
  // One pool instance's layout on its GPUs (replicas 1) and its masks:
  // decode layouts' batch choices, prefill layouts' prefill batches (bits
  // over kPrefillBatches).
  struct InstanceLayout {
    Degrees g;
    OpMasks ops{};
    uint64_t batches = 0;
  };
  // Disaggregated spaces: x prefill instances whose layouts are list
  // `prefill_list` of prefill_layouts_ and y decode instances whose layouts
  // are list `decode_list` of decode_layouts_ (one list per instance size,
  // or that list less the layouts the engine cannot run where this split
  // places the pool); its joint tuples are [first, first + prefill layouts x
  // decode layouts), prefill-major.
  struct PoolSplit {
    int prefill_instances = 0;
    int decode_instances = 0;
    int prefill_list = 0;
    int decode_list = 0;
    int64_t first = 0;
  };
  struct JointTuple {
    const PoolSplit* split;
    const InstanceLayout* prefill;
    const InstanceLayout* decode;
  };
  JointTuple Joint(int tuple) const;

  const simulator::CostModel* model_ = nullptr;
  std::vector<Degrees> degrees_;
  // Disaggregated spaces: the pools' layout lists (per instance size, then
  // the split-specific ones); the pool splits; the number of joint tuples.
  std::vector<std::vector<InstanceLayout>> prefill_layouts_, decode_layouts_;
  std::vector<PoolSplit> splits_;
  int64_t num_joint_tuples_ = 0;
  // Per degree tuple of an aggregated space: allowed dims per operator (bits
  // over ShardDim), allowed micro-batch multipliers, and allowed batch
  // choices per multiplier.
  std::vector<std::array<uint64_t, simulator::kNumOpKinds>> op_masks_;
  std::vector<uint64_t> micro_masks_;
  std::vector<std::array<uint64_t, kMicroBatchMultipliers.size()>> batch_masks_;
  double size_ = 0;
  bool disaggregated_ = false;
};

template <typename Fn>
void PlanSpace::ForEach(Fn fn) const {
  Decisions d{};
  ForEachFrom(d, 0, std::function<bool(const Decisions&)>(fn));
}

}  // namespace shardplan::policy

#endif  // SHARDPLAN_POLICY_PLAN_SPACE_H_
