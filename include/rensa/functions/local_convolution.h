#pragma once
/// \file
/// Chainer's local_convolution_2d: a convolution whose weights differ at every output position.

#include "rensa/core/variable.h"
#include "rensa/functions/convolution.h"

namespace rensa::functions {

/// x (N, C, H, W), W (O, OH, OW, C, KH, KW) (Chainer's layout), optional b (O, OH, OW) give y (N, O,
/// OH, OW), y[n, o, i, j] = b[o, i, j] + sum over c, ky, kx of x[n, c, i sy + ky, j sx + kx]
/// W[o, i, j, c, ky, kx] (no padding). The output extent is W's; the windows must fit in x. Made of
/// strided slices and a batched matmul: differentiable to any order (Chainer's is not twice).
/// ShapeError naming every shape when x is not 4-d, W not 6-d, the channels differ, b is not
/// (O, OH, OW), or the last window runs past x; ValueError for a stride below 1; DtypeError /
/// DeviceError as other functions.
Variable local_convolution_2d(const Variable& x, const Variable& W, const Variable& b = Variable(), Int2 stride = 1);

}  // namespace rensa::functions
