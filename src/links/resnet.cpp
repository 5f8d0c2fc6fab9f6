// ResNet: Chainer's blocks and children, in its registration order, and the stages.
#include "rensa/links/resnet.h"

#include "rensa/core/error.h"
#include "rensa/functions/activation.h"
#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/convolution.h"
#include "rensa/links/linear.h"

namespace rensa::links {
namespace {

namespace F = functions;
using InitPtr = std::shared_ptr<const initializers::Initializer>;

std::shared_ptr<Convolution2D> add_conv(Chain& chain, const char* name, int64_t in, int64_t out, int64_t k,
                                        int64_t stride, int64_t pad, const InitPtr& init) {
  auto c = std::make_shared<Convolution2D>(
      in, out, k, Convolution2DOptions{.stride = stride, .pad = pad, .nobias = true, .initialW = init});
  chain.add_link(name, c);
  return c;
}

std::shared_ptr<BatchNormalization> add_bn(Chain& chain, const char* name, int64_t size) {
  auto bn = std::make_shared<BatchNormalization>(size);
  chain.add_link(name, bn);
  return bn;
}

}  // namespace

BottleneckA::BottleneckA(int64_t in_channels, int64_t mid_channels, int64_t out_channels, int64_t stride,
                         const InitPtr& initialW, bool downsample_fb) {
  const int64_t stride_1x1 = downsample_fb ? 1 : stride, stride_3x3 = downsample_fb ? stride : 1;
  conv1_ = add_conv(*this, "conv1", in_channels, mid_channels, 1, stride_1x1, 0, initialW);
  bn1_ = add_bn(*this, "bn1", mid_channels);
  conv2_ = add_conv(*this, "conv2", mid_channels, mid_channels, 3, stride_3x3, 1, initialW);
  bn2_ = add_bn(*this, "bn2", mid_channels);
  conv3_ = add_conv(*this, "conv3", mid_channels, out_channels, 1, 1, 0, initialW);
  bn3_ = add_bn(*this, "bn3", out_channels);
  conv4_ = add_conv(*this, "conv4", in_channels, out_channels, 1, stride, 0, initialW);
  bn4_ = add_bn(*this, "bn4", out_channels);
}

Variable BottleneckA::forward(const Variable& x) {
  Variable h1 = F::relu((*bn1_)((*conv1_)(x)));
  h1 = F::relu((*bn2_)((*conv2_)(h1)));
  h1 = (*bn3_)((*conv3_)(h1));
  const Variable h2 = (*bn4_)((*conv4_)(x));
  return F::relu(F::add(h1, h2));
}

BottleneckB::BottleneckB(int64_t in_channels, int64_t mid_channels, const InitPtr& initialW) {
  conv1_ = add_conv(*this, "conv1", in_channels, mid_channels, 1, 1, 0, initialW);
  bn1_ = add_bn(*this, "bn1", mid_channels);
  conv2_ = add_conv(*this, "conv2", mid_channels, mid_channels, 3, 1, 1, initialW);
  bn2_ = add_bn(*this, "bn2", mid_channels);
  conv3_ = add_conv(*this, "conv3", mid_channels, in_channels, 1, 1, 0, initialW);
  bn3_ = add_bn(*this, "bn3", in_channels);
}

Variable BottleneckB::forward(const Variable& x) {
  Variable h = F::relu((*bn1_)((*conv1_)(x)));
  h = F::relu((*bn2_)((*conv2_)(h)));
  h = (*bn3_)((*conv3_)(h));
  return F::relu(F::add(h, x));
}

BuildingBlock::BuildingBlock(int64_t n_layers, int64_t in_channels, int64_t mid_channels, int64_t out_channels,
                             int64_t stride, const InitPtr& initialW, bool downsample_fb) {
  RENSA_CHECK(n_layers >= 1, ValueError, "BuildingBlock: n_layers must be at least 1, got ", n_layers);
  blocks_.push_back(
      std::make_shared<BottleneckA>(in_channels, mid_channels, out_channels, stride, initialW, downsample_fb));
  add_link("a", blocks_.back());
  for (int64_t i = 1; i < n_layers; ++i) {
    blocks_.push_back(std::make_shared<BottleneckB>(out_channels, mid_channels, initialW));
    add_link(std::string("b").append(std::to_string(i)), blocks_.back());
  }
}

Variable BuildingBlock::forward(const Variable& x) {
  Variable h = x;
  for (const auto& b : blocks_) h = (*b)(h);
  return h;
}

ResNetLayers::ResNetLayers(const std::string& pretrained_model, int n_layers, bool downsample_fb)
    : VisionLayers(std::string("ResNet").append(std::to_string(n_layers)).append("Layers")) {
  RENSA_CHECK((n_layers == 50 || n_layers == 101 || n_layers == 152), ValueError,
              "ResNetLayers: the n_layers argument should be either 50, 101, or 152, but ", n_layers, " was given");
  RENSA_CHECK(!pretrained_model.ends_with(".caffemodel"), ValueError, "ResNet", n_layers,
              "Layers: converting a Caffe model is not supported; convert ", pretrained_model,
              " with Chainer and pass the path of its .npz file");
  const InitPtr init = pretrained(pretrained_model) ? InitPtr(std::make_shared<initializers::Zero>())
                                                    : InitPtr(std::make_shared<initializers::HeNormal>(1.0));
  const std::vector<int64_t> block = n_layers == 50    ? std::vector<int64_t>{3, 4, 6, 3}
                                     : n_layers == 101 ? std::vector<int64_t>{3, 4, 23, 3}
                                                       : std::vector<int64_t>{3, 8, 36, 3};
  auto conv1 = std::make_shared<Convolution2D>(3, 64, 7, Convolution2DOptions{.stride = 2, .pad = 3, .initialW = init});
  add_link("conv1", conv1);
  auto bn1 = add_bn(*this, "bn1", 64);
  const int64_t ins[4] = {64, 256, 512, 1024}, mids[4] = {64, 128, 256, 512}, outs[4] = {256, 512, 1024, 2048};
  std::vector<std::shared_ptr<BuildingBlock>> res;
  for (std::size_t i = 0; i < 4; ++i) {
    res.push_back(
        std::make_shared<BuildingBlock>(block[i], ins[i], mids[i], outs[i], i == 0 ? 1 : 2, init, downsample_fb));
    add_link(std::string("res").append(std::to_string(i + 2)), res.back());
  }
  auto fc6 = std::make_shared<Linear>(2048, 1000);
  add_link("fc6", fc6);
  add_stage("conv1", [c = conv1.get(), b = bn1.get()](const Variable& h) { return F::relu((*b)((*c)(h))); });
  add_stage("pool1", [](const Variable& h) { return F::max_pooling_2d(h, 3, 2); });
  for (std::size_t i = 0; i < 4; ++i) {
    add_stage(std::string("res").append(std::to_string(i + 2)),
              [r = res[i].get()](const Variable& h) { return (*r)(h); });
  }
  // Chainer: average_pooling_2d over the whole map, reshaped to (N, C).
  add_stage("pool5", [](const Variable& h) { return F::global_average_pooling_2d(h); });
  add_stage("fc6", [l = fc6.get()](const Variable& h) { return (*l)(h); });
  add_stage("prob", [](const Variable& h) { return F::softmax(h); });
  load_pretrained(pretrained_model);
}

}  // namespace rensa::links
