// Pixels of the dataset readers: bytes to arrays scaled as Chainer's readers scale them.

#include "src/datasets/pixels.h"

#include "rensa/core/error.h"
#include "src/core/convert.h"

namespace rensa::datasets::detail {

Array scale_pixels(const unsigned char* src, const Shape& shape, int64_t images, int64_t pixels, int repeat,
                   double scale, Dtype dtype) {
  RENSA_CHECK(shape.numel() == images * pixels * repeat, ValueError, "scale_pixels: shape ", shape, " holds ",
              shape.numel(), " values, not ", images, " x ", repeat, " x ", pixels);
  // Computed in T (float32, or float64 for float64), stored as U: a 16-bit or integer dtype gets
  // its float32 value rounded once, without a float32 copy of the whole split.
  auto convert = [&]<class T, class U>(T factor) {
    Array out = Array::empty(shape, dtype_of<U>());
    // 256 possible bytes: a table replaces the multiply (and matches NumPy's astype(dtype)
    // followed by `*= scale / 255.` in that dtype).
    U table[256];
    for (int v = 0; v < 256; ++v) table[v] = rensa::detail::convert<U>(static_cast<T>(v) * factor);
    U* dst = out.data<U>();
    for (int64_t i = 0; i < images; ++i) {
      const unsigned char* row = src + i * pixels;
      for (int c = 0; c < repeat; ++c) {
        U* o = dst + (i * repeat + c) * pixels;
        for (int64_t k = 0; k < pixels; ++k) o[k] = table[row[k]];
      }
    }
    return out;
  };
  if (dtype == Dtype::float64) return convert.operator()<double, double>(scale / 255.0);
  return dispatch(dtype, [&]<class U>() { return convert.operator()<float, U>(static_cast<float>(scale / 255.0)); });
}

}  // namespace rensa::datasets::detail
