#pragma once
// The inputs on which the function tests' reference values were computed with Chainer 7.8.1.
#include <cstdint>
#include <vector>

#include "rensa/core/array.h"

namespace rensa::test {

/// ((37 i + off) mod 1009) / 504.5 - 1 for i = 0, 1, ... laid out in `shape` (float64).
inline Array seq(const Shape& shape, int64_t off = 0) {
  std::vector<double> v(static_cast<std::size_t>(shape.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) {
    v[i] = static_cast<double>((static_cast<int64_t>(i) * 37 + off) % 1009) / 504.5 - 1.0;
  }
  return Array::from_vector(v, shape);
}

}  // namespace rensa::test
