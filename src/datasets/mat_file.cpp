// Level-5 MAT-files: a 128-byte header, then data elements (tag: type and byte count, or the
// small format with both in 4 bytes), miCOMPRESSED elements holding a zlib stream of more elements,
// and miMATRIX elements holding flags, dimensions, a name and the real part. Every length is checked
// against what remains before it is used.

#include "src/datasets/mat_file.h"

#include <zlib.h>

#include <cstring>
#include <vector>

#include "rensa/core/error.h"

namespace rensa::datasets::detail {
namespace {

enum : uint32_t {
  miINT8 = 1, miUINT8 = 2, miINT16 = 3, miUINT16 = 4, miINT32 = 5, miUINT32 = 6, miSINGLE = 7, miDOUBLE = 9,
  miINT64 = 12, miUINT64 = 13, miMATRIX = 14, miCOMPRESSED = 15
};
constexpr uint32_t mxUINT8_CLASS = 9;

struct Element {
  uint32_t type = 0;
  const unsigned char* data = nullptr;
  std::size_t size = 0;
};

/// Walks the elements of a byte range.
class Reader {
 public:
  Reader(const unsigned char* p, std::size_t n, std::string what, std::size_t base)
      : p_(p), n_(n), what_(std::move(what)), base_(base) {}
  bool done() const { return pos_ >= n_; }
  Element next() {
    RENSA_CHECK(n_ - pos_ >= 8, IOError, what_, ": a data element's tag at offset ", base_ + pos_,
                " is cut short");
    uint32_t type, bytes;
    std::memcpy(&type, p_ + pos_, 4);
    std::memcpy(&bytes, p_ + pos_ + 4, 4);
    Element e;
    if ((type >> 16) != 0) {  // small data element: 1..4 bytes inside the tag
      e.type = type & 0xffff;
      e.size = type >> 16;
      RENSA_CHECK(e.size <= 4, IOError, what_, ": small element of ", e.size, " bytes at offset ", base_ + pos_);
      e.data = p_ + pos_ + 4;
      pos_ += 8;
      return e;
    }
    e.type = type;
    e.size = bytes;
    RENSA_CHECK(e.size <= n_ - pos_ - 8, IOError, what_, ": element of ", e.size, " bytes at offset ", base_ + pos_,
                " runs past the end (", n_ - pos_ - 8, " bytes left)");
    e.data = p_ + pos_ + 8;
    // Elements are padded to 8 bytes, except compressed ones.
    const std::size_t padded = e.type == miCOMPRESSED ? e.size : (e.size + 7) / 8 * 8;
    pos_ += 8 + std::min(padded, n_ - pos_ - 8);
    return e;
  }
  std::size_t offset() const { return base_ + pos_; }

