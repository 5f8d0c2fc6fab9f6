#include <algorithm>
#include <cmath>
#include <vector>

#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
using rensa::test::expect_cpu_matches_reference;
using rensa::test::expect_error;
using rensa::test::randn;
using rensa::testing::check_backward;
using rensa::testing::check_double_backward;
using rensa::testing::make_noncontiguous;
using rensa::testing::TestFunction;

namespace {

TestFunction resize_fn(F::Int2 out, bool align_corners) {
  return
      [=](const std::vector<Variable>& v) { return std::vector<Variable>{F::resize_images(v[0], out, align_corners)}; };
}

// Forward values and the gradient of x, for comparing backends.
TestFunction with_grad(const TestFunction& f) {
  return [f](const std::vector<Variable>& v) {
    Variable x(v[0].array(), true);
    Variable y = f({x})[0];
    auto g = grad({y}, {x}, {Variable(y.array().copy())});
    return std::vector<Variable>{y, g[0]};
  };
}

// The input coordinate output pixel i samples along an axis of `in` pixels resized to `out`.
double source_coord(int64_t i, int64_t in, int64_t out, bool align_corners) {
  if (align_corners) return out == 1 ? 0.0 : static_cast<double>(i) * static_cast<double>(in - 1) / (out - 1);
  return std::max((i + 0.5) * static_cast<double>(in) / static_cast<double>(out) - 0.5, 0.0);
}

// Bilinear resizing pixel by pixel: each output pixel mixes its four neighbours.
std::vector<double> resize_loop(const Array& x, int64_t oh, int64_t ow, bool align_corners) {
  const std::vector<double> v = x.to_vector<double>();
  const int64_t P = x.shape()[0] * x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  std::vector<double> y;
  for (int64_t p = 0; p < P; ++p) {
    for (int64_t i = 0; i < oh; ++i) {
      const double u = source_coord(i, H, oh, align_corners);
      const int64_t y0 = std::min<int64_t>(static_cast<int64_t>(u), H - 1), y1 = std::min(y0 + 1, H - 1);
      const double wy = u - static_cast<double>(y0);
      for (int64_t j = 0; j < ow; ++j) {
        const double t = source_coord(j, W, ow, align_corners);
        const int64_t x0 = std::min<int64_t>(static_cast<int64_t>(t), W - 1), x1 = std::min(x0 + 1, W - 1);
        const double wx = t - static_cast<double>(x0);
        auto at = [&](int64_t r, int64_t c) { return v[static_cast<std::size_t>((p * H + r) * W + c)]; };
        y.push_back((1 - wy) * ((1 - wx) * at(y0, x0) + wx * at(y0, x1)) +
                    wy * ((1 - wx) * at(y1, x0) + wx * at(y1, x1)));
      }
    }
  }
  return y;
}

void expect_near_vec(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

}  // namespace

TEST(ResizeImages, KnownValues) {
  Variable x(Array::from_vector<double>({0, 1}, {1, 1, 1, 2}));
  // align_corners (the default): the end pixels stay put.
  auto y = F::resize_images(x, {1, 3});
  ASSERT_EQ(y.shape(), (Shape{1, 1, 1, 3}));
  expect_near_vec(y.array().to_vector<double>(), {0, 0.5, 1}, 1e-15);
  // Half-pixel centres: samples at -0.25 (clamped to 0), 0.25, 0.75 and 1.25 (past the end).
  expect_near_vec(F::resize_images(x, {1, 4}, false).array().to_vector<double>(), {0, 0.25, 0.75, 1}, 1e-15);
  // Downsampling by 2 without align_corners averages pairs.
  Variable r(Array::from_vector<double>({0, 1, 2, 3}, {1, 1, 4, 1}));
  expect_near_vec(F::resize_images(r, {2, 1}, false).array().to_vector<double>(), {0.5, 2.5}, 1e-15);
  expect_near_vec(F::resize_images(r, {2, 1}, true).array().to_vector<double>(), {0, 3}, 1e-15);
  // The same size is the identity both ways.
  Array a = randn({2, 3, 4, 5}, Dtype::float64, 2);
  EXPECT_TRUE(allclose(F::resize_images(Variable(a), {4, 5}).array(), a, 0, 1e-15));
  EXPECT_TRUE(allclose(F::resize_images(Variable(a), {4, 5}, false).array(), a, 0, 1e-15));
}

TEST(ResizeImages, MatchesLoop) {
  const std::vector<std::pair<Shape, F::Int2>> cases{
      {{2, 3, 4, 5}, {7, 9}},    // upsampling
      {{2, 3, 7, 9}, {3, 4}},    // downsampling
      {{1, 2, 5, 3}, {2, 8}},    // one axis each way
      {{2, 2, 4, 5}, {1, 1}},    // 1x1 output
      {{1, 3, 1, 1}, {3, 2}},    // 1x1 input
      {{2, 1, 6, 2}, {6, 5}},    // height unchanged
      {{1, 2, 30, 3}, {2, 20}},  // the height is interpolated first
  };
  for (const auto& [shape, out] : cases) {
    for (bool align : {true, false}) {
      const Array x = randn(shape, Dtype::float64, 3);
      const Variable y = F::resize_images(Variable(x), out, align);
      ASSERT_EQ(y.shape(), (Shape{shape[0], shape[1], out.y, out.x}));
      SCOPED_TRACE(::testing::Message() << shape << " to (" << out.y << ", " << out.x << ") align " << align);
      expect_near_vec(y.array().to_vector<double>(), resize_loop(x, out.y, out.x, align), 1e-12);
    }
  }
  // float32 in, float32 out.
  const Array x32 = randn({2, 3, 4, 5}, Dtype::float32, 4);
  const Variable y32 = F::resize_images(Variable(x32), {6, 3});
  EXPECT_EQ(y32.dtype(), Dtype::float32);
  expect_near_vec(y32.array().to_vector<double>(), resize_loop(x32, 6, 3, true), 1e-5);
}

TEST(ResizeImagesGrad, ContiguousNoncontiguousDouble) {
  for (const F::Int2 out : {F::Int2{7, 9}, F::Int2{2, 3}, F::Int2{1, 1}}) {
    for (bool align : {true, false}) {
      const Array x = randn({2, 3, 4, 5}, Dtype::float64, 5);
      check_backward(resize_fn(out, align), {x});
      check_backward(resize_fn(out, align), {make_noncontiguous(x)});
      check_double_backward(resize_fn(out, align), {x}, {randn({2, 3, out.y, out.x}, Dtype::float64, 6)});
    }
  }
  // Size-0 batch.
  check_backward(resize_fn({3, 2}, true), {Array::zeros({0, 2, 4, 5}, Dtype::float64)});
}

TEST(ResizeImagesBackends, CpuMatchesReference) {
  // 4 * 8 * 32 * 36 = 36864 elements: above the OpenMP threshold.
  // y mixes 4 taps; x's gradient gathers at most 2 * 3 (then 5 * 1) of them: the taps of the output
  // rows and columns that sample one input row and column.
  const Array x = randn({4, 8, 32, 36}, Dtype::float32, 7);
  expect_cpu_matches_reference(with_grad(resize_fn({20, 50}, true)), {x}, 2 * 3);
  expect_cpu_matches_reference(with_grad(resize_fn({70, 13}, false)), {make_noncontiguous(x)}, 5 * 1);
}

TEST(ResizeImagesErrors, ShapesDtypesValues) {
  expect_error<ShapeError>(
      [] {
        F::resize_images(Variable(randn({3, 4, 5})), {2, 2});
      },
      {"resize_images", "(3, 4, 5)"});
  expect_error<ShapeError>(
      [] {
        F::resize_images(Variable(Array::zeros({1, 2, 0, 3}, Dtype::float64)), {2, 2});
      },
      {"resize_images", "(1, 2, 0, 3)"});
  expect_error<ValueError>(
      [] {
        F::resize_images(Variable(randn({1, 2, 3, 4})), {0, 5});
      },
      {"resize_images", "(0, 5)", "(1, 2, 3, 4)"});
  expect_error<ValueError>(
      [] {
        F::resize_images(Variable(randn({1, 2, 3, 4})), {5, -1});
      },
      {"resize_images", "(5, -1)"});
  expect_error<DtypeError>(
      [] {
        F::resize_images(Variable(Array::zeros({1, 1, 2, 2}, Dtype::int32)), {3, 3});
      },
      {"resize_images", "int32", "(1, 1, 2, 2)"});
}
