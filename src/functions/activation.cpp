// Activation functions. Forwards are single unary kernels (softmax and log_softmax: a few
// array-level steps, recorded as one function); backwards are written with differentiable
// functions, reading the output through ctx.output() where the derivative is a function of it.
#include "rensa/functions/activation.h"

#include "rensa/functions/basic_math.h"
#include "rensa/functions/reduction.h"
#include "src/functions/common.h"

namespace rensa::functions {
namespace {

using Grads = std::vector<Variable>;

// A constant 0/1 mask in x's dtype: 1 where `x cmp value`.
Array mask(const char* op, BinaryOp cmp, const Array& x, double value) {
  return detail::binary(op, cmp, x, detail::scalar_like(value, x));
}

// Applies a unary kernel in place (elementwise kernels allow out == in).
void unary_inplace(const char* op, UnaryOp kop, const Array& x, double p0 = 0.0, double p1 = 0.0) {
  RENSA_KERNEL(x.device(), unary, op)(kop, x, x, p0, p1);
}

// out = op(out, b) with b broadcast to out's shape, in place.
void binary_inplace(const char* op, BinaryOp kop, const Array& out, const Array& b) {
  RENSA_KERNEL(out.device(), binary, op)(kop, out, b.broadcast_to(out.shape()), out);
}

// x - max(x, axis) with the max of an all-(-inf) (or inf/NaN) slice taken as 0, so no inf - inf.
Array shifted(const char* op, const Array& x, int64_t axis) {
  Array m = detail::reduce(op, ReduceOp::max, x, Shape{axis}, true, x.dtype());
  unary_inplace(op, UnaryOp::finite_or_zero, m);
  return detail::binary(op, BinaryOp::sub, x, m);
}

}  // namespace

Variable relu(const Variable& x) {
  detail::check_floating("relu", x);
  return record1(
      "relu", {x}, detail::unary("relu", UnaryOp::relu, x.array()),
      [](const BackwardContext& ctx) {
        return Grads{mul(ctx.grad_output(), Variable(mask("relu", BinaryOp::gt, ctx.output().array(), 0.0)))};
      },
      true);
}

Variable leaky_relu(const Variable& x, double slope) {
  detail::check_floating("leaky_relu", x);
  return record1("leaky_relu", {x}, detail::unary("leaky_relu", UnaryOp::leaky_relu, x.array(), slope),
                 [x, slope](const BackwardContext& ctx) {
                   // 1 where x > 0, slope elsewhere (at x = 0 too, as Chainer and PyTorch); read
                   // from x, since y's sign says nothing when slope <= 0.
                   Array d = mask("leaky_relu", BinaryOp::gt, x.array(), 0.0);
                   unary_inplace("leaky_relu", UnaryOp::affine, d, 1.0 - slope, slope);
                   return Grads{mul(ctx.grad_output(), Variable(d))};
                 });
}

Variable elu(const Variable& x, double alpha) {
  detail::check_floating("elu", x);
  return record1(
      "elu", {x}, detail::unary("elu", UnaryOp::elu, x.array(), alpha),
      [x, alpha](const BackwardContext& ctx) {
        // dy/dx = 1 for x > 0, alpha exp(x) = y + alpha otherwise (alpha at x = 0, as Chainer).
        Array pos = mask("elu", BinaryOp::gt, x.array(), 0.0);
        Array neg = detail::unary("elu", UnaryOp::affine, pos, -1.0, 1.0);
        Variable d = add(mul(add(ctx.output(), alpha), Variable(neg)), Variable(pos));
        return Grads{mul(ctx.grad_output(), d)};
      },
      true);
}

Variable sigmoid(const Variable& x) {
  detail::check_floating("sigmoid", x);
  return record1(
      "sigmoid", {x}, detail::unary("sigmoid", UnaryOp::sigmoid, x.array()),
      [](const BackwardContext& ctx) {
        const Variable y = ctx.output();
        return Grads{mul(ctx.grad_output(), mul(y, rsub(y, 1.0)))};
      },
      true);
}

Variable tanh(const Variable& x) {
  detail::check_floating("tanh", x);
  return record1(
      "tanh", {x}, detail::unary("tanh", UnaryOp::tanh, x.array()),
      [](const BackwardContext& ctx) { return Grads{mul(ctx.grad_output(), rsub(square(ctx.output()), 1.0))}; }, true);
}

Variable softplus(const Variable& x, double beta) {
  detail::check_floating("softplus", x);
  RENSA_CHECK(beta != 0.0, ValueError, "softplus: beta must be nonzero, got ", beta, " (x ", x.shape(), ")");
  Array y;
  if (beta == 1.0) {
    y = detail::unary("softplus", UnaryOp::softplus, x.array());
  } else {
    y = detail::unary("softplus", UnaryOp::affine, x.array(), beta, 0.0);
    unary_inplace("softplus", UnaryOp::softplus, y);
    unary_inplace("softplus", UnaryOp::affine, y, 1.0 / beta, 0.0);
  }
  return record1("softplus", {x}, std::move(y), [x, beta](const BackwardContext& ctx) {
    return Grads{mul(ctx.grad_output(), sigmoid(beta == 1.0 ? x : mul(x, beta)))};
  });
}

Variable softmax(const Variable& x, int64_t axis) {
  detail::check_floating("softmax", x);
  const int64_t ax = normalize_axis(axis, x.ndim(), "softmax");
  Array y;
  if (x.size() == 0) {
    y = Array::empty(x.shape(), x.dtype(), x.device());
  } else {
    y = shifted("softmax", x.array(), ax);
    unary_inplace("softmax", UnaryOp::exp, y);
    binary_inplace("softmax", BinaryOp::div, y,
                   detail::reduce("softmax", ReduceOp::sum, y, Shape{ax}, true, y.dtype()));
  }
  return record1(
      "softmax", {x}, std::move(y),
      [ax](const BackwardContext& ctx) {
        const Variable y = ctx.output();
        const Variable& gy = ctx.grad_output();
        return Grads{mul(y, sub(gy, sum(mul(gy, y), Shape{ax}, true)))};
      },
      true);
}

Variable log_softmax(const Variable& x, int64_t axis) {
  detail::check_floating("log_softmax", x);
  const int64_t ax = normalize_axis(axis, x.ndim(), "log_softmax");
  Array y;
  if (x.size() == 0) {
    y = Array::empty(x.shape(), x.dtype(), x.device());
  } else {
    y = shifted("log_softmax", x.array(), ax);
    Array e = detail::unary("log_softmax", UnaryOp::exp, y);
    Array lse = detail::reduce("log_softmax", ReduceOp::sum, e, Shape{ax}, true, e.dtype());
    unary_inplace("log_softmax", UnaryOp::log, lse);
    binary_inplace("log_softmax", BinaryOp::sub, y, lse);
  }
  return record1(
      "log_softmax", {x}, std::move(y),
      [ax](const BackwardContext& ctx) {
        const Variable& gy = ctx.grad_output();
        return Grads{sub(gy, mul(exp(ctx.output()), sum(gy, Shape{ax}, true)))};
      },
      true);
}

}  // namespace rensa::functions
