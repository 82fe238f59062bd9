#include "client/cli.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shardplan::client {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<CommandLine> Parse(std::vector<std::string> args) {
  std::vector<const char*> argv = {"shardplan"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  return ParseCommandLine(static_cast<int>(argv.size()), argv.data());
}

TEST(CliTest, PlanTakesEveryFlag) {
  auto cl = Parse({"plan",
                   "--server",
                   "10.0.0.1:7000",
                   "--model",
                   "llama-3.1-70b",
                   "--gpus",
                   "16",
                   "--gpus-per-node",
                   "8",
                   "--isl",
                   "2048",
                   "--osl",
                   "128",
                   "--concurrency",
                   "64",
                   "--max-ttft-ms",
                   "500",
                   "--max-tpot-ms",
                   "50",
                   "--weight-dtype",
                   "fp8",
                   "--kv-cache-dtype",
                   "fp8",
                   "--engine",
                   "vllm",
                   "--engine-version",
                   "0.12.0",
                   "--method",
                   "anneal",
                   "--max-evaluations",
                   "300",
                   "--max-seconds",
                   "2.5",
                   "--seed",
                   "9",
                   "--no-warm-start",
                   "--output",
                   "yaml",
                   "--deadline-seconds",
                   "60"});
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_EQ(cl->command, Command::kPlan);
  EXPECT_EQ(cl->global.server, "10.0.0.1:7000");
  EXPECT_EQ(cl->global.output, "yaml");
  EXPECT_DOUBLE_EQ(cl->global.deadline_seconds, 60);
  EXPECT_EQ(cl->problem.model, "llama-3.1-70b");
  EXPECT_EQ(cl->problem.gpus, 16);
  EXPECT_EQ(cl->problem.gpus_per_node, 8);
  EXPECT_EQ(cl->problem.isl, 2048);
  EXPECT_EQ(cl->problem.osl, 128);
  EXPECT_EQ(cl->problem.concurrency, 64);
  EXPECT_DOUBLE_EQ(cl->problem.max_ttft_ms, 500);
  EXPECT_DOUBLE_EQ(cl->problem.max_tpot_ms, 50);
  EXPECT_EQ(cl->problem.weight_dtype, "fp8");
  EXPECT_EQ(cl->problem.kv_cache_dtype, "fp8");
  EXPECT_EQ(cl->problem.engine, "vllm");
  EXPECT_EQ(cl->problem.engine_version, "0.12.0");
  EXPECT_FALSE(cl->problem.hardware_set);
  EXPECT_EQ(cl->search.method, "anneal");
  EXPECT_EQ(cl->search.max_evaluations, 300);
  EXPECT_DOUBLE_EQ(cl->search.max_seconds, 2.5);
  EXPECT_EQ(cl->search.seed, 9u);
  EXPECT_TRUE(cl->search.no_warm_start);
}

TEST(CliTest, Defaults) {
  auto cl = Parse({"plan", "--model", "llama-3.1-8b", "--gpus", "8"});
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_EQ(cl->global.server, "127.0.0.1:50051");
  EXPECT_EQ(cl->global.output, "table");
  EXPECT_EQ(cl->problem.hardware, "h100-sxm-80gb");
  EXPECT_EQ(cl->search.method, "rl");
  EXPECT_FALSE(cl->search.no_warm_start);
}

