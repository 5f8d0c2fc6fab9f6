// Resampling transforms: resize_window (crop + resize + flip in one pass), Resize, CenterCrop and
// RandomResizedCrop.
//
// resize_window is separable: a vertical pass over whole rows of the window (contiguous, so it
// vectorizes) into one intermediate row, then a horizontal pass over that row. Each output's taps
// sit in a flat table of fixed width (the widest footprint, shorter ones padded with zero weights),
// so the horizontal pass of uint8 images is one vector multiply-add per output, with no per-output
// loop bounds.
//
// uint8 images are computed in fixed point: int16 weights in units of 2^-14 that sum to exactly
// 2^14, int32 sums, the intermediate row kept as int16 with 7 fraction bits (255 << 7 fits), the
// result rounded half up. The error this adds is bounded from the quantized weights: while the
// bound is under 0.5 (always, but for footprints of thousands of pixels, where the float path runs
// instead), a result is the exact (float64) value rounded, or 1 off it where that value lies near a
// half, and so within 1 of the float computation rounded.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "rensa/core/cpu_features.h"
#include "rensa/core/error.h"
#include "rensa/datasets/image_transforms.h"
#include "src/datasets/image_common.h"

namespace rensa::datasets::transforms {
namespace {

/// The taps of `out` outputs from a source span of `len` pixels: output k reads count[k] pixels from
/// first[k] (relative to the span's start) with weights[k * width + j], j < count[k] (zeros after).
struct TapTable {
  int64_t width = 1;  // the widest footprint
  std::vector<int64_t> first, count;
  std::vector<double> weights;
};

/// Separable resampling weights for `out` outputs from the source span [0, len), normalized in
/// float64. Output k's centre is (k + 0.5) * scale in source pixel units (half-pixel centres).
TapTable taps_for(int64_t len, int64_t out, Interpolation interp, bool flip) {
  const double scale = static_cast<double>(len) / static_cast<double>(out);
  const double widen = std::max(scale, 1.0);  // shrinking widens the filter (antialiasing)
  const double support = interp == Interpolation::area ? 0.5 * scale : widen;
  // No footprint spans more than this; the table is cut to the widest one at the end.
  const int64_t bound =
      interp == Interpolation::nearest ? 1 : std::min<int64_t>(len, static_cast<int64_t>(std::ceil(2.0 * support)) + 2);
  TapTable t;
  t.first.assign(static_cast<std::size_t>(out), 0);
  t.count.assign(static_cast<std::size_t>(out), 1);
  t.weights.assign(static_cast<std::size_t>(out * bound), 0.0);
  int64_t widest = 1;
  for (int64_t k = 0; k < out; ++k) {
    const int64_t kk = flip ? out - 1 - k : k;
    const double centre = (static_cast<double>(kk) + 0.5) * scale;
    double* w = &t.weights[static_cast<std::size_t>(k * bound)];
    const auto nearest = [&] {
      t.first[static_cast<std::size_t>(k)] = std::clamp<int64_t>(static_cast<int64_t>(std::floor(centre)), 0, len - 1);
      w[0] = 1.0;
    };
    if (interp == Interpolation::nearest) {
      nearest();
      continue;
    }
    const auto lo = std::max<int64_t>(0, static_cast<int64_t>(std::floor(centre - support)));
    const auto hi = std::min<int64_t>(len, static_cast<int64_t>(std::ceil(centre + support)));
    double total = 0.0;
    int64_t a = -1, b = -1;  // the first and last nonzero weights
    for (int64_t j = lo; j < hi; ++j) {
      double v;
      if (interp == Interpolation::area) {
        // Overlap of source pixel [j, j + 1) with the output's footprint.
        v = std::max(0.0, std::min(j + 1.0, centre + support) - std::max(static_cast<double>(j), centre - support));
      } else {
        v = std::max(0.0, 1.0 - std::abs((static_cast<double>(j) + 0.5 - centre) / widen));
      }
      if (v == 0.0) continue;
      if (a < 0) a = j;
      b = j;
      w[j - a] = v;
      total += v;
    }
    if (total <= 0.0) {  // degenerate footprint: the nearest pixel
      nearest();
      continue;
    }
    const int64_t n = b - a + 1;
    for (int64_t j = 0; j < n; ++j) w[j] /= total;
    t.first[static_cast<std::size_t>(k)] = a;
    t.count[static_cast<std::size_t>(k)] = n;
    widest = std::max(widest, n);
  }
  if (widest < bound) {
    for (int64_t k = 1; k < out; ++k) {
      std::copy_n(&t.weights[static_cast<std::size_t>(k * bound)], widest,
                  &t.weights[static_cast<std::size_t>(k * widest)]);
    }
    t.weights.resize(static_cast<std::size_t>(out * widest));
  }
  t.width = widest;
  return t;
}

// ---- uint8 in fixed point ---------------------------------------------------------------------

constexpr int kWeightBits = 14;  // weights in units of 2^-14: 1.0 still fits int16
constexpr int kMidBits = 7;      // fraction bits of the intermediate row: 255 << 7 fits int16
constexpr int kFinalShift = kWeightBits + kMidBits;

/// A TapTable quantized: int16 weights summing to 2^14 per output, rows of `width` (a multiple of
/// the vector width the pass loads), zero padded.
struct FixedTaps {
  int64_t width = 0;
  std::vector<int16_t> weights;
  double error = 0.0;  // the largest sum over one output of |quantized - exact weight|
};

FixedTaps quantize(const TapTable& t, int64_t multiple) {
  const auto out = static_cast<int64_t>(t.first.size());
  FixedTaps q;
  q.width = (t.width + multiple - 1) / multiple * multiple;
  q.weights.assign(static_cast<std::size_t>(out * q.width), 0);
  constexpr double one = 1 << kWeightBits;
  for (int64_t k = 0; k < out; ++k) {
    const double* w = &t.weights[static_cast<std::size_t>(k * t.width)];
    int16_t* qw = &q.weights[static_cast<std::size_t>(k * q.width)];
    const int64_t n = t.count[static_cast<std::size_t>(k)];
    int sum = 0;
    int64_t largest = 0;
    for (int64_t j = 0; j < n; ++j) {
      qw[j] = static_cast<int16_t>(std::lround(w[j] * one));
      sum += qw[j];
      if (w[j] > w[largest]) largest = j;
    }
    // The weights sum to exactly one, so a constant image stays constant and nothing overflows.
    qw[largest] = static_cast<int16_t>(qw[largest] + ((1 << kWeightBits) - sum));
    double e = 0.0;
    for (int64_t j = 0; j < n; ++j) e += std::abs(static_cast<double>(qw[j]) / one - w[j]);
    q.error = std::max(q.error, e);
  }
  return q;
}

/// The int32 lane of two adjacent int16 weights, as pmaddwd pairs them.
inline int32_t weight_pair(int16_t lo, int16_t hi) {
  return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint16_t>(hi)) << 16 | static_cast<uint16_t>(lo));
}

