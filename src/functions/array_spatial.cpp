// depth2space and space2depth are reshape-transpose-reshape composites; im2col gathers each
// (padded) image plane at precomputed window positions, so its gradient is one scatter-add.
#include "rensa/functions/array_spatial.h"

#include <utility>
#include <vector>

#include "rensa/functions/array_ops.h"
#include "src/functions/arg_checks.h"
#include "src/functions/conv_geometry.h"
#include "src/functions/gather.h"

namespace rensa::functions {
namespace {

void check_4d(const char* op, const Variable& x) {
  detail::check_not_null(op, x);
  RENSA_CHECK(x.ndim() == 4, ShapeError, op, ": x must be 4-d (N, C, H, W), got shape ", x.shape());
}

}  // namespace

Variable depth2space(const Variable& x, int64_t r) {
  check_4d("depth2space", x);
  RENSA_CHECK(r >= 1, ValueError, "depth2space: r must be positive, got ", r, " (x of shape ", x.shape(), ")");
  const Shape& s = x.shape();
  RENSA_CHECK(s[1] % (r * r) == 0, ShapeError, "depth2space: r * r = ", r * r, " does not divide the ", s[1],
              " channels of x ", s);
  const int64_t c = s[1] / (r * r);
  const Variable y = transpose(reshape(x, {s[0], r, r, c, s[2], s[3]}), {0, 3, 4, 1, 5, 2});
  return reshape(y, {s[0], c, s[2] * r, s[3] * r});
}

Variable space2depth(const Variable& x, int64_t r) {
  check_4d("space2depth", x);
  RENSA_CHECK(r >= 1, ValueError, "space2depth: r must be positive, got ", r, " (x of shape ", x.shape(), ")");
  const Shape& s = x.shape();
  RENSA_CHECK(s[2] % r == 0 && s[3] % r == 0, ShapeError, "space2depth: r = ", r,
              " does not divide the height and width of x ", s);
  const Variable y = transpose(reshape(x, {s[0], s[1], s[2] / r, r, s[3] / r, r}), {0, 3, 5, 1, 2, 4});
  return reshape(y, {s[0], r * r * s[1], s[2] / r, s[3] / r});
}

Variable im2col(const Variable& x, Int2 ksize, Int2 stride, Int2 pad, bool cover_all, Int2 dilate) {
  check_4d("im2col", x);
  RENSA_CHECK(ksize.y >= 1 && ksize.x >= 1 && stride.y >= 1 && stride.x >= 1 && dilate.y >= 1 && dilate.x >= 1,
              ValueError, "im2col: ksize ", ksize, ", stride ", stride, " and dilate ", dilate,
              " must be positive (x of shape ", x.shape(), ")");
  RENSA_CHECK(pad.y >= 0 && pad.x >= 0, ValueError, "im2col: pad ", pad, " must be non-negative (x of shape ",
              x.shape(), ")");
  const Shape& s = x.shape();
  const int64_t dky = detail::dilated(ksize.y, dilate.y), dkx = detail::dilated(ksize.x, dilate.x);
  const int64_t oh = detail::window_count(s[2], dky, stride.y, pad.y, cover_all);
  const int64_t ow = detail::window_count(s[3], dkx, stride.x, pad.x, cover_all);
  RENSA_CHECK(oh > 0 && ow > 0, ShapeError, "im2col: no window of ksize ", ksize, " with dilate ", dilate,
              " fits x of shape ", s, " padded by ", pad);
  // Chainer's padding: cover_all windows may reach stride - 1 elements past the end.
  const int64_t extra_y = cover_all ? stride.y - 1 : 0, extra_x = cover_all ? stride.x - 1 : 0;
  const Variable xp = pad.y + pad.x + extra_y + extra_x == 0
                          ? x
                          : functions::pad(x, {{0, 0}, {0, 0}, {pad.y, pad.y + extra_y}, {pad.x, pad.x + extra_x}});
  const int64_t hp = xp.shape()[2], wp = xp.shape()[3];
  std::vector<int64_t> pos;
  pos.reserve(static_cast<std::size_t>(ksize.y * ksize.x * oh * ow));
  for (int64_t ky = 0; ky < ksize.y; ++ky) {
    for (int64_t kx = 0; kx < ksize.x; ++kx) {
      for (int64_t oy = 0; oy < oh; ++oy) {
        for (int64_t ox = 0; ox < ow; ++ox) {
          pos.push_back((oy * stride.y + ky * dilate.y) * wp + ox * stride.x + kx * dilate.x);
        }
      }
    }
  }
  const Variable planes = reshape(xp, {s[0] * s[1], hp * wp});
  const Variable cols = detail::take("im2col", planes, Array::from_vector(pos, x.device()), 1);
  return reshape(cols, {s[0], s[1] * ksize.y * ksize.x, oh, ow});
}

}  // namespace rensa::functions
