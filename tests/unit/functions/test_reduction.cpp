// Tests of the reductions (reduction.h): gradients over many axis sets (first and second order, on
// contiguous, non-contiguous and size-0 inputs), cpu against the reference backend, known values,
// result dtypes, and the errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "rensa/rensa.h"
#include "rensa/testing/gradient_check.h"
#include "tests/unit/functions/conformance.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
using rensa::test::expect_cpu_matches_reference;
using rensa::test::expect_error;
using rensa::test::randn;
using rensa::test::randu;
using rensa::testing::TestFunction;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

using Reduce = std::function<Variable(const Variable&, const Shape&, bool)>;

struct Reduction {
  const char* name;
  Reduce fn;
  bool distinct;  // needs inputs without ties (max, min)
};

const std::vector<Reduction>& reductions() {
  static const std::vector<Reduction> list = {
      {"sum", [](const Variable& x, const Shape& a, bool k) { return F::sum(x, a, k); }, false},
      {"mean", [](const Variable& x, const Shape& a, bool k) { return F::mean(x, a, k); }, false},
      {"max", [](const Variable& x, const Shape& a, bool k) { return F::max(x, a, k); }, true},
      {"min", [](const Variable& x, const Shape& a, bool k) { return F::min(x, a, k); }, true},
      {"logsumexp", [](const Variable& x, const Shape& a, bool k) { return F::logsumexp(x, a, k); }, false},
  };
  return list;
}

// A shuffled arithmetic progression: no two elements within 0.25 of each other, so max/min have
// no ties and gradient checks do not cross a switch of the maximum.
Array distinct(const Shape& shape, uint64_t seed, Dtype dtype = Dtype::float64) {
  const auto n = static_cast<std::size_t>(shape.numel());
  std::vector<double> v(n);
  std::iota(v.begin(), v.end(), 0.0);
  std::mt19937_64 rng(seed);
  std::shuffle(v.begin(), v.end(), rng);
  for (double& e : v) e = e * 0.25 - static_cast<double>(n) * 0.125;
  return Array::from_vector(v, shape).astype(dtype);
}

Array input_for(const Reduction& r, const Shape& shape, uint64_t seed, Dtype dtype = Dtype::float64) {
  return r.distinct ? distinct(shape, seed, dtype) : randn(shape, Dtype::float64, seed).astype(dtype);
}

std::string describe(const Array& x, const Shape& axes, bool keepdims) {
  return to_string(x.shape()) + (x.is_contiguous() ? "" : " non-contiguous") + " axes " + to_string(axes) +
         (keepdims ? " keepdims" : "");
}

void expect_gradients(const std::string& label, const TestFunction& f, const Array& x, bool double_backward = true) {
  for (const Array& in : {x, rensa::testing::make_noncontiguous(x)}) {
    try {
      rensa::testing::check_backward(f, {in});
    } catch (const std::exception& e) {
      ADD_FAILURE() << label << " backward" << (in.is_contiguous() ? "" : " (non-contiguous)") << ": " << e.what();
    }
  }
  if (!double_backward) return;
  const Variable y = f({Variable(x)})[0];
  try {
    rensa::testing::check_double_backward(f, {x}, {randn(y.shape(), Dtype::float64, 77)});
  } catch (const std::exception& e) {
    ADD_FAILURE() << label << " double backward: " << e.what();
  }
}

std::vector<double> values(const Variable& v) {
  return v.array().to(Device::cpu()).to_vector<double>();
}

void expect_values(const Variable& v, const std::vector<double>& expected, double tol = 1e-12) {
  const auto got = values(v);
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i << " is " << got[i];
    } else if (std::isinf(expected[i])) {
      EXPECT_EQ(got[i], expected[i]) << "element " << i;
    } else {
      EXPECT_NEAR(got[i], expected[i], tol * std::max(1.0, std::abs(expected[i]))) << "element " << i;
    }
  }
}

const std::vector<Shape>& axis_sets() {
  static const std::vector<Shape> list = {{},     {0},    {1},     {2},       {-1},    {0, 1},
                                          {1, 2}, {0, 2}, {2, -3}, {0, 1, 2}, {-1, -2}};
  return list;
}

// The cpu-against-reference tolerance of reducing an input of `shape` over `axes` (all if empty),
// and of its gradient: max and min pick an element (without ties), exact; the others sum the
// reduced elements (16-bit floats in float32, rounded once).
rensa::test::Tolerance reduction_tolerance(const Reduction& r, const Shape& shape, const Shape& axes, Dtype dtype) {
  if (r.distinct) return {};
  int64_t n = axes.empty() ? shape.numel() : 1;
  const auto rank = static_cast<int64_t>(shape.size());
  for (int64_t a : axes) n *= shape[static_cast<std::size_t>((a + rank) % rank)];
  return rensa::test::rounded_once_tolerance(dtype, n);
}

}  // namespace

