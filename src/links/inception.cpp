// Inception and InceptionBN: Chainer's children, in Chainer's registration order, and forwards.
#include "rensa/links/inception.h"

#include <string>
#include <vector>

#include "rensa/core/error.h"
#include "rensa/functions/activation.h"
#include "rensa/functions/array_ops.h"
#include "rensa/functions/convolution.h"

namespace rensa::links {
namespace {

namespace F = functions;

struct ConvMaker {
  Chain& chain;
  std::shared_ptr<const initializers::Initializer> conv_init, bias_init;
  std::optional<uint64_t> seed;
  uint64_t next = 0;

  std::shared_ptr<Convolution2D> operator()(const char* name, int64_t in, int64_t out, int64_t k, int64_t pad,
                                            int64_t stride, bool nobias) {
    Convolution2DOptions o{
        .stride = stride, .pad = pad, .nobias = nobias, .initialW = conv_init, .initial_bias = bias_init};
    if (seed) o.seed = *seed + next++;
    auto conv = std::make_shared<Convolution2D>(in, out, k, std::move(o));
    chain.add_link(name, conv);
    return conv;
  }
};

// Errors of the children, prefixed with the module's name.
template <class Fn>
Variable named(const char* link, Fn&& fn) {
  try {
    return fn();
  } catch (...) {
    rethrow_with_context(std::string(link) + ": ");
  }
}

std::shared_ptr<BatchNormalization> add_bn(Chain& chain, const char* name, int64_t size) {
  auto bn = std::make_shared<BatchNormalization>(size);
  chain.add_link(name, bn);
  return bn;
}

}  // namespace

Inception::Inception(int64_t in_channels, int64_t out1, int64_t proj3, int64_t out3, int64_t proj5, int64_t out5,
                     int64_t proj_pool, const InceptionOptions& options) {
  RENSA_CHECK((in_channels >= 0 && out1 >= 1 && proj3 >= 1 && out3 >= 1 && proj5 >= 1 && out5 >= 1 && proj_pool >= 1),
              ValueError, "Inception: sizes must be at least 1 (in_channels 0: inferred), got in_channels ",
              in_channels, " out1 ", out1, " proj3 ", proj3, " out3 ", out3, " proj5 ", proj5, " out5 ", out5,
              " proj_pool ", proj_pool);
  ConvMaker conv{*this, options.conv_init, options.bias_init, options.seed};
  conv1_ = conv("conv1", in_channels, out1, 1, 0, 1, false);
  proj3_ = conv("proj3", in_channels, proj3, 1, 0, 1, false);
  conv3_ = conv("conv3", proj3, out3, 3, 1, 1, false);
  proj5_ = conv("proj5", in_channels, proj5, 1, 0, 1, false);
  conv5_ = conv("conv5", proj5, out5, 5, 2, 1, false);
  projp_ = conv("projp", in_channels, proj_pool, 1, 0, 1, false);
}

Variable Inception::forward(const Variable& x) {
  return named("Inception", [&] { return forward_impl(x); });
}

Variable Inception::forward_impl(const Variable& x) {
  const Variable out1 = (*conv1_)(x);
  const Variable out3 = (*conv3_)(F::relu((*proj3_)(x)));
  const Variable out5 = (*conv5_)(F::relu((*proj5_)(x)));
  const Variable pool = (*projp_)(F::max_pooling_2d(x, 3, 1, 1));
  return F::relu(F::concat({out1, out3, out5, pool}, 1));
}

InceptionBN::InceptionBN(int64_t in_channels, int64_t out1, int64_t proj3, int64_t out3, int64_t proj33, int64_t out33,
                         const std::string& pooltype, InceptionBNOptions options)
    : out1_(out1), stride_(options.stride), max_pool_(pooltype == "max") {
  RENSA_CHECK((pooltype == "max" || pooltype == "avg"), ValueError, "InceptionBN: pooltype must be \"max\" or ",
              "\"avg\", got \"", pooltype, "\"");
  RENSA_CHECK((in_channels >= 0 && out1 >= 0 && proj3 >= 1 && out3 >= 1 && proj33 >= 1 && out33 >= 1 &&
               options.stride >= 1 && (!options.proj_pool || *options.proj_pool >= 1)),
              ValueError, "InceptionBN: sizes must be at least 1 (in_channels 0: inferred; out1 0: no 1x1 path), ",
              "got in_channels ", in_channels, " out1 ", out1, " proj3 ", proj3, " out3 ", out3, " proj33 ", proj33,
              " out33 ", out33, " stride ", options.stride);
  RENSA_CHECK((out1 == 0 || (options.stride == 1 && options.proj_pool)), ValueError, "InceptionBN: out1 ", out1,
              " > 0 needs stride 1 and a proj_pool, got stride ", options.stride,
              options.proj_pool ? "" : " and no proj_pool");
  ConvMaker conv{*this, options.conv_init, nullptr, options.seed};
  const int64_t s = options.stride;
  proj3_ = conv("proj3", in_channels, proj3, 1, 0, 1, true);
  conv3_ = conv("conv3", proj3, out3, 3, 1, s, true);
  proj33_ = conv("proj33", in_channels, proj33, 1, 0, 1, true);
  conv33a_ = conv("conv33a", proj33, out33, 3, 1, 1, true);
  conv33b_ = conv("conv33b", out33, out33, 3, 1, s, true);
  proj3n_ = add_bn(*this, "proj3n", proj3);
  conv3n_ = add_bn(*this, "conv3n", out3);
  proj33n_ = add_bn(*this, "proj33n", proj33);
  conv33an_ = add_bn(*this, "conv33an", out33);
  conv33bn_ = add_bn(*this, "conv33bn", out33);
  if (out1 > 0) {
    conv1_ = conv("conv1", in_channels, out1, 1, 0, s, true);
    conv1n_ = add_bn(*this, "conv1n", out1);
  }
  if (options.proj_pool) {
    poolp_ = conv("poolp", in_channels, *options.proj_pool, 1, 0, 1, true);
    poolpn_ = add_bn(*this, "poolpn", *options.proj_pool);
  }
}

Variable InceptionBN::forward(const Variable& x) {
  return named("InceptionBN", [&] { return forward_impl(x); });
}

Variable InceptionBN::forward_impl(const Variable& x) {
  std::vector<Variable> outs;
  if (out1_ > 0) outs.push_back(F::relu((*conv1n_)((*conv1_)(x))));
  Variable h3 = F::relu((*proj3n_)((*proj3_)(x)));
  outs.push_back(F::relu((*conv3n_)((*conv3_)(h3))));
  Variable h33 = F::relu((*proj33n_)((*proj33_)(x)));
  h33 = F::relu((*conv33an_)((*conv33a_)(h33)));
  outs.push_back(F::relu((*conv33bn_)((*conv33b_)(h33))));
  Variable p = max_pool_ ? F::max_pooling_2d(x, 3, stride_, 1, false) : F::average_pooling_2d(x, 3, stride_, 1);
  if (poolp_) p = F::relu((*poolpn_)((*poolp_)(p)));
  outs.push_back(p);
  return F::concat(outs, 1);
}

}  // namespace rensa::links
