// The tree LSTM links (ChildSumTreeLSTM, NaryTreeLSTM): Chainer 7.8.1's outputs on the same
// inputs and parameters (missing children and a missing x included), gradients, order
// (in)dependence, serialization and errors.
#include <string>
#include <vector>

#include "tests/unit/links/recurrent_test_util.h"

using namespace rensa;
namespace L = rensa::links;
using rensa::test::expect_error;
using rensa::test::expect_param_grads;
using rensa::test::expect_values;
using rensa::test::set_params;
using rensa::test::sin_array;
using rensa::test::sin_var;
using Vars = std::vector<Variable>;

namespace {
constexpr int64_t kI = 3, kH = 2;
Variable st(double off) {
  return sin_var({2, kH}, off);
}
}  // namespace

TEST(ChildSumTreeLSTM, ChildrenAndChainerValues) {
  auto guard = using_config("dtype", Dtype::float64);
  L::ChildSumTreeLSTM l(kI, kH);
  const auto params = l.namedparams();
  ASSERT_EQ(params.size(), 4u);
  EXPECT_EQ(params[0].first, "/W_x/W");
  EXPECT_EQ(params[2].first, "/W_h_aio/W");
  EXPECT_EQ(params[3].first, "/W_h_f/W");
  EXPECT_EQ(l.W_x().W().shape(), (Shape{4 * kH, kI}));
  EXPECT_EQ(l.W_h_aio().W().shape(), (Shape{3 * kH, kH}));
  set_params(l, 1.2);
  auto [c, h] = l({st(0.1), st(0.2)}, {st(0.3), st(0.4)}, sin_var({2, kI}, 0.5));
  expect_values(c, {0.657143890039967, 0.650634374720919, 1.80988394215019, 1.20166097056802});
  expect_values(h, {0.172471302019108, 0.278192059728696, 0.135226796814819, 0.26564518929962});
  // The children's order does not matter.
  auto [c2, h2] = l({st(0.2), st(0.1)}, {st(0.4), st(0.3)}, sin_var({2, kI}, 0.5));
  EXPECT_TRUE(allclose(c2.array(), c.array(), 1e-14, 1e-14));
  EXPECT_TRUE(allclose(h2.array(), h.array(), 1e-14, 1e-14));
  // Missing children count as zeros.
  auto [c1, h1] = l({st(0.1), Variable()}, {st(0.3), Variable()}, sin_var({2, kI}, 0.5));
  expect_values(c1, {0.469293793246127, 0.418263649358259, 1.05745767029653, 0.708968914179201});
  expect_values(h1, {0.181639582054381, 0.239762508963795, 0.224286401670954, 0.321614949776139});
  // A leaf.
  auto [c0, h0] = l({}, {}, sin_var({2, kI}, 0.5));
  expect_values(c0, {0.353253159998931, 0.195573332585938, 0.351491157035894, 0.196062350161965});
  expect_values(h0, {0.177089037235422, 0.134898751064965, 0.163506642058948, 0.139653001186002});
}

TEST(NaryTreeLSTM, ChildrenAndChainerValues) {
  auto guard = using_config("dtype", Dtype::float64);
  L::NaryTreeLSTM l(kI, kH, 2);
  const auto params = l.namedparams();
  ASSERT_EQ(params.size(), 4u);
  EXPECT_EQ(params[0].first, "/W_x/W");
  EXPECT_EQ(params[2].first, "/W_h1/W");
  EXPECT_EQ(params[3].first, "/W_h2/W");
  EXPECT_EQ(l.W_h(2).W().shape(), (Shape{5 * kH, kH}));
  set_params(l, 1.4);
  auto [c, h] = l({st(0.1), st(0.2)}, {st(0.3), st(0.4)}, sin_var({2, kI}, 0.5));
  expect_values(c, {0.460326409101381, 0.603966804617371, 1.1525242112646, 1.1892356717527});
  expect_values(h, {0.134663462755706, 0.277446279648648, 0.121638091783502, 0.310661934315829});
  // Missing c2, h1 and x.
  auto [c1, h1] = l({st(0.1), Variable()}, {Variable(), st(0.4)}, Variable());
  expect_values(c1, {0.479363510765404, 0.497207451860119, 0.792891908989215, 0.779746439954601});
  expect_values(h1, {0.162726394413493, 0.163146676406223, 0.183446339608733, 0.185094565533303});
}

