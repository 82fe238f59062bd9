// The evaluation dump's plan set and its text form (evaluation_cases.h).
#include "tests/bench/evaluation_cases.h"

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "shardplan/v1/shardplan.pb.h"
#include "simulator/cost_model.h"
#include "simulator/spec.h"
#include "simulator/types.h"
#include "tests/bench/catalog_models.h"

namespace shardplan::simulator {
namespace {

__attribute__((format(printf, 2, 3))) void Appendf(std::string* out,
                                                   const char* format, ...) {
  char buffer[1024];
  va_list args;
  va_start(args, format);
  const int n = std::vsnprintf(buffer, sizeof(buffer), format, args);
  va_end(args);
  if (n < 0) return;
  if (static_cast<size_t>(n) < sizeof(buffer)) {
    out->append(buffer, n);
    return;
  }
  std::string big(n + 1, '\0');
  va_start(args, format);
  std::vsnprintf(big.data(), big.size(), format, args);
  va_end(args);
  out->append(big.data(), n);
}

struct Config {
  const char* name;
  const char* hardware;
  int gpus_per_node;       // 0: the hardware's
  int nvlink_domain_gpus;  // 0: the hardware's
  bool uneven_nodes;       // node groups of 8 and 4 GPUs
  int input_tokens, output_tokens, concurrency;
  double max_ttft_ms, max_tpot_ms;
  const char* dtype;  // weights and KV cache; "" = native
  const char* engine;
  bool trtllm_waits;    // batch waiting and attention dp balance
  bool explicit_batch;  // plans carry a batch (else 0: the workload's)
  int plans;
};

constexpr Config kConfigs[] = {
    {"h100-batch", "h100-sxm-80gb", 8, 0, false, 1024, 256, 0, 0, 0, "bf16", "",
     false, true, 480},
    {"h100-scan", "h100-sxm-80gb", 8, 0, false, 2048, 512, 0, 0, 0, "", "",
     false, false, 128},
    {"h100-queue", "h100-sxm-80gb", 8, 0, false, 4096, 1024, 512, 0, 0, "",
     "vllm", false, false, 256},
    {"h100-slo-scan", "h100-sxm-80gb", 8, 0, false, 8192, 1024, 0, 3000, 60,
     "fp8", "sglang", false, false, 128},
    {"h100-uneven", "h100-sxm-80gb", 8, 0, true, 1024, 256, 64, 0, 0, "", "",
     false, false, 256},
    {"b200-trtllm", "b200-sxm-180gb", 8, 0, false, 1024, 1024, 128, 2000, 40,
     "fp8", "trtllm", true, false, 256},
    {"gb200-batch", "gb200-nvl72", 4, 72, false, 2048, 256, 0, 0, 0, "", "",
     false, true, 256},
};

std::unique_ptr<const CostModel> MakeModel(const std::string& name,
                                           const Config& c) {
  absl::StatusOr<CatalogModel> catalog = ResolveCatalogModel(name);
  if (!catalog.ok()) return nullptr;
  const shardplan::v1::ModelSource& source = catalog->source;
  shardplan::v1::ClusterSpec cluster;
  cluster.set_hardware(c.hardware);
  int gpus = BenchGpusFor(catalog->dims);
  if (c.gpus_per_node == 4 && gpus < 72) gpus *= 2;  // the same memory
  cluster.set_gpus_per_node(c.gpus_per_node);
  cluster.set_nvlink_domain_gpus(c.nvlink_domain_gpus);
  if (c.uneven_nodes) {
    // Whole 8-GPU nodes and one of 4: replicas placed differently.
    const int big = gpus / 8;
    shardplan::v1::NodeGroup* a = cluster.add_node_groups();
    a->set_name("big");
    a->set_num_nodes(big);
    a->set_gpus_per_node(8);
    shardplan::v1::NodeGroup* b = cluster.add_node_groups();
    b->set_name("small");
    b->set_num_nodes(1);
    b->set_gpus_per_node(4);
    gpus = big * 8 + 4;
  }
  cluster.set_num_gpus(gpus);
  shardplan::v1::Workload workload;
  workload.set_input_tokens(c.input_tokens);
  workload.set_output_tokens(c.output_tokens);
  workload.set_concurrency(c.concurrency);
  workload.set_max_ttft_ms(c.max_ttft_ms);
  workload.set_max_tpot_ms(c.max_tpot_ms);
  workload.set_weight_dtype(c.dtype);
  workload.set_kv_cache_dtype(c.dtype);
  workload.set_engine(c.engine);
  absl::StatusOr<Problem> problem = ProblemFromProto(source, cluster, workload);
  if (!problem.ok()) {
    std::fprintf(stderr, "%s/%s: %s\n", name.c_str(), c.name,
                 std::string(problem.status().message()).c_str());
    return nullptr;
  }
  if (c.trtllm_waits) {
    problem->workload.batch_wait_timeout_iterations = 10;
    problem->workload.attention_dp_balance_timeout_iterations = 50;
    problem->workload.attention_dp_balance_batching_wait_iterations = 10;
  }
  absl::StatusOr<std::unique_ptr<const CostModel>> model =
      CostModel::Create(*problem);
  if (!model.ok()) {
    std::fprintf(stderr, "%s/%s: %s\n", name.c_str(), c.name,
                 std::string(model.status().message()).c_str());
    return nullptr;
  }
  return std::move(*model);
}

std::vector<int> Divisors(int n) {
  std::vector<int> d;
  for (int i = 1; i <= n; ++i) {
    if (n % i == 0) d.push_back(i);
  }
  return d;
}

// Aggregated and disaggregated plans, seeded, each accepted by ValidatePlan.
std::vector<PlanDims> Plans(const CostModel& model, const Config& c,
                            uint32_t seed) {
  const int n = model.problem().cluster.num_gpus;
  const bool moe = model.problem().model.is_moe();
  std::vector<PlanDims> degrees;
  for (int tp : Divisors(n)) {
    for (int pp : Divisors(n / tp)) {
      for (int dp : Divisors(n / (tp * pp))) {
        for (int ep = 1; ep <= dp * tp; ep *= 2) {
          PlanDims p;
          p.replicas = n / (tp * pp * dp);
          p.dp = dp;
          p.tp = tp;
          p.pp = pp;
          p.ep = ep;
          degrees.push_back(p);
          if (!moe) break;
        }
      }
    }
  }
  std::mt19937 rng(seed);
  const std::vector<int>& batches = BatchSizeCandidates();
  std::vector<PlanDims> plans;
  const int aggregated = c.plans * 7 / 8;
  for (int attempt = 0;
       attempt < c.plans * 200 && static_cast<int>(plans.size()) < aggregated;
       ++attempt) {
    PlanDims p = degrees[rng() % degrees.size()];
    RandomDimsAndMicroBatches(rng, &p);
    p.batch_size = c.explicit_batch
                       ? batches[rng() % batches.size()] * (1 + rng() % 3)
                       : 0;
    if (p.pp > 1 && rng() % 4 == 0) {
      // An explicit uneven stage split.
      const int layers = model.problem().model.layers;
      int left = layers;
      p.num_stage_layers = p.pp;
      for (int st = 0; st < p.pp; ++st) {
        const int rest = p.pp - st - 1;
        const int most = static_cast<int>(static_cast<uint32_t>(left) -
                                          static_cast<uint32_t>(rest));
        // With more stages than layers `most` drops below 1 and the draw
        // leaves int's range (ValidatePlan rejects that plan). The sums wrap
        // in unsigned arithmetic, where wrapping is defined, so the plan set
        // stays the one the stored fingerprints were taken on.
        const uint32_t take =
            st == p.pp - 1
                ? static_cast<uint32_t>(left)
                : 1u + static_cast<uint32_t>(
                           rng() % static_cast<std::mt19937::result_type>(
                                       static_cast<int64_t>(most)));
        p.stage_layers[st] = static_cast<int16_t>(take);
        left = static_cast<int>(static_cast<uint32_t>(left) - take);
      }
    }
    if (model.ValidatePlan(p).ok()) plans.push_back(p);
  }
  // Disaggregated: x prefill instances of ptp GPUs, y decode instances.
  for (int attempt = 0;
       attempt < c.plans * 200 && static_cast<int>(plans.size()) < c.plans;
       ++attempt) {
    const std::vector<int> d = Divisors(n);
    const int ptp = d[rng() % d.size()];
    const int dgpus = d[rng() % d.size()];
    if (ptp >= n || dgpus >= n) continue;
    const int x_max = (n - dgpus) / ptp;
    if (x_max < 1) continue;
    const int x = 1 + static_cast<int>(rng() % x_max);
    if ((n - x * ptp) % dgpus != 0) continue;
    PlanDims p;
    p.disaggregated = true;
    p.prefill_instances = x;
    p.prefill.tp = ptp;
    p.prefill.batch_size = 1 + static_cast<int>(rng() % 4);
    p.decode_instances = (n - x * ptp) / dgpus;
    if (moe && rng() % 2 == 0) {
      p.dp = dgpus;
      p.ep = dgpus;
    } else {
      p.tp = dgpus;
    }
    p.batch_size = c.explicit_batch ? batches[rng() % batches.size()] : 0;
    if (model.ValidatePlan(p).ok()) plans.push_back(p);
  }
  return plans;
}

void AppendCost(std::string* out, const char* tag,
                const std::array<OpCost, kNumOpKinds>& ops) {
  Appendf(out, " %s", tag);
  for (const OpCost& o : ops) {
    Appendf(out, " %a/%a/%a", static_cast<double>(o.compute_seconds),
            static_cast<double>(o.memory_seconds),
            static_cast<double>(o.comm_seconds));
  }
}

}  // namespace

std::string EvaluationText(const Evaluation& e) {
  std::string out;
  Appendf(
      &out,
      " f=%d r=%d %a %a tok=%a %a ttft=%a tpot=%a pre=%a it=%a b=%d/%d/%d/%d "
      "q=%a %a mem=%a %a %a %a %a",
      e.feasible, static_cast<int>(e.reason), e.reason_value, e.reason_limit,
      e.output_tokens_per_s, e.output_tokens_per_s_per_gpu, e.ttft_seconds,
      e.tpot_seconds, e.prefill_seconds, e.decode_iteration_seconds,
      e.batch_size, e.batch_per_rank, e.running_batch, e.queued_requests,
      e.queue_wait_seconds, e.preemption_wait_seconds, e.weights_bytes,
      e.kv_cache_bytes, e.activations_bytes, e.capacity_bytes, e.kv_room_bytes);
  AppendCost(&out, "dec", e.decode);
  AppendCost(&out, "pre", e.prefill);
  Appendf(
      &out,
      " net=%a %a %a %a bn=%d/%d nodes=%d/%d/%d/%d st=%d dis=%d %a %a %a "
      "%d %a %a %a %a %a %a %a %d %d/%d %d/%d\n",
      e.nvlink_decode_bytes, e.ib_decode_bytes, e.nvlink_prefill_bytes,
      e.ib_prefill_bytes, static_cast<int>(e.bottleneck),
      static_cast<int>(e.bottleneck_op), e.tp_nodes, e.ep_nodes,
      e.replica_nodes, e.pipeline_crosses_nodes, e.pipeline_stages,
      e.disaggregated, e.prefill_queue_seconds, e.kv_transfer_seconds,
      e.kv_transfer_bytes, e.kv_transfer_inter_node, e.kv_transfer_nvlink_share,
      e.prefill_utilization, e.prefill_requests_per_s, e.decode_requests_per_s,
      e.prefill_weights_bytes, e.prefill_kv_cache_bytes,
      e.prefill_activations_bytes, e.prefill_batch_size, e.prefill_instances,
      e.prefill_instance_gpus, e.decode_instances, e.decode_instance_gpus);
  return out;
}

std::string PlanText(const PlanDims& p) {
  std::string out;
  Appendf(&out, "r%d dp%d tp%d pp%d ep%d mb%d b%d d", p.replicas, p.dp, p.tp,
          p.pp, p.ep, p.micro_batches, p.batch_size);
  for (ShardDim d : p.dims) Appendf(&out, "%d", static_cast<int>(d));
  if (p.num_stage_layers > 0) {
    Appendf(&out, " s");
    for (int st = 0; st < p.num_stage_layers; ++st) {
      Appendf(&out, "%s%d", st ? "," : "", p.stage_layers[st]);
    }
  }
  if (p.disaggregated) {
    Appendf(&out, " P%dx(tp%d b%d) D%d", p.prefill_instances, p.prefill.tp,
            p.prefill.batch_size, p.decode_instances);
  }
  return out;
}

void ForEachEvaluationSet(const EvaluationSetVisitor& visit) {
  for (const Config& c : kConfigs) {
    uint32_t seed = 1;
    for (const shardplan::v1::ModelSpec& spec : CatalogModels()) {
      ++seed;
      std::unique_ptr<const CostModel> model = MakeModel(spec.name(), c);
      if (model == nullptr) {
        visit(c.name, spec.name(), nullptr, {});
        continue;
      }
      visit(c.name, spec.name(), model.get(), Plans(*model, c, seed));
    }
  }
}

std::string EvaluationLine(const std::string& config,
                           const std::string& model_name, const PlanDims& p,
                           const Evaluation& e) {
  return config + " " + model_name + " " + PlanText(p) + EvaluationText(e);
}

uint64_t EvaluationSetFingerprint(const std::string& config,
                                  const std::string& model_name,
                                  const CostModel& model,
                                  const std::vector<PlanDims>& plans) {
  uint64_t hash = 0xcbf29ce484222325ULL;  // FNV-1a 64-bit offset basis
  for (const PlanDims& p : plans) {
    for (unsigned char ch :
         EvaluationLine(config, model_name, p, model.Evaluate(p))) {
      hash ^= ch;
      hash *= 0x100000001b3ULL;  // FNV-1a 64-bit prime
    }
  }
  return hash;
}

}  // namespace shardplan::simulator
