// links::DilatedConvolution2D, DepthwiseConvolution2D, LocalConvolution2D, DeformableConvolution2D
// (and its sampler) and MLPConvolution2D: parameters, initializers, lazy shapes, forward against
// the functions, gradients, .npz keys and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "rensa/functions/deformable_convolution.h"
#include "rensa/functions/local_convolution.h"
#include "rensa/links/deformable_convolution_2d.h"
#include "rensa/links/depthwise_convolution_2d.h"
#include "rensa/links/dilated_convolution_2d.h"
#include "rensa/links/local_convolution_2d.h"
#include "rensa/links/mlp_convolution_2d.h"
#include "tests/unit/links/connection_test_util.h"

using namespace rensa;
namespace F = rensa::functions;
namespace L = rensa::links;
namespace I = rensa::initializers;
using rensa::test::expect_error;
using rensa::test::expect_param_grads;
using rensa::test::expect_same_params;
using rensa::test::mean_square;
using rensa::test::npz_round_trip;
using rensa::test::randn;
using rensa::test::weighted_sum;

namespace {
const std::vector<std::string> kWb = {"W", "b"};

std::vector<std::string> paths(const Link& l) {
  std::vector<std::string> out;
  for (const auto& [path, v] : l.namedparams()) out.push_back(path);
  return out;
}
}  // namespace

TEST(DilatedConvolution2DLink, ParametersForwardAndLazy) {
  L::DilatedConvolution2D c(3, 4, {3, 2}, {.stride = 2, .pad = 2, .dilate = {2, 3}, .seed = 1});
  EXPECT_EQ(c.W().shape(), (Shape{4, 3, 3, 2}));
  EXPECT_EQ(c.b().shape(), (Shape{4}));
  EXPECT_EQ(paths(c), (std::vector<std::string>{"/W", "/b"}));
  const Variable x(randn({2, 3, 7, 8}, Dtype::float32, 2));
  EXPECT_TRUE(array_equal(c(x).array(), F::dilated_convolution_2d(x, c.W(), c.b(), 2, 2, {2, 3}).array()));
  L::DilatedConvolution2D big(8, 64, 3, {.seed = 3});
  EXPECT_NEAR(mean_square(big.W().array()), 1.0 / 72, 0.2 / 72);  // LeCunNormal
  L::DilatedConvolution2D lazy(0, 4, {3, 2}, {.stride = 2, .pad = 2, .dilate = {2, 3}, .seed = 1});
  lazy(x);
  expect_same_params(c, lazy);
  L::DilatedConvolution2D nobias(3, 2, 1, {.nobias = true, .initialW = std::make_shared<I::One>()});
  EXPECT_TRUE(nobias.b().is_null());
  EXPECT_EQ(mean_square(nobias.W().array()), 1.0);
  L::DilatedConvolution2D loaded(0, 4, {3, 2});
  EXPECT_EQ(npz_round_trip(c, loaded), kWb);
}

TEST(DilatedConvolution2DLink, GradientsAndErrors) {
  {
    auto guard = using_config("dtype", Dtype::float64);
    L::DilatedConvolution2D c(2, 3, 2, {.pad = 1, .dilate = 2, .seed = 4});
    const Variable x(randn({2, 2, 4, 4}, Dtype::float64, 5));
    expect_param_grads(c, [&] { return weighted_sum({c(x)}); });
  }
  expect_error<ValueError>([] { L::DilatedConvolution2D(2, 3, {0, 2}); }, {"DilatedConvolution2D", "ksize"});
  L::DilatedConvolution2D c(3, 4, 3);
  expect_error<ShapeError>(
      [&] {
        c(Variable(randn({1, 2, 5, 5}, Dtype::float32)));
      },
      {"DilatedConvolution2D", "(1, 2, 5, 5)", "(4, 3, 3, 3)"});
}

