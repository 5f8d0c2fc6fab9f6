#pragma once
// The LSTM and GRU cells' arithmetic over a range of rows, shared by the host backends (the cpu
// backend runs row ranges in parallel). One pass reads a row's gate pre-activations and writes
// everything the step produces; the backward pass likewise. Formulas in KernelTable's lstm_ and
// gru_ slots; sigmoid and tanh from vector_math.h, so the loops vectorize.
#include <cmath>

#include "rensa/core/backend.h"
#include "src/backends/common/scalar_ops.h"
#include "src/backends/common/vector_math.h"

namespace rensa::backends::host {

template <class T>
struct LstmRows {
  const T *x, *r, *c_prev;  // r may be null
  T *act, *c, *h;
  int64_t units;            // H
};

// Always inlined, and without inner lambdas or branches, so that a caller compiled for a wider
// instruction set (the cpu backend's AVX2 clone) vectorizes the loop for it. kHasR: r is not null.
template <bool kHasR, class T>
[[gnu::always_inline]] inline void lstm_forward_loop(const LstmRows<T>& p, const LstmGates& g, int64_t row_begin,
                                                     int64_t row_end) {
  using C = compute_t<T>;
  const int64_t H = p.units, W = 4 * H, us = g.unit_stride;
  for (int64_t b = row_begin; b < row_end; ++b) {
    const T* x = p.x + b * W;
    const T* r = kHasR ? p.r + b * W : p.x;
    T* act = p.act + b * W;
    const T* cp = p.c_prev + b * H;
    T* c = p.c + b * H;
    T* h = p.h + b * H;
#pragma omp simd
    for (int64_t j = 0; j < H; ++j) {
      const int64_t base = j * us;
      C za = C(x[base + g.a]), zi = C(x[base + g.i]), zf = C(x[base + g.f]), zo = C(x[base + g.o]);
      if constexpr (kHasR) {
        za += C(r[base + g.a]);
        zi += C(r[base + g.i]);
        zf += C(r[base + g.f]);
        zo += C(r[base + g.o]);
      }
      const C a = vmath::tanh(za);
      const C i = vmath::sigmoid(zi), f = vmath::sigmoid(zf), o = vmath::sigmoid(zo);
      const C cn = a * i + f * C(cp[j]);
      act[base + g.a] = T(a);
      act[base + g.i] = T(i);
      act[base + g.f] = T(f);
      act[base + g.o] = T(o);
      c[j] = T(cn);
      h[j] = T(o * vmath::tanh(cn));
    }
  }
}

template <class T>
[[gnu::always_inline]] inline void lstm_forward_rows(const LstmRows<T>& p, const LstmGates& g, int64_t row_begin,
                                                     int64_t row_end) {
  if (p.r != nullptr) {
    lstm_forward_loop<true>(p, g, row_begin, row_end);
  } else {
    lstm_forward_loop<false>(p, g, row_begin, row_end);
  }
}

template <class T>
struct LstmGradRows {
  const T *act, *c_prev, *c, *gc, *gh;  // gc, gh may be null
  T *gx, *gc_prev;
  int64_t units;
};

template <bool kHasGc, bool kHasGh, class T>
[[gnu::always_inline]] inline void lstm_backward_loop(const LstmGradRows<T>& p, const LstmGates& g,
                                                      int64_t row_begin, int64_t row_end) {
  using C = compute_t<T>;
  const int64_t H = p.units, W = 4 * H, us = g.unit_stride;
  for (int64_t b = row_begin; b < row_end; ++b) {
    const T* act = p.act + b * W;
    const T* cp = p.c_prev + b * H;
    const T* cc = p.c + b * H;
    const T* gc = kHasGc ? p.gc + b * H : cp;
    const T* gh = kHasGh ? p.gh + b * H : cp;
    T* gx = p.gx + b * W;
    T* gcp = p.gc_prev + b * H;
#pragma omp simd
    for (int64_t j = 0; j < H; ++j) {
      const int64_t base = j * us;
      const C a = C(act[base + g.a]), i = C(act[base + g.i]), f = C(act[base + g.f]), o = C(act[base + g.o]);
      const C tc = vmath::tanh(C(cc[j]));
      const C dh = kHasGh ? C(gh[j]) : C(0);
      const C dc = (kHasGc ? C(gc[j]) : C(0)) + dh * o * (C(1) - tc * tc);
      gx[base + g.a] = T(dc * i * (C(1) - a * a));
      gx[base + g.i] = T(dc * a * i * (C(1) - i));
      gx[base + g.f] = T(dc * C(cp[j]) * f * (C(1) - f));
      gx[base + g.o] = T(dh * tc * o * (C(1) - o));
      gcp[j] = T(dc * f);
    }
  }
}

template <class T>
[[gnu::always_inline]] inline void lstm_backward_rows(const LstmGradRows<T>& p, const LstmGates& g,
                                                      int64_t row_begin, int64_t row_end) {
  const bool gc = p.gc != nullptr, gh = p.gh != nullptr;
  if (gc && gh) {
    lstm_backward_loop<true, true>(p, g, row_begin, row_end);
  } else if (gc) {
    lstm_backward_loop<true, false>(p, g, row_begin, row_end);
  } else if (gh) {
    lstm_backward_loop<false, true>(p, g, row_begin, row_end);
  } else {
    lstm_backward_loop<false, false>(p, g, row_begin, row_end);
  }
}

/// The row structs of one lstm_forward / lstm_backward call.
template <class T>
LstmRows<T> lstm_rows(const Array& x, const Array& r, const Array& c_prev, const Array& act, const Array& c,
                      const Array& h) {
  return {x.data<T>(), r.is_null() ? nullptr : r.data<T>(), c_prev.data<T>(), act.data<T>(), c.data<T>(),
          h.data<T>(), c.ndim() == 2 ? c.shape()[1] : 0};
}

template <class T>
LstmGradRows<T> lstm_grad_rows(const Array& act, const Array& c_prev, const Array& c, const Array& gc,
                               const Array& gh, const Array& gx, const Array& gc_prev) {
  return {act.data<T>(), c_prev.data<T>(), c.data<T>(), gc.is_null() ? nullptr : gc.data<T>(),
          gh.is_null() ? nullptr : gh.data<T>(), gx.data<T>(), gc_prev.data<T>(), c.ndim() == 2 ? c.shape()[1] : 0};
}

// ---- GRU (blocks r, z, n of H columns) ----

template <class T>
struct GruRows {
  const T *x, *r, *h_prev;
  T *act, *h;
  int64_t units;
};

template <class T>
[[gnu::always_inline]] inline void gru_forward_rows(const GruRows<T>& p, int64_t row_begin, int64_t row_end) {
  using C = compute_t<T>;
  const int64_t H = p.units, W = 3 * H;
  for (int64_t b = row_begin; b < row_end; ++b) {
    const T* x = p.x + b * W;
    const T* r = p.r + b * W;
    const T* hp = p.h_prev + b * H;
    T* act = p.act + b * W;
    T* h = p.h + b * H;
#pragma omp simd
    for (int64_t j = 0; j < H; ++j) {
      const C g = vmath::sigmoid(C(x[j]) + C(r[j]));
      const C z = vmath::sigmoid(C(x[H + j]) + C(r[H + j]));
      const C n = vmath::tanh(C(x[2 * H + j]) + g * C(r[2 * H + j]));
      act[j] = T(g);
      act[H + j] = T(z);
      act[2 * H + j] = T(n);
      h[j] = T((C(1) - z) * n + z * C(hp[j]));
    }
  }
}

template <class T>
struct GruGradRows {
  const T *act, *r, *h_prev, *gh;
  T *gx, *gr, *gh_prev;
  int64_t units;
};

template <class T>
[[gnu::always_inline]] inline void gru_backward_rows(const GruGradRows<T>& p, int64_t row_begin, int64_t row_end) {
  using C = compute_t<T>;
  const int64_t H = p.units, W = 3 * H;
  for (int64_t b = row_begin; b < row_end; ++b) {
    const T* act = p.act + b * W;
    const T* r = p.r + b * W;
    const T* hp = p.h_prev + b * H;
    const T* gh = p.gh + b * H;
    T* gx = p.gx + b * W;
    T* gr = p.gr + b * W;
    T* ghp = p.gh_prev + b * H;
#pragma omp simd
    for (int64_t j = 0; j < H; ++j) {
      const C g = C(act[j]), z = C(act[H + j]), n = C(act[2 * H + j]), dh = C(gh[j]);
      const C dn = dh * (C(1) - z) * (C(1) - n * n);
      const C dz = dh * (C(hp[j]) - n) * z * (C(1) - z);
      const C dg = dn * C(r[2 * H + j]) * g * (C(1) - g);
      gx[j] = T(dg);
      gx[H + j] = T(dz);
      gx[2 * H + j] = T(dn);
      gr[j] = T(dg);
      gr[H + j] = T(dz);
      gr[2 * H + j] = T(dn * g);
      ghp[j] = T(dh * z);
    }
  }
}

template <class T>
GruRows<T> gru_rows(const Array& x, const Array& r, const Array& h_prev, const Array& act, const Array& h) {
  return {x.data<T>(), r.data<T>(), h_prev.data<T>(), act.data<T>(), h.data<T>(), h.ndim() == 2 ? h.shape()[1] : 0};
}

template <class T>
GruGradRows<T> gru_grad_rows(const Array& act, const Array& r, const Array& h_prev, const Array& gh, const Array& gx,
                             const Array& gr, const Array& gh_prev) {
  return {act.data<T>(), r.data<T>(), h_prev.data<T>(), gh.data<T>(), gx.data<T>(), gr.data<T>(),
          gh_prev.data<T>(), h_prev.ndim() == 2 ? h_prev.shape()[1] : 0};
}

}  // namespace rensa::backends::host
