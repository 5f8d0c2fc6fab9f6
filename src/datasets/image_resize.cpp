// Resampling transforms: resize_window (crop + resize + flip in one pass), Resize, CenterCrop and
// RandomResizedCrop.

#include <algorithm>
#include <cmath>
#include <vector>

#include "rensa/core/error.h"
#include "rensa/datasets/image_transforms.h"
#include "src/datasets/image_common.h"

namespace rensa::datasets::transforms {
namespace {

/// The taps of one output coordinate: source indices [first, first + weights.size()).
struct Taps {
  int64_t first = 0;
  std::vector<float> weights;
};

/// Separable resampling weights for `out` outputs from the source span [start, start + len).
/// Output k's centre is start + (k + 0.5) * scale in source pixel units (half-pixel centres).
std::vector<Taps> taps_for(int64_t start, int64_t len, int64_t out, Interpolation interp, bool flip) {
  const double scale = static_cast<double>(len) / static_cast<double>(out);
  const double widen = std::max(scale, 1.0);  // shrinking widens the filter (antialiasing)
  std::vector<Taps> taps(static_cast<std::size_t>(out));
  for (int64_t k = 0; k < out; ++k) {
    const int64_t kk = flip ? out - 1 - k : k;
    const double centre = (static_cast<double>(kk) + 0.5) * scale;  // relative to start
    Taps& t = taps[static_cast<std::size_t>(k)];
    if (interp == Interpolation::nearest) {
      t.first = start + std::min<int64_t>(static_cast<int64_t>(std::floor(centre)), len - 1);
      t.weights = {1.0f};
      continue;
    }
    const double support = interp == Interpolation::area ? 0.5 * scale : widen;
    const auto lo = std::max<int64_t>(0, static_cast<int64_t>(std::floor(centre - support)));
    const auto hi = std::min<int64_t>(len, static_cast<int64_t>(std::ceil(centre + support)));
    double total = 0.0;
    std::vector<double> w;
    for (int64_t j = lo; j < hi; ++j) {
      double v;
      if (interp == Interpolation::area) {
        // Overlap of source pixel [j, j + 1) with the output's footprint.
        v = std::max(0.0, std::min(j + 1.0, centre + support) - std::max(static_cast<double>(j), centre - support));
      } else {
        v = std::max(0.0, 1.0 - std::abs((static_cast<double>(j) + 0.5 - centre) / widen));
      }
      w.push_back(v);
      total += v;
    }
    if (total <= 0.0) {  // degenerate footprint: the nearest pixel
      t.first = start + std::clamp<int64_t>(static_cast<int64_t>(std::floor(centre)), 0, len - 1);
      t.weights = {1.0f};
      continue;
    }
    // Trim zero weights at the ends, then normalize.
    std::size_t a = 0, b = w.size();
    while (a < b && w[a] == 0.0) ++a;
    while (b > a && w[b - 1] == 0.0) --b;
    t.first = start + lo + static_cast<int64_t>(a);
    for (std::size_t j = a; j < b; ++j) t.weights.push_back(static_cast<float>(w[j] / total));
  }
  return taps;
}

template <class T>
T store(double v) {
  if constexpr (std::is_same_v<T, uint8_t>) {
    return static_cast<uint8_t>(std::clamp(std::nearbyint(v), 0.0, 255.0));
  } else {
    return static_cast<T>(v);
  }
}

}  // namespace

Array resize_window(const Array& image, int64_t top, int64_t left, int64_t height, int64_t width, int64_t out_height,
                    int64_t out_width, Interpolation interpolation, bool flip_horizontal) {
  const char* who = "resize_window";
  check_image(who, image);
  const int64_t channels = image.shape()[0], in_h = image.shape()[1], in_w = image.shape()[2];
  RENSA_CHECK(top >= 0 && left >= 0 && height >= 1 && width >= 1 && top + height <= in_h && left + width <= in_w,
              ShapeError, who, ": the window at (", top, ", ", left, ") of size (", height, ", ", width,
              ") must be non-empty and inside the image of shape ", image.shape());
  RENSA_CHECK(out_height >= 1 && out_width >= 1, ShapeError, who, ": the output size (", out_height, ", ", out_width,
              ") must be at least (1, 1)");
  const std::vector<Taps> tx = taps_for(left, width, out_width, interpolation, flip_horizontal);
  const std::vector<Taps> ty = taps_for(top, height, out_height, interpolation, false);
  Array out = Array::empty(Shape{channels, out_height, out_width}, image.dtype(), image.device());
  dispatch_image(image.dtype(), who, [&]<class T>() {
    using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const T* src = static_cast<const T*>(image.raw_data());
    T* dst = out.data<T>();
    const int64_t sc = image.strides()[0], sh = image.strides()[1], sw = image.strides()[2];
    // Vertical pass first, over whole source rows of the window (contiguous: it vectorizes), into
    // one row of `width` values; then the horizontal pass on that row only.
    std::vector<Acc> col(static_cast<std::size_t>(width));
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t i = 0; i < out_height; ++i) {
        const Taps& t = ty[static_cast<std::size_t>(i)];
        Acc* a = col.data();
        std::fill(a, a + width, Acc{0});
        for (std::size_t j = 0; j < t.weights.size(); ++j) {
          const Acc wj = static_cast<Acc>(t.weights[j]);
          const T* row = src + c * sc + (t.first + static_cast<int64_t>(j)) * sh + left * sw;
          if (sw == 1) {
            for (int64_t k = 0; k < width; ++k) a[k] += wj * static_cast<Acc>(row[k]);
          } else {
            for (int64_t k = 0; k < width; ++k) a[k] += wj * static_cast<Acc>(row[k * sw]);
          }
        }
        T* orow = dst + (c * out_height + i) * out_width;
        for (int64_t k = 0; k < out_width; ++k) {
          const Taps& tk = tx[static_cast<std::size_t>(k)];
          const Acc* p = a + (tk.first - left);
          const float* wt = tk.weights.data();
          Acc v = 0;
          for (std::size_t j = 0, n = tk.weights.size(); j < n; ++j) v += static_cast<Acc>(wt[j]) * p[j];
          if constexpr (std::is_same_v<T, uint8_t>) {
            // Round half up and clamp: store<uint8_t> for the finite, non-negative sums here.
            orow[k] = static_cast<uint8_t>(static_cast<int>(std::min(std::max(v + Acc(0.5), Acc(0)), Acc(255))));
          } else {
            orow[k] = store<T>(static_cast<double>(v));
          }
        }
      }
    }
  });
  return out;
}

