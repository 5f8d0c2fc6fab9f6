// The resampling and value transforms on uint8 and float images: resize_window against its
// definition (uint8 in fixed point: within 1 of it, equal away from halves), Resize, CenterCrop,
// RandomResizedCrop's windows, Normalize, Scale, SubtractMean, ColorJitter, PcaLighting, and their
// errors.
#include <algorithm>
#include <cmath>
#include <random>

#include "rensa/datasets/image_transforms.h"
#include "tests/unit/test_util.h"

namespace rensa::datasets::transforms {
namespace {

using test::expect_error;

Array ramp(int64_t c, int64_t h, int64_t w, Dtype dtype) {
  return Array::arange(0.0, static_cast<double>(c * h * w), 1.0, Dtype::float64).reshape(Shape{c, h, w}).astype(dtype);
}

TEST(ResizeWindow, AreaShrinkIsTheMeanOfEachBlock) {
  const Array x = ramp(2, 4, 6, Dtype::float64);
  const Array y = resize_window(x, 0, 0, 4, 6, 2, 3, Interpolation::area);
  const std::vector<double> v = y.to_vector<double>(), in = x.to_vector<double>();
  for (int64_t c = 0; c < 2; ++c) {
    for (int64_t i = 0; i < 2; ++i) {
      for (int64_t j = 0; j < 3; ++j) {
        double m = 0;
        for (int64_t a = 0; a < 2; ++a) {
          for (int64_t b = 0; b < 2; ++b) m += in[static_cast<std::size_t>(c * 24 + (2 * i + a) * 6 + 2 * j + b)] / 4;
        }
        EXPECT_NEAR(v[static_cast<std::size_t>(c * 6 + i * 3 + j)], m, 1e-12);
      }
    }
  }
}

TEST(ResizeWindow, BilinearUpscaleInterpolatesBetweenCentres) {
  // 1 x 1 x 2 -> 1 x 1 x 4: half-pixel centres at 0.25, 0.75, 1.25, 1.75 of the source.
  const Array x = Array::from_vector(std::vector<double>{10.0, 20.0}, Shape{1, 1, 2});
  const Array y = resize_window(x, 0, 0, 1, 2, 1, 4);
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{10.0, 12.5, 17.5, 20.0}));
  // Same size: the identity; a constant stays constant in every mode and dtype.
  const Array r = ramp(3, 5, 7, Dtype::uint8);
  EXPECT_TRUE(array_equal(resize_window(r, 0, 0, 5, 7, 5, 7), r));
  for (const Interpolation m : {Interpolation::bilinear, Interpolation::area, Interpolation::nearest}) {
    const Array c = Array::full(Shape{3, 37, 23}, 77.0, Dtype::uint8);
    const Array z = resize_window(c, 3, 2, 30, 20, 11, 13, m);
    EXPECT_EQ(z.dtype(), Dtype::uint8);
    for (const uint8_t p : z.to_vector<uint8_t>()) ASSERT_EQ(p, 77);
  }
  // The window and the flip: nearest at scale 1 is a plain crop, flipped.
  const Array crop = resize_window(r, 1, 2, 3, 4, 3, 4, Interpolation::nearest, true);
  EXPECT_TRUE(array_equal(crop, crop_and_flip(r, 0, 1, 2, 3, 4, true)));
  // uint8 and float32 agree up to rounding.
  const Array f = resize_window(r.astype(Dtype::float32), 0, 1, 5, 6, 3, 4);
  const Array u = resize_window(r, 0, 1, 5, 6, 3, 4);
  const std::vector<float> fv = f.to_vector<float>();
  const std::vector<uint8_t> uv = u.to_vector<uint8_t>();
  for (std::size_t k = 0; k < fv.size(); ++k) EXPECT_NEAR(fv[k], uv[k], 0.5f + 1e-4f);
  expect_error<ShapeError>([&] { resize_window(r, 3, 0, 3, 7, 2, 2); }, {"resize_window", "(3, 0)", "(3, 5, 7)"});
  expect_error<DtypeError>([&] { resize_window(ramp(1, 2, 2, Dtype::int32), 0, 0, 2, 2, 1, 1); },
                           {"resize_window", "int32"});
}

