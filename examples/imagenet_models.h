#pragma once
// The networks of ChainerMN's imagenet example (train_imagenet --arch), each a link whose
// forward({x, t}) returns the loss and reports main/loss and main/accuracy, with `insize`, the
// crop size it was designed for:
//   alex      AlexNet (Krizhevsky et al. 2012, Chainer's alex.py), 227;
//   nin       Network in Network (Lin et al. 2014, nin.py), 227;
//   googlenet GoogLeNet (links::GoogLeNet; loss = loss3 + 0.3 (loss1 + loss2), googlenet.py), 224;
//   resnet50  ResNet-50 (links::ResNet50Layers, resnet50.py), 224; any input of 32 x 32 or more runs.
#include <cstdint>
#include <memory>
#include <string>

#include "rensa/rensa.h"

namespace rensa_examples {
namespace F = rensa::functions;
namespace L = rensa::links;
using rensa::Variable;

/// A classifier network of the imagenet example.
struct ImagenetModel : rensa::Chain {
  int64_t insize = 224;
  /// The class scores (N, 1000) of images x.
  virtual Variable scores(const Variable& x) = 0;
  /// The loss to minimize (the scores' softmax cross entropy unless the model says otherwise).
  virtual Variable loss(const Variable& x, const Variable& t) {
    const Variable h = scores(x);
    const Variable loss = F::softmax_cross_entropy(h, t.array());
    rensa::report({{"loss", loss.array().item<double>()}, {"accuracy", F::accuracy(h, t.array()).array().item<double>()}},
                  this);
    return loss;
  }
  Variable forward(const std::vector<Variable>& in) override { return loss(in.at(0), in.at(1)); }
  using Link::forward;
};

struct Alex : ImagenetModel {
  L::Convolution2D conv1{0, 96, 11, {.stride = 4}}, conv2{0, 256, 5, {.pad = 2}}, conv3{0, 384, 3, {.pad = 1}},
      conv4{0, 384, 3, {.pad = 1}}, conv5{0, 256, 3, {.pad = 1}};
  L::Linear fc6{4096}, fc7{4096}, fc8{1000};
  Alex() {
    insize = 227;
    add_link("conv1", conv1);
    add_link("conv2", conv2);
    add_link("conv3", conv3);
    add_link("conv4", conv4);
    add_link("conv5", conv5);
    add_link("fc6", fc6);
    add_link("fc7", fc7);
    add_link("fc8", fc8);
  }
  Variable scores(const Variable& x) override {
    Variable h = F::max_pooling_2d(F::local_response_normalization(F::relu(conv1(x))), 3, 2);
    h = F::max_pooling_2d(F::local_response_normalization(F::relu(conv2(h))), 3, 2);
    h = F::relu(conv3(h));
    h = F::relu(conv4(h));
    h = F::max_pooling_2d(F::relu(conv5(h)), 3, 2);
    h = F::dropout(F::relu(fc6(h)));
    h = F::dropout(F::relu(fc7(h)));
    return fc8(h);
  }
};

struct NIN : ImagenetModel {
  L::MLPConvolution2D mlpconv1{0, {96, 96, 96}, 11, {.stride = 4}}, mlpconv2{0, {256, 256, 256}, 5, {.pad = 2}},
      mlpconv3{0, {384, 384, 384}, 3, {.pad = 1}}, mlpconv4{0, {1024, 1024, 1000}, 3, {.pad = 1}};
  NIN() {
    insize = 227;
    add_link("mlpconv1", mlpconv1);
    add_link("mlpconv2", mlpconv2);
    add_link("mlpconv3", mlpconv3);
    add_link("mlpconv4", mlpconv4);
  }
  Variable scores(const Variable& x) override {
    Variable h = F::max_pooling_2d(F::relu(mlpconv1(x)), 3, 2);
    h = F::max_pooling_2d(F::relu(mlpconv2(h)), 3, 2);
    h = F::max_pooling_2d(F::relu(mlpconv3(h)), 3, 2);
    h = mlpconv4(F::dropout(h));
    const int64_t n = h.shape()[0];
    return F::reshape(F::average_pooling_2d(h, 6), {n, 1000});
  }
};

struct GoogLeNetModel : ImagenetModel {
  std::shared_ptr<L::GoogLeNet> net = std::make_shared<L::GoogLeNet>();
  GoogLeNetModel() { add_link("net", *net); }
  Variable scores(const Variable& x) override { return net->forward(x, {"loss3_fc"}).at("loss3_fc"); }
  Variable loss(const Variable& x, const Variable& t) override {
    auto out = net->forward(x, {"loss1_fc2", "loss2_fc2", "loss3_fc"});
    const Variable l1 = F::softmax_cross_entropy(out.at("loss1_fc2"), t.array());
    const Variable l2 = F::softmax_cross_entropy(out.at("loss2_fc2"), t.array());
    const Variable l3 = F::softmax_cross_entropy(out.at("loss3_fc"), t.array());
    const Variable loss = 0.3 * (l1 + l2) + l3;
    rensa::report({{"loss", loss.array().item<double>()},
                   {"accuracy", F::accuracy(out.at("loss3_fc"), t.array()).array().item<double>()}},
                  this);
    return loss;
  }
};

struct ResNet50Model : ImagenetModel {
  std::shared_ptr<L::ResNet50Layers> net = std::make_shared<L::ResNet50Layers>();
  ResNet50Model() { add_link("net", *net); }
  Variable scores(const Variable& x) override { return net->forward(x, {"fc6"}).at("fc6"); }
};

/// The network named `arch` (alex, nin, googlenet, resnet50); nullptr for another name.
inline std::shared_ptr<ImagenetModel> make_imagenet_model(const std::string& arch) {
  if (arch == "alex") return std::make_shared<Alex>();
  if (arch == "nin") return std::make_shared<NIN>();
  if (arch == "googlenet") return std::make_shared<GoogLeNetModel>();
  if (arch == "resnet50") return std::make_shared<ResNet50Model>();
  return nullptr;
}

}  // namespace rensa_examples