// ---- gradients ---------------------------------------------------------------------------------

TEST(ReductionGrad, AxisSetsKeepdimsNoncontiguousDouble) {
  for (const auto& r : reductions()) {
    const Array x = input_for(r, {2, 3, 4}, 1);
    for (const Shape& axes : axis_sets()) {
      for (bool keepdims : {false, true}) {
        TestFunction f = [&r, axes, keepdims](const std::vector<Variable>& v) {
          return std::vector<Variable>{r.fn(v[0], axes, keepdims)};
        };
        expect_gradients(std::string(r.name) + " " + describe(x, axes, keepdims), f, x);
      }
    }
  }
}

TEST(ReductionGrad, ZeroDimAndVector) {
  for (const auto& r : reductions()) {
    for (const Shape& s : {Shape{}, Shape{7}, Shape{1, 5}}) {
      TestFunction f = [&r](const std::vector<Variable>& v) { return std::vector<Variable>{r.fn(v[0], {}, false)}; };
      expect_gradients(std::string(r.name) + " " + to_string(s), f, input_for(r, s, 2));
    }
  }
}

TEST(ReductionGrad, SizeZero) {
  // Reducing axes of non-zero extent of an empty array: empty results, empty gradients.
  for (const auto& r : reductions()) {
    const Array x = input_for(r, {0, 3, 4}, 3);
    for (const Shape& axes : {Shape{1}, Shape{2}, Shape{1, 2}}) {
      TestFunction f = [&r, axes](const std::vector<Variable>& v) {
        return std::vector<Variable>{r.fn(v[0], axes, false)};
      };
      expect_gradients(std::string(r.name) + " " + describe(x, axes, false), f, x);
    }
  }
  // sum over an empty axis is 0 and its gradient is empty.
  TestFunction s = [](const std::vector<Variable>& v) { return std::vector<Variable>{F::sum(v[0], {1})}; };
  expect_gradients("sum over a size-0 axis", s, randn({3, 0, 2}));
  expect_gradients(
      "sum of an empty array", [](const std::vector<Variable>& v) { return std::vector<Variable>{F::sum(v[0])}; },
      randn({0, 4}));
}

TEST(ReductionGrad, SumTo) {
  const std::vector<Shape> targets = {{3, 4}, {1, 4}, {3, 1}, {4}, {1}, {}, {2, 1, 4}, {2, 3, 1}, {1, 1, 1}, {2, 3, 4}};
  const Array x = randn({2, 3, 4}, Dtype::float64, 4);
  for (const Shape& t : targets) {
    TestFunction f = [t](const std::vector<Variable>& v) { return std::vector<Variable>{F::sum_to(v[0], t)}; };
    expect_gradients("sum_to " + to_string(t), f, x);
    EXPECT_EQ(F::sum_to(Variable(x), t).shape(), t);
  }
  TestFunction f0 = [](const std::vector<Variable>& v) { return std::vector<Variable>{F::sum_to(v[0], {1, 3})}; };
  expect_gradients("sum_to size 0", f0, randn({0, 3}));
}

TEST(ReductionGrad, MaxTiesShareTheGradient) {
  // Every element equal to the maximum receives the full gradient (as Chainer).
  Variable x(Array::from_vector<double>({1.0, 3.0, 3.0, 2.0, 5.0, 5.0}, {2, 3}), true);
  F::sum(F::max(x, {1})).backward();
  expect_values(x.grad(), {0, 1, 1, 0, 1, 1});
  x.cleargrad();
  F::sum(F::min(x)).backward();
  expect_values(x.grad(), {1, 0, 0, 0, 0, 0});
}

TEST(ReductionGrad, LogsumexpWithInfiniteEntries) {
  // -inf entries have weight 0; the gradient is softmax over the finite entries.
  Variable x(Array::from_vector<double>({-kInf, 0.0, std::log(3.0), -kInf}, {2, 2}), true);
  Variable y = F::logsumexp(x, {1});
  expect_values(y, {0.0, std::log(3.0)});
  F::sum(y).backward();
  expect_values(x.grad(), {0.0, 1.0, 1.0, 0.0});
  // Large inputs: exp(1000) overflows, the shifted form does not.
  Variable big(Array::from_vector<double>({1000.0, 1000.0, 999.0}), true);
  Variable l = F::logsumexp(big);
  const double expected = 1000.0 + std::log(2.0 + std::exp(-1.0));
  expect_values(l, {expected});
  l.backward();
  const double z = 2.0 + std::exp(-1.0);
  expect_values(big.grad(), {1.0 / z, 1.0 / z, std::exp(-1.0) / z});
}

