// Value transforms: Scale, SubtractMean, ColorJitter and PcaLighting. Each turns uint8 (and the
// 16-bit floats) into float32; float64 stays float64.

#include <cmath>

#include "rensa/core/error.h"
#include "rensa/datasets/image_transforms.h"
#include "src/datasets/batch_row.h"
#include "src/datasets/image_common.h"

namespace rensa::datasets::transforms {
namespace {

/// The image as a contiguous array of value_dtype (a copy; the input is never written to), in the
/// batch row offered by a stacking loader when it fits (every conversion to value_dtype is exact).
Array as_values(const Array& image) {
  Array out = detail::image_output(image.shape(), value_dtype(image.dtype()), image.device());
  out.assign(image);
  return out;
}

/// Applies f(c, pointer to channel c's H*W values) to a contiguous float32/float64 image.
template <class F>
void for_channels(Array& a, F&& f) {
  const int64_t channels = a.shape()[0], hw = a.shape()[1] * a.shape()[2];
  if (a.dtype() == Dtype::float64) {
    for (int64_t c = 0; c < channels; ++c) f(c, a.data<double>() + c * hw, hw);
  } else {
    for (int64_t c = 0; c < channels; ++c) f(c, a.data<float>() + c * hw, hw);
  }
}

void check_rgb(const char* who, const Array& image) {
  check_image(who, image);
  RENSA_CHECK(image.shape()[0] == 3, ShapeError, who, ": needs an RGB image (3, H, W), got shape ", image.shape());
}

double unit(uint32_t hi, uint32_t lo) { return static_cast<double>((static_cast<uint64_t>(hi) << 21) ^ (lo >> 11)) * 0x1p-53; }

}  // namespace

// ---- Scale ----------------------------------------------------------------------------------------

Scale::Scale(double factor) : factor_(factor) {
  RENSA_CHECK(std::isfinite(factor_), ValueError, "Scale: the factor must be finite, got ", factor_);
}

Example Scale::operator()(Example example) const {
  Array& image = image_of("Scale", example);
  image = apply(image);
  return example;
}

Array Scale::apply(const Array& image) const {
  check_image("Scale", image);
  Array out = as_values(image);
  for_channels(out, [&](int64_t, auto* p, int64_t n) {
    using T = std::remove_pointer_t<decltype(p)>;
    const auto f = static_cast<T>(factor_);
    for (int64_t i = 0; i < n; ++i) p[i] *= f;
  });
  return out;
}

// ---- SubtractMean ---------------------------------------------------------------------------------

SubtractMean::SubtractMean(const Array& mean) {
  RENSA_CHECK(!mean.is_null() && mean.ndim() == 3, ShapeError,
              "SubtractMean: the mean must be (C, H, W) or (C, 1, 1), got shape ",
              mean.is_null() ? Shape{} : mean.shape());
  mean_ = mean.astype(Dtype::float32).copy();
}

Example SubtractMean::operator()(Example example) const {
  Array& image = image_of("SubtractMean", example);
  image = apply(image);
  return example;
}

Array SubtractMean::apply(const Array& image) const {
  check_image("SubtractMean", image);
  const Shape& ms = mean_.shape();
  const bool per_channel = ms[1] == 1 && ms[2] == 1;
  RENSA_CHECK(ms[0] == image.shape()[0] && (per_channel || (ms[1] == image.shape()[1] && ms[2] == image.shape()[2])),
              ShapeError, "SubtractMean: the mean of shape ", ms, " does not match the image of shape ", image.shape(),
              " (subtract a per-pixel mean before cropping)");
  Array out = as_values(image);
  const float* m = mean_.data<float>();
  for_channels(out, [&](int64_t c, auto* p, int64_t n) {
    using T = std::remove_pointer_t<decltype(p)>;
    if (per_channel) {
      for (int64_t i = 0; i < n; ++i) p[i] -= static_cast<T>(m[c]);
    } else {
      for (int64_t i = 0; i < n; ++i) p[i] -= static_cast<T>(m[c * n + i]);
    }
  });
  return out;
}

// ---- ColorJitter ----------------------------------------------------------------------------------

ColorJitter::ColorJitter(ColorJitterOptions options) : options_(options), stream_(options.seed, 4) {
  RENSA_CHECK(options_.brightness >= 0 && options_.contrast >= 0 && options_.saturation >= 0, ValueError,
              "ColorJitter: brightness, contrast and saturation must be >= 0, got ", options_.brightness, ", ",
              options_.contrast, ", ", options_.saturation);
}

Example ColorJitter::operator()(Example example) const {
  Array& image = image_of("ColorJitter", example);
  image = apply(image);
  return example;
}

Array ColorJitter::apply(const Array& image) const {
  check_rgb("ColorJitter", image);
  const std::array<uint32_t, 4> r1 = stream_.next(), r2 = stream_.next();
  auto factor = [](double v, double u) { return std::max(0.0, 1.0 - v) + (1.0 + v - std::max(0.0, 1.0 - v)) * u; };
  const double b = factor(options_.brightness, unit(r1[0], r1[1]));
  const double c = factor(options_.contrast, unit(r1[2], r1[3]));
  const double s = factor(options_.saturation, unit(r2[0], r2[1]));
  Array out = as_values(image);
  const int64_t n = image.shape()[1] * image.shape()[2];
  auto run = [&]<class T>(T* p) {
    T* R = p;
    T* G = p + n;
    T* B = p + 2 * n;
    double mean = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      R[i] *= static_cast<T>(b);
      G[i] *= static_cast<T>(b);
      B[i] *= static_cast<T>(b);
      mean += 0.299 * R[i] + 0.587 * G[i] + 0.114 * B[i];
    }
    mean /= static_cast<double>(std::max<int64_t>(n, 1));
    const auto cm = static_cast<T>((1.0 - c) * mean);
    for (int64_t i = 0; i < n; ++i) {
      R[i] = static_cast<T>(c) * R[i] + cm;
      G[i] = static_cast<T>(c) * G[i] + cm;
      B[i] = static_cast<T>(c) * B[i] + cm;
      const T gray = static_cast<T>(0.299) * R[i] + static_cast<T>(0.587) * G[i] + static_cast<T>(0.114) * B[i];
      const auto g = static_cast<T>((1.0 - s)) * gray;
      R[i] = static_cast<T>(s) * R[i] + g;
      G[i] = static_cast<T>(s) * G[i] + g;
      B[i] = static_cast<T>(s) * B[i] + g;
    }
  };
  if (out.dtype() == Dtype::float64) {
    run(out.data<double>());
  } else {
    run(out.data<float>());
  }
  return out;
}

