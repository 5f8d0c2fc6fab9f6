// Trigonometric and hyperbolic functions: the unary kernel's ops with their derivatives.
#include "rensa/functions/trigonometric.h"

#include "rensa/functions/exponential.h"
#include "src/functions/elementwise.h"

namespace rensa::functions {

Variable sin(const Variable& x) {
  return detail::elementwise("sin", UnaryOp::sin, x, [](const Variable& v, const Variable&) { return cos(v); });
}

Variable cos(const Variable& x) {
  return detail::elementwise("cos", UnaryOp::cos, x, [](const Variable& v, const Variable&) { return neg(sin(v)); });
}

Variable tan(const Variable& x) {
  return detail::elementwise("tan", UnaryOp::tan, x,
                             [](const Variable& v, const Variable&) { return rdiv(square(cos(v)), 1.0); });
}

Variable arcsin(const Variable& x) {
  return detail::elementwise("arcsin", UnaryOp::arcsin, x,
                             [](const Variable& v, const Variable&) { return rsqrt(rsub(square(v), 1.0)); });
}

Variable arccos(const Variable& x) {
  return detail::elementwise("arccos", UnaryOp::arccos, x,
                             [](const Variable& v, const Variable&) { return neg(rsqrt(rsub(square(v), 1.0))); });
}

Variable arctan(const Variable& x) {
  return detail::elementwise("arctan", UnaryOp::arctan, x,
                             [](const Variable& v, const Variable&) { return rdiv(add(square(v), 1.0), 1.0); });
}

Variable arctan2(const Variable& x1, const Variable& x2) {
  rensa::detail::ForwardEntry entry("arctan2", x1, x2);
  detail::check_floating("arctan2", x1, "x1");
  detail::check_floating("arctan2", x2, "x2");
  detail::check_same_dtype_device("arctan2", {&x1, &x2});
  Array y = detail::binary("arctan2", BinaryOp::arctan2, x1.array(), x2.array());
  return record1("arctan2", {x1, x2}, std::move(y), [x1, x2](const BackwardContext& ctx) {
    const Variable g = div(ctx.grad_output(), add(square(x1), square(x2)));
    return std::vector<Variable>{ctx.needs_grad(0) ? detail::grad_to_shape(mul(g, x2), x1.shape()) : Variable(),
                                 ctx.needs_grad(1) ? detail::grad_to_shape(neg(mul(g, x1)), x2.shape()) : Variable()};
  });
}

Variable sinh(const Variable& x) {
  return detail::elementwise("sinh", UnaryOp::sinh, x, [](const Variable& v, const Variable&) { return cosh(v); });
}

Variable cosh(const Variable& x) {
  return detail::elementwise("cosh", UnaryOp::cosh, x, [](const Variable& v, const Variable&) { return sinh(v); });
}

Variable arctanh(const Variable& x) {
  return detail::elementwise("arctanh", UnaryOp::arctanh, x,
                             [](const Variable& v, const Variable&) { return rdiv(rsub(square(v), 1.0), 1.0); });
}

}  // namespace rensa::functions
