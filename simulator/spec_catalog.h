// The built-in catalog of models and hardware, compiled in from
// simulator/catalog/*.yaml (part of the API adapter: entries are API specs).
#ifndef SHARDPLAN_SIMULATOR_SPEC_CATALOG_H_
#define SHARDPLAN_SIMULATOR_SPEC_CATALOG_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shardplan/v1/shardplan.pb.h"

namespace shardplan::simulator {

const std::vector<shardplan::v1::ModelSpec>& CatalogModels();
const std::vector<shardplan::v1::HardwareSpec>& CatalogHardware();
// NOT_FOUND listing the known names.
absl::StatusOr<shardplan::v1::ModelSpec> FindCatalogModel(
    absl::string_view name);
absl::StatusOr<shardplan::v1::HardwareSpec> FindCatalogHardware(
    absl::string_view name);
// What ListCatalog tells clients about a model (Hugging Face id, native dtype,
// total/active parameters, MoE), so that they keep no copies of their own.
// INVALID_ARGUMENT when `spec` does not validate (never for catalog entries).
absl::StatusOr<shardplan::v1::CatalogModelInfo> CatalogModelInfoFromSpec(
    const shardplan::v1::ModelSpec& spec);

}  // namespace shardplan::simulator

#endif  // SHARDPLAN_SIMULATOR_SPEC_CATALOG_H_
