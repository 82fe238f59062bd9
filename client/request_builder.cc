#include "client/request_builder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "client/internal/manifest_keys.h"
#include "client/internal/quote.h"
#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"
#include "proto/spec_text.h"
#include "proto/status_macros.h"
#include "yaml-cpp/yaml.h"

namespace shardplan::client {

namespace manifest = internal::manifest;
namespace {

using shardplan::v1::ClusterSpec;
using shardplan::v1::EvaluateRequest;
using shardplan::v1::ModelSource;
using shardplan::v1::OperatorSharding;
using shardplan::v1::PlanRequest;
using shardplan::v1::Workload;

absl::Status BadFlag(absl::string_view flag, absl::string_view value,
                     absl::string_view want) {
  return absl::InvalidArgumentError(
      absl::StrCat(flag, ": expected ", want, ", got \"", value, "\""));
}

// "KIND:ARGS" -> TokenDistribution. The server checks the values' ranges.
absl::Status ParseTokenDistribution(const std::string& text,
                                    absl::string_view flag,
                                    shardplan::v1::TokenDistribution* d) {
  const std::vector<std::string> parts = absl::StrSplit(text, ':');
  const std::string& kind = parts[0];
  std::vector<double> numbers;
  if (kind != "histogram") {
    for (size_t i = 1; i < parts.size(); ++i) {
      double v = 0;
      if (!absl::SimpleAtod(parts[i], &v)) {
        return BadFlag(flag, text, "numbers after the kind");
      }
      numbers.push_back(v);
    }
  }
  d->set_kind(kind);
  if (kind == "fixed" && numbers.size() == 1) {
    d->set_mean(numbers[0]);
  } else if (kind == "uniform" && numbers.size() == 2) {
    d->set_min(numbers[0]);
    d->set_max(numbers[1]);
  } else if (kind == "lognormal" &&
             (numbers.size() == 2 || numbers.size() == 4)) {
    d->set_mean(numbers[0]);
    d->set_sigma(numbers[1]);
    if (numbers.size() == 4) {
      d->set_min(numbers[2]);
      d->set_max(numbers[3]);
    }
  } else if (kind == "histogram" && parts.size() == 2) {
    for (absl::string_view bucket : absl::StrSplit(parts[1], ',')) {
      const std::vector<std::string> tw = absl::StrSplit(bucket, '=');
      int tokens = 0;
      double weight = 0;
      if (tw.size() != 2 || !absl::SimpleAtoi(tw[0], &tokens) ||
          !absl::SimpleAtod(tw[1], &weight)) {
        return BadFlag(flag, text, "histogram:TOKENS=WEIGHT,...");
      }
      auto* b = d->add_buckets();
      b->set_tokens(tokens);
      b->set_weight(weight);
    }
  } else {
    return BadFlag(flag, text,
                   "fixed:N, uniform:MIN:MAX, lognormal:MEAN:SIGMA[:MIN:MAX] "
                   "or histogram:TOKENS=WEIGHT,...");
  }
  return absl::OkStatus();
}

// "NAME:PRICE[:MAXGPUS],..." -> cluster.hardware_options.
absl::Status ParseHardwareOptions(const std::string& text,
                                  shardplan::v1::ClusterSpec* cluster) {
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    const std::vector<std::string> parts = absl::StrSplit(item, ':');
    double price = 0;
    int max_gpus = 0;
    if (parts.size() < 2 || parts.size() > 3 || parts[0].empty() ||
        !absl::SimpleAtod(parts[1], &price) ||
        (parts.size() == 3 && !absl::SimpleAtoi(parts[2], &max_gpus))) {
      return BadFlag("--hardware-options", text,
                     "NAME:PRICE_PER_GPU_HOUR[:MAX_GPUS],...");
    }
    auto* option = cluster->add_hardware_options();
    option->set_hardware(parts[0]);
    option->set_price_per_gpu_hour(price);
    option->set_max_gpus(max_gpus);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ReadFileFromDisk(const std::string& path) {
  return ReadBoundedFile(path, kMaxInputFileBytes);
}

absl::StatusOr<std::string> ReadBoundedFile(const std::string& path,
                                            size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused
  // below like every file that is not a regular one.
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == EACCES) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot read ", path, ": permission denied"));
    }
    return absl::NotFoundError(
        absl::StrCat("cannot open ", path, ": no such file"));
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { close(fd); }
  } closer{fd};
  struct stat info {};
  if (fstat(fd, &info) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("cannot stat ", path));
  }
  if (S_ISDIR(info.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is a directory, not a file"));
  }
  if (!S_ISREG(info.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, " is not a regular file (a device, FIFO or socket)"));
  }
  if (static_cast<uint64_t>(info.st_size) > max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is ", info.st_size, " bytes, more than the ",
                     max_bytes, " an input file may have"));
  }
  // Regular files can still grow while read: stop one byte past the bound.
  const int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  std::string text;
  text.resize(std::min<uint64_t>(info.st_size, max_bytes) + 1);
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return absl::InvalidArgumentError(absl::StrCat("cannot read ", path));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
    if (got == text.size() && got <= max_bytes) text.resize(max_bytes + 1);
  }
  if (got > max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is more than the ", max_bytes,
                     " bytes an input file may have"));
  }
  text.resize(got);
  return text;
}

