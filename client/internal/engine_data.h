// The engine flag tables (client/engines/*.yaml) as compiled-in text; generated
// by scripts/embed_text_files.cmake. Parsed by client/engine_flags.cc.
#ifndef SHARDPLAN_CLIENT_INTERNAL_ENGINE_DATA_H_
#define SHARDPLAN_CLIENT_INTERNAL_ENGINE_DATA_H_

namespace shardplan::client::internal {

struct EngineFile {
  const char* name;  // file name, e.g. "vllm.yaml"
  const char* text;  // its YAML
};

extern const EngineFile kEngineFiles[];
extern const int kNumEngineFiles;

}  // namespace shardplan::client::internal

#endif  // SHARDPLAN_CLIENT_INTERNAL_ENGINE_DATA_H_
