// Reference kernels: batch normalization from its definition, per sub-batch and channel: the mean,
// then the biased variance about it (two passes), in double; outputs rounded once.
#include <cmath>

#include "src/backends/reference/kernels.h"
#include "src/core/convert.h"

namespace rensa::backends::reference {
namespace {

using rensa::detail::convert;

// Element `offset` of an array of any dtype, widened exactly to double.
double at(const Array& a, int64_t offset) {
  return dispatch(a.dtype(), [&]<class S>() {
    return static_cast<double>(static_cast<compute_t<S>>(static_cast<const S*>(a.raw_data())[offset]));
  });
}

void put(const Array& a, int64_t offset, double v) {
  dispatch(a.dtype(), [&]<class S>() { static_cast<S*>(a.raw_data())[offset] = convert<S>(v); });
}

// gamma[c] or beta[c] of a (C) parameter, `fallback` for a null one.
double param(const Array& p, int64_t c, double fallback) {
  return p.is_null() ? fallback : at(p, c * p.strides()[0]);
}

// The (N, C, S) array x split into K sub-batches of G = N / K examples: the offsets of the m = G S
// elements of sub-batch k and channel c, in any order (every array of the kernel has x's strides).
struct Elements {
  int64_t G, S, sn, sc, ss;
  template <class F>
  void each(int64_t k, int64_t c, F&& f) const {
    for (int64_t n = k * G; n < (k + 1) * G; ++n) {
      for (int64_t s = 0; s < S; ++s) f(n * sn + c * sc + s * ss);
    }
  }
};

Elements elements(const Array& x, const Array& mean) {
  return {x.shape()[0] / mean.shape()[0], x.shape()[2], x.strides()[0], x.strides()[1], x.strides()[2]};
}

}  // namespace

void batch_norm_forward(const Array& x, const Array& gamma, const Array& beta, const Array& y, const Array& mean,
                        const Array& var, double eps) {
  RENSA_CHECK(is_floating(x.dtype()), DtypeError, "reference batch_norm_forward: expected a floating dtype, got ",
              x.dtype());
  const int64_t K = mean.shape()[0], C = x.shape()[1];
  const Elements e = elements(x, mean);
  const auto m = static_cast<double>(e.G * e.S);
  for (int64_t k = 0; k < K; ++k) {
    for (int64_t c = 0; c < C; ++c) {
      double sum = 0;
      e.each(k, c, [&](int64_t o) { sum += at(x, o); });
      const double mu = sum / m;
      double squares = 0;
      e.each(k, c, [&](int64_t o) { squares += (at(x, o) - mu) * (at(x, o) - mu); });
      const double variance = squares / m;
      const double g = param(gamma, c, 1.0), b = param(beta, c, 0.0), sd = std::sqrt(variance + eps);
      e.each(k, c, [&](int64_t o) { put(y, o, (at(x, o) - mu) / sd * g + b); });
      put(mean, k * C + c, mu);
      put(var, k * C + c, variance);
    }
  }
}

void batch_norm_backward(const Array& x, const Array& gamma, const Array& mean, const Array& var, const Array& gy,
                         const Array& gx, const Array& ggamma, const Array& gbeta, double eps) {
  RENSA_CHECK(is_floating(x.dtype()), DtypeError, "reference batch_norm_backward: expected a floating dtype, got ",
              x.dtype());
  const int64_t K = mean.shape()[0], C = x.shape()[1];
  const Elements e = elements(x, mean);
  const auto m = static_cast<double>(e.G * e.S);
  for (int64_t k = 0; k < K; ++k) {
    for (int64_t c = 0; c < C; ++c) {
      const double mu = at(mean, k * C + c), sd = std::sqrt(at(var, k * C + c) + eps), g = param(gamma, c, 1.0);
      auto xhat = [&](int64_t o) { return (at(x, o) - mu) / sd; };
      // A = sum gy, B = sum gy xhat: the gradients of beta and gamma.
      double A = 0, B = 0;
      e.each(k, c, [&](int64_t o) {
        A += at(gy, o);
        B += at(gy, o) * xhat(o);
      });
      // y = xhat gamma + beta, with xhat depending on x directly and through the mean and variance.
      e.each(k, c, [&](int64_t o) { put(gx, o, g / sd * (at(gy, o) - A / m - xhat(o) * B / m)); });
      put(ggamma, k * C + c, B);
      put(gbeta, k * C + c, A);
    }
  }
}

}  // namespace rensa::backends::reference
