// Image resampling. Bilinear resizing is linear in x and separable, so it is two matrix products
// with constant interpolation matrices: the forward and both backward passes run on GEMM, and the
// backward (matmuls again) is differentiable.
#include "rensa/functions/image.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "rensa/functions/array_ops.h"
#include "rensa/functions/linalg.h"
#include "src/functions/common.h"

namespace rensa::functions {
namespace {

// A (out, in): row i holds the weights of the two input pixels that output pixel i interpolates.
Array interpolation_matrix(int64_t out, int64_t in, bool align_corners, Dtype dtype, Device device) {
  std::vector<double> a(static_cast<std::size_t>(out * in), 0.0);
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  for (int64_t i = 0; i < out; ++i) {
    double u = 0.0;
    if (align_corners) {
      if (out > 1) u = static_cast<double>(i * (in - 1)) / static_cast<double>(out - 1);
    } else {
      u = std::max((static_cast<double>(i) + 0.5) * scale - 0.5, 0.0);
    }
    const int64_t i0 = std::min(static_cast<int64_t>(std::floor(u)), in - 1);
    const int64_t i1 = std::min(i0 + 1, in - 1);
    const double w1 = u - static_cast<double>(i0);
    a[static_cast<std::size_t>(i * in + i0)] += 1.0 - w1;
    a[static_cast<std::size_t>(i * in + i1)] += w1;
  }
  Array m = Array::from_vector(a, {out, in}, device);
  return dtype == Dtype::float64 ? m : m.astype(dtype);
}

}  // namespace

Variable resize_images(const Variable& x, Int2 output_shape, bool align_corners) {
  constexpr const char* op = "resize_images";
  detail::check_floating(op, x);
  RENSA_CHECK(x.ndim() == 4, ShapeError, op, ": x ", x.shape(), " must have 4 axes (N, C, H, W)");
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t oh = output_shape.y, ow = output_shape.x;
  RENSA_CHECK(oh >= 1 && ow >= 1, ValueError, op, ": output_shape (", oh, ", ", ow, ") must be at least 1 (x ",
              x.shape(), ")");
  RENSA_CHECK(H >= 1 && W >= 1, ShapeError, op, ": x ", x.shape(), " has an empty spatial axis to interpolate");
  const Variable ah(interpolation_matrix(oh, H, align_corners, x.dtype(), x.device()));
  const Variable aw(interpolation_matrix(ow, W, align_corners, x.dtype(), x.device()));
  // The width is interpolated by one GEMM over the rows of all planes, the height by one GEMM per
  // plane (A_h broadcast); the order with fewer multiply-adds goes first.
  if (H * W * ow + oh * H * ow <= oh * H * W + oh * W * ow) {
    const Variable t = reshape(matmul(reshape(x, {N * C * H, W}), aw, false, true), {N, C, H, ow});
    return matmul(ah, t);
  }
  const Variable t = matmul(ah, x);
  return reshape(matmul(reshape(t, {N * C * oh, W}), aw, false, true), {N, C, oh, ow});
}

}  // namespace rensa::functions
