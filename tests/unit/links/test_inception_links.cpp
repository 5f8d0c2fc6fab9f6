// links::Inception and InceptionBN: children with Chainer's names, forward against the functions,
// gradients, .npz round trips, Chainer 7.8.1's .npz and outputs (tests/fixtures/README.md), errors.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "rensa/functions/activation.h"
#include "rensa/functions/array_ops.h"
#include "rensa/functions/convolution.h"
#include "rensa/links/inception.h"
#include "tests/unit/links/connection_test_util.h"

using namespace rensa;
namespace F = rensa::functions;
namespace L = rensa::links;
using rensa::test::expect_error;
using rensa::test::randn;
using rensa::test::sin_array;

namespace {

std::vector<std::string> paths(const Link& l) {
  std::vector<std::string> out;
  for (const auto& [path, v] : l.namedparams()) out.push_back(path);
  return out;
}

}  // namespace

TEST(InceptionLink, ChildrenAndForward) {
  L::Inception l(3, 2, 2, 3, 2, 2, 4, {.seed = 1});
  EXPECT_EQ(paths(l),
            (std::vector<std::string>{"/conv1/W", "/conv1/b", "/proj3/W", "/proj3/b", "/conv3/W", "/conv3/b",
                                      "/proj5/W", "/proj5/b", "/conv5/W", "/conv5/b", "/projp/W", "/projp/b"}));
  EXPECT_EQ(l.conv3().W().shape(), (Shape{3, 2, 3, 3}));
  EXPECT_EQ(l.conv5().W().shape(), (Shape{2, 2, 5, 5}));
  EXPECT_EQ(l.projp().W().shape(), (Shape{4, 3, 1, 1}));
  const Variable x(randn({2, 3, 5, 4}, Dtype::float32, 2));
  const Variable y = l(x);
  EXPECT_EQ(y.shape(), (Shape{2, 2 + 3 + 2 + 4, 5, 4}));
  const Variable want = F::relu(F::concat({l.conv1()(x), l.conv3()(F::relu(l.proj3()(x))),
                                           l.conv5()(F::relu(l.proj5()(x))), l.projp()(F::max_pooling_2d(x, 3, 1, 1))},
                                          1));
  EXPECT_TRUE(array_equal(y.array(), want.array()));
  L::Inception lazy(0, 2, 2, 3, 2, 2, 4, {.seed = 1});
  EXPECT_TRUE(array_equal(lazy(x).array(), y.array()));  // the same draws once in_channels is known
}

TEST(InceptionLink, GradientsNpzAndErrors) {
  auto guard = using_config("dtype", Dtype::float64);
  L::Inception l(2, 1, 2, 2, 1, 1, 1, {.seed = 3});
  const Variable x(randn({1, 2, 3, 3}, Dtype::float64, 4));
  rensa::test::expect_param_grads(l, [&] { return rensa::test::weighted_sum({l(x)}); });
  L::Inception loaded(2, 1, 2, 2, 1, 1, 1);
  EXPECT_EQ(rensa::test::npz_round_trip(l, loaded).size(), 12u);
  EXPECT_TRUE(array_equal(loaded(x).array(), l(x).array()));
  expect_error<ValueError>([] { L::Inception(3, 0, 2, 3, 2, 2, 4); }, {"Inception", "out1 0"});
  expect_error<ShapeError>([&] { l(Variable(randn({1, 3, 3, 3}))); }, {"Inception: ", "(1, 3, 3, 3)", "(1, 2, 1, 1)"});
}

TEST(InceptionBNLink, ChildrenAndForward) {
  L::InceptionBN l(3, 2, 2, 3, 2, 2, "avg", {.proj_pool = 2, .seed = 1});
  std::vector<std::string> names;
  for (const auto& [name, child] : l.children()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"proj3", "conv3", "proj33", "conv33a", "conv33b", "proj3n", "conv3n",
                                             "proj33n", "conv33an", "conv33bn", "conv1", "conv1n", "poolp", "poolpn"}));
  for (const auto& [path, p] : l.namedparams()) EXPECT_FALSE(path.ends_with("/b")) << path;  // nobias
  const Variable x(randn({2, 3, 5, 5}, Dtype::float32, 2));
  EXPECT_EQ(l(x).shape(), (Shape{2, 2 + 3 + 2 + 2, 5, 5}));
  // Without proj_pool the pooled input is concatenated as it is; stride 2 halves the map.
  L::InceptionBN strided(3, 0, 2, 3, 2, 2, "max", {.stride = 2});
  EXPECT_EQ(strided.children().size(), 10u);
  auto test_mode = using_config("train", false);
  const Variable y = strided(x);
  EXPECT_EQ(y.shape(), (Shape{2, 3 + 2 + 3, 3, 3}));
  const auto parts = F::split_axis(y, std::vector<int64_t>{3, 5}, 1);
  EXPECT_TRUE(array_equal(parts[2].array(), F::max_pooling_2d(x, 3, 2, 1, false).array()));
}

