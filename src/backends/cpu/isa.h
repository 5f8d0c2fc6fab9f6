#pragma once
// The widest vector instruction set the cpu backend's own loops may use on this machine, and a way
// to run a loop compiled for it. The library is built for baseline x86-64 (SSE2), so a loop that is
// bound by arithmetic rather than memory (16-bit conversions, double accumulation) runs at a
// quarter or an eighth of the width the CPU has. with_widest_isa(f) calls f inside a function
// compiled for AVX2 or AVX-512 (flatten inlines f's body, and what it calls, into it), chosen once
// from cpu_features(), so RENSA_MAX_CPU_ISA caps it. -ffp-contract=off (src/CMakeLists.txt) keeps
// the wide clones' rounding identical to the portable loop's.
#include "rensa/core/cpu_features.h"

namespace rensa::backends::cpu {

enum class Isa { baseline, avx2, avx512 };

inline Isa widest_isa() {
  static const Isa isa = [] {
    const CpuFeatures& f = cpu_features();
    if (f.avx512f) return Isa::avx512;
    return f.avx2 ? Isa::avx2 : Isa::baseline;
  }();
  return isa;
}

#if defined(__x86_64__) && defined(__GNUC__)
namespace isa_detail {
template <class F>
[[gnu::flatten]] __attribute__((target("avx2"))) void call_avx2(const F& f) {
  f();
}
template <class F>
[[gnu::flatten]] __attribute__((target("avx2,avx512f,avx512bw,avx512vl,avx512dq"))) void call_avx512(const F& f) {
  f();
}
}  // namespace isa_detail

/// Calls f() compiled for the widest instruction set of widest_isa(). Meant for a loop over one
/// range (no OpenMP region inside: an outlined region keeps the baseline).
template <class F>
void with_widest_isa(const F& f) {
  switch (widest_isa()) {
    case Isa::avx512:
      isa_detail::call_avx512(f);
      return;
    case Isa::avx2:
      isa_detail::call_avx2(f);
      return;
    default:
      f();
  }
}
#else
template <class F>
void with_widest_isa(const F& f) {
  f();
}
#endif

}  // namespace rensa::backends::cpu
