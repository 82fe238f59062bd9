// The embedded catalog (parsed by proto/spec_text), validation of the API's
// proto messages into the simulator's compact types, and the
// conversions back to proto. The Hugging Face config.json importer lives in
// spec_hf.cc.
#include "simulator/spec.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "proto/spec_text.h"
#include "simulator/calibration.h"
#include "simulator/disaggregated.h"
#include "simulator/engine_capability.h"
#include "simulator/internal/catalog_data.h"
#include "simulator/placement.h"
#include "simulator/status_macros.h"
#include "simulator/traffic_spec.h"
#include "simulator/user_text.h"

namespace shardplan::simulator {
namespace {

using ::shardplan::v1::ClusterSpec;
using ::shardplan::v1::HardwareSpec;
using ::shardplan::v1::ModelSource;
using ::shardplan::v1::ModelSpec;
using ::shardplan::v1::Plan;
using ::shardplan::v1::Prediction;
using ::shardplan::v1::Workload;

// Limits against absurd input. They bound every product the cost model forms,
// so no size computation overflows and no loop runs long.
constexpr int kMaxLayers = 1024;
constexpr int kMaxHidden = 131072;
constexpr int kMaxHeads = 4096;
constexpr int kMaxHeadDim = 4096;
constexpr int kMaxIntermediate = 1 << 20;
constexpr int kMaxVocab = 1 << 23;
constexpr int kMaxExperts = 4096;
constexpr int kMaxSharedExperts = 64;
constexpr int kMaxLoraRank = 65536;
constexpr double kMaxTotalParams = 1e15;
constexpr int kMaxGpus = 65536;
constexpr int kMaxGpusPerNode = 1024;
constexpr int kMaxTokens = 1 << 20;  // 1,048,576
constexpr int kMaxDegree = kMaxGpus;
constexpr int kMaxMicroBatches = 4096;
constexpr int kMaxStageLayers = kMaxLayers;
constexpr double kMaxSloMs = 1e9;  // ~11.5 days
// Smallest hardware figures accepted (HardwareDimsFromSpec).
constexpr double kMinFlopsPerS = 1e9;
constexpr double kMinBytes = 1e6;
constexpr double kMinBytesPerS = 1e6;
// Placement entries listed per plan; larger plans repeat the same layout per
// replica.
constexpr int kMaxPlacementEntries = 1024;
constexpr absl::string_view kDefaultHardware = "h100-sxm-80gb";

// --- Validation helpers ------------------------------------------------------

std::string Path(absl::string_view prefix, absl::string_view field) {
  if (prefix.empty()) return std::string(field);
  return absl::StrCat(prefix, ".", field);
}

absl::Status CheckRange(int64_t value, absl::string_view path, int64_t min,
                        int64_t max) {
  if (value < min) {
    if (min == 1)
      return absl::InvalidArgumentError(
          absl::StrCat(path, " must be > 0, got ", value));
    return absl::InvalidArgumentError(
        absl::StrCat(path, " must be >= ", min, ", got ", value));
  }
  if (value > max) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " must be <= ", max, ", got ", value));
  }
  return absl::OkStatus();
}

std::string FormatDouble(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return absl::StrFormat("%g", v);
}

// A finite double in [min, max]; `positive` additionally rejects 0.
absl::Status CheckDouble(double value, absl::string_view path, double min,
                         double max, bool positive) {
  if (!std::isfinite(value)) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, " must be a finite number, got ", FormatDouble(value)));
  }
  if (positive && value <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " must be > 0, got ", FormatDouble(value)));
  }
  if (value < min) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " must be >= ", FormatDouble(min), ", got ",
                     FormatDouble(value)));
  }
  if (value > max) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " must be <= ", FormatDouble(max), ", got ",
                     FormatDouble(value)));
  }
  return absl::OkStatus();
}

template <typename T>
std::vector<std::string> Names(const std::vector<T>& specs) {
  std::vector<std::string> names;
  names.reserve(specs.size());
  for (const T& spec : specs) names.push_back(spec.name());
  return names;
}

