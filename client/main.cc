// `shardplan`: command-line client of shardplan-server. Subcommands plan,
// replan, evaluate, catalog, health; see `shardplan --help` and
// docs/cli-and-emit.md.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/cli.h"
#include "client/emit.h"
#include "client/exit_codes.h"
#include "client/frontier.h"
#include "client/measurements.h"
#include "client/render.h"
#include "client/request_builder.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "proto/guarded_main.h"
#include "shardplan/v1/shardplan.grpc.pb.h"

namespace shardplan::client {
namespace {

// Ctrl-C / SIGTERM cancel the RPC in flight (the server stops the search)
// instead of killing the process mid-stream. Signals are blocked before gRPC
// starts its threads and taken by one sigwait thread, so nothing runs in a
// signal handler.
class SignalCanceller {
 public:
  SignalCanceller() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
    std::thread([this] {
      int sig = 0;
      while (sigwait(&set_, &sig) == 0) {
        std::lock_guard<std::mutex> lock(mu_);
        if (context_ == nullptr) std::_Exit(kExitCancelled);
        context_->TryCancel();
      }
    }).detach();
  }
  void Watch(grpc::ClientContext* context) {
    std::lock_guard<std::mutex> lock(mu_);
    context_ = context;
  }
  void Unwatch() { Watch(nullptr); }

 private:
  sigset_t set_;
  std::mutex mu_;
  grpc::ClientContext* context_ = nullptr;
};

// The live progress line on a terminal (stderr): redrawn on every update and
// every 250 ms in between, so the elapsed time keeps moving during long
// searches.
class ProgressTicker {
 public:
  ProgressTicker(bool enabled, std::string method)
      : enabled_(enabled), method_(std::move(method)), start_(Clock::now()) {
    if (enabled_) thread_ = std::thread([this] { Loop(); });
  }
  ~ProgressTicker() { Stop(); }
  void Update(const shardplan::v1::PlanUpdate& update) {
    if (!enabled_) return;
    std::lock_guard<std::mutex> lock(mu_);
    last_ = update;
    have_ = true;
    DrawLocked();
  }
  // Stops the ticker and clears the line. Idempotent.
  void Stop() {
    if (!enabled_) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return;
      stopped_ = true;
    }
    cv_.notify_all();
    thread_.join();
    std::cerr << "\r\033[K" << std::flush;
  }

 private:
  using Clock = std::chrono::steady_clock;
  void DrawLocked() {
    const double elapsed =
        std::chrono::duration<double>(Clock::now() - start_).count();
    if (have_) {
      std::cerr << "\r\033[K" << ProgressLine(last_, method_, elapsed)
                << std::flush;
    } else {
      std::cerr << "\r\033[K" << method_ << "  waiting for the first plan  "
                << absl::StrFormat("%.1f s", elapsed) << std::flush;
    }
  }
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopped_) {
      cv_.wait_for(lock, std::chrono::milliseconds(250));
      if (!stopped_) DrawLocked();
    }
  }

  const bool enabled_;
  const std::string method_;
  const Clock::time_point start_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
  bool have_ = false;
  shardplan::v1::PlanUpdate last_;
  std::thread thread_;
};

void SetDeadline(grpc::ClientContext* context, double seconds) {
  if (seconds > 0) {
    context->set_deadline(
        std::chrono::system_clock::now() +
        std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6)));
  }
}

// Channel credentials and bearer token of this run, loaded once by
// LoadConnection from the TLS/token flags.
struct Connection {
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  std::string tls_server_name;
  std::string token;  // never printed
};
Connection& TheConnection() {
  static Connection* connection = new Connection();
  return *connection;
}

absl::StatusOr<std::string> ReadPem(const std::string& path, const char* flag) {
  // Certificates, keys and token lists are a few KiB.
  constexpr size_t kMaxPemBytes = 1 << 20;
  absl::StatusOr<std::string> text = ReadBoundedFile(path, kMaxPemBytes);
  if (!text.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": ", text.status().message()));
  }
  return text;
}

