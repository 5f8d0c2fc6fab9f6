#pragma once
// The .npy codec's pieces that the zip writer and reader use: an image's header and array, and
// the parser of one image from a stream.

#include <cstddef>
#include <cstdint>
#include <string>

#include "rensa/core/array.h"

namespace rensa::serializers::detail {

/// Sequential bytes of one .npy image.
class ByteStream {
 public:
  virtual ~ByteStream() = default;
  virtual void read(void* dst, std::size_t n) = 0;
};

/// A host, C-contiguous array with a dtype NumPy knows (bfloat16 becomes float32).
Array npy_ready(const Array& array, const std::string& ctx);

/// The header of a version-1 image (version 2 when the header is too long for 16 bits), padded
/// with spaces and a newline so that the data starts at a multiple of 64 bytes, as NumPy does.
std::string npy_header(const Array& a);

/// Reads an image of exactly `total` bytes from `in`. `ctx` starts every error message.
Array read_npy(ByteStream& in, uint64_t total, const std::string& ctx);

}  // namespace rensa::serializers::detail
