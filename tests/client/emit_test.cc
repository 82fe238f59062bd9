#include "client/emit.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/client/emit_test_util.h"
#include "yaml-cpp/yaml.h"

namespace shardplan::client {
namespace {

using shardplan::v1::Plan;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

Plan MakePlan(int dp, int tp, int pp, int ep, int batch = 0) {
  Plan plan;
  plan.set_dp(dp);
  plan.set_tp(tp);
  plan.set_pp(pp);
  plan.set_ep(ep);
  plan.set_batch_size(batch);
  return plan;
}

void SetDim(Plan* plan, const std::string& op, const std::string& dim) {
  auto* s = plan->add_operator_sharding();
  s->set_operator_(op);
  s->set_dim(dim);
}

// What the server's catalog says of the models (ListCatalog / the resolved
// ModelSpec); the client keeps no table of its own.
EmitContext Dense(const std::string& name = "llama-3.1-70b") {
  EmitContext c;
  c.model_name = name;
  if (name == "llama-3.1-70b") {
    c.hugging_face_id = "meta-llama/Llama-3.1-70B-Instruct";
    c.native_dtype = "bf16";
  }
  return c;
}

EmitContext Moe(const std::string& name = "deepseek-v3") {
  EmitContext c;
  c.model_name = name;
  c.hugging_face_id = "deepseek-ai/DeepSeek-V3";
  c.native_dtype = "fp8";
  c.is_moe = true;
  return c;
}

TEST(EmitTest, VllmDenseMegatronPlan) {
  const EmittedCommand e =
      EmitCommand(Engine::kVllm, MakePlan(2, 4, 1, 1, 64), Dense());
  EXPECT_THAT(e.command,
              HasSubstr("vllm serve meta-llama/Llama-3.1-70B-Instruct"));
  EXPECT_THAT(e.command, HasSubstr("--tensor-parallel-size 4"));
  EXPECT_THAT(e.command, HasSubstr("--pipeline-parallel-size 1"));
  // A dense model's dp copies are independent servers, as in every engine.
  EXPECT_THAT(e.command, Not(HasSubstr("--data-parallel-size")));
  EXPECT_THAT(e.command, HasSubstr("CUDA_VISIBLE_DEVICES=4,5,6,7 vllm serve"));
  EXPECT_THAT(e.command, HasSubstr("--max-num-seqs 64"));
  // The benchmark carries the plan's whole load through the load balancer.
  EXPECT_THAT(e.benchmark, AllOf(HasSubstr("--max-concurrency 128"),
                                 HasSubstr("--host $LB_ADDR")));
  EXPECT_THAT(e.command, Not(HasSubstr("--enable-expert-parallel")));
  EXPECT_THAT(e.warnings, IsEmpty());
}

TEST(EmitTest, VllmMoeExpertParallelOverDataTimesTensor) {
  const EmittedCommand e =
      EmitCommand(Engine::kVllm, MakePlan(2, 4, 1, 8), Moe());
  EXPECT_THAT(e.command, HasSubstr("deepseek-ai/DeepSeek-V3"));
  EXPECT_THAT(e.command, HasSubstr("--enable-expert-parallel"));
  EXPECT_THAT(e.warnings, IsEmpty());
  // ep that is not dp*tp cannot be expressed.
  const EmittedCommand partial =
      EmitCommand(Engine::kVllm, MakePlan(2, 4, 1, 4), Moe());
  EXPECT_THAT(partial.warnings, Contains(HasSubstr("ep=4")));
}

TEST(EmitTest, SglangMoeUsesDpAttentionAndEpSize) {
  Plan plan = MakePlan(1, 8, 1, 8, 128);
  for (const char* op : {"qkv", "attention", "attn_out"})
    SetDim(&plan, op, "batch");
  const EmittedCommand e = EmitCommand(Engine::kSglang, plan, Moe());
  EXPECT_THAT(e.command,
              HasSubstr("python -m sglang.launch_server --model-path "
                        "deepseek-ai/DeepSeek-V3"));
  EXPECT_THAT(
      e.command,
      AllOf(HasSubstr("--tp-size 8"), HasSubstr("--dp-size 8"),
            HasSubstr("--enable-dp-attention"), HasSubstr("--ep-size 8")));
  EXPECT_THAT(e.warnings, IsEmpty());
}

TEST(EmitTest, TrtllmMoeAttentionDpGoesToTheConfigFile) {
  Plan plan = MakePlan(1, 8, 1, 8, 256);
  for (const char* op : {"qkv", "attention", "attn_out"})
    SetDim(&plan, op, "batch");
  EmitContext c = Moe();
  c.kv_cache_dtype = "fp8";
  const EmittedCommand e = EmitCommand(Engine::kTrtllm, plan, c);
  EXPECT_THAT(
      e.command,
      AllOf(HasSubstr("trtllm-serve deepseek-ai/DeepSeek-V3"),
            HasSubstr("--tp_size 8"), HasSubstr("--pp_size 1"),
            HasSubstr("--ep_size 8"),
            // Per rank: 256 requests over 8 attention-DP ranks.
            HasSubstr("--max_batch_size 32"),
            HasSubstr("enable_attention_dp: true"), HasSubstr("dtype: fp8"),
            HasSubstr("--config shardplan-trtllm.yaml")));
  EXPECT_THAT(e.warnings, IsEmpty());
}

TEST(EmitTest, WarnsOnSequenceSplitAttention) {
  Plan plan = MakePlan(1, 8, 1, 1);
  SetDim(&plan, "attention", "sequence");
  for (Engine engine : {Engine::kVllm, Engine::kSglang, Engine::kTrtllm}) {
    const EmittedCommand e = EmitCommand(engine, plan, Dense());
    EXPECT_THAT(
        e.warnings,
        Contains(HasSubstr("sequence-split (context-parallel) attention")));
  }
}

TEST(EmitTest, WarnsOnReplicatedAttnOutAndColumnColumnMlp) {
  Plan plan = MakePlan(1, 4, 1, 1);
  SetDim(&plan, "attn_out", "replicate");
  SetDim(&plan, "mlp_down", "column");
  const EmittedCommand e = EmitCommand(Engine::kVllm, plan, Dense());
  EXPECT_THAT(e.warnings, Contains(HasSubstr("replicated attn_out")));
  EXPECT_THAT(e.warnings, Contains(HasSubstr("column->column MLP")));
}

TEST(EmitTest, DimensionsDoNotMatterWithoutTensorParallelism) {
  Plan plan = MakePlan(8, 1, 1, 1);
  SetDim(&plan, "attention", "sequence");
  const EmittedCommand e = EmitCommand(Engine::kSglang, plan, Dense());
  EXPECT_THAT(e.warnings, IsEmpty());
  EXPECT_THAT(e.command, HasSubstr("CUDA_VISIBLE_DEVICES=7 python"));
  EXPECT_THAT(e.command, Not(HasSubstr("--dp-size")));
}

TEST(EmitTest, DenseBatchAttentionIsOnlySglang) {
  Plan plan = MakePlan(1, 4, 1, 1);
  for (const char* op : {"qkv", "attention", "attn_out"})
    SetDim(&plan, op, "batch");
  EXPECT_THAT(EmitCommand(Engine::kSglang, plan, Dense()).warnings, IsEmpty());
  EXPECT_THAT(
      EmitCommand(Engine::kVllm, plan, Dense()).warnings,
      Contains(HasSubstr("no data-parallel attention for dense models")));
}

TEST(EmitTest, MultiNodeSglangGetsNodeFlags) {
  const EmittedCommand e =
      EmitCommand(Engine::kSglang, MakePlan(1, 8, 2, 1), Dense());
  // One command per node, each with its own rank.
  EXPECT_THAT(e.command,
              AllOf(HasSubstr("--pp-size 2"), HasSubstr("--nnodes 2"),
                    HasSubstr("--node-rank 0"), HasSubstr("--node-rank 1"),
                    HasSubstr("--dist-init-addr $NODE0_ADDR:20000")));
}

TEST(EmitTest, UnknownModelGetsPlaceholderAndWarning) {
  const EmittedCommand e =
      EmitCommand(Engine::kVllm, MakePlan(1, 1, 1, 1), Dense("my-model"));
  EXPECT_THAT(e.command, HasSubstr("<path-or-hf-id-of-my-model>"));
  EXPECT_THAT(e.warnings, Contains(HasSubstr("no Hugging Face id")));
}

TEST(EmitTest, MegatronDefaultsAndEngineNames) {
  EXPECT_EQ(MegatronDim("attn_out"), "row");
  EXPECT_EQ(MegatronDim("embedding"), "row");
  EXPECT_EQ(PlanDim(MakePlan(1, 1, 1, 1), "qkv"), "column");
  EXPECT_FALSE(ParseEngine("tgi").ok());
  EXPECT_TRUE(ParseEngine("trtllm").ok());
}

TEST(EmitTest, WeightDtypeFollowsTheCheckpoint) {
  // DeepSeek-V3 ships FP8: planned for its own dtype, no flag, no warning.
  Plan plan = MakePlan(1, 8, 1, 8, 64);
  for (Engine engine : {Engine::kVllm, Engine::kSglang, Engine::kTrtllm}) {
    const EmittedCommand e = EmitCommand(engine, plan, Moe());
    EXPECT_THAT(e.command, Not(HasSubstr("--quantization")));
    EXPECT_THAT(e.warnings, Not(Contains(HasSubstr("checkpoint"))));
  }
  EXPECT_EQ(EffectiveWeightDtype(Moe()), "fp8");
  // A BF16 model planned at FP8: online quantization where the engine has it.
  EmitContext fp8 = Dense();
  fp8.weight_dtype = "fp8";
  EXPECT_THAT(EmitCommand(Engine::kVllm, MakePlan(1, 8, 1, 1), fp8).command,
              HasSubstr("--quantization fp8"));
  EXPECT_THAT(EmitCommand(Engine::kTrtllm, MakePlan(1, 8, 1, 1), fp8).warnings,
              Contains(HasSubstr("FP8-quantized checkpoint")));
  // Planned wider than the checkpoint: say so.
  EmitContext bf16 = Moe();
  bf16.weight_dtype = "bf16";
  EXPECT_THAT(EmitCommand(Engine::kSglang, plan, bf16).warnings,
              Contains(HasSubstr("ships FP8 weights")));
}

TEST(EmitTest, EngineVersionPicksTheFlagTable) {
  // TensorRT-LLM before 1.1 takes the options file as
  // --extra_llm_api_options.
  Plan plan = MakePlan(1, 8, 1, 8, 64);
  for (const char* op : {"qkv", "attention", "attn_out"})
    SetDim(&plan, op, "batch");
  EmitContext c = Moe();
  c.engine_version = "1.0.2";
  EXPECT_THAT(EmitCommand(Engine::kTrtllm, plan, c).command,
              HasSubstr("--extra_llm_api_options shardplan-trtllm.yaml"));
  c.engine_version = "";
  EXPECT_THAT(EmitCommand(Engine::kTrtllm, plan, c).command,
              HasSubstr("--config shardplan-trtllm.yaml"));
  EXPECT_TRUE(FindEngineVersion(Engine::kVllm, "0.11.2").ok());
  EXPECT_EQ(FindEngineVersion(Engine::kVllm, "0.11.2")->name, "0.10");
  EXPECT_EQ(FindEngineVersion(Engine::kVllm, "")->name, "0.12");
  EXPECT_EQ(FindEngineVersion(Engine::kVllm, "0.13.0")->name, "0.12");
  EXPECT_FALSE(FindEngineVersion(Engine::kVllm, "0.9.1").ok());
  EXPECT_FALSE(FindEngineVersion(Engine::kSglang, "latest").ok());
  // An unknown version still emits (newest table) with a warning.
  c.engine_version = "0.1";
  EXPECT_THAT(EmitCommand(Engine::kTrtllm, plan, c).warnings,
              Contains(HasSubstr("--engine-version")));
}

TEST(EmitTest, ManyReplicasAreAbridged) {
  Plan plan = MakePlan(1, 1, 1, 1, 8);
  plan.set_replicas(256);
  EmitContext c = Dense();
  c.num_gpus = 256;
  const EmittedCommand e = EmitCommand(Engine::kVllm, plan, c);
  EXPECT_THAT(e.command, HasSubstr("# ... 192 more commands"));
  // Eight single-GPU instances per node, each on its own GPU and port.
  EXPECT_THAT(e.command, HasSubstr("CUDA_VISIBLE_DEVICES=7 vllm serve"));
  EXPECT_THAT(e.command, HasSubstr("--port 8007"));
}

TEST(EmitTest, EveryCommandComesWithItsBenchmark) {
  EmitContext c = Dense();
  c.input_tokens = 2048;
  c.output_tokens = 256;
  const Plan plan = MakePlan(1, 8, 1, 1, 96);
  EXPECT_THAT(
      EmitCommand(Engine::kVllm, plan, c).benchmark,
      AllOf(HasSubstr("vllm bench serve"), HasSubstr("--random-input-len 2048"),
            HasSubstr("--random-output-len 256"),
            HasSubstr("--max-concurrency 96")));
  EXPECT_THAT(EmitCommand(Engine::kSglang, plan, c).benchmark,
              AllOf(HasSubstr("python -m sglang.bench_serving"),
                    HasSubstr("--max-concurrency 96")));
  EXPECT_THAT(EmitCommand(Engine::kTrtllm, plan, c).benchmark,
              AllOf(HasSubstr("aiperf profile"), HasSubstr("--concurrency 96"),
                    HasSubstr("--synthetic-input-tokens-mean 2048")));
}

TEST(EmitTest, NodeGroupsOfDifferentSizesGiveEachNodeItsGpus) {
  shardplan::v1::ClusterSpec cluster;
  cluster.set_num_gpus(16);
  cluster.set_gpus_per_node(8);
  auto* big = cluster.add_node_groups();
  big->set_name("dgx");
  big->set_num_nodes(1);
  auto* small = cluster.add_node_groups();
  small->set_name("half");
  small->set_num_nodes(2);
  small->set_gpus_per_node(4);
  EXPECT_EQ(NodeGpusOf(cluster), (std::vector<int>{8, 4, 4}));
  // Listed small first, numbered as the server places them: big first.
  shardplan::v1::ClusterSpec small_first;
  small_first.set_num_gpus(24);
  small_first.set_gpus_per_node(8);
  for (int size : {4, 8, 4}) {
    auto* g = small_first.add_node_groups();
    g->set_name(absl::StrCat("g", size, "-", small_first.node_groups_size()));
    g->set_num_nodes(size == 8 ? 2 : 1);
    g->set_gpus_per_node(size);
  }
  EXPECT_EQ(NodeGpusOf(small_first), (std::vector<int>{8, 8, 4, 4}));
  small->set_gpus_per_node(8);  // all nodes alike: nothing to say
  EXPECT_THAT(NodeGpusOf(cluster), IsEmpty());

  // A tp-8 instance on the two 4-GPU nodes: one command per node, 4 GPUs
  // each.
  EmitContext c = Dense();
  c.num_gpus = 16;
  c.node_gpus = {8, 4, 4};
  const Plan plan = MakePlan(1, 8, 1, 1, 64);
  Plan two = plan;
  two.set_replicas(2);
  const EmittedCommand e = EmitCommand(Engine::kSglang, two, c);
  EXPECT_THAT(e.command, AllOf(HasSubstr("Instance 1, node 1 (head)"),
                               HasSubstr("Instance 1, node 2 (worker)"),
                               HasSubstr("--nnodes 2")));
  EXPECT_THAT(e.warnings, Not(Contains(HasSubstr("same number of GPUs"))));
}

// A plan the server's capability rules say the named engine cannot launch is
// refused (the CLI exits 2), naming the engines that can; the others emit.
TEST(EmitTest, RefusesAPlanTheEngineCannotRun) {
  EmitContext c = Moe();
  c.num_gpus = 8;
  c.runnable_engines = {"vllm", "trtllm"};
  const Plan plan = MakePlan(1, 8, 1, 8, 64);
  for (const EmittedCommand& e : {EmitCommand(Engine::kSglang, plan, c),
                                  EmitKubernetes(Engine::kSglang, plan, c),
                                  EmitDynamo(Engine::kSglang, plan, c)}) {
    EXPECT_TRUE(e.refused);
    EXPECT_THAT(e.command, IsEmpty());
    ASSERT_FALSE(e.warnings.empty());
    EXPECT_THAT(e.warnings[0], AllOf(HasSubstr("SGLang cannot launch"),
                                     HasSubstr("vllm, trtllm")));
  }
  const EmittedCommand ok = EmitCommand(Engine::kVllm, plan, c);
  EXPECT_FALSE(ok.refused);
  EXPECT_THAT(ok.command, HasSubstr("vllm serve"));
}

// The server's placement (Plan.placement) says which GPUs hold each stage;
// the commands pin what it says, not a layout of their own: two tp-2
// replicas the server put on GPUs 4-5 and 0-1 of one node (an order the
// client's own rank layout would not choose) run there.
TEST(EmitTest, CommandsFollowThePlansPlacement) {
  EmitContext c = Dense();
  c.num_gpus = 8;
  Plan plan = MakePlan(1, 2, 1, 1, 16);
  plan.set_replicas(2);
  for (int r : {0, 1}) {
    auto* p = plan.add_placement();
    p->set_replica(r);
    p->add_nodes(0);
    p->add_node_gpus(2);
    p->set_first_gpu(r == 0 ? 4 : 0);
  }
  const EmittedCommand placed = EmitCommand(Engine::kVllm, plan, c);
  EXPECT_THAT(placed.command, HasSubstr("CUDA_VISIBLE_DEVICES=4,5 vllm serve"));
  EXPECT_THAT(placed.command, HasSubstr("CUDA_VISIBLE_DEVICES=0,1 vllm serve"));
  // Without a placement (a plan built by hand) the same rank order is
  // computed: replica 0 on GPUs 0-1.
  plan.clear_placement();
  const EmittedCommand computed = EmitCommand(Engine::kVllm, plan, c);
  EXPECT_THAT(computed.command,
              HasSubstr("CUDA_VISIBLE_DEVICES=0,1 vllm serve"));
  EXPECT_THAT(computed.command,
              HasSubstr("CUDA_VISIBLE_DEVICES=2,3 vllm serve"));
  // A placement that does not add up to the plan's GPUs is not trusted.
  auto* bad = plan.add_placement();
  bad->add_nodes(0);
  bad->add_node_gpus(3);
  EXPECT_EQ(EmitCommand(Engine::kVllm, plan, c).command, computed.command);
}

// A disaggregated plan on 8, 8, 4 and 4 GPUs: the pool with the bigger
// instances (decode, tp 8) takes the 8-GPU nodes and the tp-4 prefill
// instances the 4-GPU ones, where the server placed and priced them
// (simulator/placement.h); prefill first would split a decode instance over
// the two small nodes.
TEST(EmitTest, DisaggregatedPoolsGoOnTheirRealNodes) {
  EmitContext c = Dense();
  c.num_gpus = 24;
  c.node_gpus = {8, 8, 4, 4};
  Plan plan =
      Disaggregated(MakePlan(1, 4, 1, 1, 1), 2, MakePlan(1, 8, 1, 1, 32), 2);
  for (Engine engine : {Engine::kSglang, Engine::kVllm, Engine::kTrtllm}) {
    SCOPED_TRACE(static_cast<int>(engine));
    const EmittedCommand e = EmitCommand(engine, plan, c);
    EXPECT_THAT(e.command, AllOf(HasSubstr("Decode instance 0, node 0"),
                                 HasSubstr("Decode instance 1, node 1"),
                                 HasSubstr("Prefill instance 0, node 2"),
                                 HasSubstr("Prefill instance 1, node 3")));
    EXPECT_THAT(e.command, Not(HasSubstr("(worker)")));
    EXPECT_THAT(e.warnings, Not(Contains(HasSubstr("same number of GPUs"))));
  }
  // Dynamo: one service per pool, every replica shaped alike, as they are.
  EXPECT_THAT(EmitDynamo(Engine::kSglang, plan, c).warnings,
              Not(Contains(HasSubstr("nodes of different sizes"))));
  // One tp-8 prefill and two tp-8 decode instances: the second decode
  // instance has two 4-GPU nodes, the first one 8-GPU node, which one Dynamo
  // service cannot say.
  plan.mutable_prefill()->set_tp(8);
  plan.set_prefill_instances(1);
  const EmittedCommand uneven = EmitCommand(Engine::kSglang, plan, c);
  EXPECT_THAT(uneven.command, AllOf(HasSubstr("Prefill node 0"),
                                    HasSubstr("Decode instance 0, node 1"),
                                    HasSubstr("Decode instance 1, node 2")));
  EXPECT_THAT(EmitDynamo(Engine::kSglang, plan, c).warnings,
              Contains(HasSubstr("nodes of different sizes")));
}

// --- TensorRT-LLM disaggregated serving.

void SetAttentionDp(Plan* plan) {
  for (const char* op : {"qkv", "attention", "attn_out"}) {
    SetDim(plan, op, "batch");
  }
}

// One launched server of a script: the blank-line-separated block that
// starts it (comments, then the command), its port and options file.
struct Server {
  std::string block;
  int port = 0;
  std::string config;
};

std::vector<Server> TrtllmServers(const std::string& script,
                                  const std::string& model_id) {
  std::vector<Server> out;
  for (absl::string_view block : absl::StrSplit(script, "\n\n")) {
    if (!absl::StrContains(block, "trtllm-serve " + model_id)) continue;
    Server s;
    s.block = std::string(block);
    for (absl::string_view line : absl::StrSplit(block, '\n')) {
      std::vector<std::string> words =
          absl::StrSplit(line, ' ', absl::SkipEmpty());
      if (words.size() >= 2 && words[0] == "--port") {
        EXPECT_TRUE(absl::SimpleAtoi(words[1], &s.port)) << line;
      }
      if (words.size() >= 2 && words[0] == "--config") s.config = words[1];
    }
    out.push_back(s);
  }
  return out;
}

std::vector<std::string> Urls(const YAML::Node& servers) {
  std::vector<std::string> out;
  for (const auto& u : servers["urls"]) out.push_back(u.as<std::string>());
  EXPECT_EQ(servers["num_instances"].as<size_t>(), out.size());
  return out;
}

TEST(EmitTest, TrtllmDisaggregatedServersMatchTheirRouter) {
  // Llama-3.1-70B on one 8-GPU node: two tp-2 context instances (batch 8)
  // and one tp-4 generation instance (batch 64).
  EmitContext c = Dense();
  c.num_gpus = 8;
  c.input_tokens = 2048;
  const Plan plan =
      Disaggregated(MakePlan(1, 2, 1, 1, 8), 2, MakePlan(1, 4, 1, 1, 64), 1);
  const EmittedCommand e = EmitCommand(Engine::kTrtllm, plan, c);
  EXPECT_THAT(e.warnings, IsEmpty());
  const std::vector<Server> servers =
      TrtllmServers(e.command, "meta-llama/Llama-3.1-70B-Instruct");
  ASSERT_EQ(servers.size(), 3u) << e.command;
  // TensorRT-LLM's own layout: router on 8000, its servers from 8001, each
  // on its own GPUs, each role reading its own options file.
  EXPECT_EQ(servers[0].port, 8001);
  EXPECT_EQ(servers[1].port, 8002);
  EXPECT_EQ(servers[2].port, 8003);
  EXPECT_THAT(servers[0].block, HasSubstr("CUDA_VISIBLE_DEVICES=0,1 "));
  EXPECT_THAT(servers[1].block, HasSubstr("CUDA_VISIBLE_DEVICES=2,3 "));
  EXPECT_THAT(servers[2].block, HasSubstr("CUDA_VISIBLE_DEVICES=4,5,6,7 "));
  EXPECT_EQ(servers[0].config, "shardplan-trtllm-ctx.yaml");
  EXPECT_EQ(servers[1].config, "shardplan-trtllm-ctx.yaml");
  EXPECT_EQ(servers[2].config, "shardplan-trtllm-gen.yaml");

  const std::map<std::string, std::string> files = ScriptFiles(e.command);
  ASSERT_EQ(files.size(), 3u);
  const YAML::Node ctx = YAML::Load(files.at("shardplan-trtllm-ctx.yaml"));
  EXPECT_EQ(ctx["tensor_parallel_size"].as<int>(), 2);
  EXPECT_EQ(ctx["pipeline_parallel_size"].as<int>(), 1);
  EXPECT_FALSE(ctx["moe_expert_parallel_size"]);
  EXPECT_EQ(ctx["max_batch_size"].as<int>(), 8);
  EXPECT_EQ(ctx["max_num_tokens"].as<int>(), 8 * 2048);  // whole prompts
  EXPECT_TRUE(ctx["disable_overlap_scheduler"].as<bool>());
  EXPECT_EQ(ctx["cache_transceiver_config"]["backend"].as<std::string>(),
            "UCX");
  EXPECT_EQ(ctx["cache_transceiver_config"]["max_tokens_in_buffer"].as<int>(),
            2048);
  const YAML::Node gen = YAML::Load(files.at("shardplan-trtllm-gen.yaml"));
  EXPECT_EQ(gen["tensor_parallel_size"].as<int>(), 4);
  EXPECT_EQ(gen["max_batch_size"].as<int>(), 64);
  EXPECT_EQ(gen["max_num_tokens"].as<int>(), 64);  // one token per request
  EXPECT_FALSE(gen["disable_overlap_scheduler"]);
  EXPECT_EQ(gen["cache_transceiver_config"]["backend"].as<std::string>(),
            "UCX");

  // The router lists exactly the servers started, by role, and serves the
  // benchmark with every decode slot busy.
  const YAML::Node router =
      YAML::Load(files.at("shardplan-trtllm-disagg.yaml"));
  EXPECT_EQ(router["hostname"].as<std::string>(), "localhost");
  EXPECT_EQ(router["port"].as<int>(), 8000);
  EXPECT_EQ(Urls(router["context_servers"]),
            (std::vector<std::string>{"localhost:8001", "localhost:8002"}));
  EXPECT_EQ(Urls(router["generation_servers"]),
            (std::vector<std::string>{"localhost:8003"}));
  EXPECT_THAT(e.command, HasSubstr("trtllm-serve disaggregated \\\n  -c "
                                   "shardplan-trtllm-disagg.yaml\n"));
  EXPECT_THAT(e.benchmark, AllOf(HasSubstr("--url localhost:8000"),
                                 HasSubstr("--concurrency 64")));
}

TEST(EmitTest, TrtllmDisaggregatedMultiNodeInstanceIsOneMpiWorld) {
  // DeepSeek-V3 2P1D over four nodes: each context instance one node (DP
  // attention + EP8, batch 32), the generation instance two (dp 2 x tp 8,
  // EP16, 256 requests in flight: 128 per DP rank).
  EmitContext c = Moe();
  c.num_gpus = 32;
  Plan prefill = MakePlan(1, 8, 1, 8, 32);
  SetAttentionDp(&prefill);
  Plan decode = MakePlan(2, 8, 1, 16, 256);
  SetAttentionDp(&decode);
  const EmittedCommand e =
      EmitCommand(Engine::kTrtllm, Disaggregated(prefill, 2, decode, 1), c);
  EXPECT_THAT(e.warnings, IsEmpty());
  const std::vector<Server> servers =
      TrtllmServers(e.command, "deepseek-ai/DeepSeek-V3");
  ASSERT_EQ(servers.size(), 3u) << e.command;
  // The 16-GPU instance is launched as the aggregated emitter launches any
  // instance over several nodes: one mpirun from its first node.
  EXPECT_THAT(
      servers[2].block,
      HasSubstr("mpirun --allow-run-as-root -np 16 -H "
                "$NODE2_ADDR:8,$NODE3_ADDR:8 -x PATH -x LD_LIBRARY_PATH "
                "trtllm-llmapi-launch trtllm-serve "
                "deepseek-ai/DeepSeek-V3"));
  EXPECT_THAT(servers[2].block, HasSubstr("--tp_size 16"));
  EXPECT_THAT(servers[2].block, HasSubstr("--ep_size 16"));
  for (const Server& s : servers) {
    EXPECT_THAT(s.block, HasSubstr("--host 0.0.0.0"));
    EXPECT_EQ(s.port, 8001);  // each the first server of its node
  }

  const std::map<std::string, std::string> files = ScriptFiles(e.command);
  const YAML::Node ctx = YAML::Load(files.at("shardplan-trtllm-ctx.yaml"));
  EXPECT_EQ(ctx["tensor_parallel_size"].as<int>(), 8);
  EXPECT_EQ(ctx["moe_expert_parallel_size"].as<int>(), 8);
  EXPECT_TRUE(ctx["enable_attention_dp"].as<bool>());
  EXPECT_EQ(ctx["max_batch_size"].as<int>(), 4);  // 32 over 8 DP ranks
  EXPECT_EQ(ctx["max_num_tokens"].as<int>(), 4 * 1024);
  const YAML::Node gen = YAML::Load(files.at("shardplan-trtllm-gen.yaml"));
  EXPECT_EQ(gen["tensor_parallel_size"].as<int>(), 16);
  EXPECT_EQ(gen["moe_expert_parallel_size"].as<int>(), 16);
  EXPECT_TRUE(gen["enable_attention_dp"].as<bool>());
  EXPECT_EQ(gen["max_batch_size"].as<int>(), 16);  // 2 x 128 over 16 ranks
  EXPECT_EQ(gen["max_num_tokens"].as<int>(), 16);

  const YAML::Node router =
      YAML::Load(files.at("shardplan-trtllm-disagg.yaml"));
  EXPECT_EQ(router["hostname"].as<std::string>(), "0.0.0.0");
  EXPECT_EQ(Urls(router["context_servers"]),
            (std::vector<std::string>{"$NODE0_ADDR:8001", "$NODE1_ADDR:8001"}));
  EXPECT_EQ(Urls(router["generation_servers"]),
            (std::vector<std::string>{"$NODE2_ADDR:8001"}));
  // An unquoted heredoc, so that the addresses expand on node 0.
  EXPECT_THAT(e.command, HasSubstr("cat > shardplan-trtllm-disagg.yaml <<EOF"));
  EXPECT_THAT(e.benchmark, HasSubstr("--concurrency 256"));
}

TEST(EmitTest, TrtllmDisaggregatedNeedsTheNewerFlagTable) {
  EmitContext c = Dense();
  c.num_gpus = 8;
  c.engine_version = "1.0.0";
  const EmittedCommand e = EmitCommand(
      Engine::kTrtllm,
      Disaggregated(MakePlan(1, 4, 1, 1, 8), 1, MakePlan(1, 4, 1, 1, 64), 1),
      c);
  EXPECT_THAT(e.command, IsEmpty());
  EXPECT_THAT(e.warnings, Contains(AllOf(HasSubstr("cache_transceiver_config"),
                                         HasSubstr("--engine-version 1.1"))));
}

}  // namespace
}  // namespace shardplan::client