// The vector passes below compute the portable loops' integer sums, bit for bit: SSE2 (x86-64's
// baseline) 16 pixels at a time, AVX2 (when the CPU has it) 32. Each returns how far it got.
#if defined(__SSE2__)
#define RENSA_RESIZE_SSE2 1

/// The vertical pass from column x: two rows at a time, their bytes interleaved and widened to
/// int16 pairs, multiplied by the two weights and summed pairwise (pmaddwd).
int64_t vertical_u8_sse2(const uint8_t* const* rows, const int16_t* w, int64_t n, int64_t width, int64_t x,
                         int16_t* mid) {
  const __m128i zero = _mm_setzero_si128(), round = _mm_set1_epi32(1 << (kWeightBits - kMidBits - 1));
  for (; x + 16 <= width; x += 16) {
    __m128i a0 = round, a1 = round, a2 = round, a3 = round;
    for (int64_t j = 0; j < n; j += 2) {
      const __m128i r0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[j] + x));
      const __m128i r1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[j + 1] + x));
      const __m128i wj = _mm_set1_epi32(weight_pair(w[j], w[j + 1]));
      const __m128i lo = _mm_unpacklo_epi8(r0, r1), hi = _mm_unpackhi_epi8(r0, r1);
      a0 = _mm_add_epi32(a0, _mm_madd_epi16(_mm_unpacklo_epi8(lo, zero), wj));
      a1 = _mm_add_epi32(a1, _mm_madd_epi16(_mm_unpackhi_epi8(lo, zero), wj));
      a2 = _mm_add_epi32(a2, _mm_madd_epi16(_mm_unpacklo_epi8(hi, zero), wj));
      a3 = _mm_add_epi32(a3, _mm_madd_epi16(_mm_unpackhi_epi8(hi, zero), wj));
    }
    const int s = kWeightBits - kMidBits;
    _mm_storeu_si128(reinterpret_cast<__m128i*>(mid + x),
                     _mm_packs_epi32(_mm_srai_epi32(a0, s), _mm_srai_epi32(a1, s)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(mid + x + 8),
                     _mm_packs_epi32(_mm_srai_epi32(a2, s), _mm_srai_epi32(a3, s)));
  }
  return x;
}

