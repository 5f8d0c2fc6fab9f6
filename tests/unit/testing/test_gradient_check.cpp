// The gradient checker must catch wrong gradients, or every other test proves nothing.
#include <gtest/gtest.h>

#include "rensa/rensa.h"
#include "rensa/testing/gradient_check.h"

using namespace rensa;
namespace F = rensa::functions;
using rensa::testing::check_backward;
using rensa::testing::check_double_backward;

namespace {
// y = x^2 with a backward that is off by `error` * x (wrong unless error == 0).
Variable square_with_error(const Variable& x, double error) {
  Array y = (x * x).array();
  return record1("square_with_error", {x}, y, [x, error](const BackwardContext& ctx) {
    return std::vector<Variable>{ctx.grad_output() * x * (2.0 + error)};
  });
}

Array randn(const Shape& s, uint64_t seed) {
  Generator g(seed);
  return random::normal(s, 0.0, 1.0, Dtype::float64, Device::cpu(), &g);
}
}  // namespace

TEST(GradientCheck, AcceptsCorrectGradient) {
  EXPECT_NO_THROW(check_backward([](const Variable& x) { return square_with_error(x, 0.0); }, randn({3, 4}, 1)));
}

TEST(GradientCheck, RejectsWrongGradient) {
  EXPECT_THROW(check_backward([](const Variable& x) { return square_with_error(x, 0.01); }, randn({3, 4}, 1)),
               AssertionError);
}

TEST(GradientCheck, RejectsWrongGradientOnNonContiguousInput) {
  Array x = rensa::testing::make_noncontiguous(randn({5, 3}, 2));
  ASSERT_FALSE(x.is_contiguous());
  EXPECT_NO_THROW(check_backward([](const Variable& v) { return square_with_error(v, 0.0); }, x));
  EXPECT_THROW(check_backward([](const Variable& v) { return square_with_error(v, 0.05); }, x), AssertionError);
}

TEST(GradientCheck, RejectsMissingGradientForOneOfTwoInputs) {
  auto f = [](const std::vector<Variable>& xs) {
    // The backward forgets b's gradient.
    Array y = (xs[0] * xs[1]).array();
    Variable a = xs[0], b = xs[1];
    return std::vector<Variable>{record1("forgetful_mul", {a, b}, y, [a, b](const BackwardContext& ctx) {
      return std::vector<Variable>{ctx.grad_output() * b, Variable()};
    })};
  };
  EXPECT_THROW(rensa::testing::check_backward(f, {randn({4}, 3), randn({4}, 4)}), AssertionError);
}

TEST(GradientCheck, IntegerInputsGetNoGradient) {
  auto f = [](const std::vector<Variable>& xs) { return std::vector<Variable>{xs[0] * F::cast(xs[1], Dtype::float64)}; };
  Array labels = Array::from_vector<int32_t>({1, 2, 3, 4});
  EXPECT_NO_THROW(rensa::testing::check_backward(f, {randn({4}, 5), labels}));
}

TEST(GradientCheck, DoubleBackwardCatchesWrongSecondDerivative) {
  auto good = [](const std::vector<Variable>& xs) { return std::vector<Variable>{xs[0] * xs[0] * xs[0]}; };
  EXPECT_NO_THROW(check_double_backward(good, {randn({3}, 6)}, {randn({3}, 7)}));
  // First derivative right, but computed from a constant copy of x: the second derivative is lost.
  auto bad = [](const std::vector<Variable>& xs) {
    Variable x = xs[0];
    Array y = (x * x * x).array();
    return std::vector<Variable>{record1("cube_detached", {x}, y, [x](const BackwardContext& ctx) {
      Variable c(x.array());  // detached from the graph
      return std::vector<Variable>{ctx.grad_output() * c * c * 3.0};
    })};
  };
  EXPECT_THROW(check_double_backward(bad, {randn({3}, 6)}, {randn({3}, 7)}), AssertionError);
}

TEST(GradientCheck, NoncontiguousHelperKeepsValues) {
  Array a = randn({2, 3}, 8);
  Array n = rensa::testing::make_noncontiguous(a);
  EXPECT_FALSE(n.is_contiguous());
  EXPECT_TRUE(array_equal(a, n));
}
