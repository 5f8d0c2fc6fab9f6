#pragma once
/// \file
/// Image data augmentation for TransformDataset: random crops with padding, random flips,
/// per-channel normalization, and their composition.
///
///   namespace T = rensa::datasets::transforms;
///   auto train = std::make_shared<rensa::datasets::TransformDataset>(
///       base, T::compose({T::RandomCrop({.pad = 4, .seed = seed}), T::RandomFlip({.seed = seed}),
///                         T::Normalize({0.2860}, {0.3530})}));
///
/// Each transform is a TransformDataset::Transform: it replaces element 0 of the example (the
/// image, (C, H, W), uint8 or any floating dtype, in host memory) with a new array and leaves the
/// other elements alone. Geometric transforms keep the dtype (uint8 stays uint8, 4x less memory
/// and bandwidth); Normalize, Scale, SubtractMean, ColorJitter and PcaLighting turn uint8 into
/// float32. ImageNet's recipe (Goyal et al.):
///
///   train: T::compose({T::RandomResizedCrop({.size = {224, 224}, .seed = s}), T::RandomFlip({.seed = s}),
///                      T::Normalize({123.7, 116.3, 103.5}, {58.4, 57.1, 57.4})})
///   val:   T::compose({T::Resize({.shorter_side = 256}), T::CenterCrop({224, 224}), T::Normalize(...)}) The input array is never written to (it is often a view of the dataset), and a
/// transform that changes nothing may return it as is.

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "rensa/core/array.h"
#include "rensa/datasets/dataset.h"
#include "rensa/datasets/transform_dataset.h"

namespace rensa::datasets::transforms {

/// A function from example to example (TransformDataset::Transform).
using Transform = TransformDataset::Transform;

/// A thread-safe counter-based random stream (Philox). Inside a TransformDataset (the usual case)
/// draw k of example `index` in epoch `epoch` is a pure function of (seed, stream id, epoch, index,
/// k) (see example_key.h): the augmented batch is the same whatever the number of worker threads,
/// and a resumed run continues it exactly, with no state to save. Outside one (apply() called
/// directly), next() takes the next draw of a sequence shared by the stream's copies.
///
/// The default generator is not used: it is per thread, so its numbers would depend on the worker
/// that reads.
class RandomStream {
 public:
  /// Streams with different ids and the same seed are independent (RandomCrop and RandomFlip use
  /// ids 1 and 2, so they may share a seed).
  explicit RandomStream(uint64_t seed = 0, uint8_t stream_id = 0);
  /// The next draw: 128 random bits.
  std::array<uint32_t, 4> next() const;
  /// The seed this stream was constructed with.
  uint64_t seed() const { return seed_; }
  /// Draws taken so far outside a TransformDataset (by this stream and its copies).
  uint64_t draws() const { return draws_->load(); }
  /// Moves the stream to draw `draws` (e.g. to restore it with a snapshot of the training).
  void set_draws(uint64_t draws) const { draws_->store(draws); }

 private:
  uint64_t seed_;
  uint64_t stream_base_;
  std::shared_ptr<std::atomic<uint64_t>> draws_;
};

/// The crop and flip behind RandomCrop and RandomFlip, with explicit parameters, in one pass:
/// out[c, i, j] = padded[c, top + i', left + j'] with i' = (flip_vertical ? height - 1 - i : i),
/// j' = (flip_horizontal ? width - 1 - j : j), where `padded` is `image` with `pad` pixels of
/// `pad_value` added on each side of H and W. So the window is cropped first, then flipped.
/// `image` is (C, H, W) of uint8 or a floating dtype in host memory, any strides; the result is a
/// new contiguous (C, height, width) array of the same dtype. ShapeError unless the image is 3-d and
/// the window [top, top + height) x [left, left + width) lies in the padded (H + 2 pad, W + 2 pad)
/// image; ValueError for a negative pad, top, left, height or width; DtypeError for an integer
/// dtype other than uint8; DeviceError off the host.
Array crop_and_flip(const Array& image, int64_t pad, int64_t top, int64_t left, int64_t height, int64_t width,
                    bool flip_horizontal = false, bool flip_vertical = false, double pad_value = 0.0);

/// Options of RandomCrop.
struct RandomCropOptions {
  /// Pixels of pad_value added on each side of H and W before cropping (>= 0).
  int64_t pad = 0;
  /// The crop's (height, width), each >= 0; default: the input's (H, W).
  std::optional<std::array<int64_t, 2>> size{};
  /// The value of the padding pixels.
  double pad_value = 0.0;
  /// Seed of the transform's RandomStream.
  uint64_t seed = 0;
};

/// Pads the image by `pad` on each side of H and W, then crops a window of `size` at a uniformly
/// random position: with the default size, the image shifted by (dy, dx), each uniform in
/// [-pad, pad], with pad_value filling in; with pad 0 as well, the image itself. One draw per call
/// (see RandomStream).
class RandomCrop {
 public:
  /// ValueError (naming RandomCrop and the value) for a negative pad or size.
  explicit RandomCrop(RandomCropOptions options = {});
  /// The example with element 0 replaced by apply(element 0). ValueError for an empty example.
  Example operator()(Example example) const;
  /// A random crop of `image` (see crop_and_flip for its requirements). ShapeError, naming
  /// RandomCrop, the image's shape and the pad, when the size exceeds the padded image.
  Array apply(const Array& image) const;
  /// The options given to the constructor.
  const RandomCropOptions& options() const { return options_; }
  /// The random stream (id 1) the crops are drawn from.
  const RandomStream& stream() const { return stream_; }

