#include "client/render.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "yaml-cpp/yaml.h"

namespace shardplan::client {
namespace {

using shardplan::v1::PlanUpdate;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

PlanUpdate SampleUpdate() {
  PlanUpdate u;
  auto* plan = u.mutable_plan();
  plan->set_dp(2);
  plan->set_tp(8);
  plan->set_pp(1);
  plan->set_ep(1);
  plan->set_batch_size(64);
  for (auto [op, dim] :
       {std::pair{"qkv", "column"}, std::pair{"attention", "column"},
        std::pair{"attn_out", "row"}}) {
    auto* s = plan->add_operator_sharding();
    s->set_operator_(op);
    s->set_dim(dim);
  }
  auto* stage = plan->add_placement();
  stage->set_replica(1);
  stage->set_stage(0);
  stage->set_first_layer(0);
  stage->set_num_layers(80);
  stage->add_nodes(1);
  stage->set_node_group("rack-a");
  auto* p = u.mutable_prediction();
  p->set_feasible(true);
  p->set_output_tokens_per_s(12345.6);
  p->set_output_tokens_per_s_per_gpu(771.6);
  p->set_ttft_ms(123.45);
  p->set_tpot_ms(45.6);
  p->set_batch_size(64);
  p->mutable_memory_per_gpu()->set_weights_bytes(17.6e9);
  p->mutable_memory_per_gpu()->set_total_bytes(60e9);
  p->mutable_memory_per_gpu()->set_capacity_bytes(80e9);
  p->set_bottleneck("memory (attention)");
  for (auto [op, total] :
       {std::pair{"attention", 0.004}, std::pair{"mlp_up", 0.002},
        std::pair{"qkv", 0.001}}) {
    auto* c = p->add_operators();
    c->set_operator_(op);
    c->set_phase("decode");
    c->set_total_seconds(total);
    c->set_memory_seconds(total);
  }
  u.set_evaluations(1234);
  u.set_elapsed_seconds(3.21);
  u.set_speedup_vs_baseline(1.07);
  u.set_final(true);
  u.set_kind("final");
  u.mutable_summary()->set_method("rl");
  return u;
}

RenderContext Context() {
  return RenderContext{"llama-3.1-70b", "h100-sxm-80gb", 16, 8};
}

TEST(RenderTest, ClusterLabelTakesNodeSizesFromThePlacement) {
  // 12 GPUs without --gpus-per-node: the server places them on the
  // hardware's nodes of 8, so three 4-GPU stages sit 8 + 4; the label must
  // not say "2 nodes of 6".
  PlanUpdate u = SampleUpdate();
  u.mutable_plan()->clear_placement();
  for (int node : {0, 0, 1}) {
    auto* stage = u.mutable_plan()->add_placement();
    stage->add_nodes(node);
    stage->add_node_gpus(4);
  }
  const RenderContext twelve{"qwen3-235b-a22b", "h100-sxm-80gb", 12, 0};
  EXPECT_THAT(RenderPlanUpdate(u, twelve),
              HasSubstr("12 x h100-sxm-80gb (2 nodes: 8 + 4)\n"));
  // Even nodes: their size; a stage over both nodes counts on each.
  u.mutable_plan()->clear_placement();
  auto* wide = u.mutable_plan()->add_placement();
  wide->add_nodes(0);
  wide->add_nodes(1);
  wide->add_node_gpus(6);
  wide->add_node_gpus(6);
  EXPECT_THAT(RenderPlanUpdate(u, twelve),
              HasSubstr("12 x h100-sxm-80gb (2 nodes of 6)\n"));
  // GPUs per node that do not add up to the cluster: no size claimed.
  wide->set_node_gpus(1, 2);
  EXPECT_THAT(RenderPlanUpdate(u, twelve),
              HasSubstr("12 x h100-sxm-80gb (2 nodes)\n"));
  // One node, or a node size the request gave, is stated.
  u.mutable_plan()->clear_placement();
  u.mutable_plan()->add_placement()->add_nodes(0);
  EXPECT_THAT(RenderPlanUpdate(
                  u, RenderContext{"qwen3-235b-a22b", "h100-sxm-80gb", 6, 0}),
              HasSubstr("6 x h100-sxm-80gb (1 node of 6)"));
  EXPECT_THAT(RenderPlanUpdate(
                  u, RenderContext{"qwen3-235b-a22b", "h100-sxm-80gb", 12, 8}),
              HasSubstr("12 x h100-sxm-80gb (2 nodes of 8)"));
}

TEST(RenderTest, JsonLineIsOneLineWithCamelCaseNames) {
  const std::string line = ToJsonLine(SampleUpdate());
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_THAT(line, AllOf(HasSubstr("\"final\":true"),
                          HasSubstr("\"speedupVsBaseline\":1.07"),
                          HasSubstr("\"operatorSharding\""),
                          HasSubstr("\"outputTokensPerS\"")));
}

TEST(RenderTest, PlanTableHasDegreesDimsPlacementFiguresAndTopCosts) {
  const std::string table = RenderPlanUpdate(SampleUpdate(), Context());
  EXPECT_THAT(
      table,
      HasSubstr("Plan for llama-3.1-70b on 16 x h100-sxm-80gb (2 nodes of 8)"));
  EXPECT_THAT(table, HasSubstr("dp 2  tp 8  pp 1  ep 1"));
  EXPECT_THAT(table, HasSubstr("attn_out    row"));
  EXPECT_THAT(table, HasSubstr("rack-a"));
  EXPECT_THAT(table, HasSubstr("12,346 tok/s"));
  EXPECT_THAT(table, HasSubstr("TTFT 123.5 ms"));
  EXPECT_THAT(table, HasSubstr("TPOT 45.6 ms"));
  EXPECT_THAT(table, HasSubstr("weights 17.6 GB"));
  EXPECT_THAT(table, HasSubstr("1.070x over the Megatron baseline"));
  // Top contributors sorted by total: attention (57.1%) first.
  const size_t costs = table.find("Top cost contributors (decode");
  ASSERT_NE(costs, std::string::npos) << table;
  const size_t attention = table.find("  attention ", costs);
  const size_t mlp = table.find("  mlp_up ", costs);
  ASSERT_NE(attention, std::string::npos) << table;
  ASSERT_NE(mlp, std::string::npos) << table;
  EXPECT_LT(attention, mlp);
  EXPECT_THAT(table, HasSubstr("57.1%"));
}

TEST(RenderTest, InfeasiblePlanSaysWhy) {
  PlanUpdate u = SampleUpdate();
  u.mutable_prediction()->set_feasible(false);
  u.mutable_prediction()->set_infeasible_reason(
      "weights need 140 GB per GPU, capacity 80 GB");
  EXPECT_THAT(RenderPlanUpdate(u, Context()),
              HasSubstr("Feasible        NO: weights need 140 GB per GPU"));
  EXPECT_THAT(ProgressLine(u), HasSubstr("no feasible plan yet"));
}

TEST(RenderTest, ProgressLineNamesTheRequestedMethodAndTicks) {
  PlanUpdate u = SampleUpdate();
  u.clear_summary();
  EXPECT_EQ(ProgressLine(u, "anneal", 9.87),
            "anneal  1,234 evals  best 12,346 tok/s  1.07x vs Megatron  9.9 s");
}

TEST(RenderTest, ProgressLineShowsEvaluationsBestSpeedupElapsed) {
  EXPECT_EQ(ProgressLine(SampleUpdate()),
            "rl  1,234 evals  best 12,346 tok/s  1.07x vs Megatron  3.2 s");
}

TEST(RenderTest, YamlManifestParsesAndCarriesThePlan) {
  const std::string text = RenderYamlManifest(SampleUpdate(), Context());
  const YAML::Node doc = YAML::Load(text);
  EXPECT_EQ(doc["kind"].as<std::string>(), "ShardingPlan");
  EXPECT_EQ(doc["parallelism"]["tensor"].as<int>(), 8);
  EXPECT_EQ(doc["parallelism"]["data"].as<int>(), 2);
  EXPECT_EQ(doc["operatorSharding"]["attn_out"].as<std::string>(), "row");
  EXPECT_EQ(doc["placement"][0]["nodeGroup"].as<std::string>(), "rack-a");
  EXPECT_EQ(doc["placement"][0]["layers"][1].as<int>(), 79);
  EXPECT_NEAR(doc["predicted"]["outputTokensPerS"].as<double>(), 12345.6, 1e-6);
  EXPECT_EQ(doc["cluster"]["gpus"].as<int>(), 16);
  EXPECT_EQ(doc["nodes"][0]["node"].as<int>(), 1);
  EXPECT_EQ(doc["nodes"][0]["nodeGroup"].as<std::string>(), "rack-a");
  EXPECT_EQ(doc["nodes"][0]["hosts"][0].as<std::string>(), "replica 1 stage 0");
  // Rounded for people: no 17-digit floats.
  EXPECT_THAT(text, HasSubstr("outputTokensPerS: 12345.6\n"));
}

// A disaggregated plan: each pool's degrees and the nodes of each of its
// instances, not an aggregated plan's zeros.
TEST(RenderTest, YamlManifestListsTheDisaggregatedPools) {
  PlanUpdate u = SampleUpdate();
  shardplan::v1::Plan plan;
  plan.mutable_prefill()->set_tp(4);
  plan.mutable_prefill()->set_replicas(2);
  plan.mutable_decode()->set_tp(8);
  plan.mutable_decode()->set_replicas(2);
  plan.mutable_decode()->set_batch_size(32);
  plan.set_prefill_instances(2);
  plan.set_decode_instances(2);
  for (int i = 0; i < 2; ++i) {
    auto* d = plan.mutable_decode()->add_placement();
    d->set_replica(i);
    d->add_nodes(i);
    d->set_node_group("big");
    auto* p = plan.mutable_prefill()->add_placement();
    p->set_replica(i);
    p->add_nodes(2 + i);
    p->set_node_group("small");
  }
  *u.mutable_plan() = plan;
  const YAML::Node doc = YAML::Load(RenderYamlManifest(u, Context()));
  EXPECT_FALSE(doc["parallelism"].IsDefined());
  const YAML::Node pools = doc["disaggregated"];
  EXPECT_EQ(pools["prefillInstances"].as<int>(), 2);
  EXPECT_EQ(pools["prefill"]["parallelism"]["tensor"].as<int>(), 4);
  EXPECT_EQ(pools["decode"]["parallelism"]["tensor"].as<int>(), 8);
  EXPECT_EQ(pools["decode"]["parallelism"]["batchSizePerReplica"].as<int>(),
            32);
  EXPECT_EQ(pools["prefill"]["placement"][1]["nodes"][0].as<int>(), 3);
  EXPECT_EQ(doc["nodes"][0]["hosts"][0].as<std::string>(),
            "decode instance 0 stage 0");
  EXPECT_EQ(doc["nodes"][3]["nodeGroup"].as<std::string>(), "small");
}

TEST(RenderTest, DenseModelsHideExpertOperatorsAndLongTtftReadsInSeconds) {
  PlanUpdate u = SampleUpdate();
  auto* router = u.mutable_plan()->add_operator_sharding();
  router->set_operator_("router");
  router->set_dim("replicate");
  u.mutable_prediction()->set_ttft_ms(9367.4);
  RenderContext c = Context();
  c.gpus_per_node = 0;  // derived from the placement instead
  const std::string table = RenderPlanUpdate(u, c);
  EXPECT_THAT(table, Not(HasSubstr("router")));
  EXPECT_THAT(table, HasSubstr("TTFT 9.37 s"));
  // The sample's placement names nodes but not their GPUs: no size claimed.
  EXPECT_THAT(table, HasSubstr("16 x h100-sxm-80gb (2 nodes)\n"));
  u.mutable_plan()->set_ep(4);
  EXPECT_THAT(RenderPlanUpdate(u, c), HasSubstr("router"));
}

TEST(RenderTest, CatalogTableListsModelsAndHardware) {
  shardplan::v1::ListCatalogResponse catalog;
  auto* m = catalog.add_models();
  m->set_name("llama-3.1-8b");
  m->set_family("llama");
  m->set_hidden_size(4096);
  m->set_num_layers(32);
  m->set_num_attention_heads(32);
  m->set_num_key_value_heads(8);
  m->set_intermediate_size(14336);
  m->set_vocab_size(128256);
  // Sizes and checkpoints are the server's, not computed by the client.
  auto* info = catalog.add_model_info();
  info->set_name("llama-3.1-8b");
  info->set_hugging_face_id("meta-llama/Llama-3.1-8B-Instruct");
  info->set_native_dtype("bf16");
  info->set_total_params(8.03e9);
  info->set_active_params(8.03e9);
  // A release whose 4-bit weights FP4 tensor cores run from another
  // checkpoint (Kimi-K2.5).
  auto* kimi = catalog.add_models();
  kimi->set_name("kimi-k2.5");
  kimi->set_num_layers(61);
  kimi->set_nvfp4_hugging_face_id("nvidia/Kimi-K2.5-NVFP4");
  auto* kimi_info = catalog.add_model_info();
  kimi_info->set_name("kimi-k2.5");
  kimi_info->set_hugging_face_id("moonshotai/Kimi-K2.5");
  kimi_info->set_native_dtype("fp4");
  auto* unknown = catalog.add_models();  // from a server without model_info
  unknown->set_name("new-model");
  unknown->set_num_layers(4);
  auto* h = catalog.add_hardware();
  h->set_name("h100-sxm-80gb");
  h->set_peak_bf16_flops_per_s(989e12);
  h->set_hbm_bytes(80e9);
  h->set_default_gpus_per_node(8);
  // A rack whose NVLink domain spans 18 trays of 4, with FP4 tensor cores.
  auto* rack = catalog.add_hardware();
  rack->set_name("gb200-nvl72");
  rack->set_peak_bf16_flops_per_s(2500e12);
  rack->set_peak_fp4_flops_per_s(10000e12);
  rack->set_default_gpus_per_node(4);
  rack->set_nvlink_domain_gpus(72);
  catalog.add_methods("rl");
  const std::string table = RenderCatalog(catalog);
  EXPECT_THAT(table, AllOf(HasSubstr("FP4 TF/s"), HasSubstr("NVL domain")));
  const auto row = [&table](const std::string& name) {
    const size_t at = table.find("  " + name + " ");
    return at == std::string::npos
               ? std::string()
               : table.substr(at, table.find('\n', at) - at);
  };
  // Hopper: no FP4 tensor cores, a domain of one node.
  EXPECT_THAT(row("h100-sxm-80gb"), testing::EndsWith(" 8          8"));
  EXPECT_THAT(row("h100-sxm-80gb"), HasSubstr(" - "));
  EXPECT_THAT(row("gb200-nvl72"),
              AllOf(HasSubstr(" 10000 "), testing::EndsWith(" 4         72")));
  EXPECT_THAT(table, AllOf(HasSubstr("llama-3.1-8b"), HasSubstr("8.0B"),
                           HasSubstr("GQA 8/32"), HasSubstr("h100-sxm-80gb"),
                           HasSubstr("989"), HasSubstr("80.0 GB"),
                           HasSubstr("Methods    rl")));
  EXPECT_THAT(table, AllOf(HasSubstr("meta-llama/Llama-3.1-8B-Instruct"),
                           HasSubstr("bf16"), HasSubstr("new-model")));
  EXPECT_THAT(table, Not(HasSubstr("MLA")));
  EXPECT_THAT(
      row("kimi-k2.5"),
      testing::EndsWith(" fp4   moonshotai/Kimi-K2.5 (FP4 tensor cores: "
                        "nvidia/Kimi-K2.5-NVFP4)"));
  EXPECT_THAT(row("llama-3.1-8b"), Not(HasSubstr("FP4 tensor cores")));
}

TEST(RenderTest, NumberFormatting) {
  EXPECT_EQ(FormatCount(0), "0");
  EXPECT_EQ(FormatCount(999.4), "999");
  EXPECT_EQ(FormatCount(1234567), "1,234,567");
  EXPECT_EQ(FormatBytes(80e9), "80.0 GB");
  EXPECT_EQ(FormatBytes(1.5e12), "1.50 TB");
}

TEST(RenderTest, AggregatedAndDisaggregatedSideBySide) {
  shardplan::v1::SearchSummary summary;
  EXPECT_EQ(RenderAggregatedVsDisaggregated(summary), "");
  summary.mutable_best_aggregated()->set_output_tokens_per_s_per_gpu(1234);
  summary.mutable_best_aggregated()->set_ttft_ms(250);
  summary.mutable_best_aggregated()->set_feasible(true);
  summary.mutable_best_disaggregated()->set_output_tokens_per_s_per_gpu(2345);
  summary.mutable_best_disaggregated()->set_tpot_ms(20);
  const std::string table = RenderAggregatedVsDisaggregated(summary);
  EXPECT_THAT(table, HasSubstr("aggregated"));
  EXPECT_THAT(table, HasSubstr("disaggregated"));
  EXPECT_THAT(table, HasSubstr("1,234"));
  EXPECT_THAT(table, HasSubstr("2,345"));
  PlanUpdate update;
  *update.mutable_summary() = summary;
  update.mutable_plan()->mutable_prefill()->set_tp(2);
  update.mutable_plan()->mutable_decode()->set_tp(4);
  update.mutable_plan()->set_prefill_instances(3);
  update.mutable_plan()->set_decode_instances(1);
  update.mutable_prediction()->set_disaggregated(true);
  update.mutable_prediction()->set_kv_transfer_link("infiniband");
  const std::string text = RenderPlanUpdate(update, RenderContext());
  EXPECT_THAT(text, HasSubstr("Prefill pool    3 x (dp 1  tp 2"));
  EXPECT_THAT(text, HasSubstr("Decode pool     1 x (dp 1  tp 4"));
  EXPECT_THAT(text, HasSubstr("over infiniband"));
  EXPECT_THAT(text, HasSubstr("Best of each"));
}

}  // namespace
}  // namespace shardplan::client
