// Rearranging arrays: composites of reshape, broadcast_to, transpose and concat, plus the views
// flip, diagonal and separate, whose gradients are the same rearrangement undone.
#include "rensa/functions/array_rearrange.h"

#include <algorithm>
#include <utility>

#include "rensa/functions/array_ops.h"
#include "src/functions/arg_checks.h"
#include "src/functions/common.h"
#include "src/functions/gather.h"

namespace rensa::functions {
namespace {
using Grads = std::vector<Variable>;
using detail::axis_of;
using detail::check_not_null;

// The elements x[..., i, ..., i + offset, ...] of axes a1 and a2 as a view (NumPy's diagonal).
Array diagonal_view(const Array& x, int64_t offset, int64_t a1, int64_t a2) {
  const auto u1 = static_cast<std::size_t>(a1), u2 = static_cast<std::size_t>(a2);
  const int64_t n1 = x.shape()[u1], n2 = x.shape()[u2];
  const int64_t len = std::max<int64_t>(0, offset >= 0 ? std::min(n1, n2 - offset) : std::min(n1 + offset, n2));
  Shape shape, strides;
  for (std::size_t d = 0; d < x.shape().size(); ++d) {
    if (d == u1 || d == u2) continue;
    shape.push_back(x.shape()[d]);
    strides.push_back(x.strides()[d]);
  }
  shape.push_back(len);
  strides.push_back(x.strides()[u1] + x.strides()[u2]);
  int64_t start = x.offset();
  if (len > 0) start += offset >= 0 ? offset * x.strides()[u2] : -offset * x.strides()[u1];
  return Array(x.storage(), shape, strides, start, x.dtype());
}

// The gradient of diagonal: gy written into the diagonal of zeros; its gradient is diagonal.
Variable diagonal_grad(const Variable& gy, const Shape& shape, int64_t offset, int64_t a1, int64_t a2) {
  rensa::detail::ForwardEntry entry("diagonal_grad", gy);
  Array gx = Array::zeros(shape, gy.dtype(), gy.device());
  diagonal_view(gx, offset, a1, a2).assign(gy.array());
  return record1("diagonal_grad", {gy}, std::move(gx), [offset, a1, a2](const BackwardContext& ctx) {
    return Grads{diagonal(ctx.grad_output(), offset, a1, a2)};
  });
}

// xs reshaped by `shape_of` (NumPy's atleast_Nd), checked to match except along `axis`, joined.
template <class ShapeOf>
Variable join(const char* op, const std::vector<Variable>& xs, ShapeOf&& shape_of, int64_t axis) {
  detail::check_operands(op, xs);
  std::vector<Variable> parts;
  for (const auto& x : xs) parts.push_back(reshape(x, shape_of(x.shape())));
  const Shape& first = parts[0].shape();
  if (axis < 0) axis = first.size() == 1 ? 0 : 1;  // hstack's rule
  for (const auto& p : parts) {
    bool fits = p.shape().size() == first.size();
    for (std::size_t d = 0; fits && d < first.size(); ++d) {
      fits = static_cast<int64_t>(d) == axis || p.shape()[d] == first[d];
    }
    RENSA_CHECK(fits, ShapeError, op, ": shapes ", detail::shapes_text(xs), " must match except along axis ", axis);
  }
  return concat(parts, axis);
}

}  // namespace

Variable tile(const Variable& x, const Shape& reps) {
  check_not_null("tile", x);
  for (int64_t r : reps) {
    RENSA_CHECK(r >= 0, ValueError, "tile: repetition counts must be non-negative, got reps ", reps,
                " for x of shape ", x.shape());
  }
  const std::size_t nd = std::max(reps.size(), x.shape().size());
  Shape in(nd - x.shape().size(), 1), r(nd - reps.size(), 1);
  for (int64_t e : x.shape()) in.push_back(e);
  for (int64_t e : reps) r.push_back(e);
  // (1, s0, 1, s1, ...) broadcast to (r0, s0, r1, s1, ...), then merged to (r0 * s0, ...).
  Shape split, expanded, out;
  for (std::size_t d = 0; d < nd; ++d) {
    split.push_back(1);
    split.push_back(in[d]);
    expanded.push_back(r[d]);
    expanded.push_back(in[d]);
    out.push_back(r[d] * in[d]);
  }
  return reshape(broadcast_to(reshape(x, split), expanded), out);
}

Variable tile(const Variable& x, int64_t reps) { return tile(x, Shape{reps}); }

Variable repeat(const Variable& x, const std::vector<int64_t>& repeats, std::optional<int64_t> axis) {
  check_not_null("repeat", x);
  for (int64_t r : repeats) {
    RENSA_CHECK(r >= 0, ValueError, "repeat: repetition counts must be non-negative, got ", Shape(repeats),
                " for x of shape ", x.shape());
  }
  const Variable v = axis ? x : reshape(x, Shape{x.size()});
  const int64_t ax = axis ? axis_of("repeat", *axis, x.ndim(), x.shape()) : 0;
  const auto uax = static_cast<std::size_t>(ax);
  const int64_t n = v.shape()[uax];
  if (repeats.size() == 1) {
    // Every element the same number of times: a broadcast view behind a new axis, then merged.
    Variable e = expand_dims(v, ax + 1);
    Shape wide = e.shape();
    wide[uax + 1] = repeats[0];
    Shape out = v.shape();
    out[uax] = n * repeats[0];
    return reshape(broadcast_to(e, wide), out);
  }
  RENSA_CHECK(static_cast<int64_t>(repeats.size()) == n, ShapeError, "repeat: ", repeats.size(),
              " repetition counts for axis ", ax, " of extent ", n, " (x of shape ", x.shape(), ")");
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < n; ++i) idx.insert(idx.end(), static_cast<std::size_t>(repeats[static_cast<std::size_t>(i)]), i);
  return detail::take("repeat", v, Array::from_vector(idx, x.device()), ax);
}

