// links::ConvolutionND, Convolution1D/3D, DeconvolutionND and Deconvolution1D/3D: parameters,
// initializers, lazy in_channels, forward against the functions, gradients, .npz and errors.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "rensa/links/convolution_nd.h"
#include "tests/unit/links/connection_test_util.h"

using namespace rensa;
namespace F = rensa::functions;
namespace L = rensa::links;
namespace I = rensa::initializers;
using rensa::test::expect_error;
using rensa::test::randn;

namespace {
const std::vector<std::string> kWb = {"W", "b"};
}

TEST(ConvolutionNDLink, ParametersAndForward) {
  L::ConvolutionND c(3, 4, 6, {2, 3, 1}, {.stride = {1, 2, 1}, .pad = 1, .groups = 2, .seed = 0});
  EXPECT_EQ(c.W().shape(), (Shape{6, 2, 2, 3, 1}));
  EXPECT_EQ(c.b().shape(), (Shape{6}));
  EXPECT_EQ(c.W().dtype(), Dtype::float32);
  ASSERT_EQ(c.namedparams().size(), 2u);
  EXPECT_EQ(c.namedparams()[0].first, "/W");
  EXPECT_EQ(c.namedparams()[1].first, "/b");
  const Variable x(randn({2, 4, 3, 5, 2}, Dtype::float32, 1));
  const Variable y = c(x);
  EXPECT_TRUE(
      array_equal(y.array(), F::convolution_nd(x, c.W(), c.b(), {.stride = {1, 2, 1}, .pad = 1, .groups = 2}).array()));
  L::ConvolutionND cover(1, 2, 3, 2, {.stride = 2, .cover_all = true, .dilate = 2});
  const Variable x1(randn({1, 2, 6}, Dtype::float32, 2));
  EXPECT_TRUE(
      array_equal(cover(x1).array(),
                  F::convolution_nd(x1, cover.W(), cover.b(), {.stride = 2, .cover_all = true, .dilate = 2}).array()));
  // LeCunNormal by default (fan_in = 8 * 27), zero bias.
  L::ConvolutionND big(3, 8, 64, 3, {.seed = 1});
  EXPECT_NEAR(rensa::test::mean_square(big.W().array()), 1.0 / 216, 0.15 / 216);
  EXPECT_EQ(rensa::test::mean_square(big.b().array()), 0.0);
}

TEST(ConvolutionNDLink, OneAndThreeDimensions) {
  L::Convolution1D c1(2, 3, 3, {.pad = 1, .seed = 3});
  EXPECT_EQ(c1.W().shape(), (Shape{3, 2, 3}));
  const Variable x1(randn({2, 2, 7}, Dtype::float32, 4));
  EXPECT_TRUE(array_equal(c1(x1).array(), F::convolution_1d(x1, c1.W(), c1.b(), {.pad = 1}).array()));
  L::Convolution3D c3(2, 4, {1, 2, 3}, {.nobias = true});
  EXPECT_EQ(c3.W().shape(), (Shape{4, 2, 1, 2, 3}));
  EXPECT_TRUE(c3.b().is_null());
  EXPECT_EQ(c3.namedparams().size(), 1u);
  const Variable x3(randn({1, 2, 2, 3, 4}, Dtype::float32, 5));
  EXPECT_TRUE(array_equal(c3(x3).array(), F::convolution_3d(x3, c3.W()).array()));
}

TEST(ConvolutionNDLink, LazyInitializersAndNpz) {
  L::Convolution3D lazy(
      0, 3, 2, {.initialW = std::make_shared<I::Constant>(0.5), .initial_bias = std::make_shared<I::Constant>(-1.0)});
  EXPECT_TRUE(lazy.W().array().is_null());
  const Variable W = lazy.W();
  const Variable y = lazy(Variable(Array::ones({1, 2, 2, 2, 2})));
  EXPECT_TRUE(W.is(lazy.W()));  // the registered Variable gets the array
  EXPECT_EQ(lazy.W().shape(), (Shape{3, 2, 2, 2, 2}));
  for (float v : y.array().to_vector<float>()) EXPECT_FLOAT_EQ(v, 0.5f * 16 - 1);
  // A lazy link draws what an eager one with the same seed draws.
  L::ConvolutionND eager(2, 4, 5, 3, {.seed = 7});
  L::ConvolutionND later(2, 0, 5, 3, {.seed = 7});
  later(Variable(randn({1, 4, 3, 3}, Dtype::float32)));
  rensa::test::expect_same_params(eager, later);
  // Chainer's keys; a lazy link adopts the file's shapes.
  L::ConvolutionND loaded(2, 0, 5, 3);
  EXPECT_EQ(rensa::test::npz_round_trip(eager, loaded), kWb);
}

