// Plan rules: the structural validity of a plan for a problem (degrees,
// divisibility, the dims each operator allows, stage split, batch).
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "proto/status_macros.h"
#include "simulator/cost_model.h"
#include "simulator/disaggregated.h"
#include "simulator/internal/pool_costing.h"
#include "simulator/types.h"

namespace shardplan::simulator {

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
  if (plan.batch_size < 0 || plan.batch_size > kMaxRequestsInFlight) {
    return absl::InvalidArgumentError(
        absl::StrFormat("plan.batch_size must be in [0, %d], got %d",
                        kMaxRequestsInFlight, plan.batch_size));
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

}  // namespace shardplan::simulator::internal
