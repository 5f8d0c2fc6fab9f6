#pragma once
// The reference loop of fused optimizer steps: every multi-index in order, one element at a time.
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "rensa/core/array.h"

namespace rensa::backends::reference {

/// Calls step(param, grad, state...) on element references (type T) of every position; S state
/// arrays, all of param's shape.
template <class T, std::size_t S, class Step>
void fused_update(const Array& param, const Array& grad, const Array* state, Step step) {
  const Shape& shape = param.shape();
  std::vector<int64_t> idx(shape.size(), 0);
  const auto at = [&](const Array& a) {
    int64_t off = 0;
    for (std::size_t d = 0; d < shape.size(); ++d) off += idx[d] * a.strides()[d];
    return static_cast<T*>(a.raw_data()) + off;
  };
  for (int64_t flat = 0; flat < shape.numel(); ++flat) {
    [&]<std::size_t... K>(std::index_sequence<K...>) { step(*at(param), *at(grad), *at(state[K])...); }
    (std::make_index_sequence<S>());
    for (std::size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace rensa::backends::reference
