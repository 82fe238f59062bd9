#include "server/request_decoding.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/stubs/common.h"
#include "google/protobuf/unknown_field_set.h"

namespace shardplan::server {
namespace {

// The path of the first string field whose bytes are not UTF-8 (or of a
// nested message that is not wire format) in `bytes`, a `descriptor` message;
// "" if none is found. Protobuf's own parser only says "failed".
std::string FindUndecodableField(const google::protobuf::Descriptor& descriptor,
                                 absl::string_view bytes,
                                 const std::string& prefix, int depth) {
  // Deeper messages are refused by the parser itself (recursion limit 100).
  if (depth > 100) return "";
  google::protobuf::UnknownFieldSet fields;
  if (!fields.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return prefix.empty()
               ? ""
               : absl::StrCat(prefix, " is not a valid embedded message");
  }
  for (int i = 0; i < fields.field_count(); ++i) {
    const google::protobuf::UnknownField& field = fields.field(i);
    if (field.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      continue;
    const google::protobuf::FieldDescriptor* fd =
        descriptor.FindFieldByNumber(field.number());
    if (fd == nullptr) continue;
    const std::string path =
        prefix.empty() ? fd->name() : absl::StrCat(prefix, ".", fd->name());
    if (fd->type() == google::protobuf::FieldDescriptor::TYPE_STRING) {
      if (!google::protobuf::internal::IsStructurallyValidUTF8(
              field.length_delimited())) {
        return absl::StrCat(path, " is not valid UTF-8");
      }
    } else if (fd->type() == google::protobuf::FieldDescriptor::TYPE_MESSAGE) {
      std::string found = FindUndecodableField(
          *fd->message_type(), field.length_delimited(), path, depth + 1);
      if (!found.empty()) return found;
    }
  }
  return "";
}

}  // namespace

absl::Status DecodeRequest(const std::string& bytes,
                           google::protobuf::Message* message) {
  message->Clear();
  if (message->ParseFromString(bytes)) return absl::OkStatus();
  message->Clear();
  std::string reason =
      FindUndecodableField(*message->GetDescriptor(), bytes, "", 0);
  if (reason.empty()) {
    google::protobuf::UnknownFieldSet wire;
    reason = wire.ParseFromString(bytes)
                 ? "a field does not match the schema"
                 : "not protobuf wire format (random bytes or a truncated "
                   "message?)";
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "request: cannot decode ", message->GetDescriptor()->full_name(), " (",
      bytes.size(), " bytes): ", reason));
}

}  // namespace shardplan::server
