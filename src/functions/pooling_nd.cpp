// N-d pooling as 2-d poolings one or two axes at a time (see pooling_nd.h). Max and mean over a
// box are separable: the max of per-axis maxima, the mean of per-axis means (with padding counted
// out by one constant factor per output element). No backward of its own.
#include "rensa/functions/pooling_nd.h"

#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/convolution.h"
#include "src/functions/common.h"
#include "src/functions/conv_geometry.h"

namespace rensa::functions {
namespace {

using Ints = std::vector<int64_t>;
using Pool2d = std::function<Variable(const Variable&, Int2, Int2, Int2)>;

struct Window {
  Ints k, s, p, out;
};

Ints expand(const char* op, const char* what, const IntN& v, std::size_t k, const Variable& x) {
  return detail::per_axis(op, what, v, k, x);
}

// Stanza 1: the parameters and the output extents; `required` is a wrapper's rank (0: any).
Window check(const char* op, const Variable& x, const IntN& ksize, const std::optional<IntN>& stride, const IntN& pad,
             bool cover_all, int64_t required) {
  detail::check_floating(op, x);
  if (required > 0) {
    RENSA_CHECK(x.ndim() == required, ShapeError, op, ": x ", x.shape(), " must have ", required, " axes (N, C and ",
                required - 2, " spatial)");
  }
  RENSA_CHECK(x.ndim() >= 3, ShapeError, op, ": x ", x.shape(), " must have at least 3 axes (N, C, spatial...)");
  // Chainer's N-d poolings reject an empty x, average pooling included.
  RENSA_CHECK(x.size() > 0, ShapeError, op, ": x ", x.shape(), " is empty; pooling needs at least one element");
  const std::size_t k = static_cast<std::size_t>(x.ndim() - 2);
  Window w{expand(op, "ksize", ksize, k, x), expand(op, "stride", stride.value_or(ksize), k, x),
           expand(op, "pad", pad, k, x), Ints(k)};
  for (std::size_t i = 0; i < k; ++i) {
    RENSA_CHECK(w.k[i] >= 1, ValueError, op, ": ksize ", ksize, " must be at least 1 (x ", x.shape(), ")");
    RENSA_CHECK(w.s[i] >= 1, ValueError, op, ": stride ", IntN(w.s), " must be at least 1 (x ", x.shape(), ")");
    RENSA_CHECK(w.p[i] >= 0 && w.p[i] < w.k[i], ValueError, op, ": pad ", pad, " must be at least 0 and below ksize ",
                ksize, " (x ", x.shape(), ")");
    const int64_t L = x.shape()[i + 2];
    w.out[i] = detail::window_count(L, w.k[i], w.s[i], w.p[i], cover_all);
    RENSA_CHECK(w.out[i] > 0, ShapeError, op, ": window ", ksize, " is larger than the padded extent ", L + 2 * w.p[i],
                " of spatial axis ", i, " of x ", x.shape(), " with pad ", pad);
    RENSA_CHECK((w.out[i] - 1) * w.s[i] - w.p[i] < L, ValueError, op, ": with ksize ", ksize, ", stride ", IntN(w.s),
                ", pad ", pad, " and cover_all, the last window on spatial axis ", i, " of x ", x.shape(),
                " would hold padding only");
  }
  return w;
}

int64_t product(const Shape& s, std::size_t from, std::size_t to) {
  int64_t p = 1;
  for (std::size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

// Pools axis `ax` of x alone: x viewed as (P, 1, L, Q) under a window one column wide.
Variable pool_axis(const Variable& x, std::size_t ax, int64_t k, int64_t s, int64_t p, const Pool2d& pool) {
  Shape sh = x.shape();
  const Variable y = pool(reshape(x, {product(sh, 0, ax), 1, sh[ax], product(sh, ax + 1, sh.size())}), Int2(k, 1),
                          Int2(s, 1), Int2(p, 0));
  sh[ax] = y.shape()[2];
  return reshape(y, sh);
}

// Reduces the last two axes together (the 2-d pooling itself), then each earlier one, last first.
Variable pool_nd(const Variable& x, const Window& w, const Pool2d& pool) {
  const std::size_t n = x.shape().size(), k = n - 2;
  if (k == 1) return pool_axis(x, 2, w.k[0], w.s[0], w.p[0], pool);
  const Int2 k2(w.k[k - 2], w.k[k - 1]), s2(w.s[k - 2], w.s[k - 1]), p2(w.p[k - 2], w.p[k - 1]);
  Variable y;
  if (k == 2) {
    y = pool(x, k2, s2, p2);
  } else {
    Shape sh = x.shape();
    const Variable y4 = pool(reshape(x, {product(sh, 0, n - 2), 1, sh[n - 2], sh[n - 1]}), k2, s2, p2);
    sh[n - 2] = y4.shape()[2];
    sh[n - 1] = y4.shape()[3];
    y = reshape(y4, sh);
  }
  for (std::size_t a = k - 2; a-- > 0;) y = pool_axis(y, a + 2, w.k[a], w.s[a], w.p[a], pool);
  return y;
}

Variable max_impl(const char* op, const Variable& x, const IntN& ksize, const std::optional<IntN>& stride,
                  const IntN& pad, bool cover_all, int64_t required) {
  const Window w = check(op, x, ksize, stride, pad, cover_all, required);
  return pool_nd(
      x, w, [cover_all](const Variable& v, Int2 k, Int2 s, Int2 p) { return max_pooling_2d(v, k, s, p, cover_all); });
}

// Each window's offset of its first maximum in row-major order over the window (padding never
// wins), as Chainer's argmax: an index conversion on the host, from x's values.
Array window_argmax(const Variable& x, const Window& w) {
  const std::size_t k = w.k.size();
  const Shape& xs = x.shape();
  const std::vector<double> v = x.array().to(Device::cpu()).to_vector<double>();
  int64_t plane = 1, outs = 1, taps = 1;
  for (std::size_t a = 0; a < k; ++a) {
    plane *= xs[a + 2];
    outs *= w.out[a];
    taps *= w.k[a];
  }
  std::vector<int32_t> idx(static_cast<std::size_t>(xs[0] * xs[1] * outs));
  Ints o(k), t(k);
  for (int64_t q = 0; q < xs[0] * xs[1]; ++q) {
    for (int64_t f = 0; f < outs; ++f) {
      for (int64_t a = static_cast<int64_t>(k) - 1, rest = f; a >= 0; --a) {
        o[static_cast<std::size_t>(a)] = rest % w.out[static_cast<std::size_t>(a)];
        rest /= w.out[static_cast<std::size_t>(a)];
      }
      double best = 0;
      int64_t best_tap = -1;
      for (int64_t tap = 0; tap < taps; ++tap) {
        int64_t flat = 0;
        bool inside = true;
        for (int64_t a = static_cast<int64_t>(k) - 1, rest = tap, scale = 1; a >= 0; --a) {
          const std::size_t u = static_cast<std::size_t>(a);
          t[u] = rest % w.k[u];
          rest /= w.k[u];
          const int64_t at = o[u] * w.s[u] - w.p[u] + t[u];
          inside = inside && at >= 0 && at < xs[u + 2];
          flat += at * scale;
          scale *= xs[u + 2];
        }
        if (!inside) continue;
        const double value = v[static_cast<std::size_t>(q * plane + flat)];
        if (best_tap < 0 || value > best) {
          best = value;
          best_tap = tap;
        }
      }
      idx[static_cast<std::size_t>(q * outs + f)] = static_cast<int32_t>(best_tap);
    }
  }
  Shape shape{xs[0], xs[1]};
  for (std::size_t a = 0; a < k; ++a) shape.push_back(w.out[a]);
  return Array::from_vector(idx, shape).to(x.device());
}

std::pair<Variable, Array> max_with_indices(const char* op, const Variable& x, const IntN& ksize,
                                            const std::optional<IntN>& stride, const IntN& pad, bool cover_all,
                                            int64_t required) {
  const Variable y = max_impl(op, x, ksize, stride, pad, cover_all, required);
  return {y, window_argmax(x, check(op, x, ksize, stride, pad, cover_all, required))};
}

// prod(ksize) / (the count of x's elements in each window), shaped (1, 1, O1..Ok); null when 1
// everywhere.
Array padding_factor(const Variable& x, const Window& w) {
  const std::size_t k = w.k.size();
  std::vector<double> f{1.0};
  bool partial = false;
  Shape shape{1, 1};
  for (std::size_t a = 0; a < k; ++a) {
    const int64_t L = x.shape()[a + 2];
    std::vector<double> next;
    next.reserve(f.size() * static_cast<std::size_t>(w.out[a]));
    for (double v : f) {
      for (int64_t o = 0; o < w.out[a]; ++o) {
        const int64_t lo = o * w.s[a] - w.p[a];
        const int64_t count = std::min(lo + w.k[a], L) - std::max<int64_t>(lo, 0);
        partial = partial || count < w.k[a];
        next.push_back(v * static_cast<double>(w.k[a]) / static_cast<double>(count));
      }
    }
    f = std::move(next);
    shape.push_back(w.out[a]);
  }
  if (!partial) return Array();
  return Array::from_vector(f, shape).astype(x.dtype()).to(x.device());
}

Variable average_impl(const char* op, const Variable& x, const IntN& ksize, const std::optional<IntN>& stride,
                      const IntN& pad, std::optional<double> pad_value, int64_t required) {
  RENSA_CHECK(!pad_value || *pad_value == 0.0, ValueError, op, ": pad_value ", *pad_value,
              " must be 0 or none (padding left out), as Chainer (x ", x.shape(), ")");
  const Window w = check(op, x, ksize, stride, pad, false, required);
  Variable y =
      pool_nd(x, w, [](const Variable& v, Int2 k, Int2 s, Int2 p) { return average_pooling_2d(v, k, s, p, false); });
  if (!pad_value) {
    const Array factor = padding_factor(x, w);
    if (!factor.is_null()) y = mul(y, Variable(factor));
  }
  return y;
}

}  // namespace

Variable max_pooling_nd(const Variable& x, const IntN& ksize, const std::optional<IntN>& stride, const IntN& pad,
                        bool cover_all) {
  return max_impl("max_pooling_nd", x, ksize, stride, pad, cover_all, 0);
}
Variable max_pooling_1d(const Variable& x, const IntN& ksize, const std::optional<IntN>& stride, const IntN& pad,
                        bool cover_all) {
  return max_impl("max_pooling_1d", x, ksize, stride, pad, cover_all, 3);
}
Variable max_pooling_3d(const Variable& x, const IntN& ksize, const std::optional<IntN>& stride, const IntN& pad,
                        bool cover_all) {
  return max_impl("max_pooling_3d", x, ksize, stride, pad, cover_all, 5);
}
std::pair<Variable, Array> max_pooling_nd_with_indices(const Variable& x, const IntN& ksize,
                                                       const std::optional<IntN>& stride, const IntN& pad,
                                                       bool cover_all) {
  return max_with_indices("max_pooling_nd", x, ksize, stride, pad, cover_all, 0);
}
std::pair<Variable, Array> max_pooling_1d_with_indices(const Variable& x, const IntN& ksize,
                                                       const std::optional<IntN>& stride, const IntN& pad,
                                                       bool cover_all) {
  return max_with_indices("max_pooling_1d", x, ksize, stride, pad, cover_all, 3);
}
std::pair<Variable, Array> max_pooling_3d_with_indices(const Variable& x, const IntN& ksize,
                                                       const std::optional<IntN>& stride, const IntN& pad,
                                                       bool cover_all) {
  return max_with_indices("max_pooling_3d", x, ksize, stride, pad, cover_all, 5);
}
Variable average_pooling_nd(const Variable& x, const IntN& ksize, const std::optional<IntN>& stride, const IntN& pad,
                            std::optional<double> pad_value) {
  return average_impl("average_pooling_nd", x, ksize, stride, pad, pad_value, 0);
}
Variable average_pooling_1d(const Variable& x, const IntN& ksize, const std::optional<IntN>& stride, const IntN& pad,
                            std::optional<double> pad_value) {
  return average_impl("average_pooling_1d", x, ksize, stride, pad, pad_value, 3);
}
Variable average_pooling_3d(const Variable& x, const IntN& ksize, const std::optional<IntN>& stride, const IntN& pad,
                            std::optional<double> pad_value) {
  return average_impl("average_pooling_3d", x, ksize, stride, pad, pad_value, 5);
}

}  // namespace rensa::functions
