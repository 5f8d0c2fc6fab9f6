// libFuzzer target: IDX files (raw or gzip-compressed) from arbitrary bytes. Malformed input must
// end in a rensa::Error; anything else (a crash, a sanitizer report, an escaping exception) is a bug.
// An image that parses must parse the same way when its dimension count is required.

#include <cstddef>
#include <cstdint>

#include "rensa/datasets/mnist.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  namespace D = rensa::datasets;
  try {
    const rensa::Array a = D::parse_idx(data, size, "fuzz input");
    if (a.dtype() != rensa::Dtype::uint8) __builtin_trap();
    const rensa::Array b = D::parse_idx(data, size, "fuzz input", static_cast<int>(a.ndim()));
    if (!rensa::array_equal(a, b)) __builtin_trap();
  } catch (const rensa::Error&) {
  }
  // The MNIST files' expectations: labels (1 dimension) and images (3 dimensions).
  for (const int ndim : {1, 3}) {
    try {
      if (D::parse_idx(data, size, "fuzz input", ndim).ndim() != ndim) __builtin_trap();
    } catch (const rensa::Error&) {
    }
  }
  return 0;
}
