// Ghost batch normalization (BatchNormOptions::ghost_batch_size): each sub-batch normalized as a batch
// of its own, gradients (float64, first and second order), and the errors.
#include <gtest/gtest.h>

#include <vector>

#include "rensa/functions/array_ops.h"
#include "rensa/functions/normalization.h"
#include "rensa/testing/gradient_check.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
using rensa::test::expect_error;
using rensa::test::randn;
using rensa::test::randu;
using rensa::testing::check_backward;
using rensa::testing::check_double_backward;
using rensa::testing::make_noncontiguous;
using rensa::testing::TestFunction;

namespace {

F::BatchNormOptions ghost(int64_t g, Shape axes = {}) {
  F::BatchNormOptions o;
  o.axes = std::move(axes);
  o.ghost_batch_size = g;
  return o;
}

TestFunction ghost_fn(const F::BatchNormOptions& o) {
  return [o](const std::vector<Variable>& v) {
    return std::vector<Variable>{F::batch_normalization(v[0], v[1], v[2], o).y};
  };
}

rensa::testing::CheckOptions opts() {
  rensa::testing::CheckOptions o;
  o.eps = 1e-4;
  o.atol = 1e-6;
  o.rtol = 1e-4;
  return o;
}

std::vector<Array> inputs(const Shape& s, const Shape& param, uint64_t seed) {
  return {randn(s, Dtype::float64, seed), randu(param, 0.5, 1.5, Dtype::float64, seed + 1),
          randn(param, Dtype::float64, seed + 2)};
}

}  // namespace

TEST(GhostBatchNormalization, EachSubBatchIsNormalizedAlone) {
  for (const Shape& s : {Shape{6, 3}, Shape{4, 2, 3, 2}}) {
    const std::vector<Array> in = inputs(s, {s[1]}, 10);
    const Variable x(in[0]), gamma(in[1]), beta(in[2]);
    const F::BatchNormResult r = F::batch_normalization(x, gamma, beta, ghost(2));
    const int64_t k = s[0] / 2;
    ASSERT_EQ(r.mean.shape(), (Shape{k, s[1]}));
    ASSERT_EQ(r.var.shape(), (Shape{k, s[1]}));
    EXPECT_EQ(r.count, 2 * (s.numel() / s[0] / s[1]));
    for (int64_t i = 0; i < k; ++i) {
      const Variable part = F::get_item(x, {Slice{2 * i, 2 * i + 2, 1}});
      const F::BatchNormResult p = F::batch_normalization(part, gamma, beta);
      EXPECT_TRUE(allclose(F::get_item(r.y, {Slice{2 * i, 2 * i + 2, 1}}).array(), p.y.array(), 1e-12, 1e-12));
      EXPECT_TRUE(allclose(r.mean.slice(0, i, i + 1).reshape({s[1]}), p.mean, 1e-12, 1e-12));
      EXPECT_TRUE(allclose(r.var.slice(0, i, i + 1).reshape({s[1]}), p.var, 1e-12, 1e-12));
    }
  }
}

TEST(GhostBatchNormalization, WholeBatchIsPlainBatchNormalization) {
  const std::vector<Array> in = inputs({5, 3}, {3}, 20);
  const auto a = F::batch_normalization(Variable(in[0]), Variable(in[1]), Variable(in[2]), ghost(5));
  const auto b = F::batch_normalization(Variable(in[0]), Variable(in[1]), Variable(in[2]));
  EXPECT_TRUE(allclose(a.y.array(), b.y.array(), 1e-12, 1e-12));
  EXPECT_TRUE(allclose(a.mean.reshape({3}), b.mean, 1e-12, 1e-12));
}

TEST(GhostBatchNormalizationGrad, ContiguousNoncontiguousDouble) {
  for (const Shape& s : {Shape{6, 3}, Shape{4, 2, 3, 2}}) {
    const std::vector<Array> in = inputs(s, {s[1]}, 30);
    check_backward(ghost_fn(ghost(2)), in, {}, opts());
    std::vector<Array> nc;
    for (const Array& a : in) nc.push_back(make_noncontiguous(a));
    check_backward(ghost_fn(ghost(2)), nc, {}, opts());
    check_double_backward(ghost_fn(ghost(2)), in, {randn(s, Dtype::float64, 34)}, {}, opts());
  }
}

TEST(GhostBatchNormalizationGrad, CustomAxesAndNoParameters) {
  // Statistics over axes (0, 2) of (6, 2, 3): parameters (2,); sub-batches of 3 examples.
  check_backward(ghost_fn(ghost(3, {0, 2})), inputs({6, 2, 3}, {2}, 40), {}, opts());
  TestFunction bare = [](const std::vector<Variable>& v) {
    return std::vector<Variable>{F::batch_normalization(v[0], Variable(), Variable(), ghost(2)).y};
  };
  check_backward(bare, {randn({4, 3}, Dtype::float64, 43)}, {}, opts());
}

TEST(GhostBatchNormalization, Errors) {
  const Variable x(randn({10, 3}, Dtype::float64, 50));
  const Variable none;
  expect_error<ShapeError>([&] { F::batch_normalization(x, none, none, ghost(4)); },
                           {"batch_normalization", "(10, 3)", "10 examples", "ghost_batch_size 4"});
  expect_error<ValueError>([&] { F::batch_normalization(x, none, none, ghost(0)); },
                           {"batch_normalization", "ghost_batch_size must be positive, got 0"});
  expect_error<ValueError>([&] { F::batch_normalization(x, none, none, ghost(-2)); },
                           {"batch_normalization", "ghost_batch_size must be positive, got -2"});
  expect_error<ValueError>([&] { F::batch_normalization(x, none, none, ghost(2, {1})); },
                           {"batch_normalization", "axis 0", "(1,)"});
  expect_error<ValueError>(
      [&] {
        F::batch_normalization(Variable(Array::zeros({0, 3}, Dtype::float64)), none, none, ghost(2));
      },
      {"batch_normalization", "(0, 3)", "no element"});
  F::BatchNormOptions both = ghost(2);
  both.allreduce_sum = [](const Variable& v) { return v; };
  expect_error<ValueError>([&] { F::batch_normalization(x, none, none, both); },
                           {"batch_normalization", "ghost_batch_size and allreduce_sum"});
  expect_error<ValueError>(
      [&] {
        F::batch_renormalization(x, Variable(Array::ones({3}, Dtype::float64)),
                                 Variable(Array::zeros({3}, Dtype::float64)), 1.0, 0.0, nullptr, nullptr, 0.9, false,
                                 ghost(2));
      },
      {"batch_renormalization", "ghost_batch_size"});
}
