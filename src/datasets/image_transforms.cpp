// Image data augmentation: crop_and_flip, RandomCrop, RandomFlip, Normalize, compose.

#include "rensa/datasets/image_transforms.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "rensa/core/dtype.h"
#include "rensa/core/error.h"
#include "rensa/core/random.h"
#include "rensa/datasets/example_key.h"
#include "src/datasets/batch_row.h"
#include "src/datasets/image_common.h"

namespace rensa::datasets::transforms {
namespace {

std::string list(const std::vector<double>& v) {
  std::ostringstream os;
  os << '[';
  for (std::size_t k = 0; k < v.size(); ++k) os << (k ? ", " : "") << v[k];
  os << ']';
  return os.str();
}

}  // namespace

/// The checks every transform makes of its image: 3-d, uint8 or floating, in host memory.
void check_image(const char* who, const Array& image) {
  RENSA_CHECK(!image.is_null(), ValueError, who, ": the image is a null array");
  RENSA_CHECK(image.device().is_host(), DeviceError, who, ": needs the image in host memory, it is on ",
              image.device());
  RENSA_CHECK(image.ndim() == 3, ShapeError, who, ": the image must be 3-dimensional (C, H, W), got shape ",
              image.shape());
  RENSA_CHECK(is_floating(image.dtype()) || image.dtype() == Dtype::uint8, DtypeError, who,
              ": the image must be uint8 or floating, got ", dtype_name(image.dtype()));
}

Array& image_of(const char* who, Example& example) {
  RENSA_CHECK(!example.empty(), ValueError, who, ": the example is empty (element 0 should be the image)");
  return example[0];
}

namespace {

using ::rensa::detail::splitmix64;

/// true with probability p, from 32 random bits.
bool bernoulli(uint32_t bits, double p) {
  return static_cast<double>(bits) * 0x1p-32 < p;
}

/// out[j] = in[n - 1 - j] for j < n.
template <class T>
void copy_reversed(const T* in, int64_t n, T* out) {
  int64_t j = 0;
#if defined(__SSE2__)
  if constexpr (std::is_same_v<T, uint8_t>) {
    // 16 bytes at a time, with SSE2's shuffles (no byte shuffle before SSSE3): the dwords
    // reversed, then the words in each dword, then the bytes in each word.
    for (; j + 16 <= n; j += 16) {
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + n - 16 - j));
      v = _mm_shuffle_epi32(v, _MM_SHUFFLE(0, 1, 2, 3));
      v = _mm_shufflehi_epi16(_mm_shufflelo_epi16(v, _MM_SHUFFLE(2, 3, 0, 1)), _MM_SHUFFLE(2, 3, 0, 1));
      v = _mm_or_si128(_mm_slli_epi16(v, 8), _mm_srli_epi16(v, 8));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j), v);
    }
  }
#endif
  for (; j < n; ++j) out[j] = in[n - 1 - j];
}

/// crop_and_flip after its checks; `image` is (C, H, W), floating, on the host.
Array crop_and_flip_unchecked(const char* who, const Array& image, int64_t pad, int64_t top, int64_t left,
                              int64_t height, int64_t width, bool flip_h, bool flip_v, double pad_value) {
  const Shape& shape = image.shape();
  const int64_t channels = shape[0], in_h = shape[1], in_w = shape[2];
  Array out = Array::empty(Shape{channels, height, width}, image.dtype(), image.device());
  dispatch_image(image.dtype(), who, [&]<class T>() {
    const T* src = static_cast<const T*>(image.raw_data());
    T* dst = out.data<T>();
    const T fill = static_cast<T>(pad_value);
    const int64_t sc = image.strides()[0], sh = image.strides()[1], sw = image.strides()[2];
    // Output column j reads input column first + step * j; [j0, j1) are the columns inside the image.
    const int64_t first = flip_h ? left - pad + width - 1 : left - pad;
    const int64_t step = flip_h ? -1 : 1;
    const int64_t j0 = std::clamp(flip_h ? first - in_w + 1 : -first, int64_t{0}, width);
    const int64_t j1 = std::clamp(flip_h ? first + 1 : in_w - first, j0, width);
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t i = 0; i < height; ++i) {
        T* row = dst + (c * height + i) * width;
        const int64_t si = top - pad + (flip_v ? height - 1 - i : i);
        if (si < 0 || si >= in_h) {
          std::fill(row, row + width, fill);
          continue;
        }
        std::fill(row, row + j0, fill);
        // Column j of the output is element first * sw + j * s of the input row.
        const T* srow = src + c * sc + si * sh;
        const int64_t s = step * sw;
        if (s == 1 && j0 < j1) {
          std::copy_n(srow + first * sw + j0, j1 - j0, row + j0);
        } else if (s == -1 && j0 < j1) {
          copy_reversed(srow + first * sw - (j1 - 1), j1 - j0, row + j0);
        } else {
          for (int64_t j = j0; j < j1; ++j) row[j] = srow[first * sw + j * s];
        }
        std::fill(row + j1, row + width, fill);
      }
    }
  });
  return out;
}

}  // namespace