TEST(InceptionBNLink, GradientsNpzAndErrors) {
  auto guard = using_config("dtype", Dtype::float64);
  L::InceptionBN l(2, 1, 1, 2, 1, 1, "max", {.proj_pool = 1, .seed = 3});
  const Variable x(randn({2, 2, 3, 3}, Dtype::float64, 4));
  {
    auto test_mode = using_config("train", false);  // no statistics updated while differencing
    rensa::test::expect_param_grads(l, [&] { return rensa::test::weighted_sum({l(x)}); });
  }
  l(x);  // moves the running statistics
  L::InceptionBN loaded(2, 1, 1, 2, 1, 1, "max", {.proj_pool = 1});
  const auto keys = rensa::test::npz_round_trip(l, loaded);
  EXPECT_EQ(keys.size(), 7u + 7u * 5);  // 7 convolutions' W; 7 normalizations' gamma, beta, avg_*, N
  auto test_mode = using_config("train", false);
  EXPECT_TRUE(array_equal(loaded(x).array(), l(x).array()));
  expect_error<ValueError>([] { L::InceptionBN(3, 2, 2, 3, 2, 2, "sum", {.proj_pool = 2}); },
                           {"InceptionBN", "pooltype", "sum"});
  expect_error<ValueError>([] { L::InceptionBN(3, 2, 2, 3, 2, 2, "max", {.proj_pool = 2, .stride = 2}); },
                           {"InceptionBN", "out1 2", "stride 2"});
  expect_error<ValueError>([] { L::InceptionBN(3, 2, 2, 3, 2, 2, "max"); }, {"InceptionBN", "proj_pool"});
  expect_error<ShapeError>([&] { l(Variable(randn({2, 3, 3, 3}))); }, {"InceptionBN: ", "(2, 3, 3, 3)"});
}

// The reference script's model (tests/fixtures/README.md); bn_max takes in_channels from the file.
struct InceptionModel : Chain {
  L::Inception inc{3, 2, 2, 3, 2, 2, 2};
  L::InceptionBN bn_avg{3, 2, 2, 3, 2, 2, "avg", {.proj_pool = 2}};
  L::InceptionBN bn_max{0, 0, 2, 3, 2, 2, "max", {.stride = 2}};
  InceptionModel() {
    add_link("inc", inc);
    add_link("bn_avg", bn_avg);
    add_link("bn_max", bn_max);
  }
};

TEST(InceptionLinks, LoadChainerNpzAndMatchOutputs) {
  const std::string dir = RENSA_TEST_FIXTURES_DIR;
  InceptionModel m;
  serializers::load_npz(dir + "/chainer_inception.npz", m);
  const Variable x(sin_array({2, 3, 5, 5}, 1.0).astype(Dtype::float32));
  std::map<std::string, Variable> got;
  {
    auto test_mode = using_config("train", false);
    got = {{"inc", m.inc(x)}, {"bn_avg", m.bn_avg(x)}, {"bn_max", m.bn_max(x)}};
  }
  got["bn_avg_train"] = m.bn_avg(x);
  got["bn_max_train"] = m.bn_max(x);
  const auto want = serializers::read_npz(dir + "/chainer_inception_outputs.npz");
  ASSERT_EQ(want.size(), got.size());
  for (const auto& [name, y] : got) {
    ASSERT_TRUE(want.count(name)) << name;
    const Array& w = want.at(name);
    ASSERT_EQ(y.shape(), w.shape()) << name;
    EXPECT_TRUE(allclose(y.array(), w, 1e-4, 1e-5)) << name << "\nrensa: " << y.array() << "\nChainer: " << w;
  }
}
