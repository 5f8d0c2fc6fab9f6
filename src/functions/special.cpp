// The error function, normal distribution and gamma families: the unary and binary kernels' ops
// (formulas in src/backends/common/special_functions.h) with their derivatives.
#include "rensa/functions/special.h"

#include <cmath>

#include "rensa/functions/array_ops.h"
#include "src/functions/elementwise.h"

namespace rensa::functions {
namespace {

constexpr double kSqrtPi = 1.77245385090551602730;
constexpr double kSqrt2 = 1.41421356237309504880;
constexpr double kSqrt2Pi = 2.50662827463100050242;

// exp(-x^2), the shape of erf's derivative.
Variable gauss(const Variable& x) {
  return exp(neg(square(x)));
}

}  // namespace

Variable erf(const Variable& x) {
  return detail::elementwise("erf", UnaryOp::erf, x,
                             [](const Variable& v, const Variable&) { return mul(gauss(v), 2.0 / kSqrtPi); });
}

Variable erfc(const Variable& x) {
  return detail::elementwise("erfc", UnaryOp::erfc, x,
                             [](const Variable& v, const Variable&) { return mul(gauss(v), -2.0 / kSqrtPi); });
}

Variable erfcx(const Variable& x) {
  return detail::elementwise(
      "erfcx", UnaryOp::erfcx, x,
      [](const Variable& v, const Variable& y) { return mul(add(mul(v, y), -1.0 / kSqrtPi), 2.0); }, true);
}

Variable erfinv(const Variable& x) {
  return detail::elementwise(
      "erfinv", UnaryOp::erfinv, x,
      [](const Variable&, const Variable& y) { return mul(exp(square(y)), kSqrtPi / 2.0); }, true);
}

Variable erfcinv(const Variable& x) {
  return detail::elementwise(
      "erfcinv", UnaryOp::erfcinv, x,
      [](const Variable&, const Variable& y) { return mul(exp(square(y)), -kSqrtPi / 2.0); }, true);
}

Variable ndtr(const Variable& x) {
  return detail::elementwise("ndtr", UnaryOp::ndtr, x, [](const Variable& v, const Variable&) {
    return mul(exp(mul(square(v), -0.5)), 1.0 / kSqrt2Pi);
  });
}

Variable ndtri(const Variable& x) {
  return detail::elementwise(
      "ndtri", UnaryOp::ndtri, x,
      [](const Variable&, const Variable& y) { return mul(exp(mul(square(y), 0.5)), kSqrt2Pi); }, true);
}

Variable log_ndtr(const Variable& x) {
  // d/dx log ndtr(x) = pdf(x) / ndtr(x) = sqrt(2 / pi) / erfcx(-x / sqrt(2)), finite in both tails.
  return detail::elementwise("log_ndtr", UnaryOp::log_ndtr, x, [](const Variable& v, const Variable&) {
    return rdiv(erfcx(mul(v, -1.0 / kSqrt2)), std::sqrt(2.0) / kSqrtPi);
  });
}

Variable lgamma(const Variable& x) {
  return detail::elementwise("lgamma", UnaryOp::lgamma, x,
                             [](const Variable& v, const Variable&) { return digamma(v); });
}

Variable digamma(const Variable& x) {
  return detail::elementwise("digamma", UnaryOp::digamma, x,
                             [](const Variable& v, const Variable&) { return polygamma(1, v); });
}

namespace {

// polygamma and zeta after their checks: the constant operand already in the variable's dtype.
Variable polygamma_of(const Array& nf, const Variable& x) {
  rensa::detail::ForwardEntry entry("polygamma", x);
  Array y = detail::binary("polygamma", BinaryOp::polygamma, nf, x.array());
  return record1("polygamma", {x}, std::move(y), [nf, x](const BackwardContext& ctx) {
    Variable d = polygamma_of(detail::unary("polygamma", UnaryOp::affine, nf, 1.0, 1.0), x);
    return std::vector<Variable>{detail::grad_to_shape(mul(ctx.grad_output(), d), x.shape())};
  });
}

Variable zeta_of(const Array& xf, const Variable& q) {
  rensa::detail::ForwardEntry entry("zeta", q);
  Array y = detail::binary("zeta", BinaryOp::zeta, xf, q.array());
  return record1("zeta", {q}, std::move(y), [xf, q](const BackwardContext& ctx) {
    Variable d = mul(zeta_of(detail::unary("zeta", UnaryOp::affine, xf, 1.0, 1.0), q),
                     Variable(detail::unary("zeta", UnaryOp::neg, xf)));
    return std::vector<Variable>{detail::grad_to_shape(mul(ctx.grad_output(), d), q.shape())};
  });
}

}  // namespace

Variable polygamma(const Array& n, const Variable& x) {
  RENSA_CHECK(!n.is_null(), ValueError, "polygamma: n is null");
  detail::check_floating("polygamma", x);
  RENSA_CHECK(is_integral(n.dtype()) && n.dtype() != Dtype::bool_, DtypeError,
              "polygamma: n must have an integer dtype, got ", n.dtype(), " with shape ", n.shape());
  const Variable nv(n);
  detail::check_same_device("polygamma", {&nv, &x});
  broadcast_shapes(n.shape(), x.shape(), "polygamma");
  if (n.size() > 0) {
    const Shape all = detail::normalize_axes("polygamma", {}, n.ndim());
    const Array lowest = detail::reduce("polygamma", ReduceOp::min, n, all, false, n.dtype());
    const auto smallest = lowest.to(Device::cpu()).item<int64_t>();
    RENSA_CHECK(smallest >= 0, ValueError, "polygamma: n must be non-negative, got ", smallest, " in n of shape ",
                n.shape());
  }
  return polygamma_of(n.astype(x.dtype()), x);
}

Variable polygamma(int64_t n, const Variable& x) {
  RENSA_CHECK(n >= 0, ValueError, "polygamma: n must be non-negative, got ", n);
  detail::check_floating("polygamma", x);
  return polygamma_of(Array::scalar(static_cast<double>(n), x.dtype(), x.device()), x);
}

Variable zeta(const Array& x, const Variable& q) {
  RENSA_CHECK(!x.is_null(), ValueError, "zeta: x is null");
  detail::check_floating("zeta", q, "q");
  RENSA_CHECK(x.dtype() != Dtype::bool_, DtypeError,
              "zeta: x must have a floating or integer dtype, got bool with shape ", x.shape());
  const Variable xv(x);
  detail::check_same_device("zeta", {&xv, &q});
  return zeta_of(x.astype(q.dtype()), q);
}

Variable zeta(double x, const Variable& q) {
  detail::check_floating("zeta", q, "q");
  return zeta_of(Array::scalar(x, q.dtype(), q.device()), q);
}

}  // namespace rensa::functions