 private:
  RandomCropOptions options_;
  RandomStream stream_;
};

/// Options of RandomFlip.
struct RandomFlipOptions {
  /// Probability of reversing the W axis (left-right), in [0, 1].
  double horizontal = 0.5;
  /// Probability of reversing the H axis (upside down), in [0, 1]; independent of `horizontal`.
  double vertical = 0.0;
  /// Seed of the transform's RandomStream.
  uint64_t seed = 0;
};

/// Flips the image left-right and/or upside down at random. One draw per call (see RandomStream).
class RandomFlip {
 public:
  /// ValueError (naming RandomFlip and the value) for a probability outside [0, 1].
  explicit RandomFlip(RandomFlipOptions options = {});
  /// The example with element 0 replaced by apply(element 0). ValueError for an empty example.
  Example operator()(Example example) const;
  /// `image` (C, H, W), flipped or not (then returned as is); requirements as crop_and_flip.
  Array apply(const Array& image) const;
  /// The options given to the constructor.
  const RandomFlipOptions& options() const { return options_; }
  /// The random stream (id 2) the flips are drawn from.
  const RandomStream& stream() const { return stream_; }

 private:
  RandomFlipOptions options_;
  RandomStream stream_;
};

/// y[c] = (x[c] - mean[c]) / stddev[c] for each channel c of a (C, H, W) image, computed in the
/// image's floating dtype (float32 for float16, bfloat16 and uint8, whose result is float32, so
/// give the mean and stddev in 0..255 units); the result is a new contiguous array.
class Normalize {
 public:
  /// One mean and one standard deviation per channel. ValueError (naming Normalize and the
  /// values) when the lists are empty or of different lengths, a stddev is not > 0, or a value is
  /// not finite.
  Normalize(std::vector<double> mean, std::vector<double> stddev);
  /// The example with element 0 replaced by apply(element 0). ValueError for an empty example.
  Example operator()(Example example) const;
  /// ShapeError unless `image` is 3-d with C equal to the number of means; DtypeError for an
  /// integer dtype; DeviceError off the host.
  Array apply(const Array& image) const;
  /// The per-channel means subtracted.
  const std::vector<double>& mean() const { return mean_; }
  /// The per-channel standard deviations divided by.
  const std::vector<double>& stddev() const { return stddev_; }

