// A throwaway PostgreSQL server for tests: initdb in a fresh temp directory,
// `postgres` on 127.0.0.1 at a free port (unix socket in the temp dir, never
// the system's), trust auth for the role "shardplan". Stopped and removed by
// the destructor, also when the test failed. Stop()/Start() again keep the
// data and the port (to test what the server does while the database is
// down). PostgreSQL refuses to run as root: when the test runs as root, the
// binaries run as the Debian package's `postgres` user (runuser) and the temp
// dir is handed to it.
#ifndef SHARDPLAN_TESTS_E2E_POSTGRES_INSTANCE_H_
#define SHARDPLAN_TESTS_E2E_POSTGRES_INSTANCE_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"

namespace shardplan::testing_pg {

// Where initdb/pg_ctl live: $SHARDPLAN_PG_BINDIR, else Debian's
// /usr/lib/postgresql/<15|16|...>/bin; "" when none is installed.
inline std::string PostgresBinDir() {
  if (const char* env = getenv("SHARDPLAN_PG_BINDIR"); env != nullptr)
    return env;
  for (const char* version : {"15", "16", "17", "14", "13"}) {
    const std::string dir =
        absl::StrCat("/usr/lib/postgresql/", version, "/bin");
    if (access(absl::StrCat(dir, "/pg_ctl").c_str(), X_OK) == 0 &&
        access(absl::StrCat(dir, "/initdb").c_str(), X_OK) == 0) {
      return dir;
    }
  }
  return "";
}

inline int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

class PostgresInstance {
 public:
  PostgresInstance() : bin_(PostgresBinDir()) {}
  ~PostgresInstance() {
    if (started_) {
      RunAsOwner(absl::StrCat(bin_, "/pg_ctl -D '", data_,
                              "' -m immediate -w -t 20 stop >>'", dir_,
                              "/pg_ctl.log' 2>&1"));
    }
    if (!dir_.empty())
      (void)!system(absl::StrCat("rm -rf '", dir_, "'").c_str());
  }
  PostgresInstance(const PostgresInstance&) = delete;
  PostgresInstance& operator=(const PostgresInstance&) = delete;

  bool available() const { return !bin_.empty(); }

  // initdb + first start. On failure returns false and sets `error` (with the
  // logs).
  bool Init(std::string* error) {
    const char* base = getenv("TEST_TMPDIR");
    std::string pattern =
        absl::StrCat(base != nullptr ? base : "/tmp", "/shardplan-pg-XXXXXX");
    if (mkdtemp(pattern.data()) == nullptr) {
      *error = "mkdtemp failed";
      return false;
    }
    dir_ = pattern;
    data_ = absl::StrCat(dir_, "/data");
    if (geteuid() == 0) {
      const passwd* pw = getpwnam("postgres");
      if (pw == nullptr) {
        *error =
            "running as root and there is no `postgres` user to run the "
            "server as (install the Debian postgresql package)";
        return false;
      }
      if (chown(dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
        *error = "chown of the temp dir failed";
        return false;
      }
      as_owner_ = "runuser -u postgres -- ";
    }
    chmod(dir_.c_str(), 0700);
    if (RunAsOwner(absl::StrCat(bin_, "/initdb -D '", data_,
                                "' -U shardplan -A trust --locale=C -E UTF8 "
                                "--no-sync >'",
                                dir_, "/initdb.log' 2>&1")) != 0) {
      *error = absl::StrCat("initdb failed:\n", Read("initdb.log"));
      return false;
    }
    for (int attempt = 0; attempt < 5; ++attempt) {
      port_ = FreeLoopbackPort();
      if (Start()) return true;
    }
    *error = absl::StrCat("postgres did not start:\n", Read("server.log"),
                          Read("pg_ctl.log"));
    return false;
  }

  // (Re)starts the server on port(); waits until it accepts connections.
  bool Start() {
    started_ = RunAsOwner(absl::StrCat(
                   bin_, "/pg_ctl -D '", data_, "' -l '", dir_,
                   "/server.log' -w -t 30 -o \"-p ", port_, " -k '", dir_,
                   "' -c listen_addresses=127.0.0.1 -c fsync=off -c "
                   "max_connections=50\" start >>'",
                   dir_, "/pg_ctl.log' 2>&1")) == 0;
    return started_;
  }

  // Fast shutdown: open connections are terminated (what replicas see when
  // the database goes away).
  bool Stop() {
    const bool ok = RunAsOwner(absl::StrCat(bin_, "/pg_ctl -D '", data_,
                                            "' -m fast -w -t 30 stop >>'", dir_,
                                            "/pg_ctl.log' 2>&1")) == 0;
    if (ok) started_ = false;
    return ok;
  }

  // CREATE DATABASE `name`; false on failure.
  bool CreateDatabase(const std::string& name) {
    return system(absl::StrCat(bin_, "/createdb -h 127.0.0.1 -p ", port_,
                               " -U shardplan '", name, "' >>'", dir_,
                               "/createdb.log' 2>&1")
                      .c_str()) == 0;
  }

  std::string Url(const std::string& database = "postgres") const {
    return absl::StrCat("postgresql://shardplan@127.0.0.1:", port_, "/",
                        database);
  }
  int port() const { return port_; }
  // The data directory (postmaster.pid names the server's process).
  const std::string& DataDir() const { return data_; }
  std::string ServerLog() const { return Read("server.log"); }

 private:
  int RunAsOwner(const std::string& command) const {
    return system(
        absl::StrCat(as_owner_, "sh -c \"", Escape(command), "\"").c_str());
  }
  static std::string Escape(const std::string& command) {
    std::string out;
    for (char c : command) {
      if (c == '"' || c == '\\' || c == '$' || c == '`') out.push_back('\\');
      out.push_back(c);
    }
    return out;
  }
  std::string Read(const std::string& name) const {
    std::ifstream in(absl::StrCat(dir_, "/", name));
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
  }

  const std::string bin_;
  std::string dir_;
  std::string data_;
  std::string as_owner_;
  int port_ = 0;
  bool started_ = false;
};

}  // namespace shardplan::testing_pg

#endif  // SHARDPLAN_TESTS_E2E_POSTGRES_INSTANCE_H_
