// Engine capability rules: parsing the compiled-in table and evaluating it on
// a plan's engine instances (simulator/engine_capability.h).
#include "simulator/engine_capability.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "proto/engine_layouts.h"
#include "proto/engine_version.h"
#include "proto/spec_text.h"
#include "proto/status_macros.h"
#include "simulator/disaggregated.h"
#include "simulator/internal/engine_capability_data.h"
#include "simulator/placement.h"
#include "simulator/user_text.h"

namespace shardplan::simulator {
namespace {

// The variables a condition may name (see client/engines/capabilities.yaml).
const std::vector<std::string>& KnownVariables() {
  static const std::vector<std::string>* const names =
      new std::vector<std::string>{"role",
                                   "disaggregated",
                                   "moe",
                                   "family",
                                   "weight_dtype",
                                   "kv_cache_dtype",
                                   "sparse_attention",
                                   "mla",
                                   "linear_attention",
                                   "fp4_tensor_cores",
                                   "dp",
                                   "tp",
                                   "pp",
                                   "ep",
                                   "instances",
                                   "stage_ranks",
                                   "attention_dp",
                                   "attention_tp",
                                   "expert_tp",
                                   "experts_mod_ep",
                                   "rank_gpus",
                                   "rank_gpus_mod_node",
                                   "gpus_per_node",
                                   "instance_gpus",
                                   "instance_nodes",
                                   "uneven_nodes",
                                   "prefill_pp",
                                   "decode_pp"};
  return *names;
}

// The position of `name` among KnownVariables(), or -1.
int VariableId(absl::string_view name) {
  const std::vector<std::string>& names = KnownVariables();
  const auto it = std::find(names.begin(), names.end(), name);
  return it == names.end() ? -1 : static_cast<int>(it - names.begin());
}

bool IsKnownVariable(absl::string_view name) { return VariableId(name) >= 0; }

// What reading variable `id` makes a rule depend on (RuleScope).
RuleScope VariableScope(int id) {
  const std::string& name = KnownVariables()[static_cast<size_t>(id)];
  if (name == "instances" || name == "instance_nodes" ||
      name == "uneven_nodes") {
    return RuleScope::kPlacement;
  }
  if (name == "prefill_pp" || name == "decode_pp") return RuleScope::kPlan;
  return RuleScope::kInstance;
}

// Whether variable `id` describes the model, the workload or the GPU alone
// (the same for every layout of a problem).
bool LayoutFreeVariable(int id) {
  const std::string& name = KnownVariables()[static_cast<size_t>(id)];
  return name == "moe" || name == "family" || name == "weight_dtype" ||
         name == "kv_cache_dtype" || name == "sparse_attention" ||
         name == "mla" || name == "linear_attention" ||
         name == "fp4_tensor_cores";
}

// The widest scope of the variables condition `c` names.
RuleScope ConditionScope(const EngineCondition& c) {
  RuleScope scope = VariableScope(c.variable_id);
  if (c.is_variable) scope = std::max(scope, VariableScope(c.value_id));
  return scope;
}

// A variable's value: a number, or a word (role, family, weight_dtype,
// kv_cache_dtype).
struct Value {
  bool is_number = true;
  double number = 0;
  std::string word;
};

// One instance's variables, by position (checked per candidate plan by the
// sweeps, so no per-name allocation).
class Variables {
 public:
  Variables() : values_(KnownVariables().size()) {}
  Value& operator[](absl::string_view name) {
    return values_[static_cast<size_t>(VariableId(name))];
  }
  const Value& at(int id) const { return values_[static_cast<size_t>(id)]; }
  const Value& at(absl::string_view name) const { return at(VariableId(name)); }

 private:
  std::vector<Value> values_;
};

absl::StatusOr<EngineCondition> ParseCondition(const std::string& text,
                                               const std::string& where) {
  std::vector<std::string> parts =
      absl::StrSplit(text, ' ', absl::SkipWhitespace());
  static const char* const kOps[] = {"==", "!=", "<", "<=", ">", ">="};
  if (parts.size() != 3 ||
      std::find(std::begin(kOps), std::end(kOps), parts[1]) == std::end(kOps)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: condition %s is not `VARIABLE OP VALUE` (OP one of == != < <= > "
        ">=)",
        where, QuoteUserText(text)));
  }
  if (!IsKnownVariable(parts[0])) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: unknown variable %s; known: %s", where, QuoteUserText(parts[0]),
        absl::StrJoin(KnownVariables(), ", ")));
  }
  EngineCondition c;
  c.variable = parts[0];
  c.op = parts[1];
  c.value = parts[2];
  c.is_number = absl::SimpleAtod(c.value, &c.number);
  c.is_variable = !c.is_number && IsKnownVariable(c.value);
  c.variable_id = VariableId(c.variable);
  c.value_id = c.is_variable ? VariableId(c.value) : -1;
  return c;
}

