#pragma once
// The recorded pooling operations of pooling.cpp that other pooling functions build on: the
// gather and scatter of max pooling (ROI pooling, upsampling_2d) and the transpose of average
// pooling (unpooling). Each is differentiable, its backward the other half of its pair.
#include "rensa/core/variable.h"

namespace rensa::functions::detail {

/// y[n, c, i, j] = x[n, c].flat[indices[n, c, i, j]] (y of indices' shape, int32 indices within
/// [0, H W)); its backward is max_pool_scatter.
Variable max_pool_gather(const Variable& x, const Array& indices);

/// gx (x_shape) = 0, then gx[n, c].flat[indices[n, c, i, j]] += gy[n, c, i, j]; indices int32 of
/// gy's shape, each within [0, H W). gx takes `x_format`.
Variable max_pool_scatter(const Variable& gy, const Array& indices, const Shape& x_shape, MemoryFormat x_format);

/// The transpose of average_pooling_2d with window (ky, kx), stride (sy, sx) and pad (py, px),
/// applied to gy (N, C, OH, OW), giving x_shape: each element spread over its window / (ky kx);
/// window cells outside x_shape are dropped.
Variable avg_pool_transpose(const Variable& gy, int64_t ky, int64_t kx, int64_t sy, int64_t sx, int64_t py, int64_t px,
                            const Shape& x_shape, MemoryFormat x_format);

}  // namespace rensa::functions::detail
