#include "client/cli.h"

#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "client/internal/quote.h"

namespace shardplan::client {

const char kExitCodesHelp[] =
    "Exit codes: 0 ok, 1 other error, 2 bad usage or input file, 3 server "
    "unreachable or not serving, 4 request rejected (INVALID_ARGUMENT), 5 "
    "server busy (RESOURCE_EXHAUSTED), 6 deadline exceeded, 130 interrupted.";

namespace {

// Validators whose messages quote the offending value ("must be a positive
// integer, got "abc"); CLI11's PositiveNumber prints its numeric range instead.
CLI::Validator IntAtLeast(int64_t min) {
  return CLI::Validator(
      [min](std::string& value) -> std::string {
        int64_t n = 0;
        if (!absl::SimpleAtoi(value, &n) || n < min) {
          return absl::StrCat(
              "must be ", min == 0 ? "an integer >= 0" : "a positive integer",
              ", got ", internal::QuoteInputText(value));
        }
        return "";
      },
      min == 0 ? "INT>=0" : "INT>0");
}

CLI::Validator NumberAtLeastZero() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        double d = 0;
        if (!absl::SimpleAtod(value, &d) || !(d >= 0) || d > 1e12) {
          return absl::StrCat("must be a number >= 0, got ",
                              internal::QuoteInputText(value));
        }
        return "";
      },
      "NUMBER>=0");
}

void AddProblemOptions(CLI::App* cmd, ProblemFlags* f,
                       CLI::Option** hardware_opts) {
  auto* model = cmd->add_option("--model", f->model,
                                "Catalog model name (see `shardplan catalog`)");
  auto* model_file = cmd->add_option(
      "--model-file", f->model_file,
      "ModelSpec file, proto JSON or YAML (camelCase field names)");
  auto* hf = cmd->add_option("--hf-config", f->hf_config,
                             "A Hugging Face config.json");
  model->excludes(model_file)->excludes(hf);
  model_file->excludes(hf);
  hardware_opts[0] = cmd->add_option("--hardware", f->hardware, "GPU type")
                         ->capture_default_str();
  hardware_opts[1] = cmd->add_option("--gpus", f->gpus, "Number of GPUs")
                         ->check(IntAtLeast(1));
  hardware_opts[2] =
      cmd->add_option("--gpus-per-node", f->gpus_per_node,
                      "GPUs per node (default: the hardware's, 8)")
          ->check(IntAtLeast(1));
  cmd->add_option("--cluster-file", f->cluster_file,
                  "ClusterSpec file, proto JSON or YAML");
  cmd->add_option("--isl", f->isl, "Mean input (prompt) tokens")
      ->check(IntAtLeast(1))
      ->capture_default_str();
  cmd->add_option("--osl", f->osl, "Mean output tokens")
      ->check(IntAtLeast(1))
      ->capture_default_str();
  cmd->add_option("--concurrency", f->concurrency,
                  "Concurrent requests per replica (0 = the best batch)")
      ->check(IntAtLeast(0));
  cmd->add_option("--max-ttft-ms", f->max_ttft_ms, "TTFT SLO in ms (0 = none)")
      ->check(NumberAtLeastZero());
  cmd->add_option("--max-tpot-ms", f->max_tpot_ms, "TPOT SLO in ms (0 = none)")
      ->check(NumberAtLeastZero());
  cmd->add_option("--request-rate", f->request_rate,
                  "Requests/s offered to the whole deployment, Poisson "
                  "arrivals (instead of --concurrency)")
      ->check(NumberAtLeastZero());
  cmd->add_option("--slo-percentile", f->slo_percentile,
                  "Percentile the TTFT/TPOT SLOs bound: 50, 90, 95, 99 (0 = "
                  "the mean; needs --request-rate)")
      ->check(CLI::IsMember({0, 50, 90, 95, 99}));
  cmd->add_option("--input-dist", f->input_dist,
                  "Prompt lengths: fixed:N, uniform:MIN:MAX, "
                  "lognormal:MEAN:SIGMA[:MIN:MAX], histogram:TOKENS=WEIGHT,... "
                  "(default: fixed at --isl)");
  cmd->add_option("--output-dist", f->output_dist,
                  "Output lengths, as --input-dist (default: fixed at --osl)");
  cmd->add_option("--hardware-options", f->hardware_options,
                  "GPU types with prices for --goal min-cost: "
                  "NAME:PRICE_PER_GPU_HOUR[:MAX_GPUS],...");
  cmd->add_option("--weight-dtype", f->weight_dtype,
                  "bf16, fp8 or fp4 (default: the checkpoint's, e.g. fp8 for "
                  "deepseek-v3)")
      ->check(CLI::IsMember({"bf16", "fp8", "fp4"}));
  cmd->add_option("--kv-cache-dtype", f->kv_cache_dtype,
                  "bf16 (default), fp8 or fp4")
      ->check(CLI::IsMember({"bf16", "fp8", "fp4"}));
  // The server checks the name against its calibration profiles, so a
  // profile added there needs no client change.
  cmd->add_option("--engine", f->engine,
                  "Serving engine the plan is for: vllm, sglang or trtllm "
                  "(predicts with its calibration profile; default: "
                  "engine-agnostic)");
  cmd->add_option("--calibration-profile", f->calibration_profile,
                  "Calibration profile the server predicts with: a built-in "
                  "one or a name given to `shardplan calibrate`");
  // One flag for both uses: the release the plan is predicted for and the one
  // whose flag table --emit uses.
  cmd->add_option("--engine-version", f->engine_version,
                  "Engine release, e.g. 0.11.2: recorded with the prediction, "
                  "and picks --emit's flags (default: the newest checked; "
                  "client/engines/*.yaml)");
}

