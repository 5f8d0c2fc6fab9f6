#pragma once
/// \file
/// Image files: JPEG (libjpeg-turbo) and PNG (libpng) decoding into (C, H, W) arrays, and writing
/// PNG or JPEG files. The image datasets (image_dataset.h) read through these.
#include <cstddef>
#include <cstdint>
#include <string>

#include "rensa/core/array.h"
#include "rensa/core/dtype.h"

namespace rensa::datasets {

/// The channels of a decoded image.
enum class ImageColor {
  /// As stored, like Chainer's reader (PIL): 1 for gray, 2 for gray + alpha, 3 for RGB, 4 for
  /// RGBA; a palette image gives RGB (or RGBA with transparency), a CMYK JPEG gives RGB.
  stored,
  /// 1 channel (ITU-R 601 luma of RGB; alpha dropped).
  gray,
  /// 3 channels, R G B (gray repeated; alpha dropped).
  rgb,
  /// 1 channel: a palette PNG's color indices as stored, not the colors (PIL's mode "P"; label
  /// maps such as the CMP facades' are stored so). IOError for a JPEG or a PNG without a palette.
  palette,
};

/// Options of decode_image and read_image.
struct ImageReadOptions {
  /// Element type of the result. uint8 keeps the bytes (0..255), 4x smaller than float32; a
  /// floating dtype holds the same values 0..255 (Chainer's `dtype`, float32 by default).
  Dtype dtype = Dtype::float32;
  /// The channels of the result (see ImageColor).
  ImageColor color = ImageColor::stored;
  /// Reduced-size decoding: when > 0, a JPEG is decoded at 1/2, 1/4 or 1/8 of each side (done in
  /// the DCT, faster than decoding then resizing), the smallest of these whose shorter side is
  /// still at least min_size, else at full size. 0 decodes at full size; PNG always is.
  int64_t min_size = 0;
};

/// The size and format of an encoded image, read from its header without decoding.
struct ImageInfo {
  /// Height in pixels.
  int64_t height = 0;
  /// Width in pixels.
  int64_t width = 0;
  /// Channels of ImageColor::stored.
  int64_t channels = 0;
  /// "jpeg" or "png".
  std::string format;
};

/// Whether `data` starts like a JPEG or PNG file.
bool is_image_bytes(const void* data, std::size_t size);

/// Reads the header of the JPEG or PNG in `data`. IOError starting with `name` (a file name, or
/// what the bytes are) and the decoder's reason when the bytes are not a readable JPEG or PNG.
ImageInfo image_info(const void* data, std::size_t size, const std::string& name);

/// Decodes the JPEG or PNG in `data` into a new contiguous (C, H, W) host array. 16-bit PNGs are
/// reduced to 8 bits. IOError naming `name` and the decoder's reason for a corrupt, truncated or
/// unsupported image (truncated JPEG data is an error, not a partly grey image); ValueError for
/// an integer `dtype` other than uint8. Thread-safe.
Array decode_image(const void* data, std::size_t size, const std::string& name, const ImageReadOptions& options = {});

/// decode_image on the contents of the file at `path` (IOError naming the file when it cannot be
/// read).
Array read_image(const std::string& path, const ImageReadOptions& options = {});

/// Reads a whole file into a string. IOError naming the file and the system's reason.
std::string read_file_bytes(const std::string& path);

/// Encodes a (C, H, W) or (H, W) image with C in {1, 3, 4} (gray, RGB, RGBA). uint8 is written as
/// is; a floating image is rounded and clamped to 0..255. `format` is "png" or "jpeg" (quality
/// 1..100; a JPEG drops alpha). ShapeError / ValueError naming encode_image otherwise.
std::string encode_image(const Array& image, const std::string& format = "png", int quality = 95);

/// Writes encode_image's bytes to `path` atomically (a temporary file renamed over it); the
/// format follows the extension (.png, .jpg, .jpeg; ValueError for another).
void write_image(const std::string& path, const Array& image, int quality = 95);

}  // namespace rensa::datasets