/// The sums of the four int32 lanes of each of a, b, c, d.
inline __m128i lane_sums(__m128i a, __m128i b, __m128i c, __m128i d) {
  const __m128i ab = _mm_add_epi32(_mm_unpacklo_epi32(a, b), _mm_unpackhi_epi32(a, b));
  const __m128i cd = _mm_add_epi32(_mm_unpacklo_epi32(c, d), _mm_unpackhi_epi32(c, d));
  return _mm_add_epi32(_mm_unpacklo_epi64(ab, cd), _mm_unpackhi_epi64(ab, cd));
}

/// Output k's multiply-adds over its taps, `Chunks` (0: n / 8) times 8 int16.
template <int Chunks>
inline __m128i tap_sum(const int16_t* p, const int16_t* w, int64_t n) {
  __m128i acc = _mm_madd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)),
                               _mm_loadu_si128(reinterpret_cast<const __m128i*>(w)));
  const int64_t chunks = Chunks > 0 ? Chunks : n / 8;
  for (int64_t c = 1; c < chunks; ++c) {
    acc = _mm_add_epi32(acc, _mm_madd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8 * c)),
                                            _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 8 * c))));
  }
  return acc;
}

/// The horizontal pass of a table 4 taps wide (footprints of upscaling and mild shrinking), 4
/// outputs at a time, two to a multiply-add.
int64_t horizontal_u8_sse2_4(const int16_t* mid, const int64_t* first, const int16_t* w, int64_t out_w, uint8_t* out) {
  const __m128i round = _mm_set1_epi32(1 << (kFinalShift - 1));
  const auto pair = [&](int64_t k) {
    const __m128i p = _mm_unpacklo_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(mid + first[k])),
                                         _mm_loadl_epi64(reinterpret_cast<const __m128i*>(mid + first[k + 1])));
    return _mm_castsi128_ps(_mm_madd_epi16(p, _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + k * 4))));
  };
  int64_t k = 0;
  for (; k + 4 <= out_w; k += 4) {
    const __m128 a = pair(k), b = pair(k + 2);
    const __m128i sums = _mm_add_epi32(_mm_castps_si128(_mm_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0))),
                                       _mm_castps_si128(_mm_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1))));
    const __m128i v = _mm_srai_epi32(_mm_add_epi32(sums, round), kFinalShift);
    const __m128i v16 = _mm_packs_epi32(v, v);
    const int32_t bytes = _mm_cvtsi128_si32(_mm_packus_epi16(v16, v16));
    std::memcpy(out + k, &bytes, 4);
  }
  return k;
}

/// The horizontal pass, 8 outputs at a time.
template <int Chunks>
int64_t horizontal_u8_sse2(const int16_t* mid, const int64_t* first, const int16_t* w, int64_t n, int64_t out_w,
                           uint8_t* out) {
  const __m128i round = _mm_set1_epi32(1 << (kFinalShift - 1));
  int64_t k = 0;
  for (; k + 8 <= out_w; k += 8) {
    __m128i s[8];
    for (int u = 0; u < 8; ++u) s[u] = tap_sum<Chunks>(mid + first[k + u], w + (k + u) * n, n);
    const __m128i v0 = _mm_srai_epi32(_mm_add_epi32(lane_sums(s[0], s[1], s[2], s[3]), round), kFinalShift);
    const __m128i v1 = _mm_srai_epi32(_mm_add_epi32(lane_sums(s[4], s[5], s[6], s[7]), round), kFinalShift);
    const __m128i v = _mm_packs_epi32(v0, v1);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + k), _mm_packus_epi16(v, v));
  }
  return k;
}
#endif

#if defined(RENSA_RESIZE_SSE2) && defined(__x86_64__) && defined(__GNUC__)
#define RENSA_RESIZE_AVX2 1