void AddGlobalOptions(CLI::App* cmd, GlobalFlags* g, bool with_output,
                      bool with_emit, bool yaml_output) {
  cmd->add_option("--server", g->server, "shardplan-server address HOST:PORT")
      ->capture_default_str();
  cmd->add_flag("--tls", g->tls,
                "Connect with TLS (implied by the other --tls-* options)");
  cmd->add_option("--tls-ca", g->tls_ca,
                  "PEM CA bundle that signed the server's certificate "
                  "(default: system roots)");
  cmd->add_option("--tls-cert", g->tls_cert,
                  "PEM client certificate for mutual TLS (with --tls-key)");
  cmd->add_option("--tls-key", g->tls_key,
                  "PEM client private key for mutual TLS (with --tls-cert)");
  cmd->add_option("--tls-server-name", g->tls_server_name,
                  "Name expected in the server's certificate (default: the "
                  "host of --server)");
  cmd->add_option("--token-file", g->token_file,
                  "File whose first line is the bearer token sent as "
                  "\"authorization: Bearer ...\" (default: $SHARDPLAN_TOKEN)");
  cmd->add_option(
         "--deadline-seconds", g->deadline_seconds,
         "Give up after this many seconds (0 = none for plan, 30 s otherwise)")
      ->check(NumberAtLeastZero());
  if (with_output) {
    if (yaml_output) {
      cmd->add_option(
             "--output,-o", g->output,
             "table (default), json (one PlanUpdate per line), yaml (manifest)")
          ->check(CLI::IsMember({"table", "json", "yaml"}));
    } else {
      cmd->add_option("--output,-o", g->output, "table (default) or json")
          ->check(CLI::IsMember({"table", "json"}));
    }
  }
  if (with_emit) {
    cmd->add_option(
           "--emit", g->emit,
           "Print the launch commands of the plan for vllm, sglang or "
           "trtllm, Kubernetes objects (k8s-vllm, k8s-sglang), or an NVIDIA "
           "Dynamo graph (dynamo: of --engine, default vllm; dynamo-vllm, "
           "dynamo-sglang)")
        ->check(
            CLI::IsMember({"vllm", "sglang", "trtllm", "k8s-vllm", "k8s-sglang",
                           "dynamo", "dynamo-vllm", "dynamo-sglang"}));
  }
}