// ---- cpu against reference ----------------------------------------------------------------------

TEST(ReductionBackends, CpuMatchesReference) {
  for (const auto& r : reductions()) {
    SCOPED_TRACE(r.name);
    // Small inputs in several layouts, with every axis set; then 34000-element inputs (above the
    // threshold of the parallel loops) with some.
    const std::vector<Array> small = {
        input_for(r, {4, 5, 6}, 5, Dtype::float32),
        rensa::testing::make_noncontiguous(input_for(r, {4, 5, 6}, 7, Dtype::float32)),
        input_for(r, {5, 6, 4}, 8, Dtype::float32).transpose({2, 0, 1}),
        input_for(r, {4, 1, 6}, 9, Dtype::float32).broadcast_to({4, 5, 6}),
    };
    const std::vector<Array> big = {
        input_for(r, {34, 25, 40}, 6, Dtype::float32),
        rensa::testing::make_noncontiguous(input_for(r, {25, 34, 40}, 7, Dtype::float32)),
        input_for(r, {40, 34, 25}, 8, Dtype::float32).transpose({2, 0, 1}),
        input_for(r, {34, 1, 40}, 9, Dtype::float32).broadcast_to({34, 25, 40}),
    };
    for (const Array& x : small) {
      for (const Shape& axes : axis_sets()) {
        for (bool keepdims : {false, true}) {
          SCOPED_TRACE(describe(x, axes, keepdims));
          expect_cpu_matches_reference(
              [&r, axes, keepdims](const std::vector<Variable>& v) {
                return std::vector<Variable>{r.fn(v[0], axes, keepdims)};
              },
              {x}, reduction_tolerance(r, x.shape(), axes, x.dtype()));
        }
      }
    }
    for (const Array& x : big) {
      for (const Shape& axes : {Shape{}, Shape{0}, Shape{1}, Shape{2}, Shape{0, 2}}) {
        SCOPED_TRACE(describe(x, axes, false));
        expect_cpu_matches_reference(
            [&r, axes](const std::vector<Variable>& v) { return std::vector<Variable>{r.fn(v[0], axes, false)}; }, {x},
            reduction_tolerance(r, x.shape(), axes, x.dtype()));
      }
    }
  }
}

TEST(ReductionBackends, GradientsCpuMatchReference) {
  for (const auto& r : reductions()) {
    SCOPED_TRACE(r.name);
    for (const Shape& axes : {Shape{0}, Shape{2}, Shape{0, 2}, Shape{}}) {
      TestFunction f = [&r, axes](const std::vector<Variable>& v) {
        Variable x(v[0].array(), true);
        Variable y = r.fn(x, axes, false);
        F::sum(F::mul(y, y)).backward();
        return std::vector<Variable>{y, x.grad()};
      };
      expect_cpu_matches_reference(f, {input_for(r, {30, 34, 35}, 10, Dtype::float32)},
                                   reduction_tolerance(r, {30, 34, 35}, axes, Dtype::float32));
    }
  }
}

TEST(ReductionBackends, ArgCpuMatchesReference) {
  // Indices, the maximum and integer sums: exact.
  for (const auto& fn : {&F::argmax, &F::argmin}) {
    for (const Array& x : {randn({34, 25, 40}, Dtype::float32, 11), randn({4, 5, 6}, Dtype::float32, 12).transpose(),
                           rensa::testing::make_noncontiguous(randn({50, 700}, Dtype::float32, 13))}) {
      for (std::optional<int64_t> axis : {std::optional<int64_t>(), std::optional<int64_t>(0),
                                          std::optional<int64_t>(1), std::optional<int64_t>(-1)}) {
        expect_cpu_matches_reference(
            [fn, axis](const std::vector<Variable>& v) { return std::vector<Variable>{fn(v[0], axis, false)}; }, {x}, 0.0,
            0.0);
      }
    }
  }
  // Integer dtypes, with many ties.
  Array ints = randu({60, 700}, 0.0, 5.0, Dtype::float32, 14).astype(Dtype::int32);
  for (int64_t axis : {0, 1}) {
    expect_cpu_matches_reference(
        [axis](const std::vector<Variable>& v) {
          return std::vector<Variable>{F::argmax(v[0], axis), F::argmin(v[0], axis), F::max(v[0], {axis}),
                                       F::sum(v[0], {axis})};
        },
        {ints}, 0.0, 0.0);
  }
}

