// Measured serving runs read from benchmark result files, for `shardplan
// calibrate` (the Calibrate RPC). Three formats, told apart by content:
//  - vLLM `vllm bench serve --save-result`: one JSON object per file, with
//    "model_id", "max_concurrency", "completed", "total_input_tokens",
//    "total_output_tokens", "mean_ttft_ms", "mean_tpot_ms" (field names from
//    vllm-project/vllm vllm/benchmarks/serve.py at 009e6d4a: result_json plus
//    benchmark()'s result; mean_<metric>_ms for the default percentile
//    metrics ttft,tpot,itl).
//  - SGLang `python -m sglang.bench_serving --output-file F`: JSON lines, one
//    object per run, with "backend", "max_concurrency", "completed",
//    "total_input_tokens", "total_output_tokens", "mean_ttft_ms",
//    "mean_tpot_ms" (sgl-project/sglang python/sglang/bench_serving.py at
//    0033168f, the `result` dict appended to the JSONL file); no model field.
//  - CSV with the columns of h100_measured_latency.csv (AIConfigurator's
//    silicon_sample.csv): backend, backend_version, model_path, precision,
//    gemm_quant_mode, mode, isl, osl, batch_size (= concurrency), tp_size,
//    pp_size, attention_dp_size, moe_ep_size, silicon_ttft_ms,
//    silicon_tpot_ms. Disaggregated rows (mode != agg) and rows above 256
//    concurrent requests are skipped and counted.
// JSON results do not record the layout: it comes from RunDefaults (the
// CLI's flags). Means over one run's requests: input tokens per request =
// total_input_tokens / completed, likewise output tokens.
#ifndef SHARDPLAN_CLIENT_MEASUREMENTS_H_
#define SHARDPLAN_CLIENT_MEASUREMENTS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shardplan/v1/shardplan.pb.h"

namespace shardplan::client {

// What the runs of a file leave out (flags); a CSV row's own columns win.
struct RunDefaults {
  std::string engine;  // "" = the format's (vllm / sglang)
  std::string engine_version;
  std::string model;  // catalog name or Hugging Face id
  std::string hardware;
  std::string weight_dtype;
  int tp = 0;
  int pp = 0;
  int dp = 0;
  int ep = 0;
};

struct ParsedResults {
  std::vector<shardplan::v1::MeasuredRun> runs;
  int skipped_disaggregated = 0;
  int skipped_queueing = 0;  // above 256 concurrent requests
};

// Parses the contents `text` of the results file `path` (named in errors as
// "path:line: field: reason"). INVALID_ARGUMENT for a malformed file, a
// missing field or a layout/model neither the file nor `defaults` gives.
absl::StatusOr<ParsedResults> ParseResults(const std::string& path,
                                           absl::string_view text,
                                           const RunDefaults& defaults);

}  // namespace shardplan::client

#endif  // SHARDPLAN_CLIENT_MEASUREMENTS_H_