absl::StatusOr<std::string> StringField(const nlohmann::json& rule,
                                        const char* key,
                                        const std::string& where,
                                        bool required) {
  if (!rule.contains(key) || rule.at(key).is_null()) {
    if (required) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: missing %s", where, key));
    }
    return std::string();
  }
  if (!rule.at(key).is_string()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s.%s must be a string", where, key));
  }
  std::string value = rule.at(key).get<std::string>();
  if (required && value.empty()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s.%s must not be empty", where, key));
  }
  return value;
}

bool AttentionBatchSplit(const PlanDims& instance) {
  for (OpKind op : {OpKind::kQkv, OpKind::kAttention, OpKind::kAttnOut}) {
    if (instance.dims[static_cast<int>(op)] != ShardDim::kBatch) return false;
  }
  return true;
}

Value Number(double x) { return Value{true, x, ""}; }
Value Word(std::string s) { return Value{false, 0, std::move(s)}; }

// The variables of one engine instance (`instance`: an aggregated plan with
// its replicas, or a pool instance with replicas = the pool's count) whose
// first instance starts at global rank `first_rank`.
Variables InstanceVariables(const Problem& problem, const PlanDims& plan,
                            const PlanDims& instance, absl::string_view role,
                            int64_t first_rank) {
  const ModelDims& m = problem.model;
  const ClusterDims& c = problem.cluster;
  const bool moe = m.is_moe();
  const int dp = std::max(1, instance.dp), tp = std::max(1, instance.tp);
  const int pp = std::max(1, instance.pp), ep = std::max(1, instance.ep);
  const bool batch_split = tp > 1 && AttentionBatchSplit(instance);
  const int attention_dp = (moe ? dp : 1) * (batch_split ? tp : 1);
  const int attention_tp = batch_split ? 1 : tp;
  // A dense model's dp ranks are independent copies (own servers); an MoE
  // instance is one server over its dp x tp x pp GPUs.
  const int instance_gpus = moe ? dp * tp * pp : tp * pp;
  const int instances = std::max(1, instance.replicas) * (moe ? 1 : dp);
  const int gpus_per_node = std::max(1, c.gpus_per_node);
  const BlockSpan span =
      BlocksNodeSpan(c, first_rank, instance_gpus, instances);
  Variables v;
  v["role"] = Word(std::string(role));
  v["disaggregated"] = Number(plan.disaggregated ? 1 : 0);
  v["moe"] = Number(moe ? 1 : 0);
  v["family"] = Word(m.family);
  v["weight_dtype"] =
      Word(std::string(DtypeName(problem.workload.weight_dtype)));
  v["kv_cache_dtype"] =
      Word(std::string(DtypeName(problem.workload.kv_cache_dtype)));
  v["sparse_attention"] = Number(m.is_sparse_attention() ? 1 : 0);
  v["mla"] = Number(m.is_mla() ? 1 : 0);
  v["linear_attention"] = Number(m.is_hybrid() ? 1 : 0);
  v["fp4_tensor_cores"] = Number(
      problem.cluster.hardware.peak_flops_per_s[static_cast<int>(Dtype::kFp4)] >
              0
          ? 1
          : 0);
  v["dp"] = Number(dp);
  v["tp"] = Number(tp);
  v["pp"] = Number(pp);
  v["ep"] = Number(ep);
  v["instances"] = Number(instances);
  v["stage_ranks"] = Number(dp * tp);
  v["attention_dp"] = Number(attention_dp);
  v["attention_tp"] = Number(attention_tp);
  v["expert_tp"] = Number(moe ? std::max(1, dp * tp / ep) : 1);
  v["experts_mod_ep"] = Number(moe && ep > 0 ? m.experts % ep : 0);
  v["rank_gpus"] = Number(attention_tp * pp);
  v["rank_gpus_mod_node"] = Number((attention_tp * pp) % gpus_per_node);
  v["gpus_per_node"] = Number(gpus_per_node);
  v["instance_gpus"] = Number(instance_gpus);
  v["instance_nodes"] = Number(span.nodes);
  v["uneven_nodes"] = Number(span.uneven ? 1 : 0);
  v["prefill_pp"] =
      Number(plan.disaggregated ? std::max(1, plan.prefill.pp) : 0);
  v["decode_pp"] = Number(plan.disaggregated ? std::max(1, plan.pp) : 0);
  return v;
}

