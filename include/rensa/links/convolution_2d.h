#pragma once
/// \file
/// Convolution2D and Deconvolution2D: 2-d (transposed) convolution layers over NCHW inputs
/// (Chainer's L.Convolution2D and L.Deconvolution2D), with lazy in_channels.

#include <cstdint>
#include <memory>
#include <optional>

#include "rensa/functions/convolution.h"
#include "rensa/links/convolution_base.h"
#include "rensa/links/initializers.h"

namespace rensa::links {

/// Options of Convolution2D and Deconvolution2D.
struct Convolution2DOptions {
  /// Stride of the window along (y, x).
  functions::Int2 stride = 1;
  /// Zero padding along (y, x), on both sides (for Deconvolution2D: removed from the output).
  functions::Int2 pad = 0;
  /// Dilation along (y, x): the distance between kernel taps.
  functions::Int2 dilate = 1;
  /// Number of channel groups; in and out channels must be multiples of it.
  int64_t groups = 1;
  /// No bias parameter.
  bool nobias = false;
  /// Initializer of W; null means LeCunNormal().
  std::shared_ptr<const initializers::Initializer> initialW = nullptr;
  /// Initializer of b; null means zeros.
  std::shared_ptr<const initializers::Initializer> initial_bias = nullptr;
  /// Seed of the link's own generator (as LinearOptions::seed); unset: the thread's default one.
  std::optional<uint64_t> seed = std::nullopt;
  /// Deconvolution2D only: the output (height, width) (see functions::Deconv2dOptions::outsize).
  std::optional<functions::Int2> outsize = std::nullopt;
};

/// Convolution layer: W (out_channels, in_channels / groups, kh, kw) and b (out_channels,), created
/// with the Config dtype in force at construction. forward(x) is functions::convolution_2d; x must
/// be (N, in_channels, H, W) (ShapeError naming the link, x and W otherwise).
class Convolution2D : public detail::ConvolutionLinkBase {
 public:
  /// in_channels 0: inferred from x.shape()[1] at the first forward (W uninitialized until then).
  /// ValueError for negative channels, a kernel size below 1, or groups that do not divide the
  /// channels.
  Convolution2D(int64_t in_channels, int64_t out_channels, functions::Int2 ksize, Convolution2DOptions options = {});

  Variable forward(const Variable& x) override;
  using Link::forward;

 private:
  Convolution2DOptions options_;
};

/// Transposed convolution layer: W (in_channels, out_channels / groups, kh, kw) and b
/// (out_channels,). forward(x) is functions::deconvolution_2d.
class Deconvolution2D : public detail::ConvolutionLinkBase {
 public:
  /// in_channels 0: inferred from x.shape()[1] at the first forward. Errors as Convolution2D.
  Deconvolution2D(int64_t in_channels, int64_t out_channels, functions::Int2 ksize, Convolution2DOptions options = {});

  Variable forward(const Variable& x) override;
  using Link::forward;

 private:
  Convolution2DOptions options_;
};

}  // namespace rensa::links
