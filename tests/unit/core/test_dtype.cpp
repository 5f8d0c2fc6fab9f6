#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>

#include "rensa/rensa.h"

using namespace rensa;

TEST(Dtype, NamesAndSizes) {
  EXPECT_EQ(dtype_name(Dtype::float32), "float32");
  EXPECT_EQ(dtype_name(Dtype::bool_), "bool");
  EXPECT_EQ(itemsize(Dtype::bfloat16), 2u);
  EXPECT_EQ(dtype_from_name("int64"), Dtype::int64);
  EXPECT_THROW(dtype_from_name("float8"), DtypeError);
}

TEST(Dtype, Promotion) {
  EXPECT_EQ(promote_types(Dtype::int32, Dtype::float16), Dtype::float16);
  EXPECT_EQ(promote_types(Dtype::float16, Dtype::bfloat16), Dtype::float32);
  EXPECT_EQ(promote_types(Dtype::bool_, Dtype::uint8), Dtype::uint8);
  EXPECT_EQ(promote_types(Dtype::float64, Dtype::float32), Dtype::float64);
}

TEST(Half, RoundsToNearestEven) {
  EXPECT_EQ(Half(1.0f).bits, 0x3c00);
  EXPECT_EQ(Half(65504.0f).bits, 0x7bff);
  EXPECT_EQ(Half(65520.0f).bits, 0x7c00);  // rounds up to infinity
  EXPECT_EQ(Half(65519.0f).bits, 0x7bff);
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even -> 1.
  EXPECT_EQ(Half(1.0f + 0x1p-11f).bits, 0x3c00);
  // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 and 1 + 2^-9: ties to even -> 1 + 2^-9.
  EXPECT_EQ(Half(1.0f + 3 * 0x1p-11f).bits, 0x3c02);
  EXPECT_EQ(Half(0x1p-24f).bits, 0x0001);   // smallest subnormal
  EXPECT_EQ(Half(0x1p-25f).bits, 0x0000);   // halfway to it: ties to even
  EXPECT_EQ(Half(-2.0f).bits, 0xc000);
  EXPECT_TRUE(std::isnan(static_cast<float>(Half(NAN))));
  EXPECT_EQ(static_cast<float>(Half::from_bits(0x3555)), 0.333251953125f);
  // Every half round-trips through float.
  for (uint32_t b = 0; b < 0x10000; ++b) {
    Half h = Half::from_bits(static_cast<uint16_t>(b));
    float f = h;
    if (std::isnan(f)) continue;
    ASSERT_EQ(Half(f).bits, b) << b;
  }
}

TEST(BFloat16, RoundsToNearestEven) {
  EXPECT_EQ(BFloat16(1.0f).bits, 0x3f80);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even -> 1.
  EXPECT_EQ(BFloat16(1.0f + 0x1p-8f).bits, 0x3f80);
  EXPECT_EQ(BFloat16(1.0f + 3 * 0x1p-8f).bits, 0x3f82);
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(NAN))));
}

// The conversion is branch-free (so array loops vectorize); the special values keep their meaning.
TEST(BFloat16, SpecialValues) {
  const auto bits = [](uint32_t f) { return BFloat16(std::bit_cast<float>(f)).bits; };
  EXPECT_EQ(bits(0x7f800000u), 0x7f80);  // +inf
  EXPECT_EQ(bits(0xff800000u), 0xff80);  // -inf
  EXPECT_EQ(bits(0x80000000u), 0x8000);  // -0
  EXPECT_EQ(bits(0x7f7fffffu), 0x7f80);  // the largest float rounds to inf
  EXPECT_EQ(bits(0x7f800001u), 0x7fc0);  // a signaling NaN becomes quiet, never inf
  EXPECT_EQ(bits(0xff80ffffu), 0xffc0);  // its sign kept
  EXPECT_EQ(bits(0x7fffffffu), 0x7fff);  // a NaN whose payload would carry past the exponent
  EXPECT_EQ(bits(0x00000001u), 0x0000);  // the smallest subnormal rounds to zero
}

TEST(Half, FromDoubleRoundsOnce) {
  // 1 + 2^-11 + 2^-40 is just above the halfway point between 1 and 1 + 2^-10: it must round up.
  // Through float it would first become exactly 1 + 2^-11 and then round (to even) down.
  EXPECT_EQ(Half(1.0 + 0x1p-11 + 0x1p-40).bits, 0x3c01);
  EXPECT_EQ(BFloat16(1.0 + 0x1p-8 + 0x1p-40).bits, 0x3f81);
  EXPECT_EQ(Half(1.0 + 0x1p-11).bits, 0x3c00);  // an exact tie still goes to even
  EXPECT_EQ(Half(-1.0 - 0x1p-11 - 0x1p-40).bits, 0xbc01);
}
