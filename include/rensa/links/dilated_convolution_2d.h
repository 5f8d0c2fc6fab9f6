#pragma once
/// \file
/// DilatedConvolution2D: a convolution layer whose kernel taps are spaced (Chainer's
/// L.DilatedConvolution2D), with lazy in_channels.

#include <cstdint>
#include <memory>
#include <optional>

#include "rensa/functions/convolution.h"
#include "rensa/links/convolution_base.h"
#include "rensa/links/initializers.h"

namespace rensa::links {

/// Options of DilatedConvolution2D, in Chainer's argument order.
struct DilatedConvolution2DOptions {
  /// Stride of the window along (y, x).
  functions::Int2 stride = 1;
  /// Zero padding along (y, x), on both sides.
  functions::Int2 pad = 0;
  /// Dilation along (y, x): the distance between kernel taps.
  functions::Int2 dilate = 1;
  /// No bias parameter.
  bool nobias = false;
  /// Initializer of W; null means LeCunNormal().
  std::shared_ptr<const initializers::Initializer> initialW = nullptr;
  /// Initializer of b; null means zeros.
  std::shared_ptr<const initializers::Initializer> initial_bias = nullptr;
  /// Seed of the link's own generator (as LinearOptions::seed); unset: the thread's default one.
  std::optional<uint64_t> seed = std::nullopt;
};

/// W (out_channels, in_channels, kh, kw) and b (out_channels,); forward(x) is
/// functions::dilated_convolution_2d on x (N, in_channels, H, W) (ShapeError naming the link, x
/// and W otherwise). As Convolution2D with `dilate`, without groups.
class DilatedConvolution2D : public detail::ConvolutionLinkBase {
 public:
  /// in_channels 0: inferred from x.shape()[1] at the first forward. ValueError for negative
  /// channels or a kernel size below 1.
  DilatedConvolution2D(int64_t in_channels, int64_t out_channels, functions::Int2 ksize,
                       DilatedConvolution2DOptions options = {});

  Variable forward(const Variable& x) override;
  using Link::forward;

 private:
  DilatedConvolution2DOptions options_;
};

}  // namespace rensa::links
