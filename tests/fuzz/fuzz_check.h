// Invariants the fuzz targets check on every successful evaluation, and the
// request path the server runs for EvaluatePlan (validate, evaluate, convert
// back to proto). A violated invariant prints what failed and aborts, which
// libFuzzer reports as a crash.
#ifndef SHARDPLAN_TESTS_FUZZ_FUZZ_CHECK_H_
#define SHARDPLAN_TESTS_FUZZ_FUZZ_CHECK_H_

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/status/statusor.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/cost_model.h"
#include "simulator/spec.h"
#include "simulator/types.h"

namespace shardplan::fuzz {

// What the current input means (e.g. the request as JSON), printed with a
// violation so that a crash can be turned into a regression test without
// decoding the bytes.
inline std::string& InputDescription() {
  static std::string* description = new std::string();
  return *description;
}

// Aborts with `what` when `ok` is false.
inline void Require(bool ok, const char* what, double value = 0,
                    double limit = 0) {
  if (ok) return;
  std::fprintf(
      stderr,
      "fuzz invariant violated: %s (value %.17g, limit %.17g)\ninput: %s\n",
      what, value, limit, InputDescription().c_str());
  std::abort();
}

inline bool FiniteNonNegative(double x) { return std::isfinite(x) && x >= 0; }

// `a` <= `b` up to a relative tolerance (the cost model sums in different
// orders).
inline bool LessOrClose(double a, double b) {
  return a <= b + 1e-9 * std::fabs(b) + 1e-9;
}

// The invariants of any Evaluation of a validated plan.
inline void CheckEvaluation(const simulator::Evaluation& e,
                            const simulator::Problem& problem) {
  Require(FiniteNonNegative(e.output_tokens_per_s),
          "output_tokens_per_s finite and >= 0", e.output_tokens_per_s);
  Require(FiniteNonNegative(e.output_tokens_per_s_per_gpu),
          "output_tokens_per_s_per_gpu finite and >= 0",
          e.output_tokens_per_s_per_gpu);
  Require(std::isfinite(e.reason_value) && std::isfinite(e.reason_limit),
          "reason value/limit finite", e.reason_value, e.reason_limit);
  Require(FiniteNonNegative(e.weights_bytes), "weights_bytes finite and >= 0",
          e.weights_bytes);
  Require(FiniteNonNegative(e.kv_cache_bytes), "kv_cache_bytes finite and >= 0",
          e.kv_cache_bytes);
  Require(FiniteNonNegative(e.activations_bytes),
          "activations_bytes finite and >= 0", e.activations_bytes);
  Require(FiniteNonNegative(e.capacity_bytes), "capacity_bytes finite and >= 0",
          e.capacity_bytes);
  Require(FiniteNonNegative(e.nvlink_decode_bytes) &&
              FiniteNonNegative(e.ib_decode_bytes) &&
              FiniteNonNegative(e.nvlink_prefill_bytes) &&
              FiniteNonNegative(e.ib_prefill_bytes),
          "link bytes finite and >= 0");
  for (int op = 0; op < simulator::kNumOpKinds; ++op) {
    for (const simulator::OpCost& c : {e.decode[op], e.prefill[op]}) {
      Require(FiniteNonNegative(c.compute_seconds) &&
                  FiniteNonNegative(c.memory_seconds) &&
                  FiniteNonNegative(c.comm_seconds),
              "per-operator seconds finite and >= 0", op);
    }
  }
  Require(e.batch_size >= 0 && e.batch_size <= simulator::kMaxRequestsInFlight,
          "batch_size in [0, kMaxRequestsInFlight]", e.batch_size);
  if (!e.feasible) {
    Require(e.reason != simulator::InfeasibleReason::kNone,
            "infeasible has a reason");
    return;
  }
  Require(e.reason == simulator::InfeasibleReason::kNone,
          "feasible has no reason");
  Require(e.output_tokens_per_s > 0, "feasible => output_tokens_per_s > 0",
          e.output_tokens_per_s);
  Require(e.batch_size > 0, "feasible => batch_size > 0", e.batch_size);
  Require(FiniteNonNegative(e.ttft_seconds) && e.ttft_seconds > 0,
          "feasible => ttft_s finite and > 0", e.ttft_seconds);
  Require(FiniteNonNegative(e.tpot_seconds) && e.tpot_seconds > 0,
          "feasible => tpot_s finite and > 0", e.tpot_seconds);
  Require(FiniteNonNegative(e.prefill_seconds), "feasible => prefill_s finite",
          e.prefill_seconds);
  Require(FiniteNonNegative(e.decode_iteration_seconds),
          "feasible => decode_iteration_s finite", e.decode_iteration_seconds);
  Require(e.capacity_bytes > 0, "feasible => capacity_bytes > 0",
          e.capacity_bytes);
  Require(LessOrClose(e.weights_bytes + e.kv_cache_bytes + e.activations_bytes,
                      e.capacity_bytes),
          "feasible => weights + kv cache + activations <= capacity",
          e.weights_bytes + e.kv_cache_bytes + e.activations_bytes,
          e.capacity_bytes);
  Require(LessOrClose(e.capacity_bytes, problem.cluster.hardware.hbm_bytes),
          "capacity <= hbm_bytes", e.capacity_bytes,
          problem.cluster.hardware.hbm_bytes);
  const simulator::WorkloadDims& w = problem.workload;
  if (w.max_ttft_seconds > 0) {
    Require(LessOrClose(e.ttft_seconds, w.max_ttft_seconds),
            "feasible => ttft within SLO", e.ttft_seconds, w.max_ttft_seconds);
  }
  if (w.max_tpot_seconds > 0) {
    Require(LessOrClose(e.tpot_seconds, w.max_tpot_seconds),
            "feasible => tpot within SLO", e.tpot_seconds, w.max_tpot_seconds);
  }
  if (w.concurrency > 0) {
    // A fixed concurrency is evaluated as given unless the plan sets its own
    // batch.
    Require(e.batch_size > 0, "fixed concurrency evaluates a batch",
            e.batch_size);
  }
}

// Counts of evaluated and feasible plans, printed at exit when
// SHARDPLAN_FUZZ_STATS is set (to see how much of a corpus reaches the cost
// model).
struct EvaluationStats {
  long evaluated = 0;
  long feasible = 0;
};
inline EvaluationStats& Stats() {
  static EvaluationStats* stats = [] {
    auto* s = new EvaluationStats();
    if (std::getenv("SHARDPLAN_FUZZ_STATS") != nullptr) {
      std::atexit([] {
        std::fprintf(stderr, "fuzz stats: %ld plans evaluated, %ld feasible\n",
                     Stats().evaluated, Stats().feasible);
      });
    }
    return s;
  }();
  return *stats;
}

// Evaluates a validated `plan` twice (determinism), checks the invariants,
// converts the result to the response protos as the server does, and checks
// that the plan the server would return is accepted again and predicts the same
// throughput.
inline void EvaluateAndCheck(const simulator::CostModel& model,
                             const simulator::PlanDims& plan) {
  const simulator::Problem& problem = model.problem();
  const simulator::Evaluation e = model.Evaluate(plan);
  ++Stats().evaluated;
  if (e.feasible) ++Stats().feasible;
  CheckEvaluation(e, problem);
  const simulator::Evaluation again = model.Evaluate(plan);
  Require(e.feasible == again.feasible &&
              e.output_tokens_per_s == again.output_tokens_per_s &&
              e.batch_size == again.batch_size,
          "Evaluate is deterministic", e.output_tokens_per_s,
          again.output_tokens_per_s);

  const shardplan::v1::Plan plan_proto = simulator::PlanToProto(plan, problem);
  const shardplan::v1::Prediction prediction =
      simulator::PredictionToProto(e, problem);
  (void)prediction.ByteSizeLong();
  (void)simulator::ModelSpecFromDims(problem.model).ByteSizeLong();
  (void)simulator::InfeasibleReasonText(e);

  absl::StatusOr<simulator::PlanDims> round_trip =
      simulator::PlanDimsFromProto(plan_proto);
  Require(round_trip.ok(), "PlanDimsFromProto(PlanToProto(plan)) is OK");
  Require(model.ValidatePlan(*round_trip).ok(),
          "ValidatePlan(round-tripped plan) is OK");
  const simulator::Evaluation e2 = model.Evaluate(*round_trip);
  Require(e2.feasible == e.feasible, "round-tripped plan: same feasibility");
  Require(std::fabs(e2.output_tokens_per_s - e.output_tokens_per_s) <=
              1e-9 * std::fabs(e.output_tokens_per_s),
          "round-tripped plan: same throughput", e2.output_tokens_per_s,
          e.output_tokens_per_s);
}

}  // namespace shardplan::fuzz

#endif  // SHARDPLAN_TESTS_FUZZ_FUZZ_CHECK_H_