TEST(DepthwiseConvolution2DLink, ParametersForwardAndLazy) {
  L::DepthwiseConvolution2D c(3, 2, {3, 2}, {.stride = {1, 2}, .pad = 1, .seed = 1});
  EXPECT_EQ(c.W().shape(), (Shape{2, 3, 3, 2}));
  EXPECT_EQ(c.b().shape(), (Shape{6}));
  EXPECT_EQ(c.channel_multiplier(), 2);
  EXPECT_EQ(paths(c), (std::vector<std::string>{"/W", "/b"}));
  const Variable x(randn({2, 3, 5, 6}, Dtype::float32, 2));
  const Variable y = c(x);
  EXPECT_EQ(y.shape()[1], 6);
  EXPECT_TRUE(array_equal(y.array(), F::depthwise_convolution_2d(x, c.W(), c.b(), {1, 2}, 1).array()));
  // Chainer's default: HeNormal(1 / sqrt(2)), variance 1 / fan_in with fan_in = 64 * 3 * 3 (W is
  // (16, 64, 3, 3)).
  L::DepthwiseConvolution2D big(64, 16, 3, {.seed = 3});
  EXPECT_NEAR(mean_square(big.W().array()), 1.0 / 576, 0.15 / 576);
  // Lazy: W and b wait for x, then match an eager link's draw.
  L::DepthwiseConvolution2D lazy(0, 2, {3, 2}, {.stride = {1, 2}, .pad = 1, .seed = 1});
  EXPECT_TRUE(lazy.W().array().is_null());
  EXPECT_TRUE(lazy.b().array().is_null());
  lazy(x);
  expect_same_params(c, lazy);
  L::DepthwiseConvolution2D nobias(3, 1, 1, {.nobias = true, .initialW = std::make_shared<I::Constant>(2.0)});
  EXPECT_TRUE(nobias.b().is_null());
  EXPECT_EQ(mean_square(nobias.W().array()), 4.0);
  L::DepthwiseConvolution2D loaded(0, 2, {3, 2});
  EXPECT_EQ(npz_round_trip(c, loaded), kWb);
}

TEST(DepthwiseConvolution2DLink, GradientsAndErrors) {
  {
    auto guard = using_config("dtype", Dtype::float64);
    L::DepthwiseConvolution2D c(2, 3, 2, {.pad = 1, .initial_bias = std::make_shared<I::Normal>(1.0), .seed = 4});
    const Variable x(randn({2, 2, 4, 3}, Dtype::float64, 5));
    expect_param_grads(c, [&] { return weighted_sum({c(x)}); });
  }
  expect_error<ValueError>([] { L::DepthwiseConvolution2D(2, 0, 3); },
                           {"DepthwiseConvolution2D", "channel_multiplier"});
  expect_error<ValueError>([] { L::DepthwiseConvolution2D(-2, 1, 3); }, {"DepthwiseConvolution2D", "in_channels"});
  L::DepthwiseConvolution2D c(3, 2, 3);
  expect_error<ShapeError>(
      [&] {
        c(Variable(randn({1, 2, 5, 5}, Dtype::float32)));
      },
      {"DepthwiseConvolution2D", "(1, 2, 5, 5)", "(2, 3, 3, 3)"});
  L::DepthwiseConvolution2D lazy(0, 2, 3);
  expect_error<ShapeError>(
      [&] {
        lazy(Variable(randn({2, 5}, Dtype::float32)));
      },
      {"DepthwiseConvolution2D", "in_channels", "(2, 5)"});
}

TEST(LocalConvolution2DLink, ParametersForwardAndLazy) {
  L::LocalConvolution2D c(2, 3, F::Int2{5, 6}, {3, 2}, {.stride = {1, 2}, .seed = 1});
  EXPECT_EQ(c.W().shape(), (Shape{3, 3, 3, 2, 3, 2}));  // OH = 5 - 3 + 1, OW = (6 - 2) / 2 + 1
  EXPECT_EQ(c.b().shape(), (Shape{3, 3, 3}));
  EXPECT_EQ(paths(c), (std::vector<std::string>{"/W", "/b"}));
  const Variable x(randn({2, 2, 5, 6}, Dtype::float32, 2));
  EXPECT_TRUE(array_equal(c(x).array(), F::local_convolution_2d(x, c.W(), c.b(), {1, 2}).array()));
  // Lazy without in_size, or without in_channels: both come from x.
  L::LocalConvolution2D lazy(2, 3, std::nullopt, {3, 2}, {.stride = {1, 2}, .seed = 1});
  EXPECT_TRUE(lazy.W().array().is_null());
  EXPECT_TRUE(lazy.b().array().is_null());
  lazy(x);
  expect_same_params(c, lazy);
  L::LocalConvolution2D lazy2(0, 3, F::Int2{5, 6}, {3, 2}, {.stride = {1, 2}, .seed = 1});
  lazy2(x);
  expect_same_params(c, lazy2);
  L::LocalConvolution2D nobias(2, 1, F::Int2{3, 3}, 3,
                               {.nobias = true, .initialW = std::make_shared<I::Constant>(0.5)});
  EXPECT_TRUE(nobias.b().is_null());
  const auto y = nobias(Variable(Array::ones({1, 2, 3, 3}, Dtype::float32)));
  EXPECT_FLOAT_EQ(y.array().to_vector<float>()[0], 9.0f);
  L::LocalConvolution2D loaded(0, 3, std::nullopt, {3, 2}, {.stride = {1, 2}});
  EXPECT_EQ(npz_round_trip(c, loaded), kWb);
}

