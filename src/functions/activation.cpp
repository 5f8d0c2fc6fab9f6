// Activation functions. Forwards are single unary kernels (softmax and log_softmax: a few
// array-level steps, recorded as one function); backwards are written with differentiable
// functions, reading the output through ctx.output() where the derivative is a function of it.
#include "rensa/functions/activation.h"

#include "rensa/core/config.h"
#include "rensa/functions/array_ops.h"
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

// A constant 0/1 mask in x's dtype: 1 where lo < x < hi.
Array open_interval(const char* op, const Array& x, double lo, double hi) {
  return detail::binary(op, BinaryOp::mul, mask(op, BinaryOp::gt, x, lo), mask(op, BinaryOp::lt, x, hi));
}

// min(max(0, x), z) under the name `op`.
Variable clipped(const char* op, const Variable& x, double z) {
  rensa::detail::ForwardEntry entry(op, x);
  detail::check_floating(op, x);
  RENSA_CHECK(z > 0.0, ValueError, op, ": z must be positive, got ", z, " (x ", x.shape(), ")");
  return record1(op, {x}, detail::unary(op, UnaryOp::clip, x.array(), 0.0, z),
                 [op, x, z](const BackwardContext& ctx) {
                   return Grads{mul(ctx.grad_output(), Variable(open_interval(op, x.array(), 0.0, z)))};
                 });
}

// `p` reshaped to broadcast against x with its axes at x's axes 1 .. p.ndim (prelu, swish).
Variable channel_param(const char* op, const char* what, const Variable& x, const Variable& p) {
  detail::check_floating(op, x);
  RENSA_CHECK(!p.is_null(), ValueError, op, ": ", what, " is null");
  RENSA_CHECK(p.dtype() == x.dtype(), DtypeError, op, ": ", what, " has dtype ", p.dtype(), ", x ", x.dtype());
  detail::check_same_device(op, {&x, &p});
  const int64_t k = p.ndim();
  bool fits = x.ndim() > k;
  for (int64_t i = 0; fits && i < k; ++i) fits = x.shape()[static_cast<std::size_t>(1 + i)] == p.shape()[static_cast<std::size_t>(i)];
  RENSA_CHECK(fits, ShapeError, op, ": ", what, " ", p.shape(), " must match the axes 1 .. ", k, " of x ", x.shape());
  Shape shape{1};
  for (int64_t d : p.shape()) shape.push_back(d);
  while (static_cast<int64_t>(shape.size()) < x.ndim()) shape.push_back(1);
  return broadcast_to(reshape(p, shape), x.shape());
}

// 1 where x >= 0, `neg` elsewhere: d(where(x >= 0, x, neg * x))/dx for a constant neg.
Array nonnegative_mask(const char* op, const Array& x) { return mask(op, BinaryOp::ge, x, 0.0); }

}  // namespace

Variable clipped_relu(const Variable& x, double z) { return clipped("clipped_relu", x, z); }

Variable relu6(const Variable& x) { return clipped("relu6", x, 6.0); }

Variable crelu(const Variable& x, int64_t axis) {
  detail::check_floating("crelu", x);
  const int64_t ax = normalize_axis(axis, x.ndim(), "crelu");
  return concat({relu(x), relu(neg(x))}, ax);
}

Variable hard_sigmoid(const Variable& x) {
  rensa::detail::ForwardEntry entry("hard_sigmoid", x);
  detail::check_floating("hard_sigmoid", x);
  Array y = detail::unary("hard_sigmoid", UnaryOp::affine, x.array(), 0.2, 0.5);
  unary_inplace("hard_sigmoid", UnaryOp::clip, y, 0.0, 1.0);
  return record1("hard_sigmoid", {x}, std::move(y), [x](const BackwardContext& ctx) {
    Array d = open_interval("hard_sigmoid", x.array(), -2.5, 2.5);
    unary_inplace("hard_sigmoid", UnaryOp::affine, d, 0.2, 0.0);
    return Grads{mul(ctx.grad_output(), Variable(d))};
  });
}

Variable maxout(const Variable& x, int64_t pool_size, int64_t axis) {
  RENSA_CHECK(!x.is_null(), ValueError, "maxout: x is null");
  RENSA_CHECK(pool_size > 0, ValueError, "maxout: pool_size must be positive, got ", pool_size, " (x ", x.shape(),
              ")");
  const int64_t ax = normalize_axis(axis, x.ndim(), "maxout");
  const int64_t n = x.shape()[static_cast<std::size_t>(ax)];
  RENSA_CHECK(n % pool_size == 0, ShapeError, "maxout: pool_size ", pool_size, " does not divide axis ", axis,
              " (size ", n, ") of x ", x.shape());
  Shape shape;
  for (int64_t i = 0; i < x.ndim(); ++i) {
    if (i == ax) {
      shape.push_back(n / pool_size);
      shape.push_back(pool_size);
    } else {
      shape.push_back(x.shape()[static_cast<std::size_t>(i)]);
    }
  }
  return max(reshape(x, shape), Shape{ax + 1});
}

