#pragma once
// Bulk conversions between float and the 16-bit floats, for gradients on the wire and their
// reductions: F16C / AVX2 instructions where the CPU has them, else the portable scalar conversion.
// Both round to nearest even, so results agree (NaN payloads aside).
#include <algorithm>
#include <cstddef>

#include "rensa/core/half.h"

namespace rensa::mn::detail {

/// out[i] = float(in[i]).
void to_float(const Half* in, float* out, std::size_t n);
void to_float(const BFloat16* in, float* out, std::size_t n);
/// out[i] = T(in[i] * scale) (the product in float, then one rounding).
void from_float(const float* in, Half* out, std::size_t n, float scale = 1.0f);
void from_float(const float* in, BFloat16* out, std::size_t n, float scale = 1.0f);

/// Elements per block when 16-bit data is reduced through float buffers on the stack.
inline constexpr std::size_t kConvertBlock = 1024;

/// out[i] = op(... op(op(in0[i], in1[i]), in2[i]) ..., in_{k-1}[i]) for i in [lo, hi), computed in
/// float and rounded once, where src(q) is the (const T*) base of input q. `out` may be one of the
/// inputs: each block is read before it is written.
template <class T, class Src, class Op>
void reduce_in_float(int k, Src src, T* out, std::size_t lo, std::size_t hi, Op op) {
  float acc[kConvertBlock], tmp[kConvertBlock];
  for (std::size_t b = lo; b < hi; b += kConvertBlock) {
    const std::size_t m = std::min(kConvertBlock, hi - b);
    to_float(src(0) + b, acc, m);
    for (int q = 1; q < k; ++q) {
      to_float(src(q) + b, tmp, m);
      for (std::size_t i = 0; i < m; ++i) acc[i] = op(acc[i], tmp[i]);
    }
    from_float(acc, out + b, m);
  }
}

}  // namespace rensa::mn::detail
