#pragma once
/// \file
/// N-dimensional convolution and deconvolution over (N, C, D1, ..., Dk) arrays, k >= 1 spatial axes,
/// with Chainer's semantics, weight layouts and output sizes (convolution_nd, deconvolution_nd and
/// the wrappers convolution_1d/3d, deconvolution_1d/3d that insist on k). They are made of
/// convolution_2d / deconvolution_2d: one spatial axis becomes a 2-d one with a unit height; three
/// or more are reduced a axis at a time, the kernel's taps along the first spatial axis each a
/// convolution of one fewer axis over a strided slice of x (with that axis folded into the batch),
/// summed. So they run on the backend's 2-d kernels and are differentiable to any order.
///
/// Errors: DtypeError / DeviceError when x, W and b differ in dtype or device or are not floating;
/// ShapeError naming the function and every shape when x has fewer than 3 axes (or, for the 1d/3d
/// wrappers, not 3 / 5), W's rank differs from x's, the channels or b do not match, groups does not
/// divide them, or a dilated kernel is larger than the padded input (a deconvolution: the output
/// would be empty, or `outsize` is not reachable); ValueError when a parameter has neither one value
/// nor one per spatial axis, a stride or dilate is below 1, a pad is negative or groups is below 1.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <ostream>
#include <utility>
#include <vector>

#include "rensa/core/variable.h"

namespace rensa::functions {

/// A parameter of each spatial axis: one value for all of them, or one per axis.
struct IntN {
  /// One value (for every axis) or one per spatial axis.
  std::vector<int64_t> values;
  /// The same value for every spatial axis.
  IntN(int64_t v) : values{v} {}  // NOLINT(google-explicit-constructor): `stride = 2` reads well
  /// One value per spatial axis (or a single one for all).
  IntN(std::initializer_list<int64_t> v) : values(v) {}
  /// One value per spatial axis (or a single one for all).
  IntN(std::vector<int64_t> v) : values(std::move(v)) {}  // NOLINT(google-explicit-constructor)
  /// True when the value lists are equal (so `2` differs from `{2, 2}`).
  friend bool operator==(const IntN&, const IntN&) = default;
};
/// Prints as (a, b, ...) in error messages.
std::ostream& operator<<(std::ostream& os, const IntN& v);

/// Options of convolution_nd (Chainer's argument names and defaults).
struct ConvNdOptions {
  /// Step of the window along each spatial axis.
  IntN stride = 1;
  /// Zeros added on both sides of each spatial axis.
  IntN pad = 0;
  /// Also produce the windows that run past the padded input's end (they read zeros there).
  bool cover_all = false;
  /// Distance between kernel taps along each spatial axis (1: dense).
  IntN dilate = 1;
  /// Number of channel groups; in and out channels must be multiples of it.
  int64_t groups = 1;
};

/// Options of deconvolution_nd.
struct DeconvNdOptions {
  /// Stride of the convolution this deconvolution is the transpose of (the upsampling factor).
  IntN stride = 1;
  /// Padding of the convolution this deconvolution is the transpose of.
  IntN pad = 0;
  /// Output extents (one per spatial axis); default stride (in - 1) + (k - 1) dilate + 1 - 2 pad.
  std::optional<std::vector<int64_t>> outsize = std::nullopt;
  /// Dilation of the kernel along each spatial axis (1: dense).
  IntN dilate = 1;
  /// Number of channel groups; in and out channels must be multiples of it.
  int64_t groups = 1;
};

/// Convolution over k spatial axes: x (N, C, D1..Dk), W (O, C / groups, K1..Kk), optional b (O,)
/// give y (N, O, O1..Ok), Oi = (Di + 2 pad_i - ((Ki - 1) dilate_i + 1)) / stride_i + 1 (rounded up
/// with cover_all). k = 2 is convolution_2d.
Variable convolution_nd(const Variable& x, const Variable& W, const Variable& b = Variable(),
                        const ConvNdOptions& options = {});
/// convolution_nd for x (N, C, L); ShapeError otherwise.
Variable convolution_1d(const Variable& x, const Variable& W, const Variable& b = Variable(),
                        const ConvNdOptions& options = {});
/// convolution_nd for x (N, C, D, H, W); ShapeError otherwise.
Variable convolution_3d(const Variable& x, const Variable& W, const Variable& b = Variable(),
                        const ConvNdOptions& options = {});

/// Transposed convolution over k spatial axes (the gradient of convolution_nd in x): x (N, C,
/// D1..Dk), W (C, O / groups, K1..Kk) (Chainer's layout), optional b (O,) give y (N, O, L1..Lk).
Variable deconvolution_nd(const Variable& x, const Variable& W, const Variable& b = Variable(),
                          const DeconvNdOptions& options = {});
/// deconvolution_nd for x (N, C, L); ShapeError otherwise.
Variable deconvolution_1d(const Variable& x, const Variable& W, const Variable& b = Variable(),
                          const DeconvNdOptions& options = {});
/// deconvolution_nd for x (N, C, D, H, W); ShapeError otherwise.
Variable deconvolution_3d(const Variable& x, const Variable& W, const Variable& b = Variable(),
                          const DeconvNdOptions& options = {});

}  // namespace rensa::functions
