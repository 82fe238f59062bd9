// Workload -> WorkloadDims, the whole Problem, and Plan -> PlanDims, validated
// (simulator/spec_from_proto.h).
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "proto/limits.h"
#include "proto/status_macros.h"
#include "simulator/calibration.h"
#include "simulator/disaggregated.h"
#include "simulator/engine_capability.h"
#include "simulator/internal/spec_checks.h"
#include "simulator/spec_from_proto.h"
#include "simulator/traffic_spec.h"
#include "simulator/user_text.h"

namespace shardplan::simulator {
namespace {

using internal::CheckDouble;
using internal::CheckRange;
using ::shardplan::limits::kMaxDegree;
using ::shardplan::limits::kMaxMicroBatches;
using ::shardplan::limits::kMaxSloMs;
using ::shardplan::limits::kMaxStageLayers;
using ::shardplan::limits::kMaxTokens;
using ::shardplan::v1::ModelSource;
using ::shardplan::v1::ModelSpec;
using ::shardplan::v1::Plan;
using ::shardplan::v1::Workload;

}  // namespace

namespace {

// Engine and calibration profile of a workload -> the profile's name. An
// explicit profile wins; it must then be one for the named engine (a vLLM
// deployment predicted with SGLang's constants is a mistake, not a choice).
absl::StatusOr<std::string> ResolveCalibrationProfile(
    const Workload& workload) {
  std::vector<std::string> engines;
  for (const CalibrationProfile& p : CalibrationProfiles()) {
    if (std::find(engines.begin(), engines.end(), p.engine) == engines.end()) {
      engines.push_back(p.engine);
    }
  }
  const std::string& engine = workload.engine();
  if (!engine.empty() &&
      std::find(engines.begin(), engines.end(), engine) == engines.end()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "workload.engine must be one of %s (or empty: engine-agnostic), got "
        "%s",
        absl::StrJoin(engines, ", "), QuoteUserText(engine)));
  }
  // Bounded like any other user text; read by the capability rules.
  if (workload.engine_version().size() > 64) {
    return absl::InvalidArgumentError(absl::StrCat(
        "workload.engine_version must be at most 64 characters, got ",
        workload.engine_version().size()));
  }
  RETURN_IF_ERROR(ValidateEngineVersion(workload.engine_version(),
                                        "workload.engine_version"));
  const std::string& name = workload.calibration_profile();
  if (name.empty()) {
    // Engine-agnostic: "" (the engine-agnostic profile, and the error bars
    // say the engine was not named).
    if (engine.empty()) return std::string();
    for (const CalibrationProfile& p : CalibrationProfiles()) {
      if (p.engine == engine) return p.name;
    }
  }
  if (name == kEngineAgnosticProfileName) {
    if (!engine.empty()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "workload.calibration_profile %s is the engine-agnostic profile, but "
          "workload.engine is %s (leave one of them empty)",
          QuoteUserText(name), QuoteUserText(engine)));
    }
    return std::string();
  }
  for (const CalibrationProfile& p : CalibrationProfiles()) {
    if (p.name != name) continue;
    if (!engine.empty() && p.engine != engine) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "workload.calibration_profile %s is for engine %s, but "
          "workload.engine is %s",
          QuoteUserText(name), p.engine, QuoteUserText(engine)));
    }
    return p.name;
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "workload.calibration_profile %s is not a known profile; known: %s",
      QuoteUserText(name), absl::StrJoin(BuiltInProfileNames(), ", ")));
}

}  // namespace