 private:
  std::vector<double> mean_, stddev_;
};

/// How Resize and RandomResizedCrop resample.
enum class Interpolation {
  /// Bilinear; when shrinking, a triangle filter widened to the scale (antialiased, as PIL's
  /// BILINEAR, which torchvision uses for PIL images).
  bilinear,
  /// The mean of the source pixels each output pixel covers (area; best for shrinking).
  area,
  /// The nearest source pixel.
  nearest,
};

/// Resamples the window [top, top + height) x [left, left + width) of `image` (C, H, W) to
/// (C, out_height, out_width), flipped left-right when `flip_horizontal`. Floating dtypes are
/// computed in float32 (float64 in float64). uint8 is computed in fixed point (int16 weights, one
/// rounding, half up, at the end): each value is the exact result rounded, or 1 off it where that
/// exact value lies within a few hundredths of a half (about 1 value in 1000 on random pixels); it
/// differs from the float computation, rounded, by at most 1 and only there. The crop, resize and
/// flip of one call read the source once. ShapeError naming resize_window when the window is empty or
/// leaves the image or an output side is < 1; dtype and device errors as crop_and_flip.
Array resize_window(const Array& image, int64_t top, int64_t left, int64_t height, int64_t width, int64_t out_height,
                    int64_t out_width, Interpolation interpolation = Interpolation::bilinear,
                    bool flip_horizontal = false);

/// Options of Resize: exactly one of `size` and `shorter_side`.
struct ResizeOptions {
  /// The output (height, width).
  std::optional<std::array<int64_t, 2>> size{};
  /// The output's shorter side, the aspect ratio kept (torchvision's Resize(int)).
  std::optional<int64_t> shorter_side{};
  /// How pixels are resampled.
  Interpolation interpolation = Interpolation::bilinear;
};

/// Resizes the image. ValueError (naming Resize) unless exactly one of size and shorter_side is
/// set, to values >= 1.
class Resize {
 public:
  /// ValueError (naming Resize) unless exactly one of size and shorter_side is set, to values >= 1.
  explicit Resize(ResizeOptions options);
  /// The example with element 0 replaced by apply(element 0). ValueError for an empty example.
  Example operator()(Example example) const;
  /// `image` (C, H, W) resized, in its dtype; ShapeError for an empty image.
  Array apply(const Array& image) const;
  /// The options given to the constructor.
  const ResizeOptions& options() const { return options_; }

 private:
  ResizeOptions options_;
};

/// Crops the central (height, width) window (chainercv's center_crop; torchvision's CenterCrop).
/// ShapeError naming CenterCrop and both shapes when the image is smaller.
class CenterCrop {
 public:
  /// ValueError for a size < 1.
  explicit CenterCrop(std::array<int64_t, 2> size);
  /// The example with element 0 replaced by apply(element 0). ValueError for an empty example.
  Example operator()(Example example) const;
  /// The central window of `image` (C, H, W); ShapeError when the image is smaller.
  Array apply(const Array& image) const;

 private:
  std::array<int64_t, 2> size_;
};

/// Options of RandomResizedCrop (torchvision's defaults).
struct RandomResizedCropOptions {
  /// The output (height, width).
  std::array<int64_t, 2> size{224, 224};
  /// Range of the window's area as a fraction of the image's.
  std::array<double, 2> scale{0.08, 1.0};
  /// Range of the window's aspect ratio (width / height), drawn log-uniformly.
  std::array<double, 2> ratio{3.0 / 4.0, 4.0 / 3.0};
  /// How the window is resampled to `size`.
  Interpolation interpolation = Interpolation::bilinear;
  /// Seed of the random stream (id 3); with the epoch and example index it fixes every window.
  uint64_t seed = 0;
};

/// Crops a random window of random area and aspect ratio and resizes it to `size` (Szegedy et al.;
/// the ResNet recipe of Goyal et al.; torchvision's RandomResizedCrop): up to 10 tries for a window
/// that fits, else the central window with the ratio clamped into range. Draws from a
/// RandomStream (id 3). ValueError naming RandomResizedCrop for a size < 1 or a range that is
/// empty, not positive, or (scale) above 1.
class RandomResizedCrop {
 public:
  /// ValueError naming RandomResizedCrop for a size < 1 or an empty, non-positive or (scale) above-1 range.
  explicit RandomResizedCrop(RandomResizedCropOptions options = {});
  /// The example with element 0 replaced by apply(element 0). ValueError for an empty example.
  Example operator()(Example example) const;
  /// A random window of `image` (C, H, W) resized to `size`, in the image's dtype.
  Array apply(const Array& image) const;
  /// The window (top, left, height, width) apply() would cut from an (H, W) image with these
  /// random draws (for tests and for reduced-size decoding decisions).
  std::array<int64_t, 4> window(int64_t height, int64_t width) const;
  /// The options given to the constructor.
  const RandomResizedCropOptions& options() const { return options_; }

 private:
  RandomResizedCropOptions options_;
  RandomStream stream_;
};

/// y = x * factor, as float32 (float64 stays float64): Scale(1.0 / 255) maps uint8 pixels to
/// [0, 1], like torchvision's ToTensor and Chainer's `image / 255`. ValueError for a factor that
/// is not finite.
class Scale {
 public:
  /// ValueError for a factor that is not finite.
  explicit Scale(double factor);
  /// The example with element 0 replaced by apply(element 0). ValueError for an empty example.
  Example operator()(Example example) const;
  /// `image` * factor, as float32 (float64 stays float64).
  Array apply(const Array& image) const;