TEST(ReductionBackends, OtherDtypes) {
  for (Dtype d : {Dtype::float16, Dtype::bfloat16, Dtype::float64}) {
    SCOPED_TRACE(dtype_name(d));
    for (const auto& r : reductions()) {
      for (const Shape& axes : {Shape{}, Shape{1}, Shape{0, 2}}) {
        expect_cpu_matches_reference(
            [&r, axes](const std::vector<Variable>& v) { return std::vector<Variable>{r.fn(v[0], axes, false)}; },
            {input_for(r, {6, 7, 8}, 15, d)}, reduction_tolerance(r, {6, 7, 8}, axes, d));
        EXPECT_EQ(r.fn(Variable(input_for(r, {6, 7, 8}, 15, d)), axes, false).dtype(), d) << r.name;
      }
    }
  }
}

// ---- known values and dtypes --------------------------------------------------------------------

TEST(ReductionValues, Known) {
  Variable x(Array::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3}));
  expect_values(F::sum(x), {21});
  expect_values(F::sum(x, {0}), {5, 7, 9});
  expect_values(F::sum(x, {1}), {6, 15});
  expect_values(F::sum(x, {-1}, true), {6, 15});
  EXPECT_EQ(F::sum(x, {-1}, true).shape(), (Shape{2, 1}));
  EXPECT_EQ(F::sum(x, {}, true).shape(), (Shape{1, 1}));
  EXPECT_EQ(F::sum(x).shape(), (Shape{}));
  expect_values(F::mean(x), {3.5});
  expect_values(F::mean(x, {0}), {2.5, 3.5, 4.5});
  expect_values(F::mean(x, {1}, true), {2, 5});
  expect_values(F::max(x), {6});
  expect_values(F::max(x, {0}), {4, 5, 6});
  expect_values(F::min(x, {1}), {1, 4});
  expect_values(F::logsumexp(x, {1}),
                {std::log(std::exp(1) + std::exp(2) + std::exp(3)), std::log(std::exp(4) + std::exp(5) + std::exp(6))});
  expect_values(F::sum_to(x, {1, 3}), {5, 7, 9});
  expect_values(F::sum_to(x, {2, 1}), {6, 15});
  expect_values(F::sum_to(x, {3}), {5, 7, 9});
  expect_values(F::sum_to(x, {}), {21});
  Variable y(Array::from_vector<double>({3, 1, 4, 1, 5, 9, 2, 6}, {2, 4}));
  expect_values(F::argmax(y), {5});
  expect_values(F::argmin(y), {1});
  expect_values(F::argmax(y, 1), {2, 1});
  expect_values(F::argmin(y, 0), {0, 0, 1, 0});
  EXPECT_EQ(F::argmax(y).shape(), (Shape{}));
  EXPECT_EQ(F::argmax(y, std::nullopt, true).shape(), (Shape{1, 1}));
  EXPECT_EQ(F::argmax(y, 0, true).shape(), (Shape{1, 4}));
  EXPECT_EQ(F::argmax(y, -1).shape(), (Shape{2}));
}

TEST(ReductionValues, ResultDtypes) {
  Array i32 = Array::from_vector<int32_t>({2000000000, 2000000000, -5});
  Variable s = F::sum(Variable(i32));
  EXPECT_EQ(s.dtype(), Dtype::int64);
  EXPECT_EQ(s.array().item<int64_t>(), 3999999995);  // no int32 overflow
  EXPECT_EQ(F::sum(Variable(Array::from_vector<uint8_t>({200, 100}))).array().item<int64_t>(), 300);
  EXPECT_EQ(F::sum(Variable(Array::from_vector<bool>({true, false, true}))).array().item<int64_t>(), 2);
  EXPECT_EQ(F::sum(Variable(Array::from_vector<bool>({true, false, true}))).dtype(), Dtype::int64);
  EXPECT_EQ(F::sum(Variable(Array::ones({3}, Dtype::int64))).dtype(), Dtype::int64);
  for (Dtype d : {Dtype::float32, Dtype::float64, Dtype::float16, Dtype::bfloat16}) {
    Variable x(Array::ones({4, 3}, d));
    EXPECT_EQ(F::sum(x).dtype(), d);
    EXPECT_EQ(F::mean(x, {0}).dtype(), d);
    EXPECT_EQ(F::max(x).dtype(), d);
    EXPECT_EQ(F::logsumexp(x).dtype(), d);
    EXPECT_EQ(F::argmax(x).dtype(), Dtype::int64);
  }
  EXPECT_EQ(F::max(Variable(Array::from_vector<int32_t>({3, -7, 5}))).dtype(), Dtype::int32);
  EXPECT_EQ(F::min(Variable(Array::from_vector<int32_t>({3, -7, 5}))).array().item<int64_t>(), -7);
  // Large int64 values are summed exactly on both backends.
  const int64_t big = (int64_t{1} << 60) + 1;
  for (Device dev : {Device::cpu(), Device::reference()}) {
    Variable b(Array::from_vector<int64_t>({big, big, -big, 3}).to(dev));
    EXPECT_EQ(F::sum(b).array().item<int64_t>(), big + 3) << to_string(dev);
    EXPECT_EQ(F::max(b).array().item<int64_t>(), big) << to_string(dev);
    EXPECT_EQ(F::argmax(Variable(Array::from_vector<int64_t>({big - 1, big, big - 2}).to(dev))).array().item<int64_t>(),
              1)
        << to_string(dev);
  }
}

