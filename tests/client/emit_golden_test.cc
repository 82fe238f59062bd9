// Golden launch scripts per engine x plan shape (tests/client/data/emit/), each
// reviewed against the engines' documentation (client/engines/*.yaml names the
// pages), and a check that every flag the emitter writes is in the engine's
// flag list for the chosen version. SHARDPLAN_UPDATE_GOLDEN=1 rewrites the
// files; review the diff before committing it.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/emit.h"
#include "client/engine_flags.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/engine_version.h"
#include "tests/client/emit_test_util.h"
#include "yaml-cpp/yaml.h"

namespace shardplan::client {
namespace {

using shardplan::v1::Plan;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

struct Shape {
  const char* name;
  Plan plan;
  EmitContext context;
};

// The catalog's answers for the models used (ListCatalog / EvaluatePlan's
// resolved ModelSpec).
EmitContext Model(const std::string& name, int num_gpus) {
  EmitContext c;
  c.model_name = name;
  c.num_gpus = num_gpus;
  c.gpus_per_node = 8;
  c.input_tokens = 1024;
  c.output_tokens = 1024;
  if (name == "llama-3.1-70b") {
    c.hugging_face_id = "meta-llama/Llama-3.1-70B-Instruct";
    c.native_dtype = "bf16";
  } else if (name == "llama-3.1-405b") {
    c.hugging_face_id = "meta-llama/Llama-3.1-405B-Instruct";
    c.native_dtype = "bf16";
  } else if (name == "deepseek-v3") {
    c.hugging_face_id = "deepseek-ai/DeepSeek-V3";
    c.native_dtype = "fp8";
    c.is_moe = true;
    c.mla = true;
  } else if (name == "gpt-oss-120b") {
    c.hugging_face_id = "openai/gpt-oss-120b";
    c.native_dtype = "fp4";
    c.is_moe = true;
  } else if (name == "deepseek-v3.2") {
    c.hugging_face_id = "deepseek-ai/DeepSeek-V3.2";
    c.native_dtype = "fp8";
    c.is_moe = true;
    c.sparse_mla = true;
    c.mla = true;
  } else if (name == "glm-5") {
    c.hugging_face_id = "zai-org/GLM-5";
    c.native_dtype = "bf16";
    c.is_moe = true;
    c.sparse_mla = true;
    c.mla = true;
  } else if (name == "qwen3.5-397b-a17b") {
    c.hugging_face_id = "Qwen/Qwen3.5-397B-A17B";
    c.native_dtype = "bf16";
    c.is_moe = true;
  } else if (name == "minimax-m2.5") {
    c.hugging_face_id = "MiniMaxAI/MiniMax-M2.5";
    c.native_dtype = "fp8";
    c.is_moe = true;
  } else if (name == "kimi-k2.5") {
    // The release (INT4 experts) and NVIDIA's NVFP4 checkpoint, launched on
    // GPUs with FP4 tensor cores (simulator/catalog/models/kimi-k2.5.yaml).
    c.hugging_face_id = "moonshotai/Kimi-K2.5";
    c.nvfp4_hugging_face_id = "nvidia/Kimi-K2.5-NVFP4";
    c.native_dtype = "fp4";
    c.is_moe = true;
    c.mla = true;
  } else if (name == "llama-3.3-70b") {
    // NVIDIA's ModelOpt NVFP4 checkpoint of the model, as a --model-file spec
    // names it (https://huggingface.co/nvidia/Llama-3.3-70B-Instruct-FP4).
    c.hugging_face_id = "nvidia/Llama-3.3-70B-Instruct-FP4";
    c.native_dtype = "fp4";
  }
  return c;
}

// The same on Blackwell (FP4 tensor cores): B200 nodes of 8, or GB200 NVL72
// compute trays of 4 in one 72-GPU NVLink domain.
EmitContext Blackwell(EmitContext c, bool nvl72) {
  c.fp4_tensor_cores = true;
  if (nvl72) {
    c.gpus_per_node = 4;
    c.nvlink_domain_gpus = 72;
  }
  return c;
}

std::vector<Shape> Shapes() {
  std::vector<Shape> shapes;
  shapes.push_back(
      {"dense_tp", MakePlan(1, 1, 8, 1, 1, 256), Model("llama-3.1-70b", 8)});
  shapes.push_back({"dense_dp_2nodes", MakePlan(1, 2, 8, 1, 1, 256),
                    Model("llama-3.1-70b", 16)});
  {
    EmitContext c = Model("llama-3.1-405b", 16);
    c.weight_dtype = "fp8";
    c.kv_cache_dtype = "fp8";
    shapes.push_back({"pp_2nodes", MakePlan(1, 1, 8, 2, 1, 128), c});
  }
  {
    EmitContext c = Model("deepseek-v3", 8);
    c.kv_cache_dtype = "fp8";
    shapes.push_back({"moe_dpep_1node", MakePlan(1, 1, 8, 1, 8, 512, true), c});
  }
  // batch_size is requests in flight per replica: 256 on each of 4 DP ranks.
  shapes.push_back({"moe_dpep_4nodes", MakePlan(1, 4, 8, 1, 32, 1024, true),
                    Model("deepseek-v3", 32)});
  shapes.push_back({"moe_replicated", MakePlan(2, 1, 8, 1, 8, 512, true),
                    Model("deepseek-v3", 16)});
  shapes.push_back({"uneven_stages",
                    MakePlan(1, 1, 4, 2, 1, 64, false, {44, 36}),
                    Model("llama-3.1-70b", 8)});
  // 12 GPUs on 8-GPU nodes: node 1 has only 4.
  shapes.push_back({"partial_node", MakePlan(3, 1, 4, 1, 4, 128),
                    Model("gpt-oss-120b", 12)});
  // Node groups of different sizes: one 8-GPU node, then two 4-GPU nodes.
  {
    EmitContext c = Model("llama-3.1-70b", 16);
    c.node_gpus = {8, 4, 4};
    shapes.push_back({"node_groups_tp4", MakePlan(4, 1, 4, 1, 1, 64), c});
    shapes.push_back({"node_groups_tp8", MakePlan(2, 1, 8, 1, 1, 128), c});
  }
  // Disaggregated (plan.prefill/decode, built by hand as the server returns
  // them): 1P1D on one node, and 2P1D of DeepSeek over 4 nodes (each prefill
  // instance one node, the decode instance two).
  shapes.push_back({"disagg_1p1d_1node",
                    Disaggregated(MakePlan(1, 1, 4, 1, 1, 16), 1,
                                  MakePlan(1, 1, 4, 1, 1, 128), 1),
                    Model("llama-3.1-70b", 8)});
  shapes.push_back({"disagg_2p1d_4nodes",
                    Disaggregated(MakePlan(1, 1, 8, 1, 8, 32, true), 2,
                                  MakePlan(1, 2, 8, 1, 16, 256, true), 1),
                    Model("deepseek-v3", 32)});
  // Blackwell: an NVFP4 checkpoint with an FP8 KV cache on one B200 node;
  // an FP4 KV cache; DeepSeek-V3.2 (sparse MLA) with wide EP over 8 GB200
  // trays of one NVLink domain; and disaggregated on GB200 (2 prefill
  // instances of 2 trays, a decode instance of 4).
  {
    EmitContext c = Blackwell(Model("kimi-k2.5", 8), false);
    c.kv_cache_dtype = "fp8";
    shapes.push_back(
        {"b200_nvfp4_dpep", MakePlan(1, 1, 8, 1, 8, 256, true), c});
  }
  {
    EmitContext c = Blackwell(Model("llama-3.1-70b", 8), false);
    c.kv_cache_dtype = "fp4";
    shapes.push_back({"b200_kv_fp4", MakePlan(1, 1, 8, 1, 1, 256), c});
  }
  // Kimi-K2.5 on two H100 nodes: no FP4 tensor cores, so the release's INT4
  // experts (weight-only kernels, as priced) for vLLM and SGLang; the server
  // lists no TensorRT-LLM (capability rule trtllm-kimi-int4-checkpoint).
  {
    EmitContext c = Model("kimi-k2.5", 16);
    c.kv_cache_dtype = "fp8";
    c.runnable_engines = {"vllm", "sglang"};
    shapes.push_back(
        {"h100_kimi_int4_dpep", MakePlan(1, 1, 16, 1, 16, 512, true), c});
  }
  // An NVFP4 checkpoint with an FP4 KV cache on one B200 node: each engine's
  // newest release keeps it (vLLM nvfp4, SGLang fp4_e2m1, TensorRT-LLM
  // kv_cache_config.dtype nvfp4), with the release it needs in the header.
  {
    EmitContext c = Blackwell(Model("llama-3.3-70b", 8), false);
    c.kv_cache_dtype = "fp4";
    shapes.push_back({"b200_nvfp4_kv_fp4", MakePlan(4, 1, 2, 1, 1, 128), c});
  }
  {
    EmitContext c = Blackwell(Model("deepseek-v3.2", 32), true);
    c.kv_cache_dtype = "fp8";
    shapes.push_back(
        {"gb200_dsv32_wide_ep", MakePlan(1, 1, 32, 1, 32, 1024, true), c});
    shapes.push_back({"gb200_disagg_2p1d",
                      Disaggregated(MakePlan(1, 1, 8, 1, 8, 8, true), 2,
                                    MakePlan(1, 1, 16, 1, 16, 512, true), 1),
                      c});
  }
  // The other 2026 models: Qwen3.5 (hybrid linear attention) tp 8 x ep 8 on
  // one B200 node; MiniMax-M2.5's FP8 checkpoint with DP attention; GLM-5
  // (DeepSeek sparse attention, BF16) with its experts over 64 GPUs, 16 trays
  // of one 72-GPU NVLink domain (256 experts: 72 does not divide them).
  {
    EmitContext c = Blackwell(Model("qwen3.5-397b-a17b", 8), false);
    c.kv_cache_dtype = "fp8";
    shapes.push_back({"b200_qwen35_tp8", MakePlan(1, 1, 8, 1, 8, 256), c});
  }
  // The same Qwen3.5 layout over two GB200 trays: one vLLM DP rank whose
  // experts span the trays (no all-to-all backend: vLLM runs one only with
  // data parallelism).
  {
    EmitContext c = Blackwell(Model("qwen3.5-397b-a17b", 8), true);
    c.kv_cache_dtype = "fp8";
    shapes.push_back({"gb200_qwen35_tp8", MakePlan(1, 1, 8, 1, 8, 256), c});
  }
  {
    EmitContext c = Blackwell(Model("minimax-m2.5", 8), false);
    shapes.push_back(
        {"b200_minimax_dpep", MakePlan(1, 1, 8, 1, 8, 512, true), c});
  }
  {
    EmitContext c = Blackwell(Model("glm-5", 64), true);
    c.weight_dtype = "fp8";
    c.kv_cache_dtype = "fp8";
    shapes.push_back(
        {"gb200_glm5_wide_ep64", MakePlan(1, 1, 64, 1, 64, 2048, true), c});
  }
  return shapes;
}

struct Case {
  Engine engine;
  std::string version;  // "" = newest
  std::string file;
  Shape shape;
  bool k8s = false;     // a Kubernetes manifest instead of a script
  bool dynamo = false;  // a Dynamo graph deployment instead of a script
};

std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (const Shape& s : Shapes()) {
    for (Engine e : {Engine::kVllm, Engine::kSglang, Engine::kTrtllm}) {
      cases.push_back(
          {e, "", absl::StrCat(s.name, ".", EngineKey(e), ".sh"), s});
    }
  }
  // Kubernetes (LeaderWorkerSet) manifests of the same launches.
  for (const Shape& s : Shapes()) {
    const std::string name = s.name;
    if (name == "dense_tp" || name == "pp_2nodes" ||
        name == "moe_dpep_4nodes" || name == "partial_node" ||
        name == "node_groups_tp4" || name == "gb200_dsv32_wide_ep") {
      for (Engine e : {Engine::kVllm, Engine::kSglang}) {
        cases.push_back({e, "",
                         absl::StrCat(name, ".k8s-", EngineKey(e), ".yaml"), s,
                         true});
      }
    }
  }
  // Dynamo graphs: aggregated on one and on several nodes, disaggregated.
  for (const Shape& s : Shapes()) {
    const std::string name = s.name;
    if (name == "dense_tp" || name == "moe_dpep_4nodes" ||
        absl::StartsWith(name, "disagg_") || absl::StartsWith(name, "gb200_")) {
      for (Engine e : {Engine::kVllm, Engine::kSglang}) {
        Case c{e, "", absl::StrCat(name, ".dynamo-", EngineKey(e), ".yaml"), s};
        c.dynamo = true;
        cases.push_back(c);
      }
    }
  }
  // The older flag tables.
  for (const Shape& s : Shapes()) {
    if (std::string(s.name) == "pp_2nodes") {
      cases.push_back({Engine::kVllm, "0.11.2", "pp_2nodes.vllm-0.11.sh", s});
    }
    if (std::string(s.name) == "moe_dpep_1node") {
      cases.push_back(
          {Engine::kSglang, "0.4.9", "moe_dpep_1node.sglang-0.4.sh", s});
      cases.push_back(
          {Engine::kTrtllm, "1.0.0", "moe_dpep_1node.trtllm-1.0.sh", s});
    }
  }
  return cases;
}

std::string Render(const Case& c) {
  EmitContext context = c.shape.context;
  context.engine_version = c.version;
  const EmittedCommand e =
      c.dynamo ? EmitDynamo(c.engine, c.shape.plan, context)
      : c.k8s  ? EmitKubernetes(c.engine, c.shape.plan, context)
               : EmitCommand(c.engine, c.shape.plan, context);
  std::string out;
  for (const std::string& w : e.warnings) {
    absl::StrAppend(&out, "# stderr: warning: ", w, "\n");
  }
  absl::StrAppend(&out, e.command);
  return out;
}

std::string GoldenPath(const std::string& file) {
  return absl::StrCat(SHARDPLAN_CLIENT_TEST_DATA, "/emit/", file);
}

TEST(EmitGoldenTest, MatchesReviewedScripts) {
  const bool update = std::getenv("SHARDPLAN_UPDATE_GOLDEN") != nullptr;
  for (const Case& c : Cases()) {
    const std::string got = Render(c);
    const std::string path = GoldenPath(c.file);
    if (update) {
      std::ofstream(path) << got;
      continue;
    }
    std::ifstream in(path);
    ASSERT_TRUE(in.good()) << "missing " << path
                           << " (run with SHARDPLAN_UPDATE_GOLDEN=1)";
    std::stringstream want;
    want << in.rdbuf();
    EXPECT_EQ(got, want.str()) << c.file;
  }
}

// A manifest's containers run `sh -c "<command>"`: the same check on each.
void ExpectKnownManifestFlags(const std::string& manifest,
                              const EngineVersion& ev,
                              const std::string& label) {
  constexpr absl::string_view kShell = "[\"sh\", \"-c\", \"";
  int commands = 0;
  for (absl::string_view line : absl::StrSplit(manifest, '\n')) {
    const size_t at = line.find(kShell);
    if (at == absl::string_view::npos) continue;
    absl::string_view command = line.substr(at + kShell.size());
    command = command.substr(0, command.rfind("\"]"));
    ExpectKnownFlags(std::string(command), ev, label);
    ++commands;
  }
  // A Deployment has one container; a LeaderWorkerSet a leader and a worker.
  EXPECT_TRUE(commands == 1 || commands == 2) << label << ": " << commands;
}

int64_t PlanGpus(const Plan& p) {
  auto gpus = [](const Plan& q) {
    return static_cast<int64_t>(std::max(1, q.dp())) * std::max(1, q.tp()) *
           std::max(1, q.pp());
  };
  if (p.has_prefill()) {
    return p.prefill_instances() * gpus(p.prefill()) +
           p.decode_instances() * gpus(p.decode());
  }
  return std::max(1, p.replicas()) * gpus(p);
}

// A Dynamo worker's args: the engine's launch flags and the Dynamo worker's
// own.
void ExpectKnownDynamoFlags(const std::string& manifest,
                            const EngineVersion& ev, const std::string& label) {
  const YAML::Node doc = YAML::Load(manifest);
  int workers = 0;
  for (const auto& component : doc["spec"]["components"]) {
    const YAML::Node args =
        component["podTemplate"]["spec"]["containers"][0]["args"];
    if (!args) continue;
    ++workers;
    for (const auto& a : args) {
      const std::string arg = a.as<std::string>();
      if (!absl::StartsWith(arg, "--")) continue;
      EXPECT_TRUE(ev.launch.known_flags.count(arg) > 0 ||
                  ev.dynamo.known_flags.count(arg) > 0)
          << label << ": " << arg << " is not a flag of `" << ev.dynamo.command
          << "` (" << absl::StrJoin(ev.dynamo.sources, ", ") << ")";
    }
  }
  EXPECT_GE(workers, 1) << label;
}

TEST(EmitGoldenTest, DynamoGraphsServeEveryGpuOfThePlan) {
  for (const Case& c : Cases()) {
    if (!c.dynamo) continue;
    const YAML::Node doc = YAML::Load(Render(c));
    EXPECT_EQ(doc["kind"].as<std::string>(), "DynamoGraphDeployment");
    int64_t gpus = 0;
    std::set<std::string> sub_types;
    for (const auto& s : doc["spec"]["components"]) {
      const std::string type = s["type"].as<std::string>();
      if (type == "frontend") continue;
      const int nodes =
          s["multinode"] ? s["multinode"]["nodeCount"].as<int>() : 1;
      const YAML::Node main = s["podTemplate"]["spec"]["containers"][0];
      EXPECT_EQ(main["name"].as<std::string>(), "main") << c.file;
      gpus +=
          static_cast<int64_t>(s["replicas"].as<int>()) * nodes *
          std::stoi(
              main["resources"]["limits"]["nvidia.com/gpu"].as<std::string>());
      if (type != "worker") sub_types.insert(type);
    }
    EXPECT_EQ(gpus, PlanGpus(c.shape.plan)) << c.file;
    if (c.shape.plan.has_prefill()) {
      EXPECT_EQ(sub_types, (std::set<std::string>{"prefill", "decode"}))
          << c.file;
    }
  }
  // TensorRT-LLM: a warning, no manifest.
  const Shape dense = Shapes()[0];
  const EmittedCommand trt =
      EmitDynamo(Engine::kTrtllm, dense.plan, dense.context);
  EXPECT_TRUE(trt.command.empty());
  EXPECT_FALSE(trt.warnings.empty());
}

TEST(EmitGoldenTest, EveryEmittedFlagIsTheEnginesFlag) {
  for (const Case& c : Cases()) {
    absl::StatusOr<EngineVersion> ev = FindEngineVersion(c.engine, c.version);
    ASSERT_TRUE(ev.ok()) << ev.status();
    if (c.dynamo) {
      ExpectKnownDynamoFlags(Render(c), *ev, c.file);
    } else if (c.k8s) {
      ExpectKnownManifestFlags(Render(c), *ev, c.file);
    } else {
      ExpectKnownFlags(Render(c), *ev, c.file);
    }
  }
}

// The config files the scripts write (heredocs) are YAML maps, and a
// TensorRT-LLM router config lists, per role, as many servers as it says
// (num_instances) — those the script starts, each on a port of its own host.
TEST(EmitGoldenTest, ConfigFilesInScriptsAreYaml) {
  int routers = 0;
  for (const Case& c : Cases()) {
    if (c.k8s || c.dynamo) continue;
    const std::string script = Render(c);
    for (const auto& [name, text] : ScriptFiles(script)) {
      YAML::Node doc;
      try {
        doc = YAML::Load(text);
      } catch (const std::exception& e) {
        ADD_FAILURE() << c.file << ": " << name << ": " << e.what();
        continue;
      }
      EXPECT_TRUE(doc.IsMap()) << c.file << ": " << name;
      if (name != "shardplan-trtllm-disagg.yaml") continue;
      ++routers;
      std::set<std::string> urls;
      for (const char* role : {"context_servers", "generation_servers"}) {
        const YAML::Node servers = doc[role];
        ASSERT_TRUE(servers.IsMap()) << c.file << ": " << role;
        EXPECT_EQ(servers["num_instances"].as<size_t>(), servers["urls"].size())
            << c.file << ": " << role;
        for (const auto& u : servers["urls"]) {
          const std::string url = u.as<std::string>();
          EXPECT_TRUE(urls.insert(url).second) << c.file << ": " << url;
          // Each URL is a server the script starts: host and port appear
          // in one of its launch commands' placement and flags.
          const std::string port = url.substr(url.rfind(':') + 1);
          EXPECT_THAT(script, ::testing::HasSubstr("--port " + port))
              << c.file << ": " << url;
        }
      }
      EXPECT_EQ(c.shape.plan.prefill_instances(),
                static_cast<int>(doc["context_servers"]["urls"].size()))
          << c.file;
    }
  }
  // disagg_1p1d_1node, disagg_2p1d_4nodes and gb200_disagg_2p1d
  EXPECT_EQ(routers, 3);
}

TEST(EmitGoldenTest, ManifestsAreDeploymentsOrLeaderWorkerSetsWithAService) {
  for (const Case& c : Cases()) {
    if (!c.k8s) continue;
    std::vector<YAML::Node> docs;
    try {
      docs = YAML::LoadAll(Render(c));
    } catch (const std::exception& e) {
      ADD_FAILURE() << c.file << ": " << e.what();
      continue;
    }
    ASSERT_EQ(docs.size(), 2u) << c.file;
    // One node per instance: a Deployment; several: a LeaderWorkerSet.
    const std::string name = c.shape.name;
    const bool single_node = name == "dense_tp" || name == "partial_node" ||
                             name == "node_groups_tp4";
    EXPECT_EQ(docs[0]["kind"].as<std::string>(),
              single_node ? "Deployment" : "LeaderWorkerSet")
        << c.file;
    EXPECT_EQ(docs[0]["spec"]["replicas"].as<int>(),
              c.shape.plan.replicas() > 0 ? c.shape.plan.replicas() : 1)
        << c.file;
    EXPECT_EQ(docs[1]["kind"].as<std::string>(), "Service");
  }
  // TensorRT-LLM has no manifest: said on stderr, nothing on stdout.
  const Shape dense = Shapes()[0];
  const EmittedCommand trt =
      EmitKubernetes(Engine::kTrtllm, dense.plan, dense.context);
  EXPECT_TRUE(trt.command.empty());
  EXPECT_THAT(trt.warnings, ::testing::Contains(::testing::HasSubstr("MPI")));
}

TEST(EmitGoldenTest, FlagTablesAreConsistentAndCiteTheirSources) {
  for (Engine e : {Engine::kVllm, Engine::kSglang, Engine::kTrtllm}) {
    const std::vector<EngineVersion>& versions = EngineVersions(e);
    ASSERT_FALSE(versions.empty()) << EngineKey(e);
    EXPECT_TRUE(versions.front().max.empty()) << "newest range is open";
    for (const EngineVersion& v : versions) {
      EXPECT_FALSE(v.launch.sources.empty()) << EngineKey(e) << " " << v.name;
      EXPECT_FALSE(v.benchmark.sources.empty()) << EngineKey(e);
      for (const auto& [role, flag] : v.launch.flags) {
        EXPECT_TRUE(v.launch.known_flags.count(flag) > 0)
            << EngineKey(e) << " " << v.name << " " << role << " " << flag;
      }
      for (const auto& [role, flag] : v.benchmark.flags) {
        EXPECT_TRUE(v.benchmark.known_flags.count(flag) > 0)
            << EngineKey(e) << " benchmark " << role << " " << flag;
      }
      for (const auto& [role, flag] : v.router.flags) {
        EXPECT_TRUE(v.router.known_flags.count(flag) > 0)
            << EngineKey(e) << " router " << role << " " << flag;
      }
      if (!v.router.command.empty()) {
        EXPECT_FALSE(v.router.sources.empty()) << EngineKey(e) << " router";
      }
      if (!v.model_flag.empty()) {
        EXPECT_TRUE(v.launch.known_flags.count(v.model_flag) > 0);
      }
      // Each gate names a role of the range, cites its boundary, and lies
      // inside the range.
      for (const auto& [role, gate] : v.gates) {
        const std::string where =
            absl::StrCat(EngineKey(e), " ", v.name, " gate ", role);
        EXPECT_TRUE(v.launch.flags.count(role) + v.launch.values.count(role) +
                        v.env.count(role) + v.config.count(role) >
                    0)
            << where;
        EXPECT_FALSE(gate.sources.empty()) << where;
        EXPECT_FALSE(gate.since.empty() && gate.until.empty()) << where;
        if (!gate.since.empty()) {
          EXPECT_GT(CompareVersions(gate.since, v.min), 0) << where;
        }
        if (!gate.until.empty() && !v.max.empty()) {
          EXPECT_LT(CompareVersions(gate.until, v.max), 0) << where;
        }
      }
    }
  }
}

// Every key and enumerated value the newest TensorRT-LLM table writes into an
// options file (the golden scripts, aggregated and disaggregated) is a field
// of TorchLlmArgs as the newest llm_args.py read defines it
// (client/engines/trtllm.yaml cites the commit): a key renamed or removed
// there, once written into this list, fails here.
TEST(EmitGoldenTest, TrtllmOptionsFilesUseTorchLlmArgsFields) {
  const std::map<std::string, std::set<std::string>> fields = {
      {"enable_attention_dp", {}},
      {"pp_partition", {}},
      {"tensor_parallel_size", {}},
      {"pipeline_parallel_size", {}},
      {"moe_expert_parallel_size", {}},
      {"max_batch_size", {}},
      {"max_num_tokens", {}},
      {"disable_overlap_scheduler", {}},
      {"kv_cache_config", {"dtype"}},
      {"cuda_graph_config", {"max_batch_size", "enable_padding"}},
      {"moe_config", {"backend"}},
      {"cache_transceiver_config", {"backend", "max_tokens_in_buffer"}},
  };
  const std::map<std::string, std::set<std::string>> values = {
      {"kv_cache_config.dtype", {"auto", "fp8", "fp8_ds_mla", "nvfp4"}},
      {"moe_config.backend",
       {"AUTO", "CUTLASS", "CUTEDSL", "TRTLLM", "DEEPGEMM", "DENSEGEMM",
        "VANILLA", "TRITON", "MARLIN", "MEGAMOE_DEEPGEMM", "MEGAMOE_CUTEDSL"}},
      {"cache_transceiver_config.backend",
       {"DEFAULT", "UCX", "NIXL", "MOONCAKE", "MPI"}},
  };
  int files = 0, keys = 0;
  for (const Case& c : Cases()) {
    // The newest table's scripts only.
    if (c.engine != Engine::kTrtllm || !c.version.empty() || c.k8s ||
        c.dynamo) {
      continue;
    }
    std::ifstream in(GoldenPath(c.file));
    ASSERT_TRUE(in.good()) << c.file;
    std::string line, doc;
    bool inside = false;
    while (std::getline(in, line)) {
      if (!inside && absl::StrContains(line, "<<'EOF'")) {
        inside = true;
        doc.clear();
      } else if (inside && line == "EOF") {
        inside = false;
        ++files;
        const YAML::Node root = YAML::Load(doc);
        for (const auto& kv : root) {
          const std::string key = kv.first.as<std::string>();
          ++keys;
          const auto f = fields.find(key);
          ASSERT_NE(f, fields.end()) << c.file << ": " << key;
          if (!kv.second.IsMap()) continue;
          for (const auto& sub : kv.second) {
            const std::string name = sub.first.as<std::string>();
            EXPECT_EQ(f->second.count(name), 1u)
                << c.file << ": " << key << "." << name;
            const auto v = values.find(key + "." + name);
            if (v != values.end()) {
              EXPECT_EQ(v->second.count(sub.second.as<std::string>()), 1u)
                  << c.file << ": " << key << "." << name << " "
                  << sub.second.as<std::string>();
            }
          }
        }
      } else if (inside) {
        absl::StrAppend(&doc, line, "\n");
      }
    }
  }
  EXPECT_GT(files, 10);
  EXPECT_GT(keys, 40);
}

// Each role a range holds for only some of its releases (a `gates` entry):
// the release just below its boundary does without it (the engine's default
// and a warning), the release at the boundary gets it, and the other way
// round for a role a release dropped.
TEST(EmitGoldenTest, GatedRolesFollowTheirReleaseBoundaries) {
  // Experts over 8 GB200 trays of one NVLink domain.
  EmitContext rack = Blackwell(Model("deepseek-v3.2", 32), true);
  rack.kv_cache_dtype = "fp8";
  const Plan wide = MakePlan(1, 1, 32, 1, 32, 1024, true);
  auto emit = [&](Engine engine, const Plan& plan, EmitContext c,
                  const std::string& version) {
    c.engine_version = version;
    return EmitCommand(engine, plan, c);
  };
  // vLLM --all2all-backend: from 0.11.1 (PR 26732).
  const EmittedCommand vllm_below = emit(Engine::kVllm, wide, rack, "0.11.0");
  EXPECT_FALSE(vllm_below.refused);
  EXPECT_THAT(vllm_below.command, Not(HasSubstr("--all2all-backend")));
  EXPECT_THAT(vllm_below.warnings, Contains(HasSubstr("--all2all-backend")));
  EXPECT_THAT(emit(Engine::kVllm, wide, rack, "0.11.1").command,
              HasSubstr("--all2all-backend flashinfer_all2allv"));
  EXPECT_EQ(FindEngineVersion(Engine::kVllm, "0.11.0")->name,
            FindEngineVersion(Engine::kVllm, "0.11.1")->name);
  EXPECT_EQ(FindEngineVersion(Engine::kVllm, "0.11.0")
                ->launch.known_flags.count("--all2all-backend"),
            0u);
  // One DP rank (tp 8 x ep 8 over two trays): vLLM's all-to-all backends run
  // only when FusedMoEParallelConfig.use_all2all_kernels (EP with dp > 1,
  // pcp > 1 or sequence-parallel MoE, itself dp > 1), so the flag is left
  // out, with no warning, on every release.
  EmitContext trays = Blackwell(Model("qwen3.5-397b-a17b", 8), true);
  const Plan one_rank = MakePlan(1, 1, 8, 1, 8, 256);
  for (const char* version : {"0.11.0", "0.11.1", ""}) {
    const EmittedCommand e = emit(Engine::kVllm, one_rank, trays, version);
    EXPECT_THAT(e.command, HasSubstr("--enable-expert-parallel")) << version;
    EXPECT_THAT(e.command, Not(HasSubstr("--all2all-backend"))) << version;
    EXPECT_THAT(e.warnings, Not(Contains(HasSubstr("--all2all-backend"))))
        << version;
  }
  // TensorRT-LLM's WIDEEP MoE backend: up to 1.3, which refuses it (PRs
  // 17119, 17797).
  EXPECT_THAT(emit(Engine::kTrtllm, wide, rack, "1.2.1").command,
              HasSubstr("backend: WIDEEP"));
  EXPECT_THAT(emit(Engine::kTrtllm, wide, rack, "1.3.0").command,
              Not(HasSubstr("WIDEEP")));
  EXPECT_THAT(emit(Engine::kTrtllm, wide, rack, "").command,
              Not(HasSubstr("WIDEEP")));
  // SGLang's FP4 KV cache: from 0.5.6 (PRs 10078, 12612).
  EmitContext fp4 = Blackwell(Model("llama-3.1-70b", 8), false);
  fp4.kv_cache_dtype = "fp4";
  const Plan dense = MakePlan(1, 1, 8, 1, 1, 256);
  const EmittedCommand sglang_below =
      emit(Engine::kSglang, dense, fp4, "0.5.5");
  EXPECT_THAT(sglang_below.command, Not(HasSubstr("fp4_e2m1")));
  EXPECT_THAT(sglang_below.warnings, Contains(HasSubstr("FP4 KV cache")));
  EXPECT_THAT(emit(Engine::kSglang, dense, fp4, "0.5.6").command,
              HasSubstr("--kv-cache-dtype fp4_e2m1"));
  // A range's label stands for its first release.
  EXPECT_EQ(FindEngineVersion(Engine::kSglang, "0.5")
                ->launch.values.count("kv_cache_fp4"),
            0u);
  // vLLM's --kv-cache-dtype nvfp4: from 0.21.0 (PR 40177, in its release
  // notes; not in the 0.20.x patch releases).
  const EmittedCommand vllm_kv_below =
      emit(Engine::kVllm, dense, fp4, "0.20.2");
  EXPECT_THAT(vllm_kv_below.command, Not(HasSubstr("nvfp4")));
  EXPECT_THAT(vllm_kv_below.warnings, Contains(HasSubstr("FP4 KV cache")));
  const EmittedCommand vllm_kv = emit(Engine::kVllm, dense, fp4, "0.21.0");
  EXPECT_THAT(vllm_kv.command, HasSubstr("--kv-cache-dtype nvfp4"));
  EXPECT_THAT(vllm_kv.command,
              HasSubstr("# The FP4 KV cache (nvfp4) needs vLLM 0.21.0 or "
                        "later (https://github.com/vllm-project/vllm/pull/"
                        "40177)."));
  EXPECT_TRUE(vllm_kv.warnings.empty());
  // vLLM issue 49011 is open: the launch header names it, and only where the
  // command sets the FP4 cache.
  EXPECT_THAT(vllm_kv.command, HasSubstr("# Known issue (vLLM issue 49011"));
  EXPECT_THAT(vllm_kv_below.command, Not(HasSubstr("49011")));
  EXPECT_THAT(emit(Engine::kVllm, dense,
                   Blackwell(Model("llama-3.1-70b", 8), false), "")
                  .command,
              Not(HasSubstr("49011")));
  // TensorRT-LLM's kv_cache_config.dtype nvfp4: from 1.4 (PR 11487).
  EXPECT_THAT(emit(Engine::kTrtllm, dense, fp4, "1.3.0").command,
              Not(HasSubstr("nvfp4")));
  EXPECT_THAT(emit(Engine::kTrtllm, dense, fp4, "1.4.0").command,
              HasSubstr("kv_cache_config:\n  dtype: nvfp4"));
  // MLA (Kimi-K2.5's NVFP4 checkpoint): only SGLang keeps an FP4 cache; vLLM
  // and TensorRT-LLM warn and keep their default, whatever the release.
  EmitContext mla = Blackwell(Model("kimi-k2.5", 8), false);
  mla.kv_cache_dtype = "fp4";
  const Plan dpep = MakePlan(1, 1, 8, 1, 8, 256, true);
  for (Engine e : {Engine::kVllm, Engine::kTrtllm}) {
    const EmittedCommand out = emit(e, dpep, mla, "");
    EXPECT_THAT(out.command, Not(HasSubstr("nvfp4"))) << EngineKey(e);
    EXPECT_THAT(out.warnings, Contains(HasSubstr("for MLA models")))
        << EngineKey(e);
  }
  EXPECT_THAT(emit(Engine::kSglang, dpep, mla, "").command,
              HasSubstr("--kv-cache-dtype fp4_e2m1"));
  EXPECT_THAT(emit(Engine::kSglang, dpep, mla, "0.5.5").command,
              Not(HasSubstr("fp4_e2m1")));
}

}  // namespace
}  // namespace shardplan::client
