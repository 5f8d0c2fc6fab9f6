// Elementwise arithmetic. Each function: checks, allocation + kernel (through detail helpers), and
// the backward written with these same functions so it can be differentiated again.
#include "rensa/functions/basic_math.h"

#include "rensa/functions/reduction.h"
#include "src/functions/common.h"

namespace rensa::functions {
namespace {

using Grads = std::vector<Variable>;

// Gradient for a broadcast operand: reduce gy back to the operand's shape.
Variable to_shape(const Variable& g, const Shape& shape) { return g.shape() == shape ? g : sum_to(g, shape); }

// A constant (non-differentiable) 0/1 mask of x's dtype.
Array mask(const char* op, BinaryOp cmp, const Array& a, const Array& b) { return detail::binary(op, cmp, a, b); }

}  // namespace

Variable add(const Variable& a, const Variable& b) {
  rensa::detail::ForwardEntry entry("add", a, b);
  detail::check_same_dtype_device("add", {&a, &b});
  Array y = detail::binary("add", BinaryOp::add, a.array(), b.array());
  return record1("add", {a, b}, std::move(y), [sa = a.shape(), sb = b.shape()](const BackwardContext& ctx) {
    const Variable& gy = ctx.grad_output();
    return Grads{ctx.needs_grad(0) ? to_shape(gy, sa) : Variable(), ctx.needs_grad(1) ? to_shape(gy, sb) : Variable()};
  });
}

Variable sub(const Variable& a, const Variable& b) {
  rensa::detail::ForwardEntry entry("sub", a, b);
  detail::check_same_dtype_device("sub", {&a, &b});
  Array y = detail::binary("sub", BinaryOp::sub, a.array(), b.array());
  return record1("sub", {a, b}, std::move(y), [sa = a.shape(), sb = b.shape()](const BackwardContext& ctx) {
    const Variable& gy = ctx.grad_output();
    return Grads{ctx.needs_grad(0) ? to_shape(gy, sa) : Variable(),
                 ctx.needs_grad(1) ? to_shape(neg(gy), sb) : Variable()};
  });
}

Variable mul(const Variable& a, const Variable& b) {
  rensa::detail::ForwardEntry entry("mul", a, b);
  detail::check_same_dtype_device("mul", {&a, &b});
  Array y = detail::binary("mul", BinaryOp::mul, a.array(), b.array());
  return record1("mul", {a, b}, std::move(y), [a, b](const BackwardContext& ctx) {
    const Variable& gy = ctx.grad_output();
    return Grads{ctx.needs_grad(0) ? to_shape(mul(gy, b), a.shape()) : Variable(),
                 ctx.needs_grad(1) ? to_shape(mul(gy, a), b.shape()) : Variable()};
  });
}

Variable div(const Variable& a, const Variable& b) {
  rensa::detail::ForwardEntry entry("div", a, b);
  detail::check_same_dtype_device("div", {&a, &b});
  Array y = detail::binary("div", BinaryOp::div, a.array(), b.array());
  return record1("div", {a, b}, std::move(y), [a, b](const BackwardContext& ctx) {
    const Variable& gy = ctx.grad_output();
    Variable ga = div(gy, b);
    return Grads{ctx.needs_grad(0) ? to_shape(ga, a.shape()) : Variable(),
                 ctx.needs_grad(1) ? to_shape(neg(mul(ga, div(a, b))), b.shape()) : Variable()};
  });
}

Variable neg(const Variable& x) {
  rensa::detail::ForwardEntry entry("neg", x);
  RENSA_CHECK(!x.is_null(), ValueError, "neg: x is null");
  Array y = x.dtype() == Dtype::bool_ || !is_floating(x.dtype())
                ? detail::binary("neg", BinaryOp::sub, detail::scalar_like(0.0, x.array()), x.array())
                : detail::unary("neg", UnaryOp::neg, x.array());
  return record1("neg", {x}, std::move(y), [](const BackwardContext& ctx) { return Grads{neg(ctx.grad_output())}; });
}

Variable pow(const Variable& a, const Variable& b) {
  rensa::detail::ForwardEntry entry("pow", a, b);
  detail::check_same_dtype_device("pow", {&a, &b});
  detail::check_floating("pow", a, "a");
  Array y = detail::binary("pow", BinaryOp::pow, a.array(), b.array());
  return record1(
      "pow", {a, b}, std::move(y),
      [a, b](const BackwardContext& ctx) {
        const Variable& gy = ctx.grad_output();
        Variable ga, gb;
        if (ctx.needs_grad(0)) {
          const Variable one(detail::scalar_like(1.0, b.array()));
          ga = to_shape(mul(gy, mul(b, pow(a, sub(b, one)))), a.shape());
        }
        if (ctx.needs_grad(1)) gb = to_shape(mul(gy, mul(ctx.output(), log(a))), b.shape());
        return Grads{ga, gb};
      },
      true);
}

Variable pow(const Variable& x, double exponent) {
  rensa::detail::ForwardEntry entry("pow", x);
  detail::check_floating("pow", x);
  Array y = detail::unary("pow", UnaryOp::pow_scalar, x.array(), exponent);
  return record1("pow", {x}, std::move(y), [x, exponent](const BackwardContext& ctx) {
    // x ** 0 is constant: its gradient is 0 also at x = 0, where x ** -1 * 0 would be NaN.
    if (exponent == 0.0) return Grads{mul(ctx.grad_output(), 0.0)};
    return Grads{mul(ctx.grad_output(), mul(pow(x, exponent - 1.0), exponent))};
  });
}

Variable exp(const Variable& x) {
  rensa::detail::ForwardEntry entry("exp", x);
  detail::check_floating("exp", x);
  return record1(
      "exp", {x}, detail::unary("exp", UnaryOp::exp, x.array()),
      [](const BackwardContext& ctx) { return Grads{mul(ctx.grad_output(), ctx.output())}; }, true);
}

Variable log(const Variable& x) {
  rensa::detail::ForwardEntry entry("log", x);
  detail::check_floating("log", x);
  return record1("log", {x}, detail::unary("log", UnaryOp::log, x.array()),
                 [x](const BackwardContext& ctx) { return Grads{div(ctx.grad_output(), x)}; });
}

Variable sqrt(const Variable& x) {
  rensa::detail::ForwardEntry entry("sqrt", x);
  detail::check_floating("sqrt", x);
  return record1(
      "sqrt", {x}, detail::unary("sqrt", UnaryOp::sqrt, x.array()),
      [](const BackwardContext& ctx) { return Grads{div(mul(ctx.grad_output(), 0.5), ctx.output())}; }, true);
}

Variable square(const Variable& x) {
  rensa::detail::ForwardEntry entry("square", x);
  detail::check_floating("square", x);
  return record1("square", {x}, detail::unary("square", UnaryOp::square, x.array()),
                 [x](const BackwardContext& ctx) { return Grads{mul(ctx.grad_output(), mul(x, 2.0))}; });
}

Variable abs(const Variable& x) {
  rensa::detail::ForwardEntry entry("abs", x);
  detail::check_floating("abs", x);
  return record1("abs", {x}, detail::unary("abs", UnaryOp::abs, x.array()), [x](const BackwardContext& ctx) {
    return Grads{mul(ctx.grad_output(), Variable(detail::unary("abs", UnaryOp::sign, x.array())))};
  });
}

namespace {
// maximum/minimum: `pick_a` is 1 where a is chosen (ties go to a).
Variable select_extreme(const char* op, BinaryOp kop, BinaryOp cmp, const Variable& a, const Variable& b) {
  rensa::detail::ForwardEntry entry(op, a, b);
  detail::check_same_dtype_device(op, {&a, &b});
  Array y = detail::binary(op, kop, a.array(), b.array());
  return record1(op, {a, b}, std::move(y), [a, b, op, cmp](const BackwardContext& ctx) {
    const Variable& gy = ctx.grad_output();
    Array pick_a = mask(op, cmp, a.array(), b.array());
    Array pick_b = detail::binary(op, BinaryOp::sub, detail::scalar_like(1.0, pick_a), pick_a);
    return Grads{ctx.needs_grad(0) ? to_shape(mul(gy, Variable(pick_a)), a.shape()) : Variable(),
                 ctx.needs_grad(1) ? to_shape(mul(gy, Variable(pick_b)), b.shape()) : Variable()};
  });
}
}  // namespace

Variable maximum(const Variable& a, const Variable& b) {
  return select_extreme("maximum", BinaryOp::maximum, BinaryOp::ge, a, b);
}
Variable minimum(const Variable& a, const Variable& b) {
  return select_extreme("minimum", BinaryOp::minimum, BinaryOp::le, a, b);
}

Variable clip(const Variable& x, double lo, double hi) {
  rensa::detail::ForwardEntry entry("clip", x);
  detail::check_floating("clip", x);
  RENSA_CHECK(lo < hi, ValueError, "clip: x_min must be less than x_max, got x_min ", lo, " and x_max ", hi,
              " (x ", x.shape(), ")");
  Array y = detail::unary("clip", UnaryOp::clip, x.array(), lo, hi);
  return record1("clip", {x}, std::move(y), [x, lo, hi](const BackwardContext& ctx) {
    const Array& xa = x.array();
    Array inside = detail::binary("clip", BinaryOp::mul,
                                  mask("clip", BinaryOp::ge, xa, detail::scalar_like(lo, xa)),
                                  mask("clip", BinaryOp::le, xa, detail::scalar_like(hi, xa)));
    return Grads{mul(ctx.grad_output(), Variable(inside))};
  });
}

Variable add(const Variable& x, double value) {
  rensa::detail::ForwardEntry entry("add", x);
  RENSA_CHECK(!x.is_null(), ValueError, "add: x is null");
  if (!is_floating(x.dtype())) return add(x, Variable(detail::scalar_like(value, x.array())));
  return record1("add", {x}, detail::unary("add", UnaryOp::affine, x.array(), 1.0, value),
                 [](const BackwardContext& ctx) { return Grads{ctx.grad_output()}; });
}

Variable mul(const Variable& x, double value) {
  rensa::detail::ForwardEntry entry("mul", x);
  RENSA_CHECK(!x.is_null(), ValueError, "mul: x is null");
  if (!is_floating(x.dtype())) return mul(x, Variable(detail::scalar_like(value, x.array())));
  return record1("mul", {x}, detail::unary("mul", UnaryOp::affine, x.array(), value, 0.0),
                 [value](const BackwardContext& ctx) { return Grads{mul(ctx.grad_output(), value)}; });
}

Variable rsub(const Variable& x, double value) {
  rensa::detail::ForwardEntry entry("rsub", x);
  RENSA_CHECK(!x.is_null(), ValueError, "rsub: x is null");
  if (!is_floating(x.dtype())) return sub(Variable(detail::scalar_like(value, x.array())), x);
  return record1("rsub", {x}, detail::unary("rsub", UnaryOp::affine, x.array(), -1.0, value),
                 [](const BackwardContext& ctx) { return Grads{neg(ctx.grad_output())}; });
}

Variable rdiv(const Variable& x, double value) {
  RENSA_CHECK(!x.is_null(), ValueError, "rdiv: x is null");
  return div(Variable(detail::scalar_like(value, x.array())), x);
}

}  // namespace rensa::functions

