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

namespace {
std::vector<double> values(const Variable& v) {
  return v.array().to_vector<double>();
}
}  // namespace

TEST(Rounding, KnownValues) {
  const Variable x(Array::from_vector<double>({-2.5, -1.0, -0.5, -0.0, 0.5, 1.5, 2.0, NAN}));
  EXPECT_EQ(values(F::floor(x)).front(), -3.0);
  const auto same = [](const std::vector<double>& got, const std::vector<double>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(want[i]))
        EXPECT_TRUE(std::isnan(got[i])) << i;
      else
        EXPECT_EQ(got[i], want[i]) << i;
    }
  };
  same(values(F::floor(x)), {-3, -1, -1, 0, 0, 1, 2, NAN});
  same(values(F::ceil(x)), {-2, -1, 0, 0, 1, 2, 2, NAN});
  same(values(F::fix(x)), {-2, -1, 0, 0, 0, 1, 2, NAN});
  same(values(F::sign(x)), {-1, -1, -1, 0, 1, 1, 1, NAN});
  // Integer dtypes are kept: rounding copies, sign compares.
  const Variable i(Array::from_vector<int32_t>({-7, 0, 3}));
  const Variable fi = F::floor(i);
  EXPECT_EQ(fi.dtype(), Dtype::int32);
  EXPECT_FALSE(fi.array().shares_storage(i.array()));
  EXPECT_EQ(fi.array().to_vector<int32_t>(), (std::vector<int32_t>{-7, 0, 3}));
  EXPECT_EQ(F::sign(i).array().to_vector<int32_t>(), (std::vector<int32_t>{-1, 0, 1}));
  EXPECT_EQ(F::sign(Variable(Array::from_vector<uint8_t>({0, 5}))).array().to_vector<uint8_t>(),
            (std::vector<uint8_t>{0, 1}));
  EXPECT_EQ(F::ceil(Variable(Array::ones({2}, Dtype::float16))).dtype(), Dtype::float16);
}

TEST(Rounding, NoGradient) {
  // As Chainer: the results are new variables without a creator, so the graph stops.
  const Variable x(Array::from_vector<double>({-1.5, 0.5}), true);
  for (const auto& f : std::vector<std::function<Variable(const Variable&)>>{F::floor, F::ceil, F::fix, F::sign}) {
    const Variable y = f(x);
    EXPECT_EQ(y.creator(), nullptr);
    EXPECT_FALSE(y.requires_grad());
  }
}

TEST(Rounding, Fmod) {
  const Variable x(Array::from_vector<double>({5.5, -5.5, 5.5, -5.5, 1.0}));
  const Variable d(Array::from_vector<double>({2.0, 2.0, -2.0, -2.0, 0.0}));
  const auto got = values(F::fmod(x, d));
  EXPECT_EQ(std::vector<double>(got.begin(), got.end() - 1), (std::vector<double>{1.5, -1.5, 1.5, -1.5}));
  EXPECT_TRUE(std::isnan(got.back()));
  // The gradient in the divisor is -fix(x / divisor).
  Variable a(Array::from_vector<double>({5.5, -5.5}), true), b(Array::from_vector<double>({2.0, 2.0}), true);
  F::sum(F::fmod(a, b)).backward();
  EXPECT_EQ(a.grad().array().to_vector<double>(), (std::vector<double>{1, 1}));
  EXPECT_EQ(b.grad().array().to_vector<double>(), (std::vector<double>{-2, 2}));
}

TEST(Rounding, FmodConforms) {
  // x = 2k + 1 + s (|s| <= 0.4) over divisors near 2 keeps x / divisor near k + 1/2, away from the
  // whole numbers where fmod jumps.
  auto make = [](std::size_t i, const Shape& shape, Dtype dtype, uint64_t seed) {
    if (i == 1) return rensa::test::randu(shape, 1.95, 2.05, dtype, seed);
    auto k = rensa::test::randu(shape, -3.0, 3.0, Dtype::float64, seed).to_vector<double>();
    const auto s = rensa::test::randu(shape, -0.4, 0.4, Dtype::float64, seed + 100).to_vector<double>();
    for (std::size_t j = 0; j < k.size(); ++j) k[j] = 2 * std::floor(k[j]) + 1 + s[j];
    return Array::from_vector(k, shape).astype(dtype);
  };
  expect_conforms(
      {.name = "fmod", .f = rensa::test::binary_fn(F::fmod), .shapes = {{3, 4}, {3, 4}}, .make_input = make});
  expect_conforms(
      {.name = "fmod_broadcast", .f = rensa::test::binary_fn(F::fmod), .shapes = {{3, 4}, {1, 4}}, .make_input = make});
}

TEST(Rounding, Errors) {
  for (const auto& [name, f] : std::vector<std::pair<std::string, std::function<Variable(const Variable&)>>>{
           {"floor", F::floor}, {"ceil", F::ceil}, {"fix", F::fix}, {"sign", F::sign}}) {
    expect_error<ValueError>([&, f = f] { f(Variable()); }, {name, "null"});
  }
  expect_error<DtypeError>([] { F::sign(Variable(Array::zeros({2}, Dtype::bool_))); }, {"sign", "bool", "(2,)"});
  expect_error<DtypeError>(
      [] { F::fmod(Variable(Array::zeros({2}, Dtype::int32)), Variable(Array::ones({2}, Dtype::int32))); },
      {"fmod", "int32", "(2,)"});
  expect_error<DtypeError>([] { F::fmod(Variable(Array::zeros({2})), Variable(Array::ones({2}, Dtype::float64))); },
                           {"fmod", "float32", "float64"});
  expect_error<ShapeError>(
      [] {
        F::fmod(Variable(Array::zeros({2, 3})), Variable(Array::ones({2})));
      },
      {"fmod", "(2, 3)", "(2,)"});
}
