// Builds shardplan.v1 requests from the `shardplan` CLI's flag values; spec
// files (proto JSON, or YAML with the same field names) are read by
// proto/spec_text.h, the converter the server and simulator use too.
#ifndef SHARDPLAN_CLIENT_REQUEST_BUILDER_H_
#define SHARDPLAN_CLIENT_REQUEST_BUILDER_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "shardplan/v1/shardplan.pb.h"

namespace shardplan::client {

// Reads a whole file; NOT_FOUND / PERMISSION_DENIED name the path. Injected so
// tests run without files.
using FileReader =
    std::function<absl::StatusOr<std::string>(const std::string& path)>;
// The real file system, read with a bound: INVALID_ARGUMENT naming the path
// for a directory, a device, FIFO or socket (a symlink to /dev/zero, say), or
// a file over `max_bytes` (checked before reading, and the read stops there
// for files that grow); NOT_FOUND / PERMISSION_DENIED as above. Never reads
// more than `max_bytes` + 1 bytes.
inline constexpr size_t kMaxInputFileBytes = 16u << 20;
absl::StatusOr<std::string> ReadBoundedFile(const std::string& path,
                                            size_t max_bytes);
// ReadBoundedFile(path, kMaxInputFileBytes).
absl::StatusOr<std::string> ReadFileFromDisk(const std::string& path);

// Flags shared by `plan` and `evaluate`: which model, which cluster, which
// workload.
struct ProblemFlags {
  std::string model;       // --model: catalog name
  std::string model_file;  // --model-file: ModelSpec as JSON or YAML
  std::string hf_config;   // --hf-config: a Hugging Face config.json
  std::string hardware = "h100-sxm-80gb";
  int gpus = 0;
  int gpus_per_node = 0;     // 0 = the hardware's default
  std::string cluster_file;  // --cluster-file: ClusterSpec as JSON or YAML
  int isl = 1024;
  int osl = 1024;
  int concurrency = 0;
  double max_ttft_ms = 0;
  double max_tpot_ms = 0;
  std::string weight_dtype;  // "" = the checkpoint's (server side)
  std::string kv_cache_dtype;
  // --engine: vllm | sglang | trtllm ("" = engine-agnostic); picks the
  // server's calibration profile for that engine. --engine-version: recorded.
  std::string engine;
  std::string engine_version;
  // --calibration-profile: a built-in profile or one made by `shardplan
  // calibrate` ("" = the engine's built-in profile).
  std::string calibration_profile;
  // Open-loop traffic: --request-rate (requests/s, 0 = closed loop),
  // --slo-percentile (0 = the SLOs bound the mean), --input-dist /
  // --output-dist ("fixed:N", "uniform:MIN:MAX", "lognormal:MEAN:SIGMA[:MIN:
  // MAX]", "histogram:TOKENS=WEIGHT,..."; "" = fixed at --isl / --osl),
  // --hardware-options ("NAME:PRICE[:MAXGPUS],...": prices per GPU-hour).
  double request_rate = 0;
  int slo_percentile = 0;
  std::string input_dist;
  std::string output_dist;
  std::string hardware_options;
  // True when the user set --hardware / --gpus / --gpus-per-node explicitly
  // (they override the cluster file's values).
  bool hardware_set = false;
};

// `plan`-only flags.
struct SearchFlags {
  std::string method = "rl";
  int max_evaluations = 0;
  double max_seconds = 0;
  uint32_t seed = 0;
  bool no_warm_start = false;
  std::string objective;  // "" = server default (expected) | conservative
  int top_n = 0;          // plans in the final update's top list; 0 = 5
  // "" = server default (auto) | auto | off | only
  std::string disaggregation;
  // --goal: "" = max_throughput | min-gpus | min-cost (sent with '_').
  std::string goal;
};

// `replan`-only flags (with SearchFlags).
struct ReplanFlags {
  // --current: what `shardplan plan --output json` (PlanUpdate lines; the
  // last one is the plan) or `--output yaml` (the ShardingPlan manifest)
  // wrote.
  std::string current;
  // --removed-nodes: nodes of the running cluster that are gone ("" = the
  // last ones when the new cluster is smaller).
  std::vector<int> removed_nodes;
  double max_transition_seconds = 0;  // 0 = no limit
  double transition_weight = -1;      // < 0 = the server's default rule
};

// `evaluate`-only flags.
struct PlanFlags {
  int tp = 1;
  int pp = 1;
  int dp = 1;
  int ep = 1;
  std::vector<std::string> ops;  // "NAME=DIM", repeated --op
  std::vector<int> stage_layers;
  int batch_size = 0;
  int micro_batches = 0;
};

// Parses "NAME=DIM" into an OperatorSharding. INVALID_ARGUMENT quoting the
// value otherwise.
absl::StatusOr<shardplan::v1::OperatorSharding> ParseOpAssignment(
    absl::string_view text);

// Fills model, cluster and workload. INVALID_ARGUMENT (usage error) when not
// exactly one of
// --model/--model-file/--hf-config is given, when neither --gpus nor
// --cluster-file is, or a file cannot be read/parsed. The server validates the
// values themselves.
absl::Status FillProblem(const ProblemFlags& flags, const FileReader& read_file,
                         shardplan::v1::ModelSource* model,
                         shardplan::v1::ClusterSpec* cluster,
                         shardplan::v1::Workload* workload);

absl::StatusOr<shardplan::v1::PlanRequest> BuildPlanRequest(
    const ProblemFlags& problem, const SearchFlags& search,
    const FileReader& read_file);

// The running deployment of a `plan --output json|yaml` file's text. The
// JSON form carries no cluster: the plan's GPUs on `new_cluster`'s hardware
// and node size. INVALID_ARGUMENT naming `what` (the path) otherwise.
absl::StatusOr<shardplan::v1::RunningDeployment> ParseRunningDeployment(
    absl::string_view text, absl::string_view what,
    const shardplan::v1::ClusterSpec& new_cluster);

// A PlanRequest with `current` set from --current and the transition options.
absl::StatusOr<shardplan::v1::PlanRequest> BuildReplanRequest(
    const ProblemFlags& problem, const SearchFlags& search,
    const ReplanFlags& replan, const FileReader& read_file);

absl::StatusOr<shardplan::v1::EvaluateRequest> BuildEvaluateRequest(
    const ProblemFlags& problem, const PlanFlags& plan,
    const FileReader& read_file);

// A short human label of the model source: the catalog name, the spec's name,
// the HF config's "_name_or_path"/"model_type", or the file name.
std::string ModelLabel(const shardplan::v1::ModelSource& model);

}  // namespace shardplan::client

#endif  // SHARDPLAN_CLIENT_REQUEST_BUILDER_H_
