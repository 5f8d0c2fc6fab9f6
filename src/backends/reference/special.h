#pragma once
// The reference backend's special functions (erfcx, erfinv, erfcinv, ndtr, ndtri, log_ndtr, lgamma,
// digamma, Hurwitz zeta, polygamma), written from their definitions in long double: inverses by
// Newton's method on the C++ library's erf and erfc, digamma and zeta by recurrence and the
// Euler-Maclaurin formula with exact Bernoulli numbers. Slow and independent of the host backends'
// formulas (src/backends/common/special_functions.h), so that comparing the two can catch a wrong
// formula in either. Domains and values at poles follow SciPy's, as the op list documents.
#include <cmath>
#include <limits>

namespace rensa::backends::reference::special {

using Real = long double;

// x87 extended precision: 64-bit significands keep the long sums and inverses a few bits past
// double, and int64 quotients exact (formulas.h).
static_assert(std::numeric_limits<Real>::digits >= 64, "the reference formulas need an extended long double");

inline constexpr Real kPi = 3.141592653589793238462643383279502884L;
inline constexpr Real kSqrtPi = 1.772453850905516027298167483341145183L;
inline constexpr Real kSqrt2 = 1.414213562373095048801688724209698079L;
inline constexpr Real kNaN = std::numeric_limits<Real>::quiet_NaN();
inline constexpr Real kInf = std::numeric_limits<Real>::infinity();
inline constexpr Real kEps = std::numeric_limits<Real>::epsilon();

/// The Bernoulli number B_2k (k = 1..12) as an exact fraction.
inline Real bernoulli_2k(int k) {
  static constexpr Real kNum[] = {1, -1, 1, -1, 5, -691, 7, -3617, 43867, -174611, 854513, -236364091};
  static constexpr Real kDen[] = {6, 30, 42, 30, 66, 2730, 6, 510, 798, 330, 138, 2730};
  return kNum[k - 1] / kDen[k - 1];
}

/// exp(x^2) erfc(x): the product itself while erfc(x) stays far from underflow in long double,
/// beyond that (x >= 50) the asymptotic series 1 / (x sqrt(pi)) sum (-1)^k (2k - 1)!! / (2 x^2)^k,
/// whose terms fall below 1e-21 within a few.
inline Real erfcx(Real x) {
  if (std::isnan(x)) return x;
  if (x == kInf) return 0;
  if (x < 50) return std::exp(x * x) * std::erfc(x);
  Real sum = 1, term = 1;
  for (int k = 1; k < 40 && std::abs(term) > 1e-21L; ++k) {
    term *= -(2 * k - 1) / (2 * x * x);
    sum += term;
  }
  return sum / (x * kSqrtPi);
}

namespace detail {

// The x >= 0 with erfc(x) = z, 0 < z <= 0.5, by Newton's method on erfc, which keeps the relative
// accuracy of a tiny z. erfc is convex and decreasing there: after the first step every iterate
// lies left of the root and climbs to it.
inline Real erfc_root(Real z) {
  Real x = std::sqrt(-std::log(z));  // erfc(x) ~ exp(-x^2) / (x sqrt(pi)): just right of the root
  for (int i = 0; i < 200; ++i) {
    const Real dx = (std::erfc(x) - z) / (-2 / kSqrtPi * std::exp(-x * x));
    x -= dx;
    if (!(std::abs(dx) > 4 * kEps * x)) break;
  }
  return x;
}

// The x with erf(x) = y, |y| <= 0.5, by Newton's method on erf from its Maclaurin series' first terms.
inline Real erf_root(Real y) {
  Real x = kSqrtPi / 2 * (y + kPi / 12 * y * y * y);
  for (int i = 0; i < 200; ++i) {
    const Real dx = (std::erf(x) - y) / (2 / kSqrtPi * std::exp(-x * x));
    x -= dx;
    if (!(std::abs(dx) > 4 * kEps * std::abs(x))) break;
  }
  return x;
}

}  // namespace detail

/// The inverse of erf on [-1, 1]: +-inf at +-1, NaN outside.
inline Real erfinv(Real y) {
  if (std::isnan(y) || y < -1 || y > 1) return kNaN;
  if (y == 1) return kInf;
  if (y == -1) return -kInf;
  if (y == 0) return y;
  if (std::abs(y) <= 0.5L) return detail::erf_root(y);
  const Real x = detail::erfc_root(1 - std::abs(y));  // 1 - |y| is exact for |y| in [0.5, 1)
  return y < 0 ? -x : x;
}

/// The inverse of erfc on [0, 2]: +inf at 0, -inf at 2, NaN outside.
inline Real erfcinv(Real z) {
  if (std::isnan(z) || z < 0 || z > 2) return kNaN;
  if (z == 0) return kInf;
  if (z == 2) return -kInf;
  if (z <= 0.5L) return detail::erfc_root(z);
  if (z >= 1.5L) return -detail::erfc_root(2 - z);  // erfc(-x) = 2 - erfc(x)
  return erfinv(1 - z);
}

/// The standard normal CDF: erfc(-x / sqrt(2)) / 2.
inline Real ndtr(Real x) {
  return std::erfc(-x / kSqrt2) / 2;
}

/// The inverse of ndtr on [0, 1]: -sqrt(2) erfcinv(2p).
inline Real ndtri(Real p) {
  if (std::isnan(p) || p < 0 || p > 1) return kNaN;
  return -kSqrt2 * erfcinv(2 * p);
}

/// log(ndtr(x)). For x <= 0, ndtr(x) = erfcx(t) exp(-t^2) / 2 with t = -x / sqrt(2), whose logarithm
/// stays finite long after ndtr underflows.
inline Real log_ndtr(Real x) {
  if (std::isnan(x)) return x;
  if (x > 0) return std::log1p(-std::erfc(x / kSqrt2) / 2);
  return std::log(erfcx(-x / kSqrt2) / 2) - x * x / 2;
}

/// log|gamma(x)|.
inline Real lgamma(Real x) {
  return std::lgamma(x);
}

/// psi(x) = d/dx log gamma(x): -inf at +0, +inf at -0, NaN at the negative integers (SciPy's).
inline Real digamma(Real x) {
  if (std::isnan(x) || x == kInf) return x;
  if (x == 0) return std::signbit(x) ? kInf : -kInf;
  if (x < 0) {
    if (x == std::floor(x)) return kNaN;  // the poles, and -inf
    // Reflection, psi(1 - x) - psi(x) = pi cot(pi x), with x shifted by whole periods of cot first.
    return digamma(1 - x) - kPi / std::tan(kPi * (x - std::nearbyint(x)));
  }
  // Recurrence psi(x) = psi(x + 1) - 1 / x up to x >= 16, then the asymptotic series
  // psi(x) = log x - 1 / (2x) - sum B_2k / (2k x^2k).
  Real shift = 0;
  for (; x < 16; x += 1) shift -= 1 / x;
  Real series = 0, power = 1;
  for (int k = 1; k <= 10; ++k) {
    power /= x * x;
    series += bernoulli_2k(k) / (2 * k) * power;
  }
  return shift + std::log(x) - 1 / (2 * x) - series;
}

/// The Hurwitz zeta function zeta(s, q) = sum over k >= 0 of (k + q)^-s, for s > 1: inf at s = 1
/// and at q a non-positive integer, NaN for s < 1 and for other q < 0 unless s is whole (SciPy's).
inline Real zeta(Real s, Real q) {
  if (std::isnan(s) || std::isnan(q)) return kNaN;
  if (s == 1) return kInf;
  if (s < 1) return kNaN;
  if (q <= 0) {
    if (q == std::floor(q)) return kInf;
    if (s != std::floor(s)) return kNaN;  // a negative base to a fractional power
  }
  if (s == kInf) return q == 1 ? 1 : (q > 1 ? 0 : kNaN);
  if (q == kInf) return 0;
  // The first terms directly, until a = q + n >= max(16, s); the rest by Euler-Maclaurin:
  // sum over k >= 0 of (a + k)^-s = a^(1-s) / (s-1) + a^-s / 2
  //   + sum over j >= 1 of B_2j / (2j)! s (s+1) ... (s+2j-2) a^(-s-2j+1).
  Real sum = 0, a = q;
  for (; a < 16 || a < s; a += 1) {
    const Real t = std::pow(a, -s);
    sum += t;
    // Past a > 0 the rest of the series is at most t (1 + a / (s - 1)) (an integral bound).
    if (a > 0 && t * (1 + a / (s - 1)) <= 1e-21L * std::abs(sum)) return sum;
  }
  const Real as = std::pow(a, -s);
  Real tail = a * as / (s - 1) + as / 2;
  Real rising = s, power = as / a, factorial = 2;  // s, a^(-s-1), 2!
  for (int j = 1; j <= 12; ++j) {
    const Real term = bernoulli_2k(j) / factorial * rising * power;
    tail += term;
    if (std::abs(term) <= 1e-21L * std::abs(sum + tail)) break;
    rising *= (s + 2 * j - 1) * (s + 2 * j);
    power /= a * a;
    factorial *= (2 * j + 1) * (2 * j + 2);
  }
  return sum + tail;
}

/// The n-th derivative of digamma for whole n >= 0 (NaN otherwise): (-1)^(n+1) n! zeta(n + 1, x).
inline Real polygamma(Real n, Real x) {
  if (std::isnan(n) || std::isnan(x) || n < 0 || n != std::floor(n)) return kNaN;
  if (n == 0) return digamma(x);
  const Real sign = std::fmod(n, 2) == 1 ? 1 : -1;
  return sign * std::tgamma(n + 1) * zeta(n + 1, x);
}

}  // namespace rensa::backends::reference::special
