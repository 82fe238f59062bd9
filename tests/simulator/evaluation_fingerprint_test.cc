// Every field of every evaluation of tests/bench/evaluation_cases.h's plan set
// (the 16 catalog models on H100, B200, GB200 NVL72 and uneven node groups;
// explicit batches, the batch scan, queueing, SLOs, FP8, the three engines,
// disaggregated plans), hashed per (workload, model) set and compared with
// the stored values: a change meant to leave the predictions alone (hot-path
// work) must leave every hash as it is. A change that moves predictions
// regenerates the file:
//   build/bin/shardplan-evaluation-dump --fingerprints >
//       tests/simulator/data/evaluation_fingerprints.txt
// (one command line)
// and tests/bench/compare_evaluations.sh names the first evaluation that
// differs between two builds.
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "simulator/cost_model.h"
#include "tests/bench/evaluation_cases.h"

namespace shardplan::simulator {
namespace {

struct Stored {
  size_t plans = 0;
  uint64_t hash = 0;
};

// "config model plans hash" lines; '#' starts a comment line.
std::map<std::pair<std::string, std::string>, Stored> ReadFingerprints(
    const std::string& path) {
  std::map<std::pair<std::string, std::string>, Stored> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string config, model, hash;
    Stored s;
    if (fields >> config >> model >> s.plans >> hash) {
      s.hash = std::stoull(hash, nullptr, 16);
      out[{config, model}] = s;
    }
  }
  return out;
}

TEST(EvaluationFingerprintTest,
     EveryFieldOfEveryEvaluationMatchesTheStoredHashes) {
  const auto stored = ReadFingerprints(std::string(SHARDPLAN_TEST_DATA_DIR) +
                                       "/evaluation_fingerprints.txt");
  ASSERT_GE(stored.size(), 100u) << "tests/simulator/data/"
                                    "evaluation_fingerprints.txt missing or "
                                    "short";
  int sets = 0;
  size_t evaluations = 0;
  ForEachEvaluationSet([&](const std::string& config,
                           const std::string& model_name,
                           const CostModel* model,
                           const std::vector<PlanDims>& plans) {
    ASSERT_NE(model, nullptr) << config << " " << model_name;
    const auto it = stored.find({config, model_name});
    ASSERT_NE(it, stored.end())
        << config << " " << model_name << ": no stored fingerprint";
    ++sets;
    evaluations += plans.size();
    EXPECT_EQ(plans.size(), it->second.plans) << config << " " << model_name;
    const uint64_t hash =
        EvaluationSetFingerprint(config, model_name, *model, plans);
    char hex[17];
    std::snprintf(hex, sizeof(hex), "%016" PRIx64, hash);
    EXPECT_EQ(hash, it->second.hash)
        << config << " " << model_name << ": predictions changed (now " << hex
        << "); tests/bench/compare_evaluations.sh names the first difference";
  });
  EXPECT_EQ(sets, static_cast<int>(stored.size()));
  // The set is broad: every catalog model under seven workloads.
  EXPECT_GE(evaluations, 20000u);
}

}  // namespace
}  // namespace shardplan::simulator
