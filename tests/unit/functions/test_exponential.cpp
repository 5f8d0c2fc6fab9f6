#include <cmath>
#include <functional>
#include <string>
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
Variable vec(const std::vector<double>& v) {
  return Variable(Array::from_vector(v));
}
}  // namespace

TEST(Exponential, Conforms) {
  const std::vector<FunctionCase> cases = {
      {.name = "expm1", .f = unary_fn(F::expm1), .shapes = {{3, 4}}},
      {.name = "log1p", .f = unary_fn(F::log1p), .shapes = {{3, 4}}, .lo = -0.7, .hi = 2.0},
      {.name = "log2", .f = unary_fn(F::log2), .shapes = {{3, 4}}, .lo = 0.3, .hi = 3.0},
      {.name = "log10", .f = unary_fn(F::log10), .shapes = {{3, 4}}, .lo = 0.3, .hi = 3.0},
      {.name = "rsqrt", .f = unary_fn(F::rsqrt), .shapes = {{3, 4}}, .lo = 0.3, .hi = 3.0},
  };
  for (const auto& c : cases) expect_conforms(c);
}

TEST(Exponential, KnownValues) {
  EXPECT_EQ(values(F::log2(vec({0.25, 1.0, 8.0}))), (std::vector<double>{-2, 0, 3}));
  EXPECT_EQ(values(F::log10(vec({0.01, 1.0, 1000.0}))), (std::vector<double>{-2, 0, 3}));
  EXPECT_EQ(values(F::rsqrt(vec({0.25, 4.0, 0.0}))), (std::vector<double>{2, 0.5, INFINITY}));
  // Accurate where exp(x) - 1 and log(1 + x) cancel.
  EXPECT_NEAR(values(F::expm1(vec({1e-10})))[0], 1.00000000005e-10, 1e-25);
  EXPECT_NEAR(values(F::log1p(vec({1e-10})))[0], 9.9999999995e-11, 1e-25);
  EXPECT_EQ(values(F::log1p(vec({-1.0})))[0], -INFINITY);
  EXPECT_TRUE(std::isnan(values(F::log2(vec({-1.0})))[0]));
}

TEST(Exponential, GradientKnownValues) {
  Variable x(Array::from_vector<double>({4.0}), true);
  F::rsqrt(x).backward();
  EXPECT_NEAR(x.grad().array().item<double>(), -0.5 / 8.0, 1e-16);  // -x^(-3/2) / 2
  x.cleargrad();
  F::log2(x).backward();
  EXPECT_NEAR(x.grad().array().item<double>(), 1.0 / (4.0 * std::log(2.0)), 1e-16);
}

TEST(Exponential, Errors) {
  const Array ints = Array::zeros({2, 3}, Dtype::int64);
  for (const auto& [name, f] : std::vector<std::pair<std::string, std::function<Variable(const Variable&)>>>{
           {"expm1", F::expm1}, {"log1p", F::log1p}, {"log2", F::log2}, {"log10", F::log10}, {"rsqrt", F::rsqrt}}) {
    expect_error<DtypeError>([&, f = f] { f(Variable(ints)); }, {name, "int64", "(2, 3)"});
    expect_error<ValueError>([&, f = f] { f(Variable()); }, {name, "null"});
  }
}
