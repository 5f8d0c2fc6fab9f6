// Tests of the elementwise arithmetic family (basic_math.h): gradients (first and second order, on
// contiguous, non-contiguous, broadcast and size-0 inputs), cpu against the reference backend,
// known values, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "rensa/rensa.h"
#include "rensa/testing/gradient_check.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
using rensa::test::expect_cpu_matches_reference;
using rensa::test::expect_error;
using rensa::test::randn;
using rensa::test::randu;
using rensa::testing::CheckOptions;
using rensa::testing::TestFunction;

namespace {

using Fn1 = std::function<Variable(const Variable&)>;
using Fn2 = std::function<Variable(const Variable&, const Variable&)>;

TestFunction wrap(const Fn1& f) {
  return [f](const std::vector<Variable>& v) { return std::vector<Variable>{f(v[0])}; };
}
TestFunction wrap(const Fn2& f) {
  return [f](const std::vector<Variable>& v) { return std::vector<Variable>{f(v[0], v[1])}; };
}

std::string shapes_of(const std::vector<Array>& xs) {
  std::string s;
  for (const auto& x : xs) s += to_string(x.shape()) + (x.is_contiguous() ? " " : " (non-contiguous) ");
  return s;
}

// First-order check on the inputs as given and on non-contiguous copies, then the second-order check.
void expect_gradients(const std::string& label, const TestFunction& f, const std::vector<Array>& inputs,
                      const CheckOptions& options = {}, bool double_backward = true) {
  std::vector<Array> nc;
  for (const auto& x : inputs) nc.push_back(rensa::testing::make_noncontiguous(x));
  for (const std::vector<Array>* xs : {&inputs, static_cast<const std::vector<Array>*>(&nc)}) {
    try {
      rensa::testing::check_backward(f, *xs, {}, options);
    } catch (const std::exception& e) {
      ADD_FAILURE() << label << " backward on " << shapes_of(*xs) << ": " << e.what();
    }
  }
  if (!double_backward) return;
  std::vector<Variable> vs(inputs.begin(), inputs.end());
  std::vector<Array> gys;
  uint64_t seed = 100;
  for (const auto& y : f(vs)) gys.push_back(randn(y.shape(), y.dtype(), seed++));
  try {
    rensa::testing::check_double_backward(f, inputs, gys, {}, options);
  } catch (const std::exception& e) {
    ADD_FAILURE() << label << " double backward on " << shapes_of(inputs) << ": " << e.what();
  }
}

// Values floor(u) * step + shift with u uniform in [-5, 5): arrays made with different shifts never
// tie and stay |shift difference| apart, which keeps gradient checks away from kinks.
Array grid(const Shape& shape, double shift, uint64_t seed, double step = 0.2) {
  auto v = randu(shape, -5.0, 5.0, Dtype::float64, seed).to_vector<double>();
  for (double& e : v) e = std::floor(e) * step + shift;
  return Array::from_vector(v, shape);
}

// Uniform values in [lo, hi) with random signs: |x| >= lo.
Array signed_away_from_zero(const Shape& shape, double lo, double hi, uint64_t seed) {
  auto v = randu(shape, lo, hi, Dtype::float64, seed).to_vector<double>();
  auto s = randn(shape, Dtype::float64, seed + 7).to_vector<double>();
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = s[i] < 0 ? -v[i] : v[i];
  return Array::from_vector(v, shape);
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

struct Binary {
  const char* name;
  Fn2 fn;
};

// The binary functions with inputs in their domains: b away from 0 for div, a > 0 for pow.
const std::vector<Binary>& binaries() {
  static const std::vector<Binary> list = {
      {"add", [](const Variable& a, const Variable& b) { return F::add(a, b); }},
      {"sub", [](const Variable& a, const Variable& b) { return F::sub(a, b); }},
      {"mul", [](const Variable& a, const Variable& b) { return F::mul(a, b); }},
      {"div", [](const Variable& a, const Variable& b) { return F::div(a, b); }},
      {"pow", [](const Variable& a, const Variable& b) { return F::pow(a, b); }},
      {"maximum", [](const Variable& a, const Variable& b) { return F::maximum(a, b); }},
      {"minimum", [](const Variable& a, const Variable& b) { return F::minimum(a, b); }},
  };
  return list;
}

std::vector<Array> binary_inputs(const std::string& name, const Shape& sa, const Shape& sb, Dtype dtype,
                                 uint64_t seed) {
  if (name == "pow") {
    return {randu(sa, 0.5, 2.0, Dtype::float64, seed).astype(dtype), randn(sb, Dtype::float64, seed + 1).astype(dtype)};
  }
  if (name == "div") {
    return {randn(sa, Dtype::float64, seed).astype(dtype), signed_away_from_zero(sb, 0.5, 2.0, seed + 1).astype(dtype)};
  }
  if (name == "maximum" || name == "minimum") {
    return {grid(sa, 0.1, seed).astype(dtype), grid(sb, 0.0, seed + 1).astype(dtype)};
  }
  return {randn(sa, Dtype::float64, seed).astype(dtype), randn(sb, Dtype::float64, seed + 1).astype(dtype)};
}

struct Unary {
  const char* name;
  Fn1 fn;
  // Inputs in the function's domain, away from kinks.
  std::function<Array(const Shape&, uint64_t)> input;
};

const std::vector<Unary>& unaries() {
  auto normal = [](const Shape& s, uint64_t seed) { return randn(s, Dtype::float64, seed); };
  auto positive = [](const Shape& s, uint64_t seed) { return randu(s, 0.5, 3.0, Dtype::float64, seed); };
  auto nonzero = [](const Shape& s, uint64_t seed) { return signed_away_from_zero(s, 0.3, 2.0, seed); };
  auto clip_safe = [](const Shape& s, uint64_t seed) { return grid(s, 0.1, seed); };  // lo, hi: even multiples
  static const std::vector<Unary> list = {
      {"neg", [](const Variable& x) { return F::neg(x); }, normal},
      {"exp", [](const Variable& x) { return F::exp(x); }, normal},
      {"log", [](const Variable& x) { return F::log(x); }, positive},
      {"sqrt", [](const Variable& x) { return F::sqrt(x); }, positive},
      {"square", [](const Variable& x) { return F::square(x); }, normal},
      {"abs", [](const Variable& x) { return F::abs(x); }, nonzero},
      {"clip", [](const Variable& x) { return F::clip(x, -0.4, 0.6); }, clip_safe},
      {"pow(x, 2)", [](const Variable& x) { return F::pow(x, 2.0); }, normal},
      {"pow(x, 3)", [](const Variable& x) { return F::pow(x, 3.0); }, normal},
      {"pow(x, 0.5)", [](const Variable& x) { return F::pow(x, 0.5); }, positive},
      {"pow(x, -1.5)", [](const Variable& x) { return F::pow(x, -1.5); }, positive},
      {"pow(x, 0)", [](const Variable& x) { return F::pow(x, 0.0); }, positive},
      {"add(x, 2.5)", [](const Variable& x) { return F::add(x, 2.5); }, normal},
      {"mul(x, -1.5)", [](const Variable& x) { return F::mul(x, -1.5); }, normal},
      {"rsub(x, 3)", [](const Variable& x) { return F::rsub(x, 3.0); }, normal},
      {"rdiv(x, 2)", [](const Variable& x) { return F::rdiv(x, 2.0); }, nonzero},
      {"x + 2", [](const Variable& x) { return x + 2.0; }, normal},
      {"2 + x", [](const Variable& x) { return 2.0 + x; }, normal},
      {"x - 2", [](const Variable& x) { return x - 2.0; }, normal},
      {"2 - x", [](const Variable& x) { return 2.0 - x; }, normal},
      {"x * 3", [](const Variable& x) { return x * 3.0; }, normal},
      {"3 * x", [](const Variable& x) { return 3.0 * x; }, normal},
      {"x / 4", [](const Variable& x) { return x / 4.0; }, normal},
      {"4 / x", [](const Variable& x) { return 4.0 / x; }, nonzero},
      {"-x", [](const Variable& x) { return -x; }, normal},
      {"x * x - x / 3", [](const Variable& x) { return x * x - x / 3.0; }, normal},
  };
  return list;
}

}  // namespace

// ---- gradients ---------------------------------------------------------------------------------

TEST(BasicMathGrad, UnaryContiguousNoncontiguousDouble) {
  for (const auto& u : unaries()) {
    for (const Shape& s : {Shape{3, 4}, Shape{2, 3, 5}, Shape{}}) {
      expect_gradients(u.name, wrap(u.fn), {u.input(s, 3)});
    }
  }
}

TEST(BasicMathGrad, UnarySizeZero) {
  for (const auto& u : unaries()) {
    for (const Shape& s : {Shape{0}, Shape{2, 0, 3}}) expect_gradients(u.name, wrap(u.fn), {u.input(s, 3)});
  }
}

TEST(BasicMathGrad, BinarySameShape) {
  for (const auto& b : binaries()) {
    expect_gradients(b.name, wrap(b.fn), binary_inputs(b.name, {3, 4}, {3, 4}, Dtype::float64, 5));
    expect_gradients(b.name, wrap(b.fn), binary_inputs(b.name, {}, {}, Dtype::float64, 6));
  }
}

TEST(BasicMathGrad, BinaryBroadcast) {
  const std::vector<std::pair<Shape, Shape>> cases = {{{3, 1, 4}, {5, 4}}, {{5, 4}, {3, 1, 4}}, {{2, 3}, {}},
                                                      {{}, {2, 3}},        {{4, 1}, {1, 3}},    {{2, 3}, {3}}};
  for (const auto& b : binaries()) {
    for (const auto& [sa, sb] : cases)
      expect_gradients(b.name, wrap(b.fn), binary_inputs(b.name, sa, sb, Dtype::float64, 7));
  }
}

TEST(BasicMathGrad, BinarySizeZero) {
  const std::vector<std::pair<Shape, Shape>> cases = {{{0, 4}, {4}}, {{3, 0, 1}, {5}}, {{0}, {}}, {{2, 0}, {2, 0}}};
  for (const auto& b : binaries()) {
    for (const auto& [sa, sb] : cases)
      expect_gradients(b.name, wrap(b.fn), binary_inputs(b.name, sa, sb, Dtype::float64, 8));
  }
}

TEST(BasicMathGrad, OperatorsOnVariables) {
  const std::vector<Binary> ops = {
      {"a + b", [](const Variable& a, const Variable& b) { return a + b; }},
      {"a - b", [](const Variable& a, const Variable& b) { return a - b; }},
      {"a * b", [](const Variable& a, const Variable& b) { return a * b; }},
      {"a / b", [](const Variable& a, const Variable& b) { return a / b; }},
      {"a * b + a / b - b", [](const Variable& a, const Variable& b) { return a * b + a / b - b; }},
  };
  for (const auto& op : ops) {
    expect_gradients(op.name, wrap(op.fn), binary_inputs("div", {3, 1, 4}, {5, 4}, Dtype::float64, 9));
    expect_gradients(op.name, wrap(op.fn), binary_inputs("div", {2, 3}, {2, 3}, Dtype::float64, 10));
  }
}

TEST(BasicMathGrad, SameVariableTwice) {
  // Fan-in to one input: the two gradient contributions add up.
  Fn1 f = [](const Variable& x) { return F::mul(x, x) + F::maximum(x, F::mul(x, 0.5)) + F::div(x, F::exp(x)); };
  expect_gradients("x*x + maximum(x, x/2) + x/exp(x)", wrap(f), {signed_away_from_zero({3, 4}, 0.3, 2.0, 11)});
}

TEST(BasicMathGrad, CheckerCatchesAWrongGradient) {
  // x * const(x) has the value of x * x but half its gradient: the checks above would notice.
  Fn1 wrong = [](const Variable& x) { return F::mul(x, Variable(x.array().copy())); };
  EXPECT_THROW(rensa::testing::check_backward(wrap(wrong), {randn({3, 4})}), AssertionError);
}

TEST(BasicMathGrad, PowGradientOfExponentAndBase) {
  Variable a(Array::from_vector<double>({2.0, 3.0}), true), b(Array::from_vector<double>({3.0, 0.5}), true);
  Variable y = F::pow(a, b);
  F::sum(y).backward();
  expect_values(y, {8.0, std::sqrt(3.0)});
  expect_values(a.grad(), {3.0 * 4.0, 0.5 / std::sqrt(3.0)});
  expect_values(b.grad(), {8.0 * std::log(2.0), std::sqrt(3.0) * std::log(3.0)});
}

TEST(BasicMathGrad, PowZeroExponentHasZeroGradientEverywhere) {
  // d/dx x**0 = 0, also at x = 0 (not 0 * inf).
  Variable x(Array::from_vector<double>({0.0, 2.0, -1.5}), true);
  F::sum(F::pow(x, 0.0)).backward();
  expect_values(x.grad(), {0.0, 0.0, 0.0});
}

TEST(BasicMathGrad, TiesGoToTheFirstOperand) {
  Variable a(Array::from_vector<double>({1.0, 2.0, 3.0}), true), b(Array::from_vector<double>({1.0, 5.0, 3.0}), true);
  F::sum(F::maximum(a, b)).backward();
  expect_values(a.grad(), {1.0, 0.0, 1.0});
  expect_values(b.grad(), {0.0, 1.0, 0.0});
  a.cleargrad();
  b.cleargrad();
  F::sum(F::minimum(a, b)).backward();
  expect_values(a.grad(), {1.0, 1.0, 1.0});
  expect_values(b.grad(), {0.0, 0.0, 0.0});
}

TEST(BasicMathGrad, KinksHaveDocumentedGradients) {
  Variable x(Array::from_vector<double>({-2.0, -1.0, 0.0, 0.5, 1.0, 3.0}), true);
  F::sum(F::abs(x)).backward();
  expect_values(x.grad(), {-1.0, -1.0, 0.0, 1.0, 1.0, 1.0});  // abs'(0) = 0
  x.cleargrad();
  F::sum(F::clip(x, -1.0, 1.0)).backward();
  expect_values(x.grad(), {0.0, 1.0, 1.0, 1.0, 1.0, 0.0});  // 1 on the closed interval
}

TEST(BasicMathGrad, BroadcastGradientsHaveOperandShapes) {
  Variable a(randn({3, 1, 4}), true), b(randn({5, 4}, Dtype::float64, 2), true);
  F::sum(a * b).backward();
  EXPECT_EQ(a.grad().shape(), (Shape{3, 1, 4}));
  EXPECT_EQ(b.grad().shape(), (Shape{5, 4}));
  // d sum(a * b) / da[i, 0, k] = sum_j b[j, k]
  const auto bv = b.array().to_vector<double>();
  const auto ga = values(a.grad());
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t k = 0; k < 4; ++k) {
      double s = 0;
      for (int64_t j = 0; j < 5; ++j) s += bv[static_cast<std::size_t>(j * 4 + k)];
      EXPECT_NEAR(ga[static_cast<std::size_t>(i * 4 + k)], s, 1e-12);
    }
  }
}