// INVALID_ARGUMENT (exit 2) naming the flag when a file cannot be read.
absl::Status LoadConnection(const GlobalFlags& g) {
  Connection& c = TheConnection();
  c.credentials = grpc::InsecureChannelCredentials();
  if (g.UseTls()) {
    if (g.tls_cert.empty() != g.tls_key.empty()) {
      return absl::InvalidArgumentError(
          "--tls-cert and --tls-key must be given together");
    }
    grpc::SslCredentialsOptions ssl;
    if (!g.tls_ca.empty()) {
      absl::StatusOr<std::string> ca = ReadPem(g.tls_ca, "--tls-ca");
      if (!ca.ok()) return ca.status();
      ssl.pem_root_certs = *ca;
    }
    if (!g.tls_cert.empty()) {
      absl::StatusOr<std::string> cert = ReadPem(g.tls_cert, "--tls-cert");
      if (!cert.ok()) return cert.status();
      absl::StatusOr<std::string> key = ReadPem(g.tls_key, "--tls-key");
      if (!key.ok()) return key.status();
      ssl.pem_cert_chain = *cert;
      ssl.pem_private_key = *key;
    }
    c.credentials = grpc::SslCredentials(ssl);
    c.tls_server_name = g.tls_server_name;
  }
  c.token.clear();
  if (!g.token_file.empty()) {
    absl::StatusOr<std::string> text = ReadPem(g.token_file, "--token-file");
    if (!text.ok()) return text.status();
    for (absl::string_view line : absl::StrSplit(*text, '\n')) {
      line = absl::StripAsciiWhitespace(line);
      if (line.empty() || line[0] == '#') continue;
      c.token = std::string(line);
      break;
    }
    if (c.token.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--token-file: ", g.token_file, " holds no token"));
    }
  } else if (const char* env = std::getenv("SHARDPLAN_TOKEN");
             env != nullptr && *env != '\0') {
    c.token = std::string(absl::StripAsciiWhitespace(env));
  }
  return absl::OkStatus();
}

// Adds the bearer token, if any, to a call.
void Authorize(grpc::ClientContext* context) {
  const std::string& token = TheConnection().token;
  if (!token.empty()) context->AddMetadata("authorization", "Bearer " + token);
}

std::shared_ptr<grpc::Channel> Connect(const std::string& server) {
  grpc::ChannelArguments args;
  // Plans and catalogs are small, but a spec with a large HF config may not be.
  args.SetMaxReceiveMessageSize(64 << 20);
  const Connection& c = TheConnection();
  if (!c.tls_server_name.empty()) {
    args.SetSslTargetNameOverride(c.tls_server_name);
  }
  return grpc::CreateCustomChannel(server,
                                   c.credentials != nullptr
                                       ? c.credentials
                                       : grpc::InsecureChannelCredentials(),
                                   args);
}

int ReportRpcError(const grpc::Status& status, const GlobalFlags& g,
                   const char* rpc) {
  std::cerr << "shardplan: " << DescribeGrpcError(status, g.server, rpc)
            << "\n";
  return ExitCodeForGrpc(status.error_code());
}

int ReportUsageError(const absl::Status& status) {
  std::cerr << "shardplan: " << status.message() << "\n";
  return ExitCodeForStatus(status);
}

RenderContext ContextFor(const shardplan::v1::ModelSource& model,
                         const shardplan::v1::ClusterSpec& cluster) {
  RenderContext c;
  c.model = ModelLabel(model);
  c.hardware =
      cluster.has_hardware_spec() && !cluster.hardware_spec().name().empty()
          ? cluster.hardware_spec().name()
          : cluster.hardware();
  c.gpus = cluster.num_gpus();
  c.gpus_per_node = cluster.gpus_per_node();
  return c;
}

