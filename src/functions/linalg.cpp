// Matrix products. Transposed operands are passed to the kernel as views (the cpu kernel reads
// them as column-major matrices), so no transpose is ever copied here.
#include "rensa/functions/linalg.h"

#include "rensa/core/config.h"
#include "rensa/functions/array_ops.h"
#include "rensa/functions/reduction.h"
#include "src/functions/common.h"

namespace rensa::functions {
namespace {

using Grads = std::vector<Variable>;

// The matrix view of an operand: 1-d promoted (a row for the left operand, a column for the
// right one), then the last two axes swapped when asked (a 1-d operand is never transposed).
Array as_matrix(const Array& x, bool left, bool trans) {
  if (x.ndim() == 1) return left ? x.reshape({1, x.shape()[0]}) : x.reshape({x.shape()[0], 1});
  return trans ? x.swapaxes(-1, -2) : x;
}

// The shape without its last two axes.
Shape batch_of(const Shape& s) {
  return Shape(std::span<const int64_t>(s.data(), s.size() - 2));
}

// Gradient of a promoted operand back to the operand: undo batch broadcasting, then promotion.
Variable to_operand(const Variable& g, const Shape& promoted, const Shape& shape) {
  Variable r = g.shape() == promoted ? g : sum_to(g, promoted);
  return r.shape() == shape ? r : reshape(r, shape);
}

const char* trans_note(bool trans) {
  return trans ? " (transposed)" : "";
}

// Streams " and b (shape)" for an optional bias, only when an error message is built.
struct BiasNote {
  const Variable& b;
};
std::ostream& operator<<(std::ostream& os, const BiasNote& n) {
  if (!n.b.is_null()) os << " and b " << n.b.shape();
  return os;
}

// linear's mixed form, x 16-bit and W, b float32: the product in x's dtype from W rounded to it (as
// casting W first would give), and W's and b's gradients accumulated in float32 and never rounded
// to 16 bits (gW = gy^T x on a float32 output, gb = sum gy in float32). Double backprop
// differentiates the cast-first composite.
Variable mixed_linear(const Variable& x, const Variable& W, const Variable& b, const Shape& x2_shape) {
  rensa::detail::ForwardEntry entry("linear", x, W, b);
  const Dtype dt = x.dtype();
  const Array x2 = x.array().reshape(x2_shape);
  const Array w16 = W.array().astype(dt);
  Array y = Array::empty({x2_shape[0], W.shape()[0]}, dt, x.device());
  RENSA_KERNEL(x.device(), matmul, "linear")(x2, w16.transpose(), y);
  if (!b.is_null() && y.size() > 0) {
    RENSA_KERNEL(x.device(), binary, "linear")(BinaryOp::add, y, b.array().astype(dt).broadcast_to(y.shape()), y);
  }
  return record1("linear", {x, W, b}, std::move(y), [x, W, b, x2, w16](const BackwardContext& ctx) {
    if (config().enable_backprop) {
      return detail::recompute_grads(ctx, {x, W, b}, [](const std::vector<Variable>& in) {
        const Dtype d = in[0].dtype();
        return std::vector<Variable>{
            linear(in[0], cast(in[1], d), in[2].is_null() ? Variable() : cast(in[2], d))};
      });
    }
    const Array gy = ctx.grad_output().array();
    Grads g(3);
    if (ctx.needs_grad(0)) {
      Array gx = Array::empty(x2.shape(), gy.dtype(), gy.device());
      RENSA_KERNEL(gy.device(), matmul, "linear")(gy, w16, gx);
      g[0] = Variable(gx.reshape(x.shape()));
    }
    if (ctx.needs_grad(1)) {
      Array gw = Array::empty(W.shape(), Dtype::float32, gy.device());
      RENSA_KERNEL(gy.device(), matmul, "linear")(gy.transpose(), x2, gw);
      g[1] = Variable(gw);
    }
    if (ctx.needs_grad(2)) {
      g[2] = Variable(detail::reduce("linear", ReduceOp::sum, gy, Shape{0}, false, Dtype::float32));
    }
    return g;
  });
}

}  // namespace

Variable matmul(const Variable& a, const Variable& b, bool transa, bool transb) {
  rensa::detail::ForwardEntry entry("matmul", a, b);
  detail::check_same_dtype_device("matmul", {&a, &b});
  RENSA_CHECK(a.ndim() >= 1 && b.ndim() >= 1, ShapeError, "matmul: operands must have at least 1 axis, got a ",
              a.shape(), " and b ", b.shape());
  const bool ta = transa && a.ndim() >= 2, tb = transb && b.ndim() >= 2;
  const Array am = as_matrix(a.array(), true, ta), bm = as_matrix(b.array(), false, tb);
  const int64_t m = am.shape()[am.ndim() - 2], k = am.shape().back();
  const int64_t kb = bm.shape()[bm.ndim() - 2], n = bm.shape().back();
  RENSA_CHECK(k == kb, ShapeError, "matmul: a ", a.shape(), trans_note(ta), " and b ", b.shape(), trans_note(tb),
              " have mismatched inner dims ", k, " vs ", kb);
  const Shape ba = batch_of(am.shape()), bb = batch_of(bm.shape());
  Shape batch;
  try {
    batch = broadcast_shapes(ba, bb, "matmul");
  } catch (const ShapeError&) {
    RENSA_THROW(ShapeError, "matmul: batch axes ", ba, " of a ", a.shape(), " and ", bb, " of b ", b.shape(),
                " do not broadcast");
  }

  // Kernel on operands broadcast to the output's batch axes (stride-0 views, no copies).
  Shape full = batch, ashape = batch, bshape = batch;
  full.push_back(m);
  full.push_back(n);
  ashape.push_back(m);
  ashape.push_back(k);
  bshape.push_back(k);
  bshape.push_back(n);
  Array y = Array::empty(full, a.dtype(), a.device());
  RENSA_KERNEL(a.device(), matmul, "matmul")(am.broadcast_to(ashape), bm.broadcast_to(bshape), y);

  // NumPy removes the axes that promotion added.
  Shape out_shape = batch;
  if (a.ndim() >= 2) out_shape.push_back(m);
  if (b.ndim() >= 2) out_shape.push_back(n);
  if (out_shape != full) y = y.reshape(out_shape);

  return record1("matmul", {a, b}, std::move(y), [a, b, ta, tb, full](const BackwardContext& ctx) {
    const Variable& gy0 = ctx.grad_output();
    const Variable gy = gy0.shape() == full ? gy0 : reshape(gy0, full);
    // The operands as matrices (1-d promoted), as differentiable views.
    const Variable a2 = a.ndim() == 1 ? reshape(a, {1, a.shape()[0]}) : a;
    const Variable b2 = b.ndim() == 1 ? reshape(b, {b.shape()[0], 1}) : b;
    Variable ga, gb;
    if (ctx.needs_grad(0)) {
      // gA = gY B^T; with transa the gradient of a is its transpose B gY^T.
      Variable g = ta ? matmul(b2, gy, tb, true) : matmul(gy, b2, false, !tb);
      ga = to_operand(g, a2.shape(), a.shape());
    }
    if (ctx.needs_grad(1)) {
      // gB = A^T gY; with transb the gradient of b is its transpose gY^T A.
      Variable g = tb ? matmul(gy, a2, true, ta) : matmul(a2, gy, !ta, false);
      gb = to_operand(g, b2.shape(), b.shape());
    }
    return Grads{ga, gb};
  });
}

Variable linear(const Variable& x, const Variable& W, const Variable& b) {
  rensa::detail::ForwardEntry entry("linear", x, W, b);
  detail::check_floating("linear", x);
  // Mixed precision: a 16-bit x with float32 W (and b).
  const bool mixed = is_half(x.dtype()) && !W.is_null() && W.dtype() == Dtype::float32 &&
                     (b.is_null() || b.dtype() == Dtype::float32);
  if (mixed) {
    detail::check_same_device("linear", b.is_null() ? std::initializer_list<const Variable*>{&x, &W}
                                                    : std::initializer_list<const Variable*>{&x, &W, &b});
  } else if (b.is_null()) {
    detail::check_same_dtype_device("linear", {&x, &W});
  } else {
    detail::check_same_dtype_device("linear", {&x, &W, &b});
  }
  const BiasNote bdesc{b};
  RENSA_CHECK(x.ndim() >= 2, ShapeError, "linear: x ", x.shape(), " must have at least 2 axes (W ", W.shape(), bdesc,
              ")");
  RENSA_CHECK(W.ndim() == 2, ShapeError, "linear: W ", W.shape(), " must have 2 axes (x ", x.shape(), bdesc, ")");
  const int64_t batch = x.shape()[0];
  int64_t in = 1;
  for (int64_t i = 1; i < x.ndim(); ++i) in *= x.shape()[static_cast<std::size_t>(i)];
  const int64_t out = W.shape()[0];
  RENSA_CHECK(in == W.shape()[1], ShapeError, "linear: x ", x.shape(), " and W ", W.shape(), bdesc,
              " have mismatched inner dims ", in, " vs ", W.shape()[1]);
  RENSA_CHECK(b.is_null() || (b.ndim() == 1 && b.shape()[0] == out), ShapeError, "linear: b ",
              b.is_null() ? Shape() : b.shape(), " does not match the ", out, " outputs of W ", W.shape(), " (x ",
              x.shape(), ")");

  if (mixed) return mixed_linear(x, W, b, Shape{batch, in});

  // x (N, in) @ W^T (a view: W read as a column-major matrix) + b broadcast along the batch.
  const Shape x2_shape{batch, in};
  const Array x2 = x.ndim() == 2 ? x.array() : x.array().reshape(x2_shape);
  Array y = Array::empty({batch, out}, x.dtype(), x.device());
  RENSA_KERNEL(x.device(), matmul, "linear")(x2, W.array().transpose(), y);
  if (!b.is_null() && y.size() > 0) {
    RENSA_KERNEL(x.device(), binary, "linear")(BinaryOp::add, y, b.array().broadcast_to(y.shape()), y);
  }

  return record1("linear", {x, W, b}, std::move(y), [x, W, x2_shape](const BackwardContext& ctx) {
    const Variable& gy = ctx.grad_output();
    Variable gx, gW, gb;
    if (ctx.needs_grad(0)) {
      gx = matmul(gy, W);
      if (gx.shape() != x.shape()) gx = reshape(gx, x.shape());
    }
    if (ctx.needs_grad(1)) gW = matmul(gy, x.shape() == x2_shape ? x : reshape(x, x2_shape), true, false);
    if (ctx.needs_grad(2)) gb = sum(gy, {0});
    return Grads{gx, gW, gb};
  });
}

}  // namespace rensa::functions
