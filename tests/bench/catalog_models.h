// Catalog models for the cost-model benchmarks and the evaluation dump: the
// model's dims by catalog name, and the GPUs a benchmark gives it (enough
// memory for its weights in bf16 on 80 GB parts).
#ifndef SHARDPLAN_TESTS_BENCH_CATALOG_MODELS_H_
#define SHARDPLAN_TESTS_BENCH_CATALOG_MODELS_H_

#include <random>
#include <string>

#include "absl/status/statusor.h"
#include "shardplan/v1/shardplan.pb.h"
#include "simulator/spec.h"
#include "simulator/types.h"

namespace shardplan::simulator {

inline int BenchGpusFor(const ModelDims& m) {
  const double params = m.TotalParams();
  if (params > 1e12) return 64;
  if (params > 3e11) return 32;
  if (params > 1e11) return 16;
  return 8;
}

// The catalog model `name` as a source and its dims.
struct CatalogModel {
  shardplan::v1::ModelSource source;
  ModelDims dims;
};
inline absl::StatusOr<CatalogModel> ResolveCatalogModel(
    const std::string& name) {
  CatalogModel m;
  m.source.set_catalog_name(name);
  absl::StatusOr<shardplan::v1::ModelSpec> spec = ResolveModel(m.source);
  if (!spec.ok()) return spec.status();
  absl::StatusOr<ModelDims> dims = ModelDimsFromSpec(*spec, "model");
  if (!dims.ok()) return dims.status();
  m.dims = *std::move(dims);
  return m;
}

// Random operator dims (each the Megatron default or any dim, evenly) and
// micro-batches (pp or 2 pp when pipelined) for `p`, drawn from `rng`.
inline void RandomDimsAndMicroBatches(std::mt19937& rng, PlanDims* p) {
  for (int i = 0; i < kNumOpKinds; ++i) {
    p->dims[i] = (rng() % 2 == 0)
                     ? MegatronShardDims()[i]
                     : static_cast<ShardDim>(rng() % kNumShardDims);
  }
  p->micro_batches = p->pp > 1 ? static_cast<int>(p->pp * (1 + rng() % 2)) : 0;
}

}  // namespace shardplan::simulator

#endif  // SHARDPLAN_TESTS_BENCH_CATALOG_MODELS_H_
