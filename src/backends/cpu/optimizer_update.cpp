// cpu kernel: fused optimizer steps. Parameter, gradient and state are read and written in one
// pass (an optimizer step is memory bound: one pass instead of one per arithmetic op), vectorized,
// and split into per-thread chunks above the parallel grain by for_each_run.
#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "src/backends/common/scalar_ops.h"
#include "src/backends/cpu/kernels.h"
#include "src/backends/cpu/loops.h"

namespace rensa::backends::cpu {
namespace {

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
    static_assert(S == 3);
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
const bool kHaveAvx2 = __builtin_cpu_supports("avx2");
#endif

// Calls step(param, grad, state...) on element references of every position; S state arrays.
template <class T, std::size_t S, class Step>
void fused(const Array& param, const Array& grad, const Array* state, Step step) {
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
      if (kHaveAvx2) return unit_loop_avx2<T, S>(r.n, p, g, s.data(), step);
#endif
      return unit_loop<T, S>(r.n, p, g, s.data(), step);
    }
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      for (int64_t i = 0; i < r.n; ++i) {
        step(p[i * r.stride[0]], g[i * r.stride[1]], s[K][i * r.stride[2 + K]]...);
      }
    }
    (std::make_index_sequence<S>());
  });
}

template <class T>
void update_typed(OptimizerKind kind, const Array& param, const Array& grad, const Array* state, const double* hp) {
  using C = compute_t<T>;
  switch (kind) {
    case OptimizerKind::sgd: {
      const C lr = C(hp[0]);
      fused<T, 0>(param, grad, state, [=](T& p, const T& g) { p = T(C(p) - lr * C(g)); });
      return;
    }
    case OptimizerKind::momentum_sgd: {
      const C lr = C(hp[0]), mom = C(hp[1]);
      fused<T, 1>(param, grad, state, [=](T& p, const T& g, T& v) {
        const C vn = mom * C(v) - lr * C(g);
        v = T(vn);
        p = T(C(p) + vn);
      });
      return;
    }
    case OptimizerKind::nesterov_ag: {
      const C lr = C(hp[0]), mom = C(hp[1]);
      const C mom2 = mom * mom, glr = (C(1) + mom) * lr;
      fused<T, 1>(param, grad, state, [=](T& p, const T& g, T& v) {
        const C gc = C(g);
        const C vn = mom * C(v) - lr * gc;
        v = T(vn);
        p = T(C(p) + mom2 * vn - glr * gc);
      });
      return;
    }
    case OptimizerKind::adam: {
      const C alpha_t = C(hp[0]), one_m_b1 = C(1.0 - hp[1]), one_m_b2 = C(1.0 - hp[2]), eps = C(hp[3]);
      const C eta = C(hp[4]), wd = C(hp[5]);
      // Decoupled weight decay (AdamW): the decay term is not scaled by the adaptive step.
      auto apply = [=](T& p, C m, C vh) {
        const C pc = C(p);
        p = T(pc - eta * (alpha_t * m / (std::sqrt(vh) + eps) + wd * pc));
      };
      if (hp[6] != 0.0) {
        fused<T, 3>(param, grad, state, [=](T& p, const T& g, T& m, T& v, T& vhat) {
          const C gc = C(g), mc = C(m), vc = C(v);
          m = T(mc + one_m_b1 * (gc - mc));
          v = T(vc + one_m_b2 * (gc * gc - vc));
          // AMSGrad: the running maximum of the stored second moments.
          const C vh = std::max(C(vhat), C(v));
          vhat = T(vh);
          apply(p, C(m), vh);
        });
      } else {
        fused<T, 2>(param, grad, state, [=](T& p, const T& g, T& m, T& v) {
          const C gc = C(g), mc = C(m), vc = C(v);
          m = T(mc + one_m_b1 * (gc - mc));
          v = T(vc + one_m_b2 * (gc * gc - vc));
          apply(p, C(m), C(v));
        });
      }
      return;
    }
    case OptimizerKind::rmsprop: {
      const C lr = C(hp[0]), alpha = C(hp[1]), one_m_alpha = C(1.0 - hp[1]), eps = C(hp[2]);
      fused<T, 1>(param, grad, state, [=](T& p, const T& g, T& ms) {
        const C gc = C(g);
        const C msn = alpha * C(ms) + one_m_alpha * gc * gc;
        ms = T(msn);
        p = T(C(p) - lr * gc / (std::sqrt(msn) + eps));
      });
      return;
    }
    case OptimizerKind::adagrad: {
      const C lr = C(hp[0]), eps = C(hp[1]);
      fused<T, 1>(param, grad, state, [=](T& p, const T& g, T& h) {
        const C gc = C(g);
        const C hn = C(h) + gc * gc;
        h = T(hn);
        p = T(C(p) - lr * gc / (std::sqrt(hn) + eps));
      });
      return;
    }
  }
  RENSA_THROW(ValueError, "cpu optimizer_update: invalid optimizer kind ", static_cast<int>(kind));
}

}  // namespace

void optimizer_update(OptimizerKind kind, const Array& param, const Array& grad, const Array* state, int n_state,
                      const double* hp) {
  const int expected = kind == OptimizerKind::sgd ? 0 : kind == OptimizerKind::adam ? (hp[6] != 0.0 ? 3 : 2) : 1;
  RENSA_CHECK(n_state == expected, ValueError, "cpu optimizer_update: kind ", static_cast<int>(kind), " takes ",
              expected, " state arrays, got ", n_state);
  dispatch_floating(param.dtype(), "cpu optimizer_update",
                    [&]<class T>() { update_typed<T>(kind, param, grad, state, hp); });
}

}  // namespace rensa::backends::cpu