TEST(LocalConvolution2DLink, GradientsAndErrors) {
  {
    auto guard = using_config("dtype", Dtype::float64);
    L::LocalConvolution2D c(2, 2, F::Int2{4, 4}, 2, {.stride = 2, .seed = 4});
    const Variable x(randn({2, 2, 4, 4}, Dtype::float64, 5));
    expect_param_grads(c, [&] { return weighted_sum({c(x)}); });
  }
  expect_error<ValueError>(
      [] {
        L::LocalConvolution2D(2, 3, F::Int2{2, 5}, 3);
      },
      {"LocalConvolution2D", "(3, 3)", "(2, 5)"});
  expect_error<ValueError>([] { L::LocalConvolution2D(2, 3, std::nullopt, 3, {.stride = 0}); },
                           {"LocalConvolution2D", "stride"});
  L::LocalConvolution2D c(2, 3, F::Int2{5, 5}, 3);
  expect_error<ShapeError>(
      [&] {
        c(Variable(randn({1, 3, 5, 5}, Dtype::float32)));
      },
      {"LocalConvolution2D", "(1, 3, 5, 5)", "(3, 3, 3, 2, 3, 3)"});
  L::LocalConvolution2D lazy(0, 3, std::nullopt, 3);
  expect_error<ShapeError>(
      [&] {
        lazy(Variable(randn({2, 2, 5}, Dtype::float32)));
      },
      {"LocalConvolution2D", "in_size", "(2, 2, 5)"});
}

TEST(DeformableConvolution2DLink, ParametersAndForward) {
  L::DeformableConvolution2D c(2, 3, {3, 2}, {.stride = 1, .pad = 1, .seed = 1});
  EXPECT_EQ(paths(c),
            (std::vector<std::string>{"/offset_conv/W", "/offset_conv/b", "/deform_conv/W", "/deform_conv/b"}));
  EXPECT_EQ(c.offset_conv().W().shape(), (Shape{12, 2, 3, 2}));
  EXPECT_EQ(c.deform_conv().W().shape(), (Shape{3, 2, 3, 2}));
  EXPECT_EQ(mean_square(c.deform_conv().W().array()), 0.0);  // Chainer's default: zeros
  c.deform_conv().W().array().assign(randn({3, 2, 3, 2}, Dtype::float32, 6));
  const Variable x(randn({2, 2, 4, 5}, Dtype::float32, 2));
  const Variable offset = c.offset_conv()(x);
  EXPECT_TRUE(array_equal(
      c(x).array(),
      F::deformable_convolution_2d_sampler(x, offset, c.deform_conv().W(), c.deform_conv().b(), 1, 1).array()));
  // Lazy: both children infer in_channels; the same seed gives the same parameters.
  L::DeformableConvolution2D eager(2, 3, 3, {.pad = 1, .deform_initialW = std::make_shared<I::Normal>(), .seed = 5});
  L::DeformableConvolution2D lazy(0, 3, 3, {.pad = 1, .deform_initialW = std::make_shared<I::Normal>(), .seed = 5});
  lazy(x);
  expect_same_params(eager, lazy);
  L::DeformableConvolution2D nobias(2, 3, 3, {.offset_nobias = true, .deform_nobias = true});
  EXPECT_EQ(paths(nobias), (std::vector<std::string>{"/offset_conv/W", "/deform_conv/W"}));
  L::DeformableConvolution2D loaded(0, 3, 3, {.pad = 1});
  EXPECT_EQ(npz_round_trip(eager, loaded),
            (std::vector<std::string>{"deform_conv/W", "deform_conv/b", "offset_conv/W", "offset_conv/b"}));
}

TEST(DeformableConvolution2DLink, GradientsAndErrors) {
  {
    auto guard = using_config("dtype", Dtype::float64);
    // Offsets of 0.3 plus a little keep the bilinear taps away from whole pixels, where
    // interpolation has kinks.
    L::DeformableConvolution2D c(2, 2, 2,
                                 {.pad = 1,
                                  .offset_initialW = std::make_shared<I::Normal>(0.01),
                                  .offset_initial_bias = std::make_shared<I::Constant>(0.3),
                                  .deform_initialW = std::make_shared<I::Normal>(1.0),
                                  .seed = 4});
    const Variable x(randn({1, 2, 3, 3}, Dtype::float64, 5));
    expect_param_grads(c, [&] { return weighted_sum({c(x)}); });
  }
  L::DeformableConvolution2DSampler s(2, 3, 3);
  EXPECT_EQ(s.W().shape(), (Shape{3, 2, 3, 3}));
  expect_error<ShapeError>(
      [&] {
        s(Variable(randn({1, 3, 5, 5}, Dtype::float32)), Variable());
      },
      {"DeformableConvolution2DSampler", "(1, 3, 5, 5)", "(3, 2, 3, 3)"});
  expect_error<ValueError>(
      [&] {
        s.forward(std::vector<Variable>{Variable(randn({1, 2, 5, 5}))});
      },
      {"DeformableConvolution2DSampler", "offset"});
  expect_error<ValueError>([] { L::DeformableConvolution2DSampler(2, -3, 3); },
                           {"DeformableConvolution2DSampler", "channels"});
  L::DeformableConvolution2D c(2, 3, 3);
  expect_error<ShapeError>(
      [&] {
        c(Variable(randn({1, 3, 5, 5}, Dtype::float32)));
      },
      {"Convolution2D", "(1, 3, 5, 5)"});
}

