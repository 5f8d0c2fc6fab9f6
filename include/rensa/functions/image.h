#pragma once
/// \file
/// Image resampling over NCHW arrays (batch, channels, height, width), with Chainer's semantics.
/// Inputs must be floating (DtypeError otherwise); ShapeError names the function and the shapes,
/// ValueError the sizes at fault. Differentiable twice (and more).

#include "rensa/core/variable.h"
#include "rensa/functions/convolution.h"

namespace rensa::functions {

/// Bilinear resize (Chainer's resize_images): x (N, C, H, W) gives y (N, C, out_h, out_w) with
/// output_shape = (out_h, out_w). Output pixel i samples the input at coordinate
/// u = i (H - 1) / (out_h - 1) (0 when out_h is 1) with `align_corners` (Chainer's default: the
/// corner pixels of input and output coincide), or at u = max((i + 0.5) H / out_h - 0.5, 0)
/// without (PyTorch's half-pixel convention); y interpolates linearly between the rows floor(u)
/// and floor(u) + 1 (clipped to H - 1), and likewise along the width. Computed as
/// y = A_h x A_w^T with constant interpolation matrices A_h (out_h, H) and A_w (out_w, W), so the
/// gradient is A_h^T gy A_w. ShapeError when x is not 4-d or H or W is 0; ValueError when out_h or
/// out_w is below 1.
Variable resize_images(const Variable& x, Int2 output_shape, bool align_corners = true);

}  // namespace rensa::functions
