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
constexpr double kEuler = 0.57721566490153286061;
const double kPi = std::acos(-1.0);
}  // namespace

TEST(Special, Conforms) {
  const Array orders = Array::from_vector<int64_t>({0, 1, 2, 3}, {4});
  const Array exponents = Array::from_vector<double>({2.0, 2.5, 3.0, 4.5}, {4});
  const std::vector<FunctionCase> cases = {
      {.name = "erf", .f = unary_fn(F::erf), .shapes = {{3, 4}}},
      {.name = "erfc", .f = unary_fn(F::erfc), .shapes = {{3, 4}}},
      {.name = "erfcx", .f = unary_fn(F::erfcx), .shapes = {{3, 4}}},
      {.name = "erfinv", .f = unary_fn(F::erfinv), .shapes = {{3, 4}}, .lo = -0.9, .hi = 0.9},
      {.name = "erfcinv", .f = unary_fn(F::erfcinv), .shapes = {{3, 4}}, .lo = 0.1, .hi = 1.9},
      {.name = "ndtr", .f = unary_fn(F::ndtr), .shapes = {{3, 4}}, .lo = -3.0, .hi = 3.0},
      {.name = "ndtri", .f = unary_fn(F::ndtri), .shapes = {{3, 4}}, .lo = 0.05, .hi = 0.95},
      {.name = "log_ndtr", .f = unary_fn(F::log_ndtr), .shapes = {{3, 4}}, .lo = -6.0, .hi = 3.0},
      {.name = "lgamma", .f = unary_fn(F::lgamma), .shapes = {{3, 4}}, .lo = 0.3, .hi = 5.0},
      {.name = "digamma", .f = unary_fn(F::digamma), .shapes = {{3, 4}}, .lo = 0.3, .hi = 5.0},
      {.name = "polygamma_2",
       .f = unary_fn([](const Variable& x) { return F::polygamma(2, x); }),
       .shapes = {{3, 4}},
       .lo = 0.5,
       .hi = 4.0},
      {.name = "polygamma_orders",
       .f = unary_fn([orders](const Variable& x) { return F::polygamma(orders.to(x.device()), x); }),
       .shapes = {{3, 4}},
       .lo = 0.5,
       .hi = 4.0},
      {.name = "zeta",
       .f = unary_fn([](const Variable& q) { return F::zeta(2.5, q); }),
       .shapes = {{3, 4}},
       .lo = 0.5,
       .hi = 3.0},
      {.name = "zeta_exponents",
       .f = unary_fn([exponents](const Variable& q) { return F::zeta(exponents.to(q.device()), q); }),
       .shapes = {{3, 4}},
       .lo = 0.5,
       .hi = 3.0},
  };
  for (const auto& c : cases) expect_conforms(c);
}

TEST(Special, KnownValues) {
  const auto near = [](const std::vector<double>& got, const std::vector<double>& want, double rtol) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], rtol * std::abs(want[i])) << i;
  };
  near(values(F::erf(vec({0.5}))), {std::erf(0.5)}, 1e-16);
  near(values(F::erfcx(vec({1.0, 30.0}))), {0.427583576155807, 0.01879588886141675}, 4e-15);
  near(values(F::erfinv(vec({0.5, -0.9}))), {0.4769362762044699, -1.163087153676674}, 2e-15);
  near(values(F::erfcinv(vec({1e-100}))), {15.065574702592645}, 2e-15);
  near(values(F::ndtr(vec({-2.0}))), {0.022750131948179208}, 2e-15);
  near(values(F::ndtri(vec({0.025}))), {-1.9599639845400543}, 2e-15);
  near(values(F::log_ndtr(vec({-40.0}))), {-804.6084420137538}, 1e-14);
  near(values(F::lgamma(vec({0.5, 10.0}))), {0.5 * std::log(kPi), std::log(362880.0)}, 1e-15);
  near(values(F::digamma(vec({1.0, 0.5}))), {-kEuler, -kEuler - 2 * std::log(2.0)}, 4e-15);
  near(values(F::polygamma(1, vec({1.0, 0.5}))), {kPi * kPi / 6, kPi * kPi / 2}, 4e-15);
  near(values(F::polygamma(Array::from_vector<int64_t>({0, 1}), vec({1.0, 1.0}))), {-kEuler, kPi * kPi / 6}, 4e-15);
  near(values(F::zeta(2.0, vec({1.0, 2.0}))), {kPi * kPi / 6, kPi * kPi / 6 - 1}, 4e-15);
  near(values(F::zeta(Array::from_vector<double>({2.0, 4.0}), vec({1.0}))), {kPi * kPi / 6, std::pow(kPi, 4) / 90},
       4e-15);
  // Poles and domains give inf and NaN, as SciPy, rather than errors.
  EXPECT_EQ(values(F::lgamma(vec({0.0})))[0], INFINITY);
  EXPECT_TRUE(std::isnan(values(F::digamma(vec({-1.0})))[0]));
  EXPECT_TRUE(std::isnan(values(F::erfinv(vec({2.0})))[0]));
  EXPECT_TRUE(std::isnan(values(F::zeta(0.5, vec({1.0})))[0]));
}

