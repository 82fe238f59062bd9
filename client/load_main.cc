// `shardplan-load`: load generator against a running shardplan-server. Drives N
// concurrent PlanSharding streams and M EvaluatePlan requests per second for T
// seconds, then reports completed / rejected (RESOURCE_EXHAUSTED) / failed
// calls, p50 / p99 / max latency, and the server's peak RSS (VmHWM of
// --server-pid).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "client/exit_codes.h"
#include "client/load_stats.h"
#include "client/render.h"
#include "fmt/format.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "proto/guarded_main.h"
#include "shardplan/v1/shardplan.grpc.pb.h"

namespace shardplan::client {
namespace {

using Clock = std::chrono::steady_clock;

struct LoadFlags {
  std::string server = "127.0.0.1:50051";
  int streams = 4;
  double evaluate_rps = 100;
  int evaluate_threads = 4;
  double duration_seconds = 10;
  bool once = false;
  std::string model = "llama-3.1-8b";
  int gpus = 8;
  std::string method = "random";
  int max_evaluations = 200;
  double max_seconds = 5;
  int server_pid = 0;
  std::string output = "table";
};

// Outcome counters and latencies of one call kind; thread-safe.
class CallStats {
 public:
  void Record(const grpc::Status& status, double seconds) {
    std::lock_guard<std::mutex> lock(mu_);
    if (status.ok()) {
      ++completed_;
      latencies_.push_back(seconds);
    } else if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      ++rejected_;
    } else {
      ++failed_;
      if (first_error_.empty()) {
        first_error_ = absl::StrCat(GrpcCodeName(status.error_code()), ": ",
                                    status.error_message());
      }
    }
  }
  void RecordFirstUpdate(double seconds) {
    std::lock_guard<std::mutex> lock(mu_);
    first_update_.push_back(seconds);
  }
  struct Snapshot {
    int64_t completed, rejected, failed;
    LatencySummary latency, first_update;
    std::string first_error;
  };
  Snapshot Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return Snapshot{completed_,
                    rejected_,
                    failed_,
                    Summarize(latencies_),
                    Summarize(first_update_),
                    first_error_};
  }

 private:
  std::mutex mu_;
  int64_t completed_ = 0, rejected_ = 0, failed_ = 0;
  std::vector<double> latencies_, first_update_;
  std::string first_error_;
};

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void SetDeadlineIn(grpc::ClientContext* context, double seconds) {
  context->set_deadline(
      std::chrono::system_clock::now() +
      std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6)));
}

void StreamWorker(shardplan::v1::ShardingPlanner::Stub* stub,
                  const shardplan::v1::PlanRequest& request,
                  const LoadFlags& flags, Clock::time_point end,
                  CallStats* stats) {
  do {
    grpc::ClientContext context;
    // A stream that outlives its search limit by a minute counts as hung
    // (failed).
    SetDeadlineIn(&context, flags.max_seconds + 60);
    const Clock::time_point start = Clock::now();
    auto reader = stub->PlanSharding(&context, request);
    shardplan::v1::PlanUpdate update;
    bool first = true;
    bool final_seen = false;
    while (reader->Read(&update)) {
      if (first) stats->RecordFirstUpdate(Since(start));
      first = false;
      final_seen = final_seen || update.final();
    }
    grpc::Status status = reader->Finish();
    if (status.ok() && !final_seen) {
      status = grpc::Status(grpc::StatusCode::INTERNAL,
                            "stream ended OK without a final update");
    }
    stats->Record(status, Since(start));
  } while (!flags.once && Clock::now() < end);
}

// Open-loop pacing: request i is due at start + i / rps; a worker takes the
// next index, waits for its due time and sends it. Latency is measured from the
// send.
void EvaluateWorker(shardplan::v1::ShardingPlanner::Stub* stub,
                    const shardplan::v1::EvaluateRequest& request, double rps,
                    Clock::time_point start, Clock::time_point end,
                    std::atomic<int64_t>* next, CallStats* stats) {
  while (true) {
    const int64_t i = next->fetch_add(1);
    const auto due =
        start +
        std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(static_cast<double>(i) / rps));
    if (due >= end) return;
    std::this_thread::sleep_until(due);
    grpc::ClientContext context;
    SetDeadlineIn(&context, 10);
    shardplan::v1::EvaluateResponse response;
    const Clock::time_point sent = Clock::now();
    const grpc::Status status =
        stub->EvaluatePlan(&context, request, &response);
    stats->Record(status, Since(sent));
  }
}

