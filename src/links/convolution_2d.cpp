// Convolution2D / Deconvolution2D: the 2-d case of detail::ConvolutionLinkBase.
#include "rensa/links/convolution_2d.h"

#include <utility>

#include "rensa/links/mixed_precision.h"

namespace rensa::links {

Convolution2D::Convolution2D(int64_t in_channels, int64_t out_channels, functions::Int2 ksize,
                             Convolution2DOptions options)
    : ConvolutionLinkBase("Convolution2D", false, in_channels, out_channels, {ksize.y, ksize.x}, options.groups,
                          detail::weight_init(options)),
      options_(std::move(options)) {}

Variable Convolution2D::forward(const Variable& x) {
  prepare(x);
  functions::Conv2dOptions o;
  o.stride = options_.stride;
  o.pad = options_.pad;
  o.dilate = options_.dilate;
  o.groups = options_.groups;
  return functions::convolution_2d(mixed_cast(x), mixed_cast(param_in_forward(W_)), mixed_cast(b_), o);
}

Deconvolution2D::Deconvolution2D(int64_t in_channels, int64_t out_channels, functions::Int2 ksize,
                                 Convolution2DOptions options)
    : ConvolutionLinkBase("Deconvolution2D", true, in_channels, out_channels, {ksize.y, ksize.x}, options.groups,
                          detail::weight_init(options)),
      options_(std::move(options)) {}

Variable Deconvolution2D::forward(const Variable& x) {
  prepare(x);
  functions::Deconv2dOptions o;
  o.stride = options_.stride;
  o.pad = options_.pad;
  o.dilate = options_.dilate;
  o.groups = options_.groups;
  o.outsize = options_.outsize;
  return functions::deconvolution_2d(mixed_cast(x), mixed_cast(param_in_forward(W_)), mixed_cast(b_), o);
}

}  // namespace rensa::links
