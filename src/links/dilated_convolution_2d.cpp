// DilatedConvolution2D: detail::ConvolutionLinkBase with two spatial axes and one group.
#include "rensa/links/dilated_convolution_2d.h"

#include <utility>

namespace rensa::links {

DilatedConvolution2D::DilatedConvolution2D(int64_t in_channels, int64_t out_channels, functions::Int2 ksize,
                                           DilatedConvolution2DOptions options)
    : ConvolutionLinkBase("DilatedConvolution2D", false, in_channels, out_channels, {ksize.y, ksize.x}, 1,
                          detail::weight_init(options)),
      options_(std::move(options)) {}

Variable DilatedConvolution2D::forward(const Variable& x) {
  prepare(x);
  return functions::dilated_convolution_2d(x, W_, b_, options_.stride, options_.pad, options_.dilate);
}

}  // namespace rensa::links
