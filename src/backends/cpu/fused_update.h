#pragma once
// The cpu loop of fused optimizer steps: parameter, gradient and state are read and written in one
// pass (an optimizer step is memory bound: one pass instead of one per arithmetic op), vectorized,
// and split into per-thread chunks above the parallel grain by for_each_run. The step itself comes
// from the optimizer (src/backends/fused_update.h).
#include <array>
#include <cstdint>
#include <utility>

#include "rensa/core/cpu_features.h"
#include "src/backends/cpu/loops.h"

namespace rensa::backends::cpu {
namespace fused_detail {

// The contiguous loop: step(p[i], g[i], s0[i], ...). Written without inner lambdas so that the AVX2
// clone below compiles all of it (a lambda's body would not inherit the target attribute); `step` is
// inlined into each clone.
template <class T, std::size_t S, class Step>
inline void unit_loop(int64_t n, T* p, const T* g, T* const* s, Step step) {
  if constexpr (S == 0) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) step(p[i], g[i]);
  } else if constexpr (S == 1) {
    T* s0 = s[0];
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) step(p[i], g[i], s0[i]);
  } else if constexpr (S == 2) {
    T *s0 = s[0], *s1 = s[1];
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) step(p[i], g[i], s0[i], s1[i]);
  } else {
    static_assert(S == 3, "at most 3 state arrays");
    T *s0 = s[0], *s1 = s[1], *s2 = s[2];
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) step(p[i], g[i], s0[i], s1[i], s2[i]);
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
// Adam's and RMSprop's sqrt and division make the update compute bound even for buffers that fit in
// cache; 8 lanes instead of 4 halve that. Same IEEE operations, so the results are bit-identical.
template <class T, std::size_t S, class Step>
__attribute__((target("avx2"))) void unit_loop_avx2(int64_t n, T* p, const T* g, T* const* s, Step step) {
  unit_loop<T, S>(n, p, g, s, step);
}
inline bool have_avx2() {
  static const bool yes = cpu_features().avx2;
  return yes;
}
#endif

}  // namespace fused_detail

/// Calls step(param, grad, state...) on element references (type T) of every position; S state
/// arrays, all of param's shape.
template <class T, std::size_t S, class Step>
void fused_update(const Array& param, const Array& grad, const Array* state, Step step) {
  constexpr std::size_t N = 2 + S;
  std::array<const Array*, N> arrays{&param, &grad};
  for (std::size_t k = 0; k < S; ++k) arrays[2 + k] = &state[k];
  for_each_run<N>(arrays, [&](const Run<N>& r) {
    T* p = reinterpret_cast<T*>(r.ptr[0]);
    const T* g = reinterpret_cast<const T*>(r.ptr[1]);
    std::array<T*, S + 1> s{};  // one spare slot: no zero-length array when S is 0
    bool unit = r.stride[0] == 1 && r.stride[1] == 1;
    for (std::size_t k = 0; k < S; ++k) {
      s[k] = reinterpret_cast<T*>(r.ptr[2 + k]);
      unit = unit && r.stride[2 + k] == 1;
    }
    if (unit) {
#if defined(__x86_64__) && defined(__GNUC__)
      if (fused_detail::have_avx2()) return fused_detail::unit_loop_avx2<T, S>(r.n, p, g, s.data(), step);
#endif
      return fused_detail::unit_loop<T, S>(r.n, p, g, s.data(), step);
    }
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      for (int64_t i = 0; i < r.n; ++i) {
        step(p[i * r.stride[0]], g[i * r.stride[1]], s[K][i * r.stride[2 + K]]...);
      }
    }
    (std::make_index_sequence<S>());
  });
}

}  // namespace rensa::backends::cpu
