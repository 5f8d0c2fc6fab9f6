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

// The initializers Chainer has beside the ones above (16 of 16).
TEST(Initializers, HeUniformGlorotNormalAndFanOut) {
  expect_distribution(I::HeUniform(), std::sqrt(6.0 / 1000) / std::sqrt(3.0));
  expect_distribution(I::GlorotNormal(), std::sqrt(2.0 / (1000 + 100)));
  expect_distribution(I::GlorotNormal(3.0), 3.0 * std::sqrt(2.0 / (1000 + 100)), Dtype::float64);
  expect_distribution(I::HeNormal(1.0, I::FanOption::fan_out), std::sqrt(2.0 / 100));  // fan_out 100
  Generator gen(0);
  expect_error<ShapeError>([&] { I::HeUniform()(Array::empty({5}), gen); }, {"HeUniform", "(5,)"});
  expect_error<ShapeError>([&] { I::GlorotNormal()(Array::empty({5}), gen); }, {"GlorotNormal", "(5,)"});
}

TEST(Initializers, IdentityAndNaN) {
  Generator gen(0);
  Array a = Array::empty({3, 3}, Dtype::float64);
  I::Identity(2.0)(a, gen);
  EXPECT_EQ(a.to_vector<double>(), (std::vector<double>{2, 0, 0, 0, 2, 0, 0, 0, 2}));
  expect_error<ValueError>([&] { I::Identity()(Array::empty({2, 3}), gen); }, {"Identity", "square", "(2, 3)"});
  expect_error<ValueError>([&] { I::Identity()(Array::empty({2, 2, 2}), gen); }, {"Identity", "(2, 2, 2)"});
  I::NaN()(a, gen);
  for (double x : a.to_vector<double>()) EXPECT_TRUE(std::isnan(x));
  EXPECT_EQ(gen.offset(), 0u);
}

// Orthogonal: rows (or columns when taller than wide) orthogonal with norm scale, in every mode
// that accepts the shape; a convolution kernel is read as (out, in * kh * kw).
TEST(Initializers, Orthogonal) {
  auto gram = [](const Array& a, bool rows) {
    const int64_t out = a.shape()[0], in = a.size() / out;
    const auto v = a.astype(Dtype::float64).to_vector<double>();
    const int64_t k = rows ? out : in;
    std::vector<double> g(static_cast<std::size_t>(k * k), 0.0);
    for (int64_t p = 0; p < k; ++p) {
      for (int64_t q = 0; q < k; ++q) {
        double s = 0;
        const int64_t len = rows ? in : out;
        for (int64_t t = 0; t < len; ++t) {
          s += rows ? v[static_cast<std::size_t>(p * in + t)] * v[static_cast<std::size_t>(q * in + t)]
                    : v[static_cast<std::size_t>(t * in + p)] * v[static_cast<std::size_t>(t * in + q)];
        }
        g[static_cast<std::size_t>(p * k + q)] = s;
      }
    }
    return g;
  };
  auto expect_scaled_identity = [](const std::vector<double>& g, double scale, double tol) {
    const auto k = static_cast<std::size_t>(std::llround(std::sqrt(static_cast<double>(g.size()))));
    for (std::size_t p = 0; p < k; ++p) {
      for (std::size_t q = 0; q < k; ++q) EXPECT_NEAR(g[p * k + q], p == q ? scale * scale : 0.0, tol) << p << "," << q;
    }
  };
  Generator gen(7);
  Array wide = Array::empty({4, 10}, Dtype::float64), tall = Array::empty({10, 4}, Dtype::float64),
        conv = Array::empty({6, 2, 3, 3}, Dtype::float32), square = Array::empty({5, 5}, Dtype::float64);
  I::Orthogonal()(wide, gen);
  expect_scaled_identity(gram(wide, true), 1.1, 1e-12);
  I::Orthogonal(2.0, "embedding")(tall, gen);
  expect_scaled_identity(gram(tall, false), 2.0, 1e-12);
  I::Orthogonal(1.0, "projection")(conv, gen);
  expect_scaled_identity(gram(conv, true), 1.0, 1e-5);
  I::Orthogonal(1.0, "basis")(square, gen);
  expect_scaled_identity(gram(square, true), 1.0, 1e-12);
  expect_scaled_identity(gram(square, false), 1.0, 1e-12);
  Array scalar = Array::empty({}, Dtype::float64);
  I::Orthogonal(3.0)(scalar, gen);
  EXPECT_EQ(std::abs(scalar.item<double>()), 3.0);
  // Two draws differ; the same seed gives the same matrix.
  Generator g1(1), g2(1);
  Array a = Array::empty({3, 6}, Dtype::float64), b = Array::empty({3, 6}, Dtype::float64);
  I::Orthogonal()(a, g1);
  I::Orthogonal()(b, g2);
  EXPECT_TRUE(array_equal(a, b));
  expect_error<ValueError>([&] { I::Orthogonal(1.0, "embedding")(Array::empty({4, 10}), gen); },
                           {"Orthogonal", "embedding", "(4, 10)", "10-dim input and 4-dim output"});
  expect_error<ValueError>([&] { I::Orthogonal(1.0, "projection")(Array::empty({10, 4}), gen); },
                           {"Orthogonal", "projection"});
  expect_error<ValueError>([&] { I::Orthogonal(1.0, "basis")(Array::empty({4, 5}), gen); }, {"Orthogonal", "basis"});
  expect_error<ValueError>([&] { I::Orthogonal()(Array::empty({0, 3}), gen); }, {"Orthogonal", "non-empty"});
  expect_error<ValueError>([] { I::Orthogonal(1.0, "square"); }, {"Orthogonal", "invalid mode 'square'"});
}