TEST(MLPConvolution2DLink, ChildrenForwardAndLazy) {
  L::MLPConvolution2D m(3, {4, 5, 2}, 3, {.stride = 2, .pad = 1, .seed = 1});
  EXPECT_EQ(paths(m), (std::vector<std::string>{"/0/W", "/0/b", "/1/W", "/1/b", "/2/W", "/2/b"}));
  EXPECT_EQ(m[0].param("W").shape(), (Shape{4, 3, 3, 3}));
  EXPECT_EQ(m[1].param("W").shape(), (Shape{5, 4, 1, 1}));
  EXPECT_EQ(m[2].param("W").shape(), (Shape{2, 5, 1, 1}));
  const Variable x(randn({2, 3, 5, 5}, Dtype::float32, 2));
  F::Conv2dOptions first;
  first.stride = 2;
  first.pad = 1;
  Variable h = F::relu(F::convolution_2d(x, m[0].param("W"), m[0].param("b"), first));
  h = F::relu(F::convolution_2d(h, m[1].param("W"), m[1].param("b")));
  h = F::convolution_2d(h, m[2].param("W"), m[2].param("b"));
  EXPECT_TRUE(array_equal(m(x).array(), h.array()));
  // Another activation, initializers, and lazy in_channels.
  L::MLPConvolution2D t(0, {2, 2}, 1,
                        {.activation = [](const Variable& v) { return F::tanh(v); },
                         .conv_init = std::make_shared<I::Constant>(0.5),
                         .bias_init = std::make_shared<I::Constant>(0.25)});
  const Variable y = t(Variable(Array::ones({1, 3, 1, 1}, Dtype::float32)));
  const float h1 = std::tanh(0.5f * 3 + 0.25f);
  EXPECT_FLOAT_EQ(y.array().to_vector<float>()[0], 0.5f * 2 * h1 + 0.25f);
  L::MLPConvolution2D eager(3, {4, 2}, 3, {.seed = 9});
  L::MLPConvolution2D lazy(0, {4, 2}, 3, {.seed = 9});
  lazy(x);
  expect_same_params(eager, lazy);
  L::MLPConvolution2D loaded(0, {4, 2}, 3);
  EXPECT_EQ(npz_round_trip(eager, loaded), (std::vector<std::string>{"0/W", "0/b", "1/W", "1/b"}));
}

TEST(MLPConvolution2DLink, GradientsAndErrors) {
  {
    auto guard = using_config("dtype", Dtype::float64);
    L::MLPConvolution2D m(2, {3, 2}, 2, {.activation = [](const Variable& v) { return F::tanh(v); }, .seed = 4});
    const Variable x(randn({2, 2, 3, 3}, Dtype::float64, 5));
    expect_param_grads(m, [&] { return weighted_sum({m(x)}); });
  }
  expect_error<ValueError>([] { L::MLPConvolution2D(3, {}, 3); }, {"MLPConvolution2D", "out_channels"});
  L::MLPConvolution2D m(3, {4, 2}, 3);
  expect_error<ShapeError>(
      [&] {
        m(Variable(randn({1, 2, 5, 5}, Dtype::float32)));
      },
      {"Convolution2D", "(1, 2, 5, 5)"});
}

// A lazy link loading a file of another dtype casts to its own, as Chainer (issue 16: W and b
// both lazy here).
TEST(DepthwiseConvolution2DLink, LazyLoadCastsToItsDtype) {
  const std::string path = rensa::test::temp_npz("lazy_depthwise");
  {
    auto guard = using_config("dtype", Dtype::float64);
    L::DepthwiseConvolution2D saved(3, 2, 3, {.seed = 1});
    serializers::save_npz(path, saved);
  }
  L::DepthwiseConvolution2D lazy(0, 2, 3);
  serializers::load_npz(path, lazy);
  std::filesystem::remove(path);
  EXPECT_EQ(lazy.W().dtype(), Dtype::float32);
  EXPECT_EQ(lazy.b().dtype(), Dtype::float32);
  EXPECT_EQ(lazy.W().shape(), (Shape{2, 3, 3, 3}));
  EXPECT_EQ(lazy(Variable(randn({1, 3, 4, 4}, Dtype::float32))).dtype(), Dtype::float32);
}