// --- Catalog -----------------------------------------------------------------

template <typename T>
std::vector<T> LoadCatalog(const internal::CatalogFile* files, int n) {
  std::vector<T> specs;
  specs.reserve(n);
  for (int i = 0; i < n; ++i) {
    T spec;
    const absl::Status status = spec_text::Parse(files[i].text, &spec);
    if (!status.ok()) {
      // The catalog is compiled in and covered by tests; a bad file is a build
      // defect.
      std::fprintf(stderr, "shardplan: catalog file %s: %s\n",
                   files[i].file_name, std::string(status.message()).c_str());
      std::abort();
    }
    specs.push_back(std::move(spec));
  }
  return specs;
}

// Hybrid linear attention and DeepSeek sparse attention: each set of fields
// is all-or-nothing, so that no field is silently ignored.
absl::Status AttentionKindFromSpec(const ModelSpec& spec,
                                   absl::string_view prefix, ModelDims* m) {
  const struct {
    const char* field;
    int value;
    int* out;
    int min_when_set;
    int max;
  } hybrid[] = {{"linear_num_key_heads", spec.linear_num_key_heads(),
                 &m->linear_num_key_heads, 1, kMaxHeads},
                {"linear_num_value_heads", spec.linear_num_value_heads(),
                 &m->linear_num_value_heads, 1, kMaxHeads},
                {"linear_key_head_dim", spec.linear_key_head_dim(),
                 &m->linear_key_head_dim, 1, kMaxHeadDim},
                {"linear_value_head_dim", spec.linear_value_head_dim(),
                 &m->linear_value_head_dim, 1, kMaxHeadDim},
                {"linear_conv_kernel_dim", spec.linear_conv_kernel_dim(),
                 &m->linear_conv_kernel_dim, 1, 64}};
  const int interval = spec.full_attention_interval();
  if (interval != 0) {
    if (interval < 2 || interval > m->layers) {
      return absl::InvalidArgumentError(absl::StrCat(
          Path(prefix, "full_attention_interval"),
          " must be 0 (every layer full attention) or in [2, ",
          Path(prefix, "num_layers"), " (", m->layers, ")], got ", interval));
    }
    if (m->is_mla()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Path(prefix, "full_attention_interval"),
                       " (hybrid linear attention) is not supported with MLA (",
                       Path(prefix, "kv_lora_rank"), " > 0)"));
    }
    m->full_attention_interval = interval;
  }
  for (const auto& f : hybrid) {
    if (interval == 0 && f.value != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(Path(prefix, f.field), " (", f.value, ") requires ",
                       Path(prefix, "full_attention_interval"),
                       " > 0 (hybrid linear attention)"));
    }
    if (interval != 0) {
      RETURN_IF_ERROR(
          CheckRange(f.value, Path(prefix, f.field), f.min_when_set, f.max));
    }
    *f.out = f.value;
  }
  if (interval != 0 &&
      m->linear_num_value_heads % m->linear_num_key_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        Path(prefix, "linear_num_value_heads"), " (", m->linear_num_value_heads,
        ") must be divisible by ", Path(prefix, "linear_num_key_heads"), " (",
        m->linear_num_key_heads, ")"));
  }
  if (spec.attention_output_gate() && m->is_mla()) {
    return absl::InvalidArgumentError(absl::StrCat(
        Path(prefix, "attention_output_gate"), " is not supported with MLA (",
        Path(prefix, "kv_lora_rank"), " > 0)"));
  }
  m->attention_output_gate = spec.attention_output_gate();

  const struct {
    const char* field;
    int value;
    int* out;
    int max;
  } sparse[] = {
      {"index_topk", spec.index_topk(), &m->index_topk, kMaxTokens},
      {"index_n_heads", spec.index_n_heads(), &m->index_n_heads, kMaxHeads},
      {"index_head_dim", spec.index_head_dim(), &m->index_head_dim,
       kMaxHeadDim}};
  const bool is_sparse = spec.index_topk() != 0;
  for (const auto& f : sparse) {
    if (!is_sparse && f.value != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          Path(prefix, f.field), " (", f.value, ") requires ",
          Path(prefix, "index_topk"), " > 0 (DeepSeek sparse attention)"));
    }
    if (is_sparse) {
      RETURN_IF_ERROR(CheckRange(f.value, Path(prefix, f.field), 1, f.max));
    }
    *f.out = f.value;
  }
  if (is_sparse && !m->is_mla()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Path(prefix, "index_topk"),
                     " (DeepSeek sparse attention) requires MLA (",
                     Path(prefix, "kv_lora_rank"), " > 0)"));
  }
  return absl::OkStatus();
}

}  // namespace

