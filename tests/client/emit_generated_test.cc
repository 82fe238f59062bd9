// Launches checked the way a deployer would, on plans drawn from a seeded
// generator (dense and MoE catalog models, 1-64 GPUs with partial nodes and
// node groups of different sizes, aggregated and disaggregated) for every
// engine and target: each launch flag against the engine's flag table, each
// benchmark command against the harness's own argument list
// (tests/client/data/harness/, transcribed with sources), the benchmark's
// concurrency and lengths against the plan's load, every GPU of every rank
// named exactly once across the nodes, and the engine settings the load
// needs (CUDA graphs, context servers' token budget). With
// SHARDPLAN_EMIT_GENERATED_DIR set, the manifests and TensorRT-LLM scripts are
// written there for tests/client/check_manifests.py (the schemas of
// deploy/schemas/), which ctest runs next.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/emit.h"
#include "client/emit/emit_internal.h"
#include "client/engine_flags.h"
#include "gtest/gtest.h"
#include "tests/client/emit_test_util.h"
#include "yaml-cpp/yaml.h"

namespace shardplan::client {
namespace {

using shardplan::v1::Plan;

struct Model {
  const char* name;
  const char* hf_id;
  const char* dtype;
  bool moe;
};
// Catalog entries (ListCatalog's huggingFaceId and nativeDtype).
constexpr Model kModels[] = {
    {"llama-3.1-8b", "meta-llama/Llama-3.1-8B-Instruct", "bf16", false},
    {"llama-3.1-70b", "meta-llama/Llama-3.1-70B-Instruct", "bf16", false},
    {"llama-3.1-405b", "meta-llama/Llama-3.1-405B-Instruct", "bf16", false},
    {"qwen3-32b", "Qwen/Qwen3-32B", "bf16", false},
    {"deepseek-v3", "deepseek-ai/DeepSeek-V3", "fp8", true},
    {"qwen3-235b-a22b", "Qwen/Qwen3-235B-A22B", "bf16", true},
    {"mixtral-8x7b", "mistralai/Mixtral-8x7B-Instruct-v0.1", "bf16", true},
    {"gpt-oss-120b", "openai/gpt-oss-120b", "fp4", true},
};

struct Drawn {
  Plan plan;
  EmitContext context;
  int64_t gpus = 0;  // the plan's
  int64_t load = 0;  // requests in flight the benchmark must hold
};

int Pick(std::mt19937& rng, std::initializer_list<int> values) {
  std::vector<int> v(values);
  return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
}

int64_t LayoutGpus(const Plan& p) {
  return static_cast<int64_t>(std::max(1, p.dp())) * std::max(1, p.tp()) *
         std::max(1, p.pp());
}

// One instance's layout of at most `max_gpus` GPUs.
Plan DrawLayout(std::mt19937& rng, bool moe, int max_gpus) {
  for (;;) {
    Plan p;
    p.set_tp(Pick(rng, {1, 2, 4, 8}));
    p.set_pp(Pick(rng, {1, 1, 1, 2, 4}));
    p.set_dp(moe ? Pick(rng, {1, 1, 2, 4, 8}) : Pick(rng, {1, 1, 1, 2}));
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

// Requests in flight one instance of `p` serves: batch_size is per replica,
// spread over an MoE instance's attention dp ranks (each runs the rounded-up
// share); a dense model's dp ranks are copies, each with the whole batch.
int64_t InstanceLoad(const Plan& p, bool moe) {
  const int64_t dp = std::max(1, p.dp());
  if (moe || p.ep() > 1) return (p.batch_size() + dp - 1) / dp * dp;
  return static_cast<int64_t>(p.batch_size()) * dp;
}

Drawn Draw(std::mt19937& rng) {
  Drawn d;
  const Model& m = kModels[rng() % (sizeof(kModels) / sizeof(kModels[0]))];
  EmitContext& c = d.context;
  c.model_name = m.name;
  c.hugging_face_id = m.hf_id;
  c.native_dtype = m.dtype;
  c.is_moe = m.moe;
  c.gpus_per_node = Pick(rng, {8, 8, 4});
  if (rng() % 5 == 0) {
    // Node groups of different sizes, bigger nodes first (NodeGpusOf).
    c.node_gpus = {8, 8, 4, 4};
    c.node_gpus.resize(Pick(rng, {2, 3, 4}));
    c.gpus_per_node = 4;
    for (int n : c.node_gpus) c.num_gpus += n;
  } else {
    c.num_gpus = std::uniform_int_distribution<int>(1, 64)(rng);
  }
  c.input_tokens = Pick(rng, {128, 1024, 4096, 9000});
  c.output_tokens = Pick(rng, {128, 1024});
  c.concurrency = Pick(rng, {0, 32});
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

// A harness's argument list (tests/client/data/harness/FILE): its flags, and
// the backend values of `backend:` lines.
struct Harness {
  std::set<std::string> flags;
  std::set<std::string> backends;
};
Harness ReadHarness(const std::string& file) {
  Harness h;
  std::ifstream in(std::string(SHARDPLAN_CLIENT_TEST_DATA) + "/harness/" +
                   file);
  std::string line;
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, "--")) h.flags.insert(line);
    if (absl::StartsWith(line, "backend: ")) {
      h.backends.insert(
          std::vector<std::string>(absl::StrSplit(line.substr(9), ' '))[0]);
    }
  }
  return h;
}

// The benchmark command's flags and values (a flag given twice keeps all).
std::multimap<std::string, std::string> BenchFlags(const std::string& text) {
  std::multimap<std::string, std::string> out;
  std::vector<std::string> tokens;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::StartsWith(line, "#")) continue;
    for (absl::string_view t : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
      if (t != "\\") tokens.emplace_back(t);
    }
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (!absl::StartsWith(tokens[i], "--")) continue;
    const bool has_value =
        i + 1 < tokens.size() && !absl::StartsWith(tokens[i + 1], "--");
    out.emplace(tokens[i], has_value ? tokens[i + 1] : "");
  }
  return out;
}

