// User-defined differentiable functions through the public API only: FunctionNode subclasses with
// forward/apply, record() with a runtime number of inputs, parallel_for, and check_backward on a
// function that differentiates inside.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <memory>
#include <vector>

#include "rensa/rensa.h"
#include "tests/unit/test_util.h"

namespace rensa {
namespace {

using test::expect_error;

namespace F = functions;
using testing::check_backward;
using testing::check_double_backward;

// y = x^3 elementwise, written as a kernel on host arrays; backward from differentiable functions.
class Cube : public FunctionNode {
 public:
  const char* label() const override { return "cube"; }
  std::vector<Array> forward(const std::vector<Array>& inputs) override {
    retain_inputs({0});
    const Array x = inputs[0].contiguous();
    Array y = Array::empty(x.shape(), x.dtype(), x.device());
    dispatch_floating(x.dtype(), "cube", [&]<class T>() {
      const T* px = x.data<T>();
      T* py = y.data<T>();
      parallel_for(x.size(), 4096, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) py[i] = px[i] * px[i] * px[i];
      });
    });
    return {y};
  }
  std::vector<Variable> backward(const BackwardContext& ctx) override {
    const Variable& x = retained_inputs()[0];
    return {F::mul(ctx.grad_output(), F::mul(F::square(x), 3.0))};
  }
};

Variable cube(const Variable& x) { return std::make_shared<Cube>()->apply({x})[0]; }

// Two outputs (sum and difference) of two inputs; keeps its outputs for a backward that needs none,
// to exercise retain_outputs.
class SumDiff : public FunctionNode {
 public:
  const char* label() const override { return "sum_diff"; }
  std::vector<Array> forward(const std::vector<Array>& in) override {
    retain_outputs({1});
    auto guard = no_backprop_mode();
    return {F::add(in[0], in[1]).array(), F::sub(in[0], in[1]).array()};
  }
  std::vector<Variable> backward(const BackwardContext& ctx) override {
    EXPECT_EQ(ctx.output(1).shape(), ctx.grad_output(1).shape());
    const Variable& ga = ctx.grad_output(0);
    const Variable& gb = ctx.grad_output(1);
    return {F::add(ga, gb), F::sub(ga, gb)};
  }
};

// sum over a runtime number of inputs, recorded with record() from a vector.
Variable sum_all(const std::vector<Variable>& xs) {
  Array total = Array::zeros(xs.at(0).shape(), xs[0].dtype());
  for (const auto& x : xs) total = F::add(total, x.array()).array();
  const std::size_t n = xs.size();
  return record("sum_all", xs, {total}, [n](const BackwardContext& ctx) {
    return std::vector<Variable>(n, ctx.grad_output());
  })[0];
}

Array sample(Shape s, double lo = -1.5, double hi = 1.5) {
  Generator gen(7);
  return random::uniform(s, lo, hi, Dtype::float64, Device::cpu(), &gen);
}

TEST(CustomFunction, ApplyComputesForwardAndBackward) {
  Variable x(Array::from_vector<double>({1, -2, 3}, Shape{3}), true);
  Variable y = cube(x);
  EXPECT_EQ(y.array().to_vector<double>(), (std::vector<double>{1, -8, 27}));
  ASSERT_TRUE(y.creator());
  EXPECT_STREQ(y.creator()->label(), "cube");
  F::sum(y).backward();
  EXPECT_EQ(x.grad().array().to_vector<double>(), (std::vector<double>{3, 12, 27}));
}

TEST(CustomFunction, GradientChecksPassInFloat64) {
  check_backward([](const Variable& x) { return cube(x); }, sample({4, 5}));
  check_backward([](const Variable& x) { return cube(x); }, testing::make_noncontiguous(sample({4, 5})));
  check_double_backward([](const std::vector<Variable>& xs) { return std::vector<Variable>{cube(xs[0])}; },
                        {sample({3, 3})}, {sample({3, 3})});
  // Above parallel_for's grain: several chunks.
  check_backward([](const Variable& x) { return cube(x); }, sample({100, 100}));
}

TEST(CustomFunction, MultipleOutputsAndRetainedOutputs) {
  auto f = [](const std::vector<Variable>& xs) { return std::make_shared<SumDiff>()->apply(xs); };
  check_backward(f, {sample({2, 3}), sample({2, 3}, 0.0, 1.0)});
  // Only the first output used: the other gets a zero gradient.
  Variable a(sample({2}), true), b(sample({2}), true);
  F::sum(f({a, b})[0]).backward();
  EXPECT_EQ(a.grad().array().to_vector<double>(), (std::vector<double>{1, 1}));
  EXPECT_EQ(b.grad().array().to_vector<double>(), (std::vector<double>{1, 1}));
}

