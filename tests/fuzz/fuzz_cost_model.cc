// libFuzzer target, structured: the bytes choose a catalog model (optionally
// with a few dimensions changed), hardware, cluster shape, workload and a plan
// (degrees drawn from the divisors of the GPU count, per-operator dims,
// micro-batches, batch, stage split). Plans that pass CostModel::ValidatePlan
// are evaluated and checked against fuzz_check.h: finite, non-negative figures;
// feasible => throughput > 0, memory within capacity, SLOs met; the plan
// survives the proto round trip.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "proto/spec_text.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/cost_model.h"
#include "simulator/spec.h"
#include "simulator/types.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

namespace sim = shardplan::simulator;
namespace spec_text = shardplan::spec_text;
namespace v1 = shardplan::v1;

std::vector<int> Divisors(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

int PickDivisor(FuzzedDataProvider& fdp, int n) {
  const std::vector<int> divisors = Divisors(n);
  return divisors[fdp.ConsumeIntegralInRange<size_t>(0, divisors.size() - 1)];
}

const char* PickDtype(FuzzedDataProvider& fdp) {
  static const char* const kDtypes[] = {"", "bf16", "fp8", "fp4"};
  return kDtypes[fdp.ConsumeIntegralInRange<int>(0, 3)];
}

v1::ModelSpec PickModel(FuzzedDataProvider& fdp) {
  const std::vector<v1::ModelSpec>& models = sim::CatalogModels();
  v1::ModelSpec spec =
      models[fdp.ConsumeIntegralInRange<size_t>(0, models.size() - 1)];
  if (fdp.ConsumeBool()) {
    // Shrink or stretch the model; ProblemFromProto rejects inconsistent
    // results.
    spec.set_num_layers(fdp.ConsumeIntegralInRange<int>(1, 160));
    if (fdp.ConsumeBool())
      spec.set_first_k_dense_layers(fdp.ConsumeIntegralInRange<int>(0, 8));
    if (fdp.ConsumeBool() && spec.num_experts() > 0) {
      spec.set_num_experts(fdp.ConsumeIntegralInRange<int>(1, 512));
      spec.set_experts_per_token(
          fdp.ConsumeIntegralInRange<int>(1, std::max(1, spec.num_experts())));
    }
    if (fdp.ConsumeBool())
      spec.set_tie_word_embeddings(!spec.tie_word_embeddings());
  }
  return spec;
}

// A positive figure spanning many orders of magnitude (log-uniform),
// occasionally an extreme one; the spec validation decides what is acceptable.
double PickFigure(FuzzedDataProvider& fdp, double typical) {
  switch (fdp.ConsumeIntegralInRange<int>(0, 7)) {
    case 0:
      return fdp.ConsumeFloatingPoint<double>();  // anything, NaN and
                                                  // infinities included
    case 1:
      return std::pow(10.0, fdp.ConsumeFloatingPointInRange<double>(-320, 20));
    case 2:
      return 0;
    default:
      return typical *
             std::pow(10.0, fdp.ConsumeFloatingPointInRange<double>(-3, 3));
  }
}

// A custom hardware spec around `base`'s figures.
v1::HardwareSpec PickHardwareSpec(FuzzedDataProvider& fdp,
                                  const v1::HardwareSpec& base) {
  v1::HardwareSpec hw;
  hw.set_name("fuzz");
  hw.set_peak_bf16_flops_per_s(PickFigure(fdp, base.peak_bf16_flops_per_s()));
  hw.set_peak_fp8_flops_per_s(PickFigure(fdp, base.peak_fp8_flops_per_s()));
  hw.set_peak_fp4_flops_per_s(fdp.ConsumeBool() ? 0 : PickFigure(fdp, 4e15));
  hw.set_hbm_bytes(PickFigure(fdp, base.hbm_bytes()));
  hw.set_hbm_bytes_per_s(PickFigure(fdp, base.hbm_bytes_per_s()));
  hw.set_intra_node_bytes_per_s(PickFigure(fdp, base.intra_node_bytes_per_s()));
  hw.set_inter_node_bytes_per_s(PickFigure(fdp, base.inter_node_bytes_per_s()));
  hw.set_intra_node_latency_s(fdp.ConsumeBool() ? 0 : PickFigure(fdp, 5e-6));
  hw.set_inter_node_latency_s(fdp.ConsumeBool() ? 0 : PickFigure(fdp, 2e-5));
  return hw;
}

// A model of arbitrary (bounded) shape; the spec validation rejects
// inconsistent ones.
v1::ModelSpec PickCustomModel(FuzzedDataProvider& fdp) {
  v1::ModelSpec spec;
  spec.set_name("fuzz");
  spec.set_hidden_size(fdp.ConsumeIntegralInRange<int>(1, 32768));
  spec.set_num_layers(fdp.ConsumeIntegralInRange<int>(1, 256));
  spec.set_num_attention_heads(fdp.ConsumeIntegralInRange<int>(1, 256));
  spec.set_num_key_value_heads(fdp.ConsumeIntegralInRange<int>(0, 256));
  spec.set_head_dim(
      fdp.ConsumeBool() ? 0 : fdp.ConsumeIntegralInRange<int>(1, 512));
  spec.set_intermediate_size(fdp.ConsumeIntegralInRange<int>(0, 65536));
  spec.set_vocab_size(fdp.ConsumeIntegralInRange<int>(1, 300000));
  spec.set_tie_word_embeddings(fdp.ConsumeBool());
  if (fdp.ConsumeBool()) {
    spec.set_num_experts(fdp.ConsumeIntegralInRange<int>(1, 512));
    spec.set_experts_per_token(fdp.ConsumeIntegralInRange<int>(1, 16));
    spec.set_moe_intermediate_size(fdp.ConsumeIntegralInRange<int>(1, 8192));
    spec.set_num_shared_experts(fdp.ConsumeIntegralInRange<int>(0, 4));
    spec.set_first_k_dense_layers(fdp.ConsumeIntegralInRange<int>(0, 8));
  }
  if (fdp.ConsumeBool()) {
    spec.set_kv_lora_rank(fdp.ConsumeIntegralInRange<int>(1, 1024));
    spec.set_q_lora_rank(fdp.ConsumeIntegralInRange<int>(0, 2048));
    spec.set_qk_rope_head_dim(fdp.ConsumeIntegralInRange<int>(0, 128));
    spec.set_qk_nope_head_dim(fdp.ConsumeIntegralInRange<int>(0, 256));
    spec.set_v_head_dim(fdp.ConsumeIntegralInRange<int>(0, 256));
  }
  return spec;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);

  v1::ModelSource source;
  // Mode bits: custom model, custom hardware, large cluster.
  const uint8_t mode = fdp.ConsumeIntegral<uint8_t>();
  *source.mutable_spec() = (mode & 1) ? PickCustomModel(fdp) : PickModel(fdp);
  v1::ClusterSpec cluster;
  const std::vector<v1::HardwareSpec>& hardware = sim::CatalogHardware();
  const v1::HardwareSpec& base =
      hardware[fdp.ConsumeIntegralInRange<size_t>(0, hardware.size() - 1)];
  if (mode & 2) {
    *cluster.mutable_hardware_spec() = PickHardwareSpec(fdp, base);
  } else {
    cluster.set_hardware(base.name());
  }
  static const int kGpusPerNode[] = {1, 2, 4, 8, 16, 72};
  const int gpus_per_node = kGpusPerNode[fdp.ConsumeIntegralInRange<int>(0, 5)];
  const int nodes = fdp.ConsumeIntegralInRange<int>(1, (mode & 4) ? 1024 : 32);
  cluster.set_gpus_per_node(gpus_per_node);
  cluster.set_num_gpus(gpus_per_node * nodes);
  if (fdp.ConsumeBool() && nodes > 1) {
    const int first = fdp.ConsumeIntegralInRange<int>(1, nodes - 1);
    v1::NodeGroup* a = cluster.add_node_groups();
    a->set_name("rack-a");
    a->set_num_nodes(first);
    v1::NodeGroup* b = cluster.add_node_groups();
    b->set_name("rack-b");
    b->set_num_nodes(nodes - first);
  }

  v1::Workload workload;
  workload.set_input_tokens(fdp.ConsumeIntegralInRange<int>(1, 131072));
  workload.set_output_tokens(fdp.ConsumeIntegralInRange<int>(1, 16384));
  workload.set_concurrency(
      fdp.ConsumeBool() ? 0 : fdp.ConsumeIntegralInRange<int>(1, 4096));
  if (fdp.ConsumeBool())
    workload.set_max_ttft_ms(fdp.ConsumeFloatingPointInRange(0.001, 1e6));
  if (fdp.ConsumeBool())
    workload.set_max_tpot_ms(fdp.ConsumeFloatingPointInRange(0.001, 1e5));
  workload.set_weight_dtype(PickDtype(fdp));
  workload.set_kv_cache_dtype(PickDtype(fdp));

  absl::StatusOr<sim::Problem> problem =
      sim::ProblemFromProto(source, cluster, workload);
  if (!problem.ok()) return 0;
  auto model = sim::CostModel::Create(*problem);
  shardplan::fuzz::Require(
      model.ok(), "CostModel::Create on a problem ProblemFromProto accepted");

  const int gpus = problem->cluster.num_gpus;
  sim::PlanDims plan;
  plan.tp = PickDivisor(fdp, gpus);
  plan.pp = PickDivisor(fdp, gpus / plan.tp);
  plan.dp = gpus / plan.tp / plan.pp;
  plan.ep = fdp.ConsumeBool() ? 1 : PickDivisor(fdp, plan.dp * plan.tp);
  if (fdp.ConsumeBool()) {
    for (sim::ShardDim& dim : plan.dims) {
      dim = static_cast<sim::ShardDim>(
          fdp.ConsumeIntegralInRange<int>(0, sim::kNumShardDims - 1));
    }
  }
  plan.micro_batches =
      fdp.ConsumeBool() ? 0 : fdp.ConsumeIntegralInRange<int>(1, 2 * plan.pp);
  plan.batch_size = fdp.ConsumeBool() ? 0
                                      : fdp.ConsumeIntegralInRange<int>(
                                            1, sim::kMaxBatchSize);
  if (fdp.ConsumeBool() && plan.pp <= sim::kMaxPipelineStages) {
    // An explicit stage split: random cut points that add up to the layer
    // count.
    int left = problem->model.layers;
    plan.num_stage_layers = plan.pp;
    for (int s = 0; s < plan.pp; ++s) {
      const int rest = plan.pp - s - 1;
      const int n = rest == 0 ? left
                              : fdp.ConsumeIntegralInRange<int>(
                                    0, std::max(0, left - rest));
      plan.stage_layers[s] = static_cast<int16_t>(n);
      left -= n;
    }
  }
  if (!(*model)->ValidatePlan(plan).ok()) return 0;
  {
    v1::EvaluateRequest request;
    *request.mutable_model() = source;
    *request.mutable_cluster() = cluster;
    *request.mutable_workload() = workload;
    *request.mutable_plan() = sim::PlanToProto(plan, *problem);
    request.mutable_plan()->clear_placement();
    shardplan::fuzz::InputDescription() =
        spec_text::ToJson(request, /*pretty=*/false);
  }
  shardplan::fuzz::EvaluateAndCheck(**model, plan);
  return 0;
}
