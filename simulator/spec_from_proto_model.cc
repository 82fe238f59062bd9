// ModelSource / ModelSpec -> ModelDims and HardwareSpec / ClusterSpec ->
// ClusterDims, validated (simulator/spec_from_proto.h).
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "proto/limits.h"
#include "proto/status_macros.h"
#include "simulator/internal/spec_checks.h"
#include "simulator/placement.h"
#include "simulator/spec_catalog.h"
#include "simulator/spec_from_proto.h"
#include "simulator/spec_hf.h"
#include "simulator/user_text.h"

namespace shardplan::simulator {
namespace {

using internal::CheckDouble;
using internal::CheckRange;
using internal::Path;
using ::shardplan::limits::kMaxExperts;
using ::shardplan::limits::kMaxGpus;
using ::shardplan::limits::kMaxGpusPerNode;
using ::shardplan::limits::kMaxHeadDim;
using ::shardplan::limits::kMaxHeads;
using ::shardplan::limits::kMaxHidden;
using ::shardplan::limits::kMaxIntermediate;
using ::shardplan::limits::kMaxLayers;
using ::shardplan::limits::kMaxLoraRank;
using ::shardplan::limits::kMaxSharedExperts;
using ::shardplan::limits::kMaxTokens;
using ::shardplan::limits::kMaxTotalParams;
using ::shardplan::limits::kMaxVocab;
using ::shardplan::limits::kMinBytes;
using ::shardplan::limits::kMinBytesPerS;
using ::shardplan::limits::kMinFlopsPerS;
using ::shardplan::v1::ClusterSpec;
using ::shardplan::v1::HardwareSpec;
using ::shardplan::v1::ModelSource;
using ::shardplan::v1::ModelSpec;

constexpr absl::string_view kDefaultHardware = "h100-sxm-80gb";

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
  m.nvfp4_hugging_face_id = spec.nvfp4_hugging_face_id();
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
  static constexpr std::pair<absl::string_view, GpuArchitecture>
      kArchitectures[] = {{"", GpuArchitecture::kUnknown},
                          {"sm90", GpuArchitecture::kSm90},
                          {"sm100", GpuArchitecture::kSm100},
                          {"sm103", GpuArchitecture::kSm103},
                          {"sm120", GpuArchitecture::kSm120}};
  bool known_architecture = false;
  for (const auto& [name, architecture] : kArchitectures) {
    if (spec.architecture() != name) continue;
    hw.architecture = architecture;
    known_architecture = true;
  }
  if (!known_architecture) {
    return absl::InvalidArgumentError(
        absl::StrCat(Path(prefix, "architecture"), ": unknown architecture ",
                     QuoteUserText(spec.architecture()),
                     "; known: sm90, sm100, sm103, sm120, or empty"));
  }
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

}  // namespace shardplan::simulator
