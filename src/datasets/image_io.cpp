// Image files: JPEG through libjpeg-turbo's TurboJPEG API, PNG through libpng's simplified API.
// Both report errors as return values (no longjmp through our frames), so a corrupt file is an
// IOError and never a crash.

#include "rensa/datasets/image_io.h"

#include <png.h>
#include <turbojpeg.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

#include "rensa/core/cpu_features.h"
#include "rensa/core/error.h"
#include "src/datasets/common.h"
#include "src/serializers/npz_internal.h"

namespace rensa::datasets {
namespace {

bool is_jpeg(const unsigned char* p, std::size_t n) { return n >= 3 && p[0] == 0xff && p[1] == 0xd8 && p[2] == 0xff; }
bool is_png(const unsigned char* p, std::size_t n) { return n >= 8 && std::memcmp(p, "\x89PNG\r\n\x1a\n", 8) == 0; }

std::string first_bytes(const unsigned char* p, std::size_t n) {
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (std::size_t k = 0; k < std::min<std::size_t>(n, 8); ++k) {
    if (k) s += ' ';
    s += hex[p[k] >> 4];
    s += hex[p[k] & 15];
  }
  return n == 0 ? std::string("no bytes: the file is empty") : "starts with " + s;
}

/// A TurboJPEG handle.
struct TjHandle {
  tjhandle h = nullptr;
  explicit TjHandle(bool compress) : h(compress ? tjInitCompress() : tjInitDecompress()) {
    RENSA_CHECK(h != nullptr, IOError, "libjpeg-turbo: cannot create a handle: ", tjGetErrorStr2(nullptr));
  }
  ~TjHandle() { tjDestroy(h); }
  TjHandle(const TjHandle&) = delete;
  TjHandle& operator=(const TjHandle&) = delete;
};


/// Decoded pixels, interleaved (H, W, C) uint8, in this thread's scratch buffer.
struct Pixels {
  int64_t height = 0, width = 0, channels = 0;
  unsigned char* data = nullptr;
};

/// Scratch buffers larger than this are freed after each image; smaller ones are kept.
constexpr std::size_t kKeptScratch = std::size_t{32} << 20;
thread_local std::unique_ptr<unsigned char[]> t_scratch;
thread_local std::size_t t_scratch_size = 0;

/// This thread's buffer of at least `n` bytes, not initialized: reused from image to image, its
/// pages stay mapped and in cache, where a fresh zero-filled vector per image cost a memset and
/// page faults each time.
unsigned char* scratch(std::size_t n) {
  if (t_scratch_size < n) {
    t_scratch.reset();  // the old buffer goes before the new one comes
    t_scratch_size = 0;
    t_scratch = std::make_unique_for_overwrite<unsigned char[]>(n);
    t_scratch_size = n;
  }
  return t_scratch.get();
}

/// Frees an oversized scratch buffer when the decode that used it ends.
struct ScratchTrim {
  ScratchTrim() = default;
  ScratchTrim(const ScratchTrim&) = delete;
  ScratchTrim& operator=(const ScratchTrim&) = delete;
  ~ScratchTrim() {
    if (t_scratch_size > kKeptScratch) {
      t_scratch.reset();
      t_scratch_size = 0;
    }
  }
};

struct JpegHeader {
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
};

/// This thread's decompressor: reused while decodes succeed (a new handle per call cost 6% of the
/// loader's throughput), replaced after any failure, because a handle that failed on one file was
/// found (by fuzzing) to decode the next one at the wrong size.
class Decompressor {
 public:
  Decompressor() {
    if (!t_handle) t_handle = std::make_unique<TjHandle>(false);
  }
  ~Decompressor() {
    if (!ok_) t_handle.reset();
  }
  Decompressor(const Decompressor&) = delete;
  Decompressor& operator=(const Decompressor&) = delete;
  tjhandle get() const { return t_handle->h; }
  void succeeded() { ok_ = true; }

