// links::Bilinear: parameters and their initializers, forward against the function, gradients,
// .npz keys and errors.
#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "rensa/functions/bilinear.h"
#include "rensa/links/bilinear.h"
#include "tests/unit/links/connection_test_util.h"

using namespace rensa;
namespace F = rensa::functions;
namespace L = rensa::links;
namespace I = rensa::initializers;
using rensa::test::expect_error;
using rensa::test::mean_square;
using rensa::test::randn;

TEST(BilinearLink, ParametersAndForward) {
  L::Bilinear l(3, 4, 5, {.seed = 1});
  std::vector<std::string> paths;
  for (const auto& [path, v] : l.namedparams()) paths.push_back(path);
  EXPECT_EQ(paths, (std::vector<std::string>{"/W", "/V1", "/V2", "/b"}));
  EXPECT_EQ(l.W().shape(), (Shape{3, 4, 5}));
  EXPECT_EQ(l.V1().shape(), (Shape{3, 5}));
  EXPECT_EQ(l.V2().shape(), (Shape{4, 5}));
  EXPECT_EQ(l.b().shape(), (Shape{5}));
  EXPECT_EQ(mean_square(l.b().array()), 0.0);
  const Variable e1(randn({2, 3}, Dtype::float32, 2)), e2(randn({2, 2, 2}, Dtype::float32, 3));
  const Variable y = l(e1, e2);
  EXPECT_EQ(y.shape(), (Shape{2, 5}));
  EXPECT_TRUE(array_equal(y.array(), F::bilinear(e1, e2, l.W(), l.V1(), l.V2(), l.b()).array()));
  EXPECT_TRUE(array_equal(l.forward({e1, e2}).array(), y.array()));
  L::Bilinear nobias(3, 4, 5, {.nobias = true});
  EXPECT_EQ(nobias.namedparams().size(), 1u);
  EXPECT_TRUE(nobias.V1().is_null() && nobias.V2().is_null() && nobias.b().is_null());
  EXPECT_TRUE(array_equal(nobias(e1, e2).array(), F::bilinear(e1, e2, nobias.W()).array()));
}

TEST(BilinearLink, Initializers) {
  // LeCunNormal by Chainer's fans: W (J, K, L) has fan_in K L, V1 (J, L) fan_in L.
  L::Bilinear big(40, 30, 20, {.seed = 2});
  EXPECT_NEAR(mean_square(big.W().array()), 1.0 / 600, 0.1 / 600);
  EXPECT_NEAR(mean_square(big.V1().array()), 1.0 / 20, 0.2 / 20);
  const auto half = std::make_shared<I::Constant>(0.5);
  L::Bilinear tuple(2, 3, 4,
                    {.initialW = half,
                     .initial_bias = std::array<std::shared_ptr<const I::Initializer>, 3>{std::make_shared<I::One>(),
                                                                                          nullptr, half}});
  EXPECT_EQ(mean_square(tuple.W().array()), 0.25);
  EXPECT_EQ(mean_square(tuple.V1().array()), 1.0);
  EXPECT_NE(mean_square(tuple.V2().array()), 0.0);  // a null entry is LeCunNormal, as Chainer
  EXPECT_EQ(mean_square(tuple.b().array()), 0.25);
  L::Bilinear same(2, 3, 4, {.seed = 3}), again(2, 3, 4, {.seed = 3});
  rensa::test::expect_same_params(same, again);
}

TEST(BilinearLink, GradientsAndNpz) {
  auto guard = using_config("dtype", Dtype::float64);
  L::Bilinear l(3, 2, 4, {.seed = 4});
  const Variable e1(randn({2, 3}, Dtype::float64, 5)), e2(randn({2, 2}, Dtype::float64, 6));
  rensa::test::expect_param_grads(l, [&] { return rensa::test::weighted_sum({l(e1, e2)}); });
  L::Bilinear loaded(3, 2, 4);
  EXPECT_EQ(rensa::test::npz_round_trip(l, loaded), (std::vector<std::string>{"V1", "V2", "W", "b"}));
}

TEST(BilinearLink, Errors) {
  expect_error<ValueError>([] { L::Bilinear(0, 2, 3); }, {"Bilinear", "left 0"});
  L::Bilinear l(3, 2, 4);
  expect_error<ShapeError>(
      [&] {
        l(Variable(randn({2, 4}, Dtype::float32)), Variable(randn({2, 2}, Dtype::float32)));
      },
      {"Bilinear", "bilinear", "(2, 4)", "(3, 2, 4)"});
  expect_error<ValueError>([&] { l.forward(std::vector<Variable>{Variable(randn({2, 3}))}); }, {"Bilinear", "e2"});
}
