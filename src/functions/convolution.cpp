// Convolution and deconvolution. Three recorded operations, each the others' backward (as in
// Chainer): the convolution y = conv(x, W) + b, its transpose in x (a deconvolution, also the
// public deconvolution_2d), and its gradient in W. All three are bilinear, so each backward is
// made of the other two and gradients of any order work.
#include "rensa/functions/convolution.h"

#include "rensa/functions/reduction.h"
#include "src/functions/common.h"
#include "src/functions/conv_geometry.h"

namespace rensa::functions {
namespace {

using Grads = std::vector<Variable>;

Variable conv_forward(const Variable& x, const Variable& W, const Variable& b, const Conv2dParams& p,
                      const Shape& y_shape);
Variable conv_backward_data(const Variable& gy, const Variable& W, const Variable& b, const Conv2dParams& p,
                            const Shape& x_shape);
Variable conv_backward_weights(const Variable& x, const Variable& gy, const Conv2dParams& p, const Shape& w_shape);

// The layout the device's convolutions of `dtype` prefer for their outputs (and data gradients).
MemoryFormat conv_format(Device device, Dtype dtype) {
  const KernelTable& k = get_backend(device).kernels();
  return k.conv2d_memory_format == nullptr ? MemoryFormat::contiguous : k.conv2d_memory_format(dtype);
}

// The gradient of a per-channel bias of an NCHW output.
Variable bias_grad(const Variable& gy) {
  return sum(gy, {0, 2, 3});
}

// y = conv(x, W) + b with the output extent y_shape.
Variable conv_forward(const Variable& x, const Variable& W, const Variable& b, const Conv2dParams& p,
                      const Shape& y_shape) {
  rensa::detail::ForwardEntry entry("convolution_2d", x, W, b);
  Array y = Array::empty(y_shape, x.dtype(), x.device(), conv_format(x.device(), x.dtype()));
  if (y.size() > 0) {
    RENSA_KERNEL(x.device(), conv2d_forward, "convolution_2d")
    (x.array(), W.array(), b.is_null() ? Array() : b.array(), y, p);
  }
  return record1("convolution_2d", {x, W, b}, std::move(y), [x, W, p](const BackwardContext& ctx) {
    const Variable& gy = ctx.grad_output();
    Variable gx, gW, gb;
    if (ctx.needs_grad(0)) gx = conv_backward_data(gy, W, Variable(), p, x.shape());
    if (ctx.needs_grad(1)) gW = conv_backward_weights(x, gy, p, W.shape());
    if (ctx.needs_grad(2)) gb = bias_grad(gy);
    return Grads{gx, gW, gb};
  });
}

// x = conv^T(gy, W) + b with the output extent x_shape: the deconvolution.
Variable conv_backward_data(const Variable& gy, const Variable& W, const Variable& b, const Conv2dParams& p,
                            const Shape& x_shape) {
  rensa::detail::ForwardEntry entry("deconvolution_2d", gy, W, b);
  Array gx = Array::empty(x_shape, gy.dtype(), gy.device(), conv_format(gy.device(), gy.dtype()));
  if (gx.size() > 0) {
    RENSA_KERNEL(gy.device(), conv2d_backward_data, "deconvolution_2d")(gy.array(), W.array(), gx, p);
    if (!b.is_null()) {
      const Array bb = b.array().reshape({1, x_shape[1], 1, 1}).broadcast_to(x_shape);
      RENSA_KERNEL(gy.device(), binary, "deconvolution_2d")(BinaryOp::add, gx, bb, gx);
    }
  }
  return record1("deconvolution_2d", {gy, W, b}, std::move(gx), [gy, W, p](const BackwardContext& ctx) {
    const Variable& g = ctx.grad_output();
    Variable ggy, gW, gb;
    if (ctx.needs_grad(0)) ggy = conv_forward(g, W, Variable(), p, gy.shape());
    if (ctx.needs_grad(1)) gW = conv_backward_weights(g, gy, p, W.shape());
    if (ctx.needs_grad(2)) gb = bias_grad(g);
    return Grads{ggy, gW, gb};
  });
}

// gW = d<conv(x, W), gy>/dW with the extent w_shape.
Variable conv_backward_weights(const Variable& x, const Variable& gy, const Conv2dParams& p, const Shape& w_shape) {
  rensa::detail::ForwardEntry entry("convolution_2d_grad_w", x, gy);
  Array gw = Array::empty(w_shape, x.dtype(), x.device());
  if (gw.size() > 0) {
    RENSA_KERNEL(x.device(), conv2d_backward_weights, "convolution_2d")(x.array(), gy.array(), gw, p);
  }
  return record1("convolution_2d_grad_w", {x, gy}, std::move(gw), [x, gy, p](const BackwardContext& ctx) {
    const Variable& g = ctx.grad_output();
    Variable gx, ggy;
    if (ctx.needs_grad(0)) gx = conv_backward_data(gy, g, Variable(), p, x.shape());
    if (ctx.needs_grad(1)) ggy = conv_forward(x, g, Variable(), p, gy.shape());
    return Grads{gx, ggy};
  });
}

using detail::BiasNote;

// Stanza 1 shared by both directions: dtypes, ranks, parameter ranges.
void check_common(const char* op, const Variable& x, const Variable& W, const Variable& b, Int2 stride, Int2 pad,
                  Int2 dilate, int64_t groups) {
  detail::check_floating(op, x);
  if (b.is_null()) {
    detail::check_same_dtype_device(op, {&x, &W});
  } else {
    detail::check_same_dtype_device(op, {&x, &W, &b});
  }
  const BiasNote bn{b};
  RENSA_CHECK(x.ndim() == 4, ShapeError, op, ": x ", x.shape(), " must have 4 axes (N, C, H, W) (W ", W.shape(), bn,
              ")");
  RENSA_CHECK(W.ndim() == 4, ShapeError, op, ": W ", W.shape(), " must have 4 axes (x ", x.shape(), bn, ")");
  RENSA_CHECK(stride.y >= 1 && stride.x >= 1, ValueError, op, ": stride ", stride, " must be at least 1 (x ", x.shape(),
              ", W ", W.shape(), ")");
  RENSA_CHECK(dilate.y >= 1 && dilate.x >= 1, ValueError, op, ": dilate ", dilate, " must be at least 1 (x ", x.shape(),
              ", W ", W.shape(), ")");
  RENSA_CHECK(pad.y >= 0 && pad.x >= 0, ValueError, op, ": pad ", pad, " must not be negative (x ", x.shape(), ", W ",
              W.shape(), ")");
  RENSA_CHECK(groups >= 1, ValueError, op, ": groups ", groups, " must be at least 1 (x ", x.shape(), ", W ", W.shape(),
              ")");
}

Conv2dParams params_of(Int2 stride, Int2 pad, Int2 dilate, int64_t groups) {
  return Conv2dParams{stride.y, stride.x, pad.y, pad.x, dilate.y, dilate.x, groups};
}

}  // namespace

Variable convolution_2d(const Variable& x, const Variable& W, const Variable& b, const Conv2dOptions& o) {
  const char* op = "convolution_2d";
  check_common(op, x, W, b, o.stride, o.pad, o.dilate, o.groups);
  const BiasNote bn{b};
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], Wd = x.shape()[3];
  const int64_t O = W.shape()[0], KH = W.shape()[2], KW = W.shape()[3];
  RENSA_CHECK(C % o.groups == 0, ShapeError, op, ": groups ", o.groups, " does not divide the ", C, " channels of x ",
              x.shape(), " (W ", W.shape(), bn, ")");
  RENSA_CHECK(O % o.groups == 0, ShapeError, op, ": groups ", o.groups, " does not divide the ", O,
              " output channels of W ", W.shape(), " (x ", x.shape(), bn, ")");
  RENSA_CHECK(C / o.groups == W.shape()[1], ShapeError, op, ": x ", x.shape(), " has ", C, " channels but W ",
              W.shape(), bn, " takes ", W.shape()[1], " per group with groups ", o.groups, " (",
              W.shape()[1] * o.groups, " channels)");
  RENSA_CHECK(b.is_null() || (b.ndim() == 1 && b.shape()[0] == O), ShapeError, op, ": b ",
              b.is_null() ? Shape() : b.shape(), " does not match the ", O, " output channels of W ", W.shape(), " (x ",
              x.shape(), ")");
  const int64_t dkh = detail::dilated(KH, o.dilate.y), dkw = detail::dilated(KW, o.dilate.x);
  const int64_t OH = detail::window_count(H, dkh, o.stride.y, o.pad.y, o.cover_all);
  const int64_t OW = detail::window_count(Wd, dkw, o.stride.x, o.pad.x, o.cover_all);
  RENSA_CHECK(OH > 0 && OW > 0, ShapeError, op, ": the kernel of W ", W.shape(), " spans (", dkh, ", ", dkw,
              ") with dilate ", o.dilate, ", larger than the padded input (", H + 2 * o.pad.y, ", ", Wd + 2 * o.pad.x,
              ") of x ", x.shape(), " with pad ", o.pad);
  return conv_forward(x, W, b, params_of(o.stride, o.pad, o.dilate, o.groups), Shape{N, O, OH, OW});
}

