// Initializers: fans, distribution statistics on 100k draws, in-place filling, determinism.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "rensa/links/initializers.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace I = rensa::initializers;
using rensa::test::expect_error;

namespace {

struct Stats {
  double mean, std, min, max;
};

Stats stats(const Array& a) {
  const auto v = a.to_vector<double>();
  double sum = 0.0, sq = 0.0;
  for (double x : v) sum += x;
  const double mean = sum / static_cast<double>(v.size());
  for (double x : v) sq += (x - mean) * (x - mean);
  return {mean, std::sqrt(sq / static_cast<double>(v.size())), *std::min_element(v.begin(), v.end()),
          *std::max_element(v.begin(), v.end())};
}

// Draws 100k values (shape (100, 1000): fan_in 1000, fan_out 100) and checks mean and std: the
// mean within 5 standard errors, the std within 2%.
void expect_distribution(const I::Initializer& init, double want_std, Dtype dtype = Dtype::float32,
                         const Shape& shape = {100, 1000}) {
  Array a = Array::empty(shape, dtype);
  Generator gen(42);
  init(a, gen);
  EXPECT_EQ(gen.offset(), static_cast<uint64_t>(a.size()));
  const Stats s = stats(a);
  EXPECT_NEAR(s.mean, 0.0, 5.0 * want_std / std::sqrt(static_cast<double>(a.size())));
  EXPECT_NEAR(s.std, want_std, 0.02 * want_std);
}

}  // namespace

TEST(Initializers, Fans) {
  EXPECT_EQ(I::get_fans({100, 1000}), (std::pair<double, double>{1000.0, 100.0}));
  // Convolution kernels (out, in, kh, kw): the receptive field multiplies both.
  EXPECT_EQ(I::get_fans({8, 4, 3, 3}), (std::pair<double, double>{36.0, 72.0}));
  EXPECT_EQ(I::get_fans({2, 3, 5}), (std::pair<double, double>{15.0, 10.0}));
  expect_error<ShapeError>([] { I::get_fans({5}); }, {"get_fans", "(5,)"});
  expect_error<ShapeError>([] { I::get_fans({}); }, {"get_fans", "()"});
}

TEST(Initializers, LeCunNormal) {
  expect_distribution(I::LeCunNormal(), std::sqrt(1.0 / 1000));
  expect_distribution(I::LeCunNormal(2.0), 2.0 * std::sqrt(1.0 / 1000), Dtype::float64);
  // Convolution shape: fan_in = 4 * 5 * 5.
  expect_distribution(I::LeCunNormal(), std::sqrt(1.0 / 100), Dtype::float32, {1000, 4, 5, 5});
}

TEST(Initializers, HeNormal) {
  expect_distribution(I::HeNormal(), std::sqrt(2.0 / 1000));
  expect_distribution(I::HeNormal(0.5), 0.5 * std::sqrt(2.0 / 1000), Dtype::float64);
}

TEST(Initializers, GlorotUniform) {
  const double bound = std::sqrt(6.0 / (1000 + 100));
  expect_distribution(I::GlorotUniform(), bound / std::sqrt(3.0));
  Array a = Array::empty({100, 1000}, Dtype::float64);
  Generator gen(3);
  I::GlorotUniform(2.0)(a, gen);
  const Stats s = stats(a);
  EXPECT_GE(s.min, -2.0 * bound);
  EXPECT_LT(s.max, 2.0 * bound);
  EXPECT_GT(s.max, 1.9 * bound);  // the whole range is used
  EXPECT_NEAR(s.std, 2.0 * bound / std::sqrt(3.0), 0.02 * 2.0 * bound / std::sqrt(3.0));
}

TEST(Initializers, LeCunUniform) {
  const double bound = std::sqrt(3.0 / 1000);
  expect_distribution(I::LeCunUniform(), bound / std::sqrt(3.0));  // std sqrt(1 / fan_in), as LeCunNormal
  Array a = Array::empty({100, 1000}, Dtype::float64);
  Generator gen(3);
  I::LeCunUniform(2.0)(a, gen);
  const Stats s = stats(a);
  EXPECT_GE(s.min, -2.0 * bound);
  EXPECT_LT(s.max, 2.0 * bound);
  EXPECT_GT(s.max, 1.9 * bound);
}