// ---- RandomStream ---------------------------------------------------------------------------------

RandomStream::RandomStream(uint64_t seed, uint8_t stream_id)
    : seed_(seed),
      stream_base_(static_cast<uint64_t>(stream_id) << 56),
      draws_(std::make_shared<std::atomic<uint64_t>>(0)) {}

std::array<uint32_t, 4> RandomStream::next() const {
  std::array<uint32_t, 4> r;
  if (const std::optional<ExampleKey> key = current_example_key()) {
    // Keyed: the Philox key mixes the seed with (epoch, stream id); the counter is (index, k).
    const uint64_t k = datasets::detail::next_draw_in_example(draws_.get());
    RENSA_CHECK(k < (uint64_t{1} << 16), ValueError, "RandomStream: more than 65536 draws for one example");
    const uint64_t mixed = splitmix64(seed_ ^ splitmix64((static_cast<uint64_t>(key->epoch) << 8) ^ (stream_base_ >> 56) ^
                                                         (uint64_t{1} << 63)));
    rensa::detail::philox4x32((static_cast<uint64_t>(key->index) << 16) | k, mixed, r.data());
    return r;
  }
  // The id takes the top 8 bits of the counter: 2^56 draws per stream before streams would meet.
  const uint64_t k = draws_->fetch_add(1, std::memory_order_relaxed);
  rensa::detail::philox4x32(stream_base_ + k, seed_, r.data());
  return r;
}

// ---- crop_and_flip --------------------------------------------------------------------------------

Array crop_and_flip(const Array& image, int64_t pad, int64_t top, int64_t left, int64_t height, int64_t width,
                    bool flip_horizontal, bool flip_vertical, double pad_value) {
  const char* who = "crop_and_flip";
  check_image(who, image);
  RENSA_CHECK(pad >= 0 && top >= 0 && left >= 0 && height >= 0 && width >= 0, ValueError, who,
              ": pad, top, left, height and width must be >= 0, got pad ", pad, ", top ", top, ", left ", left,
              ", height ", height, ", width ", width);
  const int64_t padded_h = image.shape()[1] + 2 * pad, padded_w = image.shape()[2] + 2 * pad;
  RENSA_CHECK(top + height <= padded_h && left + width <= padded_w, ShapeError, who, ": the window at (", top, ", ",
              left, ") of size (", height, ", ", width, ") does not fit the padded image (", padded_h, ", ", padded_w,
              ") (image shape ", image.shape(), ", pad ", pad, ")");
  return crop_and_flip_unchecked(who, image, pad, top, left, height, width, flip_horizontal, flip_vertical, pad_value);
}

// ---- RandomCrop -----------------------------------------------------------------------------------

RandomCrop::RandomCrop(RandomCropOptions options) : options_(options), stream_(options.seed, 1) {
  RENSA_CHECK(options_.pad >= 0, ValueError, "RandomCrop: pad must be >= 0, got ", options_.pad);
  if (options_.size) {
    const auto [h, w] = *options_.size;
    RENSA_CHECK(h >= 0 && w >= 0, ValueError, "RandomCrop: size must be >= 0, got (", h, ", ", w, ")");
  }
}

Example RandomCrop::operator()(Example example) const {
  Array& image = image_of("RandomCrop", example);
  image = apply(image);
  return example;
}

Array RandomCrop::apply(const Array& image) const {
  const char* who = "RandomCrop";
  check_image(who, image);
  const int64_t pad = options_.pad;
  const int64_t in_h = image.shape()[1], in_w = image.shape()[2];
  const int64_t height = options_.size ? (*options_.size)[0] : in_h;
  const int64_t width = options_.size ? (*options_.size)[1] : in_w;
  const int64_t span_h = in_h + 2 * pad - height + 1, span_w = in_w + 2 * pad - width + 1;
  RENSA_CHECK(span_h >= 1 && span_w >= 1, ShapeError, who, ": the crop size (", height, ", ", width,
              ") is larger than the padded image (", in_h + 2 * pad, ", ", in_w + 2 * pad, ") (image shape ",
              image.shape(), ", pad ", pad, ")");
  const std::array<uint32_t, 4> r = stream_.next();
  const int64_t top = detail::uniform_below(r[0], r[1], span_h), left = detail::uniform_below(r[2], r[3], span_w);
  if (pad == 0 && height == in_h && width == in_w) return image;  // the only window is the image
  return crop_and_flip_unchecked(who, image, pad, top, left, height, width, false, false, options_.pad_value);
}