Variable repeat(const Variable& x, int64_t repeats, std::optional<int64_t> axis) {
  return repeat(x, std::vector<int64_t>{repeats}, axis);
}

Variable flip(const Variable& x, int64_t axis) {
  rensa::detail::ForwardEntry entry("flip", x);
  check_not_null("flip", x);
  RENSA_CHECK(x.ndim() > 0, ShapeError, "flip: x must have at least one dimension, got shape ", x.shape());
  axis = axis_of("flip", axis, x.ndim(), x.shape());
  Array y = x.array().slice(axis, std::nullopt, std::nullopt, -1);
  return record1("flip", {x}, std::move(y),
                 [axis](const BackwardContext& ctx) { return Grads{flip(ctx.grad_output(), axis)}; });
}

Variable fliplr(const Variable& x) {
  check_not_null("fliplr", x);
  RENSA_CHECK(x.ndim() >= 2, ShapeError, "fliplr: x must have at least two dimensions, got shape ", x.shape());
  return flip(x, 1);
}

Variable flipud(const Variable& x) {
  check_not_null("flipud", x);
  RENSA_CHECK(x.ndim() >= 1, ShapeError, "flipud: x must have at least one dimension, got shape ", x.shape());
  return flip(x, 0);
}

Variable rollaxis(const Variable& x, int64_t axis, int64_t start) {
  check_not_null("rollaxis", x);
  const int64_t n = x.ndim();
  axis = axis_of("rollaxis", axis, n, x.shape());
  RENSA_CHECK(start >= -n && start <= n, IndexError, "rollaxis: start ", start, " is out of bounds [", -n, ", ", n,
              "] (x of shape ", x.shape(), ")");
  if (start < 0) start += n;
  if (axis < start) --start;
  Shape perm;
  for (int64_t d = 0; d < n; ++d) {
    if (d != axis) perm.push_back(d);
  }
  perm.insert(static_cast<std::size_t>(start), axis);
  return transpose(x, perm);
}

Variable moveaxis(const Variable& x, int64_t source, int64_t destination) {
  return moveaxis(x, std::vector<int64_t>{source}, std::vector<int64_t>{destination});
}

Variable moveaxis(const Variable& x, const std::vector<int64_t>& source, const std::vector<int64_t>& destination) {
  check_not_null("moveaxis", x);
  const int64_t n = x.ndim();
  RENSA_CHECK(source.size() == destination.size(), ValueError, "moveaxis: source ", Shape(source),
              " and destination ", Shape(destination), " have different lengths");
  std::vector<std::pair<int64_t, int64_t>> moves;  // (destination, source)
  std::vector<bool> src_seen(static_cast<std::size_t>(n)), dst_seen(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < source.size(); ++i) {
    const int64_t s = axis_of("moveaxis", source[i], n, x.shape());
    const int64_t d = axis_of("moveaxis", destination[i], n, x.shape());
    RENSA_CHECK(!src_seen[static_cast<std::size_t>(s)], ValueError, "moveaxis: repeated axis in source ",
                Shape(source), " (x of shape ", x.shape(), ")");
    RENSA_CHECK(!dst_seen[static_cast<std::size_t>(d)], ValueError, "moveaxis: repeated axis in destination ",
                Shape(destination), " (x of shape ", x.shape(), ")");
    src_seen[static_cast<std::size_t>(s)] = dst_seen[static_cast<std::size_t>(d)] = true;
    moves.emplace_back(d, s);
  }
  Shape perm;
  for (int64_t d = 0; d < n; ++d) {
    if (!src_seen[static_cast<std::size_t>(d)]) perm.push_back(d);
  }
  std::sort(moves.begin(), moves.end());
  for (const auto& [d, s] : moves) perm.insert(static_cast<std::size_t>(d), s);
  return transpose(x, perm);
}