/// Output k's weights over a span of `len` source pixels resampled to `out`, from resize_window's
/// definition in float64: half-pixel centres, a triangle widened to the scale when shrinking
/// (bilinear), the overlap with the output's footprint (area), the pixel under the centre (nearest).
std::vector<double> definition_weights(int64_t len, int64_t out, int64_t k, Interpolation m) {
  const double scale = static_cast<double>(len) / static_cast<double>(out), centre = (k + 0.5) * scale;
  std::vector<double> w(static_cast<std::size_t>(len), 0.0);
  if (m == Interpolation::nearest) {
    w[static_cast<std::size_t>(std::min<int64_t>(static_cast<int64_t>(centre), len - 1))] = 1.0;
    return w;
  }
  double total = 0.0;
  for (int64_t j = 0; j < len; ++j) {
    const double x = static_cast<double>(j);
    const double v = m == Interpolation::area
                         ? std::max(0.0, std::min(x + 1, centre + scale / 2) - std::max(x, centre - scale / 2))
                         : std::max(0.0, 1.0 - std::abs(x + 0.5 - centre) / std::max(scale, 1.0));
    w[static_cast<std::size_t>(j)] = v;
    total += v;
  }
  for (double& v : w) v /= total;
  return w;
}

/// resize_window's definition in float64 (unrounded), as a (C, out_h, out_w) vector.
std::vector<double> definition(const Array& image, int64_t top, int64_t left, int64_t h, int64_t w, int64_t out_h,
                               int64_t out_w, Interpolation m, bool flip) {
  const int64_t channels = image.shape()[0];
  const Array x = image.astype(Dtype::float64).copy();
  std::vector<double> out;
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t i = 0; i < out_h; ++i) {
      const std::vector<double> wy = definition_weights(h, out_h, i, m);
      for (int64_t k = 0; k < out_w; ++k) {
        const std::vector<double> wx = definition_weights(w, out_w, flip ? out_w - 1 - k : k, m);
        double v = 0.0;
        for (int64_t a = 0; a < h; ++a) {
          if (wy[static_cast<std::size_t>(a)] == 0.0) continue;
          for (int64_t b = 0; b < w; ++b) {
            v += wy[static_cast<std::size_t>(a)] * wx[static_cast<std::size_t>(b)] *
                 x.at<double>({c, top + a, left + b});
          }
        }
        out.push_back(v);
      }
    }
  }
  return out;
}

/// A (c, h, w) uint8 image of random pixels over the whole range.
Array random_u8(int64_t c, int64_t h, int64_t w, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<uint8_t> v(static_cast<std::size_t>(c * h * w));
  for (uint8_t& p : v) p = static_cast<uint8_t>(gen() >> 24);
  return Array::from_vector(v, Shape{c, h, w});
}

struct WindowCase {
  int64_t top, left, h, w, out_h, out_w;
};

/// Windows of a 3 x 61 x 83 image: shrinking, enlarging, both at once, odd sizes, 1-pixel windows
/// and outputs, and widths past the vector passes' 16 and 32 columns and 8 outputs.
const std::vector<WindowCase> kWindows = {
    {0, 0, 61, 83, 17, 23}, {5, 7, 50, 70, 13, 45}, {3, 4, 9, 11, 40, 33}, {10, 20, 37, 29, 13, 50},
    {7, 9, 1, 1, 5, 7},     {0, 3, 1, 60, 3, 19},   {2, 0, 59, 1, 21, 2},  {0, 0, 61, 83, 1, 1},
    {4, 2, 40, 77, 40, 77}, {1, 1, 60, 82, 61, 83}, {0, 0, 61, 83, 30, 9}, {6, 5, 48, 66, 19, 31},
};

