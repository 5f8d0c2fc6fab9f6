#include <cmath>
#include <vector>

#include "tests/unit/functions/conformance.h"
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

// ---- gaussian, gumbel_softmax, zoneout, simplified_dropconnect -----------------------------------

namespace {

std::vector<double> vals(const Variable& v) { return v.array().to_vector<double>(); }

}  // namespace

TEST(Gaussian, GivenAndReturnedEps) {
  const Variable mean(Array::from_vector<double>({1.0, -2.0, 0.5}));
  const Variable ln_var(Array::from_vector<double>({0.0, 2.0, -1.0}));
  Array eps = Array::from_vector<double>({0.5, -1.0, 2.0});
  const auto y = vals(F::gaussian(mean, ln_var, &eps));
  EXPECT_NEAR(y[0], 1.5, 1e-12);
  EXPECT_NEAR(y[1], -2.0 - std::exp(1.0), 1e-12);
  EXPECT_NEAR(y[2], 0.5 + 2.0 * std::exp(-0.5), 1e-12);
  // Drawn eps is returned and reproduces the output; the draws are standard normal.
  Array drawn;
  Generator g(5);
  const Variable big_mean(Array::zeros({20000}, Dtype::float64)), big_lv(Array::zeros({20000}, Dtype::float64));
  const auto z = vals(F::gaussian(big_mean, big_lv, &drawn, &g));
  ASSERT_EQ(drawn.shape(), (Shape{20000}));
  EXPECT_EQ(z, drawn.to_vector<double>());
  double m = 0, v = 0;
  for (double e : z) m += e / 20000;
  for (double e : z) v += (e - m) * (e - m) / 20000;
  EXPECT_NEAR(m, 0.0, 0.03);
  EXPECT_NEAR(v, 1.0, 0.05);
}

TEST(Gumbel, SamplesFollowTheCategorical) {
  // At a low temperature the argmax of a sample is a draw from softmax(log_pi).
  const std::vector<double> p{0.2, 0.5, 0.3};
  std::vector<double> logits;
  for (int i = 0; i < 4000; ++i) {
    for (double q : p) logits.push_back(std::log(q));
  }
  Generator g(11);
  const Variable y = F::gumbel_softmax(Variable(Array::from_vector(logits, {4000, 3})), 0.01, 1, &g);
  const auto am = F::argmax(y, 1).array().to_vector<int64_t>();
  std::vector<double> freq(3);
  for (int64_t c : am) freq[static_cast<std::size_t>(c)] += 1.0 / 4000;
  for (std::size_t c = 0; c < 3; ++c) EXPECT_NEAR(freq[c], p[c], 0.03) << "class " << c;
  // Rows sum to 1; a 0-d log_pi gives 1.
  const auto s = vals(F::sum(y, {1}));
  for (double e : s) ASSERT_NEAR(e, 1.0, 1e-9);
  EXPECT_EQ(vals(F::gumbel_softmax(Variable(Array::scalar(0.3)))), (std::vector<double>{1.0}));
}

TEST(Zoneout, MixesByRatioAndIsXInTest) {
  const Variable h(Array::full({10000}, 1.0, Dtype::float64)), x(Array::zeros({10000}, Dtype::float64));
  Generator g(2);
  double from_h = 0;
  for (double e : vals(F::zoneout(h, x, 0.3, &g))) {
    ASSERT_TRUE(e == 0.0 || e == 1.0);
    from_h += e / 10000;
  }
  EXPECT_NEAR(from_h, 0.3, 0.02);
  auto guard = using_config("train", false);
  EXPECT_EQ(vals(F::zoneout(h, x, 0.3)), vals(x));
}

