#pragma once
// The examples' networks, shared with the benchmarks that time them (bench/scaling_model):
//   MLP(units):  Linear(units)-relu-Linear(units)-relu-Linear(10), input sizes inferred (train_mnist);
//   CNN(units):  conv(1->32, 3x3)-relu-conv(32->64, 3x3)-relu-maxpool2-fc(9216->units)-relu-fc(units->10)
//                (train_cnn --arch cnn);
//   ResNet:      ResNet-20 for 28x28 single-channel inputs: 3 stages of 3 basic blocks, 16/32/64 channels,
//                batch normalization (train_cnn --arch resnet).
#include <cstdint>
#include <memory>

#include "rensa/rensa.h"

namespace rensa_examples {

namespace F = rensa::functions;
namespace L = rensa::links;
namespace I = rensa::initializers;
using rensa::Variable;

struct MLP : rensa::Chain {
  L::Linear l1, l2, l3;  // input sizes are inferred at the first call
  explicit MLP(int64_t units) : l1(units), l2(units), l3(10) {
    add_link("l1", l1);
    add_link("l2", l2);
    add_link("l3", l3);
  }
  Variable forward(const Variable& x) override { return l3(F::relu(l2(F::relu(l1(x))))); }
  using Link::forward;
};

struct CNN : rensa::Chain {
  L::Convolution2D conv1{1, 32, 3}, conv2{32, 64, 3};
  L::Linear fc1, fc2{10};  // fc1's input size (64 * 12 * 12 = 9216) is inferred at the first call
  explicit CNN(int64_t units) : fc1(units) {
    add_link("conv1", conv1);
    add_link("conv2", conv2);
    add_link("fc1", fc1);
    add_link("fc2", fc2);
  }
  Variable forward(const Variable& x) override {
    Variable h = F::relu(conv2(F::relu(conv1(x))));
    h = F::max_pooling_2d(h, 2);
    return fc2(F::relu(fc1(h)));
  }
  using Link::forward;
};

// conv3x3 (no bias) followed by batch normalization.
inline L::Convolution2DOptions conv_options(int64_t stride, int64_t pad) {
  return {.stride = stride, .pad = pad, .nobias = true, .initialW = std::make_shared<I::HeNormal>()};
}

// Two 3x3 convolutions with batch normalization and an identity shortcut, or a 1x1 convolution with
// batch normalization when the block changes the shape (ResNet's option B).
struct BasicBlock : rensa::Chain {
  L::Convolution2D conv1, conv2;
  L::BatchNormalization bn1, bn2;
  std::unique_ptr<L::Convolution2D> proj;
  std::unique_ptr<L::BatchNormalization> proj_bn;
  BasicBlock(int64_t in, int64_t out, int64_t stride)
      : conv1(in, out, 3, conv_options(stride, 1)), conv2(out, out, 3, conv_options(1, 1)), bn1(out), bn2(out) {
    add_link("conv1", conv1);
    add_link("bn1", bn1);
    add_link("conv2", conv2);
    add_link("bn2", bn2);
    if (stride != 1 || in != out) {
      proj = std::make_unique<L::Convolution2D>(in, out, 1, conv_options(stride, 0));
      proj_bn = std::make_unique<L::BatchNormalization>(out);
      add_link("proj", *proj);
      add_link("proj_bn", *proj_bn);
    }
  }
  Variable forward(const Variable& x) override {
    Variable h = bn2(conv2(F::relu(bn1(conv1(x)))));
    return F::relu(h + (proj ? (*proj_bn)((*proj)(x)) : x));
  }
  using Link::forward;
};

struct ResNet : rensa::Chain {
  L::Convolution2D conv{1, 16, 3, conv_options(1, 1)};
  L::BatchNormalization bn{16};
  rensa::Sequential stages;
  L::Linear fc{64, 10};
  ResNet() {
    add_link("conv", conv);
    add_link("bn", bn);
    int64_t in = 16;
    for (int64_t out : {16, 32, 64}) {
      for (int b = 0; b < 3; ++b) {
        stages.add(std::make_shared<BasicBlock>(in, out, b == 0 && out != 16 ? 2 : 1));
        in = out;
      }
    }
    add_link("stages", stages);
    add_link("fc", fc);
  }
  Variable forward(const Variable& x) override {
    Variable h = stages(F::relu(bn(conv(x))));  // 28x28 -> 28 -> 14 -> 7
    return fc(F::global_average_pooling_2d(h));
  }
  using Link::forward;
};

}  // namespace rensa_examples