TEST(ResizeWindow, Uint8FixedPointIsWithinOneOfTheDefinition) {
  // uint8 is computed in fixed point (int16 weights, an intermediate with 7 fraction bits): each
  // result is the definition rounded, or 1 off it where the exact value lies within a few
  // hundredths of a half; the float computation rounds the same way up to such ties.
  const Array image = random_u8(3, 61, 83, 5);
  int64_t total = 0, off = 0;
  for (const Interpolation m : {Interpolation::bilinear, Interpolation::area, Interpolation::nearest}) {
    for (const WindowCase& t : kWindows) {
      for (const bool flip : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << "mode " << static_cast<int>(m) << " window (" << t.top << ", " << t.left << ", " << t.h << ", "
                     << t.w << ") to (" << t.out_h << ", " << t.out_w << ") flip " << flip);
        const Array u = resize_window(image, t.top, t.left, t.h, t.w, t.out_h, t.out_w, m, flip);
        ASSERT_EQ(u.dtype(), Dtype::uint8);
        ASSERT_EQ(u.shape(), (Shape{3, t.out_h, t.out_w}));
        const std::vector<uint8_t> got = u.to_vector<uint8_t>();
        const std::vector<double> exact = definition(image, t.top, t.left, t.h, t.w, t.out_h, t.out_w, m, flip);
        const std::vector<float> f32 =
            resize_window(image.astype(Dtype::float32), t.top, t.left, t.h, t.w, t.out_h, t.out_w, m, flip)
                .to_vector<float>();
        for (std::size_t k = 0; k < got.size(); ++k) {
          const double e = exact[k], rounded = std::floor(e + 0.5);
          const double from_half = std::abs(e - std::floor(e) - 0.5);
          ASSERT_LE(std::abs(got[k] - rounded), 1.0) << "element " << k << ": " << int{got[k]} << " for " << e;
          if (from_half > 0.05) {
            ASSERT_EQ(got[k], rounded) << "element " << k << ": " << int{got[k]} << " for " << e;
          }
          ASSERT_LE(std::abs(got[k] - std::floor(f32[k] + 0.5f)), 1.0f) << "element " << k << " against float32";
          if (m == Interpolation::nearest) {
            ASSERT_EQ(got[k], rounded);
          }
          off += got[k] != rounded;
          ++total;
        }
      }
    }
  }
  // Rare: about 1 value in 1000 here (252 of 217494 when written).
  EXPECT_LT(off * 100, total) << off << " of " << total << " differ from the definition rounded";
}

TEST(ResizeWindow, FloatImagesFollowTheDefinition) {
  const Array image = random_u8(3, 61, 83, 6);
  for (const Dtype dtype : {Dtype::float32, Dtype::float64}) {
    const Array x = image.astype(dtype);
    for (const Interpolation m : {Interpolation::bilinear, Interpolation::area}) {
      for (const WindowCase& t : kWindows) {
        const std::vector<double> exact = definition(image, t.top, t.left, t.h, t.w, t.out_h, t.out_w, m, true);
        const Array y = resize_window(x, t.top, t.left, t.h, t.w, t.out_h, t.out_w, m, true);
        ASSERT_EQ(y.dtype(), dtype);
        const std::vector<double> got = y.astype(Dtype::float64).to_vector<double>();
        // Weights are float32 in both dtypes (sums in float32, float64 for float64).
        const double tol = dtype == Dtype::float64 ? 1e-4 : 1e-3;
        for (std::size_t k = 0; k < got.size(); ++k) ASSERT_NEAR(got[k], exact[k], tol) << "element " << k;
      }
    }
  }
  // A NaN outside every footprint stays out (zero weights are not multiplied in).
  Array x = Array::full(Shape{1, 1, 8}, 10.0, Dtype::float32).copy();
  x.data<float>()[7] = std::nanf("");
  const std::vector<float> y = resize_window(x, 0, 0, 1, 8, 1, 16).to_vector<float>();
  for (int k = 0; k < 13; ++k) EXPECT_EQ(y[static_cast<std::size_t>(k)], 10.0f) << k;
}