TEST(ReductionValues, MeanFloat32IsAccurate) {
  // float32 stays float32, accumulated in double: the mean of 1e6 copies of 0.1f is 0.1f.
  Variable x(Array::full({1000, 1000}, 0.1, Dtype::float32));
  Variable m = F::mean(x);
  EXPECT_EQ(m.dtype(), Dtype::float32);
  EXPECT_FLOAT_EQ(m.array().item<float>(), 0.1f);
  Variable m0 = F::mean(x, {0});
  EXPECT_EQ(m0.dtype(), Dtype::float32);
  EXPECT_FLOAT_EQ(m0.array().to_vector<float>()[7], 0.1f);
}

TEST(ReductionValues, SixteenBitMeanAndLogsumexpDoNotOverflow) {
  for (Device dev : {Device::cpu(), Device::reference()}) {
    SCOPED_TRACE(to_string(dev));
    // The float16 sums (70000, 240000) are beyond its range; the means are not.
    Variable ones(Array::ones({70000}, Dtype::float16, dev));
    EXPECT_EQ(F::mean(ones).array().item<double>(), 1.0);
    EXPECT_EQ(F::mean(Variable(Array::full({4, 2}, 60000.0, Dtype::float16, dev)), {0}).array().to_vector<double>(),
              (std::vector<double>{60000.0, 60000.0}));
    EXPECT_EQ(F::mean(ones).dtype(), Dtype::float16);
    Variable zeros(Array::zeros({70000}, Dtype::float16, dev));
    Variable l = F::logsumexp(zeros);
    EXPECT_EQ(l.dtype(), Dtype::float16);
    EXPECT_NEAR(l.array().item<double>(), std::log(70000.0), 1e-2);
    for (Dtype d : {Dtype::float16, Dtype::bfloat16}) {
      Variable x(Array::from_vector<double>({1, 2, 3, 6}, {2, 2}).astype(d).to(dev), true);
      Variable m = F::mean(x, {1}, true);
      EXPECT_EQ(m.shape(), (Shape{2, 1}));
      expect_values(m, {1.5, 4.5});
      F::sum(m).backward();
      EXPECT_EQ(x.grad().dtype(), d);
      expect_values(x.grad(), {0.5, 0.5, 0.5, 0.5});
      x.cleargrad();
      F::sum(F::logsumexp(x, {0})).backward();
      EXPECT_EQ(x.grad().dtype(), d);
      const auto g = values(x.grad());
      EXPECT_NEAR(g[0] + g[2], 1.0, 1e-2);  // softmax weights of a column sum to 1
    }
  }
}

TEST(ReductionValues, ArgFirstOccurrenceAndNan) {
  for (Device dev : {Device::cpu(), Device::reference()}) {
    SCOPED_TRACE(to_string(dev));
    Variable t(Array::from_vector<double>({1, 5, 5, 0, 0, 5}).to(dev));
    EXPECT_EQ(F::argmax(t).array().item<int64_t>(), 1);
    EXPECT_EQ(F::argmin(t).array().item<int64_t>(), 3);
    Variable t2(Array::from_vector<int32_t>({7, 7, 7, 2, 9, 9}, {2, 3}).to(dev));
    expect_values(F::argmax(t2, 1), {0, 1});
    expect_values(F::argmin(t2, 1), {0, 0});
    // NaN is the extreme (first NaN wins), as NumPy.
    Variable n(Array::from_vector<double>({1, kNan, 7, kNan}).to(dev));
    EXPECT_EQ(F::argmax(n).array().item<int64_t>(), 1);
    EXPECT_EQ(F::argmin(n).array().item<int64_t>(), 1);
    expect_values(F::max(n), {kNan});
    expect_values(F::min(n), {kNan});
    expect_values(F::max(Variable(Array::from_vector<double>({kNan, 1, 2}).to(dev))), {kNan});
    expect_values(F::sum(n), {kNan});
    // Infinities.
    Variable inf(Array::from_vector<double>({-kInf, -kInf, 3}).to(dev));
    expect_values(F::max(inf), {3});
    expect_values(F::min(inf), {-kInf});
    EXPECT_EQ(F::argmin(inf).array().item<int64_t>(), 0);
    expect_values(F::max(Variable(Array::from_vector<double>({-kInf, -kInf}).to(dev))), {-kInf});
    // Rows longer than a vector register, float32 (the cpu backend's vectorized max and min): the
    // extreme at the end, and a NaN in the middle of one row only.
    std::vector<float> rows(3 * 100);
    for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<float>((i * 37) % 101) - 50.0f;
    rows[99] = 500.0f;
    rows[100] = -500.0f;
    rows[137] = std::numeric_limits<float>::quiet_NaN();
    Variable r(Array::from_vector<float>(rows, {3, 100}).to(dev));
    expect_values(F::max(r, Shape{1}), {500, kNan, static_cast<double>(*std::max_element(rows.begin() + 200, rows.end()))});
    expect_values(F::min(r, Shape{1}), {-50, kNan, -50});
  }
}

