// Pooling. Max pooling keeps the position of each window's maximum (int32, within its (H, W)
// plane): its backward scatters gy to those positions and the backward of that scatter gathers
// from them, so the pair are each other's backward. Average pooling and its transpose likewise.
#include <algorithm>
#include <limits>
#include <vector>

#include "rensa/functions/array_ops.h"
#include "rensa/functions/convolution.h"
#include "rensa/functions/reduction.h"
#include "src/functions/common.h"
#include "src/functions/conv_geometry.h"
#include "src/functions/pooling_internal.h"

namespace rensa::functions {
namespace {

using Grads = std::vector<Variable>;

}  // namespace

// y[n, c, i, j] = x[n, c].flat[indices[n, c, i, j]].
Variable detail::max_pool_gather(const Variable& x, const Array& indices) {
  rensa::detail::ForwardEntry entry("max_pooling_2d_gather", x);
  Array y = Array::empty(indices.shape(), x.dtype(), x.device(), indices.suggest_memory_format());
  if (y.size() > 0) RENSA_KERNEL(x.device(), max_pool2d_gather, "max_pooling_2d")(x.array(), indices, y);
  return record1(
      "max_pooling_2d_gather", {x}, std::move(y),
      [indices, x_shape = x.shape(), x_format = x.array().suggest_memory_format()](const BackwardContext& ctx) {
        return Grads{detail::max_pool_scatter(ctx.grad_output(), indices, x_shape, x_format)};
      });
}

// Gradients keep the layout of the input they belong to (x's), whatever layout gy arrives in.
// gx = 0; gx[n, c].flat[indices[n, c, i, j]] += gy[n, c, i, j].
Variable detail::max_pool_scatter(const Variable& gy, const Array& indices, const Shape& x_shape,
                                  MemoryFormat x_format) {
  rensa::detail::ForwardEntry entry("max_pooling_2d_grad", gy);
  Array gx = Array::empty(x_shape, gy.dtype(), gy.device(), x_format);
  if (gx.size() > 0) RENSA_KERNEL(gy.device(), max_pool2d_backward, "max_pooling_2d")(gy.array(), indices, gx);
  return record1("max_pooling_2d_grad", {gy}, std::move(gx), [indices](const BackwardContext& ctx) {
    return Grads{detail::max_pool_gather(ctx.grad_output(), indices)};
  });
}

namespace {

Variable avg_pool_transpose(const Variable& gy, const Pool2dParams& p, const Shape& x_shape, MemoryFormat x_format);

Variable avg_pool(const Variable& x, const Pool2dParams& p, const Shape& y_shape) {
  rensa::detail::ForwardEntry entry("average_pooling_2d", x);
  const MemoryFormat x_format = x.array().suggest_memory_format();
  Array y = Array::empty(y_shape, x.dtype(), x.device(), x_format);
  if (y.size() > 0) RENSA_KERNEL(x.device(), avg_pool2d_forward, "average_pooling_2d")(x.array(), y, p);
  return record1("average_pooling_2d", {x}, std::move(y),
                 [p, x_shape = x.shape(), x_format](const BackwardContext& ctx) {
                   return Grads{avg_pool_transpose(ctx.grad_output(), p, x_shape, x_format)};
                 });
}

Variable avg_pool_transpose(const Variable& gy, const Pool2dParams& p, const Shape& x_shape, MemoryFormat x_format) {
  rensa::detail::ForwardEntry entry("average_pooling_2d_grad", gy);
  Array gx = Array::empty(x_shape, gy.dtype(), gy.device(), x_format);
  if (gx.size() > 0) RENSA_KERNEL(gy.device(), avg_pool2d_backward, "average_pooling_2d")(gy.array(), gx, p);
  return record1("average_pooling_2d_grad", {gy}, std::move(gx), [p, y_shape = gy.shape()](const BackwardContext& ctx) {
    return Grads{avg_pool(ctx.grad_output(), p, y_shape)};
  });
}

// Stanza 1 of both poolings: the parameters and the output shape.
Shape pool_shape(const char* op, const Variable& x, Int2 ksize, Int2 stride, Int2 pad, bool cover_all) {
  detail::check_floating(op, x);
  RENSA_CHECK(x.ndim() == 4, ShapeError, op, ": x ", x.shape(), " must have 4 axes (N, C, H, W)");
  RENSA_CHECK(ksize.y >= 1 && ksize.x >= 1, ValueError, op, ": ksize ", ksize, " must be at least 1 (x ", x.shape(),
              ")");
  RENSA_CHECK(stride.y >= 1 && stride.x >= 1, ValueError, op, ": stride ", stride, " must be at least 1 (x ", x.shape(),
              ")");
  RENSA_CHECK(pad.y >= 0 && pad.x >= 0 && pad.y < ksize.y && pad.x < ksize.x, ValueError, op, ": pad ", pad,
              " must be at least 0 and below ksize ", ksize, " (x ", x.shape(), ")");
  const int64_t H = x.shape()[2], W = x.shape()[3];
  RENSA_CHECK(H * W <= std::numeric_limits<int32_t>::max(), ShapeError, op, ": planes of x ", x.shape(),
              " are too large (more than 2^31 - 1 elements)");
  const int64_t OH = detail::window_count(H, ksize.y, stride.y, pad.y, cover_all);
  const int64_t OW = detail::window_count(W, ksize.x, stride.x, pad.x, cover_all);
  RENSA_CHECK(OH > 0 && OW > 0, ShapeError, op, ": window ", ksize, " is larger than the padded input (", H + 2 * pad.y,
              ", ", W + 2 * pad.x, ") of x ", x.shape(), " with pad ", pad);
  // With cover_all and a stride above ksize - pad, the last window can start past the input.
  RENSA_CHECK((OH - 1) * stride.y - pad.y < H && (OW - 1) * stride.x - pad.x < W, ValueError, op, ": with ksize ",
              ksize, ", stride ", stride, ", pad ", pad, " and cover_all, the last window of x ", x.shape(),
              " would hold padding only");
  return Shape{x.shape()[0], x.shape()[1], OH, OW};
}

// Max pooling's output and the plane position (h W + w, int32) of each maximum.
std::pair<Variable, Array> max_pool(const char* op, const Variable& x, Int2 ksize, Int2 s, Int2 pad, bool cover_all) {
  rensa::detail::ForwardEntry entry(op, x);
  const Shape y_shape = pool_shape(op, x, ksize, s, pad, cover_all);
  // Chainer rejects an empty x (there is no max of nothing to index); average pooling accepts it.
  RENSA_CHECK(x.size() > 0, ShapeError, op, ": x ", x.shape(), " is empty; max pooling needs at least one element");
  const Pool2dParams p{ksize.y, ksize.x, s.y, s.x, pad.y, pad.x};
  // The outputs and the gradient keep x's layout.
  const MemoryFormat x_format = x.array().suggest_memory_format();
  Array y = Array::empty(y_shape, x.dtype(), x.device(), x_format);
  Array indices = Array::empty(y_shape, Dtype::int32, x.device(), x_format);
  if (y.size() > 0) RENSA_KERNEL(x.device(), max_pool2d_forward, op)(x.array(), y, indices, p);
  Variable out = record1(op, {x}, std::move(y), [indices, x_shape = x.shape(), x_format](const BackwardContext& ctx) {
    return Grads{detail::max_pool_scatter(ctx.grad_output(), indices, x_shape, x_format)};
  });
  return {out, indices};
}

}  // namespace

Variable detail::avg_pool_transpose(const Variable& gy, int64_t ky, int64_t kx, int64_t sy, int64_t sx, int64_t py,
                                    int64_t px, const Shape& x_shape, MemoryFormat x_format) {
  return functions::avg_pool_transpose(gy, Pool2dParams{ky, kx, sy, sx, py, px}, x_shape, x_format);
}

Variable max_pooling_2d(const Variable& x, Int2 ksize, std::optional<Int2> stride, Int2 pad, bool cover_all) {
  return max_pool("max_pooling_2d", x, ksize, stride.value_or(ksize), pad, cover_all).first;
}

std::pair<Variable, Array> max_pooling_2d_with_indices(const Variable& x, Int2 ksize, std::optional<Int2> stride,
                                                       Int2 pad, bool cover_all) {
  const Int2 s = stride.value_or(ksize);
  auto [y, positions] = max_pool("max_pooling_2d", x, ksize, s, pad, cover_all);
  // Plane positions to Chainer's window offsets ky KW + kx (an index conversion, on the host).
  const Shape& ys = y.shape();
  const int64_t W = x.shape()[3], OH = ys[2], OW = ys[3];
  std::vector<int32_t> pos = positions.to(Device::cpu()).to_vector<int32_t>();
  for (std::size_t f = 0; f < pos.size(); ++f) {
    const int64_t i = static_cast<int64_t>(f) / OW % OH, j = static_cast<int64_t>(f) % OW;
    const int64_t h = pos[f] / W, w = pos[f] % W;
    pos[f] = static_cast<int32_t>((h - (i * s.y - pad.y)) * ksize.x + (w - (j * s.x - pad.x)));
  }
  return {y, Array::from_vector(pos, ys).to(x.device())};
}
Variable average_pooling_2d(const Variable& x, Int2 ksize, std::optional<Int2> stride, Int2 pad, bool cover_all) {
  const Int2 s = stride.value_or(ksize);
  const Shape y_shape = pool_shape("average_pooling_2d", x, ksize, s, pad, cover_all);
  return avg_pool(x, Pool2dParams{ksize.y, ksize.x, s.y, s.x, pad.y, pad.x}, y_shape);
}

Variable global_average_pooling_2d(const Variable& x, bool keepdims) {
  detail::check_floating("global_average_pooling_2d", x);
  RENSA_CHECK(x.ndim() == 4, ShapeError, "global_average_pooling_2d: x ", x.shape(), " must have 4 axes (N, C, H, W)");
  return mean(x, {2, 3}, keepdims);
}

Variable spatial_pyramid_pooling_2d(const Variable& x, int64_t pyramid_height, std::string_view pooling) {
  const char* op = "spatial_pyramid_pooling_2d";
  RENSA_CHECK(pooling == "max", ValueError, op, ": pooling '", pooling, "' is not supported (only 'max', as Chainer)");
  detail::check_floating(op, x);
  RENSA_CHECK(x.ndim() == 4, ShapeError, op, ": x ", x.shape(), " must have 4 axes (N, C, H, W)");
  RENSA_CHECK(x.size() > 0, ShapeError, op, ": x ", x.shape(), " is empty; max pooling needs at least one element");
  RENSA_CHECK(pyramid_height >= 1, ValueError, op, ": pyramid_height ", pyramid_height, " must be at least 1 (x ",
              x.shape(), ")");
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  std::vector<Variable> levels;
  for (int64_t level = 0; level < pyramid_height; ++level) {
    RENSA_CHECK(level < 31, ValueError, op, ": pyramid_height ", pyramid_height, " is too large for x ", x.shape());
    const int64_t bins = int64_t{1} << level;
    const int64_t kh = (H + bins - 1) / bins, kw = (W + bins - 1) / bins;
    const Int2 k(kh, kw), pad((kh * bins - H) / 2, (kw * bins - W) / 2);
    // Too many bins for the pixels leaves windows of padding only (Chainer outputs -inf there).
    const int64_t OH = detail::window_count(H, kh, kh, pad.y, true), OW = detail::window_count(W, kw, kw, pad.x, true);
    RENSA_CHECK(pad.y < kh && pad.x < kw && (OH - 1) * kh - pad.y < H && (OW - 1) * kw - pad.x < W, ValueError, op,
                ": level ", level, " of pyramid_height ", pyramid_height, " (", bins, " x ", bins, " bins: window ", k,
                ", pad ", pad, ") would pool padding only over x ", x.shape());
    const Variable y = max_pooling_2d(x, k, k, pad, true);
    levels.push_back(reshape(y, {N, C * y.shape()[2] * y.shape()[3], 1, 1}));
  }
  return concat(levels, 1);
}

}  // namespace rensa::functions