TEST(BasicMathGrad, ConstantOperandGetsNoGradient) {
  Variable a(randn({2, 3}), true), c(randn({2, 3}, Dtype::float64, 3));
  F::sum(F::mul(a, c) + F::div(a, F::add(F::square(c), 1.0))).backward();
  EXPECT_FALSE(a.grad().is_null());
  EXPECT_TRUE(c.grad().is_null());
  // Nothing requires grad: nothing is recorded.
  EXPECT_EQ(F::mul(c, c).creator(), nullptr);
}

// ---- cpu against reference ----------------------------------------------------------------------

TEST(BasicMathBackends, UnaryCpuMatchesReference) {
  for (const auto& u : unaries()) {
    SCOPED_TRACE(u.name);
    TestFunction f = wrap(u.fn);
    // (170, 200): above the 32768-element threshold of the parallel loops.
    for (const Shape& s : {Shape{3, 4}, Shape{170, 200}, Shape{}, Shape{0, 5}}) {
      expect_cpu_matches_reference(f, {u.input(s, 4).astype(Dtype::float32)});
    }
    expect_cpu_matches_reference(f,
                                 {rensa::testing::make_noncontiguous(u.input({170, 200}, 5).astype(Dtype::float32))});
    expect_cpu_matches_reference(f, {u.input({5, 6}, 6).astype(Dtype::float32).transpose()});
  }
}

