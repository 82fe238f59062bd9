#include "client/request_builder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shardplan::client {
namespace {

using ::testing::HasSubstr;

// A FileReader over an in-memory map.
FileReader FakeFiles(std::map<std::string, std::string> files) {
  return [files = std::move(files)](
             const std::string& path) -> absl::StatusOr<std::string> {
    auto it = files.find(path);
    if (it == files.end()) return absl::NotFoundError("cannot open " + path);
    return it->second;
  };
}

ProblemFlags CatalogProblem() {
  ProblemFlags f;
  f.model = "llama-3.1-70b";
  f.gpus = 16;
  f.gpus_per_node = 8;
  f.isl = 2048;
  f.osl = 256;
  f.concurrency = 32;
  f.max_ttft_ms = 500;
  f.weight_dtype = "fp8";
  return f;
}

TEST(RequestBuilderTest, PlanRequestCarriesEveryFlag) {
  SearchFlags s;
  s.method = "anneal";
  s.max_evaluations = 500;
  s.max_seconds = 7.5;
  s.seed = 42;
  s.no_warm_start = true;
  s.objective = "conservative";
  s.disaggregation = "only";
  ProblemFlags problem = CatalogProblem();
  problem.engine = "sglang";
  problem.engine_version = "0.5.1";
  auto request = BuildPlanRequest(problem, s, FakeFiles({}));
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->model().catalog_name(), "llama-3.1-70b");
  EXPECT_EQ(request->cluster().hardware(), "h100-sxm-80gb");
  EXPECT_EQ(request->cluster().num_gpus(), 16);
  EXPECT_EQ(request->cluster().gpus_per_node(), 8);
  EXPECT_EQ(request->workload().input_tokens(), 2048);
  EXPECT_EQ(request->workload().output_tokens(), 256);
  EXPECT_EQ(request->workload().concurrency(), 32);
  EXPECT_DOUBLE_EQ(request->workload().max_ttft_ms(), 500);
  EXPECT_EQ(request->workload().weight_dtype(), "fp8");
  EXPECT_EQ(request->workload().engine(), "sglang");
  EXPECT_EQ(request->workload().engine_version(), "0.5.1");
  EXPECT_EQ(request->options().objective(), "conservative");
  EXPECT_EQ(request->options().disaggregation(), "only");
  EXPECT_EQ(request->options().method(), "anneal");
  EXPECT_EQ(request->options().max_evaluations(), 500);
  EXPECT_DOUBLE_EQ(request->options().max_seconds(), 7.5);
  EXPECT_EQ(request->options().seed(), 42u);
  ASSERT_TRUE(request->options().has_warm_start());
  EXPECT_FALSE(request->options().warm_start());
}

TEST(RequestBuilderTest, WarmStartIsExplicitlyTrueByDefault) {
  auto request =
      BuildPlanRequest(CatalogProblem(), SearchFlags(), FakeFiles({}));
  ASSERT_TRUE(request.ok());
  ASSERT_TRUE(request->options().has_warm_start());
  EXPECT_TRUE(request->options().warm_start());
}

TEST(RequestBuilderTest, RequiresExactlyOneModelSource) {
  ProblemFlags f = CatalogProblem();
  f.model.clear();
  auto none = BuildPlanRequest(f, SearchFlags(), FakeFiles({}));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(none.status().message(), HasSubstr("--model"));

  f.model = "llama-3.1-8b";
  f.hf_config = "config.json";
  auto two = BuildPlanRequest(f, SearchFlags(), FakeFiles({}));
  ASSERT_FALSE(two.ok());
  EXPECT_THAT(two.status().message(), HasSubstr("only one"));
}

TEST(RequestBuilderTest, RequiresGpusOrClusterFile) {
  ProblemFlags f = CatalogProblem();
  f.gpus = 0;
  auto request = BuildPlanRequest(f, SearchFlags(), FakeFiles({}));
  ASSERT_FALSE(request.ok());
  EXPECT_THAT(request.status().message(),
              HasSubstr("--gpus must be > 0, got 0"));
}