// The variables of pool `role` of the disaggregated `plan`.
Variables PoolVariables(const Problem& problem, const PlanDims& plan,
                        PoolRole role) {
  if (role == PoolRole::kPrefill) {
    PlanDims prefill = PrefillInstancePlan(plan);
    prefill.replicas = std::max(1, plan.prefill_instances);
    return InstanceVariables(problem, plan, prefill, "prefill",
                             PrefillPoolFirstRank(plan, problem.cluster));
  }
  PlanDims decode = DecodeInstancePlan(plan);
  decode.replicas = std::max(1, plan.decode_instances);
  return InstanceVariables(problem, plan, decode, "decode",
                           DecodePoolFirstRank(plan, problem.cluster));
}

// Every engine instance of `plan` with its variables.
std::vector<Variables> PlanInstances(const Problem& problem,
                                     const PlanDims& plan) {
  std::vector<Variables> out;
  if (!plan.disaggregated) {
    out.push_back(InstanceVariables(problem, plan, plan, "aggregated", 0));
    return out;
  }
  out.push_back(PoolVariables(problem, plan, PoolRole::kPrefill));
  out.push_back(PoolVariables(problem, plan, PoolRole::kDecode));
  return out;
}

bool Holds(const EngineCondition& c, const Variables& v) {
  const Value& lhs = v.at(c.variable_id);
  const bool rhs_number =
      c.is_variable ? v.at(c.value_id).is_number : c.is_number;
  if (lhs.is_number != rhs_number) return c.op == "!=";
  if (!lhs.is_number) {
    const bool equal =
        lhs.word == (c.is_variable ? v.at(c.value_id).word : c.value);
    return c.op == "==" ? equal : c.op == "!=" ? !equal : false;
  }
  const double a = lhs.number,
               b = c.is_variable ? v.at(c.value_id).number : c.number;
  if (c.op == "==") return a == b;
  if (c.op == "!=") return a != b;
  if (c.op == "<") return a < b;
  if (c.op == "<=") return a <= b;
  if (c.op == ">") return a > b;
  return a >= b;
}

bool Matches(const EngineRule& rule, const Variables& v) {
  for (const EngineCondition& c : rule.when) {
    if (!Holds(c, v)) return false;
  }
  return true;
}

// "decode instance (dp 8, tp 1, pp 2, ep 8)".
std::string DescribeInstance(const Variables& v) {
  const std::string& role = v.at("role").word;
  return absl::StrFormat(
      "%s (dp %d, tp %d, pp %d, ep %d)",
      role == "aggregated" ? "replica" : role + " instance",
      static_cast<int>(v.at("dp").number), static_cast<int>(v.at("tp").number),
      static_cast<int>(v.at("pp").number), static_cast<int>(v.at("ep").number));
}

