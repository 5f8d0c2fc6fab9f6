// Shape manipulation: views where possible, copies where not.
#include "rensa/functions/array_ops.h"

#include <algorithm>
#include <span>
#include <sstream>
#include <string>

#include "rensa/core/function_node.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/reduction.h"
#include "src/functions/common.h"
#include "src/functions/arg_checks.h"

namespace rensa::functions {
namespace {
using Grads = std::vector<Variable>;
using detail::axis_of;
using detail::check_not_null;
using detail::check_operands;
using detail::shapes_text;

// Runs an Array-level view operation, re-throwing its errors (of their own type) with `op` and x's
// shape in front.
template <class Fn>
Array with_context(const char* op, const Shape& shape, Fn&& fn) {
  try {
    return fn();
  } catch (...) {
    rethrow_with_context(rensa::detail::concat(op, " (x of shape ", shape, "): "));
  }
}

// The gradient of get_item: zeros of `shape` with gy written into the indexed view (basic
// indexing never maps two result elements to one element of x). Its own gradient is get_item.
Variable get_item_grad(const Variable& gy, const Shape& shape, const std::vector<Index>& indices) {
  rensa::detail::ForwardEntry entry("get_item_grad", gy);
  Array gx = Array::zeros(shape, gy.dtype(), gy.device());
  gx.index(indices).assign(gy.array());
  return record1("get_item_grad", {gy}, std::move(gx),
                 [indices](const BackwardContext& ctx) { return Grads{get_item(ctx.grad_output(), indices)}; });
}

// The gradient of select_item: gx (N, C) zero except gx[i, t[i]] = gy[i]. Its own gradient is
// select_item.
Variable select_item_grad(const Variable& gy, const Array& t, int64_t classes) {
  rensa::detail::ForwardEntry entry("select_item_grad", gy);
  Array gx = Array::empty({gy.shape()[0], classes}, gy.dtype(), gy.device());
  RENSA_KERNEL(gy.device(), scatter_item, "select_item")(gy.array(), t, gx);
  return record1("select_item_grad", {gy}, std::move(gx),
                 [t](const BackwardContext& ctx) { return Grads{select_item(ctx.grad_output(), t)}; });
}

// Element range [start, start + length) of piece k when splitting an axis of extent n before
// `indices` (NumPy slice semantics: negative indices count from the end, ends are clamped).
struct Piece {
  int64_t start, length;
};
std::vector<Piece> split_pieces(const std::vector<int64_t>& indices, int64_t n) {
  auto clamp = [n](int64_t i) { return i < 0 ? std::max<int64_t>(i + n, 0) : std::min(i, n); };
  std::vector<Piece> pieces;
  int64_t prev = 0;
  for (std::size_t k = 0; k <= indices.size(); ++k) {
    const int64_t stop = k < indices.size() ? clamp(indices[k]) : n;
    pieces.push_back({prev, std::max<int64_t>(stop - prev, 0)});
    if (k < indices.size()) prev = stop;
  }
  return pieces;
}

}  // namespace

Variable reshape(const Variable& x, const Shape& shape) {
  rensa::detail::ForwardEntry entry("reshape", x);
  RENSA_CHECK(!x.is_null(), ValueError, "reshape: x is null");
  Array y = x.array().reshape(shape);
  return record1("reshape", {x}, std::move(y),
                 [in = x.shape()](const BackwardContext& ctx) { return Grads{reshape(ctx.grad_output(), in)}; });
}

Variable broadcast_to(const Variable& x, const Shape& shape) {
  rensa::detail::ForwardEntry entry("broadcast_to", x);
  RENSA_CHECK(!x.is_null(), ValueError, "broadcast_to: x is null");
  Array y = x.array().broadcast_to(shape);
  return record1("broadcast_to", {x}, std::move(y),
                 [in = x.shape()](const BackwardContext& ctx) { return Grads{sum_to(ctx.grad_output(), in)}; });
}

Variable squeeze(const Variable& x, const Shape& axes) {
  rensa::detail::ForwardEntry entry("squeeze", x);
  RENSA_CHECK(!x.is_null(), ValueError, "squeeze: x is null");
  Array y = axes.empty() ? x.array().squeeze() : x.array().squeeze(axes);
  return record1("squeeze", {x}, std::move(y),
                 [in = x.shape()](const BackwardContext& ctx) { return Grads{reshape(ctx.grad_output(), in)}; });
}

Variable transpose(const Variable& x, const Shape& axes) {
  rensa::detail::ForwardEntry entry("transpose", x);
  check_not_null("transpose", x);
  const int64_t nd = x.ndim();
  Shape perm(static_cast<std::size_t>(nd), 0);
  if (axes.empty()) {
    for (int64_t i = 0; i < nd; ++i) perm[static_cast<std::size_t>(i)] = nd - 1 - i;
  } else {
    RENSA_CHECK(static_cast<int64_t>(axes.size()) == nd, ShapeError, "transpose: axes ", axes,
                " do not match x of shape ", x.shape());
    for (std::size_t i = 0; i < axes.size(); ++i) perm[i] = axis_of("transpose", axes[i], nd, x.shape());
  }
  Shape inverse(perm.size(), -1);
  for (std::size_t i = 0; i < perm.size(); ++i) {
    RENSA_CHECK(inverse[static_cast<std::size_t>(perm[i])] < 0, ShapeError, "transpose: repeated axis in ", axes,
                " for x of shape ", x.shape());
    inverse[static_cast<std::size_t>(perm[i])] = static_cast<int64_t>(i);
  }
  Array y = x.array().transpose(perm);
  return record1("transpose", {x}, std::move(y),
                 [inverse](const BackwardContext& ctx) { return Grads{transpose(ctx.grad_output(), inverse)}; });
}

Variable swapaxes(const Variable& x, int64_t a, int64_t b) {
  rensa::detail::ForwardEntry entry("swapaxes", x);
  check_not_null("swapaxes", x);
  a = axis_of("swapaxes", a, x.ndim(), x.shape());
  b = axis_of("swapaxes", b, x.ndim(), x.shape());
  Array y = x.array().swapaxes(a, b);
  return record1("swapaxes", {x}, std::move(y),
                 [a, b](const BackwardContext& ctx) { return Grads{swapaxes(ctx.grad_output(), a, b)}; });
}

Variable expand_dims(const Variable& x, int64_t axis) {
  rensa::detail::ForwardEntry entry("expand_dims", x);
  check_not_null("expand_dims", x);
  axis = axis_of("expand_dims", axis, x.ndim() + 1, x.shape());
  Array y = x.array().expand_dims(axis);
  return record1("expand_dims", {x}, std::move(y),
                 [axis](const BackwardContext& ctx) { return Grads{squeeze(ctx.grad_output(), Shape{axis})}; });
}

Variable flatten(const Variable& x) {
  check_not_null("flatten", x);
  return reshape(x, Shape{x.size()});
}

Variable concat(const std::vector<Variable>& xs, int64_t axis) {
  rensa::detail::ForwardEntry entry("concat", xs);
  check_operands("concat", xs);
  const Shape& first = xs[0].shape();
  RENSA_CHECK(!first.empty(), ShapeError, "concat: zero-dimensional arrays cannot be concatenated: shapes ",
              shapes_text(xs));
  const int64_t nd = static_cast<int64_t>(first.size());
  RENSA_CHECK(axis >= -nd && axis < nd, IndexError, "concat: axis ", axis, " is out of bounds for ", nd,
              " dimensions (shapes ", shapes_text(xs), ")");
  if (axis < 0) axis += nd;
  const auto ax = static_cast<std::size_t>(axis);
  Shape out_shape = first;
  out_shape[ax] = 0;
  for (const auto& x : xs) {
    bool fits = x.shape().size() == first.size();
    for (std::size_t d = 0; fits && d < first.size(); ++d) fits = d == ax || x.shape()[d] == first[d];
    RENSA_CHECK(fits, ShapeError, "concat: shapes ", shapes_text(xs), " must match except along axis ", axis);
    out_shape[ax] += x.shape()[ax];
  }

  Array y = Array::empty(out_shape, xs[0].dtype(), xs[0].device());
  std::vector<int64_t> bounds;  // where each input ends along the axis, except the last
  int64_t at = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const int64_t n = xs[i].shape()[ax];
    y.slice(axis, at, at + n).assign(xs[i].array());
    at += n;
    if (i + 1 < xs.size()) bounds.push_back(at);
  }
  std::vector<Array> outs{std::move(y)};
  return record("concat", xs, std::move(outs), [bounds, axis](const BackwardContext& ctx) {
    return split_axis(ctx.grad_output(), bounds, axis);
  })[0];
}

