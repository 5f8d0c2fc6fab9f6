// The loss links (NegativeSampling, BlackOut, BinaryHierarchicalSoftmax, CRF1d) and WalkerAlias:
// parameters, forward against the functions, Chainer's values on the same inputs, gradients,
// .npz keys and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rensa/functions/loss.h"
#include "rensa/links/black_out.h"
#include "rensa/links/crf1d.h"
#include "rensa/links/hierarchical_softmax.h"
#include "rensa/links/negative_sampling.h"
#include "rensa/links/walker_alias.h"
#include "rensa/testing/gradient_check.h"
#include "tests/unit/links/connection_test_util.h"

using namespace rensa;
namespace F = rensa::functions;
namespace L = rensa::links;
namespace I = rensa::initializers;
using rensa::test::expect_error;
using rensa::test::expect_values;
using rensa::test::randn;
using rensa::test::sin_array;

namespace {

Array ints(const std::vector<int64_t>& v) {
  return Array::from_vector(v);
}

}  // namespace

TEST(WalkerAlias, TablesMatchChainer) {
  // Chainer 7.8.1: WalkerAlias([3, 1, 4, 1, 5, 9, 2]).threshold / .values.
  const L::WalkerAlias w({3, 1, 4, 1, 5, 9, 2});
  const std::vector<float> thr{0.2800000011920929f,
                               0.2800000011920929f,
                               0.5600000023841858f,
                               0.8399999737739563f,
                               0.3999999761581421f,
                               0.6800000071525574f,
                               1.0f};
  EXPECT_EQ(w.threshold(), thr);
  EXPECT_EQ(w.values(), (std::vector<int32_t>{1, 2, 3, 4, 6, 5, 0, 5, 2, 5, 4, 5, 5, 0}));
  // Frequencies follow the probabilities.
  Generator gen(7);
  const auto s = w.sample({20000}, gen);
  EXPECT_EQ(s.dtype(), Dtype::int32);
  std::vector<double> freq(7, 0);
  for (int32_t id : s.to_vector<int32_t>()) freq[static_cast<std::size_t>(id)] += 1.0 / 20000;
  const std::vector<double> p{3, 1, 4, 1, 5, 9, 2};
  for (std::size_t i = 0; i < 7; ++i) EXPECT_NEAR(freq[i], p[i] / 25, 0.012) << i;
  expect_error<ValueError>([] { L::WalkerAlias({}); }, {"WalkerAlias"});
  expect_error<ValueError>([] { L::WalkerAlias({1, -1}); }, {"WalkerAlias", "-1"});
  expect_error<ValueError>([] { L::WalkerAlias({0, 0}); }, {"WalkerAlias", "sum"});
}

TEST(NegativeSamplingLink, ParametersSamplerAndForward) {
  L::NegativeSampling l(3, {3, 1, 4, 1, 5}, 2, {.seed = 1});
  ASSERT_EQ(l.namedparams().size(), 1u);
  EXPECT_EQ(l.namedparams()[0].first, "/W");
  EXPECT_EQ(l.W().shape(), (Shape{5, 3}));
  EXPECT_EQ(rensa::test::mean_square(l.W().array()), 0.0);  // Chainer's Parameter(0, ...)
  // Chainer's sampler over counts^0.75 in float32.
  EXPECT_EQ(l.sampler().values(), (std::vector<int32_t>{1, 0, 3, 2, 0, 4, 2, 4, 4, 0}));
  EXPECT_FLOAT_EQ(l.sampler().threshold()[2], 0.5688965320587158f);
  l.W().array().assign(sin_array({5, 3}, 0.3, 0.5).astype(Dtype::float32));
  const Variable x(randn({4, 3}, Dtype::float32, 2));
  const Array t = ints({0, 4, 2, 1});
  Array samples;
  const Variable y = l.forward(x, t, "no", &samples);
  ASSERT_EQ(samples.shape(), (Shape{4, 3}));
  const F::NegativeSampler replay = [&](const Shape&) { return samples; };
  EXPECT_TRUE(array_equal(y.array(), F::negative_sampling(x, t, l.W(), replay, 2, "no").array()));
  EXPECT_EQ(l(x, t).shape(), (Shape{}));
  EXPECT_EQ(l.forward({x, Variable(t)}).shape(), (Shape{}));
}

