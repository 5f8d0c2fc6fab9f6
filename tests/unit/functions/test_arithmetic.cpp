// Chainer's arithmetic beside the basic functions: absolute, squared_difference, identity,
// linear_interpolate, bias and scale.
#include <vector>

#include "tests/unit/functions/conformance.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
using rensa::test::binary_fn;
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

TEST(Arithmetic, Conforms) {
  const std::vector<FunctionCase> cases = {
      {.name = "absolute", .f = rensa::test::unary_fn(F::absolute), .shapes = {{3, 4}}, .kinks = {0.0}},
      {.name = "squared_difference", .f = binary_fn(F::squared_difference), .shapes = {{3, 4}, {3, 4}}},
      {.name = "linear_interpolate",
       .f =
           [](const std::vector<Variable>& v) {
             return std::vector<Variable>{F::linear_interpolate(v[0], v[1], v[2])};
           },
       .shapes = {{3, 4}, {3, 4}, {3, 4}}},
      {.name = "identity", .f = [](const std::vector<Variable>& v) { return F::identity(v); }, .shapes = {{3, 4}, {2}}},
      {.name = "bias",
       .f = binary_fn([](const Variable& x, const Variable& y) { return F::bias(x, y); }),
       .shapes = {{2, 3, 4, 2}, {3, 4}}},
      {.name = "bias_axis0",
       .f = binary_fn([](const Variable& x, const Variable& y) { return F::bias(x, y, 0); }),
       .shapes = {{3, 4}, {3}},
       .batched = {true, true}},  // y runs along x's axis 0
      {.name = "scale",
       .f = binary_fn([](const Variable& x, const Variable& y) { return F::scale(x, y); }),
       .shapes = {{2, 3, 4}, {3}}},
      {.name = "scale_last",
       .f = binary_fn([](const Variable& x, const Variable& y) { return F::scale(x, y, 2); }),
       .shapes = {{2, 3, 4}, {4}}},
  };
  for (const auto& c : cases) expect_conforms(c);
}

TEST(Arithmetic, KnownValues) {
  EXPECT_EQ(values(F::absolute(vec({-2, 0, 3}))), (std::vector<double>{2, 0, 3}));
  EXPECT_EQ(values(F::squared_difference(vec({1, 5}), vec({4, 2}))), (std::vector<double>{9, 9}));
  EXPECT_EQ(values(F::linear_interpolate(vec({0.25, 1}), vec({4, 4}), vec({8, 8}))), (std::vector<double>{7, 4}));
  const Variable x(Array::zeros({2, 3, 2}, Dtype::float64));
  const Variable y(Array::from_vector<double>({1, 2, 3}));
  EXPECT_EQ(values(F::bias(x, y)), (std::vector<double>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  const Variable ones(Array::ones({2, 3}, Dtype::float64));
  EXPECT_EQ(values(F::scale(ones, y, 1)), (std::vector<double>{1, 2, 3, 1, 2, 3}));
  // identity: new variables on the same data, whose gradients pass through.
  Variable a(Array::from_vector<double>({1, 2}), true), b(Array::from_vector<double>({3}), true);
  const auto outs = F::identity({a, b});
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(values(outs[1]), (std::vector<double>{3}));
  EXPECT_STREQ(outs[0].creator()->label(), "identity");
  F::sum(F::mul(outs[0], 3.0)).backward();
  EXPECT_EQ(a.grad().array().to_vector<double>(), (std::vector<double>{3, 3}));
  EXPECT_EQ(b.grad().array().to_vector<double>(), (std::vector<double>{0}));  // an unused output passes zeros
  EXPECT_EQ(values(F::identity(vec({5}))), (std::vector<double>{5}));
}

TEST(Arithmetic, Errors) {
  const Variable x(Array::zeros({2, 3}));
  expect_error<ShapeError>([&] { F::squared_difference(x, Variable(Array::zeros({3}))); },
                           {"squared_difference", "(2, 3)", "(3,)"});
  expect_error<DtypeError>(
      [&] {
        F::squared_difference(x, Variable(Array::zeros({2, 3}, Dtype::float64)));
      },
      {"squared_difference", "float32", "float64"});
  expect_error<DtypeError>(
      [] {
        F::squared_difference(Variable(Array::zeros({2}, Dtype::int32)), Variable(Array::zeros({2}, Dtype::int32)));
      },
      {"squared_difference", "int32"});
  expect_error<ShapeError>(
      [&] {
        F::linear_interpolate(x, x, Variable(Array::zeros({2, 1})));
      },
      {"linear_interpolate", "(2, 3)", "(2, 1)"});
  expect_error<DtypeError>(
      [&] {
        F::linear_interpolate(x, x, Variable(Array::zeros({2, 3}, Dtype::float64)));
      },
      {"linear_interpolate", "float64"});
  expect_error<ShapeError>([&] { F::bias(x, Variable(Array::zeros({2}))); }, {"bias", "(2,)", "(2, 3)", "axis 1"});
  expect_error<ShapeError>([&] { F::scale(x, Variable(Array::zeros({3, 1})), 1); }, {"scale", "(3, 1)", "(2, 3)"});
  expect_error<IndexError>([&] { F::bias(x, Variable(Array::zeros({3})), 3); }, {"bias", "axis 3", "(2, 3)"});
  expect_error<IndexError>([&] { F::scale(x, Variable(Array::zeros({3})), -1); }, {"scale", "axis -1"});
  expect_error<ValueError>([] { F::identity({Variable()}); }, {"identity", "null"});
}
