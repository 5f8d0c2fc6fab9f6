// decorrelated_batch_normalization and fixed_decorrelated_batch_normalization: Chainer's values,
// whitened outputs, gradients (also at repeated eigenvalues), running statistics and errors.
#include <cmath>
#include <vector>

#include "tests/unit/functions/chainer_decorrelated_batch_normalization_values.h"
#include "tests/unit/functions/conformance.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
using rensa::test::expect_error;
using rensa::test::FunctionCase;
using rensa::test::randn;
using rensa::testing::check_backward;
using rensa::testing::TestFunction;

namespace {

// x.flat[k] = ((a k^2 + b k) mod m) / 7 - 2: exact inputs both here and in the Chainer script.
Array modular(const Shape& shape, int64_t a, int64_t b, int64_t m) {
  std::vector<double> v(static_cast<std::size_t>(shape.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto k = static_cast<int64_t>(i);
    v[i] = static_cast<double>((a * k * k + b * k) % m) / 7.0 - 2.0;
  }
  return Array::from_vector(v, shape);
}

void expect_values(const Array& a, const std::vector<double>& expected, double tol) {
  const auto got = a.astype(Dtype::float64).to_vector<double>();
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], tol) << "element " << i;
}

TestFunction dbn_fn(int64_t groups) {
  return [groups](const std::vector<Variable>& v) {
    return std::vector<Variable>{F::decorrelated_batch_normalization(v[0], groups)};
  };
}

// Per group, the covariance of y over the positions (mean removed) and the mean, for x (N, C, ...).
void expect_whitened(const Array& y, int64_t groups, double tol) {
  const int64_t c = y.shape()[1], per = c / groups, m = y.size() / c;
  const auto v = F::transpose(Variable(y), {1, 0, 2, 3}).array().copy().astype(Dtype::float64).to_vector<double>();
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t i = 0; i < per; ++i) {
      double mean = 0.0;
      for (int64_t k = 0; k < m; ++k) mean += v[static_cast<std::size_t>((g * per + i) * m + k)];
      EXPECT_NEAR(mean / static_cast<double>(m), 0.0, tol);
      for (int64_t j = 0; j < per; ++j) {
        double cov = 0.0;
        for (int64_t k = 0; k < m; ++k) {
          cov +=
              v[static_cast<std::size_t>((g * per + i) * m + k)] * v[static_cast<std::size_t>((g * per + j) * m + k)];
        }
        EXPECT_NEAR(cov / static_cast<double>(m), i == j ? 1.0 : 0.0, tol)
            << "group " << g << " (" << i << ", " << j << ")";
      }
    }
  }
}

TEST(DecorrelatedBatchNormalization, ChainerValues) {
  const Variable x(modular({4, 6, 3}, 5, 11, 31), true);
  Array rm = Array::zeros({2, 3}, Dtype::float64);
  Array rp;  // null: set to identity matrices, as Chainer's link starts
  const Variable y = F::decorrelated_batch_normalization(x, 2, 2e-5, &rm, &rp, 0.9);
  expect_values(y.array(), test::kChainerY, 1e-12);
  expect_values(rm, test::kChainerRunningMean, 1e-15);
  expect_values(rp, test::kChainerRunningProjection, 1e-12);
  rensa::backward({y}, {Variable(modular({4, 6, 3}, 3, 17, 37))});
  expect_values(x.grad().array(), test::kChainerGx, 1e-11);
  const Variable yf = F::fixed_decorrelated_batch_normalization(x, Variable(rm), Variable(rp), 2);
  expect_values(yf.array(), test::kChainerFixedY, 1e-12);
}

TEST(DecorrelatedBatchNormalization, OutputIsWhitenedPerGroup) {
  // Correlated channels: x = z A with a random mixing of the 6 channels.
  const Array z = randn({16, 6, 2, 3}, Dtype::float64, 3);
  const Array mix = randn({6, 6}, Dtype::float64, 4);
  const Array x = F::transpose(F::matmul(F::transpose(Variable(z), {0, 2, 3, 1}), Variable(mix)), {0, 3, 1, 2}).array();
  for (int64_t groups : {1, 2, 3, 6}) {
    SCOPED_TRACE(groups);
    // eps 1e-12: the covariance is I - eps Sigma^-1, the identity to rounding.
    expect_whitened(F::decorrelated_batch_normalization(Variable(x), groups, 1e-12).array(), groups, 1e-9);
    expect_whitened(F::decorrelated_batch_normalization(Variable(x.astype(Dtype::float32)), groups, 1e-12).array(),
                    groups, 2e-4);
  }
}

