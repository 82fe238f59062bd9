// Short text of a benchmarked plan, shared by the search benchmark's tables
// (bench_search.cc) and the generated-case table (generated_cases.cc).
#ifndef SHARDPLAN_TESTS_BENCH_PLAN_TEXT_H_
#define SHARDPLAN_TESTS_BENCH_PLAN_TEXT_H_

#include <string>

#include "policy/searcher.h"

namespace shardplan::bench {

// Every operator's sharding dim, three letters each: "col col bat row ...".
std::string ShortOperatorDims(const simulator::PlanDims& plan);

// Share of communication in the decode step, in percent (0 when the step has
// no cost): comm / (comm + max(compute, memory)) summed over operators.
double DecodeCommPercent(const simulator::Evaluation& evaluation);

}  // namespace shardplan::bench

#endif  // SHARDPLAN_TESTS_BENCH_PLAN_TEXT_H_