Variable hstack(const std::vector<Variable>& xs) {
  return join("hstack", xs, [](const Shape& s) { return s.empty() ? Shape{1} : s; }, -1);
}

Variable vstack(const std::vector<Variable>& xs) {
  return join(
      "vstack", xs,
      [](const Shape& s) {
        if (s.size() >= 2) return s;
        return s.empty() ? Shape{1, 1} : Shape{1, s[0]};
      },
      0);
}

Variable dstack(const std::vector<Variable>& xs) {
  return join(
      "dstack", xs,
      [](const Shape& s) {
        if (s.size() >= 3) return s;
        if (s.size() == 2) return Shape{s[0], s[1], 1};
        return s.empty() ? Shape{1, 1, 1} : Shape{1, s[0], 1};
      },
      2);
}

Variable diagonal(const Variable& x, int64_t offset, int64_t axis1, int64_t axis2) {
  rensa::detail::ForwardEntry entry("diagonal", x);
  check_not_null("diagonal", x);
  RENSA_CHECK(x.ndim() >= 2, ShapeError, "diagonal: x must have at least two dimensions, got shape ", x.shape());
  const int64_t a1 = axis_of("diagonal", axis1, x.ndim(), x.shape());
  const int64_t a2 = axis_of("diagonal", axis2, x.ndim(), x.shape());
  RENSA_CHECK(a1 != a2, ValueError, "diagonal: axis1 ", axis1, " and axis2 ", axis2,
              " name the same axis (x of shape ", x.shape(), ")");
  Array y = diagonal_view(x.array(), offset, a1, a2);
  return record1("diagonal", {x}, std::move(y), [offset, a1, a2, shape = x.shape()](const BackwardContext& ctx) {
    return Grads{diagonal_grad(ctx.grad_output(), shape, offset, a1, a2)};
  });
}

Variable copy(const Variable& x, Device device) {
  rensa::detail::ForwardEntry entry("copy", x);
  check_not_null("copy", x);
  Array y = x.array().to(device);
  if (y.shares_storage(x.array())) y = y.copy();
  return record1("copy", {x}, std::move(y),
                 [from = x.device()](const BackwardContext& ctx) { return Grads{copy(ctx.grad_output(), from)}; });
}

std::vector<Variable> broadcast(const std::vector<Variable>& xs) {
  RENSA_CHECK(!xs.empty(), ValueError, "broadcast: needs at least one array, got an empty list");
  for (std::size_t i = 0; i < xs.size(); ++i) {
    RENSA_CHECK(!xs[i].is_null(), ValueError, "broadcast: input ", i, " is null");
  }
  Shape shape = xs[0].shape();
  try {
    for (const auto& x : xs) shape = broadcast_shapes(shape, x.shape(), "broadcast");
  } catch (const ShapeError&) {
    RENSA_THROW(ShapeError, "broadcast: shapes ", detail::shapes_text(xs), " do not broadcast to one shape");
  }
  std::vector<Variable> ys;
  for (const auto& x : xs) ys.push_back(broadcast_to(x, shape));
  return ys;
}

std::vector<Variable> separate(const Variable& x, int64_t axis) {
  rensa::detail::ForwardEntry entry("separate", x);
  check_not_null("separate", x);
  RENSA_CHECK(x.ndim() > 0, ShapeError, "separate: x must have at least one dimension, got shape ", x.shape());
  axis = axis_of("separate", axis, x.ndim(), x.shape());
  const int64_t n = x.shape()[static_cast<std::size_t>(axis)];
  std::vector<Array> ys;
  for (int64_t i = 0; i < n; ++i) ys.push_back(x.array().slice(axis, i, i + 1).squeeze(Shape{axis}));
  if (ys.empty()) return {};
  return record("separate", {x}, std::move(ys), [axis](const BackwardContext& ctx) {
    std::vector<Variable> gys;
    for (std::size_t i = 0; i < ctx.num_outputs(); ++i) gys.push_back(ctx.grad_output(i));
    return Grads{stack(gys, axis)};
  });
}

}  // namespace rensa::functions
