// N-d convolution and deconvolution as compositions of the 2-d ones (see convolution_nd.h): every
// step is a differentiable function, so no backward is written here and all orders of gradients
// come from convolution_2d's.
#include "rensa/functions/convolution_nd.h"

#include <algorithm>

#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/convolution.h"
#include "src/functions/common.h"
#include "src/functions/conv_geometry.h"

namespace rensa::functions {

std::ostream& operator<<(std::ostream& os, const IntN& v) {
  os << '(';
  for (std::size_t i = 0; i < v.values.size(); ++i) os << (i ? ", " : "") << v.values[i];
  return os << ')';
}

namespace {

using Ints = std::vector<int64_t>;

// Per-axis parameters, checked.
struct Geom {
  Ints stride, pad, dilate;
  int64_t groups = 1;
};

Ints tail(const Ints& v) {
  return Ints(v.begin() + 1, v.end());
}
Geom tail(const Geom& g) {
  return Geom{tail(g.stride), tail(g.pad), tail(g.dilate), g.groups};
}

Shape with_leading(int64_t a, int64_t b, const Shape& s, std::size_t from) {
  Shape out{a, b};
  for (std::size_t i = from; i < s.size(); ++i) out.push_back(s[i]);
  return out;
}

// (1, O, 1, ..., 1) for a bias broadcast over k spatial axes.
Variable bias_view(const Variable& b, std::size_t k) {
  Shape s{1, b.shape()[0]};
  s.resize(k + 2, 1);
  return reshape(b, s);
}

// pad_width pairs that pad only `axis` of an ndim array.
std::vector<std::pair<int64_t, int64_t>> pad_axis(int64_t ndim, int64_t axis, int64_t before, int64_t after) {
  std::vector<std::pair<int64_t, int64_t>> w(static_cast<std::size_t>(ndim), {0, 0});
  w[static_cast<std::size_t>(axis)] = {before, after};
  return w;
}

// Convolution of checked inputs over x.ndim() - 2 spatial axes.
Variable conv_rec(const Variable& x, const Variable& W, const Variable& b, const Geom& g, bool cover_all) {
  const std::size_t k = x.shape().size() - 2;
  const int64_t N = x.shape()[0], C = x.shape()[1], O = W.shape()[0];
  if (k == 1) {
    Conv2dOptions o{Int2(1, g.stride[0]), Int2(0, g.pad[0]), Int2(1, g.dilate[0]), g.groups, cover_all};
    const Variable y =
        convolution_2d(reshape(x, {N, C, 1, x.shape()[2]}), reshape(W, {O, W.shape()[1], 1, W.shape()[2]}), b, o);
    return reshape(y, {N, O, y.shape()[3]});
  }
  if (k == 2) {
    Conv2dOptions o{Int2(g.stride[0], g.stride[1]), Int2(g.pad[0], g.pad[1]), Int2(g.dilate[0], g.dilate[1]), g.groups,
                    cover_all};
    return convolution_2d(x, W, b, o);
  }
  // Output plane d reads input planes d s - p + kd dilate: per tap kd, a strided slice of the padded
  // x with the planes folded into the batch, convolved over the remaining axes with W[:, :, kd].
  const int64_t D = x.shape()[2], KD = W.shape()[2], s = g.stride[0], p = g.pad[0];
  const int64_t dk = detail::dilated(KD, g.dilate[0]);
  const int64_t OD = detail::window_count(D, dk, s, p, cover_all);
  const int64_t after = std::max<int64_t>(0, (OD - 1) * s + dk - D - p);
  Variable xp = (p > 0 || after > 0) ? pad(x, pad_axis(x.ndim(), 2, p, after)) : x;
  xp = swapaxes(xp, 1, 2);  // (N, D', C, ...)
  const Geom rest = tail(g);
  Variable acc;
  for (int64_t kd = 0; kd < KD; ++kd) {
    const int64_t start = kd * g.dilate[0];
    const Variable xs = reshape(get_item(xp, {Slice{}, Slice{start, start + (OD - 1) * s + 1, s}}),
                                with_leading(N * OD, C, x.shape(), 3));
    const Variable yk = conv_rec(xs, get_item(W, {Slice{}, Slice{}, kd}), Variable(), rest, cover_all);
    acc = acc.is_null() ? yk : add(acc, yk);
  }
  Variable y = swapaxes(reshape(acc, with_leading(N, OD, acc.shape(), 1)), 1, 2);
  return b.is_null() ? y : add(y, bias_view(b, k));
}

// Deconvolution of checked inputs to the output extents `out`.
Variable deconv_rec(const Variable& x, const Variable& W, const Variable& b, const Geom& g, const Ints& out) {
  const std::size_t k = x.shape().size() - 2;
  const int64_t N = x.shape()[0], C = x.shape()[1], O = W.shape()[1] * g.groups;
  if (k == 1) {
    Deconv2dOptions o{Int2(1, g.stride[0]), Int2(0, g.pad[0]), Int2(1, out[0]), Int2(1, g.dilate[0]), g.groups};
    const Variable y =
        deconvolution_2d(reshape(x, {N, C, 1, x.shape()[2]}), reshape(W, {C, W.shape()[1], 1, W.shape()[2]}), b, o);
    return reshape(y, {N, O, out[0]});
  }
  if (k == 2) {
    Deconv2dOptions o{Int2(g.stride[0], g.stride[1]), Int2(g.pad[0], g.pad[1]), Int2(out[0], out[1]),
                      Int2(g.dilate[0], g.dilate[1]), g.groups};
    return deconvolution_2d(x, W, b, o);
  }
  // Input plane i spreads over output planes i s - p + kd dilate: per tap kd, a deconvolution over
  // the remaining axes (planes folded into the batch), its planes spaced s apart (zeros between)
  // and shifted by kd dilate into the uncropped output, summed; then [p, p + out) is kept.
  const int64_t ID = x.shape()[2], KD = W.shape()[2], s = g.stride[0], p = g.pad[0];
  const int64_t full = (ID - 1) * s + detail::dilated(KD, g.dilate[0]), spread = (ID - 1) * s + 1;
  const Variable xt = reshape(swapaxes(x, 1, 2), with_leading(N * ID, C, x.shape(), 3));
  const Geom rest = tail(g);
  const Ints rest_out = tail(out);
  Variable acc;
  for (int64_t kd = 0; kd < KD; ++kd) {
    const Variable zk = deconv_rec(xt, get_item(W, {Slice{}, Slice{}, kd}), Variable(), rest, rest_out);
    Variable z = reshape(zk, with_leading(N, ID, zk.shape(), 1));  // (N, ID, O, ...)
    if (s > 1) {
      z = pad(expand_dims(z, 2), pad_axis(z.ndim() + 1, 2, 0, s - 1));
      Shape spaced = with_leading(N, ID * s, z.shape(), 3);
      z = get_item(reshape(z, spaced), {Slice{}, Slice{0, spread}});
    }
    const int64_t shift = kd * g.dilate[0];
    z = pad(z, pad_axis(z.ndim(), 1, shift, full - shift - spread));
    acc = acc.is_null() ? z : add(acc, z);
  }
  if (p + out[0] > full) acc = pad(acc, pad_axis(acc.ndim(), 1, 0, p + out[0] - full));
  Variable y = swapaxes(get_item(acc, {Slice{}, Slice{p, p + out[0]}}), 1, 2);
  return b.is_null() ? y : add(y, bias_view(b, k));
}

using detail::BiasNote;

Ints expand(const char* op, const char* what, const IntN& v, std::size_t k, const Variable& x, const Variable& W) {
  return detail::per_axis(op, what, v, k, x, &W);
}

// Stanza 1 shared by both directions; `required` is the rank a 1d/3d wrapper insists on (0: any).
Geom check_common(const char* op, const Variable& x, const Variable& W, const Variable& b, const IntN& stride,
                  const IntN& pad, const IntN& dilate, int64_t groups, int64_t required) {
  detail::check_floating(op, x);
  if (b.is_null()) {
    detail::check_same_dtype_device(op, {&x, &W});
  } else {
    detail::check_same_dtype_device(op, {&x, &W, &b});
  }
  const BiasNote bn{b};
  if (required > 0) {
    RENSA_CHECK(x.ndim() == required, ShapeError, op, ": x ", x.shape(), " must have ", required, " axes (N, C and ",
                required - 2, " spatial) (W ", W.shape(), bn, ")");
  }
  RENSA_CHECK(x.ndim() >= 3, ShapeError, op, ": x ", x.shape(), " must have at least 3 axes (N, C, spatial...) (W ",
              W.shape(), bn, ")");
  RENSA_CHECK(W.ndim() == x.ndim(), ShapeError, op, ": W ", W.shape(), " must have as many axes as x ", x.shape(), bn);
  const std::size_t k = static_cast<std::size_t>(x.ndim() - 2);
  Geom g{expand(op, "stride", stride, k, x, W), expand(op, "pad", pad, k, x, W), expand(op, "dilate", dilate, k, x, W),
         groups};
  for (std::size_t i = 0; i < k; ++i) {
    RENSA_CHECK(g.stride[i] >= 1, ValueError, op, ": stride ", stride, " must be at least 1 (x ", x.shape(), ", W ",
                W.shape(), ")");
    RENSA_CHECK(g.dilate[i] >= 1, ValueError, op, ": dilate ", dilate, " must be at least 1 (x ", x.shape(), ", W ",
                W.shape(), ")");
    RENSA_CHECK(g.pad[i] >= 0, ValueError, op, ": pad ", pad, " must not be negative (x ", x.shape(), ", W ", W.shape(),
                ")");
  }
  RENSA_CHECK(groups >= 1, ValueError, op, ": groups ", groups, " must be at least 1 (x ", x.shape(), ", W ", W.shape(),
              ")");
  return g;
}

Variable convolution_impl(const char* op, const Variable& x, const Variable& W, const Variable& b,
                          const ConvNdOptions& o, int64_t required) {
  const Geom g = check_common(op, x, W, b, o.stride, o.pad, o.dilate, o.groups, required);
  const BiasNote bn{b};
  const int64_t C = x.shape()[1], O = W.shape()[0];
  RENSA_CHECK(C % o.groups == 0, ShapeError, op, ": groups ", o.groups, " does not divide the ", C, " channels of x ",
              x.shape(), " (W ", W.shape(), bn, ")");
  RENSA_CHECK(O % o.groups == 0, ShapeError, op, ": groups ", o.groups, " does not divide the ", O,
              " output channels of W ", W.shape(), " (x ", x.shape(), bn, ")");
  RENSA_CHECK(C / o.groups == W.shape()[1], ShapeError, op, ": x ", x.shape(), " has ", C, " channels but W ",
              W.shape(), bn, " takes ", W.shape()[1], " per group with groups ", o.groups);
  RENSA_CHECK(b.is_null() || (b.ndim() == 1 && b.shape()[0] == O), ShapeError, op, ": b ",
              b.is_null() ? Shape() : b.shape(), " does not match the ", O, " output channels of W ", W.shape(), " (x ",
              x.shape(), ")");
  for (std::size_t i = 0; i + 2 < x.shape().size(); ++i) {
    const int64_t dk = detail::dilated(W.shape()[i + 2], g.dilate[i]);
    RENSA_CHECK(detail::window_count(x.shape()[i + 2], dk, g.stride[i], g.pad[i], o.cover_all) > 0, ShapeError, op,
                ": the kernel of W ", W.shape(), " spans ", dk, " on spatial axis ", i, " with dilate ", o.dilate,
                ", more than the padded extent ", x.shape()[i + 2] + 2 * g.pad[i], " of x ", x.shape(), " with pad ",
                o.pad);
  }
  return conv_rec(x, W, b, g, o.cover_all);
}

Variable deconvolution_impl(const char* op, const Variable& x, const Variable& W, const Variable& b,
                            const DeconvNdOptions& o, int64_t required) {
  const Geom g = check_common(op, x, W, b, o.stride, o.pad, o.dilate, o.groups, required);
  detail::deconv_out_channels(op, x, W, b, o.groups);
  const BiasNote bn{b};
  const std::size_t k = x.shape().size() - 2;
  if (o.outsize) {
    RENSA_CHECK(o.outsize->size() == k, ValueError, op, ": outsize ", IntN(*o.outsize), " must have one extent per ",
                "spatial axis of x ", x.shape(), " (", k, ")");
  }
  Ints out(k);
  for (std::size_t i = 0; i < k; ++i) {
    const int64_t in = x.shape()[i + 2], dk = detail::dilated(W.shape()[i + 2], g.dilate[i]);
    const int64_t s = g.stride[i], p = g.pad[i];
    RENSA_CHECK(in > 0, ShapeError, op, ": x ", x.shape(), " is empty on spatial axis ", i, " (W ", W.shape(), bn, ")");
    out[i] = o.outsize ? (*o.outsize)[i] : s * (in - 1) + dk - 2 * p;
    if (o.outsize) {
      // The convolution of the output must give back the input's extent, with or without cover_all.
      const int64_t lo = detail::window_count(out[i], dk, s, p, false),
                    hi = detail::window_count(out[i], dk, s, p, true);
      RENSA_CHECK(out[i] > 0 && lo > 0 && lo <= in && in <= hi, ShapeError, op, ": outsize ", IntN(*o.outsize),
                  " does not fit x ", x.shape(), " and W ", W.shape(), " with stride ", o.stride, ", pad ", o.pad,
                  " and dilate ", o.dilate, ": its convolution would not have the input's size");
    }
    RENSA_CHECK(out[i] > 0, ShapeError, op, ": the output of x ", x.shape(), " and W ", W.shape(), bn, " with stride ",
                o.stride, ", pad ", o.pad, " and dilate ", o.dilate, " would be empty on spatial axis ", i, " (",
                out[i], ")");
  }
  return deconv_rec(x, W, b, g, out);
}

}  // namespace

Variable convolution_nd(const Variable& x, const Variable& W, const Variable& b, const ConvNdOptions& o) {
  return convolution_impl("convolution_nd", x, W, b, o, 0);
}
Variable convolution_1d(const Variable& x, const Variable& W, const Variable& b, const ConvNdOptions& o) {
  return convolution_impl("convolution_1d", x, W, b, o, 3);
}
Variable convolution_3d(const Variable& x, const Variable& W, const Variable& b, const ConvNdOptions& o) {
  return convolution_impl("convolution_3d", x, W, b, o, 5);
}
Variable deconvolution_nd(const Variable& x, const Variable& W, const Variable& b, const DeconvNdOptions& o) {
  return deconvolution_impl("deconvolution_nd", x, W, b, o, 0);
}
Variable deconvolution_1d(const Variable& x, const Variable& W, const Variable& b, const DeconvNdOptions& o) {
  return deconvolution_impl("deconvolution_1d", x, W, b, o, 3);
}
Variable deconvolution_3d(const Variable& x, const Variable& W, const Variable& b, const DeconvNdOptions& o) {
  return deconvolution_impl("deconvolution_3d", x, W, b, o, 5);
}

}  // namespace rensa::functions