Variable stack(const std::vector<Variable>& xs, int64_t axis) {
  rensa::detail::ForwardEntry entry("stack", xs);
  check_operands("stack", xs);
  const Shape& first = xs[0].shape();
  for (const auto& x : xs) {
    RENSA_CHECK(x.shape() == first, ShapeError, "stack: all inputs must have the same shape, got ", shapes_text(xs));
  }
  const int64_t nd = static_cast<int64_t>(first.size()) + 1;
  RENSA_CHECK(axis >= -nd && axis < nd, IndexError, "stack: axis ", axis, " is out of bounds for ", nd,
              " dimensions (shapes ", shapes_text(xs), ")");
  if (axis < 0) axis += nd;
  Shape out_shape = first;
  out_shape.insert(static_cast<std::size_t>(axis), static_cast<int64_t>(xs.size()));

  Array y = Array::empty(out_shape, xs[0].dtype(), xs[0].device());
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const auto k = static_cast<int64_t>(i);
    y.slice(axis, k, k + 1).assign(xs[i].array().expand_dims(axis));
  }
  std::vector<Array> outs{std::move(y)};
  const auto n = static_cast<int64_t>(xs.size());
  return record("stack", xs, std::move(outs), [n, axis](const BackwardContext& ctx) {
    Grads gxs = split_axis(ctx.grad_output(), n, axis);
    for (auto& g : gxs) g = squeeze(g, Shape{axis});
    return gxs;
  })[0];
}