 private:
  double factor_;
};

/// y = x - mean, as float32 (float64 stays float64), where `mean` is (C, H, W) with the image's
/// shape (the per-pixel mean of the ChainerMN imagenet example, `mean.npy`: subtract it before
/// cropping, which equals cropping both at the same window) or (C, 1, 1). ShapeError naming
/// SubtractMean and both shapes otherwise.
class SubtractMean {
 public:
  /// `mean` is copied to float32. ShapeError unless it is 3-d.
  explicit SubtractMean(const Array& mean);
  /// The example with element 0 replaced by apply(element 0). ValueError for an empty example.
  Example operator()(Example example) const;
  /// `image` minus the mean, as float32; ShapeError naming both shapes when they do not fit.
  Array apply(const Array& image) const;

 private:
  Array mean_;
};

/// Options of ColorJitter: each factor is drawn uniformly from [max(0, 1 - v), 1 + v].
struct ColorJitterOptions {
  /// Brightness range v: the factor scales every pixel.
  double brightness = 0.4;
  /// Contrast range v: the factor blends each pixel with the image's mean gray level.
  double contrast = 0.4;
  /// Saturation range v: the factor blends each pixel with its own gray value.
  double saturation = 0.4;
  /// Seed of the random stream (id 4) the factors are drawn from.
  uint64_t seed = 0;
};

/// Random brightness, contrast and saturation, in that order, on an RGB (3, H, W) image
/// (torchvision's ColorJitter without hue, in a fixed order): brightness scales the pixels;
/// contrast blends with the image's mean gray level; saturation with each pixel's gray value.
/// uint8 gives float32 in 0..255 (not clamped). Draws from a RandomStream (id 4). ValueError for
/// a negative value; ShapeError for an image that is not 3-channel.
class ColorJitter {
 public:
  /// ValueError for a negative brightness, contrast or saturation.
  explicit ColorJitter(ColorJitterOptions options = {});
  /// The example with element 0 replaced by apply(element 0). ValueError for an empty example.
  Example operator()(Example example) const;
  /// `image` (3, H, W) with random brightness, contrast and saturation; uint8 gives float32.
  Array apply(const Array& image) const;

 private:
  ColorJitterOptions options_;
  RandomStream stream_;
};

/// Options of PcaLighting (AlexNet's colour augmentation). The default eigenvalues and
/// eigenvectors are those of ImageNet's RGB pixels in [0, 1] units; `scale` is the pixel unit
/// (255 for 0..255 images).
struct PcaLightingOptions {
  /// Standard deviation of the random weights alpha (0 disables).
  double sigma = 0.1;
  /// Eigenvalues of the RGB pixels' covariance, in [0, 1] units.
  std::array<double, 3> eigen_value{0.2175, 0.0188, 0.0045};
  /// Eigenvectors of that covariance as columns (row = channel); column k goes with eigen_value[k].
  std::array<std::array<double, 3>, 3> eigen_vector{{{-0.5675, 0.7192, 0.4009},
                                                     {-0.5808, -0.0045, -0.8140},
                                                     {-0.5836, -0.6948, 0.4203}}};
  /// The pixel unit: 255 for images in 0..255, 1 for images in [0, 1].
  double scale = 255.0;
  /// Seed of the random stream (id 5) the weights alpha are drawn from.
  uint64_t seed = 0;
};

/// Adds scale * eigen_vector * (alpha .* eigen_value) to each pixel of an RGB (3, H, W) image,
/// alpha ~ N(0, sigma^2) per image (Krizhevsky et al.; chainercv's pca_lighting). uint8 gives
/// float32. Draws from a RandomStream (id 5). ValueError for a negative sigma.
class PcaLighting {
 public:
  /// ValueError for a negative sigma.
  explicit PcaLighting(PcaLightingOptions options = {});
  /// The example with element 0 replaced by apply(element 0). ValueError for an empty example.
  Example operator()(Example example) const;
  /// `image` (3, H, W) with the random lighting offset added; uint8 gives float32.
  Array apply(const Array& image) const;

 private:
  PcaLightingOptions options_;
  RandomStream stream_;
};

/// A transform applying `transforms` in order (the identity when the list is empty). ValueError
/// naming the position of an empty transform.
Transform compose(std::vector<Transform> transforms);

}  // namespace rensa::datasets::transforms