TEST(NegativeSamplingLink, GradientsNpzAndErrors) {
  auto guard = using_config("dtype", Dtype::float64);
  L::NegativeSampling l(3, {3, 1, 4, 1, 5}, 2);
  l.W().array().assign(sin_array({5, 3}, 0.3, 0.5));
  const Variable x(randn({4, 3}, Dtype::float64, 3));
  const Array t = ints({0, 4, 2, 1});
  Array samples;
  l.forward(x, t, "sum", &samples);
  const F::NegativeSampler replay = [&](const Shape&) { return samples; };
  rensa::test::expect_param_grads(l, [&] { return F::negative_sampling(x, t, l.W(), replay, 2); });
  L::NegativeSampling loaded(3, {3, 1, 4, 1, 5}, 2);
  EXPECT_EQ(rensa::test::npz_round_trip(l, loaded), (std::vector<std::string>{"W"}));
  expect_error<ShapeError>([&] { l(Variable(randn({4, 2})), t); }, {"NegativeSampling", "(4, 2)"});
  expect_error<ValueError>([] { L::NegativeSampling(0, {1, 2}, 2); }, {"NegativeSampling", "in_size"});
  expect_error<ValueError>([&] { l.forward({x}); }, {"NegativeSampling", "x and t"});
}

TEST(BlackOutLink, ParametersForwardGradients) {
  L::BlackOut nan(3, {3, 1, 4}, 2);
  EXPECT_EQ(nan.W().shape(), (Shape{3, 3}));
  EXPECT_TRUE(std::isnan(nan.W().array().to_vector<double>()[0]));  // Chainer's Parameter(shape=...)
  auto guard = using_config("dtype", Dtype::float64);
  L::BlackOut l(3, {3, 1, 4, 1, 5}, 2, {.initialW = std::make_shared<I::Normal>(1.0), .seed = 4});
  EXPECT_EQ(l.sampler().values(), L::WalkerAlias({3, 1, 4, 1, 5}).values());
  const Variable x(randn({4, 3}, Dtype::float64, 5));
  const Array t = ints({0, 4, 2, 1});
  l.sample_data = ints({1, 2, 3, 4, 0, 1, 2, 3}).reshape({4, 2});
  const Variable y = l(x, t);
  EXPECT_TRUE(array_equal(y.array(), F::black_out(x, t, l.W(), l.sample_data).array()));
  rensa::test::expect_param_grads(l, [&] { return l(x, t); });
  l.sample_data = Array();
  EXPECT_EQ(l(x, t).shape(), (Shape{}));  // draws (4, 2) samples
  L::BlackOut loaded(3, {3, 1, 4, 1, 5}, 2);
  EXPECT_EQ(rensa::test::npz_round_trip(l, loaded), (std::vector<std::string>{"W"}));
  expect_error<ShapeError>([&] { l(Variable(randn({4, 2})), t); }, {"BlackOut", "(4, 2)"});
  expect_error<ValueError>([] { L::BlackOut(3, {1, 2}, 0); }, {"BlackOut", "sample_size"});
}

TEST(BinaryHierarchicalSoftmaxLink, HuffmanTreeAsChainer) {
  using H = L::BinaryHierarchicalSoftmax;
  EXPECT_EQ(H::create_huffman_tree({{0, 8}, {1, 5}, {2, 6}, {3, 4}}).to_string(), "((3, 1), (2, 0))");
  EXPECT_EQ(H::create_huffman_tree({{5, 1}, {2, 1}, {7, 1}, {0, 3}, {1, 2}}).to_string(), "(0, (1, (7, (5, 2))))");
  EXPECT_EQ(H::create_huffman_tree({{4, 1}}).to_string(), "4");
  expect_error<ValueError>([] { H::create_huffman_tree({}); }, {"create_huffman_tree", "empty"});
}

TEST(BinaryHierarchicalSoftmaxLink, ForwardMatchesChainer) {
  auto guard = using_config("dtype", Dtype::float64);
  using T = L::BinaryTree;
  // ((0, 1), (2, (4, 5))): word 3 is not in the tree.
  const T tree = T::node(T::node(T::leaf(0), T::leaf(1)), T::node(T::leaf(2), T::node(T::leaf(4), T::leaf(5))));
  L::BinaryHierarchicalSoftmax l(3, tree, {.seed = 1});
  EXPECT_EQ(l.W().shape(), (Shape{4, 3}));
  EXPECT_EQ(l.namedparams()[0].first, "/W");
  const auto [nodes, codes] = l.path(5);
  EXPECT_EQ(nodes, (std::vector<int32_t>{0, 2, 3}));
  EXPECT_EQ(codes, (std::vector<double>{-1, -1, -1}));
  EXPECT_TRUE(l.path(3).first.empty());
  l.W().array().assign(sin_array({4, 3}, 0.2, 0.5));
  const Variable x(sin_array({4, 3}, 1.0));
  const Array t = Array::from_vector(std::vector<int32_t>{0, 5, 3, 2});
  expect_values(l(x, t), {4.239303054858253});  // Chainer 7.8.1 on the same values
  rensa::test::expect_param_grads(l, [&] { return l(x, t); });
  rensa::testing::check_backward([&](const Variable& v) { return l(v, t); }, sin_array({4, 3}, 1.0));
  L::BinaryHierarchicalSoftmax loaded(3, tree);
  EXPECT_EQ(rensa::test::npz_round_trip(l, loaded), (std::vector<std::string>{"W"}));
}

