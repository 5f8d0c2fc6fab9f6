// forget: the same values and gradients as the function itself, no graph kept between forward and
// backward, recomputation in backward, and Chainer's refusal of double backprop.
#include <memory>
#include <vector>

#include "tests/unit/functions/conformance.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
using rensa::test::expect_conforms;
using rensa::test::expect_error;
using rensa::test::FunctionCase;
using rensa::test::randn;

namespace {

std::vector<Variable> tanh_mul(const std::vector<Variable>& v) { return {F::mul(F::tanh(v[0]), v[1]), F::exp(v[1])}; }

TEST(Forget, Conformance) {
  FunctionCase c{"forget", [](const std::vector<Variable>& v) { return F::forget(tanh_mul, v); }, {{3, 4}, {3, 4}}};
  c.double_backward = false;  // as Chainer
  expect_conforms(c);
}

TEST(Forget, MatchesTheFunctionAndRecomputesInBackward) {
  const Array xa = randn({3, 4}), ya = randn({3, 4}, Dtype::float64, 2);
  auto calls = std::make_shared<int>(0);
  auto counted = [calls](const std::vector<Variable>& v) {
    ++*calls;
    return tanh_mul(v);
  };
  Variable x(xa, true), y(ya, true);
  const auto outs = F::forget(counted, {x, y});
  EXPECT_EQ(*calls, 1);
  ASSERT_EQ(outs.size(), 2u);
  // One recorded node between the outputs and the inputs: func's intermediates are gone.
  ASSERT_NE(outs[0].creator(), nullptr);
  EXPECT_EQ(outs[0].creator()->inputs().size(), 2u);
  EXPECT_EQ(outs[0].creator().get(), outs[1].creator().get());
  F::sum(F::add(outs[0], outs[1])).backward();
  EXPECT_EQ(*calls, 2);

  Variable x2(xa, true), y2(ya, true);
  const auto direct = tanh_mul({x2, y2});
  F::sum(F::add(direct[0], direct[1])).backward();
  EXPECT_TRUE(array_equal(outs[0].array(), direct[0].array()));
  EXPECT_TRUE(allclose(x.grad().array(), x2.grad().array(), 1e-12, 1e-12));
  EXPECT_TRUE(allclose(y.grad().array(), y2.grad().array(), 1e-12, 1e-12));
}

TEST(Forget, OutputsThatDoNotDependOnTheInputs) {
  Variable x(randn({2, 2}), true);
  auto f = [](const std::vector<Variable>& v) {
    return std::vector<Variable>{F::mul(v[0], 3.0), Variable(Array::ones({2}, Dtype::float64))};
  };
  const auto ys = F::forget(f, {x});
  F::sum(F::add(F::sum(ys[0]), F::sum(ys[1]))).backward();
  EXPECT_EQ(x.grad().array().to_vector<double>(), std::vector<double>(4, 3.0));
}

TEST(Forget, Errors) {
  const Variable x(randn({2, 2}), true);
  expect_error<ValueError>([&] { F::forget(nullptr, {x}); }, {"forget", "empty"});
  expect_error<ValueError>([&] { F::forget(tanh_mul, {x, Variable()}); }, {"forget", "input 1", "null"});
  expect_error<ValueError>([&] { F::forget([](const std::vector<Variable>&) { return std::vector<Variable>{}; }, {x}); },
                           {"forget", "no output"});
  const auto y = F::forget(tanh_mul, {x, x});
  expect_error<NotImplementedError>(
      [&] { rensa::grad({F::sum(y[0])}, {x}, {}, GradOptions{.enable_double_backprop = true}); },
      {"forget", "double"});
}

}  // namespace