std::string Latency(const LatencySummary& s) {
  const auto ms = [](double seconds) {
    return fmt::format("{:.2f} ms", seconds * 1e3);
  };
  return fmt::format("p50 {}  p99 {}  max {}", ms(s.p50_seconds),
                     ms(s.p99_seconds), ms(s.max_seconds));
}

nlohmann::json LatencyJson(const LatencySummary& s) {
  return {{"count", s.count},
          {"p50Seconds", s.p50_seconds},
          {"p99Seconds", s.p99_seconds},
          {"maxSeconds", s.max_seconds},
          {"meanSeconds", s.mean_seconds}};
}

int Run(const LoadFlags& flags) {
  grpc::ChannelArguments args;
  // Separate channels (own TCP connections) for the streams and the unary load,
  // so the evaluate latency is the server's, not head-of-line blocking behind
  // stream writes.
  args.SetInt("shardplan.load.channel", 1);
  auto stream_channel = grpc::CreateCustomChannel(
      flags.server, grpc::InsecureChannelCredentials(), args);
  args.SetInt("shardplan.load.channel", 2);
  auto eval_channel = grpc::CreateCustomChannel(
      flags.server, grpc::InsecureChannelCredentials(), args);
  auto stream_stub = shardplan::v1::ShardingPlanner::NewStub(stream_channel);
  auto eval_stub = shardplan::v1::ShardingPlanner::NewStub(eval_channel);
  if (!eval_channel->WaitForConnected(std::chrono::system_clock::now() +
                                      std::chrono::seconds(5))) {
    std::cerr << "shardplan-load: "
              << DescribeGrpcError(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                                "connect timeout"),
                                   flags.server, "connect")
              << "\n";
    return kExitUnreachable;
  }

  shardplan::v1::PlanRequest plan_request;
  plan_request.mutable_model()->set_catalog_name(flags.model);
  plan_request.mutable_cluster()->set_hardware("h100-sxm-80gb");
  plan_request.mutable_cluster()->set_num_gpus(flags.gpus);
  plan_request.mutable_workload()->set_input_tokens(1024);
  plan_request.mutable_workload()->set_output_tokens(256);
  plan_request.mutable_options()->set_method(flags.method);
  plan_request.mutable_options()->set_max_evaluations(flags.max_evaluations);
  plan_request.mutable_options()->set_max_seconds(flags.max_seconds);
  plan_request.mutable_options()->set_warm_start(false);

  shardplan::v1::EvaluateRequest eval_request;
  *eval_request.mutable_model() = plan_request.model();
  *eval_request.mutable_cluster() = plan_request.cluster();
  *eval_request.mutable_workload() = plan_request.workload();
  eval_request.mutable_plan()->set_tp(flags.gpus);
  eval_request.mutable_plan()->set_dp(1);
  eval_request.mutable_plan()->set_pp(1);

  CallStats stream_stats;
  CallStats eval_stats;
  const Clock::time_point start = Clock::now();
  const Clock::time_point end =
      start + std::chrono::duration_cast<Clock::duration>(
                  std::chrono::duration<double>(flags.duration_seconds));
  std::atomic<int64_t> next{0};
  std::vector<std::thread> threads;
  std::vector<std::thread> eval_threads;
  for (int i = 0; i < flags.streams; ++i) {
    threads.emplace_back(StreamWorker, stream_stub.get(),
                         std::cref(plan_request), std::cref(flags), end,
                         &stream_stats);
  }
  if (flags.evaluate_rps > 0) {
    for (int i = 0; i < flags.evaluate_threads; ++i) {
      eval_threads.emplace_back(EvaluateWorker, eval_stub.get(),
                                std::cref(eval_request), flags.evaluate_rps,
                                start, end, &next, &eval_stats);
    }
  }
  for (std::thread& t : eval_threads) t.join();
  // The evaluate load's own window: its rate is not diluted by the streams'
  // tail.
  const double eval_elapsed = std::max(1e-9, Since(start));
  for (std::thread& t : threads) t.join();
  const double elapsed = Since(start);

  double peak_rss = 0;
  std::string rss_note;
  if (flags.server_pid > 0) {
    absl::StatusOr<double> hwm = ReadProcStatusBytes(flags.server_pid, "VmHWM");
    if (hwm.ok()) {
      peak_rss = *hwm;
    } else {
      rss_note = std::string(hwm.status().message());
    }
  }

  const CallStats::Snapshot s = stream_stats.Take();
  const CallStats::Snapshot e = eval_stats.Take();
  if (flags.output == "json") {
    nlohmann::json report = {
        {"server", flags.server},
        {"elapsedSeconds", elapsed},
        {"planSharding",
         {{"streams", flags.streams},
          {"completed", s.completed},
          {"rejected", s.rejected},
          {"failed", s.failed},
          {"latency", LatencyJson(s.latency)},
          {"firstUpdate", LatencyJson(s.first_update)},
          {"firstError", s.first_error}}},
        {"evaluatePlan",
         {{"targetRps", flags.evaluate_rps},
          {"achievedRps",
           static_cast<double>(e.completed + e.rejected + e.failed) /
               eval_elapsed},
          {"completed", e.completed},
          {"rejected", e.rejected},
          {"failed", e.failed},
          {"latency", LatencyJson(e.latency)},
          {"firstError", e.first_error}}},
        {"serverPeakRssBytes", peak_rss},
    };
    std::cout << report.dump() << "\n";
  } else {
    std::cout << fmt::format("shardplan-load: {:.1f} s against {}\n", elapsed,
                             flags.server);
    std::cout << fmt::format(
        "PlanSharding  {} streams  completed {}  rejected {}  failed {}\n"
        "              latency {}\n              first update {}\n",
        flags.streams, s.completed, s.rejected, s.failed, Latency(s.latency),
        Latency(s.first_update));
    std::cout << fmt::format(
        "EvaluatePlan  target {:.0f}/s  achieved {:.0f}/s  completed {}  "
        "rejected {}  failed "
        "{}\n              latency {}\n",
        flags.evaluate_rps,
        static_cast<double>(e.completed + e.rejected + e.failed) / eval_elapsed,
        e.completed, e.rejected, e.failed, Latency(e.latency));
    if (flags.server_pid > 0) {
      std::cout << "Server peak RSS "
                << (rss_note.empty() ? FormatBytes(peak_rss) + " (VmHWM)"
                                     : rss_note)
                << "\n";
    }
    if (!s.first_error.empty())
      std::cout << "first stream error: " << s.first_error << "\n";
    if (!e.first_error.empty())
      std::cout << "first evaluate error: " << e.first_error << "\n";
  }
  return (s.failed + e.failed) == 0 ? kExitOk : kExitOther;
}

}  // namespace
}  // namespace shardplan::client