Variable deconvolution_2d(const Variable& x, const Variable& W, const Variable& b, const Deconv2dOptions& o) {
  const char* op = "deconvolution_2d";
  check_common(op, x, W, b, o.stride, o.pad, o.dilate, o.groups);
  const BiasNote bn{b};
  const int64_t N = x.shape()[0], H = x.shape()[2], Wd = x.shape()[3];
  const int64_t KH = W.shape()[2], KW = W.shape()[3];
  const int64_t O = detail::deconv_out_channels(op, x, W, b, o.groups);
  const int64_t dkh = detail::dilated(KH, o.dilate.y), dkw = detail::dilated(KW, o.dilate.x);
  int64_t OH = o.stride.y * (H - 1) + dkh - 2 * o.pad.y, OW = o.stride.x * (Wd - 1) + dkw - 2 * o.pad.x;
  if (o.outsize) {
    OH = o.outsize->y;
    OW = o.outsize->x;
    // The convolution of an OH x OW input must give back H x W, with or without cover_all.
    auto reachable = [](int64_t in, int64_t out, int64_t dk, int64_t s, int64_t p) {
      const int64_t lo = detail::window_count(out, dk, s, p, false), hi = detail::window_count(out, dk, s, p, true);
      return out > 0 && lo > 0 && lo <= in && in <= hi;
    };
    RENSA_CHECK(reachable(H, OH, dkh, o.stride.y, o.pad.y) && reachable(Wd, OW, dkw, o.stride.x, o.pad.x), ShapeError,
                op, ": outsize ", *o.outsize, " does not fit x ", x.shape(), " and W ", W.shape(), " with stride ",
                o.stride, ", pad ", o.pad, " and dilate ", o.dilate,
                ": its convolution would not have the input's size");
  }
  RENSA_CHECK(OH > 0 && OW > 0, ShapeError, op, ": the output of x ", x.shape(), " and W ", W.shape(), bn,
              " with stride ", o.stride, ", pad ", o.pad, " and dilate ", o.dilate, " would be (", OH, ", ", OW,
              "): empty");
  return conv_backward_data(x, W, b, params_of(o.stride, o.pad, o.dilate, o.groups), Shape{N, O, OH, OW});
}

}  // namespace rensa::functions
