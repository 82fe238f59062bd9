#include "policy/weights_archive.h"

#include <cstdint>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"

namespace shardplan::policy {
namespace {

// Record signatures and sizes of the ZIP format (PKWARE APPNOTE 6.3.10).
constexpr uint32_t kEndOfDirectory = 0x06054b50;
constexpr uint32_t kZip64Locator = 0x07064b50;
constexpr uint32_t kZip64EndOfDirectory = 0x06064b50;
constexpr uint32_t kDirectoryEntry = 0x02014b50;
constexpr size_t kEndOfDirectorySize = 22;
constexpr size_t kZip64LocatorSize = 20;
constexpr size_t kZip64EndOfDirectorySize = 56;
constexpr size_t kDirectoryEntrySize = 46;
constexpr size_t kLocalHeaderSize = 30;
constexpr uint16_t kZip64ExtraId = 0x0001;
// A policy archive has a handful of entries (layout, a few storages).
constexpr uint64_t kMaxEntries = 4096;

uint64_t Le(absl::string_view b, size_t at, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) {
    v = (v << 8) | static_cast<unsigned char>(b[at + i]);
  }
  return v;
}

absl::Status Bad(absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("policy weights are not a usable archive: ", why));
}

}  // namespace

absl::Status CheckWeightsArchive(absl::string_view bytes,
                                 uint64_t max_uncompressed_bytes) {
  const size_t size = bytes.size();
  if (size < kEndOfDirectorySize) return Bad("too short");
  // The end-of-directory record is last, followed by a comment of at most
  // 65535 bytes.
  size_t eocd = std::string::npos;
  const size_t lowest = size >= kEndOfDirectorySize + 65535
                            ? size - kEndOfDirectorySize - 65535
                            : 0;
  for (size_t at = size - kEndOfDirectorySize + 1; at-- > lowest;) {
    if (Le(bytes, at, 4) == kEndOfDirectory &&
        at + kEndOfDirectorySize + Le(bytes, at + 20, 2) == size) {
      eocd = at;
      break;
    }
  }
  if (eocd == std::string::npos) return Bad("no end-of-directory record");
  uint64_t entries = Le(bytes, eocd + 10, 2);
  uint64_t dir_size = Le(bytes, eocd + 12, 4);
  uint64_t dir_offset = Le(bytes, eocd + 16, 4);
  uint64_t dir_end_limit = eocd;
  if (entries == 0xffff || dir_size == 0xffffffff || dir_offset == 0xffffffff) {
    if (eocd < kZip64LocatorSize) return Bad("no ZIP64 locator");
    const size_t locator = eocd - kZip64LocatorSize;
    if (Le(bytes, locator, 4) != kZip64Locator) return Bad("no ZIP64 locator");
    const uint64_t end64 = Le(bytes, locator + 8, 8);
    if (end64 > locator || locator - end64 < kZip64EndOfDirectorySize ||
        Le(bytes, end64, 4) != kZip64EndOfDirectory) {
      return Bad("bad ZIP64 end-of-directory record");
    }
    entries = Le(bytes, end64 + 32, 8);
    dir_size = Le(bytes, end64 + 40, 8);
    dir_offset = Le(bytes, end64 + 48, 8);
    dir_end_limit = end64;
  }
  if (entries == 0 || entries > kMaxEntries) {
    return Bad(absl::StrCat(entries, " entries"));
  }
  if (dir_offset > dir_end_limit || dir_size > dir_end_limit - dir_offset) {
    return Bad("central directory outside the archive");
  }
  uint64_t total = 0;
  size_t at = dir_offset;
  const size_t dir_end = dir_offset + dir_size;
  for (uint64_t i = 0; i < entries; ++i) {
    if (dir_end - at < kDirectoryEntrySize ||
        Le(bytes, at, 4) != kDirectoryEntry) {
      return Bad(absl::StrCat("entry ", i, " is damaged"));
    }
    const uint64_t method = Le(bytes, at + 10, 2);
    uint64_t compressed = Le(bytes, at + 20, 4);
    uint64_t uncompressed = Le(bytes, at + 24, 4);
    const uint64_t name_len = Le(bytes, at + 28, 2);
    const uint64_t extra_len = Le(bytes, at + 30, 2);
    const uint64_t comment_len = Le(bytes, at + 32, 2);
    uint64_t local = Le(bytes, at + 42, 4);
    const uint64_t entry_size =
        kDirectoryEntrySize + name_len + extra_len + comment_len;
    if (dir_end - at < entry_size) {
      return Bad(absl::StrCat("entry ", i, " is damaged"));
    }
    // ZIP64 sizes sit in the extra field, in this order, for each field the
    // fixed part marks with all ones.
    size_t extra = at + kDirectoryEntrySize + name_len;
    const size_t extra_end = extra + extra_len;
    while (extra_end - extra >= 4) {
      const uint64_t id = Le(bytes, extra, 2);
      const uint64_t len = Le(bytes, extra + 2, 2);
      if (extra_end - extra - 4 < len) {
        return Bad(absl::StrCat("entry ", i, " has a damaged extra field"));
      }
      if (id == kZip64ExtraId) {
        size_t field = extra + 4;
        const size_t field_end = field + len;
        for (uint64_t* value : {&uncompressed, &compressed, &local}) {
          if (*value != 0xffffffff) continue;
          if (field_end - field < 8) {
            return Bad(absl::StrCat("entry ", i, " has a damaged ZIP64 field"));
          }
          *value = Le(bytes, field, 8);
          field += 8;
        }
      }
      extra += 4 + len;
    }
    if (method != 0 && method != 8) {
      return Bad(
          absl::StrCat("entry ", i, " uses compression method ", method));
    }
    if (method == 0 && compressed != uncompressed) {
      return Bad(absl::StrCat("entry ", i, " has inconsistent sizes"));
    }
    if (local > dir_offset || dir_offset - local < kLocalHeaderSize ||
        compressed > dir_offset - local - kLocalHeaderSize) {
      return Bad(absl::StrCat("entry ", i, " lies outside the archive"));
    }
    if (uncompressed > max_uncompressed_bytes - total ||
        total > max_uncompressed_bytes) {
      return Bad(absl::StrCat("the entries declare more than ",
                              max_uncompressed_bytes,
                              " bytes, more than this policy holds"));
    }
    total += uncompressed;
    at += entry_size;
  }
  return absl::OkStatus();
}

}  // namespace shardplan::policy
