// Helpers of the --emit tests: a disaggregated plan as the server returns
// it, the config files an emitted launch script writes with heredocs
// (`cat > FILE <<'EOF'` or `<<EOF` ... `EOF`), for tests that parse them, and
// the check that every flag a script passes is in its tool's flag table.
#ifndef SHARDPLAN_TESTS_CLIENT_EMIT_TEST_UTIL_H_
#define SHARDPLAN_TESTS_CLIENT_EMIT_TEST_UTIL_H_

#include <map>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "client/engine_flags.h"
#include "gtest/gtest.h"
#include "shardplan/v1/shardplan.pb.h"

namespace shardplan::client {

// A plan with the given degrees and batch; dp_attention batch-splits the
// attention operators (DP attention); stages = layers per pipeline stage.
inline shardplan::v1::Plan MakePlan(int replicas, int dp, int tp, int pp,
                                    int ep, int batch,
                                    bool dp_attention = false,
                                    std::vector<int> stages = {}) {
  shardplan::v1::Plan plan;
  plan.set_replicas(replicas);
  plan.set_dp(dp);
  plan.set_tp(tp);
  plan.set_pp(pp);
  plan.set_ep(ep);
  plan.set_batch_size(batch);
  for (int s : stages) plan.add_stage_layers(s);
  if (dp_attention) {
    for (const char* op : {"qkv", "attention", "attn_out"}) {
      auto* s = plan.add_operator_sharding();
      s->set_operator_(op);
      s->set_dim("batch");
    }
  }
  return plan;
}

// plan.prefill / plan.decode with their instance counts (xPyD).
inline shardplan::v1::Plan Disaggregated(const shardplan::v1::Plan& prefill,
                                         int prefill_instances,
                                         const shardplan::v1::Plan& decode,
                                         int decode_instances) {
  shardplan::v1::Plan plan;
  *plan.mutable_prefill() = prefill;
  *plan.mutable_decode() = decode;
  plan.set_prefill_instances(prefill_instances);
  plan.set_decode_instances(decode_instances);
  return plan;
}

// File name → content, in the order written; a file written twice keeps its
// last content.
inline std::map<std::string, std::string> ScriptFiles(
    const std::string& script) {
  std::map<std::string, std::string> files;
  std::string* open = nullptr;
  for (absl::string_view line : absl::StrSplit(script, '\n')) {
    if (open != nullptr) {
      if (line == "EOF") {
        open = nullptr;
      } else {
        absl::StrAppend(open, line, "\n");
      }
      continue;
    }
    if (absl::StartsWith(line, "cat > ")) {
      const std::string name(
          line.substr(6, line.find(' ', 6) == absl::string_view::npos
                             ? absl::string_view::npos
                             : line.find(' ', 6) - 6));
      open = &files[name];
      open->clear();
    }
  }
  return files;
}

// The flags of every command of `script`: the launch command's checked
// against the launch table, the benchmark's against the benchmark's. Shell
// parts (environment, heredoc config, mpirun's own options) are skipped.
inline void ExpectKnownFlags(const std::string& script, const EngineVersion& ev,
                             const std::string& label) {
  bool in_heredoc = false;
  const ToolFlags* tool = nullptr;
  for (absl::string_view line : absl::StrSplit(script, '\n')) {
    if (in_heredoc) {
      in_heredoc = line != "EOF";
      continue;
    }
    if (absl::StartsWith(line, "cat > ")) {
      in_heredoc = true;
      continue;
    }
    if (line.empty() || absl::StartsWith(line, "#")) {
      tool = nullptr;
      continue;
    }
    std::string text = absl::StrCat(absl::StripSuffix(line, " \\"), " ");
    if (!absl::StartsWith(line, "  ")) {
      // A new command: find which tool it runs, the longest command that
      // matches ("trtllm-serve disaggregated" is not "trtllm-serve").
      tool = nullptr;
      size_t tool_at = 0;
      for (const ToolFlags* t : {&ev.launch, &ev.benchmark, &ev.router}) {
        if (t->command.empty()) continue;  // the engine has no such tool
        const size_t at = text.find(t->command + " ");
        if (at != std::string::npos &&
            (tool == nullptr || t->command.size() > tool->command.size())) {
          tool = t;
          tool_at = at;
        }
      }
      ASSERT_NE(tool, nullptr) << label << ": unknown command: " << line;
      text = text.substr(tool_at + tool->command.size());
    }
    for (absl::string_view token :
         absl::StrSplit(text, ' ', absl::SkipEmpty())) {
      // Flags, not shell arithmetic ("$((8 + (LWS_WORKER_INDEX - 1) * 8))").
      if (token.size() < 2 || token[0] != '-') continue;
      if (token[1] != '-' && !absl::ascii_isalpha(token[1])) continue;
      EXPECT_TRUE(tool->known_flags.count(std::string(token)) > 0)
          << label << ": " << token << " is not a flag of `" << tool->command
          << "` " << ev.name << " (" << absl::StrJoin(tool->sources, ", ")
          << ")";
    }
  }
}

}  // namespace shardplan::client

#endif  // SHARDPLAN_TESTS_CLIENT_EMIT_TEST_UTIL_H_