bool has_avx2() {
  static const bool yes = cpu_features().avx2;
  return yes;
}

/// vertical_u8_sse2 32 columns at a time.
__attribute__((target("avx2"))) int64_t vertical_u8_avx2(const uint8_t* const* rows, const int16_t* w, int64_t n,
                                                         int64_t width, int16_t* mid) {
  const __m256i zero = _mm256_setzero_si256(), round = _mm256_set1_epi32(1 << (kWeightBits - kMidBits - 1));
  int64_t x = 0;
  for (; x + 32 <= width; x += 32) {
    __m256i a0 = round, a1 = round, a2 = round, a3 = round;
    for (int64_t j = 0; j < n; j += 2) {
      const __m256i r0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[j] + x));
      const __m256i r1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[j + 1] + x));
      const __m256i wj = _mm256_set1_epi32(weight_pair(w[j], w[j + 1]));
      const __m256i lo = _mm256_unpacklo_epi8(r0, r1), hi = _mm256_unpackhi_epi8(r0, r1);
      a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(_mm256_unpacklo_epi8(lo, zero), wj));
      a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(_mm256_unpackhi_epi8(lo, zero), wj));
      a2 = _mm256_add_epi32(a2, _mm256_madd_epi16(_mm256_unpacklo_epi8(hi, zero), wj));
      a3 = _mm256_add_epi32(a3, _mm256_madd_epi16(_mm256_unpackhi_epi8(hi, zero), wj));
    }
    const int s = kWeightBits - kMidBits;
    // Unpacking and packing stay within 128-bit lanes: p01 holds columns 0-7 and 16-23, p23 8-15
    // and 24-31.
    const __m256i p01 = _mm256_packs_epi32(_mm256_srai_epi32(a0, s), _mm256_srai_epi32(a1, s));
    const __m256i p23 = _mm256_packs_epi32(_mm256_srai_epi32(a2, s), _mm256_srai_epi32(a3, s));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(mid + x), _mm256_permute2x128_si256(p01, p23, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(mid + x + 16), _mm256_permute2x128_si256(p01, p23, 0x31));
  }
  return x;
}

/// Outputs k and k + 1 of a table 8 taps wide: their multiply-adds in the two 128-bit lanes.
__attribute__((target("avx2"))) inline __m256i tap_pair(const int16_t* mid, const int64_t* first, const int16_t* w,
                                                        int64_t k) {
  const __m256i p =
      _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(mid + first[k]))),
                              _mm_loadu_si128(reinterpret_cast<const __m128i*>(mid + first[k + 1])), 1);
  return _mm256_madd_epi16(p, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + k * 8)));
}

/// Outputs k to k + 3 of a table 4 taps wide: their multiply-adds, two lanes each.
__attribute__((target("avx2"))) inline __m256i tap_quad(const int16_t* mid, const int64_t* first, const int16_t* w,
                                                        int64_t k) {
  const __m128i p0 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(mid + first[k]));
  const __m128i p1 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(mid + first[k + 1]));
  const __m128i p2 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(mid + first[k + 2]));
  const __m128i p3 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(mid + first[k + 3]));
  const __m256i p =
      _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_unpacklo_epi64(p0, p1)), _mm_unpacklo_epi64(p2, p3), 1);
  return _mm256_madd_epi16(p, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + k * 4)));
}

/// The horizontal pass of a table 4 taps wide, 8 outputs at a time, four to a multiply-add.
__attribute__((target("avx2"))) int64_t horizontal_u8_avx2_4(const int16_t* mid, const int64_t* first, const int16_t* w,
                                                             int64_t out_w, uint8_t* out) {
  const __m256i round = _mm256_set1_epi32(1 << (kFinalShift - 1));
  const __m256i order = _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7);
  int64_t k = 0;
  for (; k + 8 <= out_w; k += 8) {
    // hadd gives outputs 0, 1, 4, 5 in the low half and 2, 3, 6, 7 in the high one.
    const __m256i sums = _mm256_hadd_epi32(tap_quad(mid, first, w, k), tap_quad(mid, first, w, k + 4));
    const __m256i v = _mm256_permutevar8x32_epi32(_mm256_srai_epi32(_mm256_add_epi32(sums, round), kFinalShift), order);
    const __m128i v16 = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + k), _mm_packus_epi16(v16, v16));
  }
  return k;
}