 private:
  const unsigned char* p_;
  std::size_t n_;
  std::string what_;
  std::size_t base_;
  std::size_t pos_ = 0;
};

std::size_t element_width(uint32_t type) {
  switch (type) {
    case miINT8: case miUINT8: return 1;
    case miINT16: case miUINT16: return 2;
    case miINT32: case miUINT32: case miSINGLE: return 4;
    case miDOUBLE: case miINT64: case miUINT64: return 8;
    default: return 0;
  }
}

double value_at(const unsigned char* p, uint32_t type) {
  switch (type) {
    case miINT8: return static_cast<int8_t>(*p);
    case miUINT8: return *p;
    case miINT16: { int16_t v; std::memcpy(&v, p, 2); return v; }
    case miUINT16: { uint16_t v; std::memcpy(&v, p, 2); return v; }
    case miINT32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case miUINT32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
    case miSINGLE: { float v; std::memcpy(&v, p, 4); return v; }
    case miDOUBLE: { double v; std::memcpy(&v, p, 8); return v; }
    case miINT64: { int64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
    default: { uint64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
  }
}

std::vector<unsigned char> inflate_all(const Element& e, const std::string& what, std::size_t offset) {
  z_stream zs{};
  RENSA_CHECK(inflateInit(&zs) == Z_OK, IOError, what, ": zlib inflateInit failed");
  std::vector<unsigned char> out(std::max<std::size_t>(e.size * 4, 1024));
  zs.next_in = const_cast<unsigned char*>(e.data);
  zs.avail_in = static_cast<uInt>(e.size);
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (zs.total_out == out.size()) {
      // Deflate expands at most ~1032x: a larger claim is corrupt, not a reason to allocate.
      RENSA_CHECK(out.size() < e.size * 1100 + 1024, IOError, what, ": compressed element at offset ", offset,
                  " inflates beyond what deflate can produce");
      out.resize(out.size() * 2);
    }
    zs.next_out = out.data() + zs.total_out;
    zs.avail_out = static_cast<uInt>(out.size() - zs.total_out);
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      const std::string msg = zs.msg != nullptr ? zs.msg : "truncated data";
      inflateEnd(&zs);
      RENSA_THROW(IOError, what, ": corrupt compressed element at offset ", offset, " (zlib: ", msg, ")");
    }
  }
  out.resize(zs.total_out);
  inflateEnd(&zs);
  return out;
}

void read_matrix(const Element& m, const std::string& what, std::size_t offset, std::map<std::string, Array>& out) {
  Reader r(m.data, m.size, what, offset + 8);
  const Element flags = r.next();
  RENSA_CHECK(flags.type == miUINT32 && flags.size == 8, IOError, what, ": matrix at offset ", offset,
              " lacks its array flags");
  uint32_t f0;
  std::memcpy(&f0, flags.data, 4);
  const uint32_t cls = f0 & 0xff;
  const bool complex = (f0 & 0x800) != 0;
  if (cls < 6 || cls > 15 || complex) return;  // cells, structs, objects, chars, sparse; complex
  const Element dims = r.next();
  RENSA_CHECK(dims.type == miINT32 && dims.size % 4 == 0 && dims.size >= 8, IOError, what, ": matrix at offset ",
              offset, " has malformed dimensions");
  Shape shape;
  int64_t count = 1;
  for (std::size_t k = dims.size / 4; k-- > 0;) {  // reversed: column-major becomes C order
    int32_t d;
    std::memcpy(&d, dims.data + 4 * k, 4);
    RENSA_CHECK(d >= 0 && (d == 0 || count <= (int64_t{1} << 40) / d), IOError, what, ": matrix at offset ", offset,
                " has dimension ", d);
    shape.push_back(d);
    count *= d;
  }
  const Element name = r.next();
  RENSA_CHECK(name.type == miINT8, IOError, what, ": matrix at offset ", offset, " lacks its name");
  const std::string key(reinterpret_cast<const char*>(name.data), name.size);
  const Element real = r.next();
  const std::size_t w = element_width(real.type);
  RENSA_CHECK(w > 0 && real.size == static_cast<std::size_t>(count) * w, IOError, what, ": matrix '", key,
              "' at offset ", offset, " has ", real.size, " data bytes of type ", real.type, " for ", count,
              " elements");
  if (cls == mxUINT8_CLASS && real.type == miUINT8) {
    Array a = Array::empty(shape, Dtype::uint8);
    if (count > 0) std::memcpy(a.raw_data(), real.data, static_cast<std::size_t>(count));
    out[key] = a;
    return;
  }
  Array a = Array::empty(shape, Dtype::float64);
  double* d = a.data<double>();
  for (int64_t i = 0; i < count; ++i) d[i] = value_at(real.data + static_cast<std::size_t>(i) * w, real.type);
  out[key] = a;
}

void read_elements(const unsigned char* p, std::size_t n, const std::string& what, std::size_t base,
                   std::map<std::string, Array>& out, int depth) {
  Reader r(p, n, what, base);
  while (!r.done()) {
    const std::size_t offset = r.offset();
    const Element e = r.next();
    if (e.type == miCOMPRESSED) {
      RENSA_CHECK(depth == 0, IOError, what, ": nested compressed element at offset ", offset);
      const std::vector<unsigned char> inner = inflate_all(e, what, offset);
      read_elements(inner.data(), inner.size(), what + " (compressed element at " + std::to_string(offset) + ")", 0,
                    out, depth + 1);
    } else if (e.type == miMATRIX) {
      read_matrix(e, what, offset, out);
    }
  }
}

}  // namespace

std::map<std::string, Array> parse_mat(const void* data, std::size_t size, const std::string& what) {
  const auto* p = static_cast<const unsigned char*>(data);
  RENSA_CHECK(size >= 128, IOError, what, ": ", size, " bytes is too short for a MAT-file (a 128-byte header)");
  RENSA_CHECK(std::memcmp(p, "MATLAB 7.3 MAT-file", 19) != 0, IOError, what,
              ": an HDF5-based (-v7.3) MAT-file; save it with -v7, or read it with an HDF5 reader");
  RENSA_CHECK(std::memcmp(p, "MATLAB 5.0 MAT-file", 19) == 0, IOError, what,
              ": not a level-5 MAT-file (its header does not start with \"MATLAB 5.0 MAT-file\")");
  uint16_t version;
  std::memcpy(&version, p + 124, 2);
  RENSA_CHECK(p[126] == 'I' && p[127] == 'M', IOError, what, ": big-endian MAT-files are unsupported");
  RENSA_CHECK(version == 0x0100, IOError, what, ": MAT-file version 0x", std::hex, version,
              " (HDF5-based -v7.3 files are unsupported; save with -v7)");
  std::map<std::string, Array> out;
  read_elements(p + 128, size - 128, what, 128, out, 0);
  return out;
}

}  // namespace rensa::datasets::detail