TEST(SimplifiedDropconnect, GivenMaskMatchesAHandComputation) {
  const Variable x(Array::from_vector<double>({1.0, 2.0, -1.0, 0.5}, {2, 2}));
  const Variable W(Array::from_vector<double>({1.0, -1.0, 2.0, 0.5, 3.0, 1.0}, {3, 2}));
  const Variable b(Array::from_vector<double>({0.1, 0.2, 0.3}));
  // Per-sample masks: sample 0 keeps everything but W[0, 1]; sample 1 keeps only row 2.
  const Array mask = Array::from_vector<double>({1, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1}, {2, 3, 2});
  const auto y = vals(F::simplified_dropconnect(x, W, b, 0.5, mask));
  const std::vector<double> want{2 * (1.0) + 0.1, 2 * (2 + 1) + 0.2, 2 * (3 + 2) + 0.3, 0.1, 0.2,
                                 2 * (-3 + 0.5) + 0.3};
  ASSERT_EQ(y.size(), want.size());
  for (std::size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-12) << i;
  // In test mode ratio is 0: linear(x, W, b).
  auto guard = using_config("train", false);
  EXPECT_EQ(vals(F::simplified_dropconnect(x, W, b)), vals(F::linear(x, W, b)));
}

TEST(NoiseFamily, Conforms) {
  using rensa::test::FunctionCase;
  using Vars = std::vector<Variable>;
  Array eps = randn({3, 4}, Dtype::float64, 9);
  rensa::test::expect_conforms({.name = "gaussian",
                                .f = [eps](const Vars& v) {
                                  Array e = eps.astype(v[0].dtype());
                                  return Vars{F::gaussian(v[0], v[1], &e)};
                                },
                                .shapes = {{3, 4}, {3, 4}},
                                .size_zero = false,
                                .broadcast = false,
                                .big_leading = 3});
  rensa::test::expect_conforms({.name = "zoneout",
                                .f = [](const Vars& v) {
                                  // ratio 1 and 0 are deterministic: all from h, all from x.
                                  return Vars{F::zoneout(v[0], v[1], 1.0), F::zoneout(v[0], v[1], 0.0)};
                                },
                                .shapes = {{3, 4}, {3, 4}}});
  const Array dc_mask = Array::from_vector<double>({1, 0, 1, 1, 0, 1, 1, 1, 0, 1, 1, 0}, {2, 3, 2});
  rensa::test::expect_conforms({.name = "simplified_dropconnect",
                                .f = [dc_mask](const Vars& v) {
                                  return Vars{F::simplified_dropconnect(v[0], v[1], v[2], 0.25,
                                                                        dc_mask.astype(v[0].dtype()))};
                                },
                                .shapes = {{2, 2}, {3, 2}, {3}},
                                .size_zero = false,
                                .broadcast = false,
                                .big_leading = 2});
}

TEST(NoiseFamily, Errors) {
  const Variable a(randn({2, 3})), b(randn({2, 4}));
  expect_error<ShapeError>([&] { F::gaussian(a, b); }, {"gaussian", "mean (2, 3)", "ln_var (2, 4)"});
  Array bad_eps = Array::zeros({3}, Dtype::float64);
  expect_error<ShapeError>([&] { F::gaussian(a, a, &bad_eps); }, {"gaussian", "eps (3,)", "(2, 3)"});
  expect_error<ValueError>([&] { F::gumbel_softmax(a, 0.0); }, {"gumbel_softmax", "tau", "0"});
  expect_error<IndexError>([&] { F::gumbel_softmax(a, 1.0, 2); }, {"gumbel_softmax", "axis 2"});
  expect_error<ShapeError>([&] { F::zoneout(a, b); }, {"zoneout", "h (2, 3)", "x (2, 4)"});
  expect_error<ValueError>([&] { F::zoneout(a, a, 1.5); }, {"zoneout", "ratio", "1.5"});
  const Variable W(randn({4, 3}));
  expect_error<ValueError>([&] { F::simplified_dropconnect(a, W, Variable(), 1.0); },
                           {"simplified_dropconnect", "ratio", "1"});
  expect_error<ShapeError>([&] { F::simplified_dropconnect(b, W); }, {"simplified_dropconnect", "(2, 4)", "(4, 3)"});
  expect_error<ShapeError>([&] { F::simplified_dropconnect(a, W, Variable(), 0.5, Array::ones({4, 3})); },
                           {"simplified_dropconnect", "mask (4, 3)", "(2, 4, 3)"});
  expect_error<ShapeError>([&] { F::simplified_dropconnect(a, W, Variable(randn({3}))); },
                           {"simplified_dropconnect", "b (3,)", "(4,)"});
}
