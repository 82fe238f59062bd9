// A torch-free check of stored policy weights before LibTorch reads them.
// The weights are a LibTorch archive: a ZIP file whose entries (the pickled
// layout and one entry per tensor storage) LibTorch allocates at their
// declared uncompressed size. A damaged or hostile row could declare
// gigabytes in a few hundred compressed bytes; this reads only the ZIP
// directory and bounds what loading would allocate.
#ifndef SHARDPLAN_POLICY_WEIGHTS_ARCHIVE_H_
#define SHARDPLAN_POLICY_WEIGHTS_ARCHIVE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace shardplan::policy {

// OK when `bytes` is a well-formed ZIP archive (end-of-directory record,
// ZIP64 included, and a central directory inside the bytes) whose entries
// are stored or deflated, lie inside the bytes, and declare at most
// `max_uncompressed_bytes` in all. INVALID_ARGUMENT otherwise, with a short
// reason (no bytes of the archive are echoed). Reads only the directory:
// O(entries), no allocation proportional to the declared sizes.
absl::Status CheckWeightsArchive(absl::string_view bytes,
                                 uint64_t max_uncompressed_bytes);

}  // namespace shardplan::policy

#endif  // SHARDPLAN_POLICY_WEIGHTS_ARCHIVE_H_
