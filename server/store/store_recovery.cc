#include "server/store/store_recovery.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <fstream>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace shardplan::server {
namespace {

constexpr char kSqliteMagic[] = "SQLite format 3";  // + '\0': 16 bytes

// Why the file is corrupt, or "" when it is not (or cannot be told).
std::string CorruptionReason(const std::string& path) {
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) return "";  // unreadable: not ours to judge
    char header[16] = {};
    in.read(header, sizeof(header));
    if (in.gcount() < static_cast<std::streamsize>(sizeof(header)) ||
        std::memcmp(header, kSqliteMagic, sizeof(header)) != 0) {
      return "not a SQLite database (bad file header)";
    }
  }
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr);
  std::string reason;
  if (rc == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    rc = sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &stmt, nullptr);
    if (rc == SQLITE_OK) {
      rc = sqlite3_step(stmt);
      if (rc == SQLITE_ROW) {
        const unsigned char* text = sqlite3_column_text(stmt, 0);
        const std::string result =
            text != nullptr ? reinterpret_cast<const char*>(text) : "";
        if (result != "ok") reason = "quick_check: " + result;
        rc = SQLITE_OK;
      }
    }
    sqlite3_finalize(stmt);
  }
  const int primary = rc & 0xff;
  if (reason.empty() &&
      (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB)) {
    reason = sqlite3_errstr(rc);
  }
  sqlite3_close(db);
  return reason;
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

}  // namespace

absl::StatusOr<std::string> QuarantineCorruptStore(const std::string& path,
                                                   absl::Time now) {
  if (path.empty() || absl::StrContains(path, "://") ||
      absl::StartsWith(path, "postgres")) {
    return std::string();
  }
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
    return std::string();
  }
  const std::string reason = CorruptionReason(path);
  if (reason.empty()) return std::string();
  const std::string moved = absl::StrCat(
      path, ".corrupt-",
      absl::FormatTime("%Y%m%dT%H%M%SZ", now, absl::UTCTimeZone()));
  if (std::rename(path.c_str(), moved.c_str()) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "elite store ", path, " is corrupt (", reason,
        ") and cannot be moved aside to ", moved, ": ", std::strerror(errno)));
  }
  for (const char* suffix : {"-wal", "-shm"}) {
    const std::string side = absl::StrCat(path, suffix);
    if (Exists(side)) {
      (void)std::rename(side.c_str(), absl::StrCat(moved, suffix).c_str());
    }
  }
  LOG(WARNING) << "elite store " << path << " is corrupt (" << reason
               << "): moved aside to " << moved
               << "; a fresh store is created and serving goes on";
  return moved;
}

}  // namespace shardplan::server