// What --emit needs to know about the model comes from the server: the
// resolved ModelSpec (catalog entry, inline spec or imported HF config) names
// the checkpoint, its dtype and whether it is MoE. `resolved` may be null when
// the server could not be asked; then only an inline spec is known.
// `hardware` (may be null) is the cluster's GPU as the server's catalog
// describes it: its default node size (GB200/GB300 compute trays hold 4), its
// NVLink domain and whether it has FP4 tensor cores.
EmitContext EmitContextFor(const GlobalFlags& g,
                           const shardplan::v1::ModelSource& model,
                           const shardplan::v1::ClusterSpec& cluster,
                           const shardplan::v1::ModelSpec* resolved,
                           const shardplan::v1::Workload& workload,
                           const RenderContext& rc,
                           const shardplan::v1::Prediction& prediction,
                           const shardplan::v1::HardwareSpec* hardware) {
  EmitContext e;
  e.model_name = rc.model;
  const shardplan::v1::ModelSpec* spec = resolved != nullptr ? resolved
                                         : model.has_spec()  ? &model.spec()
                                                             : nullptr;
  if (spec != nullptr) {
    e.hugging_face_id = spec->hugging_face_id();
    e.native_dtype = spec->native_dtype();
    e.nvfp4_hugging_face_id = spec->nvfp4_hugging_face_id();
    e.is_moe = spec->num_experts() > 0;
    e.sparse_mla = spec->index_topk() > 0 && spec->kv_lora_rank() > 0;
    e.mla = spec->kv_lora_rank() > 0;
  }
  for (const auto& op : prediction.operators()) {
    if ((op.operator_() == "router" || op.operator_() == "expert_up") &&
        op.total_seconds() > 0) {
      e.is_moe = true;
    }
  }
  e.weight_dtype = workload.weight_dtype();
  e.kv_cache_dtype = workload.kv_cache_dtype();
  const int hardware_node =
      hardware != nullptr && hardware->default_gpus_per_node() > 0
          ? hardware->default_gpus_per_node()
          : 8;
  e.gpus_per_node = rc.gpus_per_node > 0 ? rc.gpus_per_node : hardware_node;
  e.nvlink_domain_gpus = cluster.nvlink_domain_gpus() > 0
                             ? cluster.nvlink_domain_gpus()
                         : hardware != nullptr ? hardware->nvlink_domain_gpus()
                                               : 0;
  e.fp4_tensor_cores =
      hardware != nullptr && hardware->peak_fp4_flops_per_s() > 0;
  e.num_gpus = rc.gpus;
  shardplan::v1::ClusterSpec sized = cluster;
  sized.set_gpus_per_node(e.gpus_per_node);
  e.node_gpus = NodeGpusOf(sized);
  e.engine_version = g.engine_version;
  if (workload.input_tokens() > 0) e.input_tokens = workload.input_tokens();
  if (workload.output_tokens() > 0) e.output_tokens = workload.output_tokens();
  // Servers before batch_per_rank reported the per-rank batch as batch_size.
  e.batch_fallback = prediction.batch_per_rank() > 0
                         ? prediction.batch_per_rank()
                         : prediction.batch_size();
  e.concurrency = workload.concurrency();
  e.runnable_engines.assign(prediction.runnable_engines().begin(),
                            prediction.runnable_engines().end());
  // The workload's engine cannot run the plan: the server names the rule
  // (simulator/engine_capability.h's message).
  if (absl::StrContains(prediction.infeasible_reason(),
                        "cannot run this plan: rule")) {
    e.capability_reason = prediction.infeasible_reason();
  }
  return e;
}

// What --emit writes and for which engine: "k8s-vllm" → (kKubernetes,
// "vllm"); "dynamo" → (kDynamo, --engine or vllm).
enum class EmitFormat { kScript, kKubernetes, kDynamo };
std::pair<EmitFormat, std::string> SplitEmit(const GlobalFlags& g) {
  constexpr absl::string_view kK8s = "k8s-";
  constexpr absl::string_view kDynamo = "dynamo";
  if (absl::StartsWith(g.emit, kK8s)) {
    return {EmitFormat::kKubernetes, g.emit.substr(kK8s.size())};
  }
  if (absl::StartsWith(g.emit, kDynamo)) {
    std::string engine =
        std::string(absl::StripPrefix(absl::StripPrefix(g.emit, kDynamo), "-"));
    if (engine.empty()) engine = g.engine.empty() ? "vllm" : g.engine;
    return {EmitFormat::kDynamo, engine};
  }
  return {EmitFormat::kScript, g.emit};
}

// INVALID_ARGUMENT (exit 2, before anything is sent) for an --emit engine or
// --engine-version without a flag table.
absl::Status CheckEmitFlags(const GlobalFlags& g) {
  if (g.emit.empty()) return absl::OkStatus();
  absl::StatusOr<Engine> engine = ParseEngine(SplitEmit(g).second);
  if (!engine.ok()) return engine.status();
  return FindEngineVersion(*engine, g.engine_version).status();
}

