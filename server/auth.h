// Bearer-token authentication (--auth_token_file) and TLS credentials
// (--tls_cert, --tls_key, --tls_client_ca) of the planning server.
//
// Tokens are checked inside the ShardingPlanner handlers (server/service.cc),
// so grpc.health.v1.Health and server reflection (which exposes only the public
// .proto schema) stay open: load balancers and `buf curl --list-services` work
// without a token. A token is never logged; comparisons take the same time
// whatever the token's content.
#ifndef SHARDPLAN_SERVER_AUTH_H_
#define SHARDPLAN_SERVER_AUTH_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/grpcpp.h"

namespace shardplan::server {

class TokenAuthenticator {
 public:
  // Reads `path`: one token per line; blank lines and lines starting with '#'
  // are ignored, surrounding whitespace is trimmed. FAILED_PRECONDITION when
  // the file cannot be read or holds no token (the message names the file,
  // never a token).
  static absl::StatusOr<std::unique_ptr<TokenAuthenticator>> FromFile(
      const std::string& path);
  explicit TokenAuthenticator(std::vector<std::string> tokens);

  // OK when `authorization` is "Bearer <one of the tokens>" (scheme
  // case-insensitive); UNAUTHENTICATED otherwise, with a message that does not
  // echo what the client sent.
  absl::Status CheckAuthorizationValue(absl::string_view authorization) const;
  // The same on a call's metadata ("authorization" header).
  absl::Status Check(const grpc::ServerContextBase& context) const;

  int size() const { return static_cast<int>(tokens_.size()); }

 private:
  std::vector<std::string> tokens_;
};

// Compares without an early exit: the time depends only on the lengths.
bool ConstantTimeEquals(absl::string_view a, absl::string_view b);

struct TlsFiles {
  std::string cert;       // PEM certificate chain of the server
  std::string key;        // PEM private key
  std::string client_ca;  // PEM CA bundle; non-empty = mutual TLS required
};

// InsecureServerCredentials when `files.cert` and `files.key` are both empty;
// SslServerCredentials otherwise (with `client_ca`: client certificates are
// required and verified). INVALID_ARGUMENT / FAILED_PRECONDITION naming the
// flag when only one of cert/key is set or a file cannot be read.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsFiles& files);

// Whole file, or FAILED_PRECONDITION naming `flag` and `path`.
absl::StatusOr<std::string> ReadSmallFile(const std::string& path,
                                          absl::string_view flag);

}  // namespace shardplan::server

#endif  // SHARDPLAN_SERVER_AUTH_H_