void AddSearchOptions(CLI::App* cmd, SearchFlags* f) {
  cmd->add_option("--method", f->method, "Search method")
      ->check(CLI::IsMember({"rl", "megatron", "random", "anneal", "genetic",
                             "exhaustive", "grid"}))
      ->capture_default_str();
  cmd->add_option("--max-evaluations", f->max_evaluations,
                  "Cost-model evaluations (0 = server default)")
      ->check(IntAtLeast(0));
  cmd->add_option("--max-seconds", f->max_seconds,
                  "Search time limit (0 = server default)")
      ->check(NumberAtLeastZero());
  cmd->add_option("--seed", f->seed, "Random seed");
  cmd->add_flag("--no-warm-start", f->no_warm_start,
                "Do not seed the search with what earlier searches learned");
  cmd->add_option("--objective", f->objective,
                  "expected (default) or conservative: stream as best the "
                  "plan with the highest low end of its throughput range")
      ->check(CLI::IsMember({"expected", "conservative"}));
  cmd->add_option("--top-n", f->top_n,
                  "Plans in the top list after the final table (0 = 5)")
      ->check(CLI::Range(0, 64));
  cmd->add_option("--disaggregation", f->disaggregation,
                  "auto (default): search aggregated and disaggregated "
                  "prefill/decode plans and show the best of each; off; only")
      ->check(CLI::IsMember({"auto", "off", "only"}));
  cmd->add_option("--goal", f->goal,
                  "max-throughput (default), min-gpus (fewest GPUs carrying "
                  "--request-rate within the SLOs) or min-cost (cheapest of "
                  "--hardware-options)")
      ->check(CLI::IsMember({"max-throughput", "min-gpus", "min-cost"}));
}

}  // namespace

