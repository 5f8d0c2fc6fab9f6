#pragma once
// Helpers for serializing optional state of triggers and extensions.

#include <optional>
#include <string_view>

#include "rensa/serializers/serializer.h"

namespace rensa::training::detail {

/// Saves `value` under `key` when it is set; loading sets it when the key exists and resets it
/// otherwise, so "no value yet" survives a snapshot.
inline void serialize_optional(serializers::Serializer& s, std::string_view key, std::optional<double>& value) {
  if (s.is_loading()) {
    if (s.contains(key)) {
      double v = 0.0;
      s.scalar(key, v);
      value = v;
    } else {
      value.reset();
    }
  } else if (value.has_value()) {
    double v = *value;
    s.scalar(key, v);
  }
}

}  // namespace rensa::training::detail
