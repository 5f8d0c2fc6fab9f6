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
/// image, (C, H, W), any floating dtype, in host memory) with a new array and leaves the other
/// elements alone. The input array is never written to (it is often a view of the dataset), and a
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

/// A thread-safe counter-based random stream: draw k is the Philox block at counter k (in the
/// stream `stream_id`) with key `seed`, and every call of next() takes the next k atomically.
/// A handle: copies share the counter (std::function copies its target, and a transform's copies
/// must not repeat each other's draws), so next() and set_draws() are const. The random transforms
/// use one each; so can your own.
///
/// Reproducibility: the same seed gives the same sequence of draws. A transform that is called in
/// a fixed order (a SerialIterator, or a MultithreadIterator with one thread) therefore gives the
/// same results on every run; with several worker threads the draws are the same, but which example
/// gets which draw depends on the thread schedule. The default generator is not used: it is per
/// thread, so its numbers would depend on the worker that reads.
class RandomStream {
 public:
  /// Streams with different ids and the same seed are independent (RandomCrop and RandomFlip use
  /// ids 1 and 2, so they may share a seed).
  explicit RandomStream(uint64_t seed = 0, uint8_t stream_id = 0);
  /// The next draw: 128 random bits.
  std::array<uint32_t, 4> next() const;
  uint64_t seed() const { return seed_; }
  /// Draws taken so far (by this stream and its copies).
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
/// `image` is (C, H, W) of a floating dtype in host memory, any strides; the result is a new
/// contiguous (C, height, width) array of the same dtype. ShapeError unless the image is 3-d and
/// the window [top, top + height) x [left, left + width) lies in the padded (H + 2 pad, W + 2 pad)
/// image; ValueError for a negative pad, top, left, height or width; DtypeError for an integer
/// dtype; DeviceError off the host.
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
  const RandomCropOptions& options() const { return options_; }
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
  const RandomFlipOptions& options() const { return options_; }
  const RandomStream& stream() const { return stream_; }

 private:
  RandomFlipOptions options_;
  RandomStream stream_;
};

/// y[c] = (x[c] - mean[c]) / stddev[c] for each channel c of a (C, H, W) image, computed in the
/// image's floating dtype (float32 for float16 and bfloat16); the result is a new contiguous array.
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
  const std::vector<double>& mean() const { return mean_; }
  const std::vector<double>& stddev() const { return stddev_; }

 private:
  std::vector<double> mean_, stddev_;
};

/// A transform applying `transforms` in order (the identity when the list is empty). ValueError
/// naming the position of an empty transform.
Transform compose(std::vector<Transform> transforms);

}  // namespace rensa::datasets::transforms