absl::StatusOr<CommandLine> ParseCommandLine(int argc,
                                             const char* const* argv) {
  CommandLine result;
  CLI::App app{
      "shardplan: find and evaluate distributed-inference plans (parallelism "
      "degrees and per-operator sharding) with shardplan-server."};
  app.footer(kExitCodesHelp);
  app.require_subcommand(1);

  GlobalFlags& g = result.global;
  ProblemFlags& problem = result.problem;
  SearchFlags& search = result.search;
  PlanFlags& plan_flags = result.plan;
  std::string& health_service = result.health_service;
  CLI::Option* plan_hw[3] = {};
  CLI::Option* eval_hw[3] = {};
  CLI::Option* replan_hw[3] = {};

  CLI::App* plan =
      app.add_subcommand("plan", "Search for the best plan; streams progress");
  AddGlobalOptions(plan, &g, true, true, true);
  AddProblemOptions(plan, &problem, plan_hw);
  AddSearchOptions(plan, &search);
  plan->add_option("--frontier-csv", g.frontier_csv,
                   "Write the throughput-latency frontier to this CSV file");
  plan->add_option("--frontier-png", g.frontier_png,
                   "Draw the throughput-latency frontier into this PNG file "
                   "(needs gnuplot)");

  CLI::App* evaluate = app.add_subcommand("evaluate", "Predict one given plan");
  AddGlobalOptions(evaluate, &g, true, true, false);
  AddProblemOptions(evaluate, &problem, eval_hw);
  evaluate->add_option("--tp", plan_flags.tp, "Tensor-parallel degree")
      ->check(IntAtLeast(1))
      ->capture_default_str();
  evaluate->add_option("--pp", plan_flags.pp, "Pipeline-parallel degree")
      ->check(IntAtLeast(1))
      ->capture_default_str();
  evaluate->add_option("--dp", plan_flags.dp, "Data-parallel degree (replicas)")
      ->check(IntAtLeast(1))
      ->capture_default_str();
  evaluate->add_option("--ep", plan_flags.ep, "Expert-parallel degree (MoE)")
      ->check(IntAtLeast(1))
      ->capture_default_str();
  evaluate->add_option(
      "--op", plan_flags.ops,
      "Operator sharding NAME=DIM, repeatable (e.g. --op attention=batch)");
  evaluate
      ->add_option("--stage-layers", plan_flags.stage_layers,
                   "Layers per pipeline stage (default: uniform)")
      ->delimiter(',');
  evaluate
      ->add_option("--batch-size", plan_flags.batch_size,
                   "Decode batch per replica (0 = concurrency or the best)")
      ->check(IntAtLeast(0));
  evaluate
      ->add_option("--micro-batches", plan_flags.micro_batches,
                   "Micro-batches (0 = pp)")
      ->check(IntAtLeast(0));

  CLI::App* replan = app.add_subcommand(
      "replan",
      "Re-plan a running deployment for a changed cluster: the best plan "
      "that is cheap to move to, old vs new and the transition");
  AddGlobalOptions(replan, &g, true, false, true);
  AddProblemOptions(replan, &problem, replan_hw);
  AddSearchOptions(replan, &search);
  ReplanFlags& replan_flags = result.replan;
  replan
      ->add_option("--current", replan_flags.current,
                   "The running plan: what `shardplan plan --output json` or "
                   "`--output yaml` wrote")
      ->required();
  replan
      ->add_option("--removed-nodes", replan_flags.removed_nodes,
                   "Nodes of the running cluster that are gone, e.g. 1,3 "
                   "(default: the last ones)")
      ->delimiter(',')
      ->check(IntAtLeast(0));
  replan
      ->add_option("--max-transition-seconds",
                   replan_flags.max_transition_seconds,
                   "Plans slower to reach are infeasible (0 = no limit)")
      ->check(NumberAtLeastZero());
  replan
      ->add_option("--transition-weight", replan_flags.transition_weight,
                   "Throughput (fraction) traded per second of transition "
                   "(default: the server's rule, docs/server-and-api.md)")
      ->check(NumberAtLeastZero());

  CLI::App* catalog =
      app.add_subcommand("catalog", "List the built-in models and hardware");
  AddGlobalOptions(catalog, &g, true, false, false);

  CLI::App* health =
      app.add_subcommand("health", "Check the server's gRPC health status");
  AddGlobalOptions(health, &g, false, false, false);
  health->add_option("--service", health_service,
                     "Service name (\"\" = the whole server)");

  CalibrateFlags& cal = result.calibrate;
  CLI::App* calibrate = app.add_subcommand(
      "calibrate",
      "Fit a calibration profile to your measured runs (vLLM --save-result "
      "JSON, SGLang bench_serving JSONL, or CSV) and store it on the server");
  AddGlobalOptions(calibrate, &g, true, false, false);
  calibrate->add_option("--results", cal.results, "Result files")
      ->required()
      ->expected(1, -1);
  calibrate
      ->add_option("--name", cal.name,
                   "Profile name; requests use it as --calibration-profile / "
                   "workload.calibrationProfile")
      ->required();
  calibrate
      ->add_option("--engine", cal.defaults.engine,
                   "Engine of the JSON results (default: vllm for vLLM "
                   "files, sglang for SGLang files)")
      ->check(CLI::IsMember({"vllm", "sglang", "trtllm"}));
  calibrate->add_option("--engine-version", cal.defaults.engine_version,
                        "Engine release the runs used");
  calibrate->add_option("--model", cal.defaults.model,
                        "Model of the JSON results: catalog name or Hugging "
                        "Face id (vLLM files name it themselves)");
  calibrate->add_option("--hardware", cal.defaults.hardware,
                        "GPU type of the runs (h100-sxm-80gb)");
  calibrate
      ->add_option("--weight-dtype", cal.defaults.weight_dtype,
                   "Weight dtype of the JSON results: bf16, fp8 or fp4")
      ->check(CLI::IsMember({"bf16", "fp8", "fp4"}));
  calibrate
      ->add_option("--tp", cal.defaults.tp,
                   "Tensor-parallel degree of the runs")
      ->check(IntAtLeast(1));
  calibrate
      ->add_option("--pp", cal.defaults.pp,
                   "Pipeline-parallel degree of the runs")
      ->check(IntAtLeast(1));
  calibrate
      ->add_option("--dp", cal.defaults.dp,
                   "Attention data-parallel degree of the runs")
      ->check(IntAtLeast(1));
  calibrate
      ->add_option("--ep", cal.defaults.ep,
                   "Expert-parallel degree of the runs")
      ->check(IntAtLeast(1));

  // CLI11 reports through exceptions; none leaves this function.
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    result.help = app.help();
    return result;
  } catch (const CLI::CallForAllHelp&) {
    result.help = app.help("", CLI::AppFormatMode::All);
    return result;
  } catch (const CLI::ParseError& e) {
    return absl::InvalidArgumentError(e.what());
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(e.what());
  }

  g.engine_version = problem.engine_version;
  g.engine = problem.engine;
  if (plan->parsed()) {
    result.command = Command::kPlan;
    problem.hardware_set = plan_hw[0]->count() > 0;
  } else if (evaluate->parsed()) {
    result.command = Command::kEvaluate;
    problem.hardware_set = eval_hw[0]->count() > 0;
  } else if (replan->parsed()) {
    result.command = Command::kReplan;
    problem.hardware_set = replan_hw[0]->count() > 0;
  } else if (catalog->parsed()) {
    result.command = Command::kCatalog;
  } else if (health->parsed()) {
    result.command = Command::kHealth;
  } else if (calibrate->parsed()) {
    result.command = Command::kCalibrate;
  }
  return result;
}

}  // namespace shardplan::client
