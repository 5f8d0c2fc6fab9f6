// Rounding (no gradient, as Chainer), sign and fmod.
#include "rensa/functions/rounding.h"

#include "src/functions/elementwise.h"

namespace rensa::functions {
namespace {

// A rounding of x with no creator; whole numbers are their own rounding.
Variable rounded(const char* op, UnaryOp kop, const Variable& x) {
  RENSA_CHECK(!x.is_null(), ValueError, op, ": x is null");
  if (!is_floating(x.dtype())) return Variable(x.array().copy());
  return Variable(detail::unary(op, kop, x.array()));
}

}  // namespace

Variable floor(const Variable& x) {
  return rounded("floor", UnaryOp::floor, x);
}
Variable ceil(const Variable& x) {
  return rounded("ceil", UnaryOp::ceil, x);
}
Variable fix(const Variable& x) {
  return rounded("fix", UnaryOp::fix, x);
}

Variable sign(const Variable& x) {
  RENSA_CHECK(!x.is_null(), ValueError, "sign: x is null");
  RENSA_CHECK(x.dtype() != Dtype::bool_, DtypeError, "sign: x must be numeric, got bool with shape ", x.shape());
  if (is_floating(x.dtype())) return Variable(detail::unary("sign", UnaryOp::sign, x.array()));
  // Integers: (x > 0) - (x < 0) in x's dtype.
  const Array zero = detail::scalar_like(0.0, x.array());
  return Variable(detail::binary("sign", BinaryOp::sub, detail::binary("sign", BinaryOp::gt, x.array(), zero),
                                 detail::binary("sign", BinaryOp::lt, x.array(), zero)));
}

Variable fmod(const Variable& x, const Variable& divisor) {
  rensa::detail::ForwardEntry entry("fmod", x, divisor);
  detail::check_floating("fmod", x);
  detail::check_floating("fmod", divisor, "divisor");
  detail::check_same_dtype_device("fmod", {&x, &divisor});
  Array y = detail::binary("fmod", BinaryOp::fmod, x.array(), divisor.array());
  return record1("fmod", {x, divisor}, std::move(y), [x, divisor](const BackwardContext& ctx) {
    const Variable& gy = ctx.grad_output();
    Variable gd;
    if (ctx.needs_grad(1)) {
      const Array q = detail::binary("fmod", BinaryOp::div, x.array(), divisor.array());
      const Variable quotient(detail::unary("fmod", UnaryOp::fix, q));
      gd = detail::grad_to_shape(neg(mul(gy, quotient)), divisor.shape());
    }
    return std::vector<Variable>{ctx.needs_grad(0) ? detail::grad_to_shape(gy, x.shape()) : Variable(), gd};
  });
}

}  // namespace rensa::functions