// ---- Resize ---------------------------------------------------------------------------------------

Resize::Resize(ResizeOptions options) : options_(options) {
  RENSA_CHECK(options_.size.has_value() != options_.shorter_side.has_value(), ValueError,
              "Resize: set exactly one of size and shorter_side");
  if (options_.size) {
    RENSA_CHECK((*options_.size)[0] >= 1 && (*options_.size)[1] >= 1, ValueError, "Resize: size must be >= 1, got (",
                (*options_.size)[0], ", ", (*options_.size)[1], ")");
  } else {
    RENSA_CHECK(*options_.shorter_side >= 1, ValueError, "Resize: shorter_side must be >= 1, got ",
                *options_.shorter_side);
  }
}

Example Resize::operator()(Example example) const {
  Array& image = image_of("Resize", example);
  image = apply(image);
  return example;
}

Array Resize::apply(const Array& image) const {
  check_image("Resize", image);
  const int64_t h = image.shape()[1], w = image.shape()[2];
  RENSA_CHECK(h >= 1 && w >= 1, ShapeError, "Resize: the image of shape ", image.shape(), " is empty");
  int64_t oh, ow;
  if (options_.size) {
    oh = (*options_.size)[0];
    ow = (*options_.size)[1];
  } else {
    RENSA_CHECK(options_.shorter_side.has_value(), ValueError, "Resize: neither size nor shorter_side is set");
    const int64_t s = *options_.shorter_side;
    // As torchvision: the shorter side becomes s, the longer int(s * long / short).
    if (h <= w) {
      oh = s;
      ow = std::max<int64_t>(1, s * w / h);
    } else {
      ow = s;
      oh = std::max<int64_t>(1, s * h / w);
    }
  }
  if (oh == h && ow == w) return image;
  return resize_window(image, 0, 0, h, w, oh, ow, options_.interpolation);
}

// ---- CenterCrop -----------------------------------------------------------------------------------

CenterCrop::CenterCrop(std::array<int64_t, 2> size) : size_(size) {
  RENSA_CHECK(size_[0] >= 1 && size_[1] >= 1, ValueError, "CenterCrop: size must be >= 1, got (", size_[0], ", ",
              size_[1], ")");
}

Example CenterCrop::operator()(Example example) const {
  Array& image = image_of("CenterCrop", example);
  image = apply(image);
  return example;
}

