// The GRU links (StatelessGRU, StatefulGRU = GRU): Chainer 7.8.1's outputs on the same inputs and
// parameters, gradients, state (reset, snapshots) and errors.
#include <string>
#include <vector>

#include "tests/unit/links/recurrent_test_util.h"

using namespace rensa;
namespace L = rensa::links;
namespace I = rensa::initializers;
using rensa::test::expect_error;
using rensa::test::expect_param_grads;
using rensa::test::expect_values;
using rensa::test::set_params;
using rensa::test::sin_array;
using rensa::test::sin_var;
using Vars = std::vector<Variable>;

namespace {
constexpr int64_t kI = 3, kH = 2;
Variable step_input(int64_t t) {
  return sin_var({2, kI}, 1.0 + 0.1 * static_cast<double>(t));
}
}  // namespace

TEST(GRU, ChildrenAndInitializers) {
  L::GRU l(kI, kH, {.bias_init = std::make_shared<I::Constant>(0.25), .seed = 2});
  const auto params = l.namedparams();
  ASSERT_EQ(params.size(), 12u);
  const std::vector<std::string> names{"/W_r/W", "/W_r/b", "/U_r/W", "/U_r/b", "/W_z/W", "/W_z/b",
                                       "/U_z/W", "/U_z/b", "/W/W",   "/W/b",   "/U/W",   "/U/b"};
  for (std::size_t i = 0; i < names.size(); ++i) EXPECT_EQ(params[i].first, names[i]);
  EXPECT_EQ(l.W().W().shape(), (Shape{kH, kI}));
  EXPECT_EQ(l.U().W().shape(), (Shape{kH, kH}));
  for (double b : l.U_z().b().array().to_vector<double>()) EXPECT_EQ(b, 0.25);
  // Children draw from distinct seeds.
  EXPECT_FALSE(array_equal(l.U_r().W().array(), l.U_z().W().array()));
  L::StatelessGRU s(kI, kH, {.init = std::make_shared<I::One>(), .inner_init = std::make_shared<I::Zero>()});
  for (double w : s.W_z().W().array().to_vector<double>()) EXPECT_EQ(w, 1.0);
  for (double w : s.U_z().W().array().to_vector<double>()) EXPECT_EQ(w, 0.0);
  for (double b : s.U_z().b().array().to_vector<double>()) EXPECT_EQ(b, 0.0);
  L::StatefulGRU lazy(kH);
  EXPECT_EQ(lazy.in_size(), -1);
  EXPECT_EQ(lazy(Variable(Array::zeros({2, 5}))).shape(), (Shape{2, kH}));
  EXPECT_EQ(lazy.in_size(), 5);
}

TEST(GRU, MatchesChainer) {
  auto guard = using_config("dtype", Dtype::float64);
  L::StatefulGRU l(kI, kH);
  set_params(l, 0.6);
  // The first step has no state: no U terms (Chainer's h = z tanh(W x)).
  expect_values(l(step_input(0)), {0.805268759987294, 0.490990721000746, 0.683320976467374, 0.480791914312171});
  expect_values(l(step_input(1)), {0.977268024840214, 0.891444798953766, 0.926561486422663, 0.875756483278234});
  L::StatelessGRU s(kI, kH);
  set_params(s, 0.6);
  expect_values(s(sin_var({2, kH}, 0.3), sin_var({2, kI}, 0.5)),
                {0.911013868923693, 0.870809863193857, 0.983963838656444, 0.9835738223176});
}

TEST(GRU, Gradients) {
  auto guard = using_config("dtype", Dtype::float64);
  L::StatefulGRU l(kI, kH);
  set_params(l, 0.6);
  auto run = [&](const Vars& x) {
    l.reset_state();
    Vars ys;
    for (const Variable& xt : x) ys.push_back(l(xt));
    return ys;
  };
  rensa::testing::check_backward(run, {step_input(0).array(), step_input(1).array(), step_input(2).array()});
  expect_param_grads(l, [&] { return rensa::test::weighted_sum(run({step_input(0), step_input(1)})); });
  L::StatelessGRU s(kI, kH);
  set_params(s, 0.6);
  auto f = [&](const Vars& in) { return Vars{s(in[0], in[1])}; };
  rensa::testing::check_backward(f, {sin_array({2, kH}, 0.3), sin_array({2, kI}, 0.5)});
  expect_param_grads(s, [&] { return rensa::test::weighted_sum(f({sin_var({2, kH}, 0.3), sin_var({2, kI}, 0.5)})); });
}

TEST(GRU, StateResetAndSnapshots) {
  auto guard = using_config("dtype", Dtype::float64);
  L::GRU a(kI, kH);
  set_params(a, 0.6);
  const Array first = a(step_input(0)).array();
  a.reset_state();
  EXPECT_TRUE(a.h().is_null());
  EXPECT_TRUE(array_equal(a(step_input(0)).array(), first));
  const std::string path = rensa::test::temp_npz("gru_state");
  serializers::save_npz(path, a);
  L::GRU b(kI, kH);
  serializers::load_npz(path, b);
  rensa::test::expect_same_params(a, b);
  EXPECT_TRUE(array_equal(b.h().array(), a.h().array()));
  EXPECT_TRUE(array_equal(b(step_input(1)).array(), a(step_input(1)).array()));
  a.reset_state();
  serializers::save_npz(path, a);
  serializers::load_npz(path, b);
  EXPECT_TRUE(b.h().is_null());
  std::filesystem::remove(path);
  b.set_state(sin_var({2, kH}, 0.1));
  EXPECT_EQ(b.h().shape(), (Shape{2, kH}));
  b.to_device(Device::reference());
  EXPECT_EQ(b.h().device(), Device::reference());
}

TEST(GRU, Errors) {
  expect_error<ValueError>([] { L::StatefulGRU(3, 0); }, {"StatefulGRU", "out_size"});
  L::StatefulGRU l(kI, kH);
  expect_error<ShapeError>([&] { l(Variable(Array::zeros({2, 4}))); }, {"StatefulGRU", "(2, 4)", "in_size 3"});
  l(Variable(Array::zeros({2, 3})));
  expect_error<ShapeError>([&] { l(Variable(Array::zeros({3, 3}))); }, {"StatefulGRU", "h (2, 2)", "x (3, 3)"});
  expect_error<ShapeError>([&] { l.set_state(Variable(Array::zeros({2, 3}))); }, {"StatefulGRU::set_state", "(2, 3)"});
  L::StatelessGRU s(kI, kH);
  expect_error<ShapeError>(
      [&] {
        s(Variable(Array::zeros({2, 3})), Variable(Array::zeros({2, 3})));
      },
      {"StatelessGRU", "h (2, 3)", "x (2, 3)"});
  expect_error<ValueError>([&] { s(Variable(), Variable(Array::zeros({2, 3}))); }, {"StatelessGRU", "h is null"});
}
