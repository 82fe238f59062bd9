// Compact -> proto: the resolved model, the normalised plan with its
// placement, the prediction (simulator/spec_to_proto.h).
#include "simulator/spec_to_proto.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "proto/limits.h"
#include "simulator/calibration.h"
#include "simulator/disaggregated.h"
#include "simulator/engine_capability.h"
#include "simulator/placement.h"
#include "simulator/spec_from_proto.h"
#include "simulator/traffic_spec.h"
#include "simulator/user_text.h"

namespace shardplan::simulator {
namespace {

using ::shardplan::limits::kMaxPlacementEntries;
using ::shardplan::v1::ModelSpec;
using ::shardplan::v1::Plan;
using ::shardplan::v1::Prediction;

}  // namespace

ModelSpec ModelSpecFromDims(const ModelDims& m) {
  ModelSpec spec;
  spec.set_name(m.name);
  spec.set_family(m.family);
  spec.set_hugging_face_id(m.hugging_face_id);
  spec.set_nvfp4_hugging_face_id(m.nvfp4_hugging_face_id);
  spec.set_native_dtype(std::string(DtypeName(m.native_dtype)));
  spec.set_hidden_size(m.hidden);
  spec.set_num_layers(m.layers);
  spec.set_num_attention_heads(m.heads);
  spec.set_num_key_value_heads(m.kv_heads);
  spec.set_head_dim(m.head_dim);
  spec.set_intermediate_size(m.intermediate);
  spec.set_vocab_size(m.vocab);
  spec.set_tie_word_embeddings(m.tie_embeddings);
  spec.set_num_experts(m.experts);
  spec.set_experts_per_token(m.experts_per_token);
  spec.set_moe_intermediate_size(m.moe_intermediate);
  spec.set_num_shared_experts(m.shared_experts);
  spec.set_first_k_dense_layers(m.first_k_dense);
  spec.set_kv_lora_rank(m.kv_lora_rank);
  spec.set_q_lora_rank(m.q_lora_rank);
  spec.set_qk_rope_head_dim(m.qk_rope_head_dim);
  spec.set_qk_nope_head_dim(m.qk_nope_head_dim);
  spec.set_v_head_dim(m.v_head_dim);
  spec.set_full_attention_interval(m.full_attention_interval);
  spec.set_linear_num_key_heads(m.linear_num_key_heads);
  spec.set_linear_num_value_heads(m.linear_num_value_heads);
  spec.set_linear_key_head_dim(m.linear_key_head_dim);
  spec.set_linear_value_head_dim(m.linear_value_head_dim);
  spec.set_linear_conv_kernel_dim(m.linear_conv_kernel_dim);
  spec.set_attention_output_gate(m.attention_output_gate);
  spec.set_index_topk(m.index_topk);
  spec.set_index_n_heads(m.index_n_heads);
  spec.set_index_head_dim(m.index_head_dim);
  return spec;
}

namespace {

// The degrees, every operator's dim, stage split, micro-batches and batch of
// one layout, exactly as in `plan` (0 = default).
Plan LayoutToProto(const PlanDims& plan) {
  Plan out;
  out.set_replicas(plan.replicas);
  out.set_dp(plan.dp);
  out.set_tp(plan.tp);
  out.set_pp(plan.pp);
  out.set_ep(plan.ep);
  for (int k = 0; k < kNumOpKinds; ++k) {
    shardplan::v1::OperatorSharding* entry = out.add_operator_sharding();
    entry->set_operator_(std::string(OpKindName(static_cast<OpKind>(k))));
    entry->set_dim(std::string(ShardDimName(plan.dims[k])));
  }
  // Stage split, micro-batches and batch size exactly as in `plan` (0 =
  // default), so that PlanDimsFromProto(PlanToProto(plan)) == plan; the
  // prediction carries the batch used.
  const int num_stage_layers =
      std::clamp(plan.num_stage_layers, 0, kMaxPipelineStages);
  for (int s = 0; s < num_stage_layers; ++s) {
    out.add_stage_layers(plan.stage_layers[s]);
  }
  out.set_micro_batches(plan.micro_batches);
  out.set_batch_size(plan.batch_size);
  return out;
}

// Lists which nodes hold each stage of each replica of `plan` (aggregated
// fields), its first replica at global rank `pool_first_rank` (a pool of a
// disaggregated plan starts where simulator/placement.h puts it).
void AddPlacement(const PlanDims& plan, const Problem& problem,
                  int64_t pool_first_rank, Plan* out) {
  const int pp = std::max(1, plan.pp);

  // Placement (simulator/placement.h): which node holds which rank.
  const PlanPlacement placement =
      PlacePlan(plan, problem.cluster, problem.model.is_moe());
  const int layers = problem.model.layers;
  std::vector<int> stage_layers(pp);
  for (int s = 0; s < pp; ++s) {
    stage_layers[s] = StageLayerCount(plan, layers, s);
  }
  // Node index -> group name, by consecutive node counts.
  auto group_of = [&problem](int64_t node) -> std::string {
    int64_t first = 0;
    for (const NodeGroupDims& g : problem.cluster.node_groups) {
      if (node < first + g.num_nodes) return g.name;
      first += g.num_nodes;
    }
    return "";
  };
  int entries = 0;
  for (int r = 0; r < placement.replicas && entries < kMaxPlacementEntries;
       ++r) {
    int first_layer = 0;
    for (int s = 0; s < pp && entries < kMaxPlacementEntries; ++s, ++entries) {
      shardplan::v1::StagePlacement* p = out->add_placement();
      p->set_replica(r);
      p->set_stage(s);
      p->set_first_layer(first_layer);
      p->set_num_layers(stage_layers[s]);
      first_layer += stage_layers[s];
      const int64_t first_rank =
          pool_first_rank + StageFirstRank(placement, pp, r, s);
      const int64_t last_rank = first_rank + placement.stage_size - 1;
      const int64_t first_node = NodeOfRank(problem.cluster, first_rank);
      const int64_t last_node = NodeOfRank(problem.cluster, last_rank);
      std::vector<std::string> groups;
      int64_t node_first_rank = first_rank;
      while (node_first_rank > 0 &&
             NodeOfRank(problem.cluster, node_first_rank - 1) == first_node) {
        --node_first_rank;
      }
      p->set_first_gpu(static_cast<int32_t>(first_rank - node_first_rank));
      int64_t rank = first_rank;
      for (int64_t n = first_node; n <= last_node; ++n) {
        p->add_nodes(static_cast<int32_t>(n));
        int32_t on_node = 0;
        for (; rank <= last_rank && NodeOfRank(problem.cluster, rank) == n;
             ++rank) {
          ++on_node;
        }
        p->add_node_gpus(on_node);
        std::string g = group_of(n);
        if (!g.empty() &&
            std::find(groups.begin(), groups.end(), g) == groups.end()) {
          groups.push_back(std::move(g));
        }
      }
      p->set_node_group(absl::StrJoin(groups, "+"));
      // This stage's own tp groups (with node groups of different sizes,
      // some replicas keep theirs inside a node and others do not). What
      // spans is the link domain: on an NVL72 rack a group over several
      // trays of one NVLink domain stays on NVLink, not InfiniBand.
      const int64_t tp = std::max(1, plan.tp);
      bool tp_spans = false;
      for (int64_t g = first_rank; g <= last_rank && !tp_spans; g += tp) {
        tp_spans = LinkDomainOfRank(problem.cluster, g) !=
                   LinkDomainOfRank(problem.cluster, g + tp - 1);
      }
      p->set_tp_spans_nodes(tp_spans);
      p->set_expert_domain_spans_nodes(
          problem.model.is_moe() &&
          LinkDomainOfRank(problem.cluster, first_rank) !=
              LinkDomainOfRank(problem.cluster, last_rank));
    }
  }
}

}  // namespace

Plan PlanToProto(const PlanDims& plan, const Problem& problem) {
  if (plan.disaggregated) {
    // Each pool's sub-plan is one instance, its replicas the instance count;
    // its placement lists the nodes of every instance of the pool.
    Plan out;
    *out.mutable_prefill() = LayoutToProto(PrefillInstancePlan(plan));
    out.mutable_prefill()->set_replicas(plan.prefill_instances);
    *out.mutable_decode() = LayoutToProto(DecodeInstancePlan(plan));
    out.mutable_decode()->set_replicas(plan.decode_instances);
    out.set_prefill_instances(plan.prefill_instances);
    out.set_decode_instances(plan.decode_instances);
    PlanDims prefill = PrefillInstancePlan(plan);
    prefill.replicas = std::max(1, plan.prefill_instances);
    AddPlacement(prefill, problem, PrefillPoolFirstRank(plan, problem.cluster),
                 out.mutable_prefill());
    PlanDims decode = DecodeInstancePlan(plan);
    decode.replicas = std::max(1, plan.decode_instances);
    AddPlacement(decode, problem, DecodePoolFirstRank(plan, problem.cluster),
                 out.mutable_decode());
    return out;
  }
  Plan out = LayoutToProto(plan);
  AddPlacement(plan, problem, 0, &out);
  return out;
}

namespace {

void SetRange(double value, double low_ratio, double high_ratio,
              shardplan::v1::Range* range) {
  range->set_low(value * low_ratio);
  range->set_high(value * high_ratio);
}

}  // namespace

namespace {

// The pools, the KV transfer and the prefill queue of a disaggregated plan.
void AddDisaggregatedPrediction(const Evaluation& e, Prediction* out) {
  out->set_disaggregated(true);
  shardplan::v1::PoolPrediction* prefill = out->mutable_prefill_pool();
  prefill->set_requests_per_s(e.prefill_requests_per_s);
  prefill->set_batch_size(e.prefill_batch_size);
  // A prefill pass holds its batch on every attention rank.
  prefill->set_batch_per_rank(e.prefill_batch_size);
  prefill->set_seconds(e.prefill_seconds);
  prefill->set_instances(e.prefill_instances);
  prefill->set_gpus_per_instance(e.prefill_instance_gpus);
  shardplan::v1::MemoryBreakdown* pm = prefill->mutable_memory_per_gpu();
  pm->set_weights_bytes(e.prefill_weights_bytes);
  pm->set_kv_cache_bytes(e.prefill_kv_cache_bytes);
  pm->set_activations_bytes(e.prefill_activations_bytes);
  pm->set_total_bytes(e.prefill_weights_bytes + e.prefill_kv_cache_bytes +
                      e.prefill_activations_bytes);
  pm->set_capacity_bytes(e.capacity_bytes);
  shardplan::v1::PoolPrediction* decode = out->mutable_decode_pool();
  decode->set_requests_per_s(e.decode_requests_per_s);
  decode->set_batch_size(e.batch_size);
  decode->set_batch_per_rank(e.batch_per_rank);
  decode->set_seconds(e.decode_iteration_seconds);
  decode->set_instances(e.decode_instances);
  decode->set_gpus_per_instance(e.decode_instance_gpus);
  *decode->mutable_memory_per_gpu() = out->memory_per_gpu();
  out->set_kv_transfer_bytes(e.kv_transfer_bytes);
  out->set_kv_transfer_ms(e.kv_transfer_seconds * 1e3);
  out->set_kv_transfer_link(e.kv_transfer_inter_node ? "infiniband" : "nvlink");
  out->set_prefill_queue_ms(e.prefill_queue_seconds * 1e3);
  out->set_prefill_utilization(e.prefill_utilization);
  if (e.kv_transfer_inter_node && e.kv_transfer_nvlink_share > 0) {
    out->add_cross_node(absl::StrFormat(
        "KV cache transfer: %.0f%% of the prefill-decode instance pairs on "
        "separate nodes (InfiniBand), the rest inside a node (NVLink)",
        100 * (1 - e.kv_transfer_nvlink_share)));
  } else if (e.kv_transfer_inter_node) {
    out->add_cross_node(
        "KV cache transfer: every prefill-decode instance pair crosses nodes "
        "(InfiniBand)");
  }
}

}  // namespace

Prediction PredictionToProto(const Evaluation& e, const Problem& problem) {
  Prediction out;
  // Error bars: computed here, for the predictions a client sees, and never in
  // Evaluate (which stays allocation-free).
  const BandRegime regime = RegimeOf(e, problem);
  PredictionBand band = FindPredictionBand(regime);
  out.set_calibration_profile(
      regime.profile.empty() ? kEngineAgnosticProfileName : regime.profile);
  SetRange(e.ttft_seconds * 1e3, band.ttft_low, band.ttft_high,
           out.mutable_ttft_ms_range());
  SetRange(e.tpot_seconds * 1e3, band.tpot_low, band.tpot_high,
           out.mutable_tpot_ms_range());
  // Throughput is batch / TPOT at a fixed batch: its band is TPOT's inverted.
  SetRange(e.output_tokens_per_s, 1.0 / band.tpot_high, 1.0 / band.tpot_low,
           out.mutable_output_tokens_per_s_range());
  for (std::string& note : band.notes) out.add_validation(std::move(note));
  if (!problem.workload.engine_version.empty()) {
    out.add_validation(absl::StrCat(
        "engine_version ", QuoteUserText(problem.workload.engine_version),
        " recorded; profiles are per engine, not per version"));
  }
  out.set_feasible(e.feasible);
  if (!e.feasible) out.set_infeasible_reason(InfeasibleReasonText(e));
  out.set_output_tokens_per_s(e.output_tokens_per_s);
  out.set_output_tokens_per_s_per_gpu(e.output_tokens_per_s_per_gpu);
  out.set_ttft_ms(e.ttft_seconds * 1e3);
  out.set_tpot_ms(e.tpot_seconds * 1e3);
  out.set_batch_size(e.batch_size);
  out.set_batch_per_rank(e.batch_per_rank);
  out.set_running_batch_size(e.running_batch);
  out.set_queued_requests(e.queued_requests);
  out.set_queue_wait_ms(e.queue_wait_seconds * 1e3);
  if (e.queued_requests > 0) {
    out.add_validation(absl::StrFormat(
        "KV cache holds %d of %d requests per replica: %d wait in the "
        "engine's queue (+%.0f ms TTFT, Little's law over a closed loop); "
        "%s the running batch's",
        e.running_batch, e.batch_size, e.queued_requests,
        e.queue_wait_seconds * 1e3,
        e.preemption_wait_seconds > 0 ? "throughput is"
                                      : "throughput and TPOT are"));
    if (e.preemption_wait_seconds > 0) {
      out.add_validation(absl::StrFormat(
          "the engine allocates KV cache as tokens are generated: running "
          "requests are preempted and recomputed, so %.0f ms of the wait "
          "falls after the first token (TPOT %.1f ms instead of the running "
          "batch's %.1f ms)",
          e.preemption_wait_seconds * 1e3, e.tpot_seconds * 1e3,
          e.decode_iteration_seconds * 1e3));
    }
  }
  shardplan::v1::MemoryBreakdown* memory = out.mutable_memory_per_gpu();
  memory->set_weights_bytes(e.weights_bytes);
  memory->set_kv_cache_bytes(e.kv_cache_bytes);
  memory->set_activations_bytes(e.activations_bytes);
  memory->set_total_bytes(e.weights_bytes + e.kv_cache_bytes +
                          e.activations_bytes);
  memory->set_capacity_bytes(e.capacity_bytes);
  const struct {
    const char* phase;
    const std::array<OpCost, kNumOpKinds>* costs;
  } phases[] = {{"decode", &e.decode}, {"prefill", &e.prefill}};
  for (const auto& phase : phases) {
    for (int k = 0; k < kNumOpKinds; ++k) {
      const OpCost& c = (*phase.costs)[k];
      if (c.compute_seconds == 0 && c.memory_seconds == 0 &&
          c.comm_seconds == 0)
        continue;
      shardplan::v1::OperatorCost* op = out.add_operators();
      op->set_operator_(std::string(OpKindName(static_cast<OpKind>(k))));
      op->set_phase(phase.phase);
      op->set_compute_seconds(c.compute_seconds);
      op->set_memory_seconds(c.memory_seconds);
      op->set_communication_seconds(c.comm_seconds);
      op->set_total_seconds(
          static_cast<double>(std::max(c.compute_seconds, c.memory_seconds)) +
          c.comm_seconds);
    }
  }
  shardplan::v1::LinkTraffic* nvlink = out.add_communication();
  nvlink->set_link("nvlink");
  nvlink->set_decode_bytes(e.nvlink_decode_bytes);
  nvlink->set_prefill_bytes(e.nvlink_prefill_bytes);
  shardplan::v1::LinkTraffic* ib = out.add_communication();
  ib->set_link("infiniband");
  ib->set_decode_bytes(e.ib_decode_bytes);
  ib->set_prefill_bytes(e.ib_prefill_bytes);
  if (e.bottleneck == Bottleneck::kPipeline) {
    out.set_bottleneck(std::string(BottleneckName(e.bottleneck)));
  } else {
    out.set_bottleneck(absl::StrCat(BottleneckName(e.bottleneck), " (",
                                    OpKindName(e.bottleneck_op), ")"));
  }
  out.set_prefill_seconds(e.prefill_seconds);
  out.set_decode_iteration_seconds(e.decode_iteration_seconds);
  // Placement counts NVLink domains; they are nodes except on NVL72 racks.
  const bool racks =
      problem.cluster.nvlink_domain_gpus > problem.cluster.gpus_per_node;
  const char* unit = racks ? " NVLink domains" : " nodes";
  if (e.tp_nodes > 1) {
    out.add_cross_node(
        absl::StrCat("tensor parallel: a tp group over ", e.tp_nodes, unit));
  }
  if (e.ep_nodes > 1) {
    out.add_cross_node(absl::StrCat(
        "expert dispatch/combine: an expert domain over ", e.ep_nodes, unit));
  }
  if (e.pipeline_crosses_nodes) {
    out.add_cross_node(
        absl::StrCat("pipeline: stage-to-stage sends between", unit));
  }
  if (e.replica_nodes > 1) {
    const std::vector<int>& sizes = problem.cluster.node_gpus;
    const double node_bytes =
        e.capacity_bytes *
        std::max(1, sizes.empty()
                        ? problem.cluster.gpus_per_node
                        : *std::max_element(sizes.begin(), sizes.end()));
    const double weight_bytes = problem.model.TotalParams() *
                                BytesPerElement(problem.workload.weight_dtype);
    out.set_multi_node_reason(
        weight_bytes > node_bytes
            ? absl::StrFormat("one replica spans %d nodes: its weights "
                              "(%.1f GB) do not fit one node (%.1f GB usable)",
                              e.replica_nodes, weight_bytes / 1e9,
                              node_bytes / 1e9)
            : absl::StrFormat(
                  "one replica spans %d nodes although its weights (%.1f GB) "
                  "fit one node (%.1f GB usable): chosen for KV-cache room or "
                  "speed",
                  e.replica_nodes, weight_bytes / 1e9, node_bytes / 1e9));
  }
  if (e.disaggregated) AddDisaggregatedPrediction(e, &out);
  return out;
}

void AnnotateEngineCapability(const Problem& problem, const PlanDims& plan,
                              shardplan::v1::Prediction* prediction) {
  prediction->clear_runnable_engines();
  for (const std::string& engine : RunnableEngines(problem, plan)) {
    prediction->add_runnable_engines(engine);
  }
  const WorkloadDims& w = problem.workload;
  if (w.engine.empty()) return;
  const absl::Status status =
      CheckEngineCanRun(w.engine, w.engine_version, problem, plan);
  if (status.ok()) return;
  prediction->set_feasible(false);
  prediction->set_infeasible_reason(std::string(status.message()));
}

}  // namespace shardplan::simulator