absl::StatusOr<WorkloadDims> WorkloadDimsFromProto(const Workload& workload) {
  WorkloadDims w;
  // A length distribution without the mean length: its mean.
  const auto mean_or = [](int tokens,
                          const shardplan::v1::TokenDistribution& d) {
    const double mean = DistributionMean(d);
    return tokens == 0 && std::isfinite(mean) && mean >= 1 && mean <= kMaxTokens
               ? static_cast<int>(std::lround(mean))
               : tokens;
  };
  const int input_tokens =
      mean_or(workload.input_tokens(), workload.input_tokens_distribution());
  const int output_tokens =
      mean_or(workload.output_tokens(), workload.output_tokens_distribution());
  RETURN_IF_ERROR(
      CheckRange(input_tokens, "workload.input_tokens", 1, kMaxTokens));
  RETURN_IF_ERROR(
      CheckRange(output_tokens, "workload.output_tokens", 1, kMaxTokens));
  RETURN_IF_ERROR(CheckRange(workload.concurrency(), "workload.concurrency", 0,
                             kMaxRequestsInFlight));
  RETURN_IF_ERROR(CheckDouble(workload.max_ttft_ms(), "workload.max_ttft_ms", 0,
                              kMaxSloMs, false));
  RETURN_IF_ERROR(CheckDouble(workload.max_tpot_ms(), "workload.max_tpot_ms", 0,
                              kMaxSloMs, false));
  w.input_tokens = input_tokens;
  w.output_tokens = output_tokens;
  w.concurrency = workload.concurrency();
  ASSIGN_OR_RETURN(w.traffic, TrafficDimsFromProto(workload, input_tokens,
                                                   output_tokens, kMaxTokens));
  w.max_ttft_seconds = workload.max_ttft_ms() / 1e3;
  w.max_tpot_seconds = workload.max_tpot_ms() / 1e3;
  ASSIGN_OR_RETURN(w.weight_dtype, ParseDtype(workload.weight_dtype(),
                                              "workload.weight_dtype"));
  ASSIGN_OR_RETURN(w.kv_cache_dtype, ParseDtype(workload.kv_cache_dtype(),
                                                "workload.kv_cache_dtype"));
  ASSIGN_OR_RETURN(w.calibration_profile, ResolveCalibrationProfile(workload));
  w.engine = workload.engine();
  w.engine_version = workload.engine_version();
  // shardplan's TensorRT-LLM launches run postprocess workers
  // (client/engines/trtllm.yaml), so the prediction spends the per-request
  // time of a server built that way.
  w.detokenises_off_executor = w.engine == "trtllm";
  return w;
}

absl::StatusOr<Problem> ProblemFromProto(
    const ModelSource& model, const shardplan::v1::ClusterSpec& cluster,
    const Workload& workload) {
  Problem p;
  ASSIGN_OR_RETURN(const ModelSpec spec, ResolveModel(model));
  const char* prefix = model.source_case() == ModelSource::kSpec ? "model.spec"
                       : model.source_case() == ModelSource::kHfConfigJson
                           ? "model.hf_config_json"
                           : "model.catalog_name";
  ASSIGN_OR_RETURN(p.model, ModelDimsFromSpec(spec, prefix));
  ASSIGN_OR_RETURN(p.cluster, ClusterDimsFromProto(cluster));
  ASSIGN_OR_RETURN(p.workload, WorkloadDimsFromProto(workload));
  // Size the plan for the weights an engine will load: a request that does not
  // name a weight dtype gets the checkpoint's (FP8 for DeepSeek-V3, MXFP4 for
  // gpt-oss), not bf16 — that would plan for 2-4x the weight memory.
  if (workload.weight_dtype().empty()) {
    p.workload.weight_dtype = p.model.native_dtype;
  }
  return p;
}

namespace {

// One layout (an aggregated plan, or one instance of a disaggregated plan's
// pool) under the field path `path` ("plan", "plan.decode").
absl::StatusOr<PlanDims> LayoutFromProto(const Plan& plan,
                                         absl::string_view path) {
  PlanDims d;
  const std::string replicas_path = absl::StrCat(path, ".replicas");
  const std::string dp_path = absl::StrCat(path, ".dp");
  const std::string tp_path = absl::StrCat(path, ".tp");
  const std::string pp_path = absl::StrCat(path, ".pp");
  const std::string ep_path = absl::StrCat(path, ".ep");
  const struct {
    const std::string& path;
    int value;
    int* out;
  } degrees[] = {{replicas_path, plan.replicas(), &d.replicas},
                 {dp_path, plan.dp(), &d.dp},
                 {tp_path, plan.tp(), &d.tp},
                 {pp_path, plan.pp(), &d.pp},
                 {ep_path, plan.ep(), &d.ep}};
  for (const auto& degree : degrees) {
    RETURN_IF_ERROR(CheckRange(degree.value, degree.path, 0, kMaxDegree));
    *degree.out = degree.value == 0 ? 1 : degree.value;  // 0 = unset = 1
  }
  d.dims = MegatronShardDims();
  int seen_at[kNumOpKinds];
  std::fill(seen_at, seen_at + kNumOpKinds, -1);
  for (int i = 0; i < plan.operator_sharding_size(); ++i) {
    const shardplan::v1::OperatorSharding& entry = plan.operator_sharding(i);
    const std::string at = absl::StrCat(path, ".operator_sharding[", i, "]");
    ASSIGN_OR_RETURN(const OpKind op,
                     ParseOpKind(entry.operator_(), at + ".operator"));
    ASSIGN_OR_RETURN(const ShardDim dim,
                     ParseShardDim(entry.dim(), at + ".dim"));
    const int k = static_cast<int>(op);
    if (seen_at[k] >= 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s.operator: duplicate operator \"%s\" (also at [%d])", at,
          OpKindName(op), seen_at[k]));
    }
    seen_at[k] = i;
    d.dims[k] = dim;
  }
  if (plan.stage_layers_size() > kMaxPipelineStages) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".stage_layers has ", plan.stage_layers_size(),
                     " entries, at most ", kMaxPipelineStages));
  }
  for (int i = 0; i < plan.stage_layers_size(); ++i) {
    RETURN_IF_ERROR(CheckRange(plan.stage_layers(i),
                               absl::StrCat(path, ".stage_layers[", i, "]"), 1,
                               kMaxStageLayers));
    d.stage_layers[i] = static_cast<int16_t>(plan.stage_layers(i));
  }
  d.num_stage_layers = plan.stage_layers_size();
  RETURN_IF_ERROR(CheckRange(plan.micro_batches(),
                             absl::StrCat(path, ".micro_batches"), 0,
                             kMaxMicroBatches));
  RETURN_IF_ERROR(CheckRange(plan.batch_size(),
                             absl::StrCat(path, ".batch_size"), 0,
                             kMaxRequestsInFlight));
  d.micro_batches = plan.micro_batches();
  d.batch_size = plan.batch_size();
  return d;
}