int PrintEmitted(const GlobalFlags& g, const shardplan::v1::Plan& plan,
                 const EmitContext& context) {
  const auto [format, engine_name] = SplitEmit(g);
  absl::StatusOr<Engine> engine = ParseEngine(engine_name);
  if (!engine.ok()) return ReportUsageError(engine.status());
  const EmittedCommand emitted = format == EmitFormat::kDynamo
                                     ? EmitDynamo(*engine, plan, context)
                                 : format == EmitFormat::kKubernetes
                                     ? EmitKubernetes(*engine, plan, context)
                                     : EmitCommand(*engine, plan, context);
  for (const std::string& w : emitted.warnings)
    std::cerr << "warning: " << w << "\n";
  if (emitted.refused) return kExitUsage;
  if (emitted.command.empty()) return kExitOther;
  std::cout << emitted.command << std::flush;
  return kExitOk;
}

// One unary call of the planner service: connects to --server, sends the
// token, sets the deadline (seconds; 0 = none) and, with a `canceller`,
// cancels the call on SIGINT/SIGTERM.
template <typename Request, typename Response>
grpc::Status CallPlanner(
    const GlobalFlags& g, double deadline_seconds, SignalCanceller* canceller,
    grpc::Status (shardplan::v1::ShardingPlanner::Stub::*method)(
        grpc::ClientContext*, const Request&, Response*),
    const Request& request, Response* response) {
  auto stub = shardplan::v1::ShardingPlanner::NewStub(Connect(g.server));
  grpc::ClientContext context;
  Authorize(&context);
  SetDeadline(&context, deadline_seconds);
  if (canceller != nullptr) canceller->Watch(&context);
  const grpc::Status status =
      (stub.get()->*method)(&context, request, response);
  if (canceller != nullptr) canceller->Unwatch();
  return status;
}

// One EvaluatePlan call (30 s deadline) of `plan` as the server would place
// it (the plan's own placement is dropped).
grpc::Status EvaluateOnServer(const GlobalFlags& g,
                              const shardplan::v1::ModelSource& model,
                              const shardplan::v1::ClusterSpec& cluster,
                              const shardplan::v1::Workload& workload,
                              const shardplan::v1::Plan& plan,
                              shardplan::v1::EvaluateResponse* response) {
  shardplan::v1::EvaluateRequest evaluate;
  *evaluate.mutable_model() = model;
  *evaluate.mutable_cluster() = cluster;
  *evaluate.mutable_workload() = workload;
  *evaluate.mutable_plan() = plan;
  evaluate.mutable_plan()->clear_placement();
  return CallPlanner(g, 30, nullptr,
                     &shardplan::v1::ShardingPlanner::Stub::EvaluatePlan,
                     evaluate, response);
}

// The server's view of the model of a finished search, for --emit: one
// EvaluatePlan of the final plan (cheap: one cost-model call). Empty when
// the call fails; the caller warns.
std::optional<shardplan::v1::ModelSpec> ResolvedModel(
    const GlobalFlags& g, const shardplan::v1::PlanRequest& request,
    const shardplan::v1::Plan& plan) {
  shardplan::v1::EvaluateResponse response;
  const grpc::Status status =
      EvaluateOnServer(g, request.model(), request.cluster(),
                       request.workload(), plan, &response);
  if (!status.ok()) {
    std::cerr << "warning: could not ask the server about the model ("
              << status.error_message()
              << "); the command may lack its Hugging Face id or dtype.\n";
    return std::nullopt;
  }
  return response.model();
}

// The cluster's hardware for --emit: its inline spec, else the server's
// catalog entry of that name (ListCatalog). Empty when the call fails or the
// name is unknown; the caller then assumes nodes of 8 and one NVLink domain
// per node.
std::optional<shardplan::v1::HardwareSpec> ResolvedHardware(
    const GlobalFlags& g, const shardplan::v1::ClusterSpec& cluster) {
  if (cluster.has_hardware_spec()) return cluster.hardware_spec();
  shardplan::v1::ListCatalogResponse response;
  const grpc::Status status = CallPlanner(
      g, 30, nullptr, &shardplan::v1::ShardingPlanner::Stub::ListCatalog,
      shardplan::v1::ListCatalogRequest(), &response);
  if (status.ok()) {
    for (const auto& h : response.hardware()) {
      if (h.name() == cluster.hardware()) return h;
    }
  }
  std::cerr << "warning: could not find hardware \"" << cluster.hardware()
            << "\" in the server's catalog; the commands assume nodes of 8 "
               "GPUs, each its own NVLink domain.\n";
  return std::nullopt;
}

