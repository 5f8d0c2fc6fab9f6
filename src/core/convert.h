#pragma once
// The conversion of one value between rensa's dtypes, rounding to 16-bit floats correctly: the
// kernels' (src/backends/common/scalar_ops.h) and the dataset readers'. Internal.
#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "rensa/core/dtype.h"
#include "rensa/core/half.h"

namespace rensa::detail {

/// `d` as a float rounded to odd: truncated toward zero, with the lowest bit set when inexact.
/// Rounding that float to a 16-bit float gives the correctly rounded result of `d`; rounding `d` to
/// the nearest float first would round twice (1 + 2^-11 + 2^-40 would become float16 1.0).
inline float float_round_to_odd(double d) {
  const float f = static_cast<float>(d);
  if (!std::isfinite(f) || static_cast<double>(f) == d) return f;
  uint32_t bits = std::bit_cast<uint32_t>(f);
  if (std::abs(static_cast<double>(f)) > std::abs(d)) --bits;  // rounded away from zero: step back
  return std::bit_cast<float>(bits | 1u);
}

/// Converts through the compute type so 16-bit floats round correctly.
template <class To, class From>
inline To convert(From v) {
  if constexpr (std::is_same_v<To, bool>) return static_cast<compute_t<From>>(v) != compute_t<From>(0);
  else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    if constexpr (std::is_same_v<From, double> || std::is_same_v<From, int32_t> || std::is_same_v<From, int64_t>) {
      return To(float_round_to_odd(static_cast<double>(v)));
    } else {
      return To(static_cast<float>(static_cast<compute_t<From>>(v)));
    }
  } else {
    return static_cast<To>(static_cast<compute_t<From>>(v));
  }
}

}  // namespace rensa::detail