absl::StatusOr<OperatorSharding> ParseOpAssignment(absl::string_view text) {
  const std::vector<absl::string_view> parts =
      absl::StrSplit(text, absl::MaxSplits('=', 1));
  if (parts.size() != 2 || parts[0].empty() || parts[1].empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--op expects NAME=DIM (e.g. --op attention=batch), got \"", text,
        "\""));
  }
  OperatorSharding op;
  op.set_operator_(std::string(absl::StripAsciiWhitespace(parts[0])));
  op.set_dim(std::string(absl::StripAsciiWhitespace(parts[1])));
  return op;
}

absl::Status FillProblem(const ProblemFlags& flags, const FileReader& read_file,
                         ModelSource* model, ClusterSpec* cluster,
                         Workload* workload) {
  const int sources = !flags.model.empty() + !flags.model_file.empty() +
                      !flags.hf_config.empty();
  if (sources != 1) {
    return absl::InvalidArgumentError(
        sources == 0
            ? "no model given: pass --model NAME (see `shardplan catalog`), "
              "--model-file spec.yaml or --hf-config config.json"
            : "give only one of --model, --model-file and --hf-config");
  }
  if (!flags.model.empty()) {
    model->set_catalog_name(flags.model);
  } else if (!flags.model_file.empty()) {
    ASSIGN_OR_RETURN(const std::string text, read_file(flags.model_file));
    RETURN_IF_ERROR(Annotate(spec_text::Parse(text, model->mutable_spec()),
                             absl::StrCat("--model-file ", flags.model_file)));
  } else {
    ASSIGN_OR_RETURN(std::string text, read_file(flags.hf_config));
    // Check it is JSON at all here; the server interprets the fields.
    if (!nlohmann::json::accept(text)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--hf-config ", flags.hf_config, ": not valid JSON"));
    }
    model->set_hf_config_json(std::move(text));
  }

  if (!flags.cluster_file.empty()) {
    ASSIGN_OR_RETURN(const std::string text, read_file(flags.cluster_file));
    RETURN_IF_ERROR(
        Annotate(spec_text::Parse(text, cluster),
                 absl::StrCat("--cluster-file ", flags.cluster_file)));
  } else if (flags.gpus <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--gpus must be > 0, got ", flags.gpus,
                     " (or describe the cluster with --cluster-file)"));
  }
  // Explicit flags override the cluster file's values.
  if (flags.cluster_file.empty() || flags.hardware_set) {
    if (!flags.hardware.empty() && !cluster->has_hardware_spec()) {
      cluster->set_hardware(flags.hardware);
    }
  }
  if (flags.gpus > 0) cluster->set_num_gpus(flags.gpus);
  if (flags.gpus_per_node > 0) cluster->set_gpus_per_node(flags.gpus_per_node);

  workload->set_input_tokens(flags.isl);
  workload->set_output_tokens(flags.osl);
  workload->set_concurrency(flags.concurrency);
  workload->set_max_ttft_ms(flags.max_ttft_ms);
  workload->set_max_tpot_ms(flags.max_tpot_ms);
  workload->set_weight_dtype(flags.weight_dtype);
  workload->set_kv_cache_dtype(flags.kv_cache_dtype);
  workload->set_engine(flags.engine);
  workload->set_engine_version(flags.engine_version);
  workload->set_calibration_profile(flags.calibration_profile);
  workload->set_request_rate(flags.request_rate);
  workload->set_slo_percentile(flags.slo_percentile);
  if (!flags.input_dist.empty()) {
    RETURN_IF_ERROR(
        ParseTokenDistribution(flags.input_dist, "--input-dist",
                               workload->mutable_input_tokens_distribution()));
  }
  if (!flags.output_dist.empty()) {
    RETURN_IF_ERROR(
        ParseTokenDistribution(flags.output_dist, "--output-dist",
                               workload->mutable_output_tokens_distribution()));
  }
  if (!flags.hardware_options.empty()) {
    cluster->clear_hardware_options();
    RETURN_IF_ERROR(ParseHardwareOptions(flags.hardware_options, cluster));
  }
  return absl::OkStatus();
}