// A pool's instance count: `instances` when set, else the sub-plan's
// replicas, else 1; the sub-plan's replicas must then be 0 or the count.
absl::StatusOr<int> PoolInstances(int instances, const Plan& sub,
                                  absl::string_view instances_path,
                                  absl::string_view sub_path) {
  RETURN_IF_ERROR(CheckRange(instances, instances_path, 0, kMaxDegree));
  RETURN_IF_ERROR(CheckRange(
      sub.replicas(), absl::StrCat(sub_path, ".replicas"), 0, kMaxDegree));
  const int n =
      instances > 0 ? instances : (sub.replicas() > 0 ? sub.replicas() : 1);
  if (sub.replicas() != 0 && sub.replicas() != n) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s.replicas must be 0 or %s (%d), got %d", sub_path,
                        instances_path, n, sub.replicas()));
  }
  return n;
}

}  // namespace

absl::StatusOr<PlanDims> PlanDimsFromProto(const Plan& plan) {
  if (!plan.has_prefill() && !plan.has_decode()) {
    if (plan.prefill_instances() != 0 || plan.decode_instances() != 0) {
      return absl::InvalidArgumentError(
          "plan.prefill_instances and plan.decode_instances need plan.prefill "
          "and plan.decode");
    }
    return LayoutFromProto(plan, "plan");
  }
  if (!plan.has_prefill() || !plan.has_decode()) {
    return absl::InvalidArgumentError(
        absl::StrCat("plan.", plan.has_prefill() ? "decode" : "prefill",
                     " must be set too: a disaggregated plan has both pools"));
  }
  if (plan.prefill().has_prefill() || plan.prefill().has_decode() ||
      plan.decode().has_prefill() || plan.decode().has_decode()) {
    return absl::InvalidArgumentError(
        "plan.prefill and plan.decode must not nest further pools");
  }
  ASSIGN_OR_RETURN(PlanDims d, LayoutFromProto(plan.decode(), "plan.decode"));
  ASSIGN_OR_RETURN(const PlanDims pre,
                   LayoutFromProto(plan.prefill(), "plan.prefill"));
  if (pre.num_stage_layers != 0) {
    return absl::InvalidArgumentError(
        "plan.prefill.stage_layers: a prefill instance splits its layers "
        "uniformly; leave it empty");
  }
  ASSIGN_OR_RETURN(d.decode_instances,
                   PoolInstances(plan.decode_instances(), plan.decode(),
                                 "plan.decode_instances", "plan.decode"));
  ASSIGN_OR_RETURN(d.prefill_instances,
                   PoolInstances(plan.prefill_instances(), plan.prefill(),
                                 "plan.prefill_instances", "plan.prefill"));
  d.disaggregated = true;
  d.replicas = 1;
  d.prefill.dp = pre.dp;
  d.prefill.tp = pre.tp;
  d.prefill.pp = pre.pp;
  d.prefill.ep = pre.ep;
  d.prefill.dims = pre.dims;
  d.prefill.micro_batches = pre.micro_batches;
  d.prefill.batch_size = pre.batch_size;
  return d;
}

}  // namespace shardplan::simulator