// === Catalog =================================================================

const std::vector<ModelSpec>& CatalogModels() {
  static const std::vector<ModelSpec>* const models =
      new std::vector<ModelSpec>(LoadCatalog<ModelSpec>(
          internal::kCatalogModelFiles, internal::kNumCatalogModelFiles));
  return *models;
}

const std::vector<HardwareSpec>& CatalogHardware() {
  static const std::vector<HardwareSpec>* const hardware =
      new std::vector<HardwareSpec>(LoadCatalog<HardwareSpec>(
          internal::kCatalogHardwareFiles, internal::kNumCatalogHardwareFiles));
  return *hardware;
}

absl::StatusOr<ModelSpec> FindCatalogModel(absl::string_view name) {
  for (const ModelSpec& spec : CatalogModels()) {
    if (spec.name() == name) return spec;
  }
  return absl::NotFoundError(
      absl::StrFormat("unknown model %s; known: %s", QuoteUserText(name),
                      absl::StrJoin(Names(CatalogModels()), ", ")));
}

absl::StatusOr<HardwareSpec> FindCatalogHardware(absl::string_view name) {
  for (const HardwareSpec& spec : CatalogHardware()) {
    if (spec.name() == name) return spec;
  }
  return absl::NotFoundError(
      absl::StrFormat("unknown hardware %s; known: %s", QuoteUserText(name),
                      absl::StrJoin(Names(CatalogHardware()), ", ")));
}

absl::StatusOr<shardplan::v1::CatalogModelInfo> CatalogModelInfoFromSpec(
    const ModelSpec& spec) {
  ASSIGN_OR_RETURN(const ModelDims m, ModelDimsFromSpec(spec, "model"));
  shardplan::v1::CatalogModelInfo info;
  info.set_name(m.name);
  info.set_hugging_face_id(m.hugging_face_id);
  info.set_native_dtype(std::string(DtypeName(m.native_dtype)));
  info.set_total_params(m.TotalParams());
  info.set_active_params(m.ActiveParams());
  info.set_moe(m.is_moe());
  return info;
}

// === Proto -> compact ========================================================

absl::StatusOr<ModelSpec> ResolveModel(const ModelSource& source) {
  switch (source.source_case()) {
    case ModelSource::kCatalogName: {
      absl::StatusOr<ModelSpec> spec = FindCatalogModel(source.catalog_name());
      if (!spec.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("model.catalog_name: ", spec.status().message()));
      }
      return spec;
    }
    case ModelSource::kSpec:
      return source.spec();
    case ModelSource::kHfConfigJson: {
      absl::StatusOr<ModelSpec> spec =
          ModelSpecFromHfConfig(source.hf_config_json());
      if (!spec.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("model.", spec.status().message()));
      }
      return spec;
    }
    case ModelSource::SOURCE_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(
      "model: one of model.catalog_name, model.spec or model.hf_config_json is "
      "required");
}

