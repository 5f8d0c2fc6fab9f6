// local_convolution_2d as a composite: the KH KW strided slices of x stacked into columns (N, C KH
// KW, OH OW), then one matmul per output position with that position's weights, batched.
#include "rensa/functions/local_convolution.h"

#include <vector>

#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/linalg.h"
#include "src/functions/common.h"
#include "src/functions/conv_geometry.h"

namespace rensa::functions {

Variable local_convolution_2d(const Variable& x, const Variable& W, const Variable& b, Int2 stride) {
  const char* op = "local_convolution_2d";
  detail::check_floating(op, x);
  if (b.is_null()) {
    detail::check_same_dtype_device(op, {&x, &W});
  } else {
    detail::check_same_dtype_device(op, {&x, &W, &b});
  }
  RENSA_CHECK(stride.y >= 1 && stride.x >= 1, ValueError, op, ": stride ", stride, " must be at least 1 (x ", x.shape(),
              ", W ", W.shape(), ")");
  RENSA_CHECK(x.ndim() == 4 && W.ndim() == 6, ShapeError, op, ": x ", x.shape(), " (N, C, H, W) and W ", W.shape(),
              " (O, OH, OW, C, KH, KW) must have 4 and 6 axes");
  const Shape& ws = W.shape();
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], Wd = x.shape()[3];
  const int64_t O = ws[0], OH = ws[1], OW = ws[2], KH = ws[4], KW = ws[5];
  RENSA_CHECK(ws[3] == C, ShapeError, op, ": x ", x.shape(), " has ", C, " channels but W ", ws, " takes ", ws[3]);
  RENSA_CHECK(b.is_null() || b.shape() == Shape({O, OH, OW}), ShapeError, op, ": b ", b.is_null() ? Shape() : b.shape(),
              " must be (", O, ", ", OH, ", ", OW, ") for W ", ws);
  RENSA_CHECK(OH >= 1 && OW >= 1 && (OH - 1) * stride.y + KH <= H && (OW - 1) * stride.x + KW <= Wd, ShapeError, op,
              ": the ", OH, " x ", OW, " windows (", KH, ", ", KW, ") of W ", ws, " at stride ", stride,
              " do not fit in x ", x.shape());
  std::vector<Variable> taps;
  for (int64_t ky = 0; ky < KH; ++ky) {
    for (int64_t kx = 0; kx < KW; ++kx) {
      taps.push_back(get_item(x, {Slice{}, Slice{}, Slice{ky, ky + (OH - 1) * stride.y + 1, stride.y},
                                  Slice{kx, kx + (OW - 1) * stride.x + 1, stride.x}}));
    }
  }
  const int64_t F = C * KH * KW, P = OH * OW;
  // (N, C, KH KW, OH, OW) -> (OH OW, N, C KH KW): C, KH, KW in W's order.
  const Variable cols = transpose(reshape(stack(taps, 2), {N, F, P}), {2, 0, 1});
  const Variable w = transpose(reshape(W, {O, P, F}), {1, 2, 0});  // (OH OW, C KH KW, O)
  Variable y = reshape(transpose(matmul(cols, w), {1, 2, 0}), {N, O, OH, OW});
  if (!b.is_null()) y = add(y, reshape(b, {1, O, OH, OW}));
  return y;
}

}  // namespace rensa::functions