// The cpu-vs-reference check's batches hold about 17,500 rows per group: the covariance sums that
// many products.
constexpr int64_t kDbnAccumulation = 17502;

TEST(DecorrelatedBatchNormalization, Conformance) {
  // Broadcast inputs (repeated rows) and size 0 have no covariance to whiten; Chainer has no
  // double backprop.
  for (const Shape& shape : {Shape{7, 4}, Shape{5, 4, 3}, Shape{3, 6, 2, 2}}) {
    FunctionCase c{.name = "decorrelated_batch_normalization",
                   .f = dbn_fn(2),
                   .shapes = {shape},
                   .double_backward = false,
                   .size_zero = false,
                   .broadcast = false,
                   .accumulation = kDbnAccumulation};
    SCOPED_TRACE(::testing::PrintToString(shape));
    rensa::test::expect_conforms(c);
  }
  rensa::test::expect_conforms({.name = "decorrelated_batch_normalization groups 1",
                                .f = dbn_fn(1),
                                .shapes = {{6, 3, 2}},
                                .double_backward = false,
                                .size_zero = false,
                                .broadcast = false,
                                .accumulation = kDbnAccumulation});
}

TEST(DecorrelatedBatchNormalization, GradientAtRepeatedEigenvalues) {
  // Each group's covariance is exactly 0.5 I (+ eps): every eigenvalue repeated. The gradient
  // through the eigendecomposition stays exact there (Chainer drops the tied terms).
  const Array x = Array::from_vector(std::vector<double>{1, 0, 2, 0, -1, 0, -2, 0, 0, 1, 0, 2, 0, -1, 0, -2}, {4, 4});
  check_backward(dbn_fn(2), {x}, {}, {.eps = 1e-4, .atol = 1e-7, .rtol = 1e-6});
  const Array one_channel = randn({5, 1, 3}, Dtype::float64, 8);
  check_backward(dbn_fn(1), {one_channel});
}

TEST(DecorrelatedBatchNormalization, DoubleBackpropThrows) {
  const Variable x(randn({5, 4}, Dtype::float64, 2), true);
  const Variable y = F::sum(F::mul(F::decorrelated_batch_normalization(x, 2), Variable(randn({5, 4}))));
  expect_error<NotImplementedError>([&] { rensa::grad({y}, {x}, {}, GradOptions{.enable_double_backprop = true}); },
                                    {"decorrelated_batch_normalization", "double backprop"});
}

TEST(DecorrelatedBatchNormalization, RunningStatisticsAndHalfPrecision) {
  const Array x = randn({8, 4, 3}, Dtype::float64, 6);
  // Float32 statistics are updated in their own dtype from a float64 x.
  Array rm = Array::full({2, 2}, 1.0, Dtype::float32), rp;
  F::decorrelated_batch_normalization(Variable(x), 2, 2e-5, &rm, &rp, 0.5);
  EXPECT_EQ(rm.dtype(), Dtype::float32);
  EXPECT_EQ(rp.dtype(), Dtype::float64);
  const auto xm = F::mean(F::reshape(F::transpose(Variable(x), {1, 0, 2}), {2, 2, 24}), Shape{2}).array();
  expect_values(rm, F::add(F::mul(Variable(xm), 0.5), 0.5).array().to_vector<double>(), 1e-6);
  // decay 1 keeps them; no pointers update nothing.
  const Array before = rp.copy();
  F::decorrelated_batch_normalization(Variable(x), 2, 2e-5, nullptr, &rp, 1.0);
  expect_values(rp, before.to_vector<double>(), 0.0);
  // 16-bit x computes in float32 and returns its own dtype.
  const Variable yh = F::decorrelated_batch_normalization(Variable(x.astype(Dtype::float16)), 2);
  EXPECT_EQ(yh.dtype(), Dtype::float16);
  expect_values(yh.array(), F::decorrelated_batch_normalization(Variable(x), 2).array().to_vector<double>(), 2e-2);
}