/// The horizontal pass of a table 8 taps wide, 8 outputs at a time.
__attribute__((target("avx2"))) int64_t horizontal_u8_avx2(const int16_t* mid, const int64_t* first, const int16_t* w,
                                                           int64_t out_w, uint8_t* out) {
  const __m256i round = _mm256_set1_epi32(1 << (kFinalShift - 1));
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  int64_t k = 0;
  for (; k + 8 <= out_w; k += 8) {
    const __m256i s0 = tap_pair(mid, first, w, k), s1 = tap_pair(mid, first, w, k + 2);
    const __m256i s2 = tap_pair(mid, first, w, k + 4), s3 = tap_pair(mid, first, w, k + 6);
    // The lane sums come out as outputs 0, 2, 4, 6 in the low half and 1, 3, 5, 7 in the high one.
    const __m256i t01 = _mm256_add_epi32(_mm256_unpacklo_epi32(s0, s1), _mm256_unpackhi_epi32(s0, s1));
    const __m256i t23 = _mm256_add_epi32(_mm256_unpacklo_epi32(s2, s3), _mm256_unpackhi_epi32(s2, s3));
    const __m256i sums = _mm256_add_epi32(_mm256_unpacklo_epi64(t01, t23), _mm256_unpackhi_epi64(t01, t23));
    const __m256i v = _mm256_permutevar8x32_epi32(_mm256_srai_epi32(_mm256_add_epi32(sums, round), kFinalShift), order);
    const __m128i v16 = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + k), _mm_packus_epi16(v16, v16));
  }
  return k;
}
#endif

/// mid[x] = sum_j w[j] * rows[j][x * step] for x < width, in units of 2^-7, rounded; n is even.
void vertical_u8(const uint8_t* const* rows, const int16_t* w, int64_t n, int64_t width, int64_t step, int16_t* mid) {
  constexpr int32_t half = 1 << (kWeightBits - kMidBits - 1);
  int64_t x = 0;
  if (step == 1) {
#ifdef RENSA_RESIZE_AVX2
    if (has_avx2()) x = vertical_u8_avx2(rows, w, n, width, mid);
#endif
#ifdef RENSA_RESIZE_SSE2
    x = vertical_u8_sse2(rows, w, n, width, x, mid);
#endif
  }
  for (; x < width; ++x) {
    int32_t acc = half;
    for (int64_t j = 0; j < n; ++j) acc += w[j] * static_cast<int32_t>(rows[j][x * step]);
    mid[x] = static_cast<int16_t>(acc >> (kWeightBits - kMidBits));
  }
}

/// out[k] = the rounded sum of w[k * n + j] * mid[first[k] + j] over j < n; mid holds n - 1 zeros
/// past its last value.
void horizontal_u8(const int16_t* mid, const int64_t* first, const int16_t* w, int64_t n, int64_t out_w, uint8_t* out) {
  int64_t k = 0;
#ifdef RENSA_RESIZE_AVX2
  if (n == 4 && has_avx2()) k = horizontal_u8_avx2_4(mid, first, w, out_w, out);
  if (n == 8 && has_avx2()) k = horizontal_u8_avx2(mid, first, w, out_w, out);
#endif
#ifdef RENSA_RESIZE_SSE2
  if (k == 0) {
    if (n == 4) {
      k = horizontal_u8_sse2_4(mid, first, w, out_w, out);
    } else if (n == 8) {
      k = horizontal_u8_sse2<1>(mid, first, w, n, out_w, out);
    } else if (n == 16) {
      k = horizontal_u8_sse2<2>(mid, first, w, n, out_w, out);
    } else {
      k = horizontal_u8_sse2<0>(mid, first, w, n, out_w, out);
    }
  }
#endif
  for (; k < out_w; ++k) {
    const int16_t* p = mid + first[k];
    const int16_t* wk = w + k * n;
    int32_t acc = 1 << (kFinalShift - 1);
    for (int64_t j = 0; j < n; ++j) acc += static_cast<int32_t>(wk[j]) * p[j];
    out[k] = static_cast<uint8_t>(std::clamp(acc >> kFinalShift, 0, 255));
  }
}

