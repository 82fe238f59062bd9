// Helpers of the --emit tests: a disaggregated plan as the server returns
// it, and the config files an emitted launch script writes with heredocs
// (`cat > FILE <<'EOF'` or `<<EOF` ... `EOF`), for tests that parse them.
#ifndef SHARDPLAN_TESTS_CLIENT_EMIT_TEST_UTIL_H_
#define SHARDPLAN_TESTS_CLIENT_EMIT_TEST_UTIL_H_

#include <map>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "shardplan/v1/shardplan.pb.h"

namespace shardplan::client {

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

}  // namespace shardplan::client

#endif  // SHARDPLAN_TESTS_CLIENT_EMIT_TEST_UTIL_H_
