#pragma once
/// \file
/// IEEE binary16 (`Half`) and bfloat16 (`BFloat16`) storage types. Arithmetic converts to float;
/// conversion from float rounds to nearest, ties to even; NaN stays NaN.

#include <bit>
#include <cmath>
#include <cstdint>
#include <ostream>

namespace rensa {
namespace detail {

constexpr uint16_t float_to_half_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) {  // inf or NaN (keep NaN quiet)
    return static_cast<uint16_t>(sign | 0x7c00u | (x > 0x7f800000u ? 0x200u : 0u));
  }
  if (x >= 0x477ff000u) {  // >= 65520 rounds to infinity
    return static_cast<uint16_t>(sign | 0x7c00u);
  }
  if (x < 0x38800000u) {  // below the smallest normal half: subnormal or zero
    if (x < 0x33000000u) return static_cast<uint16_t>(sign);  // < 2^-25 rounds to zero
    const uint32_t exp = x >> 23;
    const uint32_t mant = (x & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - exp;  // 14..24
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  // normal: rebias exponent, round the 13 dropped bits to nearest even
  uint32_t h = ((x - 0x38000000u) >> 13);
  const uint32_t rem = x & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

constexpr float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    if (mant == 0) return std::bit_cast<float>(sign);
    const float v = static_cast<float>(mant) * (1.0f / 16777216.0f);  // mant * 2^-24
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

constexpr uint16_t float_to_bfloat16_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

constexpr float bfloat16_bits_to_float(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

/// `d` rounded to float with round-to-odd: the float toward zero, its last bit set when inexact.
/// Rounding that to a 16-bit type (round to nearest even) equals rounding `d` directly, because
/// float keeps more than two extra bits; a plain float cast would round twice.
inline float double_to_float_round_odd(double d) {
  float f = static_cast<float>(d);
  if (!(static_cast<double>(f) != d) || std::isnan(d) || std::isinf(f)) return f;
  if (std::abs(static_cast<double>(f)) > std::abs(d)) f = std::nextafter(f, 0.0f);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(f) | 1u);
}

}  // namespace detail

/// IEEE 754 binary16. Stored as 16 bits; converts to and from float.
struct Half {
  uint16_t bits = 0;
  constexpr Half() = default;
  constexpr Half(float f) : bits(detail::float_to_half_bits(f)) {}  // NOLINT: implicit by design
  Half(double d) : Half(detail::double_to_float_round_odd(d)) {}    // NOLINT
  constexpr Half(int i) : Half(static_cast<float>(i)) {}            // NOLINT
  static constexpr Half from_bits(uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }
  constexpr operator float() const { return detail::half_bits_to_float(bits); }  // NOLINT
};

/// bfloat16: the upper 16 bits of a float32. Converts to and from float.
struct BFloat16 {
  uint16_t bits = 0;
  constexpr BFloat16() = default;
  constexpr BFloat16(float f) : bits(detail::float_to_bfloat16_bits(f)) {}  // NOLINT
  BFloat16(double d) : BFloat16(detail::double_to_float_round_odd(d)) {}    // NOLINT
  constexpr BFloat16(int i) : BFloat16(static_cast<float>(i)) {}            // NOLINT
  static constexpr BFloat16 from_bits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
  constexpr operator float() const { return detail::bfloat16_bits_to_float(bits); }  // NOLINT
};

inline std::ostream& operator<<(std::ostream& os, Half h) { return os << static_cast<float>(h); }
inline std::ostream& operator<<(std::ostream& os, BFloat16 h) { return os << static_cast<float>(h); }

}  // namespace rensa