TEST(ReductionValues, ArgIsNotDifferentiable) {
  Variable x(randn({3, 4}), true);
  EXPECT_EQ(F::argmax(x, 1).creator(), nullptr);
  EXPECT_EQ(F::argmin(x).creator(), nullptr);
  EXPECT_FALSE(F::argmax(x).requires_grad());
}

TEST(ReductionValues, LogsumexpStability) {
  for (Device dev : {Device::cpu(), Device::reference()}) {
    for (Dtype d : {Dtype::float32, Dtype::float64}) {
      SCOPED_TRACE(to_string(dev) + " " + std::string(dtype_name(d)));
      auto lse = [&](const std::vector<double>& v) {
        return F::logsumexp(Variable(Array::from_vector(v).astype(d).to(dev)));
      };
      const double tol = d == Dtype::float32 ? 1e-6 : 1e-12;
      expect_values(lse({1000.0}), {1000.0}, tol);
      expect_values(lse({1000.0, 1000.0}), {1000.0 + std::log(2.0)}, tol);
      expect_values(lse({-1000.0, -1000.0, -1000.0}), {-1000.0 + std::log(3.0)}, tol);
      expect_values(lse({-kInf, 0.0}), {0.0}, tol);
      expect_values(lse({-kInf, -kInf}), {-kInf});
      expect_values(lse({kInf, 0.0}), {kInf});
      expect_values(lse({kNan, 0.0}), {kNan});
      expect_values(lse({1e30, 1.0}), {1e30}, tol);
      // Per row, each with its own shift.
      Variable x(Array::from_vector<double>({1000, 1000, -1000, -1000, -kInf, -kInf}, {3, 2}).astype(d).to(dev));
      expect_values(F::logsumexp(x, {1}), {1000 + std::log(2.0), -1000 + std::log(2.0), -kInf}, tol);
      expect_values(F::logsumexp(x, {1}, true), {1000 + std::log(2.0), -1000 + std::log(2.0), -kInf}, tol);
      EXPECT_EQ(F::logsumexp(x, {1}, true).shape(), (Shape{3, 1}));
    }
  }
}

TEST(ReductionValues, EmptyReductions) {
  // Sums over empty axes are 0, means NaN (as NumPy); results keep the non-reduced extents.
  Variable e(Array::zeros({0, 3}, Dtype::float64));
  expect_values(F::sum(e, {0}), {0, 0, 0});
  expect_values(F::sum(e), {0});
  expect_values(F::mean(e, {0}), {kNan, kNan, kNan});
  EXPECT_EQ(F::sum(e, {1}).shape(), (Shape{0}));
  EXPECT_EQ(F::max(e, {1}).shape(), (Shape{0}));
  EXPECT_EQ(F::logsumexp(e, {1}, true).shape(), (Shape{0, 1}));
  EXPECT_EQ(F::argmax(e, 1).shape(), (Shape{0}));
  EXPECT_EQ(F::sum(Variable(Array::zeros({0}, Dtype::int32))).array().item<int64_t>(), 0);
}

// ---- errors -------------------------------------------------------------------------------------

