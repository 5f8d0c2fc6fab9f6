// The model-zoo links (VGG16Layers, VGG19Layers, ResNet50/101/152Layers, GoogLeNet) and ResNet's
// blocks: Chainer's parameter and persistent names and shapes (tests/fixtures/README.md), layer
// names, output shapes on small inputs, Chainer's values for ResNet50Layers and GoogLeNet, forward
// against the children, pretrained weights through an .npz file, gradients through the blocks,
// and errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "rensa/functions/activation.h"
#include "rensa/functions/convolution.h"
#include "rensa/links/googlenet.h"
#include "rensa/links/resnet.h"
#include "rensa/links/vgg.h"
#include "rensa/serializers/npz.h"
#include "tests/unit/links/connection_test_util.h"

using namespace rensa;
namespace F = rensa::functions;
namespace L = rensa::links;
using rensa::test::expect_error;
using rensa::test::randn;

namespace {

using Keys = std::map<std::string, Shape>;

// The entries Chainer 7.8.1's save_npz writes for `model`, from the fixture.
Keys chainer_keys(const std::string& model) {
  std::ifstream in(std::string(RENSA_TEST_FIXTURES_DIR) + "/chainer_vision_keys.txt");
  EXPECT_TRUE(in.good());
  Keys keys;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string name, key;
    fields >> name >> key;
    if (name != model) continue;
    Shape shape;
    for (int64_t d; fields >> d;) shape.push_back(d);
    keys[key] = shape;
  }
  return keys;
}

// The entries rensa's save_npz writes for `link`.
Keys rensa_keys(Link& link) {
  Keys keys;
  for (const auto& [path, p] : link.namedparams()) keys[path.substr(1)] = p.shape();
  for (const auto& [path, a] : link.namedpersistents()) keys[path.substr(1)] = a->shape();
  return keys;
}

void expect_chainer_keys(const std::string& model, Link& link) {
  const Keys want = chainer_keys(model), got = rensa_keys(link);
  ASSERT_FALSE(want.empty()) << model;
  EXPECT_EQ(got.size(), want.size()) << model;
  for (const auto& [key, shape] : want) {
    auto it = got.find(key);
    ASSERT_NE(it, got.end()) << model << ": missing " << key;
    EXPECT_EQ(it->second, shape) << model << ": " << key;
  }
}

// Sets parameter i of the sorted paths to c sin(0.37 k + 0.1 i), c = 1 / sqrt(fan_in) for
// weights and 0.5 for vectors, so that activations stay moderate through a deep network.
void set_scaled_params(Link& link) {
  auto params = link.namedparams();
  std::sort(params.begin(), params.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Variable& p = params[i].second;
    const Shape& shape = p.shape();
    double fan_in = 1;
    for (std::size_t d = 1; d < shape.size(); ++d) fan_in *= static_cast<double>(shape[d]);
    const double c = shape.size() >= 2 ? 1.0 / std::sqrt(fan_in) : 0.5;
    p.array().assign(rensa::test::sin_array(shape, 0.1 * static_cast<double>(i), c).astype(p.dtype()));
  }
}

// What Chainer 7.8.1 computes for one layer (tests/fixtures/README.md, the model-zoo values): the
// sum and the sum of squares of the activation, and its elements at flat indices 0, size / 3 and
// size - 1.
struct ChainerValues {
  std::string layer;
  Shape shape;
  double sum, sumsq;
  std::vector<double> at;
};