// ---- PcaLighting ----------------------------------------------------------------------------------

PcaLighting::PcaLighting(PcaLightingOptions options) : options_(options), stream_(options.seed, 5) {
  RENSA_CHECK(options_.sigma >= 0 && std::isfinite(options_.sigma), ValueError,
              "PcaLighting: sigma must be finite and >= 0, got ", options_.sigma);
}

Example PcaLighting::operator()(Example example) const {
  Array& image = image_of("PcaLighting", example);
  image = apply(image);
  return example;
}

Array PcaLighting::apply(const Array& image) const {
  check_rgb("PcaLighting", image);
  // Three normals by Box-Muller from two draws.
  const std::array<uint32_t, 4> r1 = stream_.next(), r2 = stream_.next();
  const double u[4] = {unit(r1[0], r1[1]), unit(r1[2], r1[3]), unit(r2[0], r2[1]), unit(r2[2], r2[3])};
  auto normal = [](double a, double b, bool cosine) {
    const double rad = std::sqrt(-2.0 * std::log(1.0 - a));
    return rad * (cosine ? std::cos(2.0 * M_PI * b) : std::sin(2.0 * M_PI * b));
  };
  const double alpha[3] = {normal(u[0], u[1], true) * options_.sigma, normal(u[0], u[1], false) * options_.sigma,
                           normal(u[2], u[3], true) * options_.sigma};
  double delta[3];
  for (int ch = 0; ch < 3; ++ch) {
    delta[ch] = 0.0;
    for (int k = 0; k < 3; ++k) {
      delta[ch] += options_.eigen_vector[static_cast<std::size_t>(ch)][static_cast<std::size_t>(k)] * alpha[k] *
                   options_.eigen_value[static_cast<std::size_t>(k)];
    }
    delta[ch] *= options_.scale;
  }
  Array out = as_values(image);
  for_channels(out, [&](int64_t ch, auto* p, int64_t n) {
    using T = std::remove_pointer_t<decltype(p)>;
    const auto d = static_cast<T>(delta[ch]);
    for (int64_t i = 0; i < n; ++i) p[i] += d;
  });
  return out;
}

}  // namespace rensa::datasets::transforms