TEST(Initializers, NormalAndUniform) {
  expect_distribution(I::Normal(), 0.05);
  expect_distribution(I::Normal(1.0), 1.0, Dtype::float64, {100000});  // no fans needed
  expect_distribution(I::Uniform(), 0.05 / std::sqrt(3.0));
  Array a = Array::empty({100000}, Dtype::float64);
  Generator gen(9);
  I::Uniform(0.3)(a, gen);
  const Stats s = stats(a);
  EXPECT_GE(s.min, -0.3);
  EXPECT_LT(s.max, 0.3);
  EXPECT_NEAR(s.std, 0.3 / std::sqrt(3.0), 0.02 * 0.3 / std::sqrt(3.0));
}

TEST(Initializers, Constants) {
  Generator gen(0);
  Array a = Array::empty({3, 4}, Dtype::float64);
  I::Constant(2.5)(a, gen);
  for (double x : a.to_vector<double>()) EXPECT_EQ(x, 2.5);
  I::Zero()(a, gen);
  for (double x : a.to_vector<double>()) EXPECT_EQ(x, 0.0);
  I::One()(a, gen);
  for (double x : a.to_vector<double>()) EXPECT_EQ(x, 1.0);
  // Constants need no floating dtype and draw nothing.
  Array i = Array::empty({2}, Dtype::int32);
  I::Constant(7)(i, gen);
  EXPECT_EQ(i.to_vector<int32_t>(), (std::vector<int32_t>{7, 7}));
  EXPECT_EQ(gen.offset(), 0u);
}

TEST(Initializers, FillInPlaceThroughViews) {
  Array big = Array::zeros({4, 6}, Dtype::float32);
  Array view = big.slice(1, 0, 6, 2);  // every other column: not contiguous
  Generator gen(1);
  I::Normal(1.0)(view, gen);
  const auto v = big.to_vector<float>();
  for (int64_t r = 0; r < 4; ++r) {
    for (int64_t c = 0; c < 6; ++c) {
      const float x = v[static_cast<std::size_t>(r * 6 + c)];
      if (c % 2 == 1) {
        EXPECT_EQ(x, 0.0f);
      } else {
        EXPECT_NE(x, 0.0f);
      }
    }
  }
}

TEST(Initializers, DeterministicPerGeneratorAndOnEveryDevice) {
  Generator g1(5), g2(5);
  Array a = Array::empty({20, 30}), b = Array::empty({20, 30}),
        r = Array::empty({20, 30}, Dtype::float32, Device::reference());
  I::LeCunNormal()(a, g1);
  I::LeCunNormal()(b, g2);
  EXPECT_TRUE(array_equal(a, b));
  // The next draw continues the stream.
  I::LeCunNormal()(b, g2);
  EXPECT_FALSE(array_equal(a, b));
  Generator g3(5);
  I::LeCunNormal()(r, g3);
  EXPECT_TRUE(array_equal(a, r.to(Device::cpu())));
}

TEST(Initializers, Errors) {
  Generator gen(0);
  expect_error<ShapeError>([&] { I::LeCunNormal()(Array::empty({5}), gen); }, {"LeCunNormal", "(5,)"});
  expect_error<ShapeError>([&] { I::HeNormal()(Array::empty({5}), gen); }, {"HeNormal", "(5,)"});
  expect_error<ShapeError>([&] { I::GlorotUniform()(Array::empty({5}), gen); }, {"GlorotUniform", "(5,)"});
  expect_error<DtypeError>([&] { I::Normal()(Array::empty({2, 2}, Dtype::int64), gen); }, {"Normal", "int64"});
  expect_error<DtypeError>(
      [&] {
        I::LeCunNormal()(Array::empty({2, 2}, Dtype::int32), gen);
      },
      {"LeCunNormal", "int32"});
  expect_error<ValueError>([&] { I::Uniform()(Array(), gen); }, {"Uniform", "null"});
  expect_error<ValueError>([&] { I::Constant(1)(Array(), gen); }, {"Constant", "null"});
  // Size 0: nothing drawn, no error.
  I::LeCunNormal()(Array::empty({0, 5}), gen);
  I::LeCunNormal()(Array::empty({5, 0}), gen);
  EXPECT_EQ(gen.offset(), 0u);
}
