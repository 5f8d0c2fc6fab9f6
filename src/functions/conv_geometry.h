#pragma once
// Output sizes of sliding windows, shared by convolution.cpp and pooling.cpp (Chainer's formulas).
#include <cstdint>
#include <ostream>

#include "rensa/functions/convolution.h"

namespace rensa::functions::detail {

/// Extent of a dilated kernel: (k - 1) * d + 1.
inline int64_t dilated(int64_t k, int64_t d) {
  return (k - 1) * d + 1;
}

/// Windows of extent dk at stride s over size + 2p elements; with cover_all, the last window may
/// run past the end so every element is covered. 0 when one window does not fit in size + 2p.
inline int64_t window_count(int64_t size, int64_t dk, int64_t s, int64_t p, bool cover_all) {
  const int64_t span = size + 2 * p - dk;
  if (span < 0) return 0;
  return (cover_all ? (span + s - 1) / s : span / s) + 1;
}

}  // namespace rensa::functions::detail

namespace rensa::functions {
/// Prints as (y, x) in error messages (found by argument-dependent lookup).
inline std::ostream& operator<<(std::ostream& os, const Int2& v) {
  return os << '(' << v.y << ", " << v.x << ')';
}
}  // namespace rensa::functions
