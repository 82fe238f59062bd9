#include "server/store/elite_store.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "glog/logging.h"
#include "proto/spec_text.h"
#include "proto/status_macros.h"
#include "server/store/postgres_store.h"
#include "server/store/sqlite_store.h"
#include "server/store/store_schema.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/calibration.h"
#include "simulator/cost_model.h"
#include "simulator/spec.h"

namespace shardplan::server {
namespace {

uint64_t Fnv1a64(const std::string& text) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

std::string Hex64(uint64_t value) { return absl::StrFormat("%016x", value); }

int RoundLog2(double value) {
  if (!(value >= 1)) return 0;
  return static_cast<int>(std::lround(std::log2(value)));
}

int OptionalBucket(double value) {
  return value > 0 ? 1 + RoundLog2(std::max(1.0, value)) : 0;
}

std::string CanonicalModel(const simulator::ModelDims& m) {
  // Every architecture field, in a fixed order; the display name is left out so
  // that an inline spec of a catalog model shares its history.
  return absl::StrCat(
      "family=", m.family, ";hidden=", m.hidden, ";layers=", m.layers,
      ";heads=", m.heads, ";kv_heads=", m.kv_heads, ";head_dim=", m.head_dim,
      ";intermediate=", m.intermediate, ";vocab=", m.vocab,
      ";tie=", m.tie_embeddings, ";experts=", m.experts,
      ";experts_per_token=", m.experts_per_token,
      ";moe_intermediate=", m.moe_intermediate, ";shared=", m.shared_experts,
      ";first_k_dense=", m.first_k_dense, ";kv_lora=", m.kv_lora_rank,
      ";q_lora=", m.q_lora_rank, ";rope=", m.qk_rope_head_dim,
      ";nope=", m.qk_nope_head_dim, ";v_head=", m.v_head_dim);
}

std::string CanonicalHardware(const simulator::HardwareDims& h) {
  std::string out = absl::StrCat("name=", h.name);
  for (double flops : h.peak_flops_per_s)
    absl::StrAppend(&out, ";peak=", absl::StrFormat("%.17g", flops));
  absl::StrAppend(
      &out,
      absl::StrFormat(";hbm=%.17g;hbm_bw=%.17g;intra=%.17g;inter=%.17g;"
                      "intra_lat=%.17g;inter_lat=%.17g",
                      h.hbm_bytes, h.hbm_bytes_per_s, h.intra_node_bytes_per_s,
                      h.inter_node_bytes_per_s, h.intra_node_latency_seconds,
                      h.inter_node_latency_seconds));
  // The architecture decides which measured kernel terms apply; unknown keeps
  // the text of specs that do not set it.
  if (h.architecture != simulator::GpuArchitecture::kUnknown) {
    absl::StrAppend(&out, ";arch=", static_cast<int>(h.architecture));
  }
  return out;
}

}  // namespace

ProblemKey MakeProblemKey(const simulator::Problem& problem) {
  ProblemKey key;
  const simulator::ClusterDims& cluster = problem.cluster;
  const simulator::WorkloadDims& workload = problem.workload;
  key.model_name = problem.model.name;
  key.model_key = Hex64(Fnv1a64(CanonicalModel(problem.model)));
  key.family_key = absl::StrCat(
      problem.model.family.empty() ? "unknown" : problem.model.family, "|",
      cluster.hardware.name, "|", cluster.num_gpus, "x", cluster.gpus_per_node);
  key.input_tokens_log2 = RoundLog2(workload.input_tokens);
  key.output_tokens_log2 = RoundLog2(workload.output_tokens);
  key.concurrency_bucket =
      workload.concurrency > 0 ? 1 + RoundLog2(workload.concurrency) : 0;
  key.ttft_bucket = OptionalBucket(workload.max_ttft_seconds * 1e3);
  key.tpot_bucket = OptionalBucket(workload.max_tpot_seconds * 1e3);
  key.weight_dtype = std::string(simulator::DtypeName(workload.weight_dtype));
  key.kv_cache_dtype =
      std::string(simulator::DtypeName(workload.kv_cache_dtype));
  key.cost_model_version = simulator::kCostModelVersion;
  const std::string default_profile = simulator::kEngineAgnosticProfileName;
  const std::string profile = workload.calibration_profile.empty()
                                  ? default_profile
                                  : workload.calibration_profile;
  // Only a profile other than the engine-agnostic one changes the canonical
  // text: stored rows of engine-agnostic requests (all rows from before
  // profiles) keep matching; a TensorRT-LLM request is another problem (its
  // disaggregated request overhead differs).
  std::string profile_text;
  if (profile != default_profile) {
    absl::StrAppend(&key.model_name, kProfileSuffix, profile);
    profile_text = absl::StrCat("|profile=", profile);
  }
  const std::string canonical = absl::StrCat(
      "cost_model=", key.cost_model_version,
      "|model:", CanonicalModel(problem.model),
      "|cluster:", CanonicalHardware(cluster.hardware),
      ";gpus=", cluster.num_gpus, ";per_node=", cluster.gpus_per_node,
      "|workload:isl=", key.input_tokens_log2, ";osl=", key.output_tokens_log2,
      ";conc=", key.concurrency_bucket, ";ttft=", key.ttft_bucket,
      ";tpot=", key.tpot_bucket, ";w=", key.weight_dtype,
      ";kv=", key.kv_cache_dtype, profile_text);
  key.fingerprint = Hex64(Fnv1a64(canonical));
  return key;
}

double WorkloadDistance(const ProblemKey& a, const ProblemKey& b) {
  double d = std::abs(a.input_tokens_log2 - b.input_tokens_log2) +
             std::abs(a.output_tokens_log2 - b.output_tokens_log2) +
             std::abs(a.concurrency_bucket - b.concurrency_bucket) +
             std::abs(a.ttft_bucket - b.ttft_bucket) +
             std::abs(a.tpot_bucket - b.tpot_bucket);
  if (a.weight_dtype != b.weight_dtype) d += 2;
  if (a.kv_cache_dtype != b.kv_cache_dtype) d += 2;
  if (a.model_key != b.model_key) d += 8;
  if (a.cost_model_version != b.cost_model_version) d += 4;
  if (ProfileOfKey(a) != ProfileOfKey(b)) d += 1;
  return d;
}

std::string ProfileOfKey(const ProblemKey& key) {
  const size_t at = key.model_name.rfind(kProfileSuffix);
  if (at == std::string::npos) {
    return simulator::kEngineAgnosticProfileName;
  }
  return key.model_name.substr(at + std::strlen(kProfileSuffix));
}

bool IsPostgresUrl(absl::string_view path) {
  return absl::StartsWith(path, "postgresql://") ||
         absl::StartsWith(path, "postgres://");
}

std::string RedactStorePath(absl::string_view path) {
  if (!IsPostgresUrl(path)) return std::string(path);
  // scheme://[user[:password]@]host...: drop what follows the first ':' of
  // the userinfo. A password given as ?password=... is dropped too.
  const size_t scheme_end = path.find("://") + 3;
  size_t authority_end = path.find_first_of("/?", scheme_end);
  if (authority_end == absl::string_view::npos) authority_end = path.size();
  std::string out(path);
  const size_t at = path.rfind('@', authority_end);
  if (at != absl::string_view::npos && at >= scheme_end) {
    const size_t colon = path.find(':', scheme_end);
    if (colon != absl::string_view::npos && colon < at) {
      out = absl::StrCat(path.substr(0, colon + 1), "***", path.substr(at));
    }
  }
  const size_t pw = out.find("password=");
  if (pw != std::string::npos) {
    const size_t value = pw + 9;
    size_t value_end = out.find('&', value);
    if (value_end == std::string::npos) value_end = out.size();
    out.replace(value, value_end - value, "***");
  }
  return out;
}

bool StorePathHasPassword(absl::string_view path) {
  return IsPostgresUrl(path) && RedactStorePath(path) != path;
}

std::string PlanToStoredJson(const simulator::PlanDims& plan,
                             const simulator::Problem& problem) {
  shardplan::v1::Plan proto = simulator::PlanToProto(plan, problem);
  proto.clear_placement();
  return spec_text::ToJson(proto, /*pretty=*/false);
}

absl::StatusOr<simulator::PlanDims> PlanFromStoredJson(
    const std::string& json) {
  shardplan::v1::Plan proto;
  RETURN_IF_ERROR(spec_text::Parse(json, &proto));
  return simulator::PlanDimsFromProto(proto);
}

absl::StatusOr<std::optional<WarmStartData>> EliteStore::Lookup(
    const ProblemKey& key) {
  ASSIGN_OR_RETURN(WarmStartRows rows, ReadWarmStartRows(key));
  if (!rows.chosen.has_value()) return std::optional<WarmStartData>();
  WarmStartData data;
  data.exact = rows.chosen->exact;
  data.fingerprint = rows.chosen->fingerprint;
  data.distance = rows.chosen->distance;
  data.plans = store::StoredPlansFromRows(data.fingerprint, rows.plans);
  data.policy_weights = std::move(rows.policy_weights);
  return std::optional<WarmStartData>(std::move(data));
}

absl::Status EliteStore::Record(const ProblemKey& key,
                                const simulator::Problem& problem,
                                absl::Span<const StoredPlan> plans,
                                const std::string& policy_weights) {
  RecordRows rows;
  rows.problem.key = key;
  rows.problem.updated_at_ms = absl::ToUnixMillis(absl::Now());
  for (const StoredPlan& stored : plans) {
    rows.plans.push_back({PlanToStoredJson(stored.plan, problem), stored.reward,
                          stored.output_tokens_per_s, stored.prediction_json});
  }
  rows.policy_weights = policy_weights;
  rows.top_k = top_k_;
  RETURN_IF_ERROR(WriteRecordRows(rows));
  if (records_.fetch_add(1) % kPruneEvery == 0) {
    // The write is durable; a failed prune only leaves the store larger.
    absl::Status pruned = Prune();
    if (!pruned.ok()) LOG(WARNING) << "elite store: prune: " << pruned;
  }
  return absl::OkStatus();
}

absl::Status EliteStore::Prune() {
  if (max_problems_ <= 0 && max_age_days_ <= 0) return absl::OkStatus();
  const int64_t keep =
      max_problems_ > 0 ? max_problems_ : std::numeric_limits<int64_t>::max();
  const int64_t oldest_ms =
      max_age_days_ > 0
          ? absl::ToUnixMillis(absl::Now() - absl::Hours(24) * max_age_days_)
          : 0;
  return PruneRows(keep, oldest_ms);
}

absl::StatusOr<std::unique_ptr<EliteStore>> EliteStore::Open(
    const Options& options) {
  if (options.path.empty())
    return absl::InvalidArgumentError("elite store: empty path");
  if (IsPostgresUrl(options.path)) return PostgresStore::Open(options);
  return SqliteStore::Open(options);
}

}  // namespace shardplan::server
