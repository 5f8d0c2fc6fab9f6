#pragma once
// Bulk conversions between float and the 16-bit floats, for gradients on the wire and their
// reductions: F16C / AVX2 instructions where the CPU has them, else the portable scalar conversion.
// Both round to nearest even, so results agree (NaN payloads aside).
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

}  // namespace rensa::mn::detail
