// links::Convolution2D and Deconvolution2D: parameters, lazy in_channels, forward and errors.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "rensa/links/convolution_2d.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
namespace L = rensa::links;
namespace I = rensa::initializers;
using rensa::test::expect_error;
using rensa::test::randn;

TEST(Convolution2DLink, ParametersAndForward) {
  L::Convolution2D c(4, 6, 3, {.pad = 1, .groups = 2, .seed = 0});
  EXPECT_EQ(c.W().shape(), (Shape{6, 2, 3, 3}));
  EXPECT_EQ(c.W().dtype(), Dtype::float32);
  EXPECT_EQ(c.b().shape(), (Shape{6}));
  ASSERT_EQ(c.namedparams().size(), 2u);
  EXPECT_EQ(c.namedparams()[0].first, "/W");
  EXPECT_EQ(c.namedparams()[1].first, "/b");
  Variable x(randn({2, 4, 5, 5}, Dtype::float32, 1));
  Variable y = c(x);
  EXPECT_EQ(y.shape(), (Shape{2, 6, 5, 5}));
  F::Conv2dOptions o;
  o.pad = 1;
  o.groups = 2;
  EXPECT_TRUE(allclose(y.array(), F::convolution_2d(x, c.W(), c.b(), o).array()));
  // Gradients reach the parameters.
  F::sum(y).backward();
  EXPECT_FALSE(c.W().grad().is_null());
  EXPECT_FALSE(c.b().grad().is_null());
  // Same seed, same weights.
  L::Convolution2D c2(4, 6, 3, {.pad = 1, .groups = 2, .seed = 0});
  EXPECT_TRUE(allclose(c.W().array(), c2.W().array()));
}

TEST(Convolution2DLink, LazyNobiasAndInitializers) {
  L::Convolution2D c(0, 3, {2, 3}, {.stride = 2, .nobias = true, .initialW = std::make_shared<I::Constant>(0.5)});
  EXPECT_TRUE(c.W().array().is_null());
  EXPECT_TRUE(c.b().is_null());
  Variable x(Array::full({1, 2, 4, 5}, 1.0, Dtype::float32));
  Variable y = c(x);
  EXPECT_EQ(c.W().shape(), (Shape{3, 2, 2, 3}));
  EXPECT_EQ(y.shape(), (Shape{1, 3, 2, 2}));
  for (float v : y.array().to_vector<float>()) EXPECT_FLOAT_EQ(v, 0.5f * 12);  // 2 * 2 * 3 taps
  // LeCunNormal by default: std sqrt(1 / fan_in) with fan_in = 8 * 3 * 3.
  L::Convolution2D d(8, 64, 3, {.seed = 1});
  auto w = d.W().array().to_vector<float>();
  double s2 = 0;
  for (float v : w) s2 += double(v) * v;
  EXPECT_NEAR(s2 / w.size(), 1.0 / 72, 0.2 / 72);
}

TEST(Convolution2DLink, Errors) {
  expect_error<ValueError>([] { L::Convolution2D(3, 4, 3, {.groups = 2}); }, {"Convolution2D", "groups"});
  expect_error<ValueError>([] { L::Convolution2D(3, 4, 0); }, {"Convolution2D", "ksize"});
  expect_error<ValueError>([] { L::Convolution2D(-1, 4, 3); }, {"Convolution2D", "channels"});
  L::Convolution2D lazy(0, 4, 3);
  expect_error<ShapeError>([&] { lazy(Variable(randn({2, 3}, Dtype::float32))); }, {"Convolution2D", "(2, 3)"});
  L::Convolution2D c(3, 4, 3);
  expect_error<ShapeError>(
      [&] {
        c(Variable(randn({1, 2, 5, 5}, Dtype::float32)));
      },
      {"Convolution2D", "(1, 2, 5, 5)", "(4, 3, 3, 3)"});
}

TEST(Deconvolution2DLink, ParametersLazyAndForward) {
  L::Deconvolution2D d(0, 4, 3, {.stride = 2, .pad = 1, .seed = 2});
  EXPECT_TRUE(d.W().array().is_null());
  Variable x(randn({2, 6, 4, 4}, Dtype::float32, 3));
  Variable y = d(x);
  EXPECT_EQ(d.W().shape(), (Shape{6, 4, 3, 3}));
  EXPECT_EQ(y.shape(), (Shape{2, 4, 7, 7}));
  F::Deconv2dOptions o;
  o.stride = 2;
  o.pad = 1;
  EXPECT_TRUE(allclose(y.array(), F::deconvolution_2d(x, d.W(), d.b(), o).array()));
  L::Deconvolution2D out(6, 4, 3, {.stride = 2, .pad = 1, .outsize = F::Int2{8, 8}});
  EXPECT_EQ(out(x).shape(), (Shape{2, 4, 8, 8}));
  L::Deconvolution2D g(4, 6, 3, {.groups = 2});
  EXPECT_EQ(g.W().shape(), (Shape{4, 3, 3, 3}));
  expect_error<ValueError>([] { L::Deconvolution2D(3, 4, 3, {.groups = 2}); }, {"Deconvolution2D", "groups"});
}