TEST(BasicMathBackends, BinaryCpuMatchesReference) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{3, 4}, {3, 4}},       {{3, 1, 4}, {5, 4}},  {{170, 200}, {170, 200}},
      {{220, 1, 160}, {160}}, {{1, 200}, {180, 1}}, {{34000}, {}},
      {{}, {34000}},          {{0, 3}, {3}}};
  for (const auto& b : binaries()) {
    SCOPED_TRACE(b.name);
    for (const auto& [sa, sb] : cases) {
      SCOPED_TRACE(to_string(sa) + " " + to_string(sb));
      expect_cpu_matches_reference(wrap(b.fn), binary_inputs(b.name, sa, sb, Dtype::float32, 12));
    }
    auto xs = binary_inputs(b.name, {170, 200}, {170, 200}, Dtype::float32, 13);
    expect_cpu_matches_reference(
        wrap(b.fn), {rensa::testing::make_noncontiguous(xs[0]), rensa::testing::make_noncontiguous(xs[1])});
    expect_cpu_matches_reference(wrap(b.fn),
                                 {xs[0].transpose(), rensa::testing::make_noncontiguous(xs[1]).transpose()});
  }
}

TEST(BasicMathBackends, GradientsCpuMatchReference) {
  // Backward on both backends (float32), through broadcasting and above the parallel threshold.
  for (const auto& b : binaries()) {
    SCOPED_TRACE(b.name);
    TestFunction f = [fn = b.fn](const std::vector<Variable>& v) {
      Variable a(v[0].array(), true), c(v[1].array(), true);
      Variable y = fn(a, c);
      F::sum(F::mul(y, y)).backward();
      return std::vector<Variable>{y, a.grad(), c.grad()};
    };
    // The gradients sum over the broadcast axes: a's over 5 (then 2) terms, c's over 3 (then 30).
    expect_cpu_matches_reference(f, binary_inputs(b.name, {3, 1, 4}, {5, 4}, Dtype::float32, 14), 5);
    expect_cpu_matches_reference(f, binary_inputs(b.name, {30, 1, 600}, {2, 600}, Dtype::float32, 15), 30);
  }
}