Variable prelu(const Variable& x, const Variable& W) {
  const Variable w = channel_param("prelu", "W", x, W);
  const Array pos = nonnegative_mask("prelu", x.array());
  const Array negative = detail::unary("prelu", UnaryOp::affine, pos, -1.0, 1.0);
  // x * (pos + (1 - pos) * W): gradients reach x and W, to any order.
  return mul(x, add(Variable(pos), mul(Variable(negative), w)));
}

Variable rrelu(const Variable& x, double l, double u, Array* r, Generator* gen) {
  detail::check_floating("rrelu", x);
  RENSA_CHECK(0.0 <= l && l < u && u < 1.0, ValueError, "rrelu: need 0 <= l < u < 1, got l ", l, " and u ", u);
  Array slope;
  if (!config().train) {
    slope = Array::full(x.shape(), 0.5 * (l + u), x.dtype(), x.device());
  } else if (r != nullptr && !r->is_null()) {
    RENSA_CHECK(r->dtype() == x.dtype(), DtypeError, "rrelu: r has dtype ", r->dtype(), ", x ", x.dtype());
    RENSA_CHECK(r->shape() == x.shape(), ShapeError, "rrelu: r ", r->shape(), " must have x's shape ", x.shape());
    slope = r->device() == x.device() ? *r : r->to(x.device());
  } else {
    slope = random::uniform(x.shape(), l, u, x.dtype(), x.device(), gen);
  }
  if (r != nullptr && r->is_null()) *r = slope;
  // 1 where x >= 0, r elsewhere; a constant, so the gradient is d * gy to any order.
  const Array pos = nonnegative_mask("rrelu", x.array());
  Array d = detail::unary("rrelu", UnaryOp::affine, pos, -1.0, 1.0);
  binary_inplace("rrelu", BinaryOp::mul, d, slope);
  binary_inplace("rrelu", BinaryOp::add, d, pos);
  return mul(x, Variable(d));
}

Variable selu(const Variable& x, double alpha, double scale) {
  detail::check_floating("selu", x);
  return mul(elu(x, alpha), scale);
}

Variable swish(const Variable& x, const Variable& beta) {
  const Variable b = channel_param("swish", "beta", x, beta);
  return mul(x, sigmoid(mul(b, x)));
}

namespace {
// gy where relu's output y is positive, else 0, in one pass (Chainer's ReLUGrad2); linear in gy,
// y a constant.
Variable relu_grad(const Variable& gy, const Array& y) {
  rensa::detail::ForwardEntry entry("relu_grad", gy);
  Array gx = detail::binary("relu", BinaryOp::relu_grad, gy.array(), y);
  return record1("relu_grad", {gy}, std::move(gx),
                 [y](const BackwardContext& ctx) { return Grads{relu_grad(ctx.grad_output(), y)}; });
}
}  // namespace

Variable relu(const Variable& x) {
  rensa::detail::ForwardEntry entry("relu", x);
  detail::check_floating("relu", x);
  return record1(
      "relu", {x}, detail::unary("relu", UnaryOp::relu, x.array()),
      [](const BackwardContext& ctx) { return Grads{relu_grad(ctx.grad_output(), ctx.output().array())}; }, true);
}

Variable leaky_relu(const Variable& x, double slope) {
  rensa::detail::ForwardEntry entry("leaky_relu", x);
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
  rensa::detail::ForwardEntry entry("elu", x);
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
  rensa::detail::ForwardEntry entry("sigmoid", x);
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
  rensa::detail::ForwardEntry entry("tanh", x);
  detail::check_floating("tanh", x);
  return record1(
      "tanh", {x}, detail::unary("tanh", UnaryOp::tanh, x.array()),
      [](const BackwardContext& ctx) { return Grads{mul(ctx.grad_output(), rsub(square(ctx.output()), 1.0))}; }, true);
}

Variable softplus(const Variable& x, double beta) {
  rensa::detail::ForwardEntry entry("softplus", x);
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
  rensa::detail::ForwardEntry entry("softmax", x);
  detail::check_floating("softmax", x);
  // 16-bit inputs are normalized in float32 and rounded once (docs/mixed_precision.md).
  if (is_half(x.dtype())) return cast(softmax(cast(x, Dtype::float32), axis), x.dtype());
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
  rensa::detail::ForwardEntry entry("log_softmax", x);
  detail::check_floating("log_softmax", x);
  if (is_half(x.dtype())) return cast(log_softmax(cast(x, Dtype::float32), axis), x.dtype());
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