TEST(TreeLSTM, Gradients) {
  auto guard = using_config("dtype", Dtype::float64);
  L::ChildSumTreeLSTM cs(kI, kH);
  set_params(cs, 1.2);
  auto f = [&](const Vars& in) {
    auto [c, h] = cs({in[0], in[1]}, {in[2], in[3]}, in[4]);
    return Vars{c, h};
  };
  const std::vector<Array> inputs{sin_array({2, kH}, 0.1), sin_array({2, kH}, 0.2), sin_array({2, kH}, 0.3),
                                  sin_array({2, kH}, 0.4), sin_array({2, kI}, 0.5)};
  auto vars = [&] {
    Vars v;
    for (const Array& a : inputs) v.emplace_back(a);
    return v;
  };
  rensa::testing::check_backward(f, inputs);
  expect_param_grads(cs, [&] { return rensa::test::weighted_sum(f(vars())); });
  L::NaryTreeLSTM nary(kI, kH, 2);
  set_params(nary, 1.4);
  auto g = [&](const Vars& in) {
    auto [c, h] = nary({in[0], in[1]}, {in[2], in[3]}, in[4]);
    return Vars{c, h};
  };
  rensa::testing::check_backward(g, inputs);
  expect_param_grads(nary, [&] { return rensa::test::weighted_sum(g(vars())); });
}

TEST(TreeLSTM, SerializeAndErrors) {
  L::NaryTreeLSTM a(kI, kH, 3, {.seed = 1});
  const std::string path = rensa::test::temp_npz("tree_lstm");
  serializers::save_npz(path, a);
  L::NaryTreeLSTM b(kI, kH, 3, {.seed = 2});
  serializers::load_npz(path, b);
  std::filesystem::remove(path);
  rensa::test::expect_same_params(a, b);

  expect_error<ValueError>([] { L::NaryTreeLSTM(3, 2, 0); }, {"NaryTreeLSTM", "n_ary", "0"});
  expect_error<ValueError>(
      [&] {
        a({Variable(), Variable()}, {Variable(), Variable(), Variable()}, Variable());
      },
      {"NaryTreeLSTM", "n_ary = 3", "2 and 3"});
  expect_error<ValueError>(
      [&] {
        a({Variable(), Variable(), Variable()}, {Variable(), Variable(), Variable()}, Variable());
      },
      {"NaryTreeLSTM", "all inputs", "null"});
  expect_error<IndexError>([&] { a.W_h(4); }, {"NaryTreeLSTM::W_h", "4"});
  L::ChildSumTreeLSTM c(kI, kH);
  const Variable x(Array::zeros({2, kI}));
  expect_error<ValueError>([&] { c({Variable()}, {}, x); }, {"ChildSumTreeLSTM", "1 and 0"});
  expect_error<ShapeError>(
      [&] {
        c({Variable(Array::zeros({3, kH}))}, {Variable()}, x);
      },
      {"ChildSumTreeLSTM", "cs[0] (3, 2)", "x (2, 3)"});
  expect_error<ShapeError>(
      [&] {
        c({}, {}, Variable(Array::zeros({2, 4})));
      },
      {"ChildSumTreeLSTM", "x (2, 4)", "(B, 3)"});
}

TEST(TreeLSTM, LazyInSize) {
  L::ChildSumTreeLSTM c(-1, kH, {.seed = 1});
  EXPECT_EQ(c.in_size(), -1);
  expect_error<ValueError>(
      [&] {
        c({Variable(Array::zeros({2, kH}))}, {Variable()}, Variable());
      },
      {"ChildSumTreeLSTM", "in_size", "not known"});
  EXPECT_EQ(c({}, {}, Variable(Array::zeros({2, 4}))).second.shape(), (Shape{2, kH}));
  EXPECT_EQ(c.in_size(), 4);
  EXPECT_EQ(c.W_x().W().shape(), (Shape{4 * kH, 4}));
  L::NaryTreeLSTM n(-1, kH, 3);
  EXPECT_EQ(
      n({Variable(), Variable(), Variable()}, {Variable(), Variable(), Variable()}, Variable(Array::zeros({1, 5})))
          .first.shape(),
      (Shape{1, kH}));
  EXPECT_EQ(n.W_x().W().shape(), (Shape{6 * kH, 5}));
  expect_error<ValueError>([] { L::NaryTreeLSTM(-2, 2); }, {"NaryTreeLSTM", "in_size", "-2"});
}