TEST(BasicMathBackends, OtherFloatingDtypes) {
  // float16 and bfloat16 compute in float and round once; exp, log, pow and the like are not exact
  // in any dtype, so the two backends' formulas may differ by the rounding of each side.
  for (Dtype d : {Dtype::float16, Dtype::bfloat16, Dtype::float64}) {
    SCOPED_TRACE(dtype_name(d));
    const auto tol = rensa::test::rounded_once_tolerance(d);
    for (const auto& b : binaries()) {
      expect_cpu_matches_reference(wrap(b.fn), binary_inputs(b.name, {3, 1, 40}, {5, 40}, d, 16), tol);
    }
    for (const auto& u : unaries()) {
      Variable y = u.fn(Variable(u.input({4, 5}, 17).astype(d)));
      EXPECT_EQ(y.dtype(), d) << u.name;
      expect_cpu_matches_reference(wrap(u.fn), {u.input({4, 5}, 17).astype(d)}, tol);
    }
  }
}

TEST(BasicMathBackends, IntegerArithmetic) {
  Array a = Array::from_vector<int32_t>({7, -7, 5, 0, 100, -3}, {2, 3});
  Array b = Array::from_vector<int32_t>({2, 2, -3, 4, 7, 1}, {2, 3});
  for (Device dev : {Device::cpu(), Device::reference()}) {
    SCOPED_TRACE(to_string(dev));
    Variable x(a.to(dev)), y(b.to(dev));
    EXPECT_EQ(F::add(x, y).dtype(), Dtype::int32);
    expect_values(F::add(x, y), {9, -5, 2, 4, 107, -2});
    expect_values(F::sub(x, y), {5, -9, 8, -4, 93, -4});
    expect_values(F::mul(x, y), {14, -14, -15, 0, 700, -3});
    expect_values(F::maximum(x, y), {7, 2, 5, 4, 100, 1});
    expect_values(F::minimum(x, y), {2, -7, -3, 0, 7, -3});
    expect_values(F::neg(x), {-7, 7, -5, 0, -100, 3});
    expect_values(-x, {-7, 7, -5, 0, -100, 3});
    expect_values(x + 1.0, {8, -6, 6, 1, 101, -2});
    expect_values(x * 2.0, {14, -14, 10, 0, 200, -6});
    expect_values(10.0 - x, {3, 17, 5, 10, -90, 13});
    expect_values(Variable(Array::from_vector<uint8_t>({5, 1, 200}).to(dev)) - 2.0, {3, 255, 198});
    // Integer division floors, as Python's //, and division by zero gives 0 instead of a trap.
    expect_values(F::div(x, y), {3, -4, -2, 0, 14, -3});
    expect_values(x / 2.0, {3, -4, 2, 0, 50, -2});
    expect_values(F::div(x, Variable(Array::zeros({2, 3}, Dtype::int32, dev))), {0, 0, 0, 0, 0, 0});
    expect_values(F::div(Variable(Array::from_vector<uint8_t>({200, 7}).to(dev)),
                         Variable(Array::from_vector<uint8_t>({3, 0}).to(dev))),
                  {66, 0});
    expect_values(F::div(Variable(Array::from_vector<int64_t>({std::numeric_limits<int64_t>::min(), 9}).to(dev)),
                         Variable(Array::from_vector<int64_t>({-1, -4}).to(dev))),
                  {static_cast<double>(std::numeric_limits<int64_t>::min()), -3});
  }
}

