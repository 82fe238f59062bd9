#include "tests/bench/plan_text.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"

namespace shardplan::bench {

std::string ShortOperatorDims(const simulator::PlanDims& plan) {
  std::vector<std::string> dims;
  for (int o = 0; o < simulator::kNumOpKinds; ++o) {
    dims.push_back(
        std::string(simulator::ShardDimName(plan.dims[o])).substr(0, 3));
  }
  return absl::StrJoin(dims, " ");
}

double DecodeCommPercent(const simulator::Evaluation& evaluation) {
  double comm = 0, total = 0;
  for (const simulator::OpCost& c : evaluation.decode) {
    comm += c.comm_seconds;
    total += c.comm_seconds + std::max(c.compute_seconds, c.memory_seconds);
  }
  return total > 0 ? 100 * comm / total : 0.0;
}

}  // namespace shardplan::bench