namespace rensa {
namespace F = functions;
Variable operator+(const Variable& a, const Variable& b) { return F::add(a, b); }
Variable operator-(const Variable& a, const Variable& b) { return F::sub(a, b); }
Variable operator*(const Variable& a, const Variable& b) { return F::mul(a, b); }
Variable operator/(const Variable& a, const Variable& b) { return F::div(a, b); }
Variable operator-(const Variable& x) { return F::neg(x); }
Variable operator+(const Variable& a, double b) { return F::add(a, b); }
Variable operator+(double a, const Variable& b) { return F::add(b, a); }
Variable operator-(const Variable& a, double b) {
  // x + (-b) is exact for floats; integers subtract, since an unsigned dtype cannot hold -b.
  if (!a.is_null() && !is_floating(a.dtype())) return F::sub(a, Variable(functions::detail::scalar_like(b, a.array())));
  return F::add(a, -b);
}
Variable operator-(double a, const Variable& b) { return F::rsub(b, a); }
Variable operator*(const Variable& a, double b) { return F::mul(a, b); }
Variable operator*(double a, const Variable& b) { return F::mul(b, a); }
Variable operator/(const Variable& a, double b) {
  // A true division: x * (1 / b) rounds differently, and 1 / b is 0 in an integer dtype.
  RENSA_CHECK(!a.is_null(), ValueError, "div: x is null");
  return F::div(a, Variable(functions::detail::scalar_like(b, a.array())));
}
Variable operator/(double a, const Variable& b) { return F::rdiv(b, a); }
}  // namespace rensa
