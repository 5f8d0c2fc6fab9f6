#pragma once
/// \file
/// Chainer's deformable_convolution_2d_sampler: a convolution whose taps are moved by learned
/// offsets and read with bilinear interpolation (Dai et al., "Deformable Convolutional Networks").

#include "rensa/core/variable.h"
#include "rensa/functions/convolution.h"

namespace rensa::functions {

/// x (N, C, H, W), offset (N, 2 KH KW, OH, OW), W (O, C, KH, KW), optional b (O,) give y (N, O, OH,
/// OW): tap (ky, kx) of output (i, j) reads x (padded by `pad`) at row i sy + ky + offset[n, KH KW +
/// ky KW + kx, i, j] and column j sx + kx + offset[n, ky KW + kx, i, j] (x offsets first, as
/// Chainer), interpolating bilinearly with zeros beyond the padded input (coordinates are clipped
/// one pixel past it, where their gradient is 0). The output extent is offset's. Made of a gather
/// of the four neighbours (their positions found on the host), products with the interpolation
/// weights (differentiable in offset) and a matmul: differentiable in x, offset, W and b, twice
/// too (Chainer's only once). ShapeError naming every shape when x, offset or W is not 4-d, the
/// channels differ, offset's second axis is not 2 KH KW or its batch not x's, or b is not (O,);
/// ValueError for a stride below 1 or a negative pad; DtypeError / DeviceError as other
/// functions.
Variable deformable_convolution_2d_sampler(const Variable& x, const Variable& offset, const Variable& W,
                                           const Variable& b = Variable(), Int2 stride = 1, Int2 pad = 0);

}  // namespace rensa::functions