/// resize_window of a uint8 image in fixed point; false (nothing written) when the quantized weights
/// could put a result more than 1 from the exact one.
bool resize_u8_fixed(const Array& image, int64_t top, int64_t left, int64_t width, const TapTable& tx,
                     const TapTable& ty, Array& out) {
  // The horizontal pass loads 4 or 8 taps at a time, the vertical one pairs rows.
  const FixedTaps qx = quantize(tx, tx.width <= 4 ? 4 : 8), qy = quantize(ty, 2);
  // |result - exact| before the last rounding: 127.5 per unit of weight error in each pass (the
  // errors sum to zero over a footprint of values in [0, 255]) plus half the intermediate's last
  // bit.
  const double bound = 127.5 * (qx.error + qy.error) + 0.5 / (1 << kMidBits);
  if (bound >= 0.5) return false;
  const int64_t channels = image.shape()[0], out_h = out.shape()[1], out_w = out.shape()[2];
  const auto* src = static_cast<const uint8_t*>(image.raw_data());
  uint8_t* dst = out.data<uint8_t>();
  const int64_t sc = image.strides()[0], sh = image.strides()[1], sw = image.strides()[2];
  std::vector<int16_t> mid(static_cast<std::size_t>(width + qx.width), 0);  // zeros past `width`
  std::vector<const uint8_t*> rows(static_cast<std::size_t>(qy.width));
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t i = 0; i < out_h; ++i) {
      const int64_t f = ty.first[static_cast<std::size_t>(i)], n = ty.count[static_cast<std::size_t>(i)];
      for (int64_t j = 0; j < qy.width; ++j) {
        // A padding tap (weight 0) reads the first row again.
        rows[static_cast<std::size_t>(j)] = src + c * sc + (top + f + (j < n ? j : 0)) * sh + left * sw;
      }
      vertical_u8(rows.data(), &qy.weights[static_cast<std::size_t>(i * qy.width)], (n + 1) / 2 * 2, width, sw,
                  mid.data());
      horizontal_u8(mid.data(), tx.first.data(), qx.weights.data(), qx.width, out_w, dst + (c * out_h + i) * out_w);
    }
  }
  return true;
}

// ---- floating point ---------------------------------------------------------------------------

template <class T>
void resize_float(const Array& image, int64_t top, int64_t left, int64_t width, const TapTable& tx, const TapTable& ty,
                  Array& out) {
  using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int64_t channels = image.shape()[0], out_h = out.shape()[1], out_w = out.shape()[2];
  const T* src = static_cast<const T*>(image.raw_data());
  T* dst = out.data<T>();
  const int64_t sc = image.strides()[0], sh = image.strides()[1], sw = image.strides()[2];
  // Weights as float, as the sums of uint8 and float32 images are float (double for float64).
  std::vector<Acc> wx(tx.weights.size()), wy(ty.weights.size());
  std::transform(tx.weights.begin(), tx.weights.end(), wx.begin(),
                 [](double v) { return static_cast<Acc>(static_cast<float>(v)); });
  std::transform(ty.weights.begin(), ty.weights.end(), wy.begin(),
                 [](double v) { return static_cast<Acc>(static_cast<float>(v)); });
  std::vector<Acc> col(static_cast<std::size_t>(width));
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t i = 0; i < out_h; ++i) {
      const int64_t f = ty.first[static_cast<std::size_t>(i)], n = ty.count[static_cast<std::size_t>(i)];
      Acc* a = col.data();
      std::fill(a, a + width, Acc{0});
      for (int64_t j = 0; j < n; ++j) {
        const Acc wj = wy[static_cast<std::size_t>(i * ty.width + j)];
        const T* row = src + c * sc + (top + f + j) * sh + left * sw;
        if (sw == 1) {
          for (int64_t k = 0; k < width; ++k) a[k] += wj * static_cast<Acc>(row[k]);
        } else {
          for (int64_t k = 0; k < width; ++k) a[k] += wj * static_cast<Acc>(row[k * sw]);
        }
      }
      T* orow = dst + (c * out_h + i) * out_w;
      for (int64_t k = 0; k < out_w; ++k) {
        // Only the footprint's taps: a NaN or infinity beside it stays out.
        const Acc* p = a + tx.first[static_cast<std::size_t>(k)];
        const Acc* wt = &wx[static_cast<std::size_t>(k * tx.width)];
        Acc v = 0;
        for (int64_t j = 0, m = tx.count[static_cast<std::size_t>(k)]; j < m; ++j) v += wt[j] * p[j];
        if constexpr (std::is_same_v<T, uint8_t>) {
          // Round half up and clamp, for the finite, non-negative sums here.
          orow[k] = static_cast<uint8_t>(static_cast<int>(std::min(std::max(v + Acc(0.5), Acc(0)), Acc(255))));
        } else {
          orow[k] = static_cast<T>(v);
        }
      }
    }
  }
}

}  // namespace

