#pragma once
/// \file
/// Spatial transformer networks (Chainer's spatial_transformer_grid and
/// spatial_transformer_sampler): affine sampling grids and bilinear sampling of images at them.
/// Coordinates are normalized: -1 is the first pixel's centre, 1 the last one's.

#include <cstdint>

#include "rensa/core/variable.h"
#include "rensa/functions/convolution.h"

namespace rensa::functions {

/// The sampling grid (N, 2, H, W) of affine transforms theta (N, 2, 3) over an output of
/// output_shape (H, W): grid[n, :, i, j] = theta[n] @ (x_j, y_i, 1) with x, y evenly spaced in
/// [-1, 1] (channel 0 is x, 1 is y). DtypeError for a non-floating theta, ShapeError for another
/// shape, ValueError for a non-positive output extent.
Variable spatial_transformer_grid(const Variable& theta, Int2 output_shape);

/// Bilinear samples y (N, C, OH, OW) of x (N, C, H, W) at grid (N, 2, OH, OW) (x coordinate in
/// channel 0, y in 1; normalized as above); points outside the image blend with zeros, and
/// coordinates beyond one pixel outside are clamped there, as in Chainer. Differentiable in x and
/// in grid (its gradient is 0 where a coordinate is clamped). DtypeError unless x is floating and
/// grid has x's dtype, ShapeError for other shapes or differing batch sizes, DeviceError for
/// differing devices. Grid values are read on the host to find each point's pixels.
Variable spatial_transformer_sampler(const Variable& x, const Variable& grid);

}  // namespace rensa::functions
