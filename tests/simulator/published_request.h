// The EvaluateRequest files of tests/simulator/data/published/ (published
// deployments the simulator tests predict), read and turned into a validated
// cost model and plan the way shardplan-sim does.
#ifndef SHARDPLAN_TESTS_SIMULATOR_PUBLISHED_REQUEST_H_
#define SHARDPLAN_TESTS_SIMULATOR_PUBLISHED_REQUEST_H_

#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

#include "gtest/gtest.h"
#include "proto/spec_text.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/cost_model.h"
#include "simulator/spec.h"

namespace shardplan::simulator {

inline std::string PublishedDataPath(const std::string& name) {
  return std::string(SHARDPLAN_TEST_DATA_DIR) + "/published/" + name;
}

// The file's text; empty when it cannot be read.
inline std::string ReadPublishedText(const std::string& name) {
  std::ifstream in(PublishedDataPath(name));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The file as an EvaluateRequest; a parse error fails the calling test.
inline shardplan::v1::EvaluateRequest ReadPublishedRequest(
    const std::string& name) {
  shardplan::v1::EvaluateRequest request;
  const absl::Status parsed =
      spec_text::Parse(ReadPublishedText(name), &request);
  EXPECT_TRUE(parsed.ok()) << PublishedDataPath(name) << ": " << parsed;
  return request;
}

struct ModelAndPlan {
  std::unique_ptr<const CostModel> model;
  PlanDims plan;
};

// The cost model of `problem` with `calibration`, and `plan` validated
// against it; nullopt, after failing the calling test with `what` and the
// reason, when either step fails.
inline std::optional<ModelAndPlan> ModelAndPlanOf(
    const Problem& problem, const Calibration& calibration,
    const shardplan::v1::Plan& plan, const std::string& what) {
  absl::StatusOr<std::unique_ptr<const CostModel>> model =
      CostModel::Create(problem, calibration);
  EXPECT_TRUE(model.ok()) << what << ": " << model.status();
  if (!model.ok()) return std::nullopt;
  absl::StatusOr<PlanDims> dims = PlanDimsFromProto(plan);
  EXPECT_TRUE(dims.ok()) << what << ": " << dims.status();
  if (!dims.ok()) return std::nullopt;
  const absl::Status valid = (*model)->ValidatePlan(*dims);
  EXPECT_TRUE(valid.ok()) << what << ": " << valid;
  if (!valid.ok()) return std::nullopt;
  return ModelAndPlan{std::move(*model), *dims};
}

}  // namespace shardplan::simulator

#endif  // SHARDPLAN_TESTS_SIMULATOR_PUBLISHED_REQUEST_H_
