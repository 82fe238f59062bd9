// The built-in catalog of models and hardware (simulator/catalog/*.yaml,
// compiled in) and what ListCatalog tells about a model.
#include "simulator/spec_catalog.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "proto/spec_text.h"
#include "proto/status_macros.h"
#include "simulator/internal/catalog_data.h"
#include "simulator/spec_from_proto.h"
#include "simulator/user_text.h"

namespace shardplan::simulator {
namespace {

using ::shardplan::v1::HardwareSpec;
using ::shardplan::v1::ModelSpec;

// The spec called `name`, or NOT_FOUND listing the known names.
template <typename T>
absl::StatusOr<T> FindByName(const std::vector<T>& specs,
                             absl::string_view name, absl::string_view what) {
  std::vector<std::string> names;
  names.reserve(specs.size());
  for (const T& spec : specs) {
    if (spec.name() == name) return spec;
    names.push_back(spec.name());
  }
  return absl::NotFoundError(absl::StrFormat("unknown %s %s; known: %s", what,
                                             QuoteUserText(name),
                                             absl::StrJoin(names, ", ")));
}

// --- Catalog files -----------------------------------------------------------

template <typename T>
std::vector<T> LoadCatalog(const internal::CatalogFile* files, int n) {
  std::vector<T> specs;
  specs.reserve(n);
  for (int i = 0; i < n; ++i) {
    T spec;
    const absl::Status status = spec_text::Parse(files[i].text, &spec);
    if (!status.ok()) {
      // The catalog is compiled in and covered by tests; a bad file is a build
      // defect.
      std::fprintf(stderr, "shardplan: catalog file %s: %s\n",
                   files[i].file_name, std::string(status.message()).c_str());
      std::abort();
    }
    specs.push_back(std::move(spec));
  }
  return specs;
}

}  // namespace

const std::vector<ModelSpec>& CatalogModels() {
  static const std::vector<ModelSpec>* const models =
      new std::vector<ModelSpec>(LoadCatalog<ModelSpec>(
          internal::kCatalogModelFiles, internal::kNumCatalogModelFiles));
  return *models;
}

const std::vector<HardwareSpec>& CatalogHardware() {
  static const std::vector<HardwareSpec>* const hardware =
      new std::vector<HardwareSpec>(LoadCatalog<HardwareSpec>(
          internal::kCatalogHardwareFiles, internal::kNumCatalogHardwareFiles));
  return *hardware;
}

absl::StatusOr<ModelSpec> FindCatalogModel(absl::string_view name) {
  return FindByName(CatalogModels(), name, "model");
}

absl::StatusOr<HardwareSpec> FindCatalogHardware(absl::string_view name) {
  return FindByName(CatalogHardware(), name, "hardware");
}

absl::StatusOr<shardplan::v1::CatalogModelInfo> CatalogModelInfoFromSpec(
    const ModelSpec& spec) {
  ASSIGN_OR_RETURN(const ModelDims m, ModelDimsFromSpec(spec, "model"));
  shardplan::v1::CatalogModelInfo info;
  info.set_name(m.name);
  info.set_hugging_face_id(m.hugging_face_id);
  info.set_native_dtype(std::string(DtypeName(m.native_dtype)));
  info.set_total_params(m.TotalParams());
  info.set_active_params(m.ActiveParams());
  info.set_moe(m.is_moe());
  return info;
}

}  // namespace shardplan::simulator
