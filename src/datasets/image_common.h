#pragma once
// Helpers shared by the image transforms (internal).

#include <cstdint>
#include <string_view>

#include "rensa/core/array.h"
#include "rensa/core/dtype.h"
#include "rensa/datasets/dataset.h"
#include "src/datasets/common.h"

namespace rensa::datasets::transforms {

/// The checks every transform makes of its image: 3-d, uint8 or floating, in host memory.
void check_image(const char* who, const Array& image);

/// Element 0 of `example`; ValueError naming `who` when the example is empty.
Array& image_of(const char* who, Example& example);

/// dispatch_floating plus uint8, the dtypes of images.
template <class F>
decltype(auto) dispatch_image(Dtype dtype, std::string_view op, F&& f) {
  if (dtype == Dtype::uint8) return f.template operator()<uint8_t>();
  return dispatch_floating(dtype, op, std::forward<F>(f));
}

/// The dtype a value-changing transform (Normalize, Scale, ...) returns: float64 stays, the
/// others (uint8, float16, bfloat16, float32) give float32.
inline Dtype value_dtype(Dtype in) { return in == Dtype::float64 ? Dtype::float64 : Dtype::float32; }

}  // namespace rensa::datasets::transforms
