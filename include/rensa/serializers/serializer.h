#pragma once
/// \file
/// The serializer protocol (Chainer's): one `serialize(Serializer&)` method per object both saves
/// and loads its state. A Serializer is a node in a tree of names ("updater/model:main/l1/W").

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "rensa/core/array.h"

namespace rensa::serializers {

/// Saves or loads named values. When saving, values are read; when loading, they are overwritten.
class Serializer {
 public:
  virtual ~Serializer() = default;
  /// True for a deserializer (values are loaded into the arguments).
  virtual bool is_loading() const = 0;
  /// The serializer of the child named `name`; it lives as long as this one.
  virtual Serializer& child(std::string_view name) = 0;
  /// The array `key`. Loading into a non-null array requires the same shape (the dtype is
  /// converted) and copies into its memory, so views and parameters keep aliasing; loading into a
  /// null array adopts the stored one. A missing key throws IOError naming the file and the key.
  virtual void array(std::string_view key, Array& value) = 0;
  /// True when loading and `key` exists (for optional state).
  virtual bool contains(std::string_view key) const = 0;

  /// Scalars are stored as 0-d arrays (float64, int64 or bool); loading converts a stored 0-d
  /// array of another dtype and throws IOError for another shape. A uint64 is stored as the int64
  /// with the same bits (NumPy shows values above 2^63 - 1 as negative). A missing key in a
  /// non-strict load leaves `value` unchanged.
  void scalar(std::string_view key, double& value);
  /// As the double overload; stored as int64.
  void scalar(std::string_view key, int64_t& value);
  /// As the double overload; stored as the int64 with the same bits.
  void scalar(std::string_view key, uint64_t& value);
  /// As the double overload; stored as bool.
  void scalar(std::string_view key, bool& value);
  /// Strings are stored as 1-d uint8 arrays of their bytes. Loading anything else throws IOError.
  void string(std::string_view key, std::string& value);
  /// The full path of this node, e.g. "updater/optimizer:main/".
  virtual const std::string& path() const = 0;
};

}  // namespace rensa::serializers
