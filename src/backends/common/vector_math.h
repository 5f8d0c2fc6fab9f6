#pragma once
// exp, sigmoid and tanh for float written only with arithmetic, comparisons and bit casts, so that
// loops calling them vectorize (libm's expf and tanhf are calls the compiler cannot vectorize, and
// they were 8% of an LSTM language model's training step). Errors against libm, measured over
// [-100, 100] in tests/unit/core/test_vector_math.cpp: exp within 1.2 ulp on [-87, 88] (saturating
// beyond: 1.2e-38 below -87.3, 2.2e38 above 88.3); sigmoid and tanh within 9e-8 absolute and 3e-7
// relative (sigmoid's relative bound above -87). Double keeps libm.
#include <bit>
#include <cmath>
#include <cstdint>

namespace rensa::backends::vmath {

[[gnu::always_inline]] inline float exp(float x) {
  // Selects of values computed on both sides. A loop vectorizes only where the file is compiled
  // with -fno-trapping-math (GCC will not otherwise turn the clamps into selects), as the cpu
  // backend's rnn_cells.cpp is; the results do not depend on it.
  x = x < -87.3f ? -87.3f : x;
  x = x > 88.3f ? 88.3f : x;
  // x = n ln2 + r, |r| <= ln2 / 2: n rounded to nearest by the 1.5 * 2^23 trick (no rint needed),
  // ln2 split in two (Cody and Waite) so r is exact enough.
  constexpr float kShift = 12582912.0f;
  const float n = (x * 1.44269504088896341f + kShift) - kShift;
  const float r = (x - n * 0.693359375f) - n * -2.12194440e-4f;
  // e^r by its Taylor series to degree 7 (truncation below 1e-8 relative on |r| <= 0.347).
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const auto bits = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;  // 2^n, n in [-126, 127]
  return p * std::bit_cast<float>(bits);
}

[[gnu::always_inline]] inline float sigmoid(float x) {
  // e^-|x| never overflows; the two branches are selects.
  const float nx = -x;
  const float e = exp(x < 0.0f ? x : nx);
  const float s = 1.0f / (1.0f + e);
  const float es = e * s;
  return x < 0.0f ? es : s;
}

[[gnu::always_inline]] inline float tanh(float x) {
  const float nx = -x;
  const float a = x < 0.0f ? nx : x;
  // Large |x|: 1 - 2 / (e^2|x| + 1). Small |x| (where that cancels): the odd Taylor series to x^9,
  // whose truncation is below 2 ulp for |x| < 0.35.
  const float big = 1.0f - 2.0f / (exp(2.0f * a) + 1.0f);
  const float a2 = a * a;
  float p = 62.0f / 2835.0f;
  p = p * a2 - 17.0f / 315.0f;
  p = p * a2 + 2.0f / 15.0f;
  p = p * a2 - 1.0f / 3.0f;
  const float small = a + a * a2 * p;
  const float t = a < 0.35f ? small : big;
  const float nt = -t;
  return x < 0.0f ? nt : t;
}

inline double exp(double x) { return std::exp(x); }
inline double tanh(double x) { return std::tanh(x); }
inline double sigmoid(double x) {
  if (x >= 0.0) return 1.0 / (1.0 + std::exp(-x));
  const double e = std::exp(x);
  return e / (1.0 + e);
}

}  // namespace rensa::backends::vmath