absl::Status CheckEngineName(absl::string_view engine) {
  const std::vector<std::string>& engines = CapabilityEngines();
  if (std::find(engines.begin(), engines.end(), engine) == engines.end()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("workload.engine must be one of %s, got %s",
                        absl::StrJoin(engines, ", "), QuoteUserText(engine)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<EngineRule>> ParseEngineRules(
    absl::string_view yaml_text) {
  absl::StatusOr<std::string> json_text = spec_text::YamlToJson(yaml_text);
  if (!json_text.ok()) return json_text.status();
  const nlohmann::json doc = nlohmann::json::parse(*json_text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("rules") ||
      !doc.at("rules").is_array()) {
    return absl::InvalidArgumentError(
        "the capability table needs a top-level `rules` list");
  }
  std::vector<EngineRule> rules;
  for (size_t i = 0; i < doc.at("rules").size(); ++i) {
    const nlohmann::json& r = doc.at("rules")[i];
    std::string where = absl::StrCat("rules[", i, "]");
    if (!r.is_object()) {
      return absl::InvalidArgumentError(where + " must be a mapping");
    }
    EngineRule rule;
    ASSIGN_OR_RETURN(rule.id, StringField(r, "id", where, true));
    where = absl::StrCat(where, " (", rule.id, ")");
    ASSIGN_OR_RETURN(rule.engine, StringField(r, "engine", where, true));
    RETURN_IF_ERROR(CheckEngineName(rule.engine));
    ASSIGN_OR_RETURN(rule.min_version, StringField(r, "min", where, false));
    ASSIGN_OR_RETURN(rule.max_version, StringField(r, "max", where, false));
    RETURN_IF_ERROR(ValidateEngineVersion(rule.min_version, where + ".min"));
    RETURN_IF_ERROR(ValidateEngineVersion(rule.max_version, where + ".max"));
    ASSIGN_OR_RETURN(const std::string effect,
                     StringField(r, "effect", where, true));
    if (effect != "block" && effect != "warn") {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s.effect must be block or warn, got %s", where,
                          QuoteUserText(effect)));
    }
    rule.block = effect == "block";
    ASSIGN_OR_RETURN(rule.message, StringField(r, "message", where, true));
    if (!r.contains("when") || !r.at("when").is_array() ||
        r.at("when").empty()) {
      return absl::InvalidArgumentError(where +
                                        ".when must be a non-empty list");
    }
    for (const nlohmann::json& c : r.at("when")) {
      if (!c.is_string()) {
        return absl::InvalidArgumentError(where + ".when entries are strings");
      }
      ASSIGN_OR_RETURN(EngineCondition condition,
                       ParseCondition(c.get<std::string>(), where));
      rule.scope = std::max(rule.scope, ConditionScope(condition));
      rule.layout_free =
          rule.layout_free && LayoutFreeVariable(condition.variable_id) &&
          (!condition.is_variable || LayoutFreeVariable(condition.value_id));
      rule.when.push_back(std::move(condition));
    }
    if (!r.contains("sources") || !r.at("sources").is_array() ||
        r.at("sources").empty()) {
      return absl::InvalidArgumentError(where +
                                        ".sources must be a non-empty list");
    }
    for (const nlohmann::json& s : r.at("sources")) {
      if (!s.is_string() || s.get<std::string>().empty()) {
        return absl::InvalidArgumentError(where +
                                          ".sources entries are strings");
      }
      rule.sources.push_back(s.get<std::string>());
    }
    for (const EngineRule& other : rules) {
      if (other.id == rule.id) {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s: duplicate id", where));
      }
    }
    rules.push_back(std::move(rule));
  }
  return rules;
}

const std::vector<EngineRule>& EngineRules() {
  static const std::vector<EngineRule>* const rules = [] {
    absl::StatusOr<std::vector<EngineRule>> parsed =
        ParseEngineRules(internal::kEngineCapabilityFiles[0].text);
    if (!parsed.ok()) {
      // Compiled in and covered by tests: a bad table is a build defect.
      std::fprintf(stderr, "shardplan: %s: %s\n",
                   internal::kEngineCapabilityFiles[0].file_name,
                   std::string(parsed.status().message()).c_str());
      std::abort();
    }
    return new std::vector<EngineRule>(*std::move(parsed));
  }();
  return *rules;
}

const std::vector<std::string>& CapabilityEngines() {
  static const std::vector<std::string>* const engines =
      new std::vector<std::string>{"vllm", "sglang", "trtllm"};
  return *engines;
}

bool VersionInRange(absl::string_view version, absl::string_view min,
                    absl::string_view max) {
  if (version.empty()) return max.empty();  // the newest release
  if (!min.empty() && CompareVersions(version, min) < 0) return false;
  if (!max.empty() && CompareVersions(version, max) >= 0) return false;
  return true;
}

absl::Status ValidateEngineVersion(absl::string_view version,
                                   absl::string_view field_path) {
  if (version.empty() || absl::ascii_isdigit(version[0])) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s must be a release number such as 0.5.6 (or empty: the newest), got "
      "%s",
      field_path, QuoteUserText(version)));
}