int IntFlag(const std::multimap<std::string, std::string>& flags,
            const std::string& name) {
  int v = -1;
  auto it = flags.find(name);
  if (it != flags.end()) (void)absl::SimpleAtoi(it->second, &v);
  return v;
}

// The GPUs each node physically has (partial last node: all its GPUs).
int PhysicalGpus(const EmitContext& c, int node) {
  return node < static_cast<int>(c.node_gpus.size()) ? c.node_gpus[node]
                                                     : c.gpus_per_node;
}

void CheckScript(Engine engine, const Drawn& d, const std::string& label,
                 const Harness& harness) {
  const emit_internal::Built built =
      emit_internal::Build(engine, d.plan, d.context, /*k8s=*/false);
  ASSERT_TRUE(built.ok) << label;
  const EngineVersion& ev = built.ev;
  // Every GPU of every rank named exactly once across the nodes.
  std::set<std::pair<int, int>> named;
  int64_t covered = 0;
  for (size_t i = 0; i < built.script.commands.size(); ++i) {
    const emit_internal::Command& c = built.script.commands[i];
    const bool router =
        built.disaggregated && i + 1 == built.script.commands.size();
    const std::set<std::string>& known =
        router ? ev.router.known_flags : ev.launch.known_flags;
    for (size_t a = 1; a < c.args.size(); ++a) {
      const std::string flag = c.args[a].substr(0, c.args[a].find(' '));
      EXPECT_TRUE(known.count(flag) > 0) << label << ": " << flag;
    }
    if (router) continue;
    int first = 0;
    bool pinned = false;
    for (const std::string& e : c.env) {
      if (!absl::StartsWith(e, "CUDA_VISIBLE_DEVICES=")) continue;
      pinned = true;
      std::vector<std::string> ids = absl::StrSplit(e.substr(21), ',');
      EXPECT_EQ(static_cast<int>(ids.size()), c.gpus) << label;
      (void)absl::SimpleAtoi(ids[0], &first);
    }
    std::vector<emit_internal::Segment> spans = c.spans;
    if (spans.empty()) {
      spans.push_back({c.node, first, c.gpus, false});
      if (!pinned) {
        EXPECT_EQ(c.gpus, PhysicalGpus(d.context, c.node))
            << label << ": an unpinned command must own its whole node";
      }
    }
    for (const emit_internal::Segment& s : spans) {
      const bool part = s.gpus < PhysicalGpus(d.context, s.node);
      if (!c.spans.empty() && part) {
        // Ray offers only these GPUs there; an MPI world is warned about.
        EXPECT_TRUE(
            engine == Engine::kVllm
                ? absl::StrContains(c.comments.back(), "CUDA_VISIBLE_DEVICES=")
                : !built.script.warnings.empty())
            << label << ": part of node " << s.node << " not pinned";
      }
      for (int g = s.first_gpu; g < s.first_gpu + s.gpus; ++g) {
        EXPECT_LT(g, PhysicalGpus(d.context, s.node)) << label;
        EXPECT_TRUE(named.insert({s.node, g}).second)
            << label << ": GPU " << g << " of node " << s.node << " twice";
        ++covered;
      }
    }
    // What each server's load needs of the engine.
    std::map<std::string, int> flags;
    for (size_t a = 1; a < c.args.size(); ++a) {
      std::vector<std::string> kv = absl::StrSplit(c.args[a], ' ');
      int v = 0;
      if (kv.size() == 2 && absl::SimpleAtoi(kv[1], &v)) flags[kv[0]] = v;
    }
    if (engine == Engine::kVllm && flags["--max-num-seqs"] > 512) {
      EXPECT_GE(flags["--max-cudagraph-capture-size"], flags["--max-num-seqs"])
          << label;
    }
    if (engine == Engine::kSglang && flags["--max-running-requests"] > 0) {
      const int dp = std::max(1, flags["--dp-size"]);
      EXPECT_EQ(flags["--max-running-requests"] % dp, 0) << label;
      EXPECT_GE(flags["--cuda-graph-max-bs"],
                flags["--max-running-requests"] / dp)
          << label;
    }
  }
  EXPECT_EQ(covered, d.gpus) << label;

  // The rendered launch and its benchmark.
  const EmittedCommand e = EmitCommand(engine, d.plan, d.context);
  ASSERT_FALSE(e.command.empty()) << label;
  const auto bench = BenchFlags(e.benchmark);
  for (const auto& [flag, value] : bench) {
    EXPECT_TRUE(harness.flags.count(flag) > 0)
        << label << ": " << flag << " is not a flag of "
        << ev.benchmark.command;
  }
  const std::string concurrency =
      engine == Engine::kTrtllm ? "--concurrency" : "--max-concurrency";
  EXPECT_EQ(IntFlag(bench, concurrency), d.load) << label;
  switch (engine) {
    case Engine::kVllm:
    case Engine::kSglang:
      EXPECT_EQ(IntFlag(bench, "--random-input-len"), d.context.input_tokens);
      EXPECT_EQ(IntFlag(bench, "--random-output-len"), d.context.output_tokens);
      break;
    case Engine::kTrtllm: {
      EXPECT_EQ(IntFlag(bench, "--synthetic-input-tokens-mean"),
                d.context.input_tokens);
      EXPECT_EQ(IntFlag(bench, "--output-tokens-mean"),
                d.context.output_tokens);
      std::set<std::string> extra;
      auto [lo, hi] = bench.equal_range("--extra-inputs");
      for (auto it = lo; it != hi; ++it) extra.insert(it->second);
      EXPECT_TRUE(extra.count("ignore_eos:true") > 0) << label;
      EXPECT_TRUE(
          extra.count(absl::StrCat("min_tokens:", d.context.output_tokens)) > 0)
          << label;
      break;
    }
  }
  if (engine == Engine::kSglang) {
    auto it = bench.find("--backend");
    ASSERT_NE(it, bench.end()) << label;
    EXPECT_TRUE(harness.backends.count(it->second) > 0) << label;
  }
  if (engine == Engine::kTrtllm) {
    for (const auto& [file, text] : ScriptFiles(e.command)) {
      const YAML::Node config = YAML::Load(text);
      if (!config["max_batch_size"] || !config["cuda_graph_config"]) continue;
      EXPECT_GE(config["cuda_graph_config"]["max_batch_size"].as<int>(),
                config["max_batch_size"].as<int>())
          << label << " " << file;
      if (absl::StrContains(file, "-ctx")) {
        EXPECT_GT(config["max_num_tokens"].as<int>(), d.context.input_tokens)
            << label << ": a context server must admit a whole prompt";
      }
    }
  }
  // TODO(emit): check every drawn plan against the engine capability rules
  // (client/engines/capabilities.yaml); client_test links no simulator, so
  // this needs the rules readable from the client or a cross-module test.
}

