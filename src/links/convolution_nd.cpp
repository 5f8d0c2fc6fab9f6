// ConvolutionND / DeconvolutionND and their 1-d and 3-d forms: detail::ConvolutionLinkBase with
// k spatial axes.
#include "rensa/links/convolution_nd.h"

#include <utility>

#include "rensa/core/error.h"
#include "rensa/links/mixed_precision.h"

namespace rensa::links {
namespace {

// Chainer's conv_nd.as_tuple: one value for every axis, or exactly ndim of them.
std::vector<int64_t> as_tuple(const char* op, const functions::IntN& ksize, int64_t ndim) {
  RENSA_CHECK(ndim >= 1, ValueError, op, ": ndim must be at least 1, got ", ndim);
  if (ksize.values.size() == 1) return std::vector<int64_t>(static_cast<std::size_t>(ndim), ksize.values[0]);
  RENSA_CHECK(static_cast<int64_t>(ksize.values.size()) == ndim, ValueError, op, ": ksize ", ksize,
              " must have one value or ", ndim, " (one per spatial axis)");
  return ksize.values;
}

}  // namespace

ConvolutionND::ConvolutionND(int64_t ndim, int64_t in_channels, int64_t out_channels, const functions::IntN& ksize,
                             ConvolutionNDOptions options)
    : ConvolutionND("ConvolutionND", ndim, in_channels, out_channels, ksize, std::move(options)) {}

ConvolutionND::ConvolutionND(const char* name, int64_t ndim, int64_t in_channels, int64_t out_channels,
                             const functions::IntN& ksize, ConvolutionNDOptions options)
    : ConvolutionLinkBase(name, false, in_channels, out_channels, as_tuple(name, ksize, ndim), options.groups,
                          detail::weight_init(options)),
      options_(std::move(options)) {}

Variable ConvolutionND::forward(const Variable& x) {
  prepare(x);
  return functions::convolution_nd(
      mixed_cast(x), mixed_cast(param_in_forward(W_)), mixed_cast(b_), {options_.stride, options_.pad, options_.cover_all, options_.dilate, options_.groups});
}

Convolution1D::Convolution1D(int64_t in_channels, int64_t out_channels, const functions::IntN& ksize,
                             ConvolutionNDOptions options)
    : ConvolutionND("Convolution1D", 1, in_channels, out_channels, ksize, std::move(options)) {}

Convolution3D::Convolution3D(int64_t in_channels, int64_t out_channels, const functions::IntN& ksize,
                             ConvolutionNDOptions options)
    : ConvolutionND("Convolution3D", 3, in_channels, out_channels, ksize, std::move(options)) {}

DeconvolutionND::DeconvolutionND(int64_t ndim, int64_t in_channels, int64_t out_channels, const functions::IntN& ksize,
                                 DeconvolutionNDOptions options)
    : DeconvolutionND("DeconvolutionND", ndim, in_channels, out_channels, ksize, std::move(options)) {}

DeconvolutionND::DeconvolutionND(const char* name, int64_t ndim, int64_t in_channels, int64_t out_channels,
                                 const functions::IntN& ksize, DeconvolutionNDOptions options)
    : ConvolutionLinkBase(name, true, in_channels, out_channels, as_tuple(name, ksize, ndim), options.groups,
                          detail::weight_init(options)),
      options_(std::move(options)) {}

Variable DeconvolutionND::forward(const Variable& x) {
  prepare(x);
  return functions::deconvolution_nd(
      mixed_cast(x), mixed_cast(param_in_forward(W_)), mixed_cast(b_), {options_.stride, options_.pad, options_.outsize, options_.dilate, options_.groups});
}

Deconvolution1D::Deconvolution1D(int64_t in_channels, int64_t out_channels, const functions::IntN& ksize,
                                 DeconvolutionNDOptions options)
    : DeconvolutionND("Deconvolution1D", 1, in_channels, out_channels, ksize, std::move(options)) {}

Deconvolution3D::Deconvolution3D(int64_t in_channels, int64_t out_channels, const functions::IntN& ksize,
                                 DeconvolutionNDOptions options)
    : DeconvolutionND("Deconvolution3D", 3, in_channels, out_channels, ksize, std::move(options)) {}

}  // namespace rensa::links
