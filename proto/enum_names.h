// Names of the small API enums (values 0 .. N-1), one table per enum: the name
// of a value and the value of a name. Header-only; Abseil only.
#ifndef SHARDPLAN_PROTO_ENUM_NAMES_H_
#define SHARDPLAN_PROTO_ENUM_NAMES_H_

#include <cstddef>
#include <optional>
#include <type_traits>

#include "absl/strings/string_view.h"

namespace shardplan {

// names[value], or `fallback` for a value outside the table (a cast from an
// unchecked integer). `Name` is absl::string_view or const char*.
template <typename Enum, typename Name, size_t N>
constexpr Name EnumName(Enum value, const Name (&names)[N],
                        std::common_type_t<Name> fallback) {
  const auto i = static_cast<size_t>(value);
  return i < N ? names[i] : fallback;
}

// The value whose name is `name`, or nullopt.
template <typename Enum, typename Name, size_t N>
constexpr std::optional<Enum> EnumFromName(absl::string_view name,
                                           const Name (&names)[N]) {
  for (size_t i = 0; i < N; ++i) {
    if (absl::string_view(names[i]) == name) return static_cast<Enum>(i);
  }
  return std::nullopt;
}

}  // namespace shardplan

#endif  // SHARDPLAN_PROTO_ENUM_NAMES_H_
