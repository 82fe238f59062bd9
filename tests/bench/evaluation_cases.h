// A broad, deterministic set of cost-model evaluations and their exact text,
// shared by shardplan-evaluation-dump (every field of every evaluation, to
// compare two builds) and simulator_test's EvaluationFingerprintTest (a hash
// per set against stored values). The set: every catalog model on H100 nodes
// of 8, B200 and GB200 NVL72 (nodes of 4 in a 72-GPU NVLink domain), a
// cluster of uneven node groups (replica classes), and workloads that reach
// each path of the evaluation: a plan's explicit batch, the batch scan
// (concurrency 0, batch 0), a fixed concurrency that overflows the KV cache
// (queueing), SLOs, FP8 weights and KV cache, SGLang, vLLM and TensorRT-LLM
// (its batch waiting and attention dp balance), and disaggregated plans.
// Plans: every (replicas, dp, tp, pp, ep) factorisation with random operator
// dims, micro-batches, stage splits and batches (seeded), kept when
// ValidatePlan accepts them.
#ifndef SHARDPLAN_TESTS_BENCH_EVALUATION_CASES_H_
#define SHARDPLAN_TESTS_BENCH_EVALUATION_CASES_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "simulator/cost_model.h"
#include "simulator/types.h"

namespace shardplan::simulator {

// Called once per (workload configuration, catalog model), in a fixed order,
// with the problem's cost model and its plans; `model` is null (and `plans`
// empty) when the problem cannot be built.
using EvaluationSetVisitor = std::function<void(
    const std::string& config, const std::string& model_name,
    const CostModel* model, const std::vector<PlanDims>& plans)>;
void ForEachEvaluationSet(const EvaluationSetVisitor& visit);

// Every field of `e`, floating-point ones in hexadecimal (exact), on one line
// ending in a newline; and a plan's degrees, dims, batch and stage split.
std::string EvaluationText(const Evaluation& e);
std::string PlanText(const PlanDims& p);

// The dump's line for one evaluation: set, plan and every field.
std::string EvaluationLine(const std::string& config,
                           const std::string& model_name, const PlanDims& p,
                           const Evaluation& e);

// 64-bit FNV-1a over the EvaluationLine of every plan of one set, evaluated
// by `model`: equal exactly when every field of every evaluation is.
uint64_t EvaluationSetFingerprint(const std::string& config,
                                  const std::string& model_name,
                                  const CostModel& model,
                                  const std::vector<PlanDims>& plans);

}  // namespace shardplan::simulator

#endif  // SHARDPLAN_TESTS_BENCH_EVALUATION_CASES_H_