TEST(CustomFunction, RecordTakesARuntimeNumberOfInputs) {
  for (int n : {1, 3, 9}) {
    std::vector<Array> xs;
    for (int i = 0; i < n; ++i) xs.push_back(sample({2, 2}));
    check_backward([](const std::vector<Variable>& v) { return std::vector<Variable>{sum_all(v)}; }, xs);
  }
}

TEST(CustomFunction, NoGraphWithoutGradOrUnderNoBackprop) {
  Variable x(sample({3}));
  EXPECT_FALSE(cube(x).creator());
  Variable w(sample({3}), true);
  auto guard = no_backprop_mode();
  EXPECT_FALSE(cube(w).creator());
}

TEST(CustomFunction, ReleasedAfterBackwardDropsRetainedInputs) {
  Variable x(sample({3}), true);
  Variable y = cube(x);
  auto node = y.creator();
  F::sum(y).backward();
  EXPECT_TRUE(node->released());
  // A second backward through the released node says what happened.
  expect_error<Error>([&] { F::sum(y).backward(); }, {"cube"});
}

class NoForward : public FunctionNode {
 public:
  const char* label() const override { return "no_forward"; }
  std::vector<Variable> backward(const BackwardContext&) override { return {}; }
};

class RetainsTooMuch : public FunctionNode {
 public:
  const char* label() const override { return "retains_too_much"; }
  std::vector<Array> forward(const std::vector<Array>& in) override {
    retain_inputs({2});
    return {in[0]};
  }
  std::vector<Variable> backward(const BackwardContext& ctx) override { return {ctx.grad_output()}; }
};

class NullOutput : public FunctionNode {
 public:
  const char* label() const override { return "null_output"; }
  std::vector<Array> forward(const std::vector<Array>&) override { return {Array()}; }
  std::vector<Variable> backward(const BackwardContext&) override { return {Variable()}; }
};

class WrongGradCount : public FunctionNode {
 public:
  const char* label() const override { return "wrong_grad_count"; }
  std::vector<Array> forward(const std::vector<Array>& in) override { return {in[0].copy()}; }
  std::vector<Variable> backward(const BackwardContext& ctx) override {
    return {ctx.grad_output(), ctx.grad_output()};
  }
};

TEST(CustomFunction, BadUseGetsClearErrors) {
  Variable x(sample({2}), true);
  expect_error<NotImplementedError>([&] { std::make_shared<NoForward>()->apply({x}); }, {"no_forward", "forward"});
  Cube on_stack;
  expect_error<ValueError>([&] { on_stack.apply({x}); }, {"cube", "std::shared_ptr"});
  auto once = std::make_shared<Cube>();
  once->apply({x});
  expect_error<ValueError>([&] { once->apply({x}); }, {"cube", "already applied"});
  expect_error<ValueError>([&] { std::make_shared<RetainsTooMuch>()->apply({x}); },
                           {"retains_too_much", "input 2", "1 inputs"});
  expect_error<ValueError>([&] { std::make_shared<NullOutput>()->apply({x}); }, {"null_output", "output 0"});
  expect_error<ValueError>([&] { std::make_shared<Cube>()->apply({x, Variable()}); }, {"cube", "input 1", "null"});
  Variable y = std::make_shared<WrongGradCount>()->apply({x})[0];
  expect_error<ValueError>([&] { F::sum(y).backward(); }, {"wrong_grad_count", "2 gradients", "1 inputs"});
}

// A function whose value is itself a gradient: f(x) = d/dx sum(x^3) = 3 x^2.
std::vector<Variable> grad_of_cube_sum(const std::vector<Variable>& xs) {
  return grad({F::sum(F::mul(F::square(xs[0]), xs[0]))}, {xs[0]}, {}, {.enable_double_backprop = true});
}

TEST(CustomFunction, CheckBackwardOnAFunctionThatCallsGrad) {
  check_backward(grad_of_cube_sum, {sample({3, 4})});
  // Under no_backprop_mode set by the caller it still works: check_backward turns recording on.
  auto guard = no_backprop_mode();
  check_backward(grad_of_cube_sum, {sample({2, 2})});
}

TEST(ParallelFor, CoversTheRangeOnceAndRethrows) {
  std::vector<std::atomic<int>> hits(10007);
  parallel_for(10007, 100, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) hits[static_cast<std::size_t>(i)]++;
  });
  for (const auto& h : hits) ASSERT_EQ(h.load(), 1);
  parallel_for(0, 1, [](int64_t, int64_t) { FAIL() << "called for an empty range"; });
  expect_error<ValueError>([] { parallel_for(4, 0, [](int64_t, int64_t) {}); }, {"parallel_for", "grain 0"});
  expect_error<ValueError>([] { parallel_for(1000, 10, [](int64_t, int64_t e) { if (e == 1000) throw ValueError("chunk"); }); },
                           {"chunk"});
}

}  // namespace
}  // namespace rensa