Array resize_window(const Array& image, int64_t top, int64_t left, int64_t height, int64_t width, int64_t out_height,
                    int64_t out_width, Interpolation interpolation, bool flip_horizontal) {
  const char* who = "resize_window";
  check_image(who, image);
  const int64_t channels = image.shape()[0], in_h = image.shape()[1], in_w = image.shape()[2];
  RENSA_CHECK(top >= 0 && left >= 0 && height >= 1 && width >= 1 && top + height <= in_h && left + width <= in_w,
              ShapeError, who, ": the window at (", top, ", ", left, ") of size (", height, ", ", width,
              ") must be non-empty and inside the image of shape ", image.shape());
  RENSA_CHECK(out_height >= 1 && out_width >= 1, ShapeError, who, ": the output size (", out_height, ", ", out_width,
              ") must be at least (1, 1)");
  const TapTable tx = taps_for(width, out_width, interpolation, flip_horizontal);
  const TapTable ty = taps_for(height, out_height, interpolation, false);
  Array out = Array::empty(Shape{channels, out_height, out_width}, image.dtype(), image.device());
  if (image.dtype() == Dtype::uint8 && resize_u8_fixed(image, top, left, width, tx, ty, out)) return out;
  dispatch_image(image.dtype(), who, [&]<class T>() { resize_float<T>(image, top, left, width, tx, ty, out); });
  return out;
}

// ---- Resize ---------------------------------------------------------------------------------------

Resize::Resize(ResizeOptions options) : options_(options) {
  RENSA_CHECK(options_.size.has_value() != options_.shorter_side.has_value(), ValueError,
              "Resize: set exactly one of size and shorter_side");
  if (options_.size) {
    RENSA_CHECK((*options_.size)[0] >= 1 && (*options_.size)[1] >= 1, ValueError, "Resize: size must be >= 1, got (",
                (*options_.size)[0], ", ", (*options_.size)[1], ")");
  } else {
    RENSA_CHECK(*options_.shorter_side >= 1, ValueError, "Resize: shorter_side must be >= 1, got ",
                *options_.shorter_side);
  }
}

Example Resize::operator()(Example example) const {
  Array& image = image_of("Resize", example);
  image = apply(image);
  return example;
}

Array Resize::apply(const Array& image) const {
  check_image("Resize", image);
  const int64_t h = image.shape()[1], w = image.shape()[2];
  RENSA_CHECK(h >= 1 && w >= 1, ShapeError, "Resize: the image of shape ", image.shape(), " is empty");
  int64_t oh, ow;
  if (options_.size) {
    oh = (*options_.size)[0];
    ow = (*options_.size)[1];
  } else {
    RENSA_CHECK(options_.shorter_side.has_value(), ValueError, "Resize: neither size nor shorter_side is set");
    const int64_t s = *options_.shorter_side;
    // As torchvision: the shorter side becomes s, the longer int(s * long / short).
    if (h <= w) {
      oh = s;
      ow = std::max<int64_t>(1, s * w / h);
    } else {
      ow = s;
      oh = std::max<int64_t>(1, s * h / w);
    }
  }
  if (oh == h && ow == w) return image;
  return resize_window(image, 0, 0, h, w, oh, ow, options_.interpolation);
}

// ---- CenterCrop -----------------------------------------------------------------------------------

CenterCrop::CenterCrop(std::array<int64_t, 2> size) : size_(size) {
  RENSA_CHECK(size_[0] >= 1 && size_[1] >= 1, ValueError, "CenterCrop: size must be >= 1, got (", size_[0], ", ",
              size_[1], ")");
}

Example CenterCrop::operator()(Example example) const {
  Array& image = image_of("CenterCrop", example);
  image = apply(image);
  return example;
}