TEST(RequestBuilderTest, ModelFileYamlBecomesSpec) {
  ProblemFlags f = CatalogProblem();
  f.model.clear();
  f.model_file = "tiny.yaml";
  const std::string yaml =
      "name: tiny\nfamily: llama\nhiddenSize: 1024\nnumLayers: "
      "4\nnumAttentionHeads: 8\n"
      "numKeyValueHeads: 2\nintermediateSize: 4096\nvocabSize: 32000\n"
      "tieWordEmbeddings: true\n";
  auto request =
      BuildPlanRequest(f, SearchFlags(), FakeFiles({{"tiny.yaml", yaml}}));
  ASSERT_TRUE(request.ok()) << request.status();
  const auto& spec = request->model().spec();
  EXPECT_EQ(spec.name(), "tiny");
  EXPECT_EQ(spec.hidden_size(), 1024);
  EXPECT_EQ(spec.num_key_value_heads(), 2);
  EXPECT_TRUE(spec.tie_word_embeddings());
}

TEST(RequestBuilderTest, ModelFileJsonAndUnknownFieldIsRejectedWithPath) {
  ProblemFlags f = CatalogProblem();
  f.model.clear();
  f.model_file = "bad.json";
  auto request = BuildPlanRequest(
      f, SearchFlags(),
      FakeFiles({{"bad.json", R"({"name": "x", "hiddenSizes": 5})"}}));
  ASSERT_FALSE(request.ok());
  EXPECT_EQ(request.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(request.status().message(), HasSubstr("--model-file bad.json"));
  EXPECT_THAT(request.status().message(), HasSubstr("hiddenSizes"));
}

TEST(RequestBuilderTest, MissingFileIsNotFound) {
  ProblemFlags f = CatalogProblem();
  f.model.clear();
  f.hf_config = "nope.json";
  auto request = BuildPlanRequest(f, SearchFlags(), FakeFiles({}));
  ASSERT_FALSE(request.ok());
  EXPECT_EQ(request.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(request.status().message(), HasSubstr("nope.json"));
}

TEST(RequestBuilderTest, HfConfigIsPassedVerbatim) {
  ProblemFlags f = CatalogProblem();
  f.model.clear();
  f.hf_config = "config.json";
  const std::string config = R"({"model_type": "llama", "hidden_size": 4096})";
  auto request =
      BuildPlanRequest(f, SearchFlags(), FakeFiles({{"config.json", config}}));
  ASSERT_TRUE(request.ok());
  EXPECT_EQ(request->model().hf_config_json(), config);
  EXPECT_EQ(ModelLabel(request->model()), "llama");

  auto bad =
      BuildPlanRequest(f, SearchFlags(), FakeFiles({{"config.json", "{nope"}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("not valid JSON"));
}

TEST(RequestBuilderTest, ClusterFileWithFlagOverrides) {
  ProblemFlags f = CatalogProblem();
  f.gpus = 0;
  f.gpus_per_node = 0;
  f.cluster_file = "cluster.yaml";
  const std::string yaml =
      "hardware: h200-sxm-141gb\nnumGpus: 32\ngpusPerNode: 8\n"
      "nodeGroups:\n  - name: rack-a\n    numNodes: 2\n  - name: rack-b\n    "
      "numNodes: 2\n";
  auto request =
      BuildPlanRequest(f, SearchFlags(), FakeFiles({{"cluster.yaml", yaml}}));
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->cluster().hardware(),
            "h200-sxm-141gb");  // file wins over default
  EXPECT_EQ(request->cluster().num_gpus(), 32);
  ASSERT_EQ(request->cluster().node_groups_size(), 2);
  EXPECT_EQ(request->cluster().node_groups(1).name(), "rack-b");

  f.gpus = 16;
  f.hardware = "h100-sxm-80gb";
  f.hardware_set = true;
  auto overridden =
      BuildPlanRequest(f, SearchFlags(), FakeFiles({{"cluster.yaml", yaml}}));
  ASSERT_TRUE(overridden.ok());
  EXPECT_EQ(overridden->cluster().hardware(), "h100-sxm-80gb");
  EXPECT_EQ(overridden->cluster().num_gpus(), 16);
}

TEST(RequestBuilderTest, EvaluateRequestBuildsPlan) {
  PlanFlags p;
  p.tp = 8;
  p.pp = 2;
  p.dp = 1;
  p.ep = 1;
  p.ops = {"attention=batch", "mlp_down = row"};
  p.stage_layers = {40, 40};
  p.batch_size = 64;
  auto request = BuildEvaluateRequest(CatalogProblem(), p, FakeFiles({}));
  ASSERT_TRUE(request.ok()) << request.status();
  const auto& plan = request->plan();
  EXPECT_EQ(plan.tp(), 8);
  EXPECT_EQ(plan.pp(), 2);
  EXPECT_EQ(plan.batch_size(), 64);
  ASSERT_EQ(plan.operator_sharding_size(), 2);
  EXPECT_EQ(plan.operator_sharding(0).operator_(), "attention");
  EXPECT_EQ(plan.operator_sharding(0).dim(), "batch");
  EXPECT_EQ(plan.operator_sharding(1).operator_(), "mlp_down");
  EXPECT_EQ(plan.operator_sharding(1).dim(), "row");
  ASSERT_EQ(plan.stage_layers_size(), 2);
}

TEST(RequestBuilderTest, BadOpAssignmentQuotesTheValue) {
  for (const char* bad : {"attention", "=batch", "attention=", ""}) {
    auto op = ParseOpAssignment(bad);
    ASSERT_FALSE(op.ok()) << bad;
    EXPECT_THAT(op.status().message(), HasSubstr("NAME=DIM"));
    EXPECT_THAT(op.status().message(),
                HasSubstr(std::string("\"") + bad + "\""));
  }
}

// `replan --current` reads what `plan --output yaml|json` writes.
TEST(RequestBuilderTest, RunningDeploymentFromManifestAndJsonLines) {
  shardplan::v1::ClusterSpec next;
  next.set_hardware("h100-sxm-80gb");
  next.set_num_gpus(24);
  next.set_gpus_per_node(8);
  absl::StatusOr<shardplan::v1::RunningDeployment> yaml =
      ParseRunningDeployment(
          "apiVersion: shardplan.dev/v1\nkind: ShardingPlan\n"
          "cluster: {hardware: h100-sxm-80gb, gpus: 32, gpusPerNode: 8}\n"
          "parallelism: {replicas: 1, data: 1, tensor: 4, pipeline: 8, "
          "expert: 1, microBatches: 8, batchSizePerReplica: 64}\n"
          "operatorSharding: {qkv: column, attn_out: row}\n",
          "running.yaml", next);
  ASSERT_TRUE(yaml.ok()) << yaml.status();
  EXPECT_EQ(yaml->cluster().num_gpus(), 32);
  EXPECT_EQ(yaml->plan().tp(), 4);
  EXPECT_EQ(yaml->plan().pp(), 8);
  EXPECT_EQ(yaml->plan().batch_size(), 64);
  EXPECT_EQ(yaml->plan().operator_sharding_size(), 2);

  absl::StatusOr<shardplan::v1::RunningDeployment> json =
      ParseRunningDeployment(
          "{\"plan\": {\"tp\": 8}}\n{\"plan\": {\"tp\": 8, \"pp\": 2, "
          "\"replicas\": 2}, \"final\": true}\n",
          "running.jsonl", next);
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ(json->plan().pp(), 2);
  EXPECT_EQ(json->cluster().num_gpus(), 32);  // the plan's GPUs
  EXPECT_EQ(json->cluster().hardware(), "h100-sxm-80gb");

  absl::StatusOr<shardplan::v1::RunningDeployment> bad =
      ParseRunningDeployment("kind: Other\n", "x.yaml", next);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("x.yaml"));

  // A disaggregated manifest lists pools; its plan comes from the JSON lines.
  absl::StatusOr<shardplan::v1::RunningDeployment> pools =
      ParseRunningDeployment(
          "apiVersion: shardplan.dev/v1\nkind: ShardingPlan\n"
          "cluster: {hardware: h100-sxm-80gb, gpus: 24, gpusPerNode: 8}\n"
          "disaggregated: {prefillInstances: 2, decodeInstances: 2}\n",
          "pools.yaml", next);
  EXPECT_EQ(pools.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(pools.status().message()),
              HasSubstr("--output json"));
}

// A manifest number that is not an integer is refused (it used to be read as
// the default, re-planning from another plan).
TEST(RequestBuilderTest, ManifestDegreeThatIsNotAnIntegerIsRefused) {
  shardplan::v1::ClusterSpec next;
  next.set_hardware("h100-sxm-80gb");
  next.set_num_gpus(16);
  next.set_gpus_per_node(8);
  for (const char* degrees :
       {"{data: 2, tensor: 8.0}", "{data: 2, tensor: eight}",
        "{data: 2, tensor: [8]}"}) {
    absl::StatusOr<shardplan::v1::RunningDeployment> parsed =
        ParseRunningDeployment(
            absl::StrCat("apiVersion: shardplan.dev/v1\nkind: ShardingPlan\n"
                         "cluster: {hardware: h100-sxm-80gb, gpus: 16, "
                         "gpusPerNode: 8}\nparallelism: ",
                         degrees, "\n"),
            "running.yaml", next);
    ASSERT_FALSE(parsed.ok()) << degrees;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(parsed.status().message()),
                HasSubstr("parallelism.tensor must be an integer"));
  }
}

// Input files are read with a bound: directories, devices and FIFOs are
// refused before any read, oversize files before they are read whole.
TEST(RequestBuilderTest, InputFilesAreCheckedBeforeTheyAreRead) {
  char pattern[] = "/tmp/shardplan-client-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const std::string dir = pattern;
  const std::string zero = dir + "/zero.yaml";
  ASSERT_EQ(symlink("/dev/zero", zero.c_str()), 0);
  const std::string fifo = dir + "/fifo.yaml";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string sparse = dir + "/sparse.yaml";
  {
    const int fd = open(sparse.c_str(), O_CREAT | O_WRONLY, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, off_t{1} << 30), 0);  // 1 GiB, no blocks
    close(fd);
  }
  const std::string small = dir + "/model.yaml";
  {
    const int fd = open(small.c_str(), O_CREAT | O_WRONLY, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, "name: x\n", 8), 8);
    close(fd);
  }
  const struct {
    std::string path;
    const char* message;
  } refused[] = {{dir, "is a directory"},
                 {zero, "not a regular file"},
                 {fifo, "not a regular file"},
                 {sparse, "1073741824 bytes"}};
  for (const auto& c : refused) {
    const absl::Time start = absl::Now();
    absl::StatusOr<std::string> text = ReadFileFromDisk(c.path);
    EXPECT_LT(absl::Now() - start, absl::Seconds(1)) << c.path;
    ASSERT_FALSE(text.ok()) << c.path;
    EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(text.status().message()), HasSubstr(c.message));
  }
  absl::StatusOr<std::string> text = ReadFileFromDisk(small);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "name: x\n");
  EXPECT_FALSE(ReadBoundedFile(small, 4).ok());
  // A directory as --model-file is a usage error, not an empty spec.
  ProblemFlags flags;
  flags.model_file = dir;
  flags.gpus = 8;
  absl::StatusOr<shardplan::v1::PlanRequest> request =
      BuildPlanRequest(flags, SearchFlags(), ReadFileFromDisk);
  EXPECT_EQ(request.status().code(), absl::StatusCode::kInvalidArgument);
  (void)!system(absl::StrCat("rm -rf '", dir, "'").c_str());
}

