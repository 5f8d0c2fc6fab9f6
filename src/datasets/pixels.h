#pragma once
// Bytes to the scaled pixel arrays of the dataset readers (MNIST, CIFAR, SVHN, KMNIST; internal).

#include <cstdint>

#include "rensa/core/array.h"

namespace rensa::datasets::detail {

/// `images` images of `pixels` bytes each at `src`, each written `repeat` times in a row (gray to
/// RGB), into a new array of `shape` and `dtype` with values byte * scale / 255 (computed in
/// float32, float64 for float64, as NumPy's astype then `*= scale / 255.`).
Array scale_pixels(const unsigned char* src, const Shape& shape, int64_t images, int64_t pixels, int repeat,
                   double scale, Dtype dtype);

}  // namespace rensa::datasets::detail
