#pragma once
/// \file
/// DepthwiseConvolution2D: each input channel convolved with its own channel_multiplier kernels
/// (Chainer's L.DepthwiseConvolution2D), with lazy in_channels.

#include <cstdint>
#include <memory>
#include <optional>

#include "rensa/functions/convolution.h"
#include "rensa/links/convolution_base.h"
#include "rensa/links/initializers.h"

namespace rensa::links {

/// Options of DepthwiseConvolution2D, in Chainer's argument order.
struct DepthwiseConvolution2DOptions {
  /// Stride of the window along (y, x).
  functions::Int2 stride = 1;
  /// Zero padding along (y, x), on both sides.
  functions::Int2 pad = 0;
  /// No bias parameter.
  bool nobias = false;
  /// Initializer of W; null means HeNormal(1 / sqrt(2)) (Chainer's default here).
  std::shared_ptr<const initializers::Initializer> initialW = nullptr;
  /// Initializer of b; null means zeros.
  std::shared_ptr<const initializers::Initializer> initial_bias = nullptr;
  /// Seed of the link's own generator (as LinearOptions::seed); unset: the thread's default one.
  std::optional<uint64_t> seed = std::nullopt;
};

/// W (channel_multiplier, in_channels, kh, kw) and b (channel_multiplier * in_channels,), both
/// drawn once in_channels is known (W first, as Chainer). forward(x) is
/// functions::depthwise_convolution_2d on x (N, in_channels, H, W) (ShapeError naming the link, x
/// and W otherwise), giving (N, in_channels * channel_multiplier, OH, OW).
class DepthwiseConvolution2D : public detail::WeightBiasLink {
 public:
  /// in_channels 0: W and b wait for the first forward. ValueError for negative in_channels, a
  /// channel_multiplier or kernel size below 1.
  DepthwiseConvolution2D(int64_t in_channels, int64_t channel_multiplier, functions::Int2 ksize,
                         DepthwiseConvolution2DOptions options = {});

  Variable forward(const Variable& x) override;
  using Link::forward;

  /// Output channels per input channel.
  int64_t channel_multiplier() const { return channel_multiplier_; }

 private:
  void initialize_params(int64_t in_channels);

  int64_t channel_multiplier_;
  functions::Int2 ksize_;
  DepthwiseConvolution2DOptions options_;
};

}  // namespace rensa::links