// ---- known values -------------------------------------------------------------------------------

TEST(BasicMathValues, Elementwise) {
  Variable a(Array::from_vector<double>({1.0, -2.0, 4.0, 0.25}, {2, 2}));
  Variable b(Array::from_vector<double>({2.0, 3.0, -0.5, 4.0}, {2, 2}));
  expect_values(F::add(a, b), {3.0, 1.0, 3.5, 4.25});
  expect_values(F::sub(a, b), {-1.0, -5.0, 4.5, -3.75});
  expect_values(F::mul(a, b), {2.0, -6.0, -2.0, 1.0});
  expect_values(F::div(a, b), {0.5, -2.0 / 3.0, -8.0, 0.0625});
  expect_values(F::neg(a), {-1.0, 2.0, -4.0, -0.25});
  expect_values(F::pow(F::abs(a), b), {1.0, 8.0, 0.5, 1.0 / 256.0});
  expect_values(F::pow(a, 2.0), {1.0, 4.0, 16.0, 0.0625});
  expect_values(F::pow(a, 3.0), {1.0, -8.0, 64.0, 1.0 / 64.0});
  expect_values(F::exp(a), {std::exp(1.0), std::exp(-2.0), std::exp(4.0), std::exp(0.25)});
  expect_values(F::log(b * b), {std::log(4.0), std::log(9.0), std::log(0.25), std::log(16.0)});
  expect_values(F::sqrt(F::abs(a)), {1.0, std::sqrt(2.0), 2.0, 0.5});
  expect_values(F::square(a), {1.0, 4.0, 16.0, 0.0625});
  expect_values(F::abs(a), {1.0, 2.0, 4.0, 0.25});
  expect_values(F::maximum(a, b), {2.0, 3.0, 4.0, 4.0});
  expect_values(F::minimum(a, b), {1.0, -2.0, -0.5, 0.25});
  expect_values(F::clip(a, -1.0, 2.0), {1.0, -1.0, 2.0, 0.25});
  expect_values(F::add(a, 1.5), {2.5, -0.5, 5.5, 1.75});
  expect_values(F::mul(a, -2.0), {-2.0, 4.0, -8.0, -0.5});
  expect_values(F::rsub(a, 1.0), {0.0, 3.0, -3.0, 0.75});
  expect_values(F::rdiv(a, 1.0), {1.0, -0.5, 0.25, 4.0});
}