int main(int argc, char** argv) {
  using shardplan::client::LoadFlags;
  LoadFlags flags;
  CLI::App app{
      "shardplan-load: load generator against a running shardplan-server"};
  app.add_option("--server", flags.server, "shardplan-server address")
      ->capture_default_str();
  app.add_option("--streams", flags.streams, "Concurrent PlanSharding streams")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  app.add_option("--evaluate-rps", flags.evaluate_rps,
                 "EvaluatePlan requests per second")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  app.add_option("--evaluate-threads", flags.evaluate_threads,
                 "Threads sending EvaluatePlan")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--duration-seconds,-t", flags.duration_seconds,
                 "How long to run")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
  app.add_flag("--once", flags.once,
               "Each stream worker runs exactly one search");
  app.add_option("--model", flags.model, "Catalog model")
      ->capture_default_str();
  app.add_option("--gpus", flags.gpus, "GPUs")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--method", flags.method, "Search method of the streams")
      ->capture_default_str();
  app.add_option("--max-evaluations", flags.max_evaluations,
                 "Evaluations per search")
      ->capture_default_str();
  app.add_option("--max-seconds", flags.max_seconds, "Seconds per search")
      ->capture_default_str();
  app.add_option("--server-pid", flags.server_pid,
                 "Server pid, for its peak RSS (VmHWM)");
  app.add_option("--output,-o", flags.output, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : shardplan::client::kExitUsage;
  }
  return shardplan::GuardedMain("shardplan-load", shardplan::client::kExitOther,
                                [&] { return shardplan::client::Run(flags); });
}