TEST(ReductionErrors, BadAxes) {
  Variable x(Array::ones({2, 3, 4}));
  for (const auto& r : reductions()) {
    expect_error<IndexError>([&] { r.fn(x, {0, 0}, false); }, {r.name, "repeated", "0"});
    expect_error<IndexError>([&] { r.fn(x, {1, -2}, false); }, {r.name, "repeated", "1"});
    expect_error<IndexError>([&] { r.fn(x, {3}, false); }, {r.name, "3", "dimension 3"});
    expect_error<IndexError>([&] { r.fn(x, {0, -4}, false); }, {r.name, "-4"});
    expect_error<IndexError>([&] { r.fn(Variable(Array::ones({})), {0}, false); }, {r.name});
  }
  expect_error<IndexError>([&] { F::argmax(x, 3); }, {"argmax", "3"});
  expect_error<IndexError>([&] { F::argmin(x, -4); }, {"argmin", "-4"});
}

TEST(ReductionErrors, EmptyExtremes) {
  Variable e(Array::zeros({2, 0, 3}));
  expect_error<ValueError>([&] { F::max(e); }, {"max", "(2, 0, 3)"});
  expect_error<ValueError>([&] { F::max(e, {1}); }, {"max", "(2, 0, 3)"});
  expect_error<ValueError>([&] { F::min(e, {0, 1}); }, {"min", "(2, 0, 3)"});
  expect_error<ValueError>([&] { F::argmax(e); }, {"argmax", "(2, 0, 3)"});
  expect_error<ValueError>([&] { F::argmin(e, 1); }, {"argmin", "(2, 0, 3)"});
  expect_error<ValueError>([&] { F::logsumexp(e, {1}); }, {"logsumexp", "(2, 0, 3)"});
  // Reducing the other axes is fine.
  EXPECT_EQ(F::max(e, {2}).shape(), (Shape{2, 0}));
  EXPECT_EQ(F::argmin(e, 2).shape(), (Shape{2, 0}));
}

TEST(ReductionErrors, DtypesAndShapes) {
  Variable i(Array::ones({2, 3}, Dtype::int32));
  expect_error<DtypeError>([&] { F::mean(i); }, {"mean", "int32", "(2, 3)"});
  expect_error<DtypeError>([&] { F::logsumexp(i); }, {"logsumexp", "int32"});
  Variable x(Array::ones({2, 3}));
  expect_error<ShapeError>([&] { F::sum_to(x, {4}); }, {"sum_to", "(2, 3)", "(4,)"});
  expect_error<ShapeError>([&] { F::sum_to(x, {2, 3, 1}); }, {"sum_to", "(2, 3)", "(2, 3, 1)"});
  expect_error<ShapeError>([&] { F::sum_to(x, {5, 2, 3}); }, {"sum_to", "(2, 3)", "(5, 2, 3)"});
  expect_error<ShapeError>([&] { F::sum_to(x, {2, 2}); }, {"sum_to", "(2, 3)", "(2, 2)"});
  Variable null;
  for (const auto& r : reductions()) expect_error<ValueError>([&] { r.fn(null, {}, false); }, {r.name});
  expect_error<ValueError>([&] { F::argmax(null); }, {"argmax"});
  expect_error<ValueError>([&] { F::sum_to(null, {}); }, {"sum_to"});
}

// ---- prod and batch_l2_norm_squared -------------------------------------------------------------

namespace {
// Uniform inputs with every fourth element exactly 0: prod's gradient must not divide by x.
Array prod_input_with_zeros(std::size_t, const Shape& shape, Dtype dtype, uint64_t seed) {
  auto v = randu(shape, 0.5, 1.5, Dtype::float64, seed).to_vector<double>();
  for (std::size_t i = 0; i < v.size(); i += 4) v[i] = 0.0;
  return Array::from_vector(v, shape).astype(dtype);
}
}  // namespace

TEST(Prod, Conforms) {
  using rensa::test::FunctionCase;
  using rensa::test::unary_fn;
  const std::vector<FunctionCase> cases = {
      {.name = "prod_all", .f = unary_fn([](const Variable& x) { return F::prod(x); }), .shapes = {{2, 3}}, .lo = 0.5,
       .hi = 1.5, .big_leading = 2},
      {.name = "prod_axis1", .f = unary_fn([](const Variable& x) { return F::prod(x, {1}); }), .shapes = {{3, 4}},
       .lo = -1.5, .hi = 1.5},
      {.name = "prod_axes_keepdims",
       .f = unary_fn([](const Variable& x) { return F::prod(x, {0, 2}, true); }),
       .shapes = {{2, 3, 4}},
       .lo = 0.5,
       .hi = 1.5,
       .big_leading = 2},
      {.name = "prod_zeros",
       .f = unary_fn([](const Variable& x) { return F::prod(x, {-1}); }),
       .shapes = {{3, 5}},
       .make_input = prod_input_with_zeros},
      {.name = "batch_l2_norm_squared", .f = unary_fn(F::batch_l2_norm_squared), .shapes = {{3, 2, 4}}},
  };
  for (const auto& c : cases) rensa::test::expect_conforms(c);
}