TEST(ResizeWindow, VectorAndScalarPassesAgree) {
  // The vertical pass is vectorized over contiguous rows only, and the horizontal one over 8
  // outputs at a time: a strided view (scalar vertical pass) and a flip (the outputs of the scalar
  // tail moved under the vector loop) give the same bytes.
  const Array image = random_u8(3, 83, 61, 7);
  const Array strided = image.transpose(Shape{0, 2, 1});
  ASSERT_FALSE(strided.is_contiguous());
  const Array contiguous = strided.copy();
  for (const WindowCase& t : kWindows) {
    for (const Interpolation m : {Interpolation::bilinear, Interpolation::area}) {
      const Array a = resize_window(strided, t.top, t.left, t.h, t.w, t.out_h, t.out_w, m);
      const Array b = resize_window(contiguous, t.top, t.left, t.h, t.w, t.out_h, t.out_w, m);
      ASSERT_TRUE(array_equal(a, b)) << "window (" << t.top << ", " << t.left << ", " << t.h << ", " << t.w << ")";
      const Array flipped = resize_window(contiguous, t.top, t.left, t.h, t.w, t.out_h, t.out_w, m, true);
      ASSERT_TRUE(array_equal(crop_and_flip(flipped, 0, 0, 0, t.out_h, t.out_w, true), b));
    }
  }
}

TEST(ResizeWindow, VeryWideFootprintsFallBackToFloat) {
  // 6000 pixels into 1: int16 weights of about 1/3000 would be too coarse, so the float
  // computation runs and the result is still the definition rounded.
  const Array wide = random_u8(1, 1, 6000, 8);
  const double exact = definition(wide, 0, 0, 1, 6000, 1, 1, Interpolation::bilinear, false)[0];
  EXPECT_NEAR(resize_window(wide, 0, 0, 1, 6000, 1, 1).to_vector<uint8_t>()[0], exact, 0.5 + 1e-3);
  // 600 into 7 (footprints of about 170 pixels) still runs in fixed point, within 1.
  const std::vector<double> e7 = definition(wide, 0, 100, 1, 600, 1, 7, Interpolation::bilinear, false);
  const std::vector<uint8_t> y7 = resize_window(wide, 0, 100, 1, 600, 1, 7).to_vector<uint8_t>();
  for (std::size_t k = 0; k < 7; ++k) EXPECT_LE(std::abs(y7[k] - std::floor(e7[k] + 0.5)), 1.0) << k;
}

TEST(Resize, ShorterSideKeepsTheAspectRatio) {
  const Array x = Array::zeros(Shape{3, 375, 500}, Dtype::uint8);
  EXPECT_EQ(Resize({.shorter_side = 256}).apply(x).shape(), (Shape{3, 256, 341}));
  EXPECT_EQ(Resize({.size = std::array<int64_t, 2>{10, 20}}).apply(x).shape(), (Shape{3, 10, 20}));
  expect_error<ValueError>([] { Resize({}); }, {"Resize", "exactly one"});
  expect_error<ValueError>([] { Resize({.shorter_side = 0}); }, {"Resize", "shorter_side", "0"});
}

TEST(CenterCrop, RoundsAsChainer) {
  const Array x = ramp(1, 5, 6, Dtype::uint8);
  // Chainer: top = round((5 - 2) / 2) = 2 (half to even), left = round((6 - 3) / 2) = 2.
  EXPECT_TRUE(array_equal(CenterCrop({2, 3}).apply(x), crop_and_flip(x, 0, 2, 2, 2, 3)));
  expect_error<ShapeError>([&] { CenterCrop({6, 3}).apply(x); }, {"CenterCrop", "(6, 3)", "(1, 5, 6)"});
}

TEST(RandomResizedCrop, WindowsFollowTheRanges) {
  RandomResizedCrop rrc({.size = {8, 8}, .scale = {0.25, 0.5}, .ratio = {0.5, 2.0}, .seed = 2});
  int tried = 0;
  for (int k = 0; k < 300; ++k) {
    const auto [top, left, h, w] = rrc.window(100, 200);
    ASSERT_GE(top, 0);
    ASSERT_GE(left, 0);
    ASSERT_LE(top + h, 100);
    ASSERT_LE(left + w, 200);
    const double area = static_cast<double>(h * w) / 20000.0, ratio = static_cast<double>(w) / static_cast<double>(h);
    EXPECT_GE(area, 0.24);
    EXPECT_LE(area, 0.52);
    EXPECT_GE(ratio, 0.45);
    EXPECT_LE(ratio, 2.1);
    ++tried;
  }
  EXPECT_EQ(tried, 300);
  // No window fits an extreme image: the central window with the ratio clamped.
  RandomResizedCrop wide({.size = {4, 4}, .scale = {0.9, 1.0}, .ratio = {1.0, 1.0}});
  EXPECT_EQ(wide.window(10, 1000), (std::array<int64_t, 4>{0, 495, 10, 10}));
  EXPECT_EQ(wide.apply(Array::zeros(Shape{3, 10, 1000}, Dtype::uint8)).shape(), (Shape{3, 4, 4}));
  expect_error<ValueError>([] { RandomResizedCrop({.scale = {0.5, 1.5}}); }, {"RandomResizedCrop", "scale"});
  expect_error<ValueError>([] { RandomResizedCrop({.ratio = {2.0, 1.0}}); }, {"RandomResizedCrop", "ratio"});
}