absl::StatusOr<ModelDims> ModelDimsFromSpec(const ModelSpec& spec,
                                            absl::string_view prefix) {
  ModelDims m;
  m.name = spec.name().empty() ? "custom" : spec.name();
  m.family = spec.family().empty() ? m.name : spec.family();
  m.hugging_face_id = spec.hugging_face_id();
  ASSIGN_OR_RETURN(m.native_dtype, ParseDtype(spec.native_dtype(),
                                              Path(prefix, "native_dtype")));
  RETURN_IF_ERROR(CheckRange(spec.hidden_size(), Path(prefix, "hidden_size"), 1,
                             kMaxHidden));
  RETURN_IF_ERROR(
      CheckRange(spec.num_layers(), Path(prefix, "num_layers"), 1, kMaxLayers));
  RETURN_IF_ERROR(CheckRange(spec.num_attention_heads(),
                             Path(prefix, "num_attention_heads"), 1,
                             kMaxHeads));
  RETURN_IF_ERROR(CheckRange(spec.num_key_value_heads(),
                             Path(prefix, "num_key_value_heads"), 0,
                             kMaxHeads));
  RETURN_IF_ERROR(
      CheckRange(spec.head_dim(), Path(prefix, "head_dim"), 0, kMaxHeadDim));
  RETURN_IF_ERROR(CheckRange(spec.intermediate_size(),
                             Path(prefix, "intermediate_size"), 0,
                             kMaxIntermediate));
  RETURN_IF_ERROR(
      CheckRange(spec.vocab_size(), Path(prefix, "vocab_size"), 1, kMaxVocab));
  RETURN_IF_ERROR(CheckRange(spec.num_experts(), Path(prefix, "num_experts"), 0,
                             kMaxExperts));
  RETURN_IF_ERROR(CheckRange(spec.experts_per_token(),
                             Path(prefix, "experts_per_token"), 0,
                             kMaxExperts));
  RETURN_IF_ERROR(CheckRange(spec.moe_intermediate_size(),
                             Path(prefix, "moe_intermediate_size"), 0,
                             kMaxIntermediate));
  RETURN_IF_ERROR(CheckRange(spec.num_shared_experts(),
                             Path(prefix, "num_shared_experts"), 0,
                             kMaxSharedExperts));
  RETURN_IF_ERROR(CheckRange(spec.first_k_dense_layers(),
                             Path(prefix, "first_k_dense_layers"), 0,
                             kMaxLayers));
  RETURN_IF_ERROR(CheckRange(spec.kv_lora_rank(), Path(prefix, "kv_lora_rank"),
                             0, kMaxLoraRank));
  RETURN_IF_ERROR(CheckRange(spec.q_lora_rank(), Path(prefix, "q_lora_rank"), 0,
                             kMaxLoraRank));
  RETURN_IF_ERROR(CheckRange(spec.qk_rope_head_dim(),
                             Path(prefix, "qk_rope_head_dim"), 0, kMaxHeadDim));
  RETURN_IF_ERROR(CheckRange(spec.qk_nope_head_dim(),
                             Path(prefix, "qk_nope_head_dim"), 0, kMaxHeadDim));
  RETURN_IF_ERROR(CheckRange(spec.v_head_dim(), Path(prefix, "v_head_dim"), 0,
                             kMaxHeadDim));

  m.hidden = spec.hidden_size();
  m.layers = spec.num_layers();
  m.heads = spec.num_attention_heads();
  m.kv_heads =
      spec.num_key_value_heads() == 0 ? m.heads : spec.num_key_value_heads();
  if (m.kv_heads > m.heads) {
    return absl::InvalidArgumentError(absl::StrCat(
        Path(prefix, "num_key_value_heads"), " (", m.kv_heads, ") must be <= ",
        Path(prefix, "num_attention_heads"), " (", m.heads, ")"));
  }
  if (m.heads % m.kv_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        Path(prefix, "num_attention_heads"), " (", m.heads,
        ") must be divisible by ", Path(prefix, "num_key_value_heads"), " (",
        m.kv_heads, ")"));
  }
  if (spec.head_dim() > 0) {
    m.head_dim = spec.head_dim();
  } else {
    if (m.hidden % m.heads != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          Path(prefix, "hidden_size"), " (", m.hidden,
          ") must be divisible by ", Path(prefix, "num_attention_heads"), " (",
          m.heads, ") when ", Path(prefix, "head_dim"), " is 0"));
    }
    m.head_dim = m.hidden / m.heads;
  }
  m.intermediate = spec.intermediate_size();
  m.vocab = spec.vocab_size();
  m.tie_embeddings = spec.tie_word_embeddings();

  m.experts = spec.num_experts();
  m.experts_per_token = spec.experts_per_token();
  m.moe_intermediate = spec.moe_intermediate_size();
  m.shared_experts = spec.num_shared_experts();
  m.first_k_dense = spec.first_k_dense_layers();
  if (m.experts > 0) {
    if (m.experts_per_token < 1 || m.experts_per_token > m.experts) {
      return absl::InvalidArgumentError(
          absl::StrCat(Path(prefix, "experts_per_token"), " must be in [1, ",
                       Path(prefix, "num_experts"), " (", m.experts, ")], got ",
                       m.experts_per_token));
    }
    if (m.moe_intermediate < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          Path(prefix, "moe_intermediate_size"),
          " must be > 0 for an MoE model, got ", m.moe_intermediate));
    }
    if (m.first_k_dense >= m.layers) {
      return absl::InvalidArgumentError(absl::StrCat(
          Path(prefix, "first_k_dense_layers"), " (", m.first_k_dense,
          ") must be < ", Path(prefix, "num_layers"), " (", m.layers, ")"));
    }
  } else {
    const struct {
      const char* field;
      int value;
    } moe_only[] = {{"experts_per_token", m.experts_per_token},
                    {"moe_intermediate_size", m.moe_intermediate},
                    {"num_shared_experts", m.shared_experts},
                    {"first_k_dense_layers", m.first_k_dense}};
    for (const auto& f : moe_only) {
      if (f.value != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(Path(prefix, f.field), " (", f.value, ") requires ",
                         Path(prefix, "num_experts"), " > 0"));
      }
    }
  }
  if (m.dense_layers() > 0 && m.intermediate < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        Path(prefix, "intermediate_size"), " must be > 0 (the model has ",
        m.dense_layers(), " dense layers), got ", m.intermediate));
  }

  m.kv_lora_rank = spec.kv_lora_rank();
  m.q_lora_rank = spec.q_lora_rank();
  m.qk_rope_head_dim = spec.qk_rope_head_dim();
  m.qk_nope_head_dim = spec.qk_nope_head_dim();
  m.v_head_dim = spec.v_head_dim();
  if (m.kv_lora_rank > 0) {
    const struct {
      const char* field;
      int value;
    } mla[] = {{"qk_rope_head_dim", m.qk_rope_head_dim},
               {"qk_nope_head_dim", m.qk_nope_head_dim},
               {"v_head_dim", m.v_head_dim}};
    for (const auto& f : mla) {
      if (f.value < 1) {
        return absl::InvalidArgumentError(
            absl::StrCat(Path(prefix, f.field), " must be > 0 for MLA (",
                         Path(prefix, "kv_lora_rank"), " > 0), got ", f.value));
      }
    }
  } else {
    // Without MLA these fields change nothing in the cost model: accepting
    // them would plan a plain GQA model the caller did not describe.
    const struct {
      const char* field;
      int value;
    } mla_only[] = {{"q_lora_rank", m.q_lora_rank},
                    {"qk_rope_head_dim", m.qk_rope_head_dim},
                    {"qk_nope_head_dim", m.qk_nope_head_dim},
                    {"v_head_dim", m.v_head_dim}};
    for (const auto& f : mla_only) {
      if (f.value != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(Path(prefix, f.field), " (", f.value, ") requires ",
                         Path(prefix, "kv_lora_rank"), " > 0 (MLA)"));
      }
    }
  }
  RETURN_IF_ERROR(AttentionKindFromSpec(spec, prefix, &m));
  const double params = m.TotalParams();
  if (!(params <= kMaxTotalParams)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: %.3g parameters exceeds the limit of %.0e",
        prefix.empty() ? "model" : prefix, params, kMaxTotalParams));
  }
  return m;
}