TEST(Prod, KnownValues) {
  const Variable x(Array::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3}));
  EXPECT_EQ(F::prod(x).array().to_vector<double>(), (std::vector<double>{720}));
  EXPECT_EQ(F::prod(x, {0}).array().to_vector<double>(), (std::vector<double>{4, 10, 18}));
  EXPECT_EQ(F::prod(x, {1}, true).shape(), (Shape{2, 1}));
  EXPECT_EQ(F::prod(Variable(Array::zeros({0, 3})), {0}).array().to_vector<double>(), (std::vector<double>{1, 1, 1}));
  // The gradient is the product of the other elements, also where x has zeros.
  Variable z(Array::from_vector<double>({2, 0, 3, 0, 0, 5}, {2, 3}), true);
  F::sum(F::prod(z, {1})).backward();
  EXPECT_EQ(z.grad().array().to_vector<double>(), (std::vector<double>{0, 6, 0, 0, 0, 0}));
  EXPECT_EQ(F::batch_l2_norm_squared(Variable(Array::from_vector<double>({3, 4, 1, 2}, {2, 1, 2}))).array().to_vector<double>(),
            (std::vector<double>{25, 5}));
  EXPECT_EQ(F::batch_l2_norm_squared(Variable(Array::zeros({0, 3}))).shape(), (Shape{0}));
}

TEST(Prod, Errors) {
  expect_error<DtypeError>([] { F::prod(Variable(Array::ones({2, 3}, Dtype::int32))); }, {"prod", "int32", "(2, 3)"});
  expect_error<IndexError>([] { F::prod(Variable(Array::ones({2, 3})), {2}); }, {"prod", "axis 2"});
  expect_error<IndexError>([] { F::prod(Variable(Array::ones({2, 3})), {1, -1}); }, {"prod", "repeated"});
  expect_error<ShapeError>([] { F::batch_l2_norm_squared(Variable(Array::ones({3}))); },
                           {"batch_l2_norm_squared", "(3,)"});
  expect_error<DtypeError>([] { F::batch_l2_norm_squared(Variable(Array::ones({3, 2}, Dtype::int64))); },
                           {"batch_l2_norm_squared", "int64"});
}

TEST(Average, Conforms) {
  using rensa::test::FunctionCase;
  const std::vector<FunctionCase> cases = {
      {.name = "average_axis1",
       .f = [](const std::vector<Variable>& v) { return std::vector<Variable>{F::average(v[0], {1}, v[1])}; },
       .shapes = {{3, 4}, {4}},
       .lo = 0.5,
       .hi = 2.0,
      },
      {.name = "average_all",
       .f = [](const std::vector<Variable>& v) { return std::vector<Variable>{F::average(v[0], {}, v[1], true)}; },
       .shapes = {{3, 4}, {3, 4}},
       .lo = 0.5,
       .hi = 2.0,
       .size_zero = false,  // no weights: 0 / 0
       .big_leading = 3},
  };
  for (const auto& c : cases) rensa::test::expect_conforms(c);
}

TEST(Average, KnownValues) {
  const Variable x(Array::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3}));
  const Variable w(Array::from_vector<double>({1, 0, 3}));
  EXPECT_EQ(F::average(x, {1}, w).array().to_vector<double>(), (std::vector<double>{2.5, 5.5}));
  EXPECT_EQ(F::average(x, {-1}, w, true).shape(), (Shape{2, 1}));
  EXPECT_EQ(F::average(x).array().to_vector<double>(), (std::vector<double>{3.5}));  // the mean
  const Variable wx(Array::from_vector<double>({0, 0, 0, 0, 0, 2}, {2, 3}));
  EXPECT_EQ(F::average(x, {}, wx).array().to_vector<double>(), (std::vector<double>{6}));
}

TEST(Average, Errors) {
  const Variable x(Array::ones({2, 3}));
  expect_error<ShapeError>([&] { F::average(x, {1}, Variable(Array::ones({2}))); }, {"average", "(2,)", "(2, 3)"});
  expect_error<ShapeError>([&] { F::average(x, {}, Variable(Array::ones({3}))); }, {"average", "(3,)", "(2, 3)"});
  expect_error<ValueError>([&] { F::average(x, {0, 1}, Variable(Array::ones({2, 3}))); }, {"average", "several axes"});
  expect_error<DtypeError>([&] { F::average(x, {1}, Variable(Array::ones({3}, Dtype::float64))); },
                           {"average", "float32", "float64"});
  expect_error<IndexError>([&] { F::average(x, {2}, Variable(Array::ones({3}))); }, {"average", "axis 2"});
}