TEST(FixedDecorrelatedBatchNormalization, Conformance) {
  // Any projection (not only symmetric ones): mean (2, 2) and projection (2, 2, 2) for 4 channels.
  rensa::test::expect_conforms({.name = "fixed_decorrelated_batch_normalization",
                                .f =
                                    [](const std::vector<Variable>& v) {
                                      return std::vector<Variable>{
                                          F::fixed_decorrelated_batch_normalization(v[0], v[1], v[2], 2)};
                                    },
                                .shapes = {{5, 4, 3}, {2, 2}, {2, 2, 2}},
                                .batched = {true, false, false}});
}

TEST(DecorrelatedBatchNormalization, Errors) {
  const Variable x(randn({4, 6, 2}));
  expect_error<ShapeError>([&] { F::decorrelated_batch_normalization(x, 4); },
                           {"decorrelated_batch_normalization", "groups 4", "6 channels", "(4, 6, 2)"});
  expect_error<ShapeError>([&] { F::decorrelated_batch_normalization(Variable(randn({6})), 2); },
                           {"decorrelated_batch_normalization", "(6,)", "at least 2"});
  expect_error<ValueError>([&] { F::decorrelated_batch_normalization(x, 0); },
                           {"decorrelated_batch_normalization", "groups", "positive"});
  expect_error<ValueError>([&] { F::decorrelated_batch_normalization(x, 2, 0.0); },
                           {"decorrelated_batch_normalization", "eps"});
  expect_error<ValueError>([&] { F::decorrelated_batch_normalization(x, 2, 2e-5, nullptr, nullptr, 1.5); },
                           {"decorrelated_batch_normalization", "decay"});
  expect_error<ValueError>(
      [&] {
        F::decorrelated_batch_normalization(Variable(randn({0, 6})), 2);
      },
      {"decorrelated_batch_normalization", "(0, 6)", "no position"});
  auto with_nan = randn({4, 6, 2}).to_vector<double>();
  with_nan[17] = std::nan("");
  expect_error<ValueError>(
      [&] {
        F::decorrelated_batch_normalization(Variable(Array::from_vector(with_nan, {4, 6, 2})), 2);
      },
      {"decorrelated_batch_normalization", "(4, 6, 2)", "eigh", "non-finite"});
  Array bad_mean = Array::zeros({3, 2}, Dtype::float64);
  expect_error<ShapeError>([&] { F::decorrelated_batch_normalization(x, 2, 2e-5, &bad_mean); },
                           {"decorrelated_batch_normalization", "running_mean", "(3, 2)", "(2, 3)", "(4, 6, 2)"});
  Array bad_projection = Array::zeros({2, 3}, Dtype::float64);
  expect_error<ShapeError>([&] { F::decorrelated_batch_normalization(x, 2, 2e-5, nullptr, &bad_projection); },
                           {"running_projection", "(2, 3)", "(2, 3, 3)"});
  expect_error<DtypeError>(
      [&] {
        F::decorrelated_batch_normalization(Variable(Array::zeros({2, 2}, Dtype::int32)), 1);
      },
      {"decorrelated_batch_normalization", "int32"});

  const Variable mean(Array::zeros({2, 3}, Dtype::float64)), projection(randn({2, 3, 3}));
  expect_error<ShapeError>([&] { F::fixed_decorrelated_batch_normalization(x, mean, projection, 3); },
                           {"fixed_decorrelated_batch_normalization", "mean (2, 3)", "projection (2, 3, 3)", "(3, 2)",
                            "(3, 2, 2)", "(4, 6, 2)"});
  expect_error<ShapeError>([&] { F::fixed_decorrelated_batch_normalization(x, mean, projection, 4); },
                           {"fixed_decorrelated_batch_normalization", "groups 4", "6 channels"});
  expect_error<DtypeError>(
      [&] {
        F::fixed_decorrelated_batch_normalization(x, Variable(mean.array().astype(Dtype::float32)), projection, 2);
      },
      {"fixed_decorrelated_batch_normalization"});
}

}  // namespace