namespace {

// Whether `rule` is a blocking rule of `engine` applying to `version`.
bool Blocks(const EngineRule& rule, absl::string_view engine,
            absl::string_view version) {
  return rule.block && rule.engine == engine &&
         VersionInRange(version, rule.min_version, rule.max_version);
}

// The first blocking rule of `engine` at `version` of scope at most
// `max_scope` that one of `instances` matches (and that instance), or
// nullptr.
const EngineRule* FirstBlockingRule(const std::vector<EngineRule>& rules,
                                    absl::string_view engine,
                                    absl::string_view version,
                                    const std::vector<Variables>& instances,
                                    const Variables** instance,
                                    RuleScope max_scope = RuleScope::kPlan) {
  // Layout-free rules first: what no other layout would avoid is the reason
  // worth giving.
  for (const bool layout_free : {true, false}) {
    for (const EngineRule& rule : rules) {
      if (rule.layout_free != layout_free || !Blocks(rule, engine, version) ||
          rule.scope > max_scope) {
        continue;
      }
      for (const Variables& v : instances) {
        if (!Matches(rule, v)) continue;
        if (instance != nullptr) *instance = &v;
        return &rule;
      }
    }
  }
  return nullptr;
}

// FAILED_PRECONDITION: `engine` at `version` cannot run the plan, by `rule`
// matched on instance `v`.
absl::Status Refusal(absl::string_view engine, absl::string_view version,
                     const EngineRule& rule, const Variables& v) {
  return absl::FailedPreconditionError(absl::StrFormat(
      "%s %s cannot run this plan: rule %s, %s: %s (source: %s)", engine,
      version.empty() ? "(newest release)" : QuoteUserText(version), rule.id,
      DescribeInstance(v), rule.message, absl::StrJoin(rule.sources, ", ")));
}

// Whether the conditions of `rule` of scope kPlacement hold for `v`.
bool PlacementConditionsHold(const EngineRule& rule, const Variables& v) {
  for (const EngineCondition& c : rule.when) {
    if (ConditionScope(c) == RuleScope::kPlacement && !Holds(c, v)) {
      return false;
    }
  }
  return true;
}

// The engines whose rules `problem`'s workload is judged by (the named one
// at its version, or every engine at its newest release), or none when the
// named engine or version is malformed.
std::vector<std::pair<std::string, std::string>> WorkloadEngines(
    const Problem& problem) {
  const WorkloadDims& w = problem.workload;
  std::vector<std::pair<std::string, std::string>> out;
  if (!w.engine.empty()) {
    if (CheckEngineName(w.engine).ok() &&
        ValidateEngineVersion(w.engine_version, "").ok()) {
      out.emplace_back(w.engine, w.engine_version);
    }
    return out;
  }
  for (const std::string& engine : CapabilityEngines()) {
    out.emplace_back(engine, "");
  }
  return out;
}

}  // namespace

absl::Status CheckEngineCanRun(const std::vector<EngineRule>& rules,
                               absl::string_view engine,
                               absl::string_view version,
                               const Problem& problem, const PlanDims& plan) {
  RETURN_IF_ERROR(CheckEngineName(engine));
  RETURN_IF_ERROR(ValidateEngineVersion(version, "workload.engine_version"));
  const std::vector<Variables> instances = PlanInstances(problem, plan);
  const Variables* v = nullptr;
  const EngineRule* rule =
      FirstBlockingRule(rules, engine, version, instances, &v);
  if (rule == nullptr) return absl::OkStatus();
  return Refusal(engine, version, *rule, *v);
}

absl::Status CheckEngineCanRun(absl::string_view engine,
                               absl::string_view version,
                               const Problem& problem, const PlanDims& plan) {
  return CheckEngineCanRun(EngineRules(), engine, version, problem, plan);
}

std::vector<std::string> RunnableEngines(const Problem& problem,
                                         const PlanDims& plan) {
  const std::vector<Variables> instances = PlanInstances(problem, plan);
  std::vector<std::string> out;
  for (const std::string& engine : CapabilityEngines()) {
    if (FirstBlockingRule(EngineRules(), engine, "", instances, nullptr) ==
        nullptr) {
      out.push_back(engine);
    }
  }
  return out;
}

bool WorkloadEngineCanRun(const Problem& problem, const PlanDims& plan) {
  const std::vector<Variables> instances = PlanInstances(problem, plan);
  for (const auto& [engine, version] : WorkloadEngines(problem)) {
    if (FirstBlockingRule(EngineRules(), engine, version, instances, nullptr) ==
        nullptr) {
      return true;
    }
  }
  return false;
}

absl::Status CheckEngineCanRunPool(absl::string_view engine,
                                   absl::string_view version,
                                   const Problem& problem, const PlanDims& plan,
                                   PoolRole role, RuleScope max_scope) {
  RETURN_IF_ERROR(CheckEngineName(engine));
  RETURN_IF_ERROR(ValidateEngineVersion(version, "workload.engine_version"));
  const std::vector<Variables> pool = {PoolVariables(problem, plan, role)};
  const Variables* v = nullptr;
  const EngineRule* rule =
      FirstBlockingRule(EngineRules(), engine, version, pool, &v, max_scope);
  if (rule == nullptr) return absl::OkStatus();
  return Refusal(engine, version, *rule, *v);
}

