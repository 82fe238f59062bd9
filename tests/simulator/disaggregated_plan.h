// A disaggregated plan for the simulator tests: x prefill instances of tp
// `ptp`, y decode instances of tp `dtp`.
#ifndef SHARDPLAN_TESTS_SIMULATOR_DISAGGREGATED_PLAN_H_
#define SHARDPLAN_TESTS_SIMULATOR_DISAGGREGATED_PLAN_H_

#include "simulator/types.h"

namespace shardplan::simulator {

inline PlanDims Disagg(int x, int ptp, int y, int dtp,
                       int decode_batch = PlanDims{}.batch_size) {
  PlanDims p;
  p.disaggregated = true;
  p.prefill_instances = x;
  p.prefill.tp = ptp;
  p.decode_instances = y;
  p.tp = dtp;
  p.batch_size = decode_batch;
  return p;
}

}  // namespace shardplan::simulator

#endif  // SHARDPLAN_TESTS_SIMULATOR_DISAGGREGATED_PLAN_H_
