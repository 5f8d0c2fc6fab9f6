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

// m ? a : b for a mask m of all ones or all zeros. The conversions below select with masks and
// no branches, so that loops converting arrays vectorize.
constexpr uint32_t select_mask(uint32_t m, uint32_t a, uint32_t b) { return (a & m) | (b & ~m); }
constexpr uint32_t mask_of(bool c) { return 0u - static_cast<uint32_t>(c); }

// Rounds with the FPU (round to nearest even, the default rounding mode): |f| scaled by 2^2 past
// the half range (overflowing to infinity above 65520), then added to a power of two that puts the
// half's last mantissa bit at the float's last bit, so the addition rounds the dropped bits.
// Results equal the integer formula's for every float (checked exhaustively); flushing float
// subnormals to zero changes nothing (they round to a zero half anyway). NaN becomes the quiet
// NaN 0x7e00 with f's sign.
constexpr uint16_t float_to_half_bits(float f) {
  const uint32_t w = std::bit_cast<uint32_t>(f);
  const uint32_t shl1_w = w + w;  // without the sign
  const uint32_t sign = w & 0x80000000u;
  float base = (std::bit_cast<float>(w & 0x7fffffffu) * 0x1.0p+112f) * 0x1.0p-110f;
  uint32_t bias = shl1_w & 0xff000000u;
  bias = select_mask(mask_of(bias < 0x71000000u), 0x71000000u, bias);  // half subnormals: a fixed bias
  base = std::bit_cast<float>((bias >> 1) + 0x07800000u) + base;
  const uint32_t bits = std::bit_cast<uint32_t>(base);
  const uint32_t nonsign = ((bits >> 13) & 0x7c00u) + (bits & 0x0fffu);
  return static_cast<uint16_t>((sign >> 16) | select_mask(mask_of(shl1_w > 0xff000000u), 0x7e00u, nonsign));
}

// Exact; a NaN keeps its payload (signaling ones too).
constexpr float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t em = static_cast<uint32_t>(h & 0x7fffu) << 13;  // exponent and mantissa in float's place
  const uint32_t exp = em & 0x0f800000u;
  // Normal: rebias the exponent by 127 - 15; infinity and NaN: to 255.
  const uint32_t normal = em + select_mask(mask_of(exp == 0x0f800000u), 224u << 23, 112u << 23);
  // Subnormal (and zero): mant * 2^-24, as (1 + mant * 2^-10) * 2^-14 - 2^-14, exact.
  const float sub = std::bit_cast<float>(em + (113u << 23)) - 0x1.0p-14f;
  return std::bit_cast<float>(sign | select_mask(mask_of(exp == 0), std::bit_cast<uint32_t>(sub), normal));
}

// Branch-free (a NaN, kept quiet with its sign, is selected by mask), so loops converting arrays
// vectorize.
constexpr uint16_t float_to_bfloat16_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (x >> 16) | 0x40u;
  return static_cast<uint16_t>(select_mask(mask_of((x & 0x7fffffffu) > 0x7f800000u), quiet_nan, rounded));
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
  if (std::abs(static_cast<double>(f)) > std::abs(d)) f = std::nextafterf(f, 0.0f);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(f) | 1u);
}

}  // namespace detail

/// IEEE 754 binary16. Stored as 16 bits; converts to and from float.
struct Half {
  /// The binary16 bit pattern.
  uint16_t bits = 0;
  constexpr Half() = default;
  /// Rounds `f` to nearest, ties to even; NaN stays NaN.
  constexpr Half(float f) : bits(detail::float_to_half_bits(f)) {}  // NOLINT: implicit by design
  /// Rounds `d` once, to nearest, ties to even (no double rounding through float).
  Half(double d) : Half(detail::double_to_float_round_odd(d)) {}    // NOLINT
  /// `i` converted through float.
  constexpr Half(int i) : Half(static_cast<float>(i)) {}            // NOLINT
  /// The value with bit pattern `b`.
  static constexpr Half from_bits(uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }
  /// The value as float (exact).
  constexpr operator float() const { return detail::half_bits_to_float(bits); }  // NOLINT
};

/// bfloat16: the upper 16 bits of a float32. Converts to and from float.
struct BFloat16 {
  /// The bfloat16 bit pattern (a float32's upper 16 bits).
  uint16_t bits = 0;
  constexpr BFloat16() = default;
  /// Rounds `f` to nearest, ties to even; NaN stays NaN.
  constexpr BFloat16(float f) : bits(detail::float_to_bfloat16_bits(f)) {}  // NOLINT
  /// Rounds `d` once, to nearest, ties to even (no double rounding through float).
  BFloat16(double d) : BFloat16(detail::double_to_float_round_odd(d)) {}    // NOLINT
  /// `i` converted through float.
  constexpr BFloat16(int i) : BFloat16(static_cast<float>(i)) {}            // NOLINT
  /// The value with bit pattern `b`.
  static constexpr BFloat16 from_bits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
  /// The value as float (exact).
  constexpr operator float() const { return detail::bfloat16_bits_to_float(bits); }  // NOLINT
};

/// Prints the value as a float.
inline std::ostream& operator<<(std::ostream& os, Half h) { return os << static_cast<float>(h); }
/// Prints the value as a float.
inline std::ostream& operator<<(std::ostream& os, BFloat16 h) { return os << static_cast<float>(h); }

}  // namespace rensa
