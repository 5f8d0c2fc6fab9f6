#include "src/mn/half_convert.h"

#include <cstdint>
#include <cstring>

#include "rensa/core/cpu_features.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define RENSA_X86 1
#endif

namespace rensa::mn::detail {
namespace {

#ifdef RENSA_X86
bool has_f16c() {
  static const bool yes = cpu_features().avx2 && cpu_features().f16c;
  return yes;
}

__attribute__((target("avx2,f16c"))) void half_to_float_f16c(const Half* in, float* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) out[i] = static_cast<float>(in[i]);
}

__attribute__((target("avx2,f16c"))) void float_to_half_f16c(const float* in, Half* out, std::size_t n, float scale) {
  const __m256 s = _mm256_set1_ps(scale);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(in + i), s);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i) out[i] = Half(in[i] * scale);
}

// bfloat16 is the upper half of a float: plain integer arithmetic, which AVX2 does 8 at a time.
__attribute__((target("avx2"))) void bf16_to_float_avx2(const BFloat16* in, float* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    const __m256i x = _mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16);
    _mm256_storeu_ps(out + i, _mm256_castsi256_ps(x));
  }
  for (; i < n; ++i) out[i] = static_cast<float>(in[i]);
}

__attribute__((target("avx2"))) void float_to_bf16_avx2(const float* in, BFloat16* out, std::size_t n, float scale) {
  const __m256 s = _mm256_set1_ps(scale);
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
  const __m256i one = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7fff), quiet = _mm256_set1_epi32(0x400000);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i x = _mm256_castps_si256(_mm256_mul_ps(_mm256_loadu_ps(in + i), s));
    // Round to nearest even: add 0x7fff plus the lowest kept bit; NaN: keep it quiet instead.
    const __m256i rounded =
        _mm256_add_epi32(x, _mm256_add_epi32(bias, _mm256_and_si256(_mm256_srli_epi32(x, 16), one)));
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, abs_mask), inf);
    const __m256i r = _mm256_blendv_epi8(rounded, _mm256_or_si256(x, quiet), nan);
    // The upper 16 bits of each lane, packed: shift down, then pack with unsigned saturation (exact
    // because the values fit 16 bits) and undo the lane interleaving.
    const __m256i hi = _mm256_srli_epi32(r, 16);
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(hi, hi), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_castsi256_si128(packed));
  }
  for (; i < n; ++i) out[i] = BFloat16(in[i] * scale);
}
#else
bool has_f16c() {
  return false;
}
void half_to_float_f16c(const Half*, float*, std::size_t) {}
void float_to_half_f16c(const float*, Half*, std::size_t, float) {}
void bf16_to_float_avx2(const BFloat16*, float*, std::size_t) {}
void float_to_bf16_avx2(const float*, BFloat16*, std::size_t, float) {}
#endif

}  // namespace

void to_float(const Half* in, float* out, std::size_t n) {
  if (has_f16c()) return half_to_float_f16c(in, out, n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(in[i]);
}

void to_float(const BFloat16* in, float* out, std::size_t n) {
  if (has_f16c()) return bf16_to_float_avx2(in, out, n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(in[i]);
}

void from_float(const float* in, Half* out, std::size_t n, float scale) {
  if (has_f16c()) return float_to_half_f16c(in, out, n, scale);
  for (std::size_t i = 0; i < n; ++i) out[i] = Half(in[i] * scale);
}

void from_float(const float* in, BFloat16* out, std::size_t n, float scale) {
  if (has_f16c()) return float_to_bf16_avx2(in, out, n, scale);
  for (std::size_t i = 0; i < n; ++i) out[i] = BFloat16(in[i] * scale);
}

}  // namespace rensa::mn::detail
