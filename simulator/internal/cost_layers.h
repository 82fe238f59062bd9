// Internals of the cost model exposed to its tests: activation layouts, the one
// resharding rule table, and an inspector that lists the collectives one layer
// of a plan issues. Not part of the public API.
#ifndef SHARDPLAN_SIMULATOR_INTERNAL_COST_LAYERS_H_
#define SHARDPLAN_SIMULATOR_INTERNAL_COST_LAYERS_H_

#include <cstdint>
#include <vector>

#include "simulator/cost_model.h"
#include "simulator/types.h"

namespace shardplan::simulator::internal {

// How an activation tensor [tokens x features] is laid out over the ranks of a
// group.
enum class Layout : uint8_t {
  kFull = 0,      // every rank holds the whole tensor
  kFeatureSplit,  // each rank holds a slice of the features (heads, hidden,
                  // vocab)
  kPartialSum,    // each rank holds a partial sum of the whole tensor
  kTokenSplit,  // each rank holds a slice of the tokens (requests or sequence)
};

enum class Collective : uint8_t {
  kNone = 0,
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kPointToPoint,
};

// THE resharding rule table (GSPMD/Alpa style): the collective that turns an
// activation in layout `from` into layout `to`. `matching_split` says a
// FeatureSplit producer's split is the one the FeatureSplit consumer expects
// (column feeding row, qkv heads feeding attention heads); then no
// communication is needed.
// Inline: the operator pass asks for every operator of every evaluation.
inline Collective TransitionCollective(Layout from, Layout to,
                                       bool matching_split) {
  constexpr Collective kNone = Collective::kNone,
                       kGather = Collective::kAllGather,
                       kReduce = Collective::kAllReduce,
                       kScatter = Collective::kReduceScatter,
                       kToAll = Collective::kAllToAll;
  // [from][to], in Layout's order: Full, FeatureSplit, PartialSum, TokenSplit.
  // From Full every target is a local slice (or the tensor itself); a feature
  // slice is a valid partial sum (zero elsewhere).
  static constexpr Collective kRules[4][4] = {
      {kNone, kNone, kNone, kNone},
      {kGather, kGather, kNone, kToAll},
      {kReduce, kScatter, kNone, kScatter},
      {kGather, kToAll, kGather, kNone},
  };
  if (from == Layout::kFeatureSplit && to == Layout::kFeatureSplit &&
      matching_split) {
    return kNone;
  }
  return kRules[static_cast<int>(from)][static_cast<int>(to)];
}

// Input and output layout of operator `op` sharded along `dim`, in `decode` or
// prefill.
struct OpLayouts {
  Layout in;
  Layout out;
};
// Inline: the operator pass asks for every operator of every evaluation.
inline OpLayouts OperatorLayouts(OpKind op, ShardDim dim, bool decode) {
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

// One collective a layer issues: which operator's input/output it serves, its
// kind, the logical tensor size in bytes (the whole tensor for
// all-reduce/all-gather/reduce-scatter, the bytes each rank holds for
// all-to-all and point-to-point) and the group size.
struct CollectiveRecord {
  OpKind op;
  Collective kind;
  double bytes;
  int group_size;
};

class CostModelInspector {
 public:
  // The collectives of one transformer layer (dense when `moe_layer` is false)
  // of `plan` for `tokens` tokens per replica micro-batch, in decode (`decode`)
  // or prefill, in program order. The residual stream enters in its
  // steady-state layout. Test helper: allocates.
  static std::vector<CollectiveRecord> LayerCollectives(const CostModel& model,
                                                        const PlanDims& plan,
                                                        bool moe_layer,
                                                        bool decode,
                                                        int tokens);
  // The operators a pass of `plan` (the dense layer, the MoE layer, the
  // embedding and the LM head, each in decode and prefill, `tokens` tokens)
  // charges outside the range its result declares (LayerResult::first_op,
  // last_op), each once: the breakdown sums skip those, so this is empty.
  static std::vector<OpKind> ChargedOutsideDeclaredRange(const CostModel& model,
                                                         const PlanDims& plan,
                                                         int tokens);
};

}  // namespace shardplan::simulator::internal

#endif  // SHARDPLAN_SIMULATOR_INTERNAL_COST_LAYERS_H_