absl::StatusOr<PlanRequest> BuildPlanRequest(const ProblemFlags& problem,
                                             const SearchFlags& search,
                                             const FileReader& read_file) {
  PlanRequest request;
  RETURN_IF_ERROR(FillProblem(problem, read_file, request.mutable_model(),
                              request.mutable_cluster(),
                              request.mutable_workload()));
  auto* options = request.mutable_options();
  options->set_method(search.method);
  options->set_max_evaluations(search.max_evaluations);
  options->set_max_seconds(search.max_seconds);
  options->set_seed(search.seed);
  options->set_warm_start(!search.no_warm_start);
  options->set_objective(search.objective);
  options->set_disaggregation(search.disaggregation);
  options->set_goal(absl::StrReplaceAll(search.goal, {{"-", "_"}}));
  options->set_top_n(search.top_n);
  return request;
}

namespace {

// The running plan of a `plan --output yaml` manifest (kind ShardingPlan).
absl::StatusOr<shardplan::v1::RunningDeployment> ManifestToDeployment(
    const YAML::Node& root, absl::string_view what) {
  shardplan::v1::RunningDeployment out;
  const YAML::Node cluster = root[manifest::kCluster];
  const YAML::Node degrees = root[manifest::kParallelism];
  if (root["disaggregated"].IsDefined()) {
    // The manifest lists the pools for people and orchestrators; the JSON
    // lines carry the plan itself.
    return absl::InvalidArgumentError(absl::StrCat(
        what,
        ": a disaggregated ShardingPlan manifest is not read back; pass what "
        "`shardplan plan --output json` wrote"));
  }
  if (!cluster.IsDefined() || !cluster.IsMap() || !degrees.IsDefined() ||
      !degrees.IsMap()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": a ShardingPlan manifest needs cluster and parallelism"));
  }
  // A number that is not an integer (tensor: 8.0) is refused, never read as
  // the default: re-planning from another plan than the running one is worse
  // than stopping.
  auto integer = [&](const YAML::Node& section, const char* section_name,
                     const char* key, int fallback) -> absl::StatusOr<int> {
    const YAML::Node node = section[key];
    if (!node.IsDefined() || node.IsNull()) return fallback;
    int value = 0;
    if (!node.IsScalar() || !YAML::convert<int>::decode(node, value)) {
      const std::string text =
          node.IsScalar() ? node.Scalar() : "(not a scalar)";
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": ", section_name, ".", key, " must be an integer, got ",
          internal::QuoteInputText(text)));
    }
    return value;
  };
  ClusterSpec* c = out.mutable_cluster();
  c->set_hardware(cluster[manifest::kHardware].as<std::string>(""));
  ASSIGN_OR_RETURN(const int gpus,
                   integer(cluster, manifest::kCluster, manifest::kGpus, 0));
  c->set_num_gpus(gpus);
  ASSIGN_OR_RETURN(const int per_node, integer(cluster, manifest::kCluster,
                                               manifest::kGpusPerNode, 0));
  c->set_gpus_per_node(per_node);
  shardplan::v1::Plan* plan = out.mutable_plan();
  const std::pair<const char*, void (shardplan::v1::Plan::*)(int32_t)>
      degree_fields[] = {
          {manifest::kReplicas, &shardplan::v1::Plan::set_replicas},
          {manifest::kData, &shardplan::v1::Plan::set_dp},
          {manifest::kTensor, &shardplan::v1::Plan::set_tp},
          {manifest::kPipeline, &shardplan::v1::Plan::set_pp},
          {manifest::kExpert, &shardplan::v1::Plan::set_ep}};
  for (const auto& [key, set] : degree_fields) {
    ASSIGN_OR_RETURN(const int value,
                     integer(degrees, manifest::kParallelism, key, 1));
    (plan->*set)(value);
  }
  ASSIGN_OR_RETURN(
      const int micro_batches,
      integer(degrees, manifest::kParallelism, manifest::kMicroBatches, 0));
  plan->set_micro_batches(micro_batches);
  ASSIGN_OR_RETURN(const int batch, integer(degrees, manifest::kParallelism,
                                            manifest::kBatchSizePerReplica, 0));
  plan->set_batch_size(batch);
  // A missing key is an invalid node: IsDefined() first, the others throw.
  if (const YAML::Node stages = degrees[manifest::kStageLayers];
      stages.IsDefined() && stages.IsSequence()) {
    for (const YAML::Node& n : stages) plan->add_stage_layers(n.as<int>());
  }
  if (const YAML::Node ops = root[manifest::kOperatorSharding];
      ops.IsDefined() && ops.IsMap()) {
    for (const auto& kv : ops) {
      OperatorSharding* op = plan->add_operator_sharding();
      op->set_operator_(kv.first.as<std::string>());
      op->set_dim(kv.second.as<std::string>());
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<shardplan::v1::RunningDeployment> ParseRunningDeployment(
    absl::string_view text, absl::string_view what,
    const ClusterSpec& new_cluster) {
  const absl::string_view trimmed = absl::StripAsciiWhitespace(text);
  if (trimmed.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": empty file"));
  }
  if (trimmed.front() == '{') {
    // JSON lines of PlanUpdate: the last one is the final plan.
    const size_t newline = trimmed.rfind('\n');
    const absl::string_view last = newline == absl::string_view::npos
                                       ? trimmed
                                       : trimmed.substr(newline + 1);
    shardplan::v1::PlanUpdate update;
    RETURN_IF_ERROR(Annotate(spec_text::Parse(last, &update), what));
    if (!update.has_plan()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": the last line has no plan"));
    }
    shardplan::v1::RunningDeployment out;
    *out.mutable_plan() = update.plan();
    const shardplan::v1::Plan& p = update.plan();
    *out.mutable_cluster() = new_cluster;
    out.mutable_cluster()->clear_node_groups();
    out.mutable_cluster()->set_num_gpus(
        std::max(1, p.replicas()) * std::max(1, p.dp()) * std::max(1, p.tp()) *
        std::max(1, p.pp()));
    return out;
  }
  absl::StatusOr<shardplan::v1::RunningDeployment> out;
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    if (!root.IsDefined() || !root.IsMap() ||
        root[manifest::kKind].as<std::string>("") != manifest::kKindValue) {
      return absl::InvalidArgumentError(absl::StrCat(
          what,
          ": not what `shardplan plan --output json|yaml` writes (a "
          "ShardingPlan manifest or PlanUpdate JSON lines)"));
    }
    out = ManifestToDeployment(root, what);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", e.what()));
  }
  return out;
}

