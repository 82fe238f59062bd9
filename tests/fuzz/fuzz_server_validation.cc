// libFuzzer target: the server's request validation (server/validation.h) of
// both RPCs that take input, PlanSharding (ValidatePlanRequest) and
// EvaluatePlan (ValidateEvaluateRequest). The bytes are read as a spec text
// (JSON/YAML) when they parse as one, and always as the protobuf wire format
// gRPC delivers. A request that validates goes on as the handler does:
// EvaluatePlan evaluates and converts back to proto (fuzz_check.h's
// invariants); PlanSharding's budgets must respect the limits. The wire bytes
// go through the server's own decoder (server/request_decoding.h, what the
// service runs on what gRPC received), which must agree with protobuf's parser
// and fail only with a bounded INVALID_ARGUMENT; ListCatalog's request is
// decoded the same way.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "proto/spec_text.h"
#include "server/request_decoding.h"
#include "server/validation.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/spec.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

namespace sim = shardplan::simulator;
namespace spec_text = shardplan::spec_text;
namespace v1 = shardplan::v1;
using shardplan::fuzz::Require;

void CheckPlanRequest(const v1::PlanRequest& request) {
  shardplan::server::RequestLimits limits;
  auto validated = shardplan::server::ValidatePlanRequest(request, limits);
  (void)shardplan::server::MethodLabel(request);
  if (!validated.ok()) {
    Require(absl::IsInvalidArgument(validated.status()),
            "ValidatePlanRequest fails only with INVALID_ARGUMENT");
    return;
  }
  Require(validated->cost_model != nullptr,
          "validated PlanRequest has a cost model");
  Require(validated->max_evaluations > 0 &&
              validated->max_evaluations <= limits.max_evaluations_limit,
          "max_evaluations in (0, limit]", validated->max_evaluations);
  Require(validated->max_seconds > 0 &&
              validated->max_seconds <= limits.max_seconds_limit,
          "max_seconds in (0, limit]", validated->max_seconds);
  sim::PlanDims plan;
  plan.dp = validated->cost_model->problem().cluster.num_gpus;
  if (validated->cost_model->ValidatePlan(plan).ok()) {
    shardplan::fuzz::EvaluateAndCheck(*validated->cost_model, plan);
  }
}

void CheckEvaluateRequest(const v1::EvaluateRequest& request) {
  auto validated = shardplan::server::ValidateEvaluateRequest(request);
  if (!validated.ok()) {
    Require(absl::IsInvalidArgument(validated.status()),
            "ValidateEvaluateRequest fails only with INVALID_ARGUMENT");
    return;
  }
  Require(validated->cost_model != nullptr,
          "validated EvaluateRequest has a cost model");
  shardplan::fuzz::EvaluateAndCheck(*validated->cost_model, validated->plan);
}

// DecodeRequest succeeds exactly when protobuf's parser does, and otherwise
// says so with INVALID_ARGUMENT and a message that does not grow with the
// input (the reason names a field path, never echoes the bytes).
template <typename Message>
bool DecodeAndCheck(const std::string& bytes, Message* message) {
  const absl::Status status = shardplan::server::DecodeRequest(bytes, message);
  Message reference;
  const bool parses = reference.ParseFromString(bytes);
  Require(status.ok() == parses, "DecodeRequest agrees with ParseFromString");
  if (!status.ok()) {
    Require(absl::IsInvalidArgument(status),
            "DecodeRequest fails only with INVALID_ARGUMENT");
    Require(status.message().size() < 1024, "decode errors stay short",
            static_cast<int>(status.message().size()));
  }
  return status.ok();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  {
    v1::PlanRequest request;
    if (spec_text::Parse(text, &request).ok()) CheckPlanRequest(request);
    if (DecodeAndCheck(std::string(text), &request)) CheckPlanRequest(request);
  }
  {
    v1::EvaluateRequest request;
    if (spec_text::Parse(text, &request).ok()) CheckEvaluateRequest(request);
    if (DecodeAndCheck(std::string(text), &request))
      CheckEvaluateRequest(request);
  }
  {
    v1::ListCatalogRequest request;
    (void)DecodeAndCheck(std::string(text), &request);
  }
  return 0;
}