// GPUs a Dynamo graph or Kubernetes manifest asks for.
int64_t ManifestGpus(const std::string& text) {
  int64_t gpus = 0;
  for (const YAML::Node& doc : YAML::LoadAll(text)) {
    const std::string kind = doc["kind"].as<std::string>();
    if (kind == "DynamoGraphDeployment") {
      for (const auto& s : doc["spec"]["components"]) {
        if (s["type"].as<std::string>() == "frontend") continue;
        const int nodes =
            s["multinode"] ? s["multinode"]["nodeCount"].as<int>() : 1;
        gpus += static_cast<int64_t>(s["replicas"].as<int>()) * nodes *
                std::stoi(s["podTemplate"]["spec"]["containers"][0]["resources"]
                           ["limits"]["nvidia.com/gpu"]
                               .as<std::string>());
      }
    } else if (kind == "Deployment") {
      gpus += static_cast<int64_t>(doc["spec"]["replicas"].as<int>()) *
              std::stoi(doc["spec"]["template"]["spec"]["containers"][0]
                           ["resources"]["limits"]["nvidia.com/gpu"]
                               .as<std::string>());
    } else if (kind == "LeaderWorkerSet") {
      const YAML::Node t = doc["spec"]["leaderWorkerTemplate"];
      auto pod = [](const YAML::Node& spec) {
        return std::stoi(spec["spec"]["containers"][0]["resources"]["limits"]
                             ["nvidia.com/gpu"]
                                 .as<std::string>());
      };
      gpus += static_cast<int64_t>(doc["spec"]["replicas"].as<int>()) *
              (pod(t["leaderTemplate"]) +
               (t["size"].as<int>() - 1) * pod(t["workerTemplate"]));
    }
  }
  return gpus;
}

