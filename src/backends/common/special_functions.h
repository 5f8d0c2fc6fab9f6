#pragma once
// Special functions the C++ library lacks (erfcx, erfinv, erfcinv, ndtri, log_ndtr, digamma,
// polygamma, Hurwitz zeta), in double precision; float callers convert. Domains and values at poles
// follow SciPy's (scipy.special), which Chainer calls. Pure scalar code: safe in parallel loops.
#include <cmath>
#include <limits>

namespace rensa::backends::special {

inline constexpr double kPi = 3.14159265358979323846;
inline constexpr double kSqrtPi = 1.77245385090551602730;
inline constexpr double kSqrt2 = 1.41421356237309504880;
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

/// log|gamma(x)| without touching the global `signgam` that std::lgamma writes (a data race in
/// threaded loops).
inline double lgamma(double x) {
  int sign = 0;
  return ::lgamma_r(x, &sign);
}

/// exp(x^2) erfc(x), finite where erfc underflows.
inline double erfcx(double x) {
  if (std::isnan(x)) return x;
  if (x < 0) {
    if (x < -26.7) return kInf;                      // 2 exp(x^2) overflows
    const double h = x * x, l = std::fma(x, x, -h);  // x^2 = h + l exactly
    return 2.0 * std::exp(h) * std::exp(l) - erfcx(-x);
  }
  if (x < 25.0) {
    const double h = x * x, l = std::fma(x, x, -h);
    return std::exp(h) * std::exp(l) * std::erfc(x);
  }
  if (std::isinf(x)) return 0.0;
  // Laplace's continued fraction: erfcx(x) = 1 / sqrt(pi) / (x + (1/2) / (x + 1 / (x + (3/2) / ...))).
  double f = x;
  for (int k = 40; k >= 1; --k) f = x + (0.5 * k) / f;
  return 1.0 / (kSqrtPi * f);
}

namespace detail {
// Initial guess for erfinv (single-precision polynomials after M. Giles, "Approximating the erfinv
// function"), refined by the Halley steps of the callers.
inline double erfinv_guess(double y) {
  double w = -std::log((1.0 - y) * (1.0 + y)), p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = std::sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  return p * y;
}

// x with erfc(x) = z for 0 < z <= 0.5 (x >= 0.47), by Halley's method on erfc itself, so that tiny z
// keep their relative accuracy.
inline double erfcinv_tail(double z) {
  const double w = -std::log(z * (2.0 - z));
  double x;
  if (w < 12.0) {
    x = erfinv_guess(1.0 - z);
  } else {
    // Deep tail (z < 1e-5), past the polynomials' range: erfc(x) ~ exp(-x^2) / (x sqrt(pi)).
    x = std::sqrt(-std::log(z));
    x = std::sqrt(-std::log(z) - std::log(x * kSqrtPi));
  }
  for (int i = 0; i < 8; ++i) {
    // t = (erfc(x) - z) / erfc'(x), with erfc'(x) = -2 / sqrt(pi) exp(-x^2); exp(x^2) * z written
    // as exp(x^2 + log z) so that it stays finite.
    const double t = -0.5 * kSqrtPi * (std::erfc(x) / z - 1.0) * std::exp(x * x + std::log(z));
    const double dx = t / (1.0 + x * t);
    x -= dx;
    if (std::abs(dx) <= 1e-16 * std::abs(x)) break;
  }
  return x;
}

// x with erf(x) = y for |y| < 0.5, by Halley's method on erf.
inline double erfinv_center(double y) {
  double x = erfinv_guess(y);
  for (int i = 0; i < 8; ++i) {
    const double t = (std::erf(x) - y) * 0.5 * kSqrtPi * std::exp(x * x);
    const double dx = t / (1.0 + x * t);
    x -= dx;
    if (std::abs(dx) <= 1e-16 * std::abs(x)) break;
  }
  return x;
}
}  // namespace detail

/// The inverse of erf on [-1, 1] (+-inf at +-1, NaN outside).
inline double erfinv(double y) {
  if (std::isnan(y) || y < -1.0 || y > 1.0) return kNaN;
  if (y == 1.0) return kInf;
  if (y == -1.0) return -kInf;
  if (y == 0.0) return y;
  if (std::abs(y) < 0.5) return detail::erfinv_center(y);
  const double x = detail::erfcinv_tail(1.0 - std::abs(y));  // exact: |y| in [0.5, 1)
  return y < 0 ? -x : x;
}

/// The inverse of erfc on [0, 2] (+inf at 0, -inf at 2, NaN outside).
inline double erfcinv(double z) {
  if (std::isnan(z) || z < 0.0 || z > 2.0) return kNaN;
  if (z == 0.0) return kInf;
  if (z == 2.0) return -kInf;
  if (z <= 0.5) return detail::erfcinv_tail(z);
  if (z >= 1.5) return -detail::erfcinv_tail(2.0 - z);
  return detail::erfinv_center(1.0 - z);  // exact: z in (0.5, 1.5)
}

/// The standard normal CDF.
inline double ndtr(double x) {
  return 0.5 * std::erfc(-x / kSqrt2);
}

/// The inverse of ndtr on [0, 1] (-inf at 0, +inf at 1, NaN outside).
inline double ndtri(double p) {
  if (std::isnan(p) || p < 0.0 || p > 1.0) return kNaN;
  return -kSqrt2 * erfcinv(2.0 * p);
}

/// log(ndtr(x)), accurate in both tails.
inline double log_ndtr(double x) {
  if (std::isnan(x)) return x;
  if (x > 0) return std::log1p(-0.5 * std::erfc(x / kSqrt2));
  // ndtr(x) = erfcx(t) exp(-t^2) / 2 with t = -x / sqrt(2) >= 0.
  return std::log(0.5 * erfcx(-x / kSqrt2)) - 0.5 * x * x;
}

/// The derivative of log(gamma(x)). -inf at +0, +inf at -0, NaN at negative integers (as SciPy).
inline double digamma(double x) {
  if (std::isnan(x) || x == kInf) return x;
  if (x == 0.0) return std::signbit(x) ? kInf : -kInf;
  if (x < 0.0) {
    if (x == std::floor(x) || x == -kInf) return kNaN;
    // Reflection: psi(x) = psi(1 - x) - pi / tan(pi x), with pi x reduced to (-pi/2, pi/2].
    const double r = x - std::round(x);
    return digamma(1.0 - x) - kPi / std::tan(kPi * r);
  }
  double acc = 0.0;
  while (x < 10.0) {  // psi(x) = psi(x + 1) - 1 / x
    acc -= 1.0 / x;
    x += 1.0;
  }
  // Asymptotic series: log x - 1/(2x) - sum of B_2k / (2k x^2k).
  const double r = 1.0 / (x * x);
  const double series =
      r *
      (1.0 / 12 - r * (1.0 / 120 - r * (1.0 / 252 - r * (1.0 / 240 - r * (1.0 / 132 - r * (691.0 / 32760 - r / 12))))));
  return acc + std::log(x) - 0.5 / x - series;
}

/// The Hurwitz zeta function sum over k >= 0 of (k + q)^-s, for s > 1 (inf at s = 1, NaN below);
/// inf at q a non-positive integer; for other q < 0 only whole s are defined. As SciPy's zeta(s, q).
inline double zeta(double s, double q) {
  if (std::isnan(s) || std::isnan(q)) return kNaN;
  if (s == 1.0) return kInf;
  if (s < 1.0) return kNaN;
  if (q <= 0.0) {
    if (q == std::floor(q)) return kInf;
    if (s != std::floor(s)) return kNaN;  // (k + q)^-s of a negative base
  }
  if (s == kInf) return q == 1.0 ? 1.0 : (q > 1.0 ? 0.0 : kNaN);
  if (q == kInf) return 0.0;
  if (q > 1e8) return (1.0 / (s - 1.0) + 0.5 / q) * std::pow(q, 1.0 - s);  // leading asymptotic terms
  // Direct sum of the first terms, until a = q + n is large enough for the Euler-Maclaurin tail.
  double sum = 0.0, a = q;
  for (int n = 0; n < 10 || a < 10.0 || a < 0.5 * s; ++n) {
    const double t = std::pow(a, -s);
    sum += t;
    if (n > 0 && std::abs(t) <= 1e-17 * std::abs(sum) && a > 0.0) return sum;  // later terms are smaller
    a += 1.0;
  }
  // sum over k >= 0 of (a + k)^-s = a^(1-s)/(s-1) + a^-s/2 + sum_j B_2j/(2j)! s(s+1)...(s+2j-2) a^(-s-2j+1).
  // B_2j / (2j)! for j = 1..12.
  static constexpr double kB2jOverFact[] = {1.0 / 12,
                                            -1.0 / 720,
                                            1.0 / 30240,
                                            -1.0 / 1209600,
                                            1.0 / 47900160,
                                            -691.0 / 1307674368000.0,
                                            1.0 / 74724249600.0,
                                            -3.3896802963225827e-13,
                                            8.586062056277845e-15,
                                            -2.174868698558062e-16,
                                            5.5090028283602295e-18,
                                            -1.3954464685812522e-19};
  const double as = std::pow(a, -s);
  double tail = a * as / (s - 1.0) + 0.5 * as;
  double fac = s * as / a;  // s a^(-s-1)
  for (int j = 0; j < 12; ++j) {
    const double term = kB2jOverFact[j] * fac;
    tail += term;
    if (std::abs(term) <= 1e-17 * std::abs(sum + tail)) break;
    fac *= (s + 2 * j + 1) * (s + 2 * j + 2) / (a * a);
  }
  return sum + tail;
}

/// The n-th derivative of digamma, for whole n >= 0 (NaN otherwise): (-1)^(n+1) n! zeta(n + 1, x).
inline double polygamma(double n, double x) {
  if (std::isnan(n) || n < 0.0 || n != std::floor(n) || std::isnan(x)) return kNaN;
  if (n == 0.0) return digamma(x);
  const double sign = std::fmod(n, 2.0) == 0.0 ? -1.0 : 1.0;
  return sign * std::exp(lgamma(n + 1.0)) * zeta(n + 1.0, x);
}

}  // namespace rensa::backends::special
