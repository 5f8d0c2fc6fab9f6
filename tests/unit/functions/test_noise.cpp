#include <cmath>
#include <vector>

#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
using rensa::test::expect_cpu_matches_reference;
using rensa::test::expect_error;
using rensa::test::randn;
using rensa::testing::check_backward;
using rensa::testing::check_double_backward;
using rensa::testing::make_noncontiguous;

TEST(Dropout, FractionOfZerosAndScale) {
  const double ratio = 0.3;
  Generator g(11);
  Variable x(Array::ones({100000}, Dtype::float32));
  auto v = F::dropout(x, ratio, &g).array().to_vector<double>();
  int64_t zeros = 0;
  double sum = 0.0;
  for (double e : v) {
    if (e == 0.0) {
      ++zeros;
    } else {
      EXPECT_NEAR(e, 1.0 / (1.0 - ratio), 1e-6);
    }
    sum += e;
  }
  // Binomial standard deviation of the fraction is about 0.0015; 0.01 is far outside it.
  EXPECT_NEAR(static_cast<double>(zeros) / 1e5, ratio, 0.01);
  // The scaling keeps the expected value.
  EXPECT_NEAR(sum / 1e5, 1.0, 0.02);
}

TEST(Dropout, SameSeedSameMask) {
  Array x = randn({64, 33}, Dtype::float32);
  Generator g1(5), g2(5), g3(6);
  Array a = F::dropout(Variable(x), 0.5, &g1).array();
  Array b = F::dropout(Variable(x), 0.5, &g2).array();
  Array c = F::dropout(Variable(x), 0.5, &g3).array();
  EXPECT_TRUE(array_equal(a, b));
  EXPECT_FALSE(array_equal(a, c));
  // The generator advances: a second draw from g1 differs from the first.
  EXPECT_FALSE(array_equal(a, F::dropout(Variable(x), 0.5, &g1).array()));
  // The thread's default generator is reproducible through rensa::seed.
  rensa::seed(42);
  Array d1 = F::dropout(Variable(x), 0.5).array();
  rensa::seed(42);
  Array d2 = F::dropout(Variable(x), 0.5).array();
  EXPECT_TRUE(array_equal(d1, d2));
}

TEST(Dropout, IdentityInTestModeOrWithRatioZero) {
  Variable x(randn({4, 5}), true);
  {
    auto guard = using_config("train", false);
    EXPECT_TRUE(F::dropout(x, 0.5).is(x));
  }
  EXPECT_TRUE(F::dropout(x, 0.0).is(x));
}

TEST(Dropout, GradientIsTheMask) {
  Variable x(randn({50, 20}), true);
  Generator g(3);
  Variable y = F::dropout(x, 0.25, &g);
  F::sum(y).backward();
  auto xv = x.array().to_vector<double>(), yv = y.array().to_vector<double>(),
       gv = x.grad().array().to_vector<double>();
  for (std::size_t i = 0; i < xv.size(); ++i) {
    const double expected = yv[i] == 0.0 ? 0.0 : 1.0 / 0.75;
    EXPECT_NEAR(gv[i], expected, 1e-12) << i;
  }
}

TEST(Dropout, Backward) {
  // The same seeded generator each call, so every evaluation draws the same mask.
  auto f = [](const Variable& x) {
    Generator g(123);
    return F::dropout(x, 0.4, &g);
  };
  Array x = randn({6, 7});
  check_backward(f, x);
  check_backward(f, make_noncontiguous(x));
  check_backward(f, Array::zeros({0, 3}, Dtype::float64), Array::zeros({0, 3}, Dtype::float64));
  auto fv = [f](const std::vector<Variable>& v) { return std::vector<Variable>{f(v[0])}; };
  check_double_backward(fv, {x}, {randn({6, 7}, Dtype::float64, 2)});
  check_double_backward(fv, {make_noncontiguous(x)}, {randn({6, 7}, Dtype::float64, 3)});
}

TEST(Dropout, CpuMatchesReference) {
  auto f = [](const std::vector<Variable>& v) {
    Generator g(9);
    Variable x(v[0].array(), true);
    Variable y = F::dropout(x, 0.5, &g);
    F::sum(y).backward();
    return std::vector<Variable>{y, x.grad()};
  };
  expect_cpu_matches_reference(f, {randn({200, 200}, Dtype::float32, 4)});
  expect_cpu_matches_reference(f, {make_noncontiguous(randn({20, 30}, Dtype::float32, 5))});
}

TEST(Dropout, HalfPrecision) {
  Generator g(1);
  Array y = F::dropout(Variable(Array::ones({1000}, Dtype::float16)), 0.5, &g).array();
  EXPECT_EQ(y.dtype(), Dtype::float16);
  int64_t zeros = 0;
  for (double e : y.to_vector<double>()) {
    EXPECT_TRUE(e == 0.0 || e == 2.0) << e;
    zeros += e == 0.0;
  }
  EXPECT_NEAR(static_cast<double>(zeros) / 1000.0, 0.5, 0.08);
}

TEST(Dropout, Errors) {
  Variable x(randn({2, 3}));
  expect_error<ValueError>([&] { F::dropout(x, 1.0); }, {"dropout", "ratio", "1"});
  expect_error<ValueError>([&] { F::dropout(x, -0.1); }, {"dropout", "ratio", "-0.1"});
  expect_error<DtypeError>(
      [&] {
        F::dropout(Variable(Array::zeros({2, 3}, Dtype::int32)), 0.5);
      },
      {"dropout", "int32", "(2, 3)"});
}
