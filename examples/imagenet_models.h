#pragma once
// The networks of ChainerMN's imagenet example (train_imagenet --arch), each a link whose
// forward({x, t}) returns the loss and reports main/loss and main/accuracy, with `insize`, the
// crop size it was designed for:
//   alex      AlexNet (Krizhevsky et al. 2012, Chainer's alex.py), 227;
//   nin       Network in Network (Lin et al. 2014, nin.py), 227;
//   googlenet GoogLeNet (links::GoogLeNet; loss = loss3 + 0.3 (loss1 + loss2), googlenet.py), 224;
//   resnet50  ResNet-50 (links::ResNet50Layers, resnet50.py), 224; any input of 32 x 32 or more runs;
//   googlenetbn GoogLeNet with batch normalization (InceptionBN modules; googlenetbn.py), 224;
//   resnext50 ResNeXt-50 32x4d-style (grouped 3x3 convolutions, 32 groups; resnext50.py), 224.
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
    Variable loss = F::softmax_cross_entropy(h, t.array());
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
    Variable loss = 0.3 * (l1 + l2) + l3;
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

// GoogLeNet with batch normalization: bias-free convolutions, each normalized, and two auxiliary
// classifiers whose losses count 0.3 each, as Chainer's googlenetbn.py.
struct GoogLeNetBN : ImagenetModel {
  L::Convolution2D conv1{3, 64, 7, {.stride = 2, .pad = 3, .nobias = true}}, conv2{64, 192, 3, {.pad = 1, .nobias = true}};
  L::BatchNormalization norm1{64}, norm2{192};
  // (in, out1, proj3, out3, proj33, out33, pooltype, proj_pool, stride); the output has
  // out1 + out3 + out33 + (proj_pool, else in) channels.
  L::InceptionBN inc3a{192, 64, 64, 64, 64, 96, "avg", {.proj_pool = 32}},
      inc3b{256, 64, 64, 96, 64, 96, "avg", {.proj_pool = 64}},
      inc3c{320, 0, 128, 160, 64, 96, "max", {.stride = 2}},
      inc4a{576, 224, 64, 96, 96, 128, "avg", {.proj_pool = 128}},
      inc4b{576, 192, 96, 128, 96, 128, "avg", {.proj_pool = 128}},
      inc4c{576, 160, 128, 160, 128, 160, "avg", {.proj_pool = 128}},
      inc4d{608, 96, 128, 192, 160, 192, "avg", {.proj_pool = 128}},
      inc4e{608, 0, 128, 192, 192, 256, "max", {.stride = 2}},
      inc5a{1056, 352, 192, 320, 160, 224, "avg", {.proj_pool = 128}},
      inc5b{1024, 352, 192, 320, 192, 224, "max", {.proj_pool = 128}};
  L::Linear out{1024, 1000};
  L::Convolution2D conva{576, 128, 1, {.nobias = true}}, convb{608, 128, 1, {.nobias = true}};
  L::BatchNormalization norma{128}, norma2{1024}, normb{128}, normb2{1024};
  L::Linear lina{128 * 4 * 4, 1024, {.nobias = true}}, outa{1024, 1000}, linb{128 * 4 * 4, 1024, {.nobias = true}},
      outb{1024, 1000};
  GoogLeNetBN() {
    for (auto& [name, link] : std::vector<std::pair<std::string, rensa::Link*>>{
             {"conv1", &conv1}, {"norm1", &norm1}, {"conv2", &conv2}, {"norm2", &norm2}, {"inc3a", &inc3a},
             {"inc3b", &inc3b}, {"inc3c", &inc3c}, {"inc4a", &inc4a}, {"inc4b", &inc4b}, {"inc4c", &inc4c},
             {"inc4d", &inc4d}, {"inc4e", &inc4e}, {"inc5a", &inc5a}, {"inc5b", &inc5b}, {"out", &out},
             {"conva", &conva}, {"norma", &norma}, {"lina", &lina}, {"norma2", &norma2}, {"outa", &outa},
             {"convb", &convb}, {"normb", &normb}, {"linb", &linb}, {"normb2", &normb2}, {"outb", &outb}}) {
      add_link(name, *link);
    }
  }
  // The auxiliary classifier on `h`.
  static Variable aux(const Variable& h, L::Convolution2D& conv, L::BatchNormalization& norm, L::Linear& lin,
                      L::BatchNormalization& norm2, L::Linear& fc) {
    Variable a = F::average_pooling_2d(h, 5, 3);
    a = F::relu(norm(conv(a)));
    a = F::relu(norm2(lin(a)));
    return fc(a);
  }
  // The three classifiers' scores: auxiliary a and b, and the main one.
  std::vector<Variable> all_scores(const Variable& x) {
    Variable h = F::max_pooling_2d(F::relu(norm1(conv1(x))), 3, 2, 1);
    h = F::max_pooling_2d(F::relu(norm2(conv2(h))), 3, 2, 1);
    h = inc4a(inc3c(inc3b(inc3a(h))));
    const Variable a = aux(h, conva, norma, lina, norma2, outa);
    h = inc4d(inc4c(inc4b(h)));
    const Variable b = aux(h, convb, normb, linb, normb2, outb);
    h = F::average_pooling_2d(inc5b(inc5a(inc4e(h))), 7);
    return {a, b, out(h)};
  }
  Variable scores(const Variable& x) override { return all_scores(x).at(2); }
  Variable loss(const Variable& x, const Variable& t) override {
    const auto s = all_scores(x);
    const Variable loss1 = F::softmax_cross_entropy(s[0], t.array()), loss2 = F::softmax_cross_entropy(s[1], t.array()),
                   loss3 = F::softmax_cross_entropy(s[2], t.array());
    Variable loss = 0.3 * (loss1 + loss2) + loss3;
    rensa::report({{"loss", loss.array().item<double>()},
                   {"loss1", loss1.array().item<double>()},
                   {"loss2", loss2.array().item<double>()},
                   {"loss3", loss3.array().item<double>()},
                   {"accuracy", F::accuracy(s[2], t.array()).array().item<double>()}},
                  this);
    return loss;
  }
};

