// DeformableConvolution2D: an offset Convolution2D feeding a DeformableConvolution2DSampler.
#include "rensa/links/deformable_convolution_2d.h"

#include <utility>

#include "rensa/core/error.h"
#include "rensa/functions/deformable_convolution.h"

namespace rensa::links {

DeformableConvolution2DSampler::DeformableConvolution2DSampler(int64_t in_channels, int64_t out_channels,
                                                               functions::Int2 ksize,
                                                               DeformableConvolution2DSamplerOptions options)
    : WeightBiasLink("DeformableConvolution2DSampler", detail::weight_init(options),
                     std::make_shared<initializers::Zero>()),
      out_channels_(out_channels),
      ksize_(ksize),
      options_(std::move(options)) {
  RENSA_CHECK(in_channels >= 0 && out_channels >= 0, ValueError, name_, ": channels must be non-negative, got in ",
              in_channels, " out ", out_channels);
  RENSA_CHECK(ksize.y >= 1 && ksize.x >= 1, ValueError, name_, ": ksize must be at least 1, got (", ksize.y, ", ",
              ksize.x, ")");
  if (in_channels > 0) initialize_params(in_channels);
}

void DeformableConvolution2DSampler::initialize_params(int64_t in_channels) {
  initialize_W({out_channels_, in_channels, ksize_.y, ksize_.x});
  initialize_b({out_channels_});
}

Variable DeformableConvolution2DSampler::forward(const Variable& x, const Variable& offset) {
  if (W_pending()) {
    check_lazy_input(x, 4, "in_channels");
    initialize_params(x.shape()[1]);
  }
  check_input(x, 4, W_.shape()[1]);
  return functions::deformable_convolution_2d_sampler(x, offset, W_, b_, options_.stride, options_.pad);
}

Variable DeformableConvolution2DSampler::forward(const std::vector<Variable>& inputs) {
  RENSA_CHECK(inputs.size() == 2, ValueError, name_, ": forward takes x and offset, got ", inputs.size(), " inputs");
  return forward(inputs[0], inputs[1]);
}

DeformableConvolution2D::DeformableConvolution2D(int64_t in_channels, int64_t out_channels, functions::Int2 ksize,
                                                 DeformableConvolution2DOptions options) {
  const auto child_seed = [&](uint64_t k) {
    return options.seed ? std::optional<uint64_t>(*options.seed + k) : std::nullopt;
  };
  offset_conv_ = std::make_shared<Convolution2D>(in_channels, 2 * ksize.y * ksize.x, ksize,
                                                 Convolution2DOptions{.stride = options.stride,
                                                                      .pad = options.pad,
                                                                      .nobias = options.offset_nobias,
                                                                      .initialW = options.offset_initialW,
                                                                      .initial_bias = options.offset_initial_bias,
                                                                      .seed = child_seed(0)});
  deform_conv_ = std::make_shared<DeformableConvolution2DSampler>(
      in_channels, out_channels, ksize,
      DeformableConvolution2DSamplerOptions{.stride = options.stride,
                                            .pad = options.pad,
                                            .nobias = options.deform_nobias,
                                            .initialW = options.deform_initialW,
                                            .initial_bias = options.deform_initial_bias,
                                            .seed = child_seed(1)});
  add_link("offset_conv", offset_conv_);
  add_link("deform_conv", deform_conv_);
}

Variable DeformableConvolution2D::forward(const Variable& x) {
  return deform_conv_->forward(x, offset_conv_->forward(x));
}

}  // namespace rensa::links
