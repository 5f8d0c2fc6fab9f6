// links::Linear: parameters, initialization, lazy in_size, forward and gradients.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "rensa/links/linear.h"
#include "rensa/serializers/npz.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
namespace L = rensa::links;
namespace I = rensa::initializers;
using rensa::test::expect_error;
using rensa::test::randn;

TEST(Linear, ParametersShapesAndDefaults) {
  L::Linear l(3, 2, {.seed = 0});
  EXPECT_EQ(l.in_size(), 3);
  EXPECT_EQ(l.out_size(), 2);
  EXPECT_EQ(l.W().shape(), (Shape{2, 3}));
  EXPECT_EQ(l.W().dtype(), Dtype::float32);
  EXPECT_TRUE(l.W().requires_grad());
  EXPECT_EQ(l.b().shape(), (Shape{2}));
  EXPECT_EQ(l.b().array().to_vector<float>(), (std::vector<float>{0.0f, 0.0f}));
  ASSERT_EQ(l.namedparams().size(), 2u);
  EXPECT_EQ(l.namedparams()[0].first, "/W");
  EXPECT_EQ(l.namedparams()[1].first, "/b");
  EXPECT_TRUE(l.namedparams()[0].second.is(l.W()));

  L::Linear nb(3, 2, {.nobias = true});
  EXPECT_TRUE(nb.b().is_null());
  ASSERT_EQ(nb.namedparams().size(), 1u);
  EXPECT_EQ(nb.namedparams()[0].first, "/W");

  auto c = std::make_shared<I::Constant>(0.25);
  L::Linear k(2, 2, {.initialW = c, .initial_bias = std::make_shared<I::One>()});
  for (float w : k.W().array().to_vector<float>()) EXPECT_EQ(w, 0.25f);
  for (float b : k.b().array().to_vector<float>()) EXPECT_EQ(b, 1.0f);

  // The Config dtype at construction decides the parameters' dtype.
  auto guard = using_config("dtype", Dtype::float64);
  L::Linear d(3, 2);
  EXPECT_EQ(d.W().dtype(), Dtype::float64);
  EXPECT_EQ(d.b().dtype(), Dtype::float64);
}

TEST(Linear, DefaultInitializerIsLeCunNormal) {
  L::Linear l(1000, 200, {.seed = 4});
  const auto w = l.W().array().to_vector<double>();
  double sum = 0, sq = 0;
  for (double x : w) sum += x;
  const double mean = sum / static_cast<double>(w.size());
  for (double x : w) sq += (x - mean) * (x - mean);
  const double want = std::sqrt(1.0 / 1000);
  EXPECT_NEAR(std::sqrt(sq / static_cast<double>(w.size())), want, 0.02 * want);
  EXPECT_NEAR(mean, 0.0, 5 * want / std::sqrt(static_cast<double>(w.size())));
}

TEST(Linear, SeedsAndTheDefaultGenerator) {
  L::Linear a(5, 4, {.seed = 7}), b(5, 4, {.seed = 7}), c(5, 4, {.seed = 8});
  EXPECT_TRUE(array_equal(a.W().array(), b.W().array()));
  EXPECT_FALSE(array_equal(a.W().array(), c.W().array()));
  // Without a seed the thread's default generator is used, and advanced.
  rensa::seed(11);
  L::Linear d(5, 4);
  EXPECT_EQ(default_generator().offset(), 20u);
  rensa::seed(11);
  L::Linear e(5, 4);
  EXPECT_TRUE(array_equal(d.W().array(), e.W().array()));
  // The same as drawing LeCunNormal from Generator(11) directly.
  Array w = Array::empty({4, 5});
  Generator g(11);
  I::LeCunNormal()(w, g);
  EXPECT_TRUE(array_equal(d.W().array(), w));
}

TEST(Linear, LazyInSizeFromFirstInput) {
  L::Linear lazy(4, {.seed = 3});
  EXPECT_EQ(lazy.in_size(), -1);
  EXPECT_TRUE(lazy.W().array().is_null());
  EXPECT_EQ(lazy.b().shape(), (Shape{4}));
  ASSERT_EQ(lazy.namedparams().size(), 2u);
  ASSERT_EQ(lazy.namedparams(false).size(), 1u);
  const Variable W = lazy.W();
  Variable x(randn({2, 3, 5}, Dtype::float32, 2));
  Variable y = lazy(x);
  EXPECT_EQ(lazy.in_size(), 15);
  EXPECT_EQ(lazy.W().shape(), (Shape{4, 15}));
  EXPECT_TRUE(lazy.W().is(W));  // the same registered variable, now initialized
  EXPECT_EQ(y.shape(), (Shape{2, 4}));
  // Drawn exactly as an eager link with the same seed.
  L::Linear eager(15, 4, {.seed = 3});
  EXPECT_TRUE(array_equal(lazy.W().array(), eager.W().array()));
  EXPECT_TRUE(allclose(y.array(), eager(x).array()));
  // A later input of another size is a shape error from linear.
  expect_error<ShapeError>([&] { lazy(Variable(randn({2, 7}, Dtype::float32))); }, {"linear", "(2, 7)", "(4, 15)"});
  // Size-0 batch still infers in_size.
  L::Linear lazy0(3);
  EXPECT_EQ(lazy0(Variable(Array::zeros({0, 6}))).shape(), (Shape{0, 3}));
  EXPECT_EQ(lazy0.in_size(), 6);
}

