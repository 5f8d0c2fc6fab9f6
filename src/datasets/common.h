#pragma once
// Helpers shared by the dataset sources (internal).

#include <cstdint>
#include <span>

#include "rensa/core/array.h"
#include "rensa/core/error.h"

namespace rensa::datasets::detail {

/// Row `i` of `a` along axis 0 as a view, built directly: this runs once per example and column
/// on the training hot path, where the generic index() machinery costs more than the copy itself.
inline Array row_view(const Array& a, int64_t i) {
  const Shape& shape = a.shape();
  const Shape& strides = a.strides();
  Shape row_shape(std::span<const int64_t>(shape.data() + 1, shape.size() - 1));
  Shape row_strides(std::span<const int64_t>(strides.data() + 1, strides.size() - 1));
  return Array(a.storage(), std::move(row_shape), std::move(row_strides), a.offset() + i * strides[0], a.dtype());
}

/// A uniform integer in [0, n) from the random bits hi:lo (64x64->128 multiply-shift: relative
/// bias at most n / 2^64).
inline int64_t uniform_below(uint32_t hi, uint32_t lo, int64_t n) {
  const uint64_t x = (static_cast<uint64_t>(hi) << 32) | lo;
  return static_cast<int64_t>((static_cast<unsigned __int128>(x) * static_cast<uint64_t>(n)) >> 64);
}

/// IndexError naming the dataset and its size unless 0 <= i < size.
inline void check_index(const char* who, int64_t i, int64_t size) {
  RENSA_CHECK(i >= 0 && i < size, IndexError, who, ": index ", i, " is out of range for a dataset of size ", size);
}

}  // namespace rensa::datasets::detail
