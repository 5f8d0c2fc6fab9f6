#pragma once
/// \file
/// Convolution and pooling over NCHW arrays (batch, channels, height, width), with Chainer's
/// semantics and output sizes. Every function takes floating inputs of one dtype and device
/// (DtypeError / DeviceError otherwise), throws ShapeError naming the function and every shape
/// when the shapes do not fit, and ValueError for a stride or dilation below 1, a negative pad or
/// groups below 1. All are differentiable twice (and more): the backward of a convolution is made
/// of convolutions, that of a pooling of its transpose and back.
///
/// Inputs may be in any layout. On the cpu, float32 convolution outputs (and data gradients) are
/// channels-last (MemoryFormat::channels_last: NCHW shape, NHWC strides), the layout oneDNN runs
/// without reorders; pooling outputs keep their input's layout. Values and indexing are the same
/// in every layout (see docs/HACKING.md, "Memory formats").

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "rensa/core/variable.h"

namespace rensa::functions {

/// Two extents (height, width) of a 2-d parameter; one integer stands for both.
struct Int2 {
  /// Extent along y (height).
  int64_t y = 0, x = 0;
  /// Both extents equal to `v`.
  Int2(int64_t v) : y(v), x(v) {}  // NOLINT(google-explicit-constructor): `stride = 2` reads well
  /// Height `y_` and width `x_`.
  Int2(int64_t y_, int64_t x_) : y(y_), x(x_) {}
  /// True when both extents are equal.
  friend bool operator==(const Int2&, const Int2&) = default;
  /// \var x
  /// Extent along x (width).
};

/// Options of convolution_2d.
struct Conv2dOptions {
  /// Step of the window along (y, x).
  Int2 stride = 1;
  /// Zeros added on each side of the input.
  Int2 pad = 0;
  /// Spacing of the kernel taps (1: dense; d > 1 spreads a k-tap kernel over (k - 1) * d + 1 pixels).
  Int2 dilate = 1;
  /// Input and output channels split into `groups` independent convolutions.
  int64_t groups = 1;
  /// Also produce the windows that run past the padded input's bottom/right edge (they read
  /// zeros there): out = ceil((in + 2 pad - dk) / stride) + 1 instead of floor.
  bool cover_all = false;
};

/// Options of deconvolution_2d.
struct Deconv2dOptions {
  /// Stride of the convolution this deconvolution is the transpose of (the upsampling factor).
  Int2 stride = 1;
  /// Padding of the convolution this deconvolution is the transpose of (removed from the output).
  Int2 pad = 0;
  /// Output (height, width); default stride * (in - 1) + dk - 2 pad. It must be an output size
  /// whose convolution (with or without cover_all) has the input's size (ShapeError otherwise).
  std::optional<Int2> outsize = std::nullopt;
  /// Dilation of the kernel along (y, x) (1: dense).
  Int2 dilate = 1;
  /// Number of channel groups; in and out channels must be multiples of it.
  int64_t groups = 1;
};

/// 2-d convolution (cross-correlation, as Chainer and cuDNN): x (N, C, H, W), W (O, C / groups, KH,
/// KW), optional b (O,) (a null Variable for none) give y (N, O, OH, OW) with
/// OH = (H + 2 pad_y - ((KH - 1) dilate_y + 1)) / stride_y + 1 (rounded up with cover_all).
/// y[n, o, i, j] = b[o] + sum over the channels c of o's group and ky, kx of
/// x[n, c, i stride_y - pad_y + ky dilate_y, j stride_x - pad_x + kx dilate_x] W[o, c', ky, kx].
/// ShapeError when x or W is not 4-d, the channels do not match, groups does not divide C and O,
/// b is not (O,), or the dilated kernel is larger than the padded input.
/// The gradient in x is a deconvolution of gy, the one in W a convolution of x with gy.
Variable convolution_2d(const Variable& x, const Variable& W, const Variable& b = Variable(),
                        const Conv2dOptions& options = {});

/// 2-d transposed convolution (the gradient of convolution_2d in its input): x (N, C, H, W),
/// W (C, O / groups, KH, KW), optional b (O,) give y (N, O, OH, OW) with, by default,
/// OH = stride_y (H - 1) + (KH - 1) dilate_y + 1 - 2 pad_y. ShapeError as convolution_2d, and
/// when `outsize` is not reachable from H by the convolution with these parameters, or the output
/// would be empty.
Variable deconvolution_2d(const Variable& x, const Variable& W, const Variable& b = Variable(),
                          const Deconv2dOptions& options = {});

/// Chainer's dilated_convolution_2d: convolution_2d with `dilate` (and no groups). Errors as
/// convolution_2d, named dilated_convolution_2d.
Variable dilated_convolution_2d(const Variable& x, const Variable& W, const Variable& b = Variable(), Int2 stride = 1,
                                Int2 pad = 0, Int2 dilate = 1, bool cover_all = false);

/// Depthwise convolution: x (N, C, H, W), W (M, C, KH, KW) (Chainer's layout: channel multiplier
/// first), optional b (M C,) give y (N, C M, OH, OW), where output channel c M + m is input channel
/// c convolved with W[m, c]. It is convolution_2d with groups = C and the weight transposed to
/// (C M, 1, KH, KW). ShapeError when x or W is not 4-d, W's second axis is not C, or b is not
/// (M C,); otherwise errors as convolution_2d.
Variable depthwise_convolution_2d(const Variable& x, const Variable& W, const Variable& b = Variable(), Int2 stride = 1,
                                  Int2 pad = 0);

/// 2-d max pooling: y[n, c, i, j] = max of x[n, c] over the window of `ksize` at
/// (i stride_y - pad_y, j stride_x - pad_x); stride defaults to ksize. With `cover_all` (Chainer's
/// default) the windows run on past the bottom/right edge until every pixel is covered:
/// OH = ceil((H + 2 pad_y - KH) / stride_y) + 1 instead of floor. Padding never wins. The
/// gradient flows to the first maximum of each window only; its own gradient gathers at those
/// same positions. ValueError when pad >= ksize or a window would hold padding only;
/// ShapeError when x is not 4-d, is empty (as Chainer), or the window is larger than the padded
/// input.
Variable max_pooling_2d(const Variable& x, Int2 ksize, std::optional<Int2> stride = std::nullopt, Int2 pad = 0,
                        bool cover_all = true);

/// max_pooling_2d that also returns, as Chainer's return_indices, each maximum's position within
/// its window: an int32 array of y's shape holding ky * KW + kx (the input to upsampling_2d).
std::pair<Variable, Array> max_pooling_2d_with_indices(const Variable& x, Int2 ksize,
                                                       std::optional<Int2> stride = std::nullopt, Int2 pad = 0,
                                                       bool cover_all = true);

/// 2-d average pooling: each window's sum divided by KH * KW, padding counting as zeros (Chainer's
/// average_pooling_2d, i.e. its pad_value = 0: averages near the border are biased toward zero).
/// stride defaults to ksize. `cover_all` (off by default, as Chainer, which has no such mode
/// here) extends the windows past the bottom/right edge as max_pooling_2d does; the extra cells
/// count as padding. Errors as max_pooling_2d, except that an empty x is accepted.
Variable average_pooling_2d(const Variable& x, Int2 ksize, std::optional<Int2> stride = std::nullopt, Int2 pad = 0,
                            bool cover_all = false);

/// Mean over the spatial axes of x (N, C, H, W): y (N, C), or (N, C, 1, 1) with `keepdims`.
/// ShapeError when x is not 4-d.
Variable global_average_pooling_2d(const Variable& x, bool keepdims = false);

/// Spatial pyramid pooling (Chainer's spatial_pyramid_pooling_2d): for each level l below
/// `pyramid_height`, max pooling of x (N, C, H, W) into 2^l x 2^l bins (ksize ceil(H / 2^l), pad
/// half the remainder, cover_all), each flattened, concatenated to (N, C (4^h - 1) / 3, 1, 1).
/// ValueError when pyramid_height < 1 or `pooling` is not "max" (the only one Chainer has);
/// ShapeError when x is not 4-d or is empty; ValueError when a level's bins would hold padding only
/// (more bins than pixels).
Variable spatial_pyramid_pooling_2d(const Variable& x, int64_t pyramid_height, std::string_view pooling = "max");

}  // namespace rensa::functions