// --frontier-csv and --frontier-png, after the search.
int WriteFrontierFiles(const GlobalFlags& g,
                       const shardplan::v1::PlanUpdate& last,
                       const RenderContext& rc) {
  if (!g.frontier_csv.empty()) {
    std::ofstream out(g.frontier_csv);
    out << FrontierCsv(last);
    out.close();
    if (!out) {
      std::cerr << "shardplan: cannot write --frontier-csv \"" << g.frontier_csv
                << "\"\n";
      return kExitOther;
    }
  }
  if (!g.frontier_png.empty()) {
    const std::string title =
        absl::StrCat(rc.model, " on ", rc.gpus, " x ", rc.hardware);
    if (absl::Status drawn = WriteFrontierPng(last, g.frontier_png, title);
        !drawn.ok()) {
      std::cerr << "shardplan: --frontier-png \"" << g.frontier_png
                << "\": " << drawn.message() << "\n";
      return kExitOther;
    }
  }
  return kExitOk;
}

// Runs one PlanSharding call: JSON lines on stdout with --output json, the
// progress line on a terminal. kExitOk with the last update in `last`, or the
// exit code after reporting the error.
int StreamSearch(const GlobalFlags& g,
                 const shardplan::v1::PlanRequest& request,
                 const std::string& method, SignalCanceller& canceller,
                 shardplan::v1::PlanUpdate* last) {
  const bool json = g.output == "json" && g.emit.empty();
  const bool progress = g.output != "json" && isatty(STDERR_FILENO);
  auto stub = shardplan::v1::ShardingPlanner::NewStub(Connect(g.server));
  grpc::ClientContext context;
  Authorize(&context);
  SetDeadline(&context, g.deadline_seconds);
  canceller.Watch(&context);
  std::unique_ptr<grpc::ClientReader<shardplan::v1::PlanUpdate>> reader =
      stub->PlanSharding(&context, request);
  shardplan::v1::PlanUpdate update;
  bool any = false;
  ProgressTicker ticker(progress, method);
  while (reader->Read(&update)) {
    any = true;
    if (json) std::cout << ToJsonLine(update) << "\n" << std::flush;
    ticker.Update(update);
    *last = update;
  }
  const grpc::Status status = reader->Finish();
  canceller.Unwatch();
  ticker.Stop();
  if (!status.ok()) return ReportRpcError(status, g, "PlanSharding");
  if (!any) {
    std::cerr
        << "shardplan: the server ended the search without sending a plan\n";
    return kExitOther;
  }
  return kExitOk;
}

// A usage error in the built request, then in the --emit flags: reported,
// with its exit code; kExitOk when there is none.
int CheckUsage(const absl::Status& built, const GlobalFlags& g) {
  if (!built.ok()) return ReportUsageError(built);
  const absl::Status emit = CheckEmitFlags(g);
  return emit.ok() ? kExitOk : ReportUsageError(emit);
}

int RunPlan(const GlobalFlags& g, const ProblemFlags& problem,
            const SearchFlags& search, SignalCanceller& canceller) {
  absl::StatusOr<shardplan::v1::PlanRequest> request =
      BuildPlanRequest(problem, search, ReadFileFromDisk);
  if (int code = CheckUsage(request.status(), g); code != kExitOk) return code;
  shardplan::v1::PlanUpdate last;
  if (int code = StreamSearch(g, *request, search.method, canceller, &last);
      code != kExitOk) {
    return code;
  }
  const RenderContext rc = ContextFor(request->model(), request->cluster());
  if (!g.emit.empty()) {
    if (isatty(STDERR_FILENO)) std::cerr << RenderPlanUpdate(last, rc) << "\n";
    if (!last.prediction().feasible()) {
      std::cerr << "shardplan: no feasible plan found ("
                << last.prediction().infeasible_reason()
                << "); nothing to emit. Add GPUs, lower the batch or relax the "
                   "SLOs.\n";
      return kExitOther;
    }
    const std::optional<shardplan::v1::ModelSpec> model =
        ResolvedModel(g, *request, last.plan());
    const std::optional<shardplan::v1::HardwareSpec> hardware =
        ResolvedHardware(g, request->cluster());
    return PrintEmitted(
        g, last.plan(),
        EmitContextFor(g, request->model(), request->cluster(),
                       model ? &*model : nullptr, request->workload(), rc,
                       last.prediction(), hardware ? &*hardware : nullptr));
  }
  if (g.output == "table") {
    std::cout << RenderPlanUpdate(last, rc);
    const std::string top = RenderTopPlans(last);
    if (!top.empty()) std::cout << "\n" << top;
    const std::string chart = RenderFrontierChart(last);
    if (!chart.empty()) std::cout << "\n" << chart;
    std::cout << std::flush;
  }
  if (g.output == "yaml")
    std::cout << RenderYamlManifest(last, rc) << std::flush;
  return WriteFrontierFiles(g, last, rc);
}