// The bilinear filters, as Chainer 7.8.1 makes them.
TEST(Initializers, SamplingFilters) {
  Generator gen(0);
  Array up = Array::empty({2, 2, 4, 4}, Dtype::float64);
  I::UpsamplingDeconvFilter()(up, gen);
  const std::vector<double> up4 = {0.0625, 0.1875, 0.1875, 0.0625, 0.1875, 0.5625, 0.5625, 0.1875,
                                   0.1875, 0.5625, 0.5625, 0.1875, 0.0625, 0.1875, 0.1875, 0.0625};
  EXPECT_EQ(up.index({0, 0}).contiguous().to_vector<double>(), up4);
  EXPECT_EQ(up.index({1, 1}).contiguous().to_vector<double>(), up4);
  for (double x : up.index({0, 1}).contiguous().to_vector<double>()) EXPECT_EQ(x, 0.0);  // off the diagonal
  Array one_out = Array::empty({3, 1, 3, 3}, Dtype::float32);
  I::UpsamplingDeconvFilter()(one_out, gen);
  EXPECT_EQ(one_out.index({2, 0}).contiguous().to_vector<float>(),
            (std::vector<float>{0.25f, 0.5f, 0.25f, 0.5f, 1.0f, 0.5f, 0.25f, 0.5f, 0.25f}));
  Array down = Array::empty({2, 2, 3, 3}, Dtype::float64);
  I::DownsamplingConvFilter()(down, gen);
  EXPECT_EQ(down.index({1, 1}).contiguous().to_vector<double>(),
            (std::vector<double>{0.0625, 0.125, 0.0625, 0.125, 0.25, 0.125, 0.0625, 0.125, 0.0625}));
  Array down3d = Array::empty({1, 1, 2, 2, 2}, Dtype::float64);
  I::DownsamplingConvFilter()(down3d, gen);
  EXPECT_EQ(down3d.to_vector<double>(), std::vector<double>(8, 0.125));
  Array up1d = Array::empty({1, 1, 5}, Dtype::float64);
  I::UpsamplingDeconvFilter()(up1d, gen);
  const auto v = up1d.to_vector<double>();
  const std::vector<double> chainer = {0.33333333333333337, 0.6666666666666667, 1.0, 0.6666666666666667,
                                       0.33333333333333337};
  for (std::size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], chainer[i], 1e-15);
  EXPECT_EQ(gen.offset(), 0u);
  expect_error<ValueError>([&] { I::UpsamplingDeconvFilter()(Array::empty({2, 3, 4, 4}), gen); },
                           {"UpsamplingDeconvFilter", "(2, 3, 4, 4)"});
  expect_error<ValueError>([&] { I::DownsamplingConvFilter()(Array::empty({2, 2, 3, 4}), gen); },
                           {"DownsamplingConvFilter", "ksize must be all same"});
  expect_error<ShapeError>([&] { I::DownsamplingConvFilter()(Array::empty({2, 2}), gen); },
                           {"DownsamplingConvFilter", "(2, 2)"});
  expect_error<ValueError>([] { I::UpsamplingDeconvFilter("cubic"); }, {"UpsamplingDeconvFilter", "cubic"});
}
