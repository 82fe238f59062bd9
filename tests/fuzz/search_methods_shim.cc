// policy::SearchMethods() for the fuzz build, which has no LibTorch and so no
// shardplan_policy: server/validation.cc needs only this registry. Keep the
// list in step with policy/searcher.cc (tests/fuzz/CMakeLists.txt checks it at
// configure time).
#include <string>
#include <vector>

#include "policy/searcher.h"

namespace shardplan::policy {

const std::vector<std::string>& SearchMethods() {
  static const auto* methods = new std::vector<std::string>{
      "rl", "megatron", "random", "anneal", "genetic", "exhaustive"};
  return *methods;
}

}  // namespace shardplan::policy