TEST(BinaryHierarchicalSoftmaxLink, Errors) {
  using T = L::BinaryTree;
  const T tree = T::node(T::leaf(0), T::leaf(1));
  expect_error<ValueError>([&] { L::BinaryHierarchicalSoftmax(3, T::leaf(0)); }, {"BinaryHierarchicalSoftmax", "0"});
  expect_error<ValueError>([&] { L::BinaryHierarchicalSoftmax(3, T::node(T::leaf(1), T::leaf(1))); },
                           {"BinaryHierarchicalSoftmax", "twice"});
  expect_error<ValueError>(
      [&] {
        L::BinaryHierarchicalSoftmax(3, T{0, {T::leaf(0)}});
      },
      {"BinaryHierarchicalSoftmax", "two child"});
  L::BinaryHierarchicalSoftmax l(3, tree);
  expect_error<ShapeError>(
      [&] {
        l(Variable(randn({2, 4}, Dtype::float32)), ints({0, 1}));
      },
      {"BinaryHierarchicalSoftmax", "(2, 4)", "(2,)"});
  expect_error<IndexError>(
      [&] {
        l(Variable(randn({2, 3}, Dtype::float32)), ints({0, 2}));
      },
      {"BinaryHierarchicalSoftmax", "t[1] = 2"});
  expect_error<DtypeError>(
      [&] {
        l(Variable(randn({2, 3}, Dtype::float64)), ints({0, 1}));
      },
      {"BinaryHierarchicalSoftmax", "float64"});
}

TEST(CRF1dLink, ForwardAndArgmaxMatchChainer) {
  auto guard = using_config("dtype", Dtype::float64);
  L::CRF1d l(3);
  EXPECT_EQ(l.namedparams()[0].first, "/cost");
  EXPECT_EQ(rensa::test::mean_square(l.cost().array()), 0.0);
  l.cost().array().assign(sin_array({3, 3}, 0.3, 0.5));
  const std::vector<Variable> xs{Variable(sin_array({2, 3}, 1.0)), Variable(sin_array({4, 3}, 2.0)),
                                 Variable(sin_array({3, 3}, 3.0))};
  const std::vector<Array> ys{ints({0, 2}), ints({1, 1, 0, 2}), ints({2, 0, 1})};
  // Chainer 7.8.1: c(xs, ys, reduce='no', transpose=True) (sorted order), the mean, and argmax.
  expect_values(l.forward(xs, ys, "no", true), {3.625433590993133, 3.665350600332948, 2.5021716348019787});
  expect_values(l.forward(xs, ys, "mean", true), {3.264318608709353});
  const auto [score, path] = l.argmax(xs, true);
  expect_values(score, {0.7472635972634976, -0.420645152319813, 2.3315759415403483});
  ASSERT_EQ(path.size(), 3u);
  EXPECT_EQ(path[0].to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(path[1].to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 1, 2}));
  EXPECT_EQ(path[2].to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2}));
  // Without transpose: the function itself.
  const std::vector<Variable> txs = F::transpose_sequence({xs[1], xs[2], xs[0]});
  const std::vector<Array> tys{ints({1, 2, 0}), ints({1, 0, 2}), ints({0, 1}), ints({2})};
  EXPECT_TRUE(array_equal(l.forward(txs, tys).array(), F::crf1d(l.cost(), txs, tys).array()));
  rensa::test::expect_param_grads(l, [&] { return l.forward(xs, ys, "mean", true); });
  L::CRF1d loaded(3);
  EXPECT_EQ(rensa::test::npz_round_trip(l, loaded), (std::vector<std::string>{"cost"}));
}

TEST(CRF1dLink, InitializerAndErrors) {
  L::CRF1d one(2, {.initial_cost = std::make_shared<I::One>()});
  EXPECT_EQ(rensa::test::mean_square(one.cost().array()), 1.0);
  expect_error<ValueError>([] { L::CRF1d(0); }, {"CRF1d", "n_label"});
  L::CRF1d l(3);
  expect_error<ShapeError>(
      [&] {
        l.forward({Variable(randn({2, 4}, Dtype::float32))}, {ints({0, 1})});
      },
      {"CRF1d", "(2, 4)"});
  expect_error<ShapeError>(
      [&] {
        l.forward({Variable(randn({2, 3}, Dtype::float32))}, {}, "mean", true);
      },
      {"CRF1d", "1 score sequences but 0"});
}
