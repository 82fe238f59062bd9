// The catalog's YAML files, embedded at build time by
// scripts/embed_text_files.cmake into generated sources. Parsed by
// simulator/spec.cc (CatalogModels, CatalogHardware).
#ifndef SHARDPLAN_SIMULATOR_INTERNAL_CATALOG_DATA_H_
#define SHARDPLAN_SIMULATOR_INTERNAL_CATALOG_DATA_H_

namespace shardplan::simulator::internal {

struct CatalogFile {
  const char* file_name;  // e.g. "llama-3.1-8b.yaml"
  const char* text;       // the file's YAML
};

extern const CatalogFile kCatalogModelFiles[];
extern const int kNumCatalogModelFiles;
extern const CatalogFile kCatalogHardwareFiles[];
extern const int kNumCatalogHardwareFiles;

}  // namespace shardplan::simulator::internal

#endif  // SHARDPLAN_SIMULATOR_INTERNAL_CATALOG_DATA_H_
