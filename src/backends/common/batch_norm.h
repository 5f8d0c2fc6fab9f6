#pragma once
// Batch normalization's passes over one sub-batch, shared by the host backends. A sub-batch's
// positions are its (example, spatial) pairs; each holds C channel values at stride sc (1 for
// channels-last and 2-d inputs, where the channel loop vectorizes). A backend supplies how the
// positions are split: `sums(positions, body)` runs body(begin, end, acc) over ranges of them, each
// adding into a zeroed acc of 2C doubles, and returns the total; `each(positions, body)` runs
// body(begin, end) over ranges. The reference backend runs one range, the cpu backend one per thread.
// A sub-batch is read from memory once per pass, and its passes follow each other, so at the batch
// sizes of training (a few MB a sub-batch) the later passes find it in cache.
#include <cmath>
#include <cstdint>
#include <vector>

#include "rensa/core/array.h"
#include "src/backends/common/scalar_ops.h"

namespace rensa::backends::host {

struct BnGeometry {
  int64_t C = 0, S = 0, K = 1, G = 0;  // channels, positions per example, sub-batches, examples each
  int64_t sn = 0, sc = 0, ss = 0;      // strides of x (and y, gy, gx), in elements
  int64_t positions() const { return G * S; }
  // The element offset of position p of sub-batch k.
  int64_t offset(int64_t k, int64_t p) const { return (k * G + p / S) * sn + (p % S) * ss; }
};

inline BnGeometry bn_geometry(const Array& x, int64_t groups) {
  const auto& sh = x.shape();
  const auto& st = x.strides();
  return {sh[1], sh[2], groups, sh[0] / groups, st[0], st[1], st[2]};
}

template <class T>
double bn_load(const T& v) {
  return static_cast<double>(static_cast<compute_t<T>>(v));
}

// acc[c] += x and acc[C + c] += (x - center[c])^2 (center null: the first only), positions [b, e).
template <class T>
void bn_moments(const BnGeometry& g, const T* x, int64_t k, int64_t b, int64_t e, const double* center, double* acc) {
  const int64_t C = g.C, sc = g.sc;
  for (int64_t p = b; p < e; ++p) {
    const T* r = x + g.offset(k, p);
    if (center == nullptr && sc == 1) {
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) acc[c] += bn_load(r[c]);
    } else if (center == nullptr) {
      for (int64_t c = 0; c < C; ++c) acc[c] += bn_load(r[c * sc]);
    } else if (sc == 1) {
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) {
        const double d = bn_load(r[c]) - center[c];
        acc[C + c] += d * d;
      }
    } else {
      for (int64_t c = 0; c < C; ++c) {
        const double d = bn_load(r[c * sc]) - center[c];
        acc[C + c] += d * d;
      }
    }
  }
}

// y = x scale[c] + shift[c] in T's compute type, positions [b, e). convert<T>, not T(...): a functional
// cast to a 16-bit type under omp simd is an object temporary that GCC 12 does not vectorize.
template <class T, class CT = compute_t<T>>
void bn_affine(const BnGeometry& g, const T* x, T* y, int64_t k, int64_t b, int64_t e, const CT* scale,
               const CT* shift) {
  const int64_t C = g.C, sc = g.sc;
  for (int64_t p = b; p < e; ++p) {
    const int64_t o = g.offset(k, p);
    const T* r = x + o;
    T* w = y + o;
    if (sc == 1) {
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) w[c] = convert<T>(CT(r[c]) * scale[c] + shift[c]);
    } else {
      for (int64_t c = 0; c < C; ++c) w[c * sc] = convert<T>(CT(r[c * sc]) * scale[c] + shift[c]);
    }
  }
}

// acc[c] += gy and acc[C + c] += gy (x - mean[c]), positions [b, e).
template <class T>
void bn_grad_sums(const BnGeometry& g, const T* x, const T* gy, int64_t k, int64_t b, int64_t e, const double* mean,
                  double* acc) {
  const int64_t C = g.C, sc = g.sc;
  for (int64_t p = b; p < e; ++p) {
    const int64_t o = g.offset(k, p);
    const T* r = x + o;
    const T* d = gy + o;
    if (sc == 1) {
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) {
        const double gv = bn_load(d[c]);
        acc[c] += gv;
        acc[C + c] += gv * (bn_load(r[c]) - mean[c]);
      }
    } else {
      for (int64_t c = 0; c < C; ++c) {
        const double gv = bn_load(d[c * sc]);
        acc[c] += gv;
        acc[C + c] += gv * (bn_load(r[c * sc]) - mean[c]);
      }
    }
  }
}

// gx = c1[c] gy + c2[c] (x - mean[c]) + c3[c] in T's compute type, positions [b, e).
template <class T, class CT = compute_t<T>>
void bn_grad_apply(const BnGeometry& g, const T* x, const T* gy, T* gx, int64_t k, int64_t b, int64_t e,
                   const CT* mean, const CT* c1, const CT* c2, const CT* c3) {
  const int64_t C = g.C, sc = g.sc;
  for (int64_t p = b; p < e; ++p) {
    const int64_t o = g.offset(k, p);
    const T* r = x + o;
    const T* d = gy + o;
    T* w = gx + o;
    if (sc == 1) {
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) w[c] = convert<T>(c1[c] * CT(d[c]) + c2[c] * (CT(r[c]) - mean[c]) + c3[c]);
    } else {
      for (int64_t c = 0; c < C; ++c) {
        w[c * sc] = convert<T>(c1[c] * CT(d[c * sc]) + c2[c] * (CT(r[c * sc]) - mean[c]) + c3[c]);
      }
    }
  }
}

