// Engine capability: which plan layouts each serving engine (vLLM, SGLang,
// TensorRT-LLM) can launch, by version. The rules are data
// (client/engines/capabilities.yaml, embedded at build time; each rule names
// its source in the engine's code or issue tracker); this evaluates them on a
// plan. The plan space (policy/plan_space.h) offers only plans the workload's
// engine can run, and the server reports which engines can run each plan.
//
// No I/O: the table is compiled in and parsed once, on first use.
#ifndef SHARDPLAN_SIMULATOR_ENGINE_CAPABILITY_H_
#define SHARDPLAN_SIMULATOR_ENGINE_CAPABILITY_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "simulator/types.h"

namespace shardplan::simulator {

// One condition of a rule: `variable op value`, value a number, a word or
// (is_variable) another variable's name.
struct EngineCondition {
  std::string variable;
  std::string op;  // == != < <= > >=
  std::string value;
  bool is_variable = false;
  bool is_number = false;
  double number = 0;
  // Positions of `variable` and (is_variable) `value` among the known
  // variables, resolved when the table is parsed.
  int variable_id = -1;
  int value_id = -1;
};

// What a rule reads of a plan, from the variables its conditions name:
//  kInstance: one engine instance's own layout, the model, the workload and
//    the node size (every variable but those below);
//  kPlacement: also where the instance's pool sits (`instances`,
//    `instance_nodes`, `uneven_nodes`), which in a disaggregated plan depends
//    on the pool split and the other pool's instance size;
//  kPlan: both pools of a disaggregated plan (`prefill_pp`, `decode_pp`).
enum class RuleScope { kInstance = 0, kPlacement = 1, kPlan = 2 };

// A layout an engine cannot run (block) or runs with a caveat (warn), for
// versions in [min_version, max_version) ("" = unbounded).
struct EngineRule {
  std::string id;
  std::string engine;
  std::string min_version;
  std::string max_version;
  bool block = true;  // effect "block"; false: "warn"
  std::vector<EngineCondition> when;
  std::string message;
  std::vector<std::string> sources;
  // The widest variable its conditions name (set by ParseEngineRules).
  RuleScope scope = RuleScope::kInstance;
  // Every condition names only the model or the workload (moe, family,
  // weight_dtype, kv_cache_dtype, sparse_attention, mla, linear_attention):
  // the rule refuses every layout alike, so a refusal names it before a rule
  // that a different layout would avoid (set by ParseEngineRules).
  bool layout_free = true;
};

// Parses a capability table (the format client/engines/capabilities.yaml
// documents). INVALID_ARGUMENT naming the rule and field on a bad entry
// (unknown variable or operator, missing id/engine/message/sources).
absl::StatusOr<std::vector<EngineRule>> ParseEngineRules(
    absl::string_view yaml_text);

// The compiled-in table (aborts at first use if it does not parse: a build
// defect the tests catch).
const std::vector<EngineRule>& EngineRules();

// The engines the table and the API know: "vllm", "sglang", "trtllm".
const std::vector<std::string>& CapabilityEngines();

// Whether `version` lies in [min, max) of dotted numeric versions ("" =
// unbounded; an empty `version` is the newest release, above every bound).
// Components compare numerically by their leading digits ("0.5.0rc1" is
// 0.5.0).
bool VersionInRange(absl::string_view version, absl::string_view min,
                    absl::string_view max);
// OK for "" or a version starting with a digit ("0.5.6", "1.1.0rc2");
// INVALID_ARGUMENT naming `field_path` and the value otherwise.
absl::Status ValidateEngineVersion(absl::string_view version,
                                   absl::string_view field_path);

// Whether `engine` at `version` ("" = its newest release) can launch `plan`
// for `problem`'s model on its cluster: OK, or FAILED_PRECONDITION naming the
// first blocking rule that matches (its id, the instance it matched, its
// message and sources), a layout-free rule (EngineRule::layout_free) before
// the others, so that the reason given holds for every layout. INVALID_ARGUMENT
// for an engine not in CapabilityEngines() or a malformed version. Cost:
// O(rules + GPUs).
absl::Status CheckEngineCanRun(absl::string_view engine,
                               absl::string_view version,
                               const Problem& problem, const PlanDims& plan);
// The same against `rules` (tests).
absl::Status CheckEngineCanRun(const std::vector<EngineRule>& rules,
                               absl::string_view engine,
                               absl::string_view version,
                               const Problem& problem, const PlanDims& plan);

// The engines (CapabilityEngines() order) whose newest release can launch
// `plan`.
std::vector<std::string> RunnableEngines(const Problem& problem,
                                         const PlanDims& plan);

// What the plan space keeps: the workload's engine (and version) can launch
// `plan`; with no engine named, at least one engine can.
bool WorkloadEngineCanRun(const Problem& problem, const PlanDims& plan);

// The pools of a disaggregated plan.
enum class PoolRole { kPrefill, kDecode };

// Pool `role` of the disaggregated `plan` (its split, both instance layouts
// and dims): whether `engine` at `version` can run it, judged by the blocking
// rules whose scope is at most `max_scope` (kInstance: the pool's instance
// layout alone, whatever the split and the other pool; kPlacement: also where
// the pool's instances sit in this split). Rules of scope kPlan (both pools)
// are CheckEngineCanRun's on the whole plan. OK, or FAILED_PRECONDITION
// naming the rule as CheckEngineCanRun does; INVALID_ARGUMENT for an engine
// not in CapabilityEngines() or a malformed version. Cost: O(rules).
absl::Status CheckEngineCanRunPool(absl::string_view engine,
                                   absl::string_view version,
                                   const Problem& problem, const PlanDims& plan,
                                   PoolRole role, RuleScope max_scope);
// WorkloadEngineCanRun of one pool by those rules: the workload's engine and
// version, or with no engine named at least one engine (the same engine for
// both pools is then a kPlan matter, left to WorkloadEngineCanRun).
bool WorkloadEngineCanRunPool(const Problem& problem, const PlanDims& plan,
                              PoolRole role, RuleScope max_scope);
// Whether where pool `role` of `plan` sits can matter: some blocking rule of
// scope kPlacement of the workload's engine (any engine when none is named)
// applying to its version has every placement condition (those naming
// `instances`, `instance_nodes`, `uneven_nodes`) true for this pool. The
// placement variables are the same for every layout of one instance size in
// one split, so when this is false no layout of the pool is refused there
// beyond what the kInstance rules refuse. Cost: O(rules).
bool PoolPlacementMayRefuse(const Problem& problem, const PlanDims& plan,
                            PoolRole role);

// The per-operator layouts an engine launches (proto/engine_layouts.h, shared
// with the emitters): every operator split the Megatron way inside its group,
// except that qkv, attention and attn_out may all three be batch-split (data-
// parallel attention) where the engine runs that for the model (`moe`).
// Whether `engine` launches operator `op` split by `dim` in some such layout.
bool EngineExpressesOpDim(absl::string_view engine, bool moe, OpKind op,
                          ShardDim dim);
// `dims` as `engine` launches them: an operator the engine cannot split by its
// dim, and the attention operators unless all three are batch-split and the
// engine runs data-parallel attention, get Megatron's dim (what the emitted
// command runs; client/emit/script.cc warns about the same operators).
ShardDims LaunchedOpDims(absl::string_view engine, bool moe,
                         const ShardDims& dims);
// `plan` (both pools when disaggregated) as the workload's engine launches it;
// `plan` itself when no engine is named (every layout stays offered).
PlanDims WorkloadEngineLaunchedPlan(const Problem& problem, PlanDims plan);

// The warn rules of `engine` at `version` that match `plan`, as messages
// ("rule ID: message (source)"), for the emitters' comments.
std::vector<std::string> EngineWarnings(absl::string_view engine,
                                        absl::string_view version,
                                        const Problem& problem,
                                        const PlanDims& plan);

}  // namespace shardplan::simulator

#endif  // SHARDPLAN_SIMULATOR_ENGINE_CAPABILITY_H_