// `replan`: the search with the running deployment, then the running plan
// evaluated on its own cluster for the side-by-side table.
int RunReplan(const GlobalFlags& g, const ProblemFlags& problem,
              const SearchFlags& search, const ReplanFlags& replan,
              SignalCanceller& canceller) {
  absl::StatusOr<shardplan::v1::PlanRequest> request =
      BuildReplanRequest(problem, search, replan, ReadFileFromDisk);
  if (!request.ok()) return ReportUsageError(request.status());
  shardplan::v1::PlanUpdate last;
  if (int code = StreamSearch(g, *request, search.method, canceller, &last);
      code != kExitOk) {
    return code;
  }
  const RenderContext rc = ContextFor(request->model(), request->cluster());
  if (g.output == "json") return kExitOk;
  if (g.output == "yaml") {
    std::cout << RenderYamlManifest(last, rc) << std::flush;
    return kExitOk;
  }
  shardplan::v1::EvaluateResponse current;
  const grpc::Status status = EvaluateOnServer(
      g, request->model(), request->current().cluster(), request->workload(),
      request->current().plan(), &current);
  if (!status.ok()) return ReportRpcError(status, g, "EvaluatePlan");
  std::cout << RenderReplan(
                   current,
                   ContextFor(request->model(), request->current().cluster()),
                   last, rc)
            << std::flush;
  return kExitOk;
}

int RunEvaluate(const GlobalFlags& g, const ProblemFlags& problem,
                const PlanFlags& plan_flags, SignalCanceller& canceller) {
  absl::StatusOr<shardplan::v1::EvaluateRequest> request =
      BuildEvaluateRequest(problem, plan_flags, ReadFileFromDisk);
  if (int code = CheckUsage(request.status(), g); code != kExitOk) return code;
  shardplan::v1::EvaluateResponse response;
  const grpc::Status status = CallPlanner(
      g, g.deadline_seconds > 0 ? g.deadline_seconds : 30, &canceller,
      &shardplan::v1::ShardingPlanner::Stub::EvaluatePlan, *request, &response);
  if (!status.ok()) return ReportRpcError(status, g, "EvaluatePlan");
  const RenderContext rc = ContextFor(request->model(), request->cluster());
  if (!g.emit.empty()) {
    const std::optional<shardplan::v1::HardwareSpec> hardware =
        ResolvedHardware(g, request->cluster());
    return PrintEmitted(
        g, response.plan(),
        EmitContextFor(g, request->model(), request->cluster(),
                       &response.model(), request->workload(), rc,
                       response.prediction(), hardware ? &*hardware : nullptr));
  }
  if (g.output == "json") {
    std::cout << ToJsonLine(response) << "\n";
  } else {
    std::cout << RenderEvaluateResponse(response, rc);
  }
  std::cout << std::flush;
  return kExitOk;
}

int RunCatalog(const GlobalFlags& g) {
  shardplan::v1::ListCatalogResponse response;
  const grpc::Status status =
      CallPlanner(g, g.deadline_seconds > 0 ? g.deadline_seconds : 10, nullptr,
                  &shardplan::v1::ShardingPlanner::Stub::ListCatalog,
                  shardplan::v1::ListCatalogRequest(), &response);
  if (!status.ok()) return ReportRpcError(status, g, "ListCatalog");
  std::cout << (g.output == "json" ? ToJsonLine(response) + "\n"
                                   : RenderCatalog(response))
            << std::flush;
  return kExitOk;
}

int RunHealth(const GlobalFlags& g, const std::string& service) {
  auto stub = grpc::health::v1::Health::NewStub(Connect(g.server));
  grpc::ClientContext context;
  Authorize(&context);
  SetDeadline(&context, g.deadline_seconds > 0 ? g.deadline_seconds : 5);
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) return ReportRpcError(status, g, "Health/Check");
  std::cout << grpc::health::v1::HealthCheckResponse::ServingStatus_Name(
                   response.status())
            << "\n"
            << std::flush;
  return response.status() == grpc::health::v1::HealthCheckResponse::SERVING
             ? kExitOk
             : kExitUnreachable;
}