TEST(BasicMathValues, Operators) {
  Variable a(Array::from_vector<double>({1.0, -2.0, 4.0}));
  Variable b(Array::from_vector<double>({2.0, 3.0, -0.5}));
  expect_values(a + b, {3.0, 1.0, 3.5});
  expect_values(a - b, {-1.0, -5.0, 4.5});
  expect_values(a * b, {2.0, -6.0, -2.0});
  expect_values(a / b, {0.5, -2.0 / 3.0, -8.0});
  expect_values(-a, {-1.0, 2.0, -4.0});
  expect_values(a + 1.0, {2.0, -1.0, 5.0});
  expect_values(1.0 + a, {2.0, -1.0, 5.0});
  expect_values(a - 1.0, {0.0, -3.0, 3.0});
  expect_values(1.0 - a, {0.0, 3.0, -3.0});
  expect_values(a * 3.0, {3.0, -6.0, 12.0});
  expect_values(3.0 * a, {3.0, -6.0, 12.0});
  expect_values(a / 4.0, {0.25, -0.5, 1.0});
  expect_values(4.0 / a, {4.0, -2.0, 1.0});
}

TEST(BasicMathValues, ScalarDivisionRoundsLikeDivision) {
  // x / c is the correctly rounded quotient, not x * (1 / c).
  Array xv = Array::arange(1.0, 2001.0, 1.0, Dtype::float32);
  for (double c : {3.0, 7.0, 10.0, 0.1}) {
    Variable q = Variable(xv) / c;
    Variable r = F::div(Variable(xv), Variable(Array::scalar(c, Dtype::float32)));
    EXPECT_TRUE(array_equal(q.array(), r.array())) << "c = " << c;
  }
}

