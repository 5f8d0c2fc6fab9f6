#include <cmath>
#include <string>
#include <vector>

#include "tests/unit/functions/conformance.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
using rensa::test::expect_conforms;
using rensa::test::expect_error;
using rensa::test::FunctionCase;

namespace {

std::vector<double> values(const Variable& v) {
  return v.array().to_vector<double>();
}

Variable vec(const std::vector<double>& v) {
  return Variable(Array::from_vector(v));
}

}  // namespace

TEST(Trigonometric, Conforms) {
  using rensa::test::binary_fn;
  using rensa::test::unary_fn;
  const std::vector<FunctionCase> cases = {
      {.name = "sin", .f = unary_fn(F::sin), .shapes = {{3, 4}}, .lo = -3.0, .hi = 3.0},
      {.name = "cos", .f = unary_fn(F::cos), .shapes = {{3, 4}}, .lo = -3.0, .hi = 3.0},
      // Away from the poles at +-pi/2.
      {.name = "tan", .f = unary_fn(F::tan), .shapes = {{3, 4}}, .lo = -1.2, .hi = 1.2},
      {.name = "arcsin", .f = unary_fn(F::arcsin), .shapes = {{3, 4}}, .lo = -0.8, .hi = 0.8},
      {.name = "arccos", .f = unary_fn(F::arccos), .shapes = {{3, 4}}, .lo = -0.8, .hi = 0.8},
      {.name = "arctan", .f = unary_fn(F::arctan), .shapes = {{3, 4}}, .lo = -3.0, .hi = 3.0},
      {.name = "sinh", .f = unary_fn(F::sinh), .shapes = {{3, 4}}},
      {.name = "cosh", .f = unary_fn(F::cosh), .shapes = {{3, 4}}},
      {.name = "arctanh", .f = unary_fn(F::arctanh), .shapes = {{3, 4}}, .lo = -0.8, .hi = 0.8},
      // Away from the origin, where the angle jumps.
      {.name = "arctan2", .f = binary_fn(F::arctan2), .shapes = {{3, 4}, {3, 4}}, .lo = 0.3, .hi = 2.0},
      {.name = "arctan2_broadcast", .f = binary_fn(F::arctan2), .shapes = {{3, 4}, {1, 4}}, .lo = 0.3, .hi = 2.0},
  };
  for (const auto& c : cases) expect_conforms(c);
}

TEST(Trigonometric, KnownValues) {
  const double pi = std::acos(-1.0);
  const Variable x = vec({-0.5, 0.0, 0.5});
  const auto near = [](const std::vector<double>& got, const std::vector<double>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-15) << i;
  };
  near(values(F::sin(vec({pi / 6, pi / 2}))), {0.5, 1.0});
  near(values(F::cos(vec({pi / 3, pi}))), {0.5, -1.0});
  near(values(F::tan(vec({pi / 4}))), {1.0});
  near(values(F::arcsin(x)), {-pi / 6, 0, pi / 6});
  near(values(F::arccos(x)), {2 * pi / 3, pi / 2, pi / 3});
  near(values(F::arctan(vec({-1.0, 1.0}))), {-pi / 4, pi / 4});
  near(values(F::arctan2(vec({1.0, 1.0, -1.0, 0.0}), vec({1.0, -1.0, -1.0, -1.0}))),
       {pi / 4, 3 * pi / 4, -3 * pi / 4, pi});
  near(values(F::sinh(vec({std::log(2.0)}))), {0.75});
  near(values(F::cosh(vec({std::log(2.0)}))), {1.25});
  near(values(F::arctanh(x)), {-0.5 * std::log(3.0), 0, 0.5 * std::log(3.0)});
  EXPECT_TRUE(std::isnan(values(F::arcsin(vec({1.5})))[0]));
  EXPECT_EQ(values(F::arctanh(vec({1.0})))[0], INFINITY);
}

TEST(Trigonometric, GradientKnownValues) {
  Variable x(Array::from_vector<double>({0.5}), true);
  F::arcsin(x).backward();
  EXPECT_NEAR(x.grad().array().item<double>(), 1.0 / std::sqrt(0.75), 1e-15);
  Variable a(Array::from_vector<double>({1.0}), true), b(Array::from_vector<double>({2.0}), true);
  F::arctan2(a, b).backward();
  EXPECT_NEAR(a.grad().array().item<double>(), 2.0 / 5.0, 1e-15);
  EXPECT_NEAR(b.grad().array().item<double>(), -1.0 / 5.0, 1e-15);
}

TEST(Trigonometric, Errors) {
  const Array ints = Array::zeros({2, 3}, Dtype::int32);
  for (const auto& [name, f] :
       std::vector<std::pair<std::string, std::function<Variable(const Variable&)>>>{{"sin", F::sin},
                                                                                     {"cos", F::cos},
                                                                                     {"tan", F::tan},
                                                                                     {"arcsin", F::arcsin},
                                                                                     {"arccos", F::arccos},
                                                                                     {"arctan", F::arctan},
                                                                                     {"sinh", F::sinh},
                                                                                     {"cosh", F::cosh},
                                                                                     {"arctanh", F::arctanh}}) {
    expect_error<DtypeError>([&, f = f] { f(Variable(ints)); }, {name, "int32", "(2, 3)"});
    expect_error<ValueError>([&, f = f] { f(Variable()); }, {name, "null"});
  }
  expect_error<ShapeError>(
      [] {
        F::arctan2(Variable(Array::zeros({2, 3})), Variable(Array::zeros({4})));
      },
      {"arctan2", "(2, 3)", "(4,)"});
  expect_error<DtypeError>(
      [] { F::arctan2(Variable(Array::zeros({2}, Dtype::float32)), Variable(Array::zeros({2}, Dtype::float64))); },
      {"arctan2", "float32", "float64"});
  expect_error<DtypeError>([&] { F::arctan2(Variable(ints), Variable(ints)); }, {"arctan2", "int32"});
}