// Sets the parameters as the reference script does and compares the activations on x =
// sin(0.37 k + 1), (1, 3, size, size), in test mode.
void expect_chainer_values(L::VisionLayers& model, int64_t size, const std::vector<ChainerValues>& want) {
  set_scaled_params(model);
  auto test_mode = using_config("train", false);
  auto no_grad = no_backprop_mode();
  std::vector<std::string> layers;
  for (const auto& w : want) layers.push_back(w.layer);
  const auto out = model(Variable(rensa::test::sin_array({1, 3, size, size}, 1.0).astype(Dtype::float32)), layers);
  for (const auto& w : want) {
    const Variable& y = out.at(w.layer);
    ASSERT_EQ(y.shape(), w.shape) << w.layer;
    const auto v = y.array().to_vector<double>();
    double sum = 0, sumsq = 0;
    for (double e : v) {
      sum += e;
      sumsq += e * e;
    }
    EXPECT_NEAR(sum, w.sum, 1e-4 * std::abs(w.sum)) << w.layer;
    EXPECT_NEAR(sumsq, w.sumsq, 1e-4 * std::abs(w.sumsq)) << w.layer;
    const std::size_t idx[3] = {0, v.size() / 3, v.size() - 1};
    for (std::size_t j = 0; j < 3; ++j) EXPECT_NEAR(v[idx[j]], w.at[j], 1e-5 + 1e-4 * std::abs(w.at[j])) << w.layer;
  }
}

Variable image(int64_t size, uint64_t seed = 1) {
  return Variable(randn({1, 3, size, size}, Dtype::float32, seed));
}

}  // namespace

TEST(VGGLayers, NamesShapesAndForward) {
  L::VGG16Layers vgg;
  expect_chainer_keys("VGG16Layers", vgg);
  EXPECT_EQ(
      vgg.available_layers(),
      (std::vector<std::string>{"conv1_1", "conv1_2", "pool1",   "conv2_1", "conv2_2", "pool2", "conv3_1", "conv3_2",
                                "conv3_3", "pool3",   "conv4_1", "conv4_2", "conv4_3", "pool4", "conv5_1", "conv5_2",
                                "conv5_3", "pool5",   "fc6",     "fc7",     "fc8",     "prob"}));
  auto test_mode = using_config("train", false);
  const Variable x = image(32);
  const auto out = vgg(x, {"conv1_1", "pool1", "conv4_3", "pool5"});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out.at("pool1").shape(), (Shape{1, 64, 16, 16}));
  EXPECT_EQ(out.at("conv4_3").shape(), (Shape{1, 512, 4, 4}));
  EXPECT_EQ(out.at("pool5").shape(), (Shape{1, 512, 1, 1}));
  auto& conv1_1 = dynamic_cast<L::Convolution2D&>(vgg.child("conv1_1"));
  EXPECT_TRUE(array_equal(out.at("conv1_1").array(), F::relu(conv1_1(x)).array()));
  // fc6 expects 224 x 224 inputs (pool5 of 512 x 7 x 7), as Chainer.
  expect_error<ShapeError>([&] { vgg(x); }, {"VGG16Layers", "layer fc6", "(1, 512, 1, 1)"});
}

TEST(VGGLayers, VGG19NamesAndForward) {
  L::VGG19Layers vgg;
  expect_chainer_keys("VGG19Layers", vgg);
  const auto layers = vgg.available_layers();
  EXPECT_EQ(layers.size(), 25u);
  EXPECT_EQ(layers[9], "conv3_4");
  auto test_mode = using_config("train", false);
  EXPECT_EQ(vgg(image(32), {"conv5_4"}).at("conv5_4").shape(), (Shape{1, 512, 2, 2}));
}

TEST(ResNetLayers, NamesOfEveryDepth) {
  {
    L::ResNet101Layers r101;
    expect_chainer_keys("ResNet101Layers", r101);
  }
  L::ResNet152Layers r152;
  expect_chainer_keys("ResNet152Layers", r152);
  EXPECT_EQ(r152.available_layers(),
            (std::vector<std::string>{"conv1", "pool1", "res2", "res3", "res4", "res5", "pool5", "fc6", "prob"}));
}