std::vector<Variable> split_axis(const Variable& x, int64_t sections, int64_t axis) {
  check_not_null("split_axis", x);
  axis = axis_of("split_axis", axis, x.ndim(), x.shape());
  const int64_t n = x.shape()[static_cast<std::size_t>(axis)];
  RENSA_CHECK(sections > 0, ValueError, "split_axis: the number of sections must be positive, got ", sections);
  RENSA_CHECK(n % sections == 0, ValueError, "split_axis: ", sections, " sections do not divide axis ", axis,
              " of extent ", n, " (x of shape ", x.shape(), ")");
  std::vector<int64_t> indices;
  for (int64_t k = 1; k < sections; ++k) indices.push_back(k * (n / sections));
  return split_axis(x, indices, axis);
}

std::vector<Variable> split_axis(const Variable& x, const std::vector<int64_t>& indices, int64_t axis) {
  rensa::detail::ForwardEntry entry("split_axis", x);
  check_not_null("split_axis", x);
  axis = axis_of("split_axis", axis, x.ndim(), x.shape());
  const auto ax = static_cast<std::size_t>(axis);
  // As Chainer, only the last index is checked; earlier ones out of order give empty pieces.
  RENSA_CHECK(indices.empty() || indices.back() <= x.shape()[ax], ShapeError, "split_axis: the last index ",
              indices.empty() ? 0 : indices.back(), " is past the end of axis ", axis, " (size ", x.shape()[ax],
              ") of x ", x.shape());
  const std::vector<Piece> pieces = split_pieces(indices, x.shape()[ax]);
  std::vector<Array> ys;
  bool tiles = true;  // the pieces cover the axis in order, without gaps or overlaps
  int64_t at = 0;
  for (const Piece& p : pieces) {
    ys.push_back(x.array().slice(axis, p.start, p.start + p.length));
    if (p.length > 0) {
      tiles = tiles && p.start == at;
      at = p.start + p.length;
    }
  }
  tiles = tiles && at == x.shape()[ax];
  auto backward = [pieces, axis, tiles, shape = x.shape()](const BackwardContext& ctx) {
    Grads gys;
    for (std::size_t i = 0; i < ctx.num_outputs(); ++i) gys.push_back(ctx.grad_output(i));
    if (tiles) return Grads{concat(gys, axis)};
    // Indices out of order (pieces may overlap): scatter each piece's gradient and add them up.
    Variable gx;
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      if (pieces[i].length == 0) continue;
      std::vector<Index> where_piece(static_cast<std::size_t>(axis), Slice{});
      where_piece.push_back(Slice{pieces[i].start, pieces[i].start + pieces[i].length, 1});
      Variable g = get_item_grad(gys[i], shape, where_piece);
      gx = gx.is_null() ? g : add(gx, g);
    }
    if (gx.is_null()) gx = Variable(Array::zeros(shape, gys[0].dtype(), gys[0].device()));
    return Grads{gx};
  };
  // Outputs are retained so the engine can make zero gradients for pieces the caller dropped; they
  // are views of x and hold no memory of their own.
  return record("split_axis", {x}, std::move(ys), std::move(backward), true);
}

Variable get_item(const Variable& x, const std::vector<Index>& indices) {
  rensa::detail::ForwardEntry entry("get_item", x);
  check_not_null("get_item", x);
  Array y = with_context("get_item", x.shape(), [&] { return x.array().index(indices); });
  return record1("get_item", {x}, std::move(y), [indices, shape = x.shape()](const BackwardContext& ctx) {
    return Grads{get_item_grad(ctx.grad_output(), shape, indices)};
  });
}

Variable cast(const Variable& x, Dtype dtype) {
  rensa::detail::ForwardEntry entry("cast", x);
  check_not_null("cast", x);
  RENSA_CHECK(!is_mixed(dtype), DtypeError, "cast: dtype ", dtype_name(dtype),
              " is a mixed-precision policy for Config::dtype, not an array dtype (its parameters are float32, its "
              "computations ", dtype == Dtype::mixed16 ? "float16" : "bfloat16", "; cast to one of those)");
  if (x.dtype() == dtype) return x;
  Array y = x.array().astype(dtype);
  // Integer results (or integer sources) carry no gradient.
  if (!is_floating(dtype) || !is_floating(x.dtype())) return Variable(std::move(y));
  return record1("cast", {x}, std::move(y),
                 [from = x.dtype()](const BackwardContext& ctx) { return Grads{cast(ctx.grad_output(), from)}; });
}

