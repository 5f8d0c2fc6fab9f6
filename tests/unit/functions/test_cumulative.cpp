#include <cmath>
#include <vector>

#include "tests/unit/functions/conformance.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
using rensa::test::expect_conforms;
using rensa::test::expect_error;
using rensa::test::FunctionCase;
using rensa::test::unary_fn;

namespace {

std::vector<double> values(const Variable& v) {
  return v.array().to_vector<double>();
}

// Uniform inputs with every third element exactly 0 (products whose gradients must not divide by x).
Array with_zeros(std::size_t, const Shape& shape, Dtype dtype, uint64_t seed) {
  auto v = rensa::test::randu(shape, 0.5, 1.5, Dtype::float64, seed).to_vector<double>();
  for (std::size_t i = 0; i < v.size(); i += 3) v[i] = 0.0;
  return Array::from_vector(v, shape).astype(dtype);
}

}  // namespace

TEST(Cumulative, Conforms) {
  const std::vector<FunctionCase> cases = {
      {.name = "cumsum_axis1", .f = unary_fn([](const Variable& x) { return F::cumsum(x, 1); }), .shapes = {{3, 4}}},
      {.name = "cumsum_axis0", .f = unary_fn([](const Variable& x) { return F::cumsum(x, 0); }), .shapes = {{3, 4, 2}}},
      {.name = "cumsum_flat", .f = unary_fn([](const Variable& x) { return F::cumsum(x); }), .shapes = {{3, 4}}},
      {.name = "cumprod_axis1",
       .f = unary_fn([](const Variable& x) { return F::cumprod(x, 1); }),
       .shapes = {{3, 4}},
       .lo = 0.5,
       .hi = 1.5},
      {.name = "cumprod_axis_last",
       .f = unary_fn([](const Variable& x) { return F::cumprod(x, -1); }),
       .shapes = {{2, 3, 5}},
       .lo = -1.5,
       .hi = 1.5},
      {.name = "cumprod_flat",
       .f = unary_fn([](const Variable& x) { return F::cumprod(x); }),
       .shapes = {{3, 4}},
       .lo = 0.5,
       .hi = 1.2},
      {.name = "cumprod_zeros",
       .f = unary_fn([](const Variable& x) { return F::cumprod(x, 0); }),
       .shapes = {{7, 3}},
       .make_input = with_zeros},
  };
  for (const auto& c : cases) expect_conforms(c);
}

TEST(Cumulative, KnownValues) {
  const Variable x(Array::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3}));
  EXPECT_EQ(values(F::cumsum(x, 1)), (std::vector<double>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(values(F::cumsum(x, -2)), (std::vector<double>{1, 2, 3, 5, 7, 9}));
  EXPECT_EQ(values(F::cumsum(x)), (std::vector<double>{1, 3, 6, 10, 15, 21}));
  EXPECT_EQ(F::cumsum(x).shape(), (Shape{6}));
  EXPECT_EQ(values(F::cumprod(x, 1)), (std::vector<double>{1, 2, 6, 4, 20, 120}));
  EXPECT_EQ(values(F::cumprod(x)), (std::vector<double>{1, 2, 6, 24, 120, 720}));
  EXPECT_EQ(F::cumsum(Variable(Array::scalar(2.0))).shape(), (Shape{1}));
  EXPECT_EQ(F::cumprod(Variable(Array::zeros({0, 3})), 0).shape(), (Shape{0, 3}));
}

TEST(Cumulative, GradientsWithZeros) {
  // d/dx sum(cumprod([2, 0, 3])) = [1 + x1 + x1 x2, x0 + x0 x2, x0 x1] = [1, 8, 0].
  Variable x(Array::from_vector<double>({2, 0, 3}), true);
  F::sum(F::cumprod(x)).backward();
  EXPECT_EQ(x.grad().array().to_vector<double>(), (std::vector<double>{1, 8, 0}));
  Variable z(Array::from_vector<double>({0, 0, 3}), true);
  F::sum(F::cumprod(z)).backward();
  EXPECT_EQ(z.grad().array().to_vector<double>(), (std::vector<double>{1, 0, 0}));
  // cumsum's gradient is the reversed cumulative sum.
  Variable s(Array::from_vector<double>({1, 1, 1}), true);
  F::sum(F::mul(F::cumsum(s), Variable(Array::from_vector<double>({1, 2, 3})))).backward();
  EXPECT_EQ(s.grad().array().to_vector<double>(), (std::vector<double>{6, 5, 3}));
}

TEST(Cumulative, Errors) {
  const Variable x(Array::zeros({2, 3}));
  expect_error<IndexError>([&] { F::cumsum(x, 2); }, {"cumsum", "axis 2"});
  expect_error<IndexError>([&] { F::cumprod(x, -3); }, {"cumprod", "axis -3"});
  expect_error<DtypeError>(
      [] {
        F::cumsum(Variable(Array::zeros({2, 3}, Dtype::int32)));
      },
      {"cumsum", "int32", "(2, 3)"});
  expect_error<DtypeError>([] { F::cumprod(Variable(Array::zeros({2}, Dtype::int64)), 0); }, {"cumprod", "int64"});
  expect_error<ValueError>([] { F::cumsum(Variable()); }, {"cumsum", "null"});
}
