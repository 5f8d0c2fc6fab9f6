// Chainer's 2-d convolution variants, each a convolution_2d with its own checks: dilated (the
// dilate option) and depthwise (groups = C, with the weight turned into convolution_2d's layout).
#include "rensa/functions/array_ops.h"
#include "rensa/functions/convolution.h"
#include "src/functions/common.h"

namespace rensa::functions {

Variable dilated_convolution_2d(const Variable& x, const Variable& W, const Variable& b, Int2 stride, Int2 pad,
                                Int2 dilate, bool cover_all) {
  const char* op = "dilated_convolution_2d";
  detail::check_floating(op, x);
  // convolution_2d names itself in its errors; repeat its cheap checks so they name this function.
  RENSA_CHECK(x.ndim() == 4 && W.ndim() == 4, ShapeError, op, ": x ", x.shape(), " and W ", W.shape(),
              " must have 4 axes");
  RENSA_CHECK(x.shape()[1] == W.shape()[1], ShapeError, op, ": x ", x.shape(), " has ", x.shape()[1],
              " channels but W ", W.shape(), " takes ", W.shape()[1]);
  return convolution_2d(x, W, b, Conv2dOptions{stride, pad, dilate, 1, cover_all});
}

Variable depthwise_convolution_2d(const Variable& x, const Variable& W, const Variable& b, Int2 stride, Int2 pad) {
  const char* op = "depthwise_convolution_2d";
  detail::check_floating(op, x);
  RENSA_CHECK(x.ndim() == 4 && W.ndim() == 4, ShapeError, op, ": x ", x.shape(), " (N, C, H, W) and W ", W.shape(),
              " (M, C, KH, KW) must have 4 axes");
  const int64_t M = W.shape()[0], C = W.shape()[1], KH = W.shape()[2], KW = W.shape()[3];
  RENSA_CHECK(x.shape()[1] == C, ShapeError, op, ": x ", x.shape(), " has ", x.shape()[1], " channels but W ",
              W.shape(), " (M, C, KH, KW) takes ", C);
  RENSA_CHECK(b.is_null() || (b.ndim() == 1 && b.shape()[0] == M * C), ShapeError, op, ": b ",
              b.is_null() ? Shape() : b.shape(), " must have the M C = ", M * C, " output channels of W ", W.shape());
  RENSA_CHECK(C > 0, ShapeError, op, ": x ", x.shape(), " and W ", W.shape(), " have no channels");
  // (M, C, KH, KW) -> (C, M, KH, KW) -> (C M, 1, KH, KW): output channel c M + m, in group c.
  const Variable Wg = reshape(transpose(W, {1, 0, 2, 3}), {M * C, 1, KH, KW});
  Conv2dOptions o;
  o.stride = stride;
  o.pad = pad;
  o.groups = C;
  return convolution_2d(x, Wg, b, o);
}

}  // namespace rensa::functions