namespace {

absl::StatusOr<HardwareDims> HardwareDimsFromSpec(const HardwareSpec& spec,
                                                  absl::string_view prefix) {
  HardwareDims hw;
  hw.name = spec.name().empty() ? "custom" : spec.name();
  // Lower bounds far below any real accelerator (1 GFLOP/s, 1 MB, 1 MB/s):
  // smaller positive figures (found by tests/fuzz: 1e-174 B/s) overflow the
  // per-operator seconds of the prediction, which are floats.
  RETURN_IF_ERROR(CheckDouble(spec.peak_bf16_flops_per_s(),
                              Path(prefix, "peak_bf16_flops_per_s"),
                              kMinFlopsPerS, 1e18,
                              /*positive=*/true));
  // FP8/FP4 peaks are optional: 0, or a real figure.
  if (spec.peak_fp8_flops_per_s() != 0) {
    RETURN_IF_ERROR(CheckDouble(spec.peak_fp8_flops_per_s(),
                                Path(prefix, "peak_fp8_flops_per_s"),
                                kMinFlopsPerS, 1e18, false));
  }
  if (spec.peak_fp4_flops_per_s() != 0) {
    RETURN_IF_ERROR(CheckDouble(spec.peak_fp4_flops_per_s(),
                                Path(prefix, "peak_fp4_flops_per_s"),
                                kMinFlopsPerS, 1e18, false));
  }
  RETURN_IF_ERROR(CheckDouble(spec.hbm_bytes(), Path(prefix, "hbm_bytes"),
                              kMinBytes, 1e14, true));
  RETURN_IF_ERROR(CheckDouble(spec.hbm_bytes_per_s(),
                              Path(prefix, "hbm_bytes_per_s"), kMinBytesPerS,
                              1e15, true));
  RETURN_IF_ERROR(CheckDouble(spec.intra_node_bytes_per_s(),
                              Path(prefix, "intra_node_bytes_per_s"),
                              kMinBytesPerS, 1e15, true));
  RETURN_IF_ERROR(CheckDouble(spec.inter_node_bytes_per_s(),
                              Path(prefix, "inter_node_bytes_per_s"),
                              kMinBytesPerS, 1e15, true));
  RETURN_IF_ERROR(CheckDouble(spec.intra_node_latency_s(),
                              Path(prefix, "intra_node_latency_s"), 0, 1.0,
                              false));
  RETURN_IF_ERROR(CheckDouble(spec.inter_node_latency_s(),
                              Path(prefix, "inter_node_latency_s"), 0, 1.0,
                              false));
  RETURN_IF_ERROR(CheckRange(spec.default_gpus_per_node(),
                             Path(prefix, "default_gpus_per_node"), 0,
                             kMaxGpusPerNode));
  RETURN_IF_ERROR(CheckRange(spec.nvlink_domain_gpus(),
                             Path(prefix, "nvlink_domain_gpus"), 0, kMaxGpus));
  hw.peak_flops_per_s[static_cast<int>(Dtype::kBf16)] =
      spec.peak_bf16_flops_per_s();
  // No FP8 figure: FP8 runs at the BF16 rate (weights dequantised). FP4 keeps
  // 0, which the cost model reads as "no native FP4" (see the proto).
  hw.peak_flops_per_s[static_cast<int>(Dtype::kFp8)] =
      spec.peak_fp8_flops_per_s() > 0 ? spec.peak_fp8_flops_per_s()
                                      : spec.peak_bf16_flops_per_s();
  hw.peak_flops_per_s[static_cast<int>(Dtype::kFp4)] =
      spec.peak_fp4_flops_per_s();
  hw.hbm_bytes = spec.hbm_bytes();
  hw.hbm_bytes_per_s = spec.hbm_bytes_per_s();
  hw.intra_node_bytes_per_s = spec.intra_node_bytes_per_s();
  hw.inter_node_bytes_per_s = spec.inter_node_bytes_per_s();
  hw.intra_node_latency_seconds = spec.intra_node_latency_s();
  hw.inter_node_latency_seconds = spec.inter_node_latency_s();
  return hw;
}

}  // namespace