Array CenterCrop::apply(const Array& image) const {
  check_image("CenterCrop", image);
  const int64_t h = image.shape()[1], w = image.shape()[2];
  RENSA_CHECK(size_[0] <= h && size_[1] <= w, ShapeError, "CenterCrop: the crop (", size_[0], ", ", size_[1],
              ") is larger than the image of shape ", image.shape());
  // Chainer's center_crop: the window starts at int(round((H - h) / 2)).
  const auto top = static_cast<int64_t>(std::nearbyint(static_cast<double>(h - size_[0]) / 2.0));
  const auto left = static_cast<int64_t>(std::nearbyint(static_cast<double>(w - size_[1]) / 2.0));
  return crop_and_flip(image, 0, top, left, size_[0], size_[1]);
}

// ---- RandomResizedCrop ----------------------------------------------------------------------------

RandomResizedCrop::RandomResizedCrop(RandomResizedCropOptions options) : options_(options), stream_(options.seed, 3) {
  const auto& o = options_;
  RENSA_CHECK(o.size[0] >= 1 && o.size[1] >= 1, ValueError, "RandomResizedCrop: size must be >= 1, got (", o.size[0],
              ", ", o.size[1], ")");
  RENSA_CHECK(o.scale[0] > 0 && o.scale[0] <= o.scale[1] && o.scale[1] <= 1.0, ValueError,
              "RandomResizedCrop: scale must satisfy 0 < min <= max <= 1, got (", o.scale[0], ", ", o.scale[1], ")");
  RENSA_CHECK(o.ratio[0] > 0 && o.ratio[0] <= o.ratio[1] && std::isfinite(o.ratio[1]), ValueError,
              "RandomResizedCrop: ratio must satisfy 0 < min <= max, got (", o.ratio[0], ", ", o.ratio[1], ")");
}

std::array<int64_t, 4> RandomResizedCrop::window(int64_t height, int64_t width) const {
  const double area = static_cast<double>(height) * static_cast<double>(width);
  const double log_r0 = std::log(options_.ratio[0]), log_r1 = std::log(options_.ratio[1]);
  auto unit = [](uint32_t hi, uint32_t lo) {
    return static_cast<double>((static_cast<uint64_t>(hi) << 21) ^ (lo >> 11)) * 0x1p-53;
  };
  for (int attempt = 0; attempt < 10; ++attempt) {
    const std::array<uint32_t, 4> r = stream_.next();
    const double target = area * (options_.scale[0] + (options_.scale[1] - options_.scale[0]) * unit(r[0], r[1]));
    const double ratio = std::exp(log_r0 + (log_r1 - log_r0) * unit(r[2], r[3]));
    const auto w = static_cast<int64_t>(std::nearbyint(std::sqrt(target * ratio)));
    const auto h = static_cast<int64_t>(std::nearbyint(std::sqrt(target / ratio)));
    if (w >= 1 && h >= 1 && w <= width && h <= height) {
      const std::array<uint32_t, 4> p = stream_.next();
      return {detail::uniform_below(p[0], p[1], height - h + 1), detail::uniform_below(p[2], p[3], width - w + 1), h,
              w};
    }
  }
  // Fallback: the central window, its ratio clamped into range.
  const double in_ratio = static_cast<double>(width) / static_cast<double>(height);
  int64_t w = width, h = height;
  if (in_ratio < options_.ratio[0]) {
    h = std::max<int64_t>(1, static_cast<int64_t>(std::nearbyint(static_cast<double>(w) / options_.ratio[0])));
  } else if (in_ratio > options_.ratio[1]) {
    w = std::max<int64_t>(1, static_cast<int64_t>(std::nearbyint(static_cast<double>(h) * options_.ratio[1])));
  }
  return {(height - h) / 2, (width - w) / 2, h, w};
}

Example RandomResizedCrop::operator()(Example example) const {
  Array& image = image_of("RandomResizedCrop", example);
  image = apply(image);
  return example;
}

Array RandomResizedCrop::apply(const Array& image) const {
  check_image("RandomResizedCrop", image);
  RENSA_CHECK(image.shape()[1] >= 1 && image.shape()[2] >= 1, ShapeError, "RandomResizedCrop: the image of shape ",
              image.shape(), " is empty");
  const auto [top, left, h, w] = window(image.shape()[1], image.shape()[2]);
  return resize_window(image, top, left, h, w, options_.size[0], options_.size[1], options_.interpolation);
}

}  // namespace rensa::datasets::transforms
