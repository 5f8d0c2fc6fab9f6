// The bulk float <-> float16 / bfloat16 conversions of rensa::mn (vector instructions where the CPU
// has them) against the scalar conversions of rensa/core/half.h, over every 16-bit pattern and a
// sweep of float patterns including the special values.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "src/mn/half_convert.h"

using rensa::BFloat16;
using rensa::Half;

namespace {

// Every 16-bit pattern, in an odd count so the scalar tail runs too.
template <class T>
std::vector<T> all_patterns() {
  std::vector<T> v;
  for (uint32_t b = 0; b <= 0xffff; ++b) v.push_back(T::from_bits(static_cast<uint16_t>(b)));
  v.push_back(T::from_bits(0x3c00));
  return v;
}

// Floats spread over every exponent, the special values, the rounding ties of both 16-bit types and
// the edges of their ranges.
std::vector<float> float_sweep() {
  std::vector<float> v;
  for (uint64_t b = 0; b <= 0xffffffffu; b += 4099) v.push_back(std::bit_cast<float>(static_cast<uint32_t>(b)));
  const float specials[] = {0.0f,
                            -0.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::denorm_min(),
                            65504.0f,
                            65519.99f,
                            65520.0f,
                            -65520.0f,
                            5.9604645e-08f,
                            2.9802322e-08f,
                            6.1035156e-05f,
                            3.4028235e38f,
                            1.0f + 1.0f / 2048.0f,
                            1.0f + 3.0f / 2048.0f,
                            std::bit_cast<float>(0x3f808000u),
                            std::bit_cast<float>(0x3f818000u)};
  v.insert(v.end(), std::begin(specials), std::end(specials));
  return v;
}

template <class T>
void expect_same(T got, T want, float from) {
  const float g = static_cast<float>(got), w = static_cast<float>(want);
  if (std::isnan(w)) {
    EXPECT_TRUE(std::isnan(g)) << "from " << from;
  } else {
    EXPECT_EQ(got.bits, want.bits) << "from " << from << " (bits " << std::bit_cast<uint32_t>(from) << ")";
  }
}

template <class T>
void check_to_float() {
  const std::vector<T> in = all_patterns<T>();
  std::vector<float> out(in.size());
  rensa::mn::detail::to_float(in.data(), out.data(), in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    const float want = static_cast<float>(in[i]);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(out[i])) << "bits " << in[i].bits;
    } else {
      EXPECT_EQ(std::bit_cast<uint32_t>(out[i]), std::bit_cast<uint32_t>(want)) << "bits " << in[i].bits;
    }
  }
}

template <class T>
void check_from_float(float scale) {
  const std::vector<float> in = float_sweep();
  std::vector<T> out(in.size());
  rensa::mn::detail::from_float(in.data(), out.data(), in.size(), scale);
  for (std::size_t i = 0; i < in.size(); ++i) expect_same(out[i], T(in[i] * scale), in[i]);
}

TEST(HalfConvert, Float16ToFloatIsExact) {
  check_to_float<Half>();
}
TEST(HalfConvert, BFloat16ToFloatIsExact) {
  check_to_float<BFloat16>();
}
TEST(HalfConvert, FloatToFloat16RoundsLikeTheScalarConversion) {
  check_from_float<Half>(1.0f);
  check_from_float<Half>(0.25f);
  check_from_float<Half>(1.0f / 3.0f);
}
TEST(HalfConvert, FloatToBFloat16RoundsLikeTheScalarConversion) {
  check_from_float<BFloat16>(1.0f);
  check_from_float<BFloat16>(1.0f / 3.0f);
}
TEST(HalfConvert, EmptyAndShortRanges) {
  const float in[3] = {1.5f, -2.0f, 65536.0f};
  Half h[3] = {};
  rensa::mn::detail::from_float(in, h, 0);
  EXPECT_EQ(h[0].bits, 0);
  rensa::mn::detail::from_float(in, h, 3);
  EXPECT_EQ(static_cast<float>(h[0]), 1.5f);
  EXPECT_EQ(static_cast<float>(h[1]), -2.0f);
  EXPECT_TRUE(std::isinf(static_cast<float>(h[2])));
}

}  // namespace
