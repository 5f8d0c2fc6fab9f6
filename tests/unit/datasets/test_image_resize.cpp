// The resampling and value transforms on uint8 and float images: resize_window against its
// definition, Resize, CenterCrop, RandomResizedCrop's windows, Normalize, Scale, SubtractMean,
// ColorJitter, PcaLighting, and their errors.
#include <cmath>

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
