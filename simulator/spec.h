// The API adapter: the one place in the simulator that reads and writes the
// API's proto messages (with simulator/traffic_spec.h for the workload's
// traffic fields). Everything below it works on the compact types of
// simulator/types.h. Spec text (JSON/YAML -> proto) is proto/spec_text.h.
#ifndef SHARDPLAN_SIMULATOR_SPEC_H_
#define SHARDPLAN_SIMULATOR_SPEC_H_

#include "simulator/spec_catalog.h"     // built-in models and hardware
#include "simulator/spec_from_proto.h"  // proto -> compact, validated
#include "simulator/spec_hf.h"          // Hugging Face config.json import
#include "simulator/spec_to_proto.h"    // compact -> proto

#endif  // SHARDPLAN_SIMULATOR_SPEC_H_
