#include "server/auth.h"

#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace shardplan::server {

bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  const size_t n = a.size() > b.size() ? a.size() : b.size();
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned>(x ^ y);
  }
  return diff == 0;
}

absl::StatusOr<std::string> ReadSmallFile(const std::string& path,
                                          absl::string_view flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::FailedPreconditionError(
        absl::StrCat(flag, ": cannot read ", path));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) {
    return absl::FailedPreconditionError(
        absl::StrCat(flag, ": cannot read ", path));
  }
  return buffer.str();
}

absl::StatusOr<std::unique_ptr<TokenAuthenticator>>
TokenAuthenticator::FromFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadSmallFile(path, "--auth_token_file");
  if (!text.ok()) return text.status();
  std::vector<std::string> tokens;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || absl::StartsWith(line, "#")) continue;
    tokens.emplace_back(line);
  }
  if (tokens.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("--auth_token_file: ", path,
                     " holds no token (one per line; '#' starts a comment)"));
  }
  return std::make_unique<TokenAuthenticator>(std::move(tokens));
}

TokenAuthenticator::TokenAuthenticator(std::vector<std::string> tokens)
    : tokens_(std::move(tokens)) {}

absl::Status TokenAuthenticator::CheckAuthorizationValue(
    absl::string_view authorization) const {
  constexpr absl::string_view kScheme = "bearer ";
  if (authorization.size() <= kScheme.size() ||
      !absl::EqualsIgnoreCase(authorization.substr(0, kScheme.size()),
                              kScheme)) {
    return absl::UnauthenticatedError(
        "this server requires a bearer token: send the metadata "
        "\"authorization: Bearer <token>\" (shardplan --token-file or "
        "SHARDPLAN_TOKEN)");
  }
  const absl::string_view presented =
      absl::StripAsciiWhitespace(authorization.substr(kScheme.size()));
  bool match = false;
  // Every token is compared, so the time does not tell which one matched.
  for (const std::string& token : tokens_) {
    match |= ConstantTimeEquals(presented, token);
  }
  if (!match) {
    return absl::UnauthenticatedError(
        "the bearer token is not accepted by this server");
  }
  return absl::OkStatus();
}

absl::Status TokenAuthenticator::Check(
    const grpc::ServerContextBase& context) const {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) return CheckAuthorizationValue("");
  return CheckAuthorizationValue(
      absl::string_view(it->second.data(), it->second.size()));
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsFiles& files) {
  if (files.cert.empty() && files.key.empty()) {
    if (!files.client_ca.empty()) {
      return absl::InvalidArgumentError(
          "--tls_client_ca needs --tls_cert and --tls_key (mutual TLS is on "
          "top of TLS)");
    }
    return grpc::InsecureServerCredentials();
  }
  if (files.cert.empty() || files.key.empty()) {
    return absl::InvalidArgumentError(
        "--tls_cert and --tls_key must be given together");
  }
  absl::StatusOr<std::string> cert = ReadSmallFile(files.cert, "--tls_cert");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadSmallFile(files.key, "--tls_key");
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({*key, *cert});
  if (!files.client_ca.empty()) {
    absl::StatusOr<std::string> ca =
        ReadSmallFile(files.client_ca, "--tls_client_ca");
    if (!ca.ok()) return ca.status();
    options.pem_root_certs = *ca;
    options.client_certificate_request =
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  } else {
    options.client_certificate_request =
        GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE;
  }
  return grpc::SslServerCredentials(options);
}

}  // namespace shardplan::server
