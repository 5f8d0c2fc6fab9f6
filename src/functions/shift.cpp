// shift as a composite: the zero-padded x sliced at each group's offset, the slices concatenated.
#include "rensa/functions/shift.h"

#include <cstdlib>
#include <vector>

#include "rensa/functions/array_ops.h"
#include "src/functions/common.h"
#include "src/functions/conv_geometry.h"

namespace rensa::functions {

Variable shift(const Variable& x, Int2 ksize, Int2 dilate) {
  const char* op = "shift";
  RENSA_CHECK(ksize.y >= 1 && ksize.x >= 1 && ksize.y % 2 == 1 && ksize.x % 2 == 1, ValueError, op, ": ksize ", ksize,
              " must be odd and positive (x ", x.shape(), ")");
  RENSA_CHECK(dilate.y != 0 && dilate.x != 0, ValueError, op, ": dilate ", dilate, " must not be 0 (x ", x.shape(),
              ")");
  detail::check_floating(op, x);
  RENSA_CHECK(x.ndim() == 4, ShapeError, op, ": x ", x.shape(), " must have 4 axes (N, C, H, W)");
  const int64_t groups = ksize.y * ksize.x, C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  RENSA_CHECK(C >= groups, ShapeError, op, ": x ", x.shape(), " has ", C, " channels, fewer than the ", groups,
              " groups of ksize ", ksize);
  const int64_t py = ksize.y / 2 * std::abs(dilate.y), px = ksize.x / 2 * std::abs(dilate.x);
  const Variable xp = pad(x, {{0, 0}, {0, 0}, {py, py}, {px, px}});
  const int64_t size = C / groups;
  std::vector<Variable> parts;
  for (int64_t i = 0; i < groups; ++i) {
    // Chainer puts the center group (no shift) last, so that it also takes the remainder.
    int64_t g = i;
    if (g == (groups - 1) / 2) {
      g = groups - 1;
    } else if (g == groups - 1) {
      g = (groups - 1) / 2;
    }
    const int64_t ky = g / ksize.x - ksize.y / 2, kx = g % ksize.x - ksize.x / 2;
    const int64_t hs = py - ky * dilate.y, ws = px - kx * dilate.x;
    const int64_t end = i < groups - 1 ? (i + 1) * size : C;
    parts.push_back(get_item(xp, {Slice{}, Slice{i * size, end}, Slice{hs, hs + H}, Slice{ws, ws + W}}));
  }
  return concat(parts, 1);
}

}  // namespace rensa::functions
