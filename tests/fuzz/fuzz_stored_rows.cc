// libFuzzer target: the decoders of stored rows, which a damaged or hostile
// store hands the server. The first byte picks the decoder, the rest is the
// row:
//   0: policy weights (policy::CheckWeightsArchive, the check that runs before
//      LibTorch reads them): OK or a bounded INVALID_ARGUMENT, never more
//      than the directory read.
//   1: a `problems` row (store::ProblemRowFromText, columns split at 0x1f):
//      a row or INTERNAL; AppendProblemRow skips what does not decode.
//   2: a calibration profile row (ProfileFromStored, name and JSON split at
//      the first 0x1f): a profile whose parameters are in range, or
//      INVALID_ARGUMENT naming the profile.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "policy/weights_archive.h"
#include "server/store/profile_store.h"
#include "server/store/store_schema.h"
#include "simulator/calibration.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using shardplan::fuzz::Require;
namespace server = shardplan::server;

void Weights(absl::string_view bytes) {
  const absl::Status status =
      shardplan::policy::CheckWeightsArchive(bytes, 1 << 20);
  Require(status.ok() || absl::IsInvalidArgument(status),
          "weights check fails only with INVALID_ARGUMENT");
  Require(status.message().size() < 256, "weights message is short",
          static_cast<double>(status.message().size()), 256);
}

void Problem(absl::string_view bytes) {
  const std::vector<std::string> columns =
      absl::StrSplit(bytes, absl::ByChar('\x1f'));
  const absl::StatusOr<server::store::ProblemRow> row =
      server::store::ProblemRowFromText(columns);
  Require(row.ok() || absl::IsInternal(row.status()),
          "problems row fails only with INTERNAL");
  std::vector<server::store::ProblemRow> rows;
  server::store::AppendProblemRow(columns, &rows);
  Require(rows.size() == (row.ok() ? 1u : 0u),
          "AppendProblemRow keeps exactly the rows that decode");
}

void Profile(absl::string_view bytes) {
  const size_t split = bytes.find('\x1f');
  server::StoredProfile stored;
  stored.name = std::string(bytes.substr(0, split));
  stored.engine = "vllm";
  stored.profile_json = split == absl::string_view::npos
                            ? ""
                            : std::string(bytes.substr(split + 1));
  const auto profile = server::ProfileFromStored(stored);
  if (!profile.ok()) {
    Require(absl::IsInvalidArgument(profile.status()),
            "profile row fails only with INVALID_ARGUMENT");
    return;
  }
  Require(server::CheckCalibrationParameters(
              shardplan::simulator::CalibrationToProto(profile->calibration))
              .ok(),
          "a decoded profile's parameters are in range");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const absl::string_view row(reinterpret_cast<const char*>(data) + 1,
                              size - 1);
  shardplan::fuzz::InputDescription() = std::string(row.substr(0, 200));
  switch (data[0] % 3) {
    case 0:
      Weights(row);
      break;
    case 1:
      Problem(row);
      break;
    default:
      Profile(row);
      break;
  }
  return 0;
}
