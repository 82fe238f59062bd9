// The engine capability table (client/engines/capabilities.yaml), embedded at
// build time by scripts/embed_text_files.cmake. Parsed by
// simulator/engine_capability.cc.
#ifndef SHARDPLAN_SIMULATOR_INTERNAL_ENGINE_CAPABILITY_DATA_H_
#define SHARDPLAN_SIMULATOR_INTERNAL_ENGINE_CAPABILITY_DATA_H_

#include "simulator/internal/catalog_data.h"

namespace shardplan::simulator::internal {

extern const CatalogFile kEngineCapabilityFiles[];
extern const int kNumEngineCapabilityFiles;

}  // namespace shardplan::simulator::internal

#endif  // SHARDPLAN_SIMULATOR_INTERNAL_ENGINE_CAPABILITY_DATA_H_