bool WorkloadEngineCanRunPool(const Problem& problem, const PlanDims& plan,
                              PoolRole role, RuleScope max_scope) {
  const std::vector<Variables> pool = {PoolVariables(problem, plan, role)};
  for (const auto& [engine, version] : WorkloadEngines(problem)) {
    if (FirstBlockingRule(EngineRules(), engine, version, pool, nullptr,
                          max_scope) == nullptr) {
      return true;
    }
  }
  return false;
}

bool PoolPlacementMayRefuse(const Problem& problem, const PlanDims& plan,
                            PoolRole role) {
  const std::vector<std::pair<std::string, std::string>> engines =
      WorkloadEngines(problem);
  bool any = false;
  for (const EngineRule& rule : EngineRules()) {
    if (rule.scope != RuleScope::kPlacement) continue;
    for (const auto& [engine, version] : engines) {
      any = any || Blocks(rule, engine, version);
    }
  }
  if (!any) return false;
  const Variables v = PoolVariables(problem, plan, role);
  for (const EngineRule& rule : EngineRules()) {
    if (rule.scope != RuleScope::kPlacement) continue;
    for (const auto& [engine, version] : engines) {
      if (Blocks(rule, engine, version) && PlacementConditionsHold(rule, v)) {
        return true;
      }
    }
  }
  return false;
}

std::vector<std::string> EngineWarnings(absl::string_view engine,
                                        absl::string_view version,
                                        const Problem& problem,
                                        const PlanDims& plan) {
  std::vector<std::string> out;
  std::vector<Variables> instances;
  for (const EngineRule& rule : EngineRules()) {
    if (rule.block || rule.engine != engine ||
        !VersionInRange(version, rule.min_version, rule.max_version)) {
      continue;
    }
    if (instances.empty()) instances = PlanInstances(problem, plan);
    for (const Variables& v : instances) {
      if (!Matches(rule, v)) continue;
      out.push_back(absl::StrFormat("rule %s: %s (%s)", rule.id, rule.message,
                                    absl::StrJoin(rule.sources, ", ")));
      break;
    }
  }
  return out;
}

namespace {

static_assert(sizeof(kEngineOpLayouts) / sizeof(kEngineOpLayouts[0]) ==
                  kNumOpKinds,
              "proto/engine_layouts.h lists every OpKind, in order");

bool IsAttentionDpOp(OpKind op) {
  for (const char* name : kAttentionDpOps) {
    if (OpKindName(op) == name) return true;
  }
  return false;
}

}  // namespace

bool EngineExpressesOpDim(absl::string_view engine, bool moe, OpKind op,
                          ShardDim dim) {
  const int o = static_cast<int>(op);
  if (o < 0 || o >= kNumOpKinds) return false;
  if (ShardDimName(dim) == kEngineOpLayouts[o].dim) return true;
  return IsAttentionDpOp(op) && ShardDimName(dim) == kAttentionDpDim &&
         EngineRunsAttentionDp(engine, moe);
}

ShardDims LaunchedOpDims(absl::string_view engine, bool moe,
                         const ShardDims& dims) {
  const ShardDims megatron = MegatronShardDims();
  bool attention_dp = EngineRunsAttentionDp(engine, moe);
  for (int o = 0; o < kNumOpKinds; ++o) {
    const OpKind op = static_cast<OpKind>(o);
    if (IsAttentionDpOp(op) && ShardDimName(dims[o]) != kAttentionDpDim) {
      attention_dp = false;
    }
  }
  ShardDims out = dims;
  for (int o = 0; o < kNumOpKinds; ++o) {
    const OpKind op = static_cast<OpKind>(o);
    if (IsAttentionDpOp(op) ? !attention_dp
                            : !EngineExpressesOpDim(engine, moe, op, dims[o])) {
      out[o] = megatron[o];
    }
  }
  return out;
}

PlanDims WorkloadEngineLaunchedPlan(const Problem& problem, PlanDims plan) {
  const std::string& engine = problem.workload.engine;
  if (engine.empty()) return plan;
  const bool moe = problem.model.is_moe();
  plan.dims = LaunchedOpDims(engine, moe, plan.dims);
  if (plan.disaggregated) {
    plan.prefill.dims = LaunchedOpDims(engine, moe, plan.prefill.dims);
  }
  return plan;
}

}  // namespace shardplan::simulator