TEST(RequestBuilderTest, TrafficFlags) {
  SearchFlags s;
  s.goal = "min-cost";
  ProblemFlags problem = CatalogProblem();
  problem.concurrency = 0;
  problem.request_rate = 40;
  problem.slo_percentile = 99;
  problem.input_dist = "uniform:500:8000";
  problem.output_dist = "histogram:100=1,300=3";
  problem.hardware_options = "h100-sxm-80gb:2.50,h200-sxm-141gb:3.60:64";
  auto request = BuildPlanRequest(problem, s, FakeFiles({}));
  ASSERT_TRUE(request.ok()) << request.status();
  const auto& w = request->workload();
  EXPECT_DOUBLE_EQ(w.request_rate(), 40);
  EXPECT_EQ(w.slo_percentile(), 99);
  EXPECT_EQ(w.input_tokens_distribution().kind(), "uniform");
  EXPECT_DOUBLE_EQ(w.input_tokens_distribution().max(), 8000);
  ASSERT_EQ(w.output_tokens_distribution().buckets_size(), 2);
  EXPECT_EQ(w.output_tokens_distribution().buckets(1).tokens(), 300);
  EXPECT_DOUBLE_EQ(w.output_tokens_distribution().buckets(1).weight(), 3);
  EXPECT_EQ(request->options().goal(), "min_cost");
  const auto& options = request->cluster().hardware_options();
  ASSERT_EQ(options.size(), 2);
  EXPECT_EQ(options[1].hardware(), "h200-sxm-141gb");
  EXPECT_DOUBLE_EQ(options[1].price_per_gpu_hour(), 3.6);
  EXPECT_EQ(options[1].max_gpus(), 64);

  problem.input_dist = "lognormal:1000";
  auto bad = BuildPlanRequest(problem, s, FakeFiles({}));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("--input-dist"));
  EXPECT_THAT(bad.status().message(), HasSubstr("lognormal:1000"));
  problem.input_dist = "";
  problem.hardware_options = "h100-sxm-80gb";
  bad = BuildPlanRequest(problem, s, FakeFiles({}));
  EXPECT_THAT(bad.status().message(), HasSubstr("--hardware-options"));
}

}  // namespace
}  // namespace shardplan::client
