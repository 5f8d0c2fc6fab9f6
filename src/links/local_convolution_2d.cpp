// LocalConvolution2D: W (O, OH, OW, C, kh, kw) and b (O, OH, OW) drawn once C and the input's
// extent are known.
#include "rensa/links/local_convolution_2d.h"

#include <utility>

#include "rensa/core/error.h"
#include "rensa/functions/local_convolution.h"

namespace rensa::links {

LocalConvolution2D::LocalConvolution2D(int64_t in_channels, int64_t out_channels,
                                       std::optional<functions::Int2> in_size, functions::Int2 ksize,
                                       LocalConvolution2DOptions options)
    : WeightBiasLink("LocalConvolution2D", detail::weight_init(options), std::make_shared<initializers::LeCunNormal>()),
      out_channels_(out_channels),
      ksize_(ksize),
      options_(std::move(options)) {
  RENSA_CHECK(in_channels >= 0 && out_channels >= 0, ValueError, name_, ": channels must be non-negative, got in ",
              in_channels, " out ", out_channels);
  RENSA_CHECK(ksize.y >= 1 && ksize.x >= 1, ValueError, name_, ": ksize must be at least 1, got (", ksize.y, ", ",
              ksize.x, ")");
  RENSA_CHECK(options_.stride.y >= 1 && options_.stride.x >= 1, ValueError, name_, ": stride must be at least 1, got (",
              options_.stride.y, ", ", options_.stride.x, ")");
  if (in_channels > 0 && in_size) initialize_params(in_channels, *in_size);
}

void LocalConvolution2D::initialize_params(int64_t in_channels, functions::Int2 in_size) {
  RENSA_CHECK(in_size.y >= ksize_.y && in_size.x >= ksize_.x, ValueError, name_, ": ksize (", ksize_.y, ", ", ksize_.x,
              ") is larger than in_size (", in_size.y, ", ", in_size.x, ")");
  const int64_t oh = (in_size.y - ksize_.y) / options_.stride.y + 1;
  const int64_t ow = (in_size.x - ksize_.x) / options_.stride.x + 1;
  initialize_W({out_channels_, oh, ow, in_channels, ksize_.y, ksize_.x});
  initialize_b({out_channels_, oh, ow});
}

Variable LocalConvolution2D::forward(const Variable& x) {
  if (W_pending()) {
    check_lazy_input(x, 4, "in_channels and in_size");
    initialize_params(x.shape()[1], {x.shape()[2], x.shape()[3]});
  }
  check_input(x, 4, W_.shape()[3]);
  return functions::local_convolution_2d(x, W_, b_, options_.stride);
}

}  // namespace rensa::links