TEST(Special, GradientKnownValues) {
  // lgamma' = digamma, digamma' = polygamma(1), zeta's gradient in q is -x zeta(x + 1, q).
  Variable x(Array::from_vector<double>({1.0}), true);
  F::lgamma(x).backward();
  EXPECT_NEAR(x.grad().array().item<double>(), -kEuler, 1e-15);
  x.cleargrad();
  F::digamma(x).backward();
  EXPECT_NEAR(x.grad().array().item<double>(), kPi * kPi / 6, 1e-14);
  x.cleargrad();
  F::zeta(3.0, x).backward();
  EXPECT_NEAR(x.grad().array().item<double>(), -3.0 * std::pow(kPi, 4) / 90, 1e-14);
  x.cleargrad();
  F::ndtri(x * 0.5).backward();
  EXPECT_NEAR(x.grad().array().item<double>(), 0.5 * std::sqrt(2 * kPi), 1e-15);
  // The broadcast x of polygamma receives the sum over the orders.
  Variable y(Array::from_vector<double>({1.0}), true);
  F::sum(F::polygamma(Array::from_vector<int64_t>({0, 1}), y)).backward();
  EXPECT_NEAR(y.grad().array().item<double>(), kPi * kPi / 6 - 2 * 1.2020569031595942, 1e-14);
}

TEST(Special, Errors) {
  const Array ints = Array::zeros({2, 3}, Dtype::int32);
  for (const auto& [name, f] :
       std::vector<std::pair<std::string, std::function<Variable(const Variable&)>>>{{"erf", F::erf},
                                                                                     {"erfc", F::erfc},
                                                                                     {"erfcx", F::erfcx},
                                                                                     {"erfinv", F::erfinv},
                                                                                     {"erfcinv", F::erfcinv},
                                                                                     {"ndtr", F::ndtr},
                                                                                     {"ndtri", F::ndtri},
                                                                                     {"log_ndtr", F::log_ndtr},
                                                                                     {"lgamma", F::lgamma},
                                                                                     {"digamma", F::digamma}}) {
    expect_error<DtypeError>([&, f = f] { f(Variable(ints)); }, {name, "int32", "(2, 3)"});
    expect_error<ValueError>([&, f = f] { f(Variable()); }, {name, "null"});
  }
  const Variable x(Array::ones({2, 3}));
  expect_error<ValueError>([&] { F::polygamma(-1, x); }, {"polygamma", "non-negative", "-1"});
  expect_error<ValueError>(
      [&] {
        F::polygamma(Array::from_vector<int64_t>({2, -3, 1}), Variable(Array::ones({3})));
      },
      {"polygamma", "-3", "(3,)"});
  expect_error<DtypeError>([&] { F::polygamma(Array::ones({3}), Variable(Array::ones({3}))); },
                           {"polygamma", "n", "float32", "(3,)"});
  expect_error<ShapeError>([&] { F::polygamma(Array::zeros({4}, Dtype::int64), x); }, {"polygamma", "(4,)", "(2, 3)"});
  expect_error<DtypeError>([&] { F::polygamma(1, Variable(ints)); }, {"polygamma", "int32"});
  expect_error<DtypeError>([&] { F::zeta(2.0, Variable(ints)); }, {"zeta", "q", "int32"});
  expect_error<DtypeError>([&] { F::zeta(Array::ones({3}, Dtype::bool_), Variable(Array::ones({3}))); },
                           {"zeta", "bool", "(3,)"});
  expect_error<ShapeError>([&] { F::zeta(Array::ones({4}), x); }, {"zeta", "(4,)", "(2, 3)"});
}
