#include "tests/client/emit_plan_generator.h"

#include <algorithm>
#include <initializer_list>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/client/emit_test_util.h"

namespace shardplan::client {
namespace {

using shardplan::v1::Plan;

struct Model {
  const char* name;
  const char* hf_id;
  const char* dtype;
  bool moe;
  bool sparse_mla;
  bool mla;  // multi-head latent attention (kv_lora_rank > 0)
  // nvfp4HuggingFaceId: launched on GPUs with FP4 tensor cores.
  const char* nvfp4_hf_id = "";
};
// Catalog entries (ListCatalog's huggingFaceId and nativeDtype).
constexpr Model kModels[] = {
    {"llama-3.1-8b", "meta-llama/Llama-3.1-8B-Instruct", "bf16", false, false,
     false},
    {"llama-3.1-70b", "meta-llama/Llama-3.1-70B-Instruct", "bf16", false, false,
     false},
    {"llama-3.1-405b", "meta-llama/Llama-3.1-405B-Instruct", "bf16", false,
     false, false},
    {"qwen3-32b", "Qwen/Qwen3-32B", "bf16", false, false, false},
    {"deepseek-v3", "deepseek-ai/DeepSeek-V3", "fp8", true, false, true},
    {"qwen3-235b-a22b", "Qwen/Qwen3-235B-A22B", "bf16", true, false, false},
    {"mixtral-8x7b", "mistralai/Mixtral-8x7B-Instruct-v0.1", "bf16", true,
     false, false},
    {"gpt-oss-120b", "openai/gpt-oss-120b", "fp4", true, false, false},
    {"kimi-k2.5", "moonshotai/Kimi-K2.5", "fp4", true, false, true,
     "nvidia/Kimi-K2.5-NVFP4"},
    {"glm-5", "zai-org/GLM-5", "bf16", true, true, true},
    {"qwen3.5-397b-a17b", "Qwen/Qwen3.5-397B-A17B", "bf16", true, false, false},
    {"minimax-m2.5", "MiniMaxAI/MiniMax-M2.5", "fp8", true, false, false},
    {"deepseek-v3.2", "deepseek-ai/DeepSeek-V3.2", "fp8", true, true, true},
};

// Catalog hardware: GPUs per node, NVLink domain (0 = a node), FP4 cores.
struct Hardware {
  const char* name;
  int gpus_per_node;
  int nvlink_domain;
  bool fp4;
};
constexpr Hardware kHardware[] = {
    {"h100-sxm-80gb", 8, 0, false},
    {"b200-sxm-180gb", 8, 0, true},
    {"gb200-nvl72", 4, 72, true},
};

int Pick(std::mt19937& rng, std::initializer_list<int> values) {
  std::vector<int> v(values);
  return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
}

// One instance's layout of at most `max_gpus` GPUs.
Plan DrawLayout(std::mt19937& rng, bool moe, int max_gpus) {
  for (;;) {
    Plan p;
    p.set_tp(Pick(rng, {1, 2, 4, 8}));
    p.set_pp(Pick(rng, {1, 1, 1, 2, 4}));
    p.set_dp(moe ? Pick(rng, {1, 1, 2, 4, 8, 16}) : Pick(rng, {1, 1, 1, 2}));
    if (moe) {
      std::vector<int> eps;
      for (int e = 1; e <= p.dp() * p.tp(); ++e) {
        if (p.dp() * p.tp() % e == 0) eps.push_back(e);
      }
      p.set_ep(
          eps[std::uniform_int_distribution<size_t>(0, eps.size() - 1)(rng)]);
      if (p.tp() > 1 && rng() % 2 == 0) {
        for (const char* op : {"qkv", "attention", "attn_out"}) {
          auto* s = p.add_operator_sharding();
          s->set_operator_(op);
          s->set_dim("batch");
        }
      }
    }
    p.set_batch_size(Pick(rng, {1, 3, 16, 64, 200, 700}));
    if (LayoutGpus(p) <= max_gpus) return p;
  }
}

// The cluster of `c`'s nodes as a ClusterSpec: node groups of equal nodes,
// bigger first (NodeGpusOf's order).
shardplan::v1::ClusterSpec ClusterOf(const Hardware& hw, const EmitContext& c) {
  shardplan::v1::ClusterSpec cluster;
  cluster.set_hardware(hw.name);
  cluster.set_num_gpus(c.num_gpus);
  cluster.set_gpus_per_node(c.gpus_per_node);
  if (hw.nvlink_domain > 0) cluster.set_nvlink_domain_gpus(hw.nvlink_domain);
  for (size_t i = 0; i < c.node_gpus.size();) {
    size_t j = i + 1;
    // A rack's trays: two groups (e.g. two halves of a rack), the first of
    // up to 9 trays.
    const bool trays = hw.nvlink_domain > 0;
    while (j < c.node_gpus.size() && c.node_gpus[j] == c.node_gpus[i] &&
           !(trays && i == 0 && j == 9)) {
      ++j;
    }
    auto* g = cluster.add_node_groups();
    g->set_name(absl::StrCat("group", cluster.node_groups_size()));
    g->set_num_nodes(static_cast<int>(j - i));
    g->set_gpus_per_node(c.node_gpus[i]);
    i = j;
  }
  return cluster;
}

}  // namespace

int64_t LayoutGpus(const Plan& p) {
  return static_cast<int64_t>(std::max(1, p.dp())) * std::max(1, p.tp()) *
         std::max(1, p.pp());
}

namespace {

// Requests in flight one instance of `p` serves: batch_size is per replica,
// spread over an MoE instance's attention dp ranks (each runs the rounded-up
// share); a dense model's dp ranks are copies, each with the whole batch.
int64_t InstanceLoad(const Plan& p, bool moe) {
  const int64_t dp = std::max(1, p.dp());
  if (moe || p.ep() > 1) return (p.batch_size() + dp - 1) / dp * dp;
  return static_cast<int64_t>(p.batch_size()) * dp;
}

}  // namespace

Drawn Draw(std::mt19937& rng) {
  Drawn d;
  const Model& m = kModels[rng() % (sizeof(kModels) / sizeof(kModels[0]))];
  const Hardware& hw =
      kHardware[rng() % (sizeof(kHardware) / sizeof(kHardware[0]))];
  const bool rack = hw.nvlink_domain > 0;
  EmitContext& c = d.context;
  c.model_name = m.name;
  c.hugging_face_id = m.hf_id;
  c.native_dtype = m.dtype;
  c.nvfp4_hugging_face_id = m.nvfp4_hf_id;
  c.is_moe = m.moe;
  c.sparse_mla = m.sparse_mla;
  c.mla = m.mla;
  c.fp4_tensor_cores = hw.fp4;
  c.nvlink_domain_gpus = hw.nvlink_domain;
  c.gpus_per_node = rack ? hw.gpus_per_node : Pick(rng, {8, 8, 4});
  if (rng() % 5 == 0) {
    // Node groups: 8- and 4-GPU machines, bigger nodes first (NodeGpusOf);
    // in a rack, groups of trays (an NVLink domain takes nodes of one size).
    if (rack) {
      c.node_gpus.assign(Pick(rng, {1, 4, 9}) + Pick(rng, {1, 2, 9}), 4);
    } else {
      c.node_gpus = {8, 8, 4, 4};
      c.node_gpus.resize(Pick(rng, {2, 3, 4}));
      c.gpus_per_node = 4;
    }
    for (int n : c.node_gpus) c.num_gpus += n;
  } else {
    c.num_gpus = std::uniform_int_distribution<int>(1, rack ? 72 : 64)(rng);
  }
  c.input_tokens = Pick(rng, {128, 1024, 4096, 9000});
  c.output_tokens = Pick(rng, {128, 1024});
  c.concurrency = Pick(rng, {0, 32});
  c.kv_cache_dtype = rng() % 4 == 0 ? (rng() % 2 == 0 ? "fp8" : "fp4") : "";
  d.cluster = ClusterOf(hw, c);
  Plan& p = d.plan;
  if (c.num_gpus >= 2 && rng() % 10 < 3) {
    Plan prefill = DrawLayout(rng, m.moe, c.num_gpus / 2);
    Plan decode = DrawLayout(
        rng, m.moe, c.num_gpus - static_cast<int>(LayoutGpus(prefill)));
    const int64_t left = c.num_gpus - LayoutGpus(prefill) - LayoutGpus(decode);
    const int extra_prefill =
        static_cast<int>(rng() % (1 + left / (2 * LayoutGpus(prefill))));
    const int64_t left2 = left - extra_prefill * LayoutGpus(prefill);
    const int extra_decode =
        static_cast<int>(rng() % (1 + left2 / LayoutGpus(decode)));
    p = Disaggregated(prefill, 1 + extra_prefill, decode, 1 + extra_decode);
    d.gpus = p.prefill_instances() * LayoutGpus(prefill) +
             p.decode_instances() * LayoutGpus(decode);
    d.load = InstanceLoad(decode, m.moe) * p.decode_instances();
  } else {
    p = DrawLayout(rng, m.moe, c.num_gpus);
    const int64_t most = c.num_gpus / LayoutGpus(p);
    p.set_replicas(1 + static_cast<int>(rng() % most));
    d.gpus = p.replicas() * LayoutGpus(p);
    d.load = InstanceLoad(p, m.moe) * p.replicas();
  }
  return d;
}

}  // namespace shardplan::client
