#include "client/measurements.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/internal/quote.h"
#include "nlohmann/json.hpp"
#include "proto/limits.h"

namespace shardplan::client {
namespace {

using shardplan::v1::MeasuredRun;

absl::Status Error(const std::string& where, absl::string_view field,
                   absl::string_view reason) {
  return absl::InvalidArgumentError(
      field.empty() ? absl::StrCat(where, ": ", reason)
                    : absl::StrCat(where, ": ", field, ": ", reason));
}

void ApplyDefaults(const RunDefaults& d, MeasuredRun& run) {
  if (!d.engine.empty()) run.set_engine(d.engine);
  if (!d.engine_version.empty()) run.set_engine_version(d.engine_version);
  if (!d.model.empty()) run.set_model(d.model);
  if (!d.hardware.empty()) run.set_hardware(d.hardware);
  if (!d.weight_dtype.empty()) run.set_weight_dtype(d.weight_dtype);
  run.set_tp(d.tp);
  run.set_pp(d.pp);
  run.set_dp(d.dp);
  run.set_ep(d.ep);
}

// --- JSON (vLLM, SGLang) ---

absl::StatusOr<double> JsonNumber(const nlohmann::json& object,
                                  const char* field, const std::string& where) {
  auto it = object.find(field);
  if (it == object.end() || it->is_null()) {
    return Error(where, field, "missing");
  }
  if (!it->is_number()) {
    return Error(
        where, field,
        absl::StrCat("not a number: ", internal::QuoteInputText(it->dump())));
  }
  const double value = it->get<double>();
  if (!std::isfinite(value)) return Error(where, field, "not finite");
  return value;
}

// One run object of either engine's results.
absl::StatusOr<MeasuredRun> RunOfJson(const nlohmann::json& object,
                                      const std::string& where,
                                      const char* engine,
                                      const RunDefaults& defaults) {
  if (!object.is_object()) return Error(where, "", "not a JSON object");
  MeasuredRun run;
  run.set_source(where);
  run.set_engine(engine);
  if (auto it = object.find("model_id");
      it != object.end() && it->is_string()) {
    run.set_model(it->get<std::string>());
  }
  ApplyDefaults(defaults, run);
  auto completed = JsonNumber(object, "completed", where);
  if (!completed.ok()) return completed.status();
  if (!(*completed >= 1)) {
    return Error(where, "completed", "no request completed");
  }
  auto concurrency = JsonNumber(object, "max_concurrency", where);
  if (!concurrency.ok()) {
    return Error(where, "max_concurrency",
                 "missing: run the benchmark with --max-concurrency (the "
                 "calibration needs the number of concurrent requests)");
  }
  auto input = JsonNumber(object, "total_input_tokens", where);
  if (!input.ok()) return input.status();
  auto output = JsonNumber(object, "total_output_tokens", where);
  if (!output.ok()) return output.status();
  auto ttft = JsonNumber(object, "mean_ttft_ms", where);
  if (!ttft.ok()) return ttft.status();
  auto tpot = JsonNumber(object, "mean_tpot_ms", where);
  if (!tpot.ok()) return tpot.status();
  run.set_concurrency(static_cast<int>(std::lround(*concurrency)));
  run.set_input_tokens(static_cast<int>(std::lround(*input / *completed)));
  run.set_output_tokens(static_cast<int>(std::lround(*output / *completed)));
  run.set_ttft_ms(*ttft);
  run.set_tpot_ms(*tpot);
  if (run.model().empty()) {
    return Error(where, "model",
                 "the file does not name the model; pass --model");
  }
  return run;
}

absl::StatusOr<ParsedResults> ParseJson(const std::string& path,
                                        absl::string_view text,
                                        const RunDefaults& defaults) {
  ParsedResults out;
  // A whole-file object with model_id is vLLM's --save-result; otherwise one
  // object per line (SGLang's JSONL; a vLLM object per line works too).
  nlohmann::json whole = nlohmann::json::parse(text, nullptr, false);
  if (!whole.is_discarded() && whole.is_object()) {
    const char* engine = whole.contains("model_id") ? "vllm" : "sglang";
    auto run = RunOfJson(whole, absl::StrCat(path, ":1"), engine, defaults);
    if (!run.ok()) return run.status();
    out.runs.push_back(*std::move(run));
    return out;
  }
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    const std::string where = absl::StrCat(path, ":", line_no);
    nlohmann::json object = nlohmann::json::parse(line, nullptr, false);
    if (object.is_discarded()) {
      return Error(where, "", "not JSON (expected one result object per line)");
    }
    const char* engine = object.contains("model_id") ? "vllm" : "sglang";
    auto run = RunOfJson(object, where, engine, defaults);
    if (!run.ok()) return run.status();
    out.runs.push_back(*std::move(run));
  }
  return out;
}

// --- CSV ---

std::vector<std::string> SplitCsvLine(absl::string_view line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

absl::StatusOr<ParsedResults> ParseCsv(const std::string& path,
                                       absl::string_view text,
                                       const RunDefaults& defaults) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  const std::vector<std::string> header =
      SplitCsvLine(absl::StripSuffix(lines[0], "\r"));
  std::map<std::string, size_t> column;
  for (size_t i = 0; i < header.size(); ++i) column[header[i]] = i;
  for (const char* required :
       {"backend", "model_path", "isl", "osl", "batch_size", "tp_size",
        "silicon_ttft_ms", "silicon_tpot_ms"}) {
    if (column.count(required) == 0) {
      return Error(absl::StrCat(path, ":1"), required,
                   "missing column (the header must have the columns of "
                   "h100_measured_latency.csv)");
    }
  }
  ParsedResults out;
  for (size_t li = 1; li < lines.size(); ++li) {
    const absl::string_view line = absl::StripSuffix(lines[li], "\r");
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    const std::string where = absl::StrCat(path, ":", li + 1);
    const std::vector<std::string> fields = SplitCsvLine(line);
    if (fields.size() != header.size()) {
      return Error(where, "",
                   absl::StrCat(fields.size(), " fields, the header has ",
                                header.size()));
    }
    auto get = [&](const char* name) -> std::string {
      auto it = column.find(name);
      return it == column.end() ? std::string() : fields[it->second];
    };
    if (const std::string mode = get("mode"); !mode.empty() && mode != "agg") {
      ++out.skipped_disaggregated;
      continue;
    }
    auto number = [&](const char* name, bool required,
                      double fallback) -> absl::StatusOr<double> {
      const std::string value = get(name);
      if (value.empty()) {
        if (required) return Error(where, name, "empty");
        return fallback;
      }
      double d = 0;
      if (!absl::SimpleAtod(value, &d) || !std::isfinite(d)) {
        return Error(
            where, name,
            absl::StrCat("not a number: ", internal::QuoteInputText(value)));
      }
      return d;
    };
    MeasuredRun run;
    run.set_source(where);
    ApplyDefaults(defaults, run);
    run.set_engine(get("backend"));
    if (!get("backend_version").empty()) {
      run.set_engine_version(get("backend_version"));
    }
    run.set_model(get("model_path"));
    // The server maps AIConfigurator's system names (h100_sxm, b200_sxm,
    // gb200, ...) and catalog names to its hardware and names the field when
    // it knows neither.
    if (const std::string system = get("system"); !system.empty()) {
      run.set_hardware(system);
    }
    const std::string precision = get("precision");
    const std::string gemm = get("gemm_quant_mode");
    if (precision == "fp4" || absl::StrContains(gemm, "fp4")) {
      run.set_weight_dtype("fp4");
    } else if (absl::StrContains(precision, "fp8") ||
               absl::StartsWith(gemm, "fp8")) {
      run.set_weight_dtype("fp8");
    } else if (run.weight_dtype().empty()) {
      run.set_weight_dtype("bf16");
    }
    struct IntField {
      const char* column;
      bool required;
      void (MeasuredRun::*set)(int32_t);
    };
    const IntField ints[] = {
        {"isl", true, &MeasuredRun::set_input_tokens},
        {"osl", true, &MeasuredRun::set_output_tokens},
        {"batch_size", true, &MeasuredRun::set_concurrency},
        {"tp_size", true, &MeasuredRun::set_tp},
        {"pp_size", false, &MeasuredRun::set_pp},
        {"attention_dp_size", false, &MeasuredRun::set_dp},
        {"moe_ep_size", false, &MeasuredRun::set_ep}};
    for (const IntField& f : ints) {
      auto value = number(f.column, f.required, 0);
      if (!value.ok()) return value.status();
      if (*value < 0 || *value > limits::kMaxTokens) {
        return Error(where, f.column, absl::StrCat("out of range: ", *value));
      }
      (run.*f.set)(static_cast<int>(std::lround(*value)));
    }
    auto ttft = number("silicon_ttft_ms", true, 0);
    if (!ttft.ok()) return ttft.status();
    auto tpot = number("silicon_tpot_ms", true, 0);
    if (!tpot.ok()) return tpot.status();
    run.set_ttft_ms(*ttft);
    run.set_tpot_ms(*tpot);
    // batch_size is one attention dp rank's (AIConfigurator's agg estimate
    // scales it by attention_dp_size: run_agg in
    // aic-core/src/aiconfigurator_core/sdk/backends/base_backend.py); the
    // run's concurrency is the instance's.
    if (run.concurrency() > limits::kMaxFitConcurrency) {
      ++out.skipped_queueing;
      continue;
    }
    run.set_concurrency(run.concurrency() * std::max(1, run.dp()));
    out.runs.push_back(std::move(run));
  }
  return out;
}

}  // namespace

absl::StatusOr<ParsedResults> ParseResults(const std::string& path,
                                           absl::string_view text,
                                           const RunDefaults& defaults) {
  const absl::string_view trimmed = absl::StripLeadingAsciiWhitespace(text);
  if (trimmed.empty()) return Error(path, "", "empty file");
  absl::StatusOr<ParsedResults> parsed = trimmed.front() == '{'
                                             ? ParseJson(path, text, defaults)
                                             : ParseCsv(path, text, defaults);
  if (parsed.ok() && parsed->runs.empty()) {
    return Error(path, "", "no usable runs in the file");
  }
  return parsed;
}

}  // namespace shardplan::client
