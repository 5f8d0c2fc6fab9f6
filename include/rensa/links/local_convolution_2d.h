#pragma once
/// \file
/// LocalConvolution2D: a convolution layer with different weights at every output position
/// (Chainer's L.LocalConvolution2D), with lazy in_channels and in_size.

#include <cstdint>
#include <memory>
#include <optional>

#include "rensa/functions/convolution.h"
#include "rensa/links/convolution_base.h"
#include "rensa/links/initializers.h"

namespace rensa::links {

/// Options of LocalConvolution2D, in Chainer's argument order.
struct LocalConvolution2DOptions {
  /// Stride of the window along (y, x).
  functions::Int2 stride = 1;
  /// No bias parameter.
  bool nobias = false;
  /// Initializer of W; null means LeCunNormal().
  std::shared_ptr<const initializers::Initializer> initialW = nullptr;
  /// Initializer of b; null means zeros.
  std::shared_ptr<const initializers::Initializer> initial_bias = nullptr;
  /// Seed of the link's own generator (as LinearOptions::seed); unset: the thread's default one.
  std::optional<uint64_t> seed = std::nullopt;
};

/// W (out_channels, OH, OW, in_channels, kh, kw) and b (out_channels, OH, OW), with OH = (H - kh) /
/// stride_y + 1 for in_size (H, W) (no padding), both drawn once in_channels and in_size are
/// known (W first, as Chainer). forward(x) is functions::local_convolution_2d on x (N,
/// in_channels, H, W) (ShapeError naming the link, x and W for other channels; the function's
/// own when the windows do not fit x). Difference: Chainer sizes W as OH = H - kh + 1 whatever
/// the stride, so its link fails for a stride above 1; here the output extent follows the stride
/// (the same as Chainer's at stride 1).
class LocalConvolution2D : public detail::WeightBiasLink {
 public:
  /// in_channels 0 or no in_size: W and b wait for the first forward, which takes them from x.
  /// ValueError for negative channels, a kernel size or stride below 1, or a kernel larger than
  /// in_size.
  LocalConvolution2D(int64_t in_channels, int64_t out_channels, std::optional<functions::Int2> in_size,
                     functions::Int2 ksize, LocalConvolution2DOptions options = {});

  Variable forward(const Variable& x) override;
  using Link::forward;

  /// Number of output channels.
  int64_t out_channels() const { return out_channels_; }

 private:
  void initialize_params(int64_t in_channels, functions::Int2 in_size);

  int64_t out_channels_;
  functions::Int2 ksize_;
  LocalConvolution2DOptions options_;
};

}  // namespace rensa::links
