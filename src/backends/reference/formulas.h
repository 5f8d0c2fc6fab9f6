#pragma once
// The reference backend's scalar formula of every elementwise op (RENSA_UNARY_OPS, RENSA_BINARY_OPS),
// written from the op list's definitions and independently of the host backends' formulas
// (src/backends/common/scalar_ops.h), so that a test comparing the backends can catch a wrong
// formula in either. Floating ops are computed in double (the special functions in long double,
// special.h) from the exactly widened inputs, and the kernel rounds the result once to the element
// type; integer ops in int64 with two's-complement wrap-around, truncated to the element type. One
// switch per element: slow on purpose, and the compiler's -Wswitch names an op left without a formula.
// Edge cases follow the cpu backend's documented semantics (NaN handling, Python's floor division).
#include <cmath>
#include <cstdint>

#include "rensa/core/backend.h"
#include "src/backends/reference/special.h"

namespace rensa::backends::reference::formulas {

// A long double result of special.h, rounded to double.
inline double from_real(special::Real v) {
  return static_cast<double>(v);
}

/// op(x) with the parameters p0, p1 of the ops that take them (see RENSA_UNARY_OPS).
inline double unary(UnaryOp op, double x, double p0, double p1) {
  namespace sp = special;
  const auto real = static_cast<sp::Real>(x);
  switch (op) {
    case UnaryOp::neg:
      return -x;
    case UnaryOp::exp:
      return std::exp(x);
    case UnaryOp::log:
      return std::log(x);
    case UnaryOp::sqrt:
      return std::sqrt(x);
    case UnaryOp::abs:
      return std::fabs(x);
    case UnaryOp::sign:
      if (std::isnan(x)) return x;
      return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0);
    case UnaryOp::square:
      return x * x;
    case UnaryOp::reciprocal:
      return 1.0 / x;
    case UnaryOp::sin:
      return std::sin(x);
    case UnaryOp::cos:
      return std::cos(x);
    case UnaryOp::relu:
      return x > 0 ? x : 0.0;  // relu(NaN) = 0, as the cpu backend's
    case UnaryOp::sigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case UnaryOp::tanh:
      return std::tanh(x);
    // log(1 + e^x), written as log(1 + e^-|x|) + max(x, 0) so that e^x never overflows.
    case UnaryOp::softplus:
      return std::log1p(std::exp(-std::fabs(x))) + (x > 0 ? x : 0.0);
    case UnaryOp::leaky_relu:
      return x >= 0 ? x : p0 * x;
    case UnaryOp::elu:
      return x >= 0 ? x : p0 * std::expm1(x);
    case UnaryOp::pow_scalar:
      return std::pow(x, p0);
    case UnaryOp::clip:
      if (x < p0) return p0;
      return x > p1 ? p1 : x;
    case UnaryOp::affine:
      return x * p0 + p1;
    case UnaryOp::finite_or_zero:
      return std::isfinite(x) ? x : 0.0;
    case UnaryOp::tan:
      return std::tan(x);
    case UnaryOp::arcsin:
      return std::asin(x);
    case UnaryOp::arccos:
      return std::acos(x);
    case UnaryOp::arctan:
      return std::atan(x);
    case UnaryOp::sinh:
      return std::sinh(x);
    case UnaryOp::cosh:
      return std::cosh(x);
    case UnaryOp::arctanh:
      return std::atanh(x);
    case UnaryOp::expm1:
      return std::expm1(x);
    case UnaryOp::log1p:
      return std::log1p(x);
    case UnaryOp::log2:
      return std::log2(x);
    case UnaryOp::log10:
      return std::log10(x);
    case UnaryOp::rsqrt:
      return 1.0 / std::sqrt(x);
    case UnaryOp::floor:
      return std::floor(x);
    case UnaryOp::ceil:
      return std::ceil(x);
    case UnaryOp::fix:
      return std::trunc(x);
    case UnaryOp::erf:
      return std::erf(x);
    case UnaryOp::erfc:
      return std::erfc(x);
    case UnaryOp::erfcx:
      return from_real(sp::erfcx(real));
    case UnaryOp::erfinv:
      return from_real(sp::erfinv(real));
    case UnaryOp::erfcinv:
      return from_real(sp::erfcinv(real));
    case UnaryOp::ndtr:
      return from_real(sp::ndtr(real));
    case UnaryOp::ndtri:
      return from_real(sp::ndtri(real));
    case UnaryOp::log_ndtr:
      return from_real(sp::log_ndtr(real));
    case UnaryOp::lgamma:
      return from_real(sp::lgamma(real));
    case UnaryOp::digamma:
      return from_real(sp::digamma(real));
  }
  return std::nan("");  // not an op of the list
}