TEST(EmitGeneratedTest, DrawnPlansLaunchAsPlanned) {
  std::mt19937 rng(20261127);
  const std::map<Engine, Harness> harness = {
      {Engine::kVllm, ReadHarness("vllm-bench-serve.txt")},
      {Engine::kSglang, ReadHarness("sglang-bench-serving.txt")},
      {Engine::kTrtllm, ReadHarness("aiperf-profile.txt")},
  };
  for (const auto& [engine, h] : harness) {
    ASSERT_GT(h.flags.size(), 10u) << EngineKey(engine);
  }
  const char* dir = std::getenv("SHARDPLAN_EMIT_GENERATED_DIR");
  auto write = [dir](const std::string& name, const std::string& text) {
    if (dir == nullptr) return;
    std::ofstream(std::string(dir) + "/" + name) << text;
  };
  constexpr int kPlans = 240;
  int disaggregated = 0, moe = 0, partial = 0, manifests = 0, refused = 0;
  for (int i = 0; i < kPlans; ++i) {
    const Drawn d = Draw(rng);
    disaggregated += d.plan.has_prefill();
    moe += d.context.is_moe;
    partial += d.context.num_gpus % d.context.gpus_per_node != 0 ||
               !d.context.node_gpus.empty();
    for (Engine engine : {Engine::kVllm, Engine::kSglang, Engine::kTrtllm}) {
      const std::string label = absl::StrCat(
          "plan ", i, " (", d.context.model_name, " on ", d.context.num_gpus,
          " GPUs, ", EngineKey(engine), "): ", d.plan.ShortDebugString());
      CheckScript(engine, d, label, harness.at(engine));
      if (engine == Engine::kTrtllm) {
        write(absl::StrCat(i, ".trtllm.sh"),
              EmitCommand(engine, d.plan, d.context).command);
        continue;
      }
      for (bool dynamo : {false, true}) {
        const EmittedCommand m =
            dynamo ? EmitDynamo(engine, d.plan, d.context)
                   : EmitKubernetes(engine, d.plan, d.context);
        if (m.command.empty()) {
          // Refused: it says why.
          EXPECT_FALSE(m.warnings.empty()) << label;
          ++refused;
          continue;
        }
        ++manifests;
        bool differ = false;
        for (const std::string& w : m.warnings) {
          differ |= absl::StrContains(w, "different GPU counts") ||
                    absl::StrContains(w, "nodes of different sizes");
        }
        if (!differ) {
          EXPECT_EQ(ManifestGpus(m.command), d.gpus) << label;
        }
        write(absl::StrCat(i, dynamo ? ".dynamo-" : ".k8s-", EngineKey(engine),
                           ".yaml"),
              m.command);
      }
    }
  }
  // The draw covers what it must.
  EXPECT_GT(disaggregated, kPlans / 6);
  EXPECT_GT(moe, kPlans / 4);
  EXPECT_GT(partial, kPlans / 4);
  EXPECT_GT(manifests, kPlans / 2);
  RecordProperty("manifests", manifests);
  RecordProperty("refused", refused);
}

}  // namespace
}  // namespace shardplan::client
