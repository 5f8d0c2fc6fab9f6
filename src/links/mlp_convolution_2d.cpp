// MLPConvolution2D: Convolution2D children with an activation between them.
#include "rensa/links/mlp_convolution_2d.h"

#include <utility>

#include "rensa/core/error.h"
#include "rensa/functions/activation.h"
#include "rensa/links/convolution_2d.h"

namespace rensa::links {

MLPConvolution2D::MLPConvolution2D(int64_t in_channels, const std::vector<int64_t>& out_channels, functions::Int2 ksize,
                                   MLPConvolution2DOptions options)
    : activation_(std::move(options.activation)) {
  RENSA_CHECK(!out_channels.empty(), ValueError, "MLPConvolution2D: out_channels must not be empty");
  if (!activation_) activation_ = [](const Variable& x) { return functions::relu(x); };
  for (std::size_t i = 0; i < out_channels.size(); ++i) {
    Convolution2DOptions o{.initialW = options.conv_init, .initial_bias = options.bias_init};
    if (options.seed) o.seed = *options.seed + i;
    if (i == 0) {
      o.stride = options.stride;
      o.pad = options.pad;
      append(std::make_shared<Convolution2D>(in_channels, out_channels[0], ksize, std::move(o)));
    } else {
      append(std::make_shared<Convolution2D>(out_channels[i - 1], out_channels[i], 1, std::move(o)));
    }
  }
}

Variable MLPConvolution2D::forward(const Variable& x) {
  Variable h = x;
  for (std::size_t i = 0; i < size(); ++i) {
    h = (*this)[i](h);
    if (i + 1 < size()) h = activation_(h);
  }
  return h;
}

}  // namespace rensa::links