TEST(ResNetLayers, Forward) {
  L::ResNet50Layers resnet;
  expect_chainer_keys("ResNet50Layers", resnet);
  auto test_mode = using_config("train", false);
  const Variable x = image(32);
  const auto out = resnet(x, {"pool1", "res2", "res3", "res5", "pool5", "prob"});
  EXPECT_EQ(out.at("pool1").shape(), (Shape{1, 64, 8, 8}));
  EXPECT_EQ(out.at("res2").shape(), (Shape{1, 256, 8, 8}));
  EXPECT_EQ(out.at("res3").shape(), (Shape{1, 512, 4, 4}));
  EXPECT_EQ(out.at("res5").shape(), (Shape{1, 2048, 1, 1}));
  EXPECT_EQ(out.at("pool5").shape(), (Shape{1, 2048}));
  EXPECT_EQ(out.at("prob").shape(), (Shape{1, 1000}));
  auto& conv1 = dynamic_cast<L::Convolution2D&>(resnet.child("conv1"));
  auto& bn1 = dynamic_cast<L::BatchNormalization&>(resnet.child("bn1"));
  EXPECT_TRUE(array_equal(out.at("pool1").array(), F::max_pooling_2d(F::relu(bn1(conv1(x))), 3, 2).array()));
  EXPECT_TRUE(array_equal(resnet(x).array(), out.at("prob").array()));
  expect_chainer_values(
      resnet, 32,
      {{"pool1", {1, 64, 8, 8}, 1062.44356, 668.090938, {0.0158157349, 0.809748232, 0}},
       {"res3", {1, 512, 4, 4}, 7771.20899, 15825.8141, {0.781724155, 0, 0.991751432}},
       {"pool5", {1, 2048}, 2030.51888, 5096.59342, {1.13446593, 0.72370863, 0.235518843}},
       {"prob", {1, 1000}, 1.00000005, 0.00753284809, {6.00260952e-10, 0.00252481108, 3.83135872e-14}}});
}

TEST(ResNetLayers, Blocks) {
  auto guard = using_config("dtype", Dtype::float64);
  auto test_mode = using_config("train", false);
  L::BuildingBlock block(2, 3, 2, 4, 2);
  std::vector<std::string> names;
  for (const auto& [path, l] : block.namedlinks()) names.push_back(path);
  EXPECT_EQ(names.size(), 1u + 1 + 8 + 1 + 6);  // itself, a and its 8 children, b1 and its 6
  EXPECT_EQ(block.child("a").children()[6].first, "conv4");
  const Variable x(randn({2, 3, 5, 5}, Dtype::float64, 3));
  EXPECT_EQ(block(x).shape(), (Shape{2, 4, 3, 3}));
  // Initial gamma 1 and beta 0 put the relus of zero patches exactly at their kink.
  rensa::test::set_params(block, 0.0);
  rensa::test::expect_param_grads(block, [&] { return rensa::test::weighted_sum({block(x)}); });
  // Facebook's ResNet strides the 3x3 convolution instead of the first 1x1.
  L::BottleneckA fb(3, 2, 4, 2, nullptr, true);
  EXPECT_EQ(dynamic_cast<L::Convolution2D&>(fb.child("conv1"))(x).shape(), (Shape{2, 2, 5, 5}));
  EXPECT_EQ(fb(x).shape(), (Shape{2, 4, 3, 3}));
  expect_error<ValueError>([] { L::BuildingBlock(0, 3, 2, 4, 2); }, {"BuildingBlock", "n_layers"});
}

