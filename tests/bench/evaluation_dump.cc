// shardplan-evaluation-dump: every field of the cost model's evaluation of a
// broad, deterministic set of plans (tests/bench/evaluation_cases.h), one line
// per evaluation, floating-point fields in hexadecimal (exact). Two builds'
// outputs are identical exactly when they predict the same thing bit for bit,
// so a change meant to leave the predictions alone (hot-path work) is checked
// with
//
//   build/bin/shardplan-evaluation-dump > after.txt   # and the same on main
//   cmp before.txt after.txt
//
// (tests/bench/compare_evaluations.sh runs both and names the first
// difference). `--fingerprints` prints instead one hash per (workload,
// model) set, the file simulator_test's EvaluationFingerprintTest compares
// against (tests/simulator/data/evaluation_fingerprints.txt).
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "simulator/cost_model.h"
#include "simulator/types.h"
#include "tests/bench/evaluation_cases.h"

namespace shardplan::simulator {
namespace {

int Run(bool fingerprints) {
  long evaluations = 0;
  if (fingerprints) {
    std::printf(
        "# One FNV-1a hash per (workload, model) set of "
        "tests/bench/evaluation_cases.h: every field of every evaluation.\n"
        "# Regenerate: build/bin/shardplan-evaluation-dump --fingerprints > "
        "tests/simulator/data/evaluation_fingerprints.txt\n");
  }
  ForEachEvaluationSet([&](const std::string& config,
                           const std::string& model_name,
                           const CostModel* model,
                           const std::vector<PlanDims>& plans) {
    if (model == nullptr) {
      std::printf("%s %s: no problem\n", config.c_str(), model_name.c_str());
      return;
    }
    evaluations += static_cast<long>(plans.size());
    if (fingerprints) {
      std::printf("%s %s %zu %016" PRIx64 "\n", config.c_str(),
                  model_name.c_str(), plans.size(),
                  EvaluationSetFingerprint(config, model_name, *model, plans));
      return;
    }
    for (const PlanDims& p : plans) {
      std::fputs(
          EvaluationLine(config, model_name, p, model->Evaluate(p)).c_str(),
          stdout);
    }
  });
  std::fprintf(stderr, "%ld evaluations\n", evaluations);
  return 0;
}

}  // namespace
}  // namespace shardplan::simulator

int main(int argc, char** argv) {
  const bool fingerprints =
      argc > 1 && std::strcmp(argv[1], "--fingerprints") == 0;
  return shardplan::simulator::Run(fingerprints);
}