Array CenterCrop::apply(const Array& image) const {
  check_image("CenterCrop", image);
  const int64_t h = image.shape()[1], w = image.shape()[2];
  RENSA_CHECK(size_[0] <= h && size_[1] <= w, ShapeError, "CenterCrop: the crop (", size_[0], ", ", size_[1],
              ") is larger than the image of shape ", image.shape());
  // Chainer's center_crop: the window starts at int(round((H - h) / 2)).
  const auto top = static_cast<int64_t>(std::nearbyint(static_cast<double>(h - size_[0]) / 2.0));
  const auto left = static_cast<int64_t>(std::nearbyint(static_cast<double>(w - size_[1]) / 2.0));
  return crop_and_flip(image, 0, top, left, size_[0], size_[1]);
}

// ---- RandomResizedCrop ----------------------------------------------------------------------------

RandomResizedCrop::RandomResizedCrop(RandomResizedCropOptions options) : options_(options), stream_(options.seed, 3) {
  const auto& o = options_;
  RENSA_CHECK(o.size[0] >= 1 && o.size[1] >= 1, ValueError, "RandomResizedCrop: size must be >= 1, got (", o.size[0],
              ", ", o.size[1], ")");
  RENSA_CHECK(o.scale[0] > 0 && o.scale[0] <= o.scale[1] && o.scale[1] <= 1.0, ValueError,
              "RandomResizedCrop: scale must satisfy 0 < min <= max <= 1, got (", o.scale[0], ", ", o.scale[1], ")");
  RENSA_CHECK(o.ratio[0] > 0 && o.ratio[0] <= o.ratio[1] && std::isfinite(o.ratio[1]), ValueError,
              "RandomResizedCrop: ratio must satisfy 0 < min <= max, got (", o.ratio[0], ", ", o.ratio[1], ")");
}

std::array<int64_t, 4> RandomResizedCrop::window(int64_t height, int64_t width) const {
  const double area = static_cast<double>(height) * static_cast<double>(width);
  const double log_r0 = std::log(options_.ratio[0]), log_r1 = std::log(options_.ratio[1]);
  auto unit = [](uint32_t hi, uint32_t lo) {
    return static_cast<double>((static_cast<uint64_t>(hi) << 21) ^ (lo >> 11)) * 0x1p-53;
  };
  for (int attempt = 0; attempt < 10; ++attempt) {
    const std::array<uint32_t, 4> r = stream_.next();
    const double target = area * (options_.scale[0] + (options_.scale[1] - options_.scale[0]) * unit(r[0], r[1]));
    const double ratio = std::exp(log_r0 + (log_r1 - log_r0) * unit(r[2], r[3]));
    const auto w = static_cast<int64_t>(std::nearbyint(std::sqrt(target * ratio)));
    const auto h = static_cast<int64_t>(std::nearbyint(std::sqrt(target / ratio)));
    if (w >= 1 && h >= 1 && w <= width && h <= height) {
      const std::array<uint32_t, 4> p = stream_.next();
      return {detail::uniform_below(p[0], p[1], height - h + 1), detail::uniform_below(p[2], p[3], width - w + 1), h,
              w};
    }
  }
  // Fallback: the central window, its ratio clamped into range.
  const double in_ratio = static_cast<double>(width) / static_cast<double>(height);
  int64_t w = width, h = height;
  if (in_ratio < options_.ratio[0]) {
    h = std::max<int64_t>(1, static_cast<int64_t>(std::nearbyint(static_cast<double>(w) / options_.ratio[0])));
  } else if (in_ratio > options_.ratio[1]) {
    w = std::max<int64_t>(1, static_cast<int64_t>(std::nearbyint(static_cast<double>(h) * options_.ratio[1])));
  }
  return {(height - h) / 2, (width - w) / 2, h, w};
}

Example RandomResizedCrop::operator()(Example example) const {
  Array& image = image_of("RandomResizedCrop", example);
  image = apply(image);
  return example;
}

Array RandomResizedCrop::apply(const Array& image) const {
  check_image("RandomResizedCrop", image);
  RENSA_CHECK(image.shape()[1] >= 1 && image.shape()[2] >= 1, ShapeError, "RandomResizedCrop: the image of shape ",
              image.shape(), " is empty");
  const auto [top, left, h, w] = window(image.shape()[1], image.shape()[2]);
  return resize_window(image, top, left, h, w, options_.size[0], options_.size[1], options_.interpolation);
}

}  // namespace rensa::datasets::transforms