TEST(BasicMathValues, BroadcastResultShapes) {
  Variable a(Array::ones({3, 1, 4}, Dtype::float64)), b(Array::ones({5, 4}, Dtype::float64));
  for (const auto& f : binaries()) EXPECT_EQ(f.fn(a, b).shape(), (Shape{3, 5, 4})) << f.name;
  EXPECT_EQ(F::add(Variable(Array::ones({0, 4})), Variable(Array::ones({4}))).shape(), (Shape{0, 4}));
  EXPECT_EQ(F::mul(Variable(Array::ones({3, 0, 1})), Variable(Array::ones({5}))).shape(), (Shape{3, 0, 5}));
}

TEST(BasicMathValues, DtypesArePreserved) {
  for (Dtype d : {Dtype::float32, Dtype::float64, Dtype::float16, Dtype::bfloat16}) {
    Variable x(Array::full({2}, 2.0, d));
    EXPECT_EQ((x * 1.5).dtype(), d);
    EXPECT_EQ((x / 3.0).dtype(), d);
    EXPECT_EQ((1.0 - x).dtype(), d);
    EXPECT_EQ(F::clip(x, 0.0, 1.0).dtype(), d);
    EXPECT_EQ(F::pow(x, 2.0).dtype(), d);
  }
}

TEST(BasicMathValues, NanPropagation) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (Device dev : {Device::cpu(), Device::reference()}) {
    for (Dtype d : {Dtype::float32, Dtype::float64, Dtype::float16}) {
      SCOPED_TRACE(to_string(dev) + " " + std::string(dtype_name(d)));
      Variable a(Array::from_vector<double>({nan, 1.0, nan, -1.0}).astype(d).to(dev));
      Variable b(Array::from_vector<double>({1.0, nan, nan, 2.0}).astype(d).to(dev));
      expect_values(F::maximum(a, b), {nan, nan, nan, 2.0});
      expect_values(F::minimum(a, b), {nan, nan, nan, -1.0});
      expect_values(F::clip(a, 0.0, 1.0), {nan, 1.0, nan, 0.0});
      expect_values(F::add(a, b), {nan, nan, nan, 1.0});
    }
  }
}