TEST(CliTest, EvaluateTakesThePlan) {
  auto cl = Parse({"evaluate",
                   "--model",
                   "deepseek-v3",
                   "--gpus",
                   "32",
                   "--hardware",
                   "h200-sxm-141gb",
                   "--tp",
                   "8",
                   "--pp",
                   "2",
                   "--dp",
                   "2",
                   "--ep",
                   "16",
                   "--op",
                   "attention=batch",
                   "--op",
                   "qkv=batch",
                   "--stage-layers",
                   "30,31",
                   "--batch-size",
                   "128",
                   "--micro-batches",
                   "4",
                   "--emit",
                   "sglang",
                   "--engine-version",
                   "0.4.9"});
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_EQ(cl->command, Command::kEvaluate);
  EXPECT_TRUE(cl->problem.hardware_set);
  EXPECT_EQ(cl->problem.hardware, "h200-sxm-141gb");
  EXPECT_EQ(cl->plan.tp, 8);
  EXPECT_EQ(cl->plan.pp, 2);
  EXPECT_EQ(cl->plan.dp, 2);
  EXPECT_EQ(cl->plan.ep, 16);
  EXPECT_THAT(cl->plan.ops, ElementsAre("attention=batch", "qkv=batch"));
  EXPECT_THAT(cl->plan.stage_layers, ElementsAre(30, 31));
  EXPECT_EQ(cl->plan.batch_size, 128);
  EXPECT_EQ(cl->plan.micro_batches, 4);
  EXPECT_EQ(cl->global.emit, "sglang");
  EXPECT_EQ(cl->global.engine_version, "0.4.9");
}

TEST(CliTest, CatalogAndHealth) {
  auto catalog = Parse({"catalog", "--output", "json"});
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  EXPECT_EQ(catalog->command, Command::kCatalog);
  EXPECT_EQ(catalog->global.output, "json");
  auto health = Parse({"health", "--server", "h:1", "--service",
                       "shardplan.v1.ShardingPlanner"});
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(health->command, Command::kHealth);
  EXPECT_EQ(health->health_service, "shardplan.v1.ShardingPlanner");
}

TEST(CliTest, BadValuesAreQuotedWithTheFlag) {
  auto gpus = Parse({"plan", "--model", "m", "--gpus", "abc"});
  ASSERT_FALSE(gpus.ok());
  EXPECT_EQ(gpus.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(gpus.status().message(),
              HasSubstr("--gpus: must be a positive integer, got \"abc\""));

  auto zero = Parse({"evaluate", "--model", "m", "--gpus", "8", "--tp", "0"});
  ASSERT_FALSE(zero.ok());
  EXPECT_THAT(zero.status().message(),
              HasSubstr("--tp: must be a positive integer, got \"0\""));

  auto seconds =
      Parse({"plan", "--model", "m", "--gpus", "8", "--max-seconds", "-1"});
  ASSERT_FALSE(seconds.ok());
  EXPECT_THAT(seconds.status().message(),
              HasSubstr("must be a number >= 0, got \"-1\""));

  auto method =
      Parse({"plan", "--model", "m", "--gpus", "8", "--method", "bogus"});
  ASSERT_FALSE(method.ok());
  EXPECT_THAT(method.status().message(), HasSubstr("bogus"));

  auto output =
      Parse({"evaluate", "--model", "m", "--gpus", "8", "--output", "yaml"});
  EXPECT_FALSE(output.ok()) << "yaml is a plan-only output";
}

TEST(CliTest, UsageErrors) {
  EXPECT_FALSE(Parse({}).ok());                  // no subcommand
  EXPECT_FALSE(Parse({"frobnicate"}).ok());      // unknown subcommand
  EXPECT_FALSE(Parse({"plan", "--nope"}).ok());  // unknown flag
  auto both =
      Parse({"plan", "--model", "a", "--hf-config", "c.json", "--gpus", "8"});
  ASSERT_FALSE(both.ok());
  EXPECT_THAT(both.status().message(), HasSubstr("excludes"));
}

TEST(CliTest, HelpListsSubcommandFlagsAndExitCodes) {
  auto top = Parse({"--help"});
  ASSERT_TRUE(top.ok()) << top.status();
  EXPECT_THAT(top->help, HasSubstr("plan"));
  EXPECT_THAT(top->help, HasSubstr("Exit codes: 0 ok"));
  auto plan = Parse({"plan", "--help"});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->help, HasSubstr("--max-evaluations"));
  EXPECT_THAT(plan->help, HasSubstr("--emit"));
}

}  // namespace
}  // namespace shardplan::client
