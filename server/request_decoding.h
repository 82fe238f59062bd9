// Decoding of request bytes into our protobuf messages with a reason on
// failure. gRPC's protobuf traits only report "failed" (and gRPC 1.51 turns
// that into UNIMPLEMENTED with an empty message); the service decodes the raw
// bytes itself through this. Protobuf only, no gRPC: the fuzz target
// tests/fuzz/fuzz_server_validation.cc links it alone.
#ifndef SHARDPLAN_SERVER_REQUEST_DECODING_H_
#define SHARDPLAN_SERVER_REQUEST_DECODING_H_

#include <string>

#include "absl/status/status.h"
#include "google/protobuf/message.h"

namespace shardplan::server {

// Parses `bytes` into `message` (cleared first). OK exactly when
// message->ParseFromString(bytes) succeeds. Otherwise INVALID_ARGUMENT
// "request: cannot decode <type> (N bytes): <reason>", the reason being the
// first field that does not fit the schema ("model.catalog_name is not valid
// UTF-8", "plan is not a valid embedded message") or "not protobuf wire
// format" (random bytes, a truncated message); `message` is then cleared.
// Thread-safe; O(size) time and memory.
absl::Status DecodeRequest(const std::string& bytes,
                           google::protobuf::Message* message);

}  // namespace shardplan::server

#endif  // SHARDPLAN_SERVER_REQUEST_DECODING_H_
