// The MGU links (StatelessMGU, StatefulMGU): Chainer 7.8.1's outputs on the same inputs and
// parameters, gradients, state and errors.
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
Variable step_input(int64_t t) {
  return sin_var({2, kI}, 1.0 + 0.1 * static_cast<double>(t));
}
}  // namespace

TEST(MGU, ChildrenAndChainerValues) {
  auto guard = using_config("dtype", Dtype::float64);
  L::StatefulMGU l(kI, kH);
  const auto params = l.namedparams();
  ASSERT_EQ(params.size(), 4u);
  EXPECT_EQ(params[0].first, "/W_f/W");
  EXPECT_EQ(params[3].first, "/W_h/b");
  EXPECT_EQ(l.W_f().W().shape(), (Shape{kH, kI + kH}));
  set_params(l, 0.8);
  expect_values(l(step_input(0)), {0.770856392267778, -0.194193299946323, 0.64826233391729, -0.0239210703877455});
  expect_values(l(step_input(1)), {0.926909081999991, -0.282631035467712, 0.824740781850015, 0.0555385400370607});
  L::StatelessMGU s(kI, kH);
  set_params(s, 0.8);
  expect_values(s(sin_var({2, kH}, 0.3), sin_var({2, kI}, 0.5)),
                {0.82185920041786, 0.185603603445595, 0.962668403447216, 0.334679228784941});
}

TEST(MGU, Gradients) {
  auto guard = using_config("dtype", Dtype::float64);
  L::StatefulMGU l(kI, kH);
  set_params(l, 0.8);
  auto run = [&](const Vars& x) {
    l.reset_state();
    Vars ys;
    for (const Variable& xt : x) ys.push_back(l(xt));
    return ys;
  };
  rensa::testing::check_backward(run, {step_input(0).array(), step_input(1).array()});
  expect_param_grads(l, [&] { return rensa::test::weighted_sum(run({step_input(0), step_input(1)})); });
  L::StatelessMGU s(kI, kH);
  set_params(s, 0.8);
  auto f = [&](const Vars& in) { return Vars{s(in[0], in[1])}; };
  rensa::testing::check_backward(f, {sin_array({2, kH}, 0.3), sin_array({2, kI}, 0.5)});
}

TEST(MGU, StateAndErrors) {
  auto guard = using_config("dtype", Dtype::float64);
  L::StatefulMGU a(kI, kH);
  set_params(a, 0.8);
  const Array first = a(step_input(0)).array();
  const std::string path = rensa::test::temp_npz("mgu_state");
  serializers::save_npz(path, a);
  L::StatefulMGU b(kI, kH);
  serializers::load_npz(path, b);
  std::filesystem::remove(path);
  EXPECT_TRUE(array_equal(b.h().array(), first));
  EXPECT_TRUE(array_equal(b(step_input(1)).array(), a(step_input(1)).array()));
  a.reset_state();
  EXPECT_TRUE(a.h().is_null());
  EXPECT_TRUE(array_equal(a(step_input(0)).array(), first));
  expect_error<ShapeError>(
      [&] {
        a(Variable(Array::zeros({3, kI}, Dtype::float64)));
      },
      {"StatefulMGU", "h (2, 2)", "x (3, 3)"});
  expect_error<ShapeError>(
      [&] {
        a(Variable(Array::zeros({2, 4}, Dtype::float64)));
      },
      {"StatefulMGU", "x (2, 4)", "(B, 3)"});
  expect_error<ValueError>([] { L::StatelessMGU(-1, 2); }, {"StatelessMGU", "in_size", "-1"});
  L::StatelessMGU s(kI, kH);
  expect_error<ShapeError>(
      [&] {
        s(Variable(Array::zeros({1, 2})), Variable(Array::zeros({2, 3})));
      },
      {"StatelessMGU", "h (1, 2)", "x (2, 3)"});
}
