// Unpooling and upsampling, made of pooling's recorded transposes (src/functions/pooling_internal.h):
// unpooling is KH KW times the transpose of average pooling, upsampling the scatter of max
// pooling's backward at positions computed from the window offsets. Both are differentiable.
#include "rensa/functions/unpooling.h"

#include <limits>
#include <vector>

#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "src/functions/common.h"
#include "src/functions/conv_geometry.h"
#include "src/functions/pooling_internal.h"

namespace rensa::functions {
namespace {

using Ints = std::vector<int64_t>;

// Chainer's get_deconv_outsize.
int64_t deconv_outsize(int64_t in, int64_t k, int64_t s, int64_t p, bool cover_all) {
  return cover_all ? s * (in - 1) + k - s + 1 - 2 * p : s * (in - 1) + k - 2 * p;
}

struct Window {
  Ints k, s, p, out;
};

Ints expand(const char* op, const char* what, const IntN& v, std::size_t k, const Variable& x) {
  return detail::per_axis(op, what, v, k, x);
}

// Stanza 1 of every unpooling: ranks, parameters and the output extents.
Window check(const char* op, const Variable& x, int64_t rank, const IntN& ksize, const std::optional<IntN>& stride,
             const IntN& pad, const std::optional<Ints>& outsize, bool cover_all) {
  detail::check_floating(op, x);
  if (rank > 0) {
    RENSA_CHECK(x.ndim() == rank, ShapeError, op, ": x ", x.shape(), " must have ", rank, " axes (N, C and ", rank - 2,
                " spatial)");
  }
  RENSA_CHECK(x.ndim() >= 3, ShapeError, op, ": x ", x.shape(), " must have at least 3 axes (N, C, spatial...)");
  const std::size_t k = static_cast<std::size_t>(x.ndim() - 2);
  Window w{expand(op, "ksize", ksize, k, x), expand(op, "stride", stride.value_or(ksize), k, x),
           expand(op, "pad", pad, k, x), Ints(k)};
  if (outsize) {
    RENSA_CHECK(outsize->size() == k, ValueError, op, ": outsize ", IntN(*outsize), " must have one extent per ",
                "spatial axis of x ", x.shape());
  }
  for (std::size_t i = 0; i < k; ++i) {
    RENSA_CHECK(w.k[i] >= 1 && w.s[i] >= 1, ValueError, op, ": ksize ", ksize, " and stride ", IntN(w.s),
                " must be at least 1 (x ", x.shape(), ")");
    RENSA_CHECK(w.p[i] >= 0, ValueError, op, ": pad ", pad, " must not be negative (x ", x.shape(), ")");
    const int64_t in = x.shape()[i + 2];
    w.out[i] = outsize ? (*outsize)[i] : deconv_outsize(in, w.k[i], w.s[i], w.p[i], cover_all);
    RENSA_CHECK(w.out[i] > 0, ShapeError, op, ": the output of x ", x.shape(), " with ksize ", ksize, ", stride ",
                IntN(w.s), " and pad ", pad, " would be empty on spatial axis ", i, " (", w.out[i], ")");
    if (outsize) {
      RENSA_CHECK(detail::window_count(w.out[i], w.k[i], w.s[i], w.p[i], cover_all) == in, ShapeError, op, ": outsize ",
                  IntN(*outsize), " does not pool back to x ", x.shape(), " with ksize ", ksize, ", stride ", IntN(w.s),
                  ", pad ", pad, " and cover_all ", cover_all ? "true" : "false");
    }
  }
  return w;
}

// Unpooling of checked x over the 2-d window (ky, kx) of its last two axes, x viewed as 4-d.
Variable unpool4(const Variable& x4, int64_t ky, int64_t kx, int64_t sy, int64_t sx, int64_t py, int64_t px, int64_t oh,
                 int64_t ow) {
  const Shape& s = x4.shape();
  const Variable y = detail::avg_pool_transpose(x4, ky, kx, sy, sx, py, px, Shape{s[0], s[1], oh, ow},
                                                x4.array().suggest_memory_format());
  return ky * kx == 1 ? y : mul(y, static_cast<double>(ky * kx));
}

int64_t product(const Shape& s, std::size_t from, std::size_t to) {
  int64_t p = 1;
  for (std::size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

Variable unpooling_impl(const char* op, const Variable& x, int64_t rank, const IntN& ksize,
                        const std::optional<IntN>& stride, const IntN& pad, const std::optional<Ints>& outsize,
                        bool cover_all) {
  const Window w = check(op, x, rank, ksize, stride, pad, outsize, cover_all);
  const std::size_t k = w.k.size();
  if (k == 2) return unpool4(x, w.k[0], w.k[1], w.s[0], w.s[1], w.p[0], w.p[1], w.out[0], w.out[1]);
  // The all-ones box is a product of per-axis ones: unpool one axis at a time, x viewed as
  // (P, 1, L, Q) under a window one column wide.
  Variable y = x;
  for (std::size_t a = 0; a < k; ++a) {
    Shape sh = y.shape();
    const std::size_t ax = a + 2;
    const Variable y4 = reshape(y, {product(sh, 0, ax), 1, sh[ax], product(sh, ax + 1, sh.size())});
    sh[ax] = w.out[a];
    y = reshape(unpool4(y4, w.k[a], 1, w.s[a], 1, w.p[a], 0, w.out[a], y4.shape()[3]), sh);
  }
  return y;
}

}  // namespace

Variable unpooling_2d(const Variable& x, Int2 ksize, std::optional<Int2> stride, Int2 pad, std::optional<Int2> outsize,
                      bool cover_all) {
  const char* op = "unpooling_2d";
  const std::optional<IntN> s = stride ? std::optional<IntN>(IntN{stride->y, stride->x}) : std::nullopt;
  const std::optional<Ints> out = outsize ? std::optional<Ints>(Ints{outsize->y, outsize->x}) : std::nullopt;
  return unpooling_impl(op, x, 4, IntN{ksize.y, ksize.x}, s, IntN{pad.y, pad.x}, out, cover_all);
}

Variable unpooling_nd(const Variable& x, const IntN& ksize, const std::optional<IntN>& stride, const IntN& pad,
                      const std::optional<std::vector<int64_t>>& outsize, bool cover_all) {
  return unpooling_impl("unpooling_nd", x, 0, ksize, stride, pad, outsize, cover_all);
}
Variable unpooling_1d(const Variable& x, const IntN& ksize, const std::optional<IntN>& stride, const IntN& pad,
                      const std::optional<std::vector<int64_t>>& outsize, bool cover_all) {
  return unpooling_impl("unpooling_1d", x, 3, ksize, stride, pad, outsize, cover_all);
}
Variable unpooling_3d(const Variable& x, const IntN& ksize, const std::optional<IntN>& stride, const IntN& pad,
                      const std::optional<std::vector<int64_t>>& outsize, bool cover_all) {
  return unpooling_impl("unpooling_3d", x, 5, ksize, stride, pad, outsize, cover_all);
}

Variable upsampling_2d(const Variable& x, const Array& indexes, Int2 ksize, std::optional<Int2> stride, Int2 pad,
                       std::optional<Int2> outsize, bool cover_all) {
  const char* op = "upsampling_2d";
  const std::optional<IntN> st = stride ? std::optional<IntN>(IntN{stride->y, stride->x}) : std::nullopt;
  const std::optional<Ints> out = outsize ? std::optional<Ints>(Ints{outsize->y, outsize->x}) : std::nullopt;
  const Window w = check(op, x, 4, IntN{ksize.y, ksize.x}, st, IntN{pad.y, pad.x}, out, cover_all);
  RENSA_CHECK(!indexes.is_null() && is_integral(indexes.dtype()) && indexes.dtype() != Dtype::bool_, DtypeError, op,
              ": indexes must be an integer array, got ", indexes.is_null() ? "none" : dtype_name(indexes.dtype()),
              " (x ", x.shape(), ")");
  RENSA_CHECK(indexes.shape() == x.shape(), ShapeError, op, ": indexes ", indexes.shape(), " must have x's shape ",
              x.shape());
  const int64_t OH = w.out[0], OW = w.out[1], H = x.shape()[2], W = x.shape()[3];
  RENSA_CHECK(OH * OW <= std::numeric_limits<int32_t>::max(), ShapeError, op, ": the output planes (", OH, ", ", OW,
              ") of x ", x.shape(), " are too large (more than 2^31 - 1 elements)");
  // Window offsets to plane positions (an index conversion, on the host); offsets landing in the
  // padding or past the output keep position 0 and a zero mask.
  const std::vector<int64_t> t = indexes.to(Device::cpu()).to_vector<int64_t>();
  std::vector<int32_t> pos(t.size(), 0);
  std::vector<double> mask(t.size(), 1.0);
  bool dropped = false;
  const int64_t taps = w.k[0] * w.k[1];
  for (std::size_t f = 0; f < t.size(); ++f) {
    const int64_t i = static_cast<int64_t>(f) / W % H, j = static_cast<int64_t>(f) % W;
    RENSA_CHECK(t[f] >= 0 && t[f] < taps, IndexError, op, ": index ", t[f], " at flat position ", f, " of indexes ",
                indexes.shape(), " is outside [0, ", taps, ") for ksize ", ksize);
    const int64_t r = i * w.s[0] - w.p[0] + t[f] / w.k[1], q = j * w.s[1] - w.p[1] + t[f] % w.k[1];
    if (r >= 0 && r < OH && q >= 0 && q < OW) {
      pos[f] = static_cast<int32_t>(r * OW + q);
    } else {
      mask[f] = 0.0;
      dropped = true;
    }
  }
  const Variable xin =
      dropped ? mul(x, Variable(Array::from_vector(mask, x.shape()).astype(x.dtype()).to(x.device()))) : x;
  return detail::max_pool_scatter(xin, Array::from_vector(pos, x.shape()).to(x.device()),
                                  Shape{x.shape()[0], x.shape()[1], OH, OW}, x.array().suggest_memory_format());
}

}  // namespace rensa::functions