absl::StatusOr<ClusterDims> ClusterDimsFromProto(const ClusterSpec& cluster) {
  ClusterDims c;
  HardwareSpec hardware_spec;
  std::string hardware_path;
  if (cluster.has_hardware_spec()) {
    hardware_spec = cluster.hardware_spec();
    hardware_path = "cluster.hardware_spec";
  } else {
    const std::string name = cluster.hardware().empty()
                                 ? std::string(kDefaultHardware)
                                 : cluster.hardware();
    absl::StatusOr<HardwareSpec> found = FindCatalogHardware(name);
    if (!found.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cluster.hardware: ", found.status().message()));
    }
    hardware_spec = *std::move(found);
    hardware_path = "cluster.hardware";
  }
  ASSIGN_OR_RETURN(c.hardware,
                   HardwareDimsFromSpec(hardware_spec, hardware_path));

  RETURN_IF_ERROR(
      CheckRange(cluster.num_gpus(), "cluster.num_gpus", 1, kMaxGpus));
  RETURN_IF_ERROR(CheckRange(cluster.gpus_per_node(), "cluster.gpus_per_node",
                             0, kMaxGpusPerNode));
  c.num_gpus = cluster.num_gpus();
  if (cluster.gpus_per_node() > 0) {
    c.gpus_per_node = cluster.gpus_per_node();
  } else {
    c.gpus_per_node = hardware_spec.default_gpus_per_node() > 0
                          ? hardware_spec.default_gpus_per_node()
                          : 8;
    // A cluster smaller than one node (e.g. 2 GPUs) is that part of a node.
    c.gpus_per_node = std::min(c.gpus_per_node, c.num_gpus);
  }
  RETURN_IF_ERROR(CheckRange(cluster.nvlink_domain_gpus(),
                             "cluster.nvlink_domain_gpus", 0, kMaxGpus));
  if (cluster.nvlink_domain_gpus() > 0) {
    if (cluster.nvlink_domain_gpus() % c.gpus_per_node != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cluster.nvlink_domain_gpus must be a multiple of "
          "cluster.gpus_per_node (",
          c.gpus_per_node, "), got ", cluster.nvlink_domain_gpus()));
    }
    c.nvlink_domain_gpus = cluster.nvlink_domain_gpus();
  } else if (hardware_spec.nvlink_domain_gpus() > c.gpus_per_node &&
             hardware_spec.nvlink_domain_gpus() % c.gpus_per_node == 0) {
    // The hardware's domain (NVL72: 72) when nodes tile it; nodes of another
    // size than the rack's trays are the caller's own layout: one node each.
    c.nvlink_domain_gpus = hardware_spec.nvlink_domain_gpus();
  } else {
    c.nvlink_domain_gpus = c.gpus_per_node;
  }
  // num_gpus need not be a multiple of gpus_per_node: part of a node (4 GPUs
  // of an 8-GPU node) and a last, partial node (12 GPUs on 8-GPU nodes) are
  // everyday allocations; placement knows the last node is smaller.
  // Node groups: consecutive nodes in rank order. When a group sets its own
  // gpus_per_node (8-GPU and 4-GPU nodes in one cluster), the groups' GPUs
  // must add up to num_gpus; else their node counts to the node count.
  if (cluster.node_groups_size() > 0) {
    bool sized = false;
    for (const shardplan::v1::NodeGroup& group : cluster.node_groups()) {
      sized |= group.gpus_per_node() != 0 &&
               group.gpus_per_node() != c.gpus_per_node;
    }
    if (!sized && cluster.node_groups_size() > c.num_nodes()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cluster.node_groups has ", cluster.node_groups_size(),
                       " groups for ", c.num_nodes(), " nodes"));
    }
    int64_t nodes = 0;
    int64_t gpus = 0;
    for (int i = 0; i < cluster.node_groups_size(); ++i) {
      const shardplan::v1::NodeGroup& group = cluster.node_groups(i);
      const std::string path = absl::StrCat("cluster.node_groups[", i, "]");
      RETURN_IF_ERROR(CheckRange(
          group.num_nodes(), absl::StrCat(path, ".num_nodes"), 1, kMaxGpus));
      RETURN_IF_ERROR(CheckRange(group.gpus_per_node(),
                                 absl::StrCat(path, ".gpus_per_node"), 0,
                                 kMaxGpusPerNode));
      if (group.name().empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ".name must not be empty"));
      }
      for (int j = 0; j < i; ++j) {
        if (cluster.node_groups(j).name() == group.name()) {
          return absl::InvalidArgumentError(
              absl::StrFormat("%s.name: duplicate node group %s (also at [%d])",
                              path, QuoteUserText(group.name()), j));
        }
      }
      const int size =
          group.gpus_per_node() > 0 ? group.gpus_per_node() : c.gpus_per_node;
      nodes += group.num_nodes();
      gpus += static_cast<int64_t>(group.num_nodes()) * size;
      c.node_groups.push_back({group.name(), group.num_nodes(), size});
      if (sized && gpus <= kMaxGpus) {
        c.node_gpus.insert(c.node_gpus.end(), group.num_nodes(), size);
      }
    }
    if (!sized && nodes != c.num_nodes()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cluster.node_groups: node counts add up to ", nodes, ", expected ",
          c.num_nodes(),
          " (cluster.num_gpus / cluster.gpus_per_node, rounded up)"));
    }
    if (sized && gpus != c.num_gpus) {
      return absl::InvalidArgumentError(
          absl::StrCat("cluster.node_groups: GPUs add up to ", gpus,
                       " (num_nodes x gpus_per_node over the groups), expected "
                       "cluster.num_gpus = ",
                       c.num_gpus));
    }
    if (sized && c.nvlink_domain_gpus > c.gpus_per_node) {
      // Domains are measured on a uniform grid of nodes.
      return absl::InvalidArgumentError(
          absl::StrCat("cluster.nvlink_domain_gpus (", c.nvlink_domain_gpus,
                       ") larger than a node needs nodes of one size, but "
                       "cluster.node_groups set other sizes"));
    }
    if (sized) {
      // Placement order: groups with bigger nodes first (stable), so that
      // instances, tp groups and expert domains that fit a big node are placed
      // on one and the smaller nodes are used last (8, 8, 4, 4 keeps two of
      // three tp-8 instances inside a node; 4, 8, 8, 4 would split all
      // three). Node indices everywhere (placement, removed_nodes, emitted
      // commands) count in this order.
      std::stable_sort(c.node_groups.begin(), c.node_groups.end(),
                       [](const NodeGroupDims& a, const NodeGroupDims& b) {
                         return a.gpus_per_node > b.gpus_per_node;
                       });
      c.node_gpus.clear();
      for (const NodeGroupDims& g : c.node_groups) {
        c.node_gpus.insert(c.node_gpus.end(), g.num_nodes, g.gpus_per_node);
      }
      // Rules that need one node size (the disaggregated pools' uniform
      // nodes) take the smallest node.
      c.gpus_per_node =
          *std::min_element(c.node_gpus.begin(), c.node_gpus.end());
    }
  }
  return c;
}

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
  return w;
}

absl::StatusOr<Problem> ProblemFromProto(const ModelSource& model,
                                         const ClusterSpec& cluster,
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

// === Compact -> proto ========================================================

ModelSpec ModelSpecFromDims(const ModelDims& m) {
  ModelSpec spec;
  spec.set_name(m.name);
  spec.set_family(m.family);
  spec.set_hugging_face_id(m.hugging_face_id);
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
      // some replicas keep theirs inside a node and others do not).
      const int64_t tp = std::max(1, plan.tp);
      bool tp_spans = false;
      for (int64_t g = first_rank; g <= last_rank && !tp_spans; g += tp) {
        tp_spans = NodeOfRank(problem.cluster, g) !=
                   NodeOfRank(problem.cluster, g + tp - 1);
      }
      p->set_tp_spans_nodes(tp_spans);
      p->set_expert_domain_spans_nodes(problem.model.is_moe() &&
                                       last_node > first_node);
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

}  // namespace shardplan::simulator