absl::StatusOr<PlanRequest> BuildReplanRequest(const ProblemFlags& problem,
                                               const SearchFlags& search,
                                               const ReplanFlags& replan,
                                               const FileReader& read_file) {
  ASSIGN_OR_RETURN(PlanRequest request,
                   BuildPlanRequest(problem, search, read_file));
  ASSIGN_OR_RETURN(const std::string text, read_file(replan.current));
  ASSIGN_OR_RETURN(
      *request.mutable_current(),
      ParseRunningDeployment(text, absl::StrCat("--current ", replan.current),
                             request.cluster()));
  for (int node : replan.removed_nodes) {
    request.mutable_current()->add_removed_nodes(node);
  }
  request.mutable_options()->set_max_transition_seconds(
      replan.max_transition_seconds);
  if (replan.transition_weight >= 0) {
    request.mutable_options()->set_transition_weight(replan.transition_weight);
  }
  return request;
}

absl::StatusOr<EvaluateRequest> BuildEvaluateRequest(
    const ProblemFlags& problem, const PlanFlags& plan_flags,
    const FileReader& read_file) {
  EvaluateRequest request;
  RETURN_IF_ERROR(FillProblem(problem, read_file, request.mutable_model(),
                              request.mutable_cluster(),
                              request.mutable_workload()));
  auto* plan = request.mutable_plan();
  plan->set_dp(plan_flags.dp);
  plan->set_tp(plan_flags.tp);
  plan->set_pp(plan_flags.pp);
  plan->set_ep(plan_flags.ep);
  plan->set_batch_size(plan_flags.batch_size);
  plan->set_micro_batches(plan_flags.micro_batches);
  for (int layers : plan_flags.stage_layers) plan->add_stage_layers(layers);
  for (const std::string& text : plan_flags.ops) {
    ASSIGN_OR_RETURN(OperatorSharding op, ParseOpAssignment(text));
    *plan->add_operator_sharding() = std::move(op);
  }
  return request;
}

std::string ModelLabel(const ModelSource& model) {
  switch (model.source_case()) {
    case ModelSource::kCatalogName:
      return model.catalog_name();
    case ModelSource::kSpec:
      return model.spec().name().empty() ? "custom model" : model.spec().name();
    case ModelSource::kHfConfigJson: {
      const nlohmann::json config = nlohmann::json::parse(
          model.hf_config_json(), nullptr, /*allow_exceptions=*/false);
      if (config.is_object()) {
        for (const char* key : {"_name_or_path", "model_type"}) {
          auto it = config.find(key);
          if (it != config.end() && it->is_string())
            return it->get<std::string>();
        }
      }
      return "hf-config model";
    }
    default:
      return "model";
  }
}

}  // namespace shardplan::client