/// Comparisons give 1 or 0.
inline double truth(bool c) {
  return c ? 1.0 : 0.0;
}

/// op(a, b) of floating operands (see RENSA_BINARY_OPS).
inline double binary(BinaryOp op, double a, double b) {
  namespace sp = special;
  switch (op) {
    case BinaryOp::add:
      return a + b;
    case BinaryOp::sub:
      return a - b;
    case BinaryOp::mul:
      return a * b;
    case BinaryOp::div:
      return a / b;
    case BinaryOp::pow:
      return std::pow(a, b);
    // NaN in either operand propagates; on a tie (+0 and -0) the first operand.
    case BinaryOp::maximum:
      if (std::isnan(a) || std::isnan(b)) return std::isnan(a) ? a : b;
      return a < b ? b : a;
    case BinaryOp::minimum:
      if (std::isnan(a) || std::isnan(b)) return std::isnan(a) ? a : b;
      return b < a ? b : a;
    case BinaryOp::relu_grad:
      return a * truth(b > 0);  // the product: NaN and inf in a give NaN
    case BinaryOp::arctan2:
      return std::atan2(a, b);
    case BinaryOp::fmod:
      return std::fmod(a, b);
    case BinaryOp::polygamma:
      return from_real(sp::polygamma(a, b));
    case BinaryOp::zeta:
      return from_real(sp::zeta(a, b));
    case BinaryOp::eq:
      return truth(a == b);
    case BinaryOp::ne:
      return truth(a != b);
    case BinaryOp::lt:
      return truth(a < b);
    case BinaryOp::le:
      return truth(a <= b);
    case BinaryOp::gt:
      return truth(a > b);
    case BinaryOp::ge:
      return truth(a >= b);
  }
  return std::nan("");  // not an op of the list
}

/// floor(a / b), Python's //; 0 for b = 0 and -a wrapped around for b = -1 (so MIN // -1 is MIN
/// in the element type, as NumPy). The quotient of two int64 values in long double, though rounded,
/// never crosses an integer: |a / b - k| >= 1 / |b| for an inexact one, and the rounding error is
/// below |a / b| 2^-64 < 1 / (2 |b|).
inline int64_t floor_divide(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return static_cast<int64_t>(uint64_t{0} - static_cast<uint64_t>(a));
  return static_cast<int64_t>(std::floor(static_cast<special::Real>(a) / static_cast<special::Real>(b)));
}

/// a^b by repeated squaring, wrapping around; for b < 0 the integer part of the real power
/// (1 for a = 1, +-1 for a = -1, else 0).
inline int64_t integer_power(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : (a == -1 ? (b % 2 == 0 ? 1 : -1) : 0);
  uint64_t result = 1, base = static_cast<uint64_t>(a);
  for (auto e = static_cast<uint64_t>(b); e != 0; e >>= 1) {
    if ((e & 1) != 0) result *= base;
    base *= base;
  }
  return static_cast<int64_t>(result);
}

/// op(a, b) of integer (and bool) operands widened to int64; the kernel truncates the result to the
/// element type (bool: nonzero), which makes int32 and uint8 wrap as their own arithmetic would.
/// The floating-only ops are refused by the kernel before this is reached.
inline int64_t binary(BinaryOp op, int64_t a, int64_t b) {
  const auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  switch (op) {
    case BinaryOp::add:
      return static_cast<int64_t>(ua + ub);
    case BinaryOp::sub:
      return static_cast<int64_t>(ua - ub);
    case BinaryOp::mul:
      return static_cast<int64_t>(ua * ub);
    case BinaryOp::div:
      return floor_divide(a, b);
    case BinaryOp::pow:
      return integer_power(a, b);
    case BinaryOp::maximum:
      return a < b ? b : a;
    case BinaryOp::minimum:
      return b < a ? b : a;
    case BinaryOp::relu_grad:
      return b > 0 ? a : 0;
    case BinaryOp::arctan2:
    case BinaryOp::fmod:
    case BinaryOp::polygamma:
    case BinaryOp::zeta:
      return 0;
    case BinaryOp::eq:
      return a == b;
    case BinaryOp::ne:
      return a != b;
    case BinaryOp::lt:
      return a < b;
    case BinaryOp::le:
      return a <= b;
    case BinaryOp::gt:
      return a > b;
    case BinaryOp::ge:
      return a >= b;
  }
  return 0;  // not an op of the list
}

}  // namespace rensa::backends::reference::formulas
