// DepthwiseConvolution2D: W (M, C, kh, kw) and b (M C,) drawn once C is known.
#include "rensa/links/depthwise_convolution_2d.h"

#include <cmath>
#include <utility>

#include "rensa/core/error.h"

namespace rensa::links {

DepthwiseConvolution2D::DepthwiseConvolution2D(int64_t in_channels, int64_t channel_multiplier, functions::Int2 ksize,
                                               DepthwiseConvolution2DOptions options)
    : WeightBiasLink("DepthwiseConvolution2D", detail::weight_init(options),
                     std::make_shared<initializers::HeNormal>(1.0 / std::sqrt(2.0))),
      channel_multiplier_(channel_multiplier),
      ksize_(ksize),
      options_(std::move(options)) {
  RENSA_CHECK(in_channels >= 0, ValueError, name_, ": in_channels must be non-negative, got ", in_channels);
  RENSA_CHECK(channel_multiplier >= 1, ValueError, name_, ": channel_multiplier must be at least 1, got ",
              channel_multiplier);
  RENSA_CHECK(ksize.y >= 1 && ksize.x >= 1, ValueError, name_, ": ksize must be at least 1, got (", ksize.y, ", ",
              ksize.x, ")");
  if (in_channels > 0) initialize_params(in_channels);
}

void DepthwiseConvolution2D::initialize_params(int64_t in_channels) {
  initialize_W({channel_multiplier_, in_channels, ksize_.y, ksize_.x});
  initialize_b({channel_multiplier_ * in_channels});
}

Variable DepthwiseConvolution2D::forward(const Variable& x) {
  if (W_pending()) {
    check_lazy_input(x, 4, "in_channels");
    initialize_params(x.shape()[1]);
  }
  check_input(x, 4, W_.shape()[1]);
  return functions::depthwise_convolution_2d(x, W_, b_, options_.stride, options_.pad);
}

}  // namespace rensa::links
