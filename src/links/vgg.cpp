// VGGLayers: Chainer's children (in its registration order) and stages.
#include "rensa/links/vgg.h"

#include <memory>
#include <vector>

#include "rensa/core/error.h"
#include "rensa/functions/activation.h"
#include "rensa/functions/convolution.h"
#include "rensa/functions/noise.h"
#include "rensa/links/convolution_2d.h"
#include "rensa/links/linear.h"

namespace rensa::links {

namespace F = functions;

VGGLayers::VGGLayers(const std::string& pretrained_model, int n_layers)
    : VisionLayers(n_layers == 19 ? "VGG19Layers" : "VGG16Layers") {
  RENSA_CHECK((n_layers == 16 || n_layers == 19), ValueError,
              "VGGLayers: the n_layers argument should be either 16 or 19, but ", n_layers, " was given");
  const bool zero = pretrained(pretrained_model);
  const std::shared_ptr<const initializers::Initializer> w_init =
      zero ? std::shared_ptr<const initializers::Initializer>(std::make_shared<initializers::Zero>())
           : std::make_shared<initializers::Normal>(0.01);
  const auto b_init = std::make_shared<initializers::Zero>();
  const auto conv = [&](const char* name, int64_t in, int64_t out) {
    auto c = std::make_shared<Convolution2D>(
        in, out, 3, Convolution2DOptions{.stride = 1, .pad = 1, .initialW = w_init, .initial_bias = b_init});
    add_link(name, c);
    return c;
  };
  const auto linear = [&](const char* name, int64_t in, int64_t out) {
    auto l = std::make_shared<Linear>(in, out, LinearOptions{.initialW = w_init, .initial_bias = b_init});
    add_link(name, l);
    return l;
  };
  // Chainer's order: the 16-layer children, then the three extra convolutions of VGG19.
  struct Block {
    std::vector<std::shared_ptr<Convolution2D>> convs;
  };
  std::vector<Block> blocks(5);
  const int64_t channels[6] = {3, 64, 128, 256, 512, 512};
  const int per_block16[5] = {2, 2, 3, 3, 3};
  for (int b = 0; b < 5; ++b) {
    for (int i = 0; i < per_block16[b]; ++i) {
      const std::string name =
          std::string("conv").append(std::to_string(b + 1)).append("_").append(std::to_string(i + 1));
      blocks[static_cast<std::size_t>(b)].convs.push_back(
          conv(name.c_str(), i == 0 ? channels[b] : channels[b + 1], channels[b + 1]));
    }
  }
  auto fc6 = linear("fc6", 512 * 7 * 7, 4096);
  auto fc7 = linear("fc7", 4096, 4096);
  auto fc8 = linear("fc8", 4096, 1000);
  if (n_layers == 19) {
    blocks[2].convs.push_back(conv("conv3_4", 256, 256));
    blocks[3].convs.push_back(conv("conv4_4", 512, 512));
    blocks[4].convs.push_back(conv("conv5_4", 512, 512));
  }
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    for (std::size_t i = 0; i < blocks[b].convs.size(); ++i) {
      const std::string name =
          std::string("conv").append(std::to_string(b + 1)).append("_").append(std::to_string(i + 1));
      add_stage(name, [c = blocks[b].convs[i].get()](const Variable& h) { return F::relu((*c)(h)); });
    }
    add_stage(std::string("pool").append(std::to_string(b + 1)),
              [](const Variable& h) { return F::max_pooling_2d(h, 2); });
  }
  add_stage("fc6", [l = fc6.get()](const Variable& h) { return F::dropout(F::relu((*l)(h))); });
  add_stage("fc7", [l = fc7.get()](const Variable& h) { return F::dropout(F::relu((*l)(h))); });
  add_stage("fc8", [l = fc8.get()](const Variable& h) { return (*l)(h); });
  add_stage("prob", [](const Variable& h) { return F::softmax(h); });
  load_pretrained(pretrained_model);
}

}  // namespace rensa::links