// ---- RandomFlip -----------------------------------------------------------------------------------

RandomFlip::RandomFlip(RandomFlipOptions options) : options_(options), stream_(options.seed, 2) {
  RENSA_CHECK(options_.horizontal >= 0.0 && options_.horizontal <= 1.0, ValueError,
              "RandomFlip: the horizontal probability must be in [0, 1], got ", options_.horizontal);
  RENSA_CHECK(options_.vertical >= 0.0 && options_.vertical <= 1.0, ValueError,
              "RandomFlip: the vertical probability must be in [0, 1], got ", options_.vertical);
}

Example RandomFlip::operator()(Example example) const {
  Array& image = image_of("RandomFlip", example);
  image = apply(image);
  return example;
}

Array RandomFlip::apply(const Array& image) const {
  const char* who = "RandomFlip";
  check_image(who, image);
  const std::array<uint32_t, 4> r = stream_.next();
  const bool flip_h = bernoulli(r[0], options_.horizontal), flip_v = bernoulli(r[1], options_.vertical);
  if (!flip_h && !flip_v) return image;
  return crop_and_flip_unchecked(who, image, 0, 0, 0, image.shape()[1], image.shape()[2], flip_h, flip_v, 0.0);
}

// ---- Normalize ------------------------------------------------------------------------------------

Normalize::Normalize(std::vector<double> mean, std::vector<double> stddev)
    : mean_(std::move(mean)), stddev_(std::move(stddev)) {
  RENSA_CHECK(!mean_.empty() && mean_.size() == stddev_.size(), ValueError,
              "Normalize: needs one mean and one stddev per channel, got mean ", list(mean_), " and stddev ",
              list(stddev_));
  for (std::size_t c = 0; c < mean_.size(); ++c) {
    RENSA_CHECK(std::isfinite(mean_[c]), ValueError, "Normalize: mean[", c, "] = ", mean_[c], " is not finite");
    RENSA_CHECK(std::isfinite(stddev_[c]) && stddev_[c] > 0.0, ValueError, "Normalize: stddev[", c, "] = ", stddev_[c],
                " must be finite and > 0");
  }
}

Example Normalize::operator()(Example example) const {
  Array& image = image_of("Normalize", example);
  image = apply(image);
  return example;
}

Array Normalize::apply(const Array& image) const {
  const char* who = "Normalize";
  check_image(who, image);
  const Shape& shape = image.shape();
  const int64_t channels = shape[0], h = shape[1], w = shape[2];
  RENSA_CHECK(channels == static_cast<int64_t>(mean_.size()), ShapeError, who, ": the image of shape ", shape, " has ",
              channels, " channels but there are ", mean_.size(), " means and stddevs");
  const Dtype out_dtype = image.dtype() == Dtype::uint8 ? Dtype::float32 : image.dtype();
  Array out = detail::image_output(shape, out_dtype, image.device());
  dispatch_image(image.dtype(), who, [&]<class T>() {
    using O = std::conditional_t<std::is_same_v<T, uint8_t>, float, T>;
    using C = compute_t<O>;
    const T* src = static_cast<const T*>(image.raw_data());
    O* dst = out.data<O>();
    const int64_t sc = image.strides()[0], sh = image.strides()[1], sw = image.strides()[2];
    for (int64_t c = 0; c < channels; ++c) {
      const C m = static_cast<C>(mean_[static_cast<std::size_t>(c)]);
      const C s = static_cast<C>(stddev_[static_cast<std::size_t>(c)]);
      for (int64_t i = 0; i < h; ++i) {
        const T* srow = src + c * sc + i * sh;
        O* row = dst + (c * h + i) * w;
        for (int64_t j = 0; j < w; ++j) row[j] = static_cast<O>((static_cast<C>(srow[j * sw]) - m) / s);
      }
    }
  });
  return out;
}

// ---- compose --------------------------------------------------------------------------------------

Transform compose(std::vector<Transform> transforms) {
  for (std::size_t k = 0; k < transforms.size(); ++k) {
    RENSA_CHECK(static_cast<bool>(transforms[k]), ValueError, "compose: transform ", k, " is empty");
  }
  return [transforms = std::move(transforms)](Example example) {
    for (const Transform& t : transforms) example = t(std::move(example));
    return example;
  };
}

}  // namespace rensa::datasets::transforms