Variable where(const Array& cond, const Variable& a, const Variable& b) {
  rensa::detail::ForwardEntry entry("where", a, b);
  RENSA_CHECK(!cond.is_null(), ValueError, "where: cond is null");
  detail::check_same_dtype_device("where", {&a, &b});
  RENSA_CHECK(cond.dtype() == Dtype::bool_, DtypeError, "where: cond must be bool, got ", cond.dtype(), " with shape ",
              cond.shape());
  RENSA_CHECK(cond.device() == a.device(), DeviceError, "where: cond is on ", cond.device(), ", a and b on ",
              a.device());
  Shape shape;
  try {
    shape = broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  } catch (const ShapeError&) {
    RENSA_THROW(ShapeError, "where: cond ", cond.shape(), ", a ", a.shape(), " and b ", b.shape(),
                " do not broadcast to one shape");
  }
  Array y = Array::empty(shape, a.dtype(), a.device());
  RENSA_KERNEL(a.device(), where, "where")
  (cond.broadcast_to(shape), a.array().broadcast_to(shape), b.array().broadcast_to(shape), y);
  return record1("where", {a, b}, std::move(y), [cond, sa = a.shape(), sb = b.shape()](const BackwardContext& ctx) {
    const Variable& gy = ctx.grad_output();
    const Variable zero(detail::scalar_like(0.0, gy.array()));
    Variable ga, gb;
    if (ctx.needs_grad(0)) {
      ga = where(cond, gy, zero);
      if (ga.shape() != sa) ga = sum_to(ga, sa);
    }
    if (ctx.needs_grad(1)) {
      gb = where(cond, zero, gy);
      if (gb.shape() != sb) gb = sum_to(gb, sb);
    }
    return Grads{ga, gb};
  });
}

Variable select_item(const Variable& x, const Array& t) {
  rensa::detail::ForwardEntry entry("select_item", x);
  detail::check_floating("select_item", x);
  RENSA_CHECK(!t.is_null(), ValueError, "select_item: t is null");
  RENSA_CHECK(t.dtype() == Dtype::int32 || t.dtype() == Dtype::int64, DtypeError,
              "select_item: labels t must be int32 or int64, got ", t.dtype(), " with shape ", t.shape());
  RENSA_CHECK(x.ndim() == 2 && t.ndim() == 1 && t.shape()[0] == x.shape()[0], ShapeError,
              "select_item: x must be (N, C) and t (N,), got x ", x.shape(), " and t ", t.shape());
  RENSA_CHECK(t.device() == x.device(), DeviceError, "select_item: x is on ", x.device(), ", t on ", t.device());
  Array y = Array::empty({x.shape()[0]}, x.dtype(), x.device());
  RENSA_KERNEL(x.device(), select_item, "select_item")(x.array(), t, y);
  return record1("select_item", {x}, std::move(y), [t, classes = x.shape()[1]](const BackwardContext& ctx) {
    return Grads{select_item_grad(ctx.grad_output(), t, classes)};
  });
}

Variable pad(const Variable& x, const std::vector<std::pair<int64_t, int64_t>>& pad_width, double value) {
  rensa::detail::ForwardEntry entry("pad", x);
  check_not_null("pad", x);
  const auto ndim = static_cast<std::size_t>(x.ndim());
  RENSA_CHECK(pad_width.size() == 1 || pad_width.size() == ndim, ShapeError, "pad: pad_width has ", pad_width.size(),
              " pairs for x of shape ", x.shape(), " (expected 1 or ", ndim, ")");
  Shape out_shape = x.shape();
  std::vector<Index> interior;
  for (std::size_t i = 0; i < ndim; ++i) {
    const auto [before, after] = pad_width.size() == 1 ? pad_width[0] : pad_width[i];
    RENSA_CHECK(before >= 0 && after >= 0, ValueError, "pad: negative pad width (", before, ", ", after, ") on axis ",
                i, " of x ", x.shape());
    out_shape[i] += before + after;
    interior.emplace_back(Slice{before, before + x.shape()[i], 1});
  }
  Array y = Array::full(out_shape, value, x.dtype(), x.device());
  if (x.size() > 0) y.index(interior).assign(x.array());
  if (!is_floating(x.dtype())) return Variable(std::move(y));
  return record1("pad", {x}, std::move(y),
                 [interior](const BackwardContext& ctx) { return Grads{get_item(ctx.grad_output(), interior)}; });
}

}  // namespace rensa::functions