TEST(BasicMathValues, SpecialValues) {
  const double inf = std::numeric_limits<double>::infinity();
  Variable x(Array::from_vector<double>({0.0, -1.0, inf, -inf}));
  expect_values(F::log(x),
                {-inf, std::numeric_limits<double>::quiet_NaN(), inf, std::numeric_limits<double>::quiet_NaN()});
  expect_values(F::exp(x), {1.0, std::exp(-1.0), inf, 0.0});
  expect_values(F::abs(x), {0.0, 1.0, inf, inf});
  expect_values(F::clip(x, -2.0, 2.0), {0.0, -1.0, 2.0, -2.0});
  expect_values(F::div(Variable(Array::from_vector<double>({1.0, -1.0})), Variable(Array::zeros({2}, Dtype::float64))),
                {inf, -inf});
}

// ---- errors -------------------------------------------------------------------------------------

TEST(BasicMathErrors, ShapeMismatchNamesFunctionAndShapes) {
  Variable a(Array::ones({2, 3})), b(Array::ones({4})), c(Array::ones({3, 1, 4})), d(Array::ones({5, 3}));
  for (const auto& f : binaries()) {
    expect_error<ShapeError>([&] { f.fn(a, b); }, {f.name, "(2, 3)", "(4,)"});
    expect_error<ShapeError>([&] { f.fn(c, d); }, {f.name, "(3, 1, 4)", "(5, 3)"});
  }
  expect_error<ShapeError>([&] { a + b; }, {"add", "(2, 3)", "(4,)"});
  expect_error<ShapeError>([&] { a - b; }, {"sub", "(2, 3)", "(4,)"});
  expect_error<ShapeError>([&] { a* b; }, {"mul", "(2, 3)", "(4,)"});
  expect_error<ShapeError>([&] { a / b; }, {"div", "(2, 3)", "(4,)"});
}

TEST(BasicMathErrors, DtypeMismatch) {
  Variable f32(Array::ones({2, 3}, Dtype::float32)), f64(Array::ones({2, 3}, Dtype::float64));
  for (const auto& f : binaries()) {
    expect_error<DtypeError>([&] { f.fn(f32, f64); }, {f.name, "float32", "float64", "(2, 3)"});
  }
  Variable i32(Array::ones({2}, Dtype::int32));
  // The scalar overloads and neg are defined on integers too; these are not.
  const std::vector<std::pair<std::string, Fn1>> floating_only = {
      {"exp", [](const Variable& x) { return F::exp(x); }},
      {"log", [](const Variable& x) { return F::log(x); }},
      {"sqrt", [](const Variable& x) { return F::sqrt(x); }},
      {"square", [](const Variable& x) { return F::square(x); }},
      {"abs", [](const Variable& x) { return F::abs(x); }},
      {"clip", [](const Variable& x) { return F::clip(x, 0, 1); }},
      {"pow", [](const Variable& x) { return F::pow(x, 2.0); }},
  };
  for (const auto& [name, fn] : floating_only) expect_error<DtypeError>([&] { fn(i32); }, {name, "int32", "(2,)"});
  // pow needs a floating base even when both operands are integers.
  expect_error<DtypeError>([&] { F::pow(i32, i32); }, {"pow", "int32"});
}

TEST(BasicMathErrors, ClipBoundsAndNulls) {
  Variable x(Array::ones({2}));
  expect_error<ValueError>([&] { F::clip(x, 1.0, -1.0); }, {"clip", "1", "-1"});
  // Chainer requires x_min < x_max strictly.
  expect_error<ValueError>([&] { F::clip(x, 0.5, 0.5); }, {"clip", "x_min must be less than x_max", "0.5"});
  expect_error<ValueError>([&] { F::clip(x, std::nan(""), 1.0); }, {"clip"});
  Variable null;
  expect_error<ValueError>([&] { F::add(null, x); }, {"add"});
  expect_error<ValueError>([&] { F::exp(null); }, {"exp"});
  expect_error<ValueError>([&] { F::neg(null); }, {"neg"});
  expect_error<ValueError>([&] { F::mul(null, 2.0); }, {"mul"});
  expect_error<ValueError>([&] { F::rdiv(null, 2.0); }, {"rdiv"});
}

TEST(BasicMathErrors, DeviceMismatch) {
  Variable a(Array::ones({2})), b(Array::ones({2}, Dtype::float32, Device::reference()));
  for (const auto& f : binaries()) expect_error<DeviceError>([&] { f.fn(a, b); }, {f.name, "cpu", "reference"});
}