int RunCalibrate(const GlobalFlags& g, const CalibrateFlags& flags,
                 SignalCanceller& canceller) {
  const RunDefaults& defaults = flags.defaults;
  shardplan::v1::CalibrateRequest request;
  request.set_name(flags.name);
  int skipped_disaggregated = 0, skipped_queueing = 0;
  for (const std::string& path : flags.results) {
    absl::StatusOr<std::string> text = ReadFileFromDisk(path);
    if (!text.ok()) return ReportUsageError(text.status());
    absl::StatusOr<ParsedResults> parsed = ParseResults(path, *text, defaults);
    if (!parsed.ok()) return ReportUsageError(parsed.status());
    for (auto& run : parsed->runs) *request.add_runs() = std::move(run);
    skipped_disaggregated += parsed->skipped_disaggregated;
    skipped_queueing += parsed->skipped_queueing;
  }
  shardplan::v1::CalibrateResponse response;
  const grpc::Status status = CallPlanner(
      g, g.deadline_seconds > 0 ? g.deadline_seconds : 300, &canceller,
      &shardplan::v1::ShardingPlanner::Stub::Calibrate, request, &response);
  if (!status.ok()) return ReportRpcError(status, g, "Calibrate");
  if (g.output == "json") {
    std::cout << ToJsonLine(response) << "\n" << std::flush;
    return kExitOk;
  }
  std::cout << "Profile " << response.name() << " (engine " << response.engine()
            << ", from " << response.base_profile() << "): fitted on "
            << response.fit_runs() << " runs, measured on "
            << response.held_out_runs() << " held-out runs\n"
            << absl::StrFormat(
                   "Held-out TPOT MAPE %.1f%% -> %.1f%%, TTFT MAPE %.1f%% -> "
                   "%.1f%%\n",
                   response.held_out_tpot_mape_before(),
                   response.held_out_tpot_mape_after(),
                   response.held_out_ttft_mape_before(),
                   response.held_out_ttft_mape_after());
  if (skipped_disaggregated + skipped_queueing > 0) {
    std::cout << "Skipped " << skipped_disaggregated << " disaggregated and "
              << skipped_queueing << " queue-bound (> 256 concurrent) rows\n";
  }
  std::cout << "Use it with --calibration-profile " << response.name()
            << " (workload.calibrationProfile)\n\n"
            << response.report() << std::flush;
  return kExitOk;
}

int Main(int argc, char** argv) {
  SignalCanceller canceller;
  if (argc <= 1) {
    // No subcommand: show what there is.
    absl::StatusOr<CommandLine> help = ParseCommandLine(
        2, std::array<const char*, 2>{argv[0], "--help"}.data());
    if (help.ok()) std::cerr << help->help;
    return kExitUsage;
  }
  absl::StatusOr<CommandLine> cl = ParseCommandLine(argc, argv);
  if (!cl.ok()) {
    std::cerr << "shardplan: " << cl.status().message()
              << "\nRun with --help for more information.\n";
    return kExitUsage;
  }
  if (!cl->help.empty()) {
    std::cout << cl->help << std::flush;
    return kExitOk;
  }
  const GlobalFlags& g = cl->global;
  if (absl::Status loaded = LoadConnection(g); !loaded.ok()) {
    std::cerr << "shardplan: " << loaded.message() << "\n";
    return kExitUsage;
  }
  switch (cl->command) {
    case Command::kPlan:
      return RunPlan(g, cl->problem, cl->search, canceller);
    case Command::kEvaluate:
      return RunEvaluate(g, cl->problem, cl->plan, canceller);
    case Command::kReplan:
      return RunReplan(g, cl->problem, cl->search, cl->replan, canceller);
    case Command::kCatalog:
      return RunCatalog(g);
    case Command::kHealth:
      return RunHealth(g, cl->health_service);
    case Command::kCalibrate:
      return RunCalibrate(g, cl->calibrate, canceller);
    case Command::kNone:
      break;
  }
  return kExitUsage;
}

}  // namespace
}  // namespace shardplan::client

int main(int argc, char** argv) {
  return shardplan::GuardedMain(
      "shardplan", shardplan::client::kExitOther,
      [&] { return shardplan::client::Main(argc, argv); });
}