TEST(ValueTransforms, TurnUint8IntoFloat32) {
  const Array x = ramp(3, 2, 2, Dtype::uint8);
  const Array n = Normalize({1.0, 2.0, 3.0}, {2.0, 2.0, 2.0}).apply(x);
  EXPECT_EQ(n.dtype(), Dtype::float32);
  EXPECT_EQ(n.to_vector<float>()[4], (4.0f - 2.0f) / 2.0f);
  const Array s = Scale(1.0 / 255).apply(x);
  EXPECT_EQ(s.dtype(), Dtype::float32);
  EXPECT_FLOAT_EQ(s.to_vector<float>()[11], 11.0f / 255.0f);
  EXPECT_EQ(Scale(2.0).apply(x.astype(Dtype::float64)).dtype(), Dtype::float64);
  // A per-pixel mean, and a per-channel one.
  const Array m = SubtractMean(Array::full(Shape{3, 2, 2}, 1.0)).apply(x);
  EXPECT_EQ(m.to_vector<float>()[5], 4.0f);
  const Array mc = SubtractMean(Array::from_vector(std::vector<float>{0, 10, 20}, Shape{3, 1, 1})).apply(x);
  EXPECT_EQ(mc.to_vector<float>()[8], -12.0f);
  expect_error<ShapeError>([&] { SubtractMean(Array::zeros(Shape{3, 4, 4})).apply(x); },
                           {"SubtractMean", "(3, 4, 4)", "(3, 2, 2)"});
  // Zero strength: the identity (as float32).
  EXPECT_TRUE(array_equal(ColorJitter({.brightness = 0, .contrast = 0, .saturation = 0}).apply(x),
                          x.astype(Dtype::float32)));
  EXPECT_TRUE(array_equal(PcaLighting({.sigma = 0}).apply(x), x.astype(Dtype::float32)));
  // PCA lighting shifts each channel by one constant.
  const Array p = PcaLighting({.sigma = 0.5, .seed = 3}).apply(x);
  const std::vector<float> pv = p.to_vector<float>();
  for (int c = 0; c < 3; ++c) {
    const float d = pv[static_cast<std::size_t>(4 * c)] - static_cast<float>(4 * c);
    for (int i = 1; i < 4; ++i) EXPECT_NEAR(pv[static_cast<std::size_t>(4 * c + i)] - static_cast<float>(4 * c + i), d, 1e-4);
  }
  expect_error<ShapeError>([&] { ColorJitter().apply(ramp(1, 2, 2, Dtype::uint8)); }, {"ColorJitter", "RGB", "(1, 2, 2)"});
  expect_error<ValueError>([] { PcaLighting({.sigma = -1}); }, {"PcaLighting", "sigma"});
}

TEST(GeometricTransforms, KeepUint8) {
  const Array x = ramp(3, 6, 7, Dtype::uint8);
  const Array c = RandomCrop({.pad = 2, .size = std::array<int64_t, 2>{6, 7}, .seed = 1}).apply(x);
  EXPECT_EQ(c.dtype(), Dtype::uint8);
  const Array f = RandomFlip({.horizontal = 1.0}).apply(x);
  EXPECT_TRUE(array_equal(f.astype(Dtype::float32), RandomFlip({.horizontal = 1.0}).apply(x.astype(Dtype::float32))));
}

}  // namespace
}  // namespace rensa::datasets::transforms