TEST(GoogLeNet, NamesShapesAndRoundTrip) {
  L::GoogLeNet net;
  expect_chainer_keys("GoogLeNet", net);
  EXPECT_EQ(net.available_layers(),
            (std::vector<std::string>{"conv1",        "pool1",        "conv2_reduce", "conv2",        "pool2",
                                      "inception_3a", "inception_3b", "pool3",        "inception_4a", "inception_4b",
                                      "inception_4c", "inception_4d", "inception_4e", "pool4",        "inception_5a",
                                      "inception_5b", "pool5",        "loss3_fc",     "prob",         "loss1_fc2",
                                      "loss2_fc2"}));
  auto test_mode = using_config("train", false);
  // 64 x 64: pool4 needs inception_4e's map to hold a 3 x 3 window.
  const Variable x = image(64);
  const auto out = net(x, {"pool1", "inception_3a", "inception_4e", "inception_5b"});
  EXPECT_EQ(out.at("pool1").shape(), (Shape{1, 64, 16, 16}));
  EXPECT_EQ(out.at("inception_3a").shape(), (Shape{1, 256, 8, 8}));
  EXPECT_EQ(out.at("inception_4e").shape(), (Shape{1, 832, 4, 4}));
  EXPECT_EQ(out.at("inception_5b").shape(), (Shape{1, 1024, 2, 2}));
  // A file written from this model loads into one built from it (pretrained_model), giving the
  // same outputs.
  const std::string path = rensa::test::temp_npz("googlenet");
  serializers::save_npz(path, net);
  L::GoogLeNet loaded(path);
  std::filesystem::remove(path);
  rensa::test::expect_same_params(net, loaded);
  EXPECT_TRUE(array_equal(loaded(x, {"inception_5b"}).at("inception_5b").array(), out.at("inception_5b").array()));
  expect_chainer_values(
      net, 64,
      {{"pool2", {1, 192, 8, 8}, 5654.03333, 6553.92613, {0.45501408, 0, 1.18111002}},
       {"inception_4a", {1, 512, 4, 4}, 1399.3312, 699.728919, {0.0531032272, 0.369497597, 0.218080953}},
       {"inception_5b", {1, 1024, 2, 2}, 2530.78456, 5207.82801, {0.268837839, 0, 0}}});
}

TEST(GoogLeNet, AuxiliaryClassifiersAt224) {
  L::GoogLeNet net;
  auto test_mode = using_config("train", false);
  auto no_grad = no_backprop_mode();
  const auto out = net(image(224), {"inception_4a", "pool5", "prob", "loss1_fc2", "loss2_fc2"});
  EXPECT_EQ(out.at("inception_4a").shape(), (Shape{1, 512, 14, 14}));
  EXPECT_EQ(out.at("pool5").shape(), (Shape{1, 1024, 1, 1}));
  for (const char* name : {"prob", "loss1_fc2", "loss2_fc2"}) EXPECT_EQ(out.at(name).shape(), (Shape{1, 1000}));
  auto& conv = dynamic_cast<L::Convolution2D&>(net.child("loss1_conv"));
  auto& fc1 = dynamic_cast<L::Linear&>(net.child("loss1_fc1"));
  auto& fc2 = dynamic_cast<L::Linear&>(net.child("loss1_fc2"));
  const Variable want = fc2(F::relu(fc1(F::relu(conv(F::average_pooling_2d(out.at("inception_4a"), 5, 3))))));
  EXPECT_TRUE(array_equal(out.at("loss1_fc2").array(), want.array()));
}

TEST(VisionLayers, Errors) {
  expect_error<ValueError>([] { L::GoogLeNet("auto"); }, {"GoogLeNet", "auto", ".npz"});
  expect_error<ValueError>([] { L::ResNet50Layers("model.caffemodel"); }, {"ResNet50Layers", "model.caffemodel"});
  expect_error<IOError>([] { L::GoogLeNet("/nonexistent/googlenet.npz"); }, {"googlenet.npz"});
  L::GoogLeNet net;
  expect_error<ValueError>([&] { net(image(32), {"inception_9z"}); }, {"GoogLeNet", "inception_9z", "loss2_fc2"});
  expect_error<ValueError>([&] { net(image(32), std::vector<std::string>{}); }, {"GoogLeNet", "layer"});
  expect_error<ShapeError>(
      [&] {
        net(Variable(randn({1, 4, 32, 32}, Dtype::float32)), {"conv1"});
      },
      {"GoogLeNet", "layer conv1", "(1, 4, 32, 32)"});
}
