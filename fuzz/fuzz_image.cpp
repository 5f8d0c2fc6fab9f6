// libFuzzer target: JPEG and PNG decoding from arbitrary bytes. Malformed input must end in a
// rensa::Error; anything else (a crash, a sanitizer report, an escaping exception) is a bug. An
// image that decodes must have the size its header gives, in every colour mode.

#include <cstddef>
#include <cstdint>

#include "rensa/datasets/image_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  namespace D = rensa::datasets;
  try {
    const D::ImageInfo info = D::image_info(data, size, "fuzz input");
    // Bound the work: a tiny file may claim a huge image.
    if (info.height * info.width > (int64_t{1} << 22)) return 0;
    for (const D::ImageColor color : {D::ImageColor::stored, D::ImageColor::gray, D::ImageColor::rgb}) {
      const rensa::Array a = D::decode_image(data, size, "fuzz input", {rensa::Dtype::uint8, color, 0});
      if (a.shape()[1] != info.height || a.shape()[2] != info.width) __builtin_trap();
    }
    (void)D::decode_image(data, size, "fuzz input", {rensa::Dtype::float32, D::ImageColor::rgb, 8});
  } catch (const rensa::Error&) {
  }
  return 0;
}