// ResNeXt-50's bottleneck: 1x1, grouped 3x3 (stride), 1x1, each normalized; the shortcut is a
// strided 1x1 projection in the first block of a stage (Chainer's BottleNeckA) and the identity
// in the others (BottleNeckB).
struct ResNeXtBottleneck : rensa::Chain {
  L::Convolution2D conv1, conv2, conv3;
  L::BatchNormalization bn1, bn2, bn3;
  std::shared_ptr<L::Convolution2D> conv4;
  std::shared_ptr<L::BatchNormalization> bn4;
  static std::shared_ptr<const rensa::initializers::Initializer> he() {
    return std::make_shared<rensa::initializers::HeNormal>();
  }
  ResNeXtBottleneck(int64_t in, int64_t ch, int64_t out_size, int64_t stride, bool project)
      : conv1(in, ch, 1, {.nobias = true, .initialW = he()}),
        conv2(ch, ch, 3, {.stride = stride, .pad = 1, .groups = 32, .nobias = true, .initialW = he()}),
        conv3(ch, out_size, 1, {.nobias = true, .initialW = he()}),
        bn1(ch),
        bn2(ch),
        bn3(out_size) {
    add_link("conv1", conv1);
    add_link("bn1", bn1);
    add_link("conv2", conv2);
    add_link("bn2", bn2);
    add_link("conv3", conv3);
    add_link("bn3", bn3);
    if (project) {
      conv4 = std::make_shared<L::Convolution2D>(in, out_size, 1,
                                                 L::Convolution2DOptions{.stride = stride, .nobias = true, .initialW = he()});
      bn4 = std::make_shared<L::BatchNormalization>(out_size);
      add_link("conv4", conv4);
      add_link("bn4", bn4);
    }
  }
  Variable forward(const Variable& x) override {
    Variable h = F::relu(bn1(conv1(x)));
    h = F::relu(bn2(conv2(h)));
    h = bn3(conv3(h));
    return F::relu(h + (conv4 ? (*bn4)((*conv4)(x)) : x));
  }
  using Link::forward;
};

struct ResNeXt50 : ImagenetModel {
  L::Convolution2D conv1{3, 64, 7, {.stride = 2, .pad = 3, .initialW = ResNeXtBottleneck::he()}};
  L::BatchNormalization bn1{64};
  std::vector<std::shared_ptr<ResNeXtBottleneck>> blocks;
  L::Linear fc{2048, 1000};
  ResNeXt50() {
    add_link("conv1", conv1);
    add_link("bn1", bn1);
    // (layers, in, ch, out, stride) of res2 .. res5; links res<k>/<i> as Chainer's Block lists.
    const int64_t stages[4][5] = {{3, 64, 128, 256, 1}, {4, 256, 256, 512, 2}, {6, 512, 512, 1024, 2},
                                  {3, 1024, 1024, 2048, 2}};
    for (int s = 0; s < 4; ++s) {
      auto stage = std::make_shared<rensa::ChainList>();
      for (int64_t i = 0; i < stages[s][0]; ++i) {
        blocks.push_back(std::make_shared<ResNeXtBottleneck>(i == 0 ? stages[s][1] : stages[s][3], stages[s][2],
                                                             stages[s][3], i == 0 ? stages[s][4] : 1, i == 0));
        stage->append(blocks.back());
      }
      add_link("res" + std::to_string(s + 2), stage);
    }
    add_link("fc", fc);
  }
  Variable scores(const Variable& x) override {
    Variable h = F::max_pooling_2d(F::relu(bn1(conv1(x))), 3, 2);
    for (const auto& b : blocks) h = (*b)(h);
    return fc(F::average_pooling_2d(h, 7, 1));
  }
};

/// The network named `arch` (alex, nin, googlenet, googlenetbn, resnet50, resnext50); nullptr for
/// another name.
inline std::shared_ptr<ImagenetModel> make_imagenet_model(const std::string& arch) {
  if (arch == "alex") return std::make_shared<Alex>();
  if (arch == "nin") return std::make_shared<NIN>();
  if (arch == "googlenet") return std::make_shared<GoogLeNetModel>();
  if (arch == "googlenetbn") return std::make_shared<GoogLeNetBN>();
  if (arch == "resnet50") return std::make_shared<ResNet50Model>();
  if (arch == "resnext50") return std::make_shared<ResNeXt50>();
  return nullptr;
}

}  // namespace rensa_examples