TEST(Linear, ForwardEqualsFunctionalLinear) {
  L::Linear l(6, 3, {.seed = 1});
  Array b = randn({3}, Dtype::float32, 9);
  l.b().array().assign(b);
  Variable x(randn({4, 6}, Dtype::float32, 5));
  EXPECT_TRUE(array_equal(l(x).array(), F::linear(x, l.W(), l.b()).array()));
  // Hand-computed check of one element.
  const auto xv = x.array().to_vector<double>();
  const auto wv = l.W().array().to_vector<double>();
  double y01 = b.to_vector<double>()[1];
  for (int k = 0; k < 6; ++k) y01 += xv[static_cast<std::size_t>(k)] * wv[static_cast<std::size_t>(6 + k)];
  EXPECT_NEAR(l(x).array().at<double>({0, 1}), y01, 1e-5);
  L::Linear nb(6, 3, {.nobias = true, .seed = 1});
  EXPECT_TRUE(array_equal(nb(x).array(), F::linear(x, nb.W()).array()));
}

TEST(Linear, GradientsFlowToWAndB) {
  auto guard = using_config("dtype", Dtype::float64);
  L::Linear l(3, 2, {.seed = 2});
  Array xa = randn({4, 3}, Dtype::float64, 3);
  Variable x(xa, true);
  Array gy = randn({4, 2}, Dtype::float64, 4);
  Variable y = l(x);
  y.set_grad(Variable(gy));
  y.backward();
  ASSERT_FALSE(l.W().grad().is_null());
  ASSERT_FALSE(l.b().grad().is_null());
  // gW = gy^T x, gb = sum_n gy, gx = gy W.
  const auto g = gy.to_vector<double>(), xv = xa.to_vector<double>(), w = l.W().array().to_vector<double>();
  const auto gW = l.W().grad().array().to_vector<double>(), gb = l.b().grad().array().to_vector<double>();
  const auto gx = x.grad().array().to_vector<double>();
  for (int o = 0; o < 2; ++o) {
    double sb = 0;
    for (int n = 0; n < 4; ++n) sb += g[static_cast<std::size_t>(n * 2 + o)];
    EXPECT_NEAR(gb[static_cast<std::size_t>(o)], sb, 1e-12);
    for (int i = 0; i < 3; ++i) {
      double s = 0;
      for (int n = 0; n < 4; ++n) s += g[static_cast<std::size_t>(n * 2 + o)] * xv[static_cast<std::size_t>(n * 3 + i)];
      EXPECT_NEAR(gW[static_cast<std::size_t>(o * 3 + i)], s, 1e-12);
    }
  }
  for (int n = 0; n < 4; ++n) {
    for (int i = 0; i < 3; ++i) {
      double s = 0;
      for (int o = 0; o < 2; ++o) s += g[static_cast<std::size_t>(n * 2 + o)] * w[static_cast<std::size_t>(o * 3 + i)];
      EXPECT_NEAR(gx[static_cast<std::size_t>(n * 3 + i)], s, 1e-12);
    }
  }
}

TEST(Linear, Errors) {
  expect_error<ValueError>([] { L::Linear(-1, 2); }, {"Linear", "in_size", "-1"});
  expect_error<ValueError>([] { L::Linear(-3); }, {"Linear", "out_size", "-3"});
  {
    auto guard = using_config("dtype", Dtype::int32);
    expect_error<DtypeError>([] { L::Linear(2, 2); }, {"Linear", "int32"});
  }
  L::Linear l(3, 2);
  expect_error<ShapeError>([&] { l(Variable(Array::zeros({2, 4}))); }, {"linear", "(2, 4)", "(2, 3)"});
  expect_error<DtypeError>([&] { l(Variable(Array::zeros({2, 3}, Dtype::float64))); }, {"linear"});
  L::Linear lazy(2);
  expect_error<ShapeError>([&] { lazy(Variable(Array::scalar(1.0))); }, {"Linear", "in_size", "()"});
}

// A lazy link loading a file of another dtype casts to its own, as Chainer (regression: W kept
// float64 while b stayed float32, and the first forward threw).
TEST(Linear, LazyLoadCastsToItsDtype) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("rensa_lazy_linear_" + std::to_string(::getpid()) + ".npz");
  {
    auto guard = using_config("dtype", Dtype::float64);
    L::Linear saved(3, 2, {.seed = 1});
    serializers::save_npz(path.string(), saved);
  }
  L::Linear lazy(2);
  serializers::load_npz(path.string(), lazy);
  std::filesystem::remove(path);
  EXPECT_EQ(lazy.W().dtype(), Dtype::float32);
  EXPECT_EQ(lazy.W().shape(), (Shape{2, 3}));
  EXPECT_EQ(lazy.b().dtype(), Dtype::float32);
  EXPECT_EQ(lazy(Variable(Array::ones({4, 3}))).dtype(), Dtype::float32);
  Link plain;
  expect_error<DtypeError>([&] { plain.add_param("w", Dtype::int32); }, {"add_param", "'w'", "int32"});
}
