// Reductions over axes.
#include "rensa/functions/reduction.h"

#include <algorithm>
#include <cmath>

#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "src/functions/common.h"
#include "src/functions/scan.h"

namespace rensa::functions {
namespace {

using Grads = std::vector<Variable>;

// The shape of x with `axes` (sorted) set to 1: where a reduced result broadcasts back.
Shape kept_shape(const Shape& shape, const Shape& axes) {
  Shape s = shape;
  for (int64_t a : axes) s[static_cast<std::size_t>(a)] = 1;
  return s;
}

// Broadcasts a (possibly squeezed) reduction gradient back to the input's shape.
Variable expand_back(const Variable& g, const Shape& in_shape, const Shape& axes) {
  return broadcast_to(reshape(g, kept_shape(in_shape, axes)), in_shape);
}

Variable extreme(const char* op, ReduceOp kop, const Variable& x, const Shape& axes_in, bool keepdims) {
  rensa::detail::ForwardEntry entry(op, x);
  RENSA_CHECK(!x.is_null(), ValueError, op, ": x is null");
  const Shape axes = detail::normalize_axes(op, axes_in, x.ndim());
  for (int64_t a : axes) {
    RENSA_CHECK(x.shape()[static_cast<std::size_t>(a)] > 0, ValueError, op, ": zero-size axis ", a, " of shape ",
                x.shape(), " has no ", op);
  }
  Array y = detail::reduce(op, kop, x.array(), axes, keepdims, x.dtype());
  return record1(
      op, {x}, std::move(y),
      [x, axes, op](const BackwardContext& ctx) {
        const Shape ks = kept_shape(x.shape(), axes);
        Array yk = ctx.output().array().reshape(ks);
        Array hit = detail::binary(op, BinaryOp::eq, x.array(), yk);  // 1 where x attains the extreme
        return Grads{mul(expand_back(ctx.grad_output(), x.shape(), axes), Variable(hit))};
      },
      true);
}

Variable arg_extreme(const char* op, ReduceOp kop, const Variable& x, std::optional<int64_t> axis, bool keepdims) {
  RENSA_CHECK(!x.is_null(), ValueError, op, ": x is null");
  Array a = x.array();
  Shape axes;
  if (axis) {
    axes.push_back(normalize_axis(*axis, x.ndim(), op));
  } else {
    a = a.reshape(Shape{a.size()});
    axes.push_back(0);
  }
  RENSA_CHECK(a.shape()[static_cast<std::size_t>(axes[0])] > 0, ValueError, op,
              ": attempt to get the index of an empty sequence, shape ", x.shape());
  Array r = detail::reduce(op, kop, a, axes, true, Dtype::int64);
  if (!keepdims) r = r.squeeze(axes);
  else if (!axis) r = r.reshape(Shape(static_cast<std::size_t>(x.ndim()), 1));
  return Variable(r);
}

}  // namespace

Variable sum(const Variable& x, const Shape& axes_in, bool keepdims) {
  rensa::detail::ForwardEntry entry("sum", x);
  RENSA_CHECK(!x.is_null(), ValueError, "sum: x is null");
  const Shape axes = detail::normalize_axes("sum", axes_in, x.ndim());
  const Dtype out = x.dtype() == Dtype::bool_ || x.dtype() == Dtype::uint8 || x.dtype() == Dtype::int32
                        ? Dtype::int64
                        : x.dtype();
  Array y = detail::reduce("sum", ReduceOp::sum, x.array(), axes, keepdims, out);
  return record1("sum", {x}, std::move(y), [shape = x.shape(), axes](const BackwardContext& ctx) {
    return Grads{expand_back(ctx.grad_output(), shape, axes)};
  });
}

Variable mean(const Variable& x, const Shape& axes_in, bool keepdims) {
  rensa::detail::ForwardEntry entry("mean", x);
  detail::check_floating("mean", x);
  const Shape axes = detail::normalize_axes("mean", axes_in, x.ndim());
  int64_t n = 1;
  for (int64_t a : axes) n *= x.shape()[static_cast<std::size_t>(a)];
  // The mean of nothing is NaN, as NumPy.
  const double scale = n == 0 ? NAN : 1.0 / static_cast<double>(n);
  if (!is_half(x.dtype())) return mul(sum(x, axes, keepdims), scale);
  // 16-bit floats: sum and scale in float32 and round once, so that a mean whose sum exceeds the
  // float16 range (65504) stays finite.
  Array s = detail::reduce("mean", ReduceOp::sum, x.array(), axes, keepdims, Dtype::float32);
  Array y = detail::unary("mean", UnaryOp::affine, s, scale, 0.0).astype(x.dtype());
  return record1("mean", {x}, std::move(y), [shape = x.shape(), axes, scale](const BackwardContext& ctx) {
    return Grads{mul(expand_back(ctx.grad_output(), shape, axes), scale)};
  });
}

Variable max(const Variable& x, const Shape& axes, bool keepdims) {
  return extreme("max", ReduceOp::max, x, axes, keepdims);
}
Variable min(const Variable& x, const Shape& axes, bool keepdims) {
  return extreme("min", ReduceOp::min, x, axes, keepdims);
}
Variable argmax(const Variable& x, std::optional<int64_t> axis, bool keepdims) {
  return arg_extreme("argmax", ReduceOp::argmax, x, axis, keepdims);
}
Variable argmin(const Variable& x, std::optional<int64_t> axis, bool keepdims) {
  return arg_extreme("argmin", ReduceOp::argmin, x, axis, keepdims);
}

Variable logsumexp(const Variable& x, const Shape& axes_in, bool keepdims) {
  detail::check_floating("logsumexp", x);
  // 16-bit floats are computed in float32 (a float16 sum of exponentials overflows past 65504 terms).
  if (is_half(x.dtype())) {
    return cast(logsumexp(cast(x, Dtype::float32), axes_in, keepdims), x.dtype());
  }
  const Shape axes = detail::normalize_axes("logsumexp", axes_in, x.ndim());
  for (int64_t a : axes) {
    RENSA_CHECK(x.shape()[static_cast<std::size_t>(a)] > 0, ValueError, "logsumexp: zero-size axis ", a,
                " of shape ", x.shape());
  }
  // The shift m is a constant (its gradient contributions cancel), so it is not recorded.
  Array m = detail::reduce("logsumexp", ReduceOp::max, x.array(), axes, true, x.dtype());
  m = detail::unary("logsumexp", UnaryOp::finite_or_zero, m);
  Variable mv(m);
  Variable y = add(log(sum(exp(sub(x, mv)), axes, true)), mv);
  return keepdims ? y : squeeze(y, axes);
}

Variable sum_to(const Variable& x, const Shape& shape) {
  rensa::detail::ForwardEntry entry("sum_to", x);
  RENSA_CHECK(!x.is_null(), ValueError, "sum_to: x is null");
  broadcast_shapes(shape, x.shape(), "sum_to");
  Array y = detail::sum_to(x.array(), shape);
  return record1("sum_to", {x}, std::move(y), [in = x.shape()](const BackwardContext& ctx) {
    return Grads{broadcast_to(ctx.grad_output(), in)};
  });
}

Variable prod(const Variable& x, const Shape& axes_in, bool keepdims) {
  rensa::detail::ForwardEntry entry("prod", x);
  detail::check_floating("prod", x);
  const Shape axes = detail::normalize_axes("prod", axes_in, x.ndim());
  Array y = detail::reduce("prod", ReduceOp::prod, x.array(), axes, keepdims, x.dtype());
  return record1("prod", {x}, std::move(y), [x, axes](const BackwardContext& ctx) {
    // Reduced axes first, flattened to one: gx[r] = (product before r) * (product after r).
    Shape perm = axes, kept;
    for (int64_t d = 0; d < x.ndim(); ++d) {
      if (std::find(axes.begin(), axes.end(), d) == axes.end()) {
        perm.push_back(d);
        kept.push_back(x.shape()[static_cast<std::size_t>(d)]);
      }
    }
    const Variable xt = transpose(x, perm);
    Shape flat{1};
    for (int64_t a : axes) flat[0] *= x.shape()[static_cast<std::size_t>(a)];
    for (int64_t k : kept) flat.push_back(k);
    const Variable xr = reshape(xt, flat);
    const Variable before = detail::shift_prev(detail::scan_prod(xr, 0, false), 0, false, 1.0);
    const Variable after = detail::shift_prev(detail::scan_prod(xr, 0, true), 0, true, 1.0);
    Shape inverse(perm.size(), 0);
    for (std::size_t i = 0; i < perm.size(); ++i) inverse[static_cast<std::size_t>(perm[i])] = static_cast<int64_t>(i);
    const Variable others = transpose(reshape(mul(before, after), xt.shape()), inverse);
    return Grads{mul(others, expand_back(ctx.grad_output(), x.shape(), axes))};
  });
}

Variable average(const Variable& x, const Shape& axes_in, const Variable& weights, bool keepdims) {
  if (weights.is_null()) return mean(x, axes_in, keepdims);
  detail::check_floating("average", x);
  detail::check_same_dtype_device("average", {&x, &weights});
  const Shape axes = detail::normalize_axes("average", axes_in, x.ndim(), false);
  RENSA_CHECK(axes.size() <= 1, ValueError, "average: weights with several axes ", axes_in,
              " are not supported (x ", x.shape(), ")");
  Variable w = weights;
  if (axes.empty()) {
    RENSA_CHECK(weights.shape() == x.shape(), ShapeError, "average: weights ", weights.shape(),
                " must have the shape of x ", x.shape(), " when no axis is given");
  } else {
    const auto a = static_cast<std::size_t>(axes[0]);
    RENSA_CHECK(weights.shape() == Shape{x.shape()[a]}, ShapeError, "average: weights ", weights.shape(),
                " must be 1-d of the extent of axis ", axes[0], " of x ", x.shape());
    Shape ws(x.shape().size(), 1);
    ws[a] = x.shape()[a];
    w = broadcast_to(reshape(weights, ws), x.shape());
  }
  Variable total = sum(mul(x, w), axes, keepdims);
  return div(total, broadcast_to(sum(weights), total.shape()));
}

Variable batch_l2_norm_squared(const Variable& x) {
  detail::check_floating("batch_l2_norm_squared", x);
  RENSA_CHECK(x.ndim() >= 2, ShapeError, "batch_l2_norm_squared: x must have at least 2 axes, got shape ",
              x.shape());
  const int64_t n = x.shape()[0];
  int64_t rest = 1;
  for (std::size_t d = 1; d < x.shape().size(); ++d) rest *= x.shape()[d];
  return sum(square(reshape(x, Shape{n, rest})), Shape{1});
}

}  // namespace rensa::functions