TEST(ConvolutionNDLink, Gradients) {
  auto guard = using_config("dtype", Dtype::float64);
  L::Convolution3D c(2, 2, 2, {.stride = {1, 2, 1}, .pad = 1, .seed = 8});
  const Variable x(randn({2, 2, 3, 3, 2}, Dtype::float64, 9));
  rensa::test::expect_param_grads(c, [&] { return rensa::test::weighted_sum({c(x)}); });
  L::Deconvolution1D d(2, 4, 3, {.stride = 2, .groups = 2, .seed = 10});
  const Variable x1(randn({2, 2, 4}, Dtype::float64, 11));
  rensa::test::expect_param_grads(d, [&] { return rensa::test::weighted_sum({d(x1)}); });
}

TEST(ConvolutionNDLink, Errors) {
  expect_error<ValueError>([] { L::ConvolutionND(0, 2, 3, 3); }, {"ConvolutionND", "ndim"});
  expect_error<ValueError>([] { L::ConvolutionND(3, 2, 3, {2, 2}); }, {"ConvolutionND", "ksize", "(2, 2)"});
  expect_error<ValueError>([] { L::Convolution3D(2, 3, {2, 0, 2}); }, {"Convolution3D", "ksize", "(2, 0, 2)"});
  expect_error<ValueError>([] { L::Convolution1D(3, 4, 3, {.groups = 2}); }, {"Convolution1D", "groups"});
  expect_error<ValueError>([] { L::Deconvolution3D(-1, 4, 3); }, {"Deconvolution3D", "channels"});
  L::Convolution1D c(3, 4, 2);
  expect_error<ShapeError>(
      [&] {
        c(Variable(randn({2, 2, 5}, Dtype::float32)));
      },
      {"Convolution1D", "(2, 2, 5)", "(4, 3, 2)"});
  expect_error<ShapeError>(
      [&] {
        c(Variable(randn({2, 3, 5, 5}, Dtype::float32)));
      },
      {"Convolution1D", "(2, 3, 5, 5)"});
  L::Convolution3D lazy(0, 4, 2);
  expect_error<ShapeError>(
      [&] {
        lazy(Variable(randn({2, 3, 5}, Dtype::float32)));
      },
      {"Convolution3D", "in_channels", "(2, 3, 5)"});
  L::Deconvolution1D d(3, 4, 2);
  expect_error<ShapeError>(
      [&] {
        d(Variable(randn({2, 4, 5}, Dtype::float32)));
      },
      {"Deconvolution1D", "(2, 4, 5)", "(3, 4, 2)"});
}

TEST(DeconvolutionNDLink, ParametersLazyAndForward) {
  L::DeconvolutionND d(2, 0, 4, {3, 2}, {.stride = 2, .pad = 1, .groups = 2, .seed = 2});
  EXPECT_TRUE(d.W().array().is_null());
  const Variable x(randn({2, 6, 3, 4}, Dtype::float32, 3));
  const Variable y = d(x);
  EXPECT_EQ(d.W().shape(), (Shape{6, 2, 3, 2}));
  EXPECT_TRUE(
      array_equal(y.array(), F::deconvolution_nd(x, d.W(), d.b(), {.stride = 2, .pad = 1, .groups = 2}).array()));
  L::Deconvolution3D d3(2, 3, 2, {.stride = 2, .outsize = std::vector<int64_t>{5, 4, 5}});
  EXPECT_EQ(d3.W().shape(), (Shape{2, 3, 2, 2, 2}));
  const Variable x3(randn({1, 2, 2, 2, 2}, Dtype::float32, 4));
  const Variable y3 = d3(x3);
  EXPECT_EQ(y3.shape(), (Shape{1, 3, 5, 4, 5}));
  EXPECT_TRUE(array_equal(
      y3.array(),
      F::deconvolution_3d(x3, d3.W(), d3.b(), {.stride = 2, .outsize = std::vector<int64_t>{5, 4, 5}}).array()));
  L::Deconvolution1D d1(3, 2, 3, {.nobias = true, .initialW = std::make_shared<I::One>()});
  EXPECT_TRUE(d1.b().is_null());
  EXPECT_EQ(rensa::test::mean_square(d1.W().array()), 1.0);
  L::Deconvolution1D loaded(0, 2, 3, {.nobias = true});
  EXPECT_EQ(rensa::test::npz_round_trip(d1, loaded), (std::vector<std::string>{"W"}));
}
