#pragma once
// The scalar definition of every elementwise op, shared by all host backends so the formulas live
// in one place. Kernels pick the op outside their loops (dispatch_unary/dispatch_binary) so the
// inner loops are branch-free.
#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "rensa/core/backend.h"
#include "src/core/convert.h"
#include "src/backends/common/special_functions.h"

namespace rensa::backends {

// RENSA_MATH_UNARY_OPS. The special functions run in double (see special_functions.h).
template <UnaryOp Op, class C>
inline C math_unary_fn(C x) {
  namespace sp = special;
  const auto d = [](double (*f)(double), C v) { return static_cast<C>(f(static_cast<double>(v))); };
  if constexpr (Op == UnaryOp::tan) return std::tan(x);
  else if constexpr (Op == UnaryOp::arcsin) return std::asin(x);
  else if constexpr (Op == UnaryOp::arccos) return std::acos(x);
  else if constexpr (Op == UnaryOp::arctan) return std::atan(x);
  else if constexpr (Op == UnaryOp::sinh) return std::sinh(x);
  else if constexpr (Op == UnaryOp::cosh) return std::cosh(x);
  else if constexpr (Op == UnaryOp::arctanh) return std::atanh(x);
  else if constexpr (Op == UnaryOp::expm1) return std::expm1(x);
  else if constexpr (Op == UnaryOp::log1p) return std::log1p(x);
  else if constexpr (Op == UnaryOp::log2) return std::log2(x);
  else if constexpr (Op == UnaryOp::log10) return std::log10(x);
  else if constexpr (Op == UnaryOp::rsqrt) return C(1) / std::sqrt(x);
  else if constexpr (Op == UnaryOp::floor) return std::floor(x);
  else if constexpr (Op == UnaryOp::ceil) return std::ceil(x);
  else if constexpr (Op == UnaryOp::fix) return std::trunc(x);
  else if constexpr (Op == UnaryOp::erf) return std::erf(x);
  else if constexpr (Op == UnaryOp::erfc) return std::erfc(x);
  else if constexpr (Op == UnaryOp::erfcx) return d(sp::erfcx, x);
  else if constexpr (Op == UnaryOp::erfinv) return d(sp::erfinv, x);
  else if constexpr (Op == UnaryOp::erfcinv) return d(sp::erfcinv, x);
  else if constexpr (Op == UnaryOp::ndtr) return d(sp::ndtr, x);
  else if constexpr (Op == UnaryOp::ndtri) return d(sp::ndtri, x);
  else if constexpr (Op == UnaryOp::log_ndtr) return d(sp::log_ndtr, x);
  else if constexpr (Op == UnaryOp::lgamma) return d(sp::lgamma, x);
  else if constexpr (Op == UnaryOp::digamma) return d(sp::digamma, x);
  else static_assert(sizeof(C) == 0, "unhandled unary op");
}

template <UnaryOp Op, class C>
inline C unary_fn(C x, C p0, C p1) {
  if constexpr (Op == UnaryOp::neg) return -x;
  else if constexpr (Op == UnaryOp::exp) return std::exp(x);
  else if constexpr (Op == UnaryOp::log) return std::log(x);
  else if constexpr (Op == UnaryOp::sqrt) return std::sqrt(x);
  else if constexpr (Op == UnaryOp::abs) return std::abs(x);
  else if constexpr (Op == UnaryOp::sign) return x != x ? x : static_cast<C>((x > C(0)) - (x < C(0)));  // NaN stays
  else if constexpr (Op == UnaryOp::square) return x * x;
  else if constexpr (Op == UnaryOp::reciprocal) return C(1) / x;
  else if constexpr (Op == UnaryOp::sin) return std::sin(x);
  else if constexpr (Op == UnaryOp::cos) return std::cos(x);
  else if constexpr (Op == UnaryOp::relu) return x > C(0) ? x : C(0);
  else if constexpr (Op == UnaryOp::sigmoid) {
    if (x >= C(0)) return C(1) / (C(1) + std::exp(-x));
    const C e = std::exp(x);
    return e / (C(1) + e);
  } else if constexpr (Op == UnaryOp::tanh) return std::tanh(x);
  else if constexpr (Op == UnaryOp::softplus) return std::log1p(std::exp(-std::abs(x))) + (x > C(0) ? x : C(0));
  else if constexpr (Op == UnaryOp::leaky_relu) return x >= C(0) ? x : x * p0;
  else if constexpr (Op == UnaryOp::elu) return x >= C(0) ? x : p0 * std::expm1(x);
  else if constexpr (Op == UnaryOp::pow_scalar) return std::pow(x, p0);
  else if constexpr (Op == UnaryOp::clip) return x < p0 ? p0 : (x > p1 ? p1 : x);
  else if constexpr (Op == UnaryOp::affine) return x * p0 + p1;
  else if constexpr (Op == UnaryOp::finite_or_zero) return std::isfinite(x) ? x : C(0);
  else return math_unary_fn<Op, C>(x);
}

/// Integer division rounding toward negative infinity (Python's //). Division by zero gives 0 and
/// MIN // -1 wraps to MIN, as NumPy, instead of trapping.
template <class C>
inline C floor_div(C a, C b) {
  if (b == C(0)) return C(0);
  if constexpr (std::is_signed_v<C>) {
    if (b == C(-1)) return static_cast<C>(std::make_unsigned_t<C>(0) - static_cast<std::make_unsigned_t<C>>(a));
    C q = static_cast<C>(a / b);
    if (static_cast<C>(a % b) != C(0) && ((a < C(0)) != (b < C(0)))) --q;
    return q;
  } else {
    return static_cast<C>(a / b);
  }
}

// 1 where `c` holds, else 0, as a C. For float and double through the bits of 1.0: GCC keeps a
// float made of a comparison and then multiplied as a branch (under -ftrapping-math) and does not
// vectorize the loop; a bit mask it does.
template <class C>
inline C one_if(bool c) {
  if constexpr (std::is_same_v<C, float>) return std::bit_cast<float>((0u - static_cast<uint32_t>(c)) & 0x3f800000u);
  else if constexpr (std::is_same_v<C, double>) {
    return std::bit_cast<double>((uint64_t{0} - static_cast<uint64_t>(c)) & 0x3ff0000000000000u);
  } else return static_cast<C>(c);
}

template <BinaryOp Op, class C>
inline C binary_fn(C a, C b) {
  if constexpr (std::is_same_v<C, bool>) return binary_fn<Op, int>(a, b) != 0;
  else if constexpr (Op == BinaryOp::add) return a + b;
  else if constexpr (Op == BinaryOp::sub) return a - b;
  else if constexpr (Op == BinaryOp::mul) return a * b;
  else if constexpr (Op == BinaryOp::div) {
    if constexpr (std::is_integral_v<C>) return floor_div(a, b);
    else return a / b;
  }
  else if constexpr (Op == BinaryOp::pow) return static_cast<C>(std::pow(a, b));
  else if constexpr (Op == BinaryOp::maximum) return (a >= b || a != a) ? a : b;  // NaN propagates
  else if constexpr (Op == BinaryOp::minimum) return (a <= b || a != a) ? a : b;
  else if constexpr (Op == BinaryOp::relu_grad) return a * one_if<C>(b > C(0));  // NaN a stays NaN
  else if constexpr (is_floating_only(Op) && !std::is_floating_point_v<C>) return C(0);  // kernels reject these
  else if constexpr (Op == BinaryOp::arctan2) return std::atan2(a, b);
  else if constexpr (Op == BinaryOp::fmod) return std::fmod(a, b);
  else if constexpr (Op == BinaryOp::polygamma) return static_cast<C>(special::polygamma(a, b));
  else if constexpr (Op == BinaryOp::zeta) return static_cast<C>(special::zeta(a, b));
  else if constexpr (Op == BinaryOp::eq) return static_cast<C>(a == b);
  else if constexpr (Op == BinaryOp::ne) return static_cast<C>(a != b);
  else if constexpr (Op == BinaryOp::lt) return static_cast<C>(a < b);
  else if constexpr (Op == BinaryOp::le) return static_cast<C>(a <= b);
  else if constexpr (Op == BinaryOp::gt) return static_cast<C>(a > b);
  else if constexpr (Op == BinaryOp::ge) return static_cast<C>(a >= b);
  else static_assert(sizeof(C) == 0, "unhandled binary op");
}

constexpr bool is_comparison(BinaryOp op) { return op >= BinaryOp::eq; }

/// Calls f.template operator()<Op>() for the runtime op (every op of the list, RENSA_UNARY_OPS).
template <class F>
void dispatch_unary(UnaryOp op, F&& f) {
  switch (op) {
#define RENSA_CASE(name) \
  case UnaryOp::name: f.template operator()<UnaryOp::name>(); return;
    RENSA_UNARY_OPS(RENSA_CASE)
#undef RENSA_CASE
  }
}

template <class F>
void dispatch_binary(BinaryOp op, F&& f) {
  switch (op) {
#define RENSA_CASE(name) \
  case BinaryOp::name: f.template operator()<BinaryOp::name>(); return;
    RENSA_BINARY_OPS(RENSA_CASE)
#undef RENSA_CASE
  }
}

// The dtype conversion of one value lives in core (src/core/convert.h), which the dataset readers use too.
using rensa::detail::convert;
using rensa::detail::float_round_to_odd;

}  // namespace rensa::backends