 private:
  static thread_local std::unique_ptr<TjHandle> t_handle;
  bool ok_ = false;
};
thread_local std::unique_ptr<TjHandle> Decompressor::t_handle;

JpegHeader jpeg_header(tjhandle tj, const unsigned char* p, std::size_t n, const std::string& name) {
  JpegHeader h;
  if (tjDecompressHeader3(tj, p, static_cast<unsigned long>(n), &h.width, &h.height, &h.subsamp,
                          &h.colorspace) != 0) {
    RENSA_THROW(IOError, name, ": not a readable JPEG (libjpeg-turbo: ", tjGetErrorStr2(tj), ")");
  }
  return h;
}

int64_t jpeg_stored_channels(int colorspace) { return colorspace == TJCS_GRAY ? 1 : 3; }

Pixels decode_jpeg(const unsigned char* p, std::size_t n, const std::string& name, const ImageReadOptions& o) {
  Decompressor handle;
  const JpegHeader h = jpeg_header(handle.get(), p, n, name);
  tjscalingfactor factor{1, 1};
  if (o.min_size > 0) {
    int count = 0;
    const tjscalingfactor* factors = tjGetScalingFactors(&count);
    for (int k = 0; k < count; ++k) {
      const tjscalingfactor f = factors[k];
      // Only 1/2, 1/4 and 1/8: libjpeg-turbo's other scales (3/8, 6/8, ...) use slower, non-SIMD
      // inverse DCTs, and a 6/8 decode measured 16% slower than a full one.
      if (f.num != 1 || f.denom > 8) continue;
      const int64_t sh = TJSCALED(h.height, f), sw = TJSCALED(h.width, f);
      if (std::min(sh, sw) >= o.min_size && sh * sw < int64_t{TJSCALED(h.height, factor)} * TJSCALED(h.width, factor)) {
        factor = f;
      }
    }
  }
  Pixels px;
  px.height = TJSCALED(h.height, factor);
  px.width = TJSCALED(h.width, factor);
  const bool cmyk = h.colorspace == TJCS_CMYK || h.colorspace == TJCS_YCCK;
  const bool want_gray = o.color == ImageColor::gray || (o.color == ImageColor::stored && h.colorspace == TJCS_GRAY);
  px.channels = cmyk ? 4 : (want_gray ? 1 : 3);
  const int format = cmyk ? TJPF_CMYK : (want_gray ? TJPF_GRAY : TJPF_RGB);
  px.data = scratch(static_cast<std::size_t>(px.height * px.width * px.channels));
  // STOPONWARNING: truncated or corrupt data is an error, as in PIL, not a partly grey image.
  if (tjDecompress2(handle.get(), p, static_cast<unsigned long>(n), px.data, static_cast<int>(px.width), 0,
                    static_cast<int>(px.height), format, TJFLAG_STOPONWARNING) != 0) {
    RENSA_THROW(IOError, name, ": corrupt or truncated JPEG (libjpeg-turbo: ", tjGetErrorStr2(handle.get()), ")");
  }
  handle.succeeded();
  if (cmyk) {
    // Adobe's CMYK JPEGs store inverted inks, so R = C * K / 255 (and likewise G, B). In place:
    // pixel i is written at or before where it was read.
    const int64_t out_c = want_gray ? 1 : 3;
    for (int64_t i = 0; i < px.height * px.width; ++i) {
      const unsigned char* q = px.data + 4 * i;
      const int r = q[0] * q[3] / 255, g = q[1] * q[3] / 255, b = q[2] * q[3] / 255;
      unsigned char* d = px.data + out_c * i;
      if (out_c == 1) {
        d[0] = static_cast<unsigned char>((r * 299 + g * 587 + b * 114 + 500) / 1000);
      } else {
        d[0] = static_cast<unsigned char>(r);
        d[1] = static_cast<unsigned char>(g);
        d[2] = static_cast<unsigned char>(b);
      }
    }
    px.channels = out_c;
  }
  return px;
}

/// A png_image that is freed on every path.
struct PngImage {
  png_image image;
  PngImage() {
    std::memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
  }
  ~PngImage() { png_image_free(&image); }
  PngImage(const PngImage&) = delete;
  PngImage& operator=(const PngImage&) = delete;
};

int64_t png_channels(png_uint_32 format) {
  return ((format & PNG_FORMAT_FLAG_COLOR) ? 3 : 1) + ((format & PNG_FORMAT_FLAG_ALPHA) ? 1 : 0);
}

void png_begin(PngImage& png, const unsigned char* p, std::size_t n, const std::string& name) {
  if (png_image_begin_read_from_memory(&png.image, p, n) == 0) {
    RENSA_THROW(IOError, name, ": not a readable PNG (libpng: ", png.image.message, ")");
  }
}

Pixels decode_png(const unsigned char* p, std::size_t n, const std::string& name, bool indices) {
  PngImage png;
  png_begin(png, p, n, name);
  Pixels px;
  px.height = png.image.height;
  px.width = png.image.width;
  px.channels = png_channels(png.image.format);
  // A palette image read into a color-mapped format with alpha keeps its indices (libpng maps
  // palette entry i to colormap entry i); any other image would be quantized, so it is refused.
  std::vector<unsigned char> colormap;
  if (indices) {
    RENSA_CHECK((png.image.format & PNG_FORMAT_FLAG_COLORMAP) != 0, IOError, name,
                ": ImageColor::palette needs a palette PNG; this one stores ", px.channels, " channel",
                px.channels == 1 ? "" : "s", " per pixel without a palette");
    px.channels = 1;
    png.image.format = PNG_FORMAT_RGBA_COLORMAP;
    colormap.resize(PNG_IMAGE_MAXIMUM_COLORMAP_COMPONENTS(PNG_FORMAT_RGBA_COLORMAP) * 256);
  } else {
    // 8 bits per channel, as stored (palette expanded); conversions are ours, as for JPEG.
    png.image.format = (png.image.format & (PNG_FORMAT_FLAG_COLOR | PNG_FORMAT_FLAG_ALPHA));
  }
  const uint64_t bytes = static_cast<uint64_t>(px.height) * static_cast<uint64_t>(px.width) *
                         static_cast<uint64_t>(px.channels);
  RENSA_CHECK(bytes <= (uint64_t{1} << 34), IOError, name, ": PNG of ", px.width, " x ", px.height,
              " pixels is too large to decode");
  px.data = scratch(static_cast<std::size_t>(bytes));
  if (png_image_finish_read(&png.image, nullptr, px.data, 0, indices ? colormap.data() : nullptr) == 0) {
    RENSA_THROW(IOError, name, ": corrupt or truncated PNG (libpng: ", png.image.message, ")");
  }
  return px;
}

/// (H, W, 3) to three planes of `hw` values each.
template <class T>
void split_rgb(const unsigned char* __restrict q, T* __restrict r, T* __restrict g, T* __restrict b, int64_t hw) {
  for (int64_t i = 0; i < hw; ++i) {
    r[i] = static_cast<T>(q[3 * i]);
    g[i] = static_cast<T>(q[3 * i + 1]);
    b[i] = static_cast<T>(q[3 * i + 2]);
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
// The same loop for AVX2, where GCC vectorizes the stride-3 loads with byte shuffles (4.5x faster
// on uint8); SSE2 has no byte shuffle, and the portable loop stays scalar.
template <class T>
__attribute__((target("avx2"))) void split_rgb_avx2(const unsigned char* __restrict q, T* __restrict r, T* __restrict g,
                                                    T* __restrict b, int64_t hw) {
  for (int64_t i = 0; i < hw; ++i) {
    r[i] = static_cast<T>(q[3 * i]);
    g[i] = static_cast<T>(q[3 * i + 1]);
    b[i] = static_cast<T>(q[3 * i + 2]);
  }
}
#endif

/// Writes pixels (H, W, C) as (C', H, W) in `dtype`, converting the channels to `color`.
Array to_array(const Pixels& px, ImageColor color, Dtype dtype) {
  const int64_t in_c = px.channels;
  const bool has_color = in_c >= 3;
  int64_t out_c = in_c;
  if (color == ImageColor::gray) out_c = 1;
  if (color == ImageColor::rgb) out_c = 3;
  const int64_t hw = px.height * px.width;
  Array out = Array::empty(Shape{out_c, px.height, px.width}, dtype);
  auto fill = [&]<class T>(T* dst) {
    const unsigned char* q = px.data;
    if (out_c == 3 && in_c == 3) {  // (H, W, 3) -> (3, H, W) in one pass
#if defined(__x86_64__) && defined(__GNUC__)
      if (cpu_features().avx2) {
        split_rgb_avx2(q, dst, dst + hw, dst + 2 * hw, hw);
        return;
      }
#endif
      split_rgb(q, dst, dst + hw, dst + 2 * hw, hw);
    } else if (out_c == in_c) {  // (H, W, C) -> (C, H, W), one channel at a time
      for (int64_t c = 0; c < out_c; ++c) {
        T* d = dst + c * hw;
        for (int64_t i = 0; i < hw; ++i) d[i] = static_cast<T>(q[i * in_c + c]);
      }
    } else if (out_c == 1) {  // color to gray: ITU-R 601 luma, as PIL's convert("L")
      for (int64_t i = 0; i < hw; ++i) {
        const unsigned char* p = q + i * in_c;
        dst[i] = static_cast<T>(has_color ? (p[0] * 299 + p[1] * 587 + p[2] * 114 + 500) / 1000 : p[0]);
      }
    } else {  // to RGB: gray repeated, alpha dropped
      for (int64_t c = 0; c < 3; ++c) {
        T* d = dst + c * hw;
        const int64_t from = has_color ? c : 0;
        for (int64_t i = 0; i < hw; ++i) d[i] = static_cast<T>(q[i * in_c + from]);
      }
    }
  };
  switch (dtype) {
    case Dtype::uint8: fill(out.data<uint8_t>()); break;
    case Dtype::float32: fill(out.data<float>()); break;
    case Dtype::float64: fill(out.data<double>()); break;
    default: {
      Array f = Array::empty(out.shape(), Dtype::float32);
      fill(f.data<float>());
      return f.astype(dtype);
    }
  }
  return out;
}

}  // namespace

bool is_image_bytes(const void* data, std::size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  return is_jpeg(p, size) || is_png(p, size);
}

ImageInfo image_info(const void* data, std::size_t size, const std::string& name) {
  const auto* p = static_cast<const unsigned char*>(data);
  if (is_jpeg(p, size)) {
    Decompressor handle;
    const JpegHeader h = jpeg_header(handle.get(), p, size, name);
    handle.succeeded();
    return {h.height, h.width, jpeg_stored_channels(h.colorspace), "jpeg"};
  }
  if (is_png(p, size)) {
    PngImage png;
    png_begin(png, p, size, name);
    return {png.image.height, png.image.width, png_channels(png.image.format), "png"};
  }
  RENSA_THROW(IOError, name, ": not a JPEG or PNG file (", first_bytes(p, size), ")");
}

Array decode_image(const void* data, std::size_t size, const std::string& name, const ImageReadOptions& options) {
  RENSA_CHECK(is_floating(options.dtype) || options.dtype == Dtype::uint8, ValueError, "decode_image: ", name,
              ": dtype must be uint8 or floating, got ", dtype_name(options.dtype));
  RENSA_CHECK(options.min_size >= 0, ValueError, "decode_image: min_size must be >= 0, got ", options.min_size);
  const auto* p = static_cast<const unsigned char*>(data);
  const ScratchTrim trim;
  Pixels px;
  if (is_jpeg(p, size)) {
    RENSA_CHECK(options.color != ImageColor::palette, IOError, name,
                ": a JPEG has no palette (ImageColor::palette reads a palette PNG's indices)");
    px = decode_jpeg(p, size, name, options);
  } else if (is_png(p, size)) {
    px = decode_png(p, size, name, options.color == ImageColor::palette);
  } else {
    RENSA_THROW(IOError, name, ": not a JPEG or PNG file (", first_bytes(p, size), ")");
  }
  return to_array(px, options.color, options.dtype);
}

std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    const int err = errno;
    RENSA_THROW(IOError, path, ": cannot open: ", std::strerror(err));
  }
  const std::streamsize n = in.tellg();
  RENSA_CHECK(n >= 0, IOError, path, ": cannot read its size");
  std::string bytes(static_cast<std::size_t>(n), '\0');
  in.seekg(0);
  in.read(bytes.data(), n);
  RENSA_CHECK(in.gcount() == n, IOError, path, ": read ", in.gcount(), " of ", n, " bytes (did the file shrink?)");
  return bytes;
}

Array read_image(const std::string& path, const ImageReadOptions& options) {
  const std::string bytes = read_file_bytes(path);
  return decode_image(bytes.data(), bytes.size(), path, options);
}

std::string encode_image(const Array& image, const std::string& format, int quality) {
  RENSA_CHECK(!image.is_null() && image.device().is_host(), ValueError,
              "encode_image: needs an image in host memory");
  RENSA_CHECK(image.ndim() == 2 || image.ndim() == 3, ShapeError,
              "encode_image: the image must be (C, H, W) or (H, W), got shape ", image.shape());
  const Array chw = image.ndim() == 2 ? image.reshape(Shape{1, image.shape()[0], image.shape()[1]}) : image;
  const int64_t c = chw.shape()[0], h = chw.shape()[1], w = chw.shape()[2];
  RENSA_CHECK(c == 1 || c == 3 || c == 4, ShapeError, "encode_image: the image must have 1, 3 or 4 channels, got shape ",
              image.shape());
  RENSA_CHECK(h > 0 && w > 0 && h < (1 << 16) && w < (1 << 16), ShapeError,
              "encode_image: each side must be in 1..65535, got shape ", image.shape());
  RENSA_CHECK(format == "png" || format == "jpeg", ValueError, "encode_image: format must be \"png\" or \"jpeg\", got \"",
              format, "\"");
  RENSA_CHECK(quality >= 1 && quality <= 100, ValueError, "encode_image: quality must be in 1..100, got ", quality);
  // Interleave (H, W, C) uint8.
  const Array f = chw.astype(Dtype::float64).copy();
  const double* src = f.data<double>();
  const int64_t out_c = format == "jpeg" && c == 4 ? 3 : c;
  std::vector<unsigned char> px(static_cast<std::size_t>(h * w * out_c));
  for (int64_t k = 0; k < out_c; ++k) {
    for (int64_t i = 0; i < h * w; ++i) {
      const double v = src[k * h * w + i];
      px[static_cast<std::size_t>(i * out_c + k)] =
          static_cast<unsigned char>(std::isnan(v) ? 0.0 : std::clamp(std::nearbyint(v), 0.0, 255.0));
    }
  }
  if (format == "jpeg") {
    const TjHandle compressor(true);
    unsigned char* buf = nullptr;
    unsigned long size = 0;
    const int pf = out_c == 1 ? TJPF_GRAY : TJPF_RGB;
    const int rc = tjCompress2(compressor.h, px.data(), static_cast<int>(w), 0, static_cast<int>(h), pf, &buf, &size,
                               out_c == 1 ? TJSAMP_GRAY : TJSAMP_420, quality, 0);
    std::unique_ptr<unsigned char, void (*)(unsigned char*)> owned(buf, [](unsigned char* b) { tjFree(b); });
    RENSA_CHECK(rc == 0, IOError, "encode_image: libjpeg-turbo: ", tjGetErrorStr2(compressor.h));
    return std::string(reinterpret_cast<const char*>(buf), size);
  }
  PngImage png;
  png.image.width = static_cast<png_uint_32>(w);
  png.image.height = static_cast<png_uint_32>(h);
  png.image.format = out_c == 1 ? PNG_FORMAT_GRAY : out_c == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_RGBA;
  png_alloc_size_t size = 0;
  RENSA_CHECK(png_image_write_to_memory(&png.image, nullptr, &size, 0, px.data(), 0, nullptr) != 0, IOError,
              "encode_image: libpng: ", png.image.message);
  std::string bytes(size, '\0');
  RENSA_CHECK(png_image_write_to_memory(&png.image, bytes.data(), &size, 0, px.data(), 0, nullptr) != 0, IOError,
              "encode_image: libpng: ", png.image.message);
  bytes.resize(size);
  return bytes;
}

void write_image(const std::string& path, const Array& image, int quality) {
  const auto dot = path.find_last_of('.');
  std::string ext = dot == std::string::npos ? std::string() : path.substr(dot + 1);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char ch) { return std::tolower(ch); });
  RENSA_CHECK(ext == "png" || ext == "jpg" || ext == "jpeg", ValueError, "write_image: ", path,
              ": the extension must be .png, .jpg or .jpeg");
  const std::string bytes = encode_image(image, ext == "png" ? "png" : "jpeg", quality);
  serializers::detail::AtomicFileWriter out(path, "write_image");
  out.write(bytes.data(), bytes.size());
  out.commit();
}

}  // namespace rensa::datasets
