#pragma once
/// \file
/// Moving pixels between space and channels (Chainer's depth2space, space2depth) and unfolding
/// sliding windows into channels (im2col). Inputs are 4-d (N, C, H, W); another ndim throws
/// ShapeError, a null x ValueError. The results are copies; every function here supports double
/// backprop.

#include <cstdint>

#include "rensa/core/variable.h"
#include "rensa/functions/convolution.h"

namespace rensa::functions {

/// (N, C * r * r, H, W) -> (N, C, H * r, W * r): y[n, c, h * r + i, w * r + j] =
/// x[n, (i * r + j) * C + c, h, w] (Chainer's channel order). ValueError for r < 1, ShapeError when
/// r * r does not divide the channels.
Variable depth2space(const Variable& x, int64_t r);

/// The inverse of depth2space: (N, C, H, W) -> (N, C * r * r, H / r, W / r). ValueError for r < 1,
/// ShapeError when r does not divide H and W.
Variable space2depth(const Variable& x, int64_t r);

/// Every (kh, kw) window of x (N, C, H, W), with Chainer's convolution geometry (stride, zero
/// padding on both sides, dilation; with cover_all the last windows may run past the end into
/// zeros), as channels: y (N, C * kh * kw, OH, OW) with y[n, (c * kh + ky) * kw + kx, oy, ox] =
/// x[n, c, oy * sy + ky * dy - ph, ox * sx + kx * dx - pw] (0 outside x). ValueError for a ksize,
/// stride or dilate below 1 or a negative pad; ShapeError when no window fits. The gradient adds
/// each window element back to its pixel.
Variable im2col(const Variable& x, Int2 ksize, Int2 stride = 1, Int2 pad = 0, bool cover_all = false,
                Int2 dilate = 1);

}  // namespace rensa::functions