// A (C) parameter of any floating dtype as doubles, or C copies of `fallback` for a null one.
inline std::vector<double> bn_param(const Array& a, int64_t c, double fallback) {
  return a.is_null() ? std::vector<double>(static_cast<std::size_t>(c), fallback) : a.to_vector<double>();
}

// Writes `v` into `out` (contiguous, any floating dtype).
inline void bn_store(const Array& out, const std::vector<double>& v) {
  dispatch_floating(out.dtype(), "batch_norm", [&]<class S>() {
    S* p = out.data<S>();
    for (std::size_t i = 0; i < v.size(); ++i) p[i] = S(static_cast<compute_t<S>>(v[i]));
  });
}

template <class T, class Sums, class Each>
void batch_norm_forward(const Array& x, const Array& gamma, const Array& beta, const Array& y, const Array& mean,
                        const Array& var, double eps, Sums&& sums, Each&& each) {
  using CT = compute_t<T>;
  const BnGeometry g = bn_geometry(x, mean.shape()[0]);
  const int64_t C = g.C;
  const auto uC = static_cast<std::size_t>(C);
  const double m = static_cast<double>(g.positions());
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
  const std::vector<double> ga = bn_param(gamma, C, 1.0), be = bn_param(beta, C, 0.0);
  std::vector<double> mu(uC), means(uC * static_cast<std::size_t>(g.K)), vars(means.size());
  std::vector<CT> scale(uC), shift(uC);
  for (int64_t k = 0; k < g.K; ++k) {
    std::vector<double> s = sums(g.positions(), [&](int64_t b, int64_t e, double* acc) {
      bn_moments(g, xp, k, b, e, nullptr, acc);
    });
    for (int64_t c = 0; c < C; ++c) mu[c] = s[c] / m;
    s = sums(g.positions(), [&](int64_t b, int64_t e, double* acc) { bn_moments(g, xp, k, b, e, mu.data(), acc); });
    for (int64_t c = 0; c < C; ++c) {
      const double v = s[C + c] / m, inv = 1.0 / std::sqrt(v + eps), sc = ga[c] * inv;
      scale[c] = CT(sc);
      shift[c] = CT(be[c] - mu[c] * sc);
      means[k * C + c] = mu[c];
      vars[k * C + c] = v;
    }
    each(g.positions(), [&](int64_t b, int64_t e) { bn_affine(g, xp, yp, k, b, e, scale.data(), shift.data()); });
  }
  bn_store(mean, means);
  bn_store(var, vars);
}

template <class T, class Sums, class Each>
void batch_norm_backward(const Array& x, const Array& gamma, const Array& mean, const Array& var, const Array& gy,
                         const Array& gx, const Array& ggamma, const Array& gbeta, double eps, Sums&& sums,
                         Each&& each) {
  using CT = compute_t<T>;
  const BnGeometry g = bn_geometry(x, mean.shape()[0]);
  const int64_t C = g.C;
  const auto uC = static_cast<std::size_t>(C);
  const double m = static_cast<double>(g.positions());
  const T *xp = x.data<T>(), *gyp = gy.data<T>();
  T* gxp = gx.data<T>();
  const std::vector<double> ga = bn_param(gamma, C, 1.0), means = mean.to_vector<double>(),
                            vars = var.to_vector<double>();
  std::vector<double> gg(means.size()), gb(means.size());
  std::vector<CT> mu_c(uC), c1(uC), c2(uC), c3(uC);
  for (int64_t k = 0; k < g.K; ++k) {
    const double* mu = means.data() + k * C;
    const std::vector<double> s = sums(g.positions(), [&](int64_t b, int64_t e, double* acc) {
      bn_grad_sums(g, xp, gyp, k, b, e, mu, acc);
    });
    for (int64_t c = 0; c < C; ++c) {
      const double inv = 1.0 / std::sqrt(vars[k * C + c] + eps), gm = ga[c] * inv;
      // gx = gm (gy - A / m - xhat B / m), xhat = (x - mean) inv, B = inv sum gy (x - mean).
      const double a = s[c], bc = s[C + c];
      mu_c[c] = CT(mu[c]);
      c1[c] = CT(gm);
      c2[c] = CT(-gm * inv * inv * bc / m);
      c3[c] = CT(-gm * a / m);
      gg[k * C + c] = bc * inv;
      gb[k * C + c] = a;
    }
    each(g.positions(), [&](int64_t b, int64_t e) {
      bn_grad_apply(g, xp, gyp, gxp, k, b, e, mu_c.data(), c1.data(), c2.data(), c3.data());
    });
  }
  bn_store(ggamma, gg);
  bn_store(gbeta, gb);
}

}  // namespace rensa::backends::host
