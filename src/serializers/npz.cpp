// .npy images and .npz (zip) archives, NumPy-compatible. The reader treats every byte as
// untrusted: each offset and length is checked against the file before it is used, sizes are
// checked before memory is allocated, and every problem is an IOError naming the file, the entry
// and what is wrong.

#include "rensa/serializers/npz.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include "src/serializers/npz_internal.h"

namespace rensa::serializers {
namespace {

using detail::ByteSink;
using detail::ByteSource;
using ::rensa::detail::concat;

// ---- little-endian fields ----------------------------------------------------------------------

uint16_t le16(const unsigned char* p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}
uint32_t le32(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}
uint64_t le64(const unsigned char* p) {
  return le32(p) | (static_cast<uint64_t>(le32(p + 4)) << 32);
}

void put16(std::string& s, uint64_t v) {
  for (int i = 0; i < 2; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put32(std::string& s, uint64_t v) {
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr std::size_t kLocalHeaderBytes = 30;
constexpr std::size_t kCentralHeaderBytes = 46;
constexpr std::size_t kEndBytes = 22;
constexpr std::size_t kZip64EndBytes = 56;
constexpr std::size_t kZip64LocatorBytes = 20;
constexpr uint32_t k32Max = 0xffffffffu;
constexpr uint16_t k16Max = 0xffffu;
// MS-DOS date of 1980-01-01, 00:00: archives do not depend on the clock, so equal models give
// equal files.
constexpr uint16_t kDosDate = (0 << 9) | (1 << 5) | 1;
constexpr uint16_t kDosTime = 0;
// Deflate expands at most ~1032x; a larger claimed size is corrupt (and must not be allocated).
constexpr uint64_t kMaxDeflateRatio = 1033;
// No legitimate header comes near this; it bounds what a corrupt length makes us allocate.
constexpr uint64_t kMaxNpyHeaderBytes = uint64_t{1} << 20;
constexpr std::size_t kMaxNpyDims = 64;

uint32_t crc32_update(uint32_t crc, const void* data, std::size_t n) {
  auto p = static_cast<const Bytef*>(data);
  uLong c = crc;
  while (n > 0) {
    const auto chunk = static_cast<uInt>(std::min<std::size_t>(n, std::size_t{1} << 30));
    c = crc32(c, p, chunk);
    p += chunk;
    n -= chunk;
  }
  return static_cast<uint32_t>(c);
}

std::string quoted(std::string_view s, std::size_t limit = 200) {
  std::string out = "'";
  for (std::size_t i = 0; i < s.size() && i < limit; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else if (c == '\n') {
      out += "\\n";
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  if (s.size() > limit) out += "...";
  return out + "'";
}

// ---- .npy --------------------------------------------------------------------------------------

constexpr char kNativeOrder = std::endian::native == std::endian::little ? '<' : '>';

// The descr NumPy writes for `dtype` in this machine's byte order. bfloat16 has no NumPy dtype:
// its arrays are written as float32.
std::string npy_descr(Dtype dtype) {
  switch (dtype) {
    case Dtype::float16:
      return std::string(1, kNativeOrder) + "f2";
    case Dtype::float32:
    case Dtype::bfloat16:
      return std::string(1, kNativeOrder) + "f4";
    case Dtype::float64:
      return std::string(1, kNativeOrder) + "f8";
    case Dtype::int32:
      return std::string(1, kNativeOrder) + "i4";
    case Dtype::int64:
      return std::string(1, kNativeOrder) + "i8";
    case Dtype::uint8:
      return "|u1";
    case Dtype::bool_:
      return "|b1";
  }
  RENSA_THROW(DtypeError, "encode_npy: invalid dtype code ", static_cast<int>(dtype));
}

// A host, C-contiguous array with a dtype NumPy knows (bfloat16 becomes float32).
Array npy_ready(const Array& array, const std::string& ctx) {
  RENSA_CHECK(!array.is_null(), ValueError, ctx, ": null array");
  Array a = array.device().is_host() ? array : array.to(Device::cpu());
  if (a.dtype() == Dtype::bfloat16) return a.astype(Dtype::float32);
  return a.contiguous();
}

// The header of a version-1 image (version 2 when the header is too long for 16 bits), padded
// with spaces and a newline so that the data starts at a multiple of 64 bytes, as NumPy does.
std::string npy_header(const Array& a) {
  std::string dict = "{'descr': '" + npy_descr(a.dtype()) + "', 'fortran_order': False, 'shape': (";
  for (int64_t i = 0; i < a.ndim(); ++i) {
    if (i > 0) dict += ", ";
    dict += std::to_string(a.shape()[static_cast<std::size_t>(i)]);
  }
  dict += a.ndim() == 1 ? ",), }" : "), }";
  std::size_t prefix = 10;
  if (dict.size() + 1 + 64 > 0xffff) prefix = 12;
  const std::size_t unpadded = prefix + dict.size() + 1;
  const std::size_t total = (unpadded + 63) / 64 * 64;
  const std::size_t header_len = total - prefix;
  std::string out = "\x93NUMPY";
  out.push_back(prefix == 10 ? '\x01' : '\x02');
  out.push_back('\x00');
  if (prefix == 10) {
    put16(out, header_len);
  } else {
    put32(out, header_len);
  }
  out += dict;
  out.append(header_len - dict.size() - 1, ' ');
  out.push_back('\n');
  return out;
}

struct NpyHeader {
  Dtype dtype = Dtype::float32;
  bool byteswap = false;
  bool fortran_order = false;
  Shape shape;
};

// The header dictionary, parsed as the Python literal NumPy writes and nothing more:
// {'descr': <str>, 'fortran_order': True|False, 'shape': (<int>, ...)} in any order, each key once.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& ctx) : text_(text), ctx_(ctx) {}

  NpyHeader parse() {
    NpyHeader h;
    bool have_descr = false, have_fortran = false, have_shape = false;
    skip_space();
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = parse_string("a key");
      skip_space();
      expect(':');
      skip_space();
      if (key == "descr") {
        if (have_descr) fail("duplicate key 'descr'");
        have_descr = true;
        if (peek() != '\'' && peek() != '"') fail("'descr' is not a string (structured dtypes are unsupported)");
        parse_descr(parse_string("'descr'"), h);
      } else if (key == "fortran_order") {
        if (have_fortran) fail("duplicate key 'fortran_order'");
        have_fortran = true;
        h.fortran_order = parse_bool();
      } else if (key == "shape") {
        if (have_shape) fail("duplicate key 'shape'");
        have_shape = true;
        h.shape = parse_shape();
      } else {
        fail("unexpected key " + quoted(key));
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != '}') fail("expected ',' or '}'");
    }
    ++pos_;  // '}'
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the dictionary");
    if (!have_descr) fail("missing key 'descr'");
    if (!have_fortran) fail("missing key 'fortran_order'");
    if (!have_shape) fail("missing key 'shape'");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    RENSA_THROW(IOError, ctx_, ": bad .npy header (", what, " at column ", pos_, "): ", quoted(text_));
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  void expect(char c) {
    if (peek() != c || pos_ >= text_.size()) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string parse_string(const char* what) {
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail(std::string("expected a string for ") + what);
    ++pos_;
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) fail("unterminated string");
      const char c = text_[pos_++];
      if (c == quote) break;
      if (c == '\\' || static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
        fail("unsupported character in a string");
      }
      out.push_back(c);
    }
    return out;
  }
  bool parse_bool() {
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    fail("'fortran_order' is not True or False");
  }
  int64_t parse_int() {
    if (peek() < '0' || peek() > '9') fail("expected a non-negative integer in 'shape'");
    int64_t v = 0;
    while (peek() >= '0' && peek() <= '9') {
      const int d = text_[pos_++] - '0';
      if (v > (std::numeric_limits<int64_t>::max() - d) / 10) fail("extent in 'shape' overflows int64");
      v = v * 10 + d;
    }
    if (peek() == 'L') ++pos_;  // written by NumPy under Python 2
    return v;
  }
  Shape parse_shape() {
    if (peek() != '(') fail("'shape' is not a tuple");
    ++pos_;
    Shape shape;
    bool comma = false;
    while (true) {
      skip_space();
      if (peek() == ')') {
        ++pos_;
        break;
      }
      if (shape.size() >= kMaxNpyDims) fail(concat("'shape' has more than ", kMaxNpyDims, " dimensions"));
      shape.push_back(parse_int());
      skip_space();
      comma = false;
      if (peek() == ',') {
        ++pos_;
        comma = true;
      } else if (peek() != ')') {
        fail("expected ',' or ')' in 'shape'");
      }
    }
    if (shape.size() == 1 && !comma) fail("'shape' (n) is an integer, not a tuple; write (n,)");
    return shape;
  }
  void parse_descr(const std::string& d, NpyHeader& h) {
    static constexpr std::string_view kKnown = "<f2, <f4, <f8, <i4, <i8, |u1 and |b1 (or big-endian)";
    if (d.size() == 3 && (d[0] == '<' || d[0] == '>' || d[0] == '=' || d[0] == '|')) {
      const std::string_view code = std::string_view(d).substr(1);
      const char order = d[0] == '=' ? kNativeOrder : d[0];
      struct Entry {
        std::string_view code;
        Dtype dtype;
      };
      static constexpr Entry kCodes[] = {{"f2", Dtype::float16}, {"f4", Dtype::float32}, {"f8", Dtype::float64},
                                         {"i4", Dtype::int32},   {"i8", Dtype::int64},   {"u1", Dtype::uint8},
                                         {"b1", Dtype::bool_}};
      for (const auto& e : kCodes) {
        if (e.code != code) continue;
        const bool single_byte = itemsize(e.dtype) == 1;
        if (order == '|' && !single_byte) break;  // multi-byte data needs a byte order
        h.dtype = e.dtype;
        h.byteswap = !single_byte && order != kNativeOrder;
        return;
      }
    }
    RENSA_THROW(IOError, ctx_, ": unsupported dtype ", quoted(d), " in the .npy header; rensa reads ", kKnown);
  }

  std::string_view text_;
  const std::string& ctx_;
  std::size_t pos_ = 0;
};

// Sequential bytes of one .npy image.
class ByteStream {
 public:
  virtual ~ByteStream() = default;
  virtual void read(void* dst, std::size_t n) = 0;
};

class MemoryStream final : public ByteStream {
 public:
  MemoryStream(const void* data, std::size_t size) : p_(static_cast<const unsigned char*>(data)), left_(size) {}
  void read(void* dst, std::size_t n) override {
    RENSA_CHECK(n <= left_, IOError, "MemoryStream: read past the end");  // callers check sizes first
    if (n > 0) std::memcpy(dst, p_, n);
    p_ += n;
    left_ -= n;
  }

 private:
  const unsigned char* p_;
  std::size_t left_;
};

void byteswap_elements(void* data, std::size_t count, std::size_t width) {
  auto* p = static_cast<unsigned char*>(data);
  for (std::size_t i = 0; i < count; ++i, p += width) std::reverse(p, p + width);
}

// Reads an image of exactly `total` bytes from `in`. `ctx` starts every error message.
Array read_npy(ByteStream& in, uint64_t total, const std::string& ctx) {
  RENSA_CHECK(total >= 10, IOError, ctx, ": truncated .npy image (", total,
              " bytes; the magic string and header length alone take 10)");
  unsigned char pre[12];
  in.read(pre, 8);
  RENSA_CHECK(std::memcmp(pre, "\x93NUMPY", 6) == 0, IOError, ctx, ": bad magic ",
              quoted(std::string_view(reinterpret_cast<const char*>(pre), 6)), " (not a .npy image)");
  const int major = pre[6], minor = pre[7];
  RENSA_CHECK((major == 1 || major == 2 || major == 3) && minor == 0, IOError, ctx,
              ": unsupported .npy format version ", major, ".", minor, " (rensa reads 1.0, 2.0 and 3.0)");
  const std::size_t prefix = major == 1 ? 10 : 12;
  RENSA_CHECK(total >= prefix, IOError, ctx, ": truncated .npy image (", total, " bytes)");
  in.read(pre + 8, prefix - 8);
  const uint64_t header_len = major == 1 ? le16(pre + 8) : le32(pre + 8);
  RENSA_CHECK(header_len <= total - prefix, IOError, ctx, ": header length ", header_len, " exceeds the ",
              total - prefix, " bytes after the preamble (truncated?)");
  RENSA_CHECK(header_len <= kMaxNpyHeaderBytes, IOError, ctx, ": header length ", header_len, " exceeds the limit of ",
              kMaxNpyHeaderBytes, " bytes");
  std::string text(static_cast<std::size_t>(header_len), '\0');
  in.read(text.data(), text.size());
  const NpyHeader h = HeaderParser(text, ctx).parse();

  const auto width = static_cast<uint64_t>(itemsize(h.dtype));
  uint64_t nbytes = width;
  for (int64_t d : h.shape) {
    const auto ud = static_cast<uint64_t>(d);
    RENSA_CHECK(ud == 0 || nbytes <= std::numeric_limits<uint64_t>::max() / ud, IOError, ctx, ": shape ", h.shape,
                " of dtype ", h.dtype, " overflows 64-bit byte counts");
    nbytes *= ud;
  }
  const uint64_t data_len = total - prefix - header_len;
  RENSA_CHECK(nbytes == data_len, IOError, ctx, ": shape ", h.shape, " of dtype ", h.dtype, " needs ", nbytes,
              " data bytes but the image holds ", data_len);

  Shape stored = h.shape;
  if (h.fortran_order) std::reverse(stored.begin(), stored.end());
  Array out = Array::empty(stored, h.dtype);
  if (nbytes > 0) {
    in.read(out.raw_data(), static_cast<std::size_t>(nbytes));
    const auto count = static_cast<std::size_t>(nbytes / width);
    if (h.byteswap) byteswap_elements(out.raw_data(), count, static_cast<std::size_t>(width));
    if (h.dtype == Dtype::bool_) {
      // NumPy treats any nonzero byte as True; a C++ bool must hold exactly 0 or 1.
      auto* p = static_cast<unsigned char*>(out.raw_data());
      for (std::size_t i = 0; i < count; ++i) p[i] = p[i] != 0;
    }
  }
  // Fortran order: the data is the C-order array of the reversed shape, transposed.
  if (h.fortran_order && out.ndim() > 1) out = out.transpose().copy();
  return out;
}

// ---- zip writing -------------------------------------------------------------------------------

struct WrittenEntry {
  std::string name;
  uint32_t crc = 0;
  uint64_t size = 0;
  uint64_t offset = 0;
  bool utf8 = false;
};

void write_all(ByteSink& sink, const std::string& s) {
  sink.write(s.data(), s.size());
}

std::string zip64_extra(std::initializer_list<uint64_t> fields) {
  std::string e;
  put16(e, 0x0001);
  put16(e, 8 * fields.size());
  for (uint64_t f : fields) put64(e, f);
  return e;
}

}  // namespace

// ---- public: .npy ------------------------------------------------------------------------------

std::string encode_npy(const Array& array) {
  const Array a = npy_ready(array, "encode_npy");
  std::string out = npy_header(a);
  if (a.nbytes() > 0) out.append(static_cast<const char*>(a.raw_data()), a.nbytes());
  return out;
}

Array parse_npy(const void* data, std::size_t size, const std::string& what) {
  const std::string ctx = "parse_npy: " + what;
  RENSA_CHECK(data != nullptr || size == 0, IOError, ctx, ": null data pointer");
  MemoryStream in(data, size);
  return read_npy(in, size, ctx);
}

namespace detail {

void write_npz_to(ByteSink& sink, const std::map<std::string, Array>& arrays, const ZipWriteOptions& options,
                  const std::string& op) {
  std::vector<WrittenEntry> entries;
  entries.reserve(arrays.size());
  for (const auto& [key, array] : arrays) {
    RENSA_CHECK(!key.empty(), ValueError, op, ": empty array name");
    RENSA_CHECK(key.size() <= 0xffff - 4, ValueError, op, ": array name of ", key.size(), " bytes is too long");
    RENSA_CHECK(!array.is_null(), ValueError, op, ": array ", quoted(key), " is null");
    const Array a = npy_ready(array, op);
    const std::string header = npy_header(a);
    WrittenEntry e;
    e.name = key + ".npy";
    e.utf8 = std::any_of(e.name.begin(), e.name.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
    e.size = header.size() + a.nbytes();
    e.offset = sink.position();
    e.crc = crc32_update(crc32_update(0, header.data(), header.size()), a.nbytes() ? a.raw_data() : header.data(),
                         a.nbytes());
    const bool zip64 = options.force_zip64 || e.size >= k32Max;
    std::string local;
    put32(local, kLocalSig);
    put16(local, zip64 ? 45 : 20);
    put16(local, e.utf8 ? 0x0800 : 0);
    put16(local, 0);  // stored
    put16(local, kDosTime);
    put16(local, kDosDate);
    put32(local, e.crc);
    put32(local, zip64 ? k32Max : e.size);
    put32(local, zip64 ? k32Max : e.size);
    put16(local, e.name.size());
    const std::string extra = zip64 ? zip64_extra({e.size, e.size}) : std::string();
    put16(local, extra.size());
    local += e.name;
    local += extra;
    write_all(sink, local);
    write_all(sink, header);
    if (a.nbytes() > 0) sink.write(a.raw_data(), a.nbytes());
    entries.push_back(std::move(e));
  }

  const uint64_t cd_offset = sink.position();
  for (const auto& e : entries) {
    const bool big_size = options.force_zip64 || e.size >= k32Max;
    const bool big_offset = options.force_zip64 || e.offset >= k32Max;
    std::string extra;
    if (big_size && big_offset) {
      extra = zip64_extra({e.size, e.size, e.offset});
    } else if (big_size) {
      extra = zip64_extra({e.size, e.size});
    } else if (big_offset) {
      extra = zip64_extra({e.offset});
    }
    const uint16_t version = extra.empty() ? 20 : 45;
    std::string c;
    put32(c, kCentralSig);
    put16(c, (3 << 8) | version);  // made by: Unix
    put16(c, version);
    put16(c, e.utf8 ? 0x0800 : 0);
    put16(c, 0);
    put16(c, kDosTime);
    put16(c, kDosDate);
    put32(c, e.crc);
    put32(c, big_size ? k32Max : e.size);
    put32(c, big_size ? k32Max : e.size);
    put16(c, e.name.size());
    put16(c, extra.size());
    put16(c, 0);                        // comment
    put16(c, 0);                        // disk
    put16(c, 0);                        // internal attributes
    put32(c, uint64_t{0100644} << 16);  // regular file, rw-r--r--
    put32(c, big_offset ? k32Max : e.offset);
    c += e.name;
    c += extra;
    write_all(sink, c);
  }
  const uint64_t cd_end = sink.position();
  const uint64_t cd_size = cd_end - cd_offset;
  const uint64_t count = entries.size();
  const bool zip64 = options.force_zip64 || count >= k16Max || cd_size >= k32Max || cd_offset >= k32Max;
  std::string end;
  if (zip64) {
    put32(end, kZip64EndSig);
    put64(end, kZip64EndBytes - 12);
    put16(end, (3 << 8) | 45);
    put16(end, 45);
    put32(end, 0);
    put32(end, 0);
    put64(end, count);
    put64(end, count);
    put64(end, cd_size);
    put64(end, cd_offset);
    put32(end, kZip64LocatorSig);
    put32(end, 0);
    put64(end, cd_end);
    put32(end, 1);
  }
  put32(end, kEndSig);
  put16(end, 0);
  put16(end, 0);
  put16(end, zip64 ? k16Max : count);
  put16(end, zip64 ? k16Max : count);
  put32(end, zip64 ? k32Max : cd_size);
  put32(end, zip64 ? k32Max : cd_offset);
  put16(end, 0);
  write_all(sink, end);
}

}  // namespace detail

namespace {

// ---- zip reading -------------------------------------------------------------------------------

struct ZipEntry {
  std::string name;
  uint16_t flags = 0;
  uint16_t method = 0;
  uint32_t crc = 0;
  uint64_t compressed = 0;
  uint64_t uncompressed = 0;
  uint64_t local_offset = 0;
  uint64_t data_offset = 0;
};

// A file read with pread; the size is taken once, so a file that shrinks meanwhile is an error,
// not a crash.
class FileSource final : public ByteSource {
 public:
  FileSource(const std::string& path, const std::string& ctx) : ctx_(ctx) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      const int err = errno;
      RENSA_THROW(IOError, ctx_, ": cannot open: ", std::strerror(err));
    }
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
      const int err = errno;
      ::close(fd_);
      RENSA_THROW(IOError, ctx_, ": cannot stat: ", std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd_);
      RENSA_THROW(IOError, ctx_, ": not a regular file");
    }
    size_ = static_cast<uint64_t>(st.st_size);
  }
  ~FileSource() override { ::close(fd_); }
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;
  uint64_t size() const override { return size_; }
  void read(uint64_t offset, void* dst, std::size_t n) const override {
    RENSA_CHECK(offset <= size_ && n <= size_ - offset, IOError, ctx_, ": read of ", n, " bytes at offset ", offset,
                " past the end of the file (", size_, " bytes)");
    auto* p = static_cast<char*>(dst);
    while (n > 0) {
      const ssize_t r = ::pread(fd_, p, std::min<std::size_t>(n, std::size_t{1} << 30), static_cast<off_t>(offset));
      if (r < 0) {
        if (errno == EINTR) continue;
        const int err = errno;
        RENSA_THROW(IOError, ctx_, ": read at offset ", offset, " failed: ", std::strerror(err));
      }
      RENSA_CHECK(r > 0, IOError, ctx_, ": unexpected end of file at offset ", offset, " (did the file shrink?)");
      p += r;
      n -= static_cast<std::size_t>(r);
      offset += static_cast<uint64_t>(r);
    }
  }

 private:
  std::string ctx_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// The uncompressed bytes of one entry, read on demand (stored or raw deflate), with their CRC-32.
class EntryStream final : public ByteStream {
 public:
  EntryStream(const ByteSource& src, const ZipEntry& e, const std::string& ctx) : src_(src), e_(e), ctx_(ctx) {
    if (e.method == 8) {
      if (inflateInit2(&zs_, -MAX_WBITS) != Z_OK) RENSA_THROW(IOError, ctx_, ": zlib inflateInit2 failed");
      inflating_ = true;
      input_.resize(std::size_t{1} << 16);
    }
  }
  ~EntryStream() override {
    if (inflating_) inflateEnd(&zs_);
  }
  EntryStream(const EntryStream&) = delete;
  EntryStream& operator=(const EntryStream&) = delete;

  void read(void* dst, std::size_t n) override {
    RENSA_CHECK(n <= e_.uncompressed - produced_, IOError, ctx_, ": read past the uncompressed size");
    if (n == 0) return;
    if (e_.method == 0) {
      src_.read(e_.data_offset + produced_, dst, n);
    } else {
      inflate_into(static_cast<unsigned char*>(dst), n);
    }
    crc_ = crc32_update(crc_, dst, n);
    produced_ += n;
  }

  // Checks that the whole entry was used and that its CRC-32 matches.
  void finish() {
    RENSA_CHECK(produced_ == e_.uncompressed, IOError, ctx_, ": ", e_.uncompressed - produced_,
                " bytes after the .npy image");
    if (e_.method == 8) {
      while (!ended_) {
        unsigned char extra = 0;
        refill();
        zs_.next_out = &extra;
        zs_.avail_out = 1;
        const uLong in_before = zs_.total_in;
        const int rc = inflate(&zs_, Z_NO_FLUSH);
        RENSA_CHECK(zs_.avail_out == 1, IOError, ctx_, ": deflate data inflates to more than the ", e_.uncompressed,
                    " bytes the zip directory records");
        if (rc == Z_STREAM_END) {
          ended_ = true;
        } else {
          check_inflate(rc);
          no_progress_check(zs_.total_in == in_before);
        }
      }
      RENSA_CHECK(zs_.avail_in == 0 && consumed_ == e_.compressed, IOError, ctx_, ": ",
                  e_.compressed - consumed_ + zs_.avail_in, " bytes follow the end of the deflate stream");
    }
    RENSA_CHECK(crc_ == e_.crc, IOError, ctx_, ": CRC-32 mismatch (data 0x", std::hex, crc_, ", zip directory 0x",
                e_.crc, "); the file is corrupt");
  }

 private:
  void refill() {
    if (zs_.avail_in > 0 || consumed_ == e_.compressed) return;
    const auto n = static_cast<std::size_t>(std::min<uint64_t>(input_.size(), e_.compressed - consumed_));
    src_.read(e_.data_offset + consumed_, input_.data(), n);
    consumed_ += n;
    zs_.next_in = input_.data();
    zs_.avail_in = static_cast<uInt>(n);
  }
  void check_inflate(int rc) {
    if (rc == Z_OK) return;
    if (rc == Z_BUF_ERROR && zs_.avail_in == 0 && consumed_ == e_.compressed) {
      RENSA_THROW(IOError, ctx_, ": deflate data is truncated (", e_.compressed, " compressed bytes)");
    }
    if (rc == Z_BUF_ERROR) return;  // no progress this call; more input or output follows
    RENSA_THROW(IOError, ctx_, ": corrupt deflate data (zlib: ", zs_.msg ? zs_.msg : "error", ", code ", rc, ")");
  }
  // zlib always moves input or output when both are available; if it ever does not, stop
  // rather than loop forever.
  void no_progress_check(bool stuck) {
    RENSA_CHECK(!stuck, IOError, ctx_, ": corrupt deflate data (inflate makes no progress)");
  }
  void inflate_into(unsigned char* dst, std::size_t n) {
    while (n > 0) {
      RENSA_CHECK(!ended_, IOError, ctx_, ": deflate stream ends after ", produced_, " bytes; the zip directory says ",
                  e_.uncompressed);
      refill();
      const auto chunk = static_cast<uInt>(std::min<std::size_t>(n, std::size_t{1} << 30));
      zs_.next_out = dst;
      zs_.avail_out = chunk;
      const uLong in_before = zs_.total_in;
      const int rc = inflate(&zs_, Z_NO_FLUSH);
      const std::size_t got = chunk - zs_.avail_out;
      dst += got;
      n -= got;
      if (rc == Z_STREAM_END) {
        ended_ = true;
        RENSA_CHECK(n == 0, IOError, ctx_, ": deflate stream ends early; the zip directory records ", e_.uncompressed,
                    " uncompressed bytes");
      } else {
        check_inflate(rc);
        if (got == 0 && zs_.avail_in == 0 && consumed_ == e_.compressed) {
          RENSA_THROW(IOError, ctx_, ": deflate data is truncated (", e_.compressed, " compressed bytes)");
        }
        no_progress_check(got == 0 && zs_.total_in == in_before);
      }
    }
  }

  const ByteSource& src_;
  const ZipEntry& e_;
  const std::string& ctx_;
  z_stream zs_{};
  bool inflating_ = false;
  bool ended_ = false;
  std::vector<unsigned char> input_;
  uint64_t consumed_ = 0;  // compressed bytes handed to zlib
  uint64_t produced_ = 0;  // uncompressed bytes returned
  uint32_t crc_ = 0;
};

// Reads the zip64 extended-information field for the values the fixed fields mark as 0xffffffff.
void apply_zip64_extra(const unsigned char* extra, std::size_t len, ZipEntry& e, bool need_usize, bool need_csize,
                       bool need_offset, const std::string& ctx) {
  std::size_t pos = 0;
  while (pos + 4 <= len) {
    const uint16_t id = le16(extra + pos);
    const uint16_t size = le16(extra + pos + 2);
    RENSA_CHECK(size <= len - pos - 4, IOError, ctx, ": extra field of ", size, " bytes runs past its entry");
    if (id == 0x0001) {
      const unsigned char* p = extra + pos + 4;
      std::size_t left = size;
      auto take = [&](uint64_t& field, const char* name) {
        RENSA_CHECK(left >= 8, IOError, ctx, ": ZIP64 extra field lacks the ", name);
        field = le64(p);
        p += 8;
        left -= 8;
      };
      if (need_usize) take(e.uncompressed, "uncompressed size");
      if (need_csize) take(e.compressed, "compressed size");
      if (need_offset) take(e.local_offset, "local header offset");
      return;
    }
    pos += 4 + size;
  }
  RENSA_CHECK(!need_usize && !need_csize && !need_offset, IOError, ctx,
              ": sizes or offset are 0xffffffff but the ZIP64 extra field is missing");
}

std::vector<ZipEntry> read_central_directory(const ByteSource& src, const std::string& ctx) {
  const uint64_t file_size = src.size();
  RENSA_CHECK(file_size >= kEndBytes, IOError, ctx, ": not a zip file (", file_size,
              " bytes; truncated? the end record alone takes 22)");
  // The end record is the last 22 bytes plus a comment of up to 65535 bytes.
  const auto tail_len = static_cast<std::size_t>(std::min<uint64_t>(file_size, kEndBytes + 0xffff));
  std::vector<unsigned char> tail(tail_len);
  src.read(file_size - tail_len, tail.data(), tail_len);
  std::size_t found = tail_len;
  for (std::size_t i = tail_len - kEndBytes + 1; i-- > 0;) {
    if (le32(&tail[i]) == kEndSig && i + kEndBytes + le16(&tail[i + 20]) == tail_len) {
      found = i;
      break;
    }
  }
  RENSA_CHECK(found < tail_len, IOError, ctx,
              ": no zip end-of-central-directory record (not an .npz file, or truncated)");
  const unsigned char* end = &tail[found];
  const uint64_t end_pos = file_size - tail_len + found;
  uint64_t count = le16(end + 10);
  uint64_t cd_size = le32(end + 12);
  uint64_t cd_offset = le32(end + 16);
  RENSA_CHECK(le16(end + 4) == 0 && le16(end + 6) == 0 && le16(end + 8) == count, IOError, ctx,
              ": multi-disk zip archives are unsupported");
  uint64_t cd_limit = end_pos;  // the central directory ends before the end record(s)
  if (end_pos >= kZip64LocatorBytes) {
    unsigned char loc[kZip64LocatorBytes];
    src.read(end_pos - kZip64LocatorBytes, loc, sizeof loc);
    if (le32(loc) == kZip64LocatorSig) {
      const uint64_t z64_pos = le64(loc + 8);
      RENSA_CHECK(le32(loc + 4) == 0 && le32(loc + 16) <= 1, IOError, ctx, ": multi-disk zip archives are unsupported");
      const uint64_t loc_pos = end_pos - kZip64LocatorBytes;
      RENSA_CHECK(z64_pos <= loc_pos && loc_pos - z64_pos >= kZip64EndBytes, IOError, ctx, ": ZIP64 end record offset ",
                  z64_pos, " is out of range (locator at ", loc_pos, ")");
      unsigned char z[kZip64EndBytes];
      src.read(z64_pos, z, sizeof z);
      RENSA_CHECK(le32(z) == kZip64EndSig, IOError, ctx, ": bad ZIP64 end record signature at offset ", z64_pos);
      RENSA_CHECK(le32(z + 16) == 0 && le32(z + 20) == 0 && le64(z + 24) == le64(z + 32), IOError, ctx,
                  ": multi-disk zip archives are unsupported");
      count = le64(z + 32);
      cd_size = le64(z + 40);
      cd_offset = le64(z + 48);
      cd_limit = z64_pos;
    }
  }
  RENSA_CHECK(cd_offset <= cd_limit && cd_size <= cd_limit - cd_offset, IOError, ctx, ": central directory (offset ",
              cd_offset, ", ", cd_size, " bytes) lies outside the ", cd_limit, " bytes before the end record");
  RENSA_CHECK(count <= cd_size / kCentralHeaderBytes, IOError, ctx, ": ", count,
              " entries cannot fit in a central directory of ", cd_size, " bytes");
  std::vector<unsigned char> cd(static_cast<std::size_t>(cd_size));
  src.read(cd_offset, cd.data(), cd.size());

  std::vector<ZipEntry> entries;
  entries.reserve(static_cast<std::size_t>(count));
  std::size_t pos = 0;
  for (uint64_t i = 0; i < count; ++i) {
    RENSA_CHECK(cd.size() - pos >= kCentralHeaderBytes, IOError, ctx, ": central directory entry ", i, " is truncated");
    const unsigned char* h = &cd[pos];
    RENSA_CHECK(le32(h) == kCentralSig, IOError, ctx, ": bad signature of central directory entry ", i, " at offset ",
                cd_offset + pos);
    const std::size_t name_len = le16(h + 28), extra_len = le16(h + 30), comment_len = le16(h + 32);
    RENSA_CHECK(name_len + extra_len + comment_len <= cd.size() - pos - kCentralHeaderBytes, IOError, ctx,
                ": central directory entry ", i, " runs past the directory");
    ZipEntry e;
    e.name.assign(reinterpret_cast<const char*>(h + kCentralHeaderBytes), name_len);
    const std::string ectx = ctx + ", entry " + quoted(e.name);
    e.flags = le16(h + 8);
    e.method = le16(h + 10);
    e.crc = le32(h + 16);
    e.compressed = le32(h + 20);
    e.uncompressed = le32(h + 24);
    e.local_offset = le32(h + 42);
    RENSA_CHECK(le16(h + 34) == 0 || le16(h + 34) == k16Max, IOError, ectx,
                ": multi-disk zip archives are unsupported");
    apply_zip64_extra(h + kCentralHeaderBytes + name_len, extra_len, e, e.uncompressed == k32Max,
                      e.compressed == k32Max, e.local_offset == k32Max, ectx);
    entries.push_back(std::move(e));
    pos += kCentralHeaderBytes + name_len + extra_len + comment_len;
  }
  RENSA_CHECK(pos == cd.size(), IOError, ctx, ": central directory has ", cd.size() - pos, " bytes after its ", count,
              " entries");

  // Locate each entry's data through its local header; entries must lie before the central
  // directory and must not overlap.
  for (auto& e : entries) {
    const std::string ectx = ctx + ", entry " + quoted(e.name);
    RENSA_CHECK(e.name.size() > 0, IOError, ectx, ": empty entry name");
    RENSA_CHECK((e.flags & 0x41) == 0, IOError, ectx, ": encrypted entries are unsupported");
    RENSA_CHECK(e.method == 0 || e.method == 8, IOError, ectx, ": unsupported compression method ", e.method,
                " (rensa reads stored (0) and deflate (8))");
    RENSA_CHECK(e.local_offset <= cd_offset && cd_offset - e.local_offset >= kLocalHeaderBytes, IOError, ectx,
                ": local header offset ", e.local_offset, " is out of range (central directory at ", cd_offset, ")");
    unsigned char lh[kLocalHeaderBytes];
    src.read(e.local_offset, lh, sizeof lh);
    RENSA_CHECK(le32(lh) == kLocalSig, IOError, ectx, ": bad local header signature at offset ", e.local_offset);
    const uint64_t lname = le16(lh + 26), lextra = le16(lh + 28);
    const uint64_t data = e.local_offset + kLocalHeaderBytes + lname + lextra;
    RENSA_CHECK(data <= cd_offset && e.compressed <= cd_offset - data, IOError, ectx, ": data (offset ", data, ", ",
                e.compressed, " bytes) runs past the central directory at offset ", cd_offset);
    RENSA_CHECK(lname == e.name.size(), IOError, ectx, ": local header name has ", lname, " bytes, the directory's ",
                e.name.size());
    std::string local_name(lname, '\0');
    src.read(e.local_offset + kLocalHeaderBytes, local_name.data(), local_name.size());
    RENSA_CHECK(local_name == e.name, IOError, ectx, ": local header names ", quoted(local_name));
    RENSA_CHECK(le16(lh + 8) == e.method, IOError, ectx, ": local header says compression method ", le16(lh + 8),
                ", the directory ", e.method);
    RENSA_CHECK((le16(lh + 6) & 0x41) == 0, IOError, ectx, ": encrypted entries are unsupported");
    e.data_offset = data;
    if (e.method == 0) {
      RENSA_CHECK(e.compressed == e.uncompressed, IOError, ectx, ": stored entry with compressed size ", e.compressed,
                  " != uncompressed size ", e.uncompressed);
    } else {
      RENSA_CHECK(e.uncompressed / kMaxDeflateRatio <= e.compressed, IOError, ectx, ": uncompressed size ",
                  e.uncompressed, " is impossible for ", e.compressed, " bytes of deflate data");
    }
  }
  std::vector<const ZipEntry*> by_offset;
  by_offset.reserve(entries.size());
  for (const auto& e : entries) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const ZipEntry* a, const ZipEntry* b) { return a->local_offset < b->local_offset; });
  for (std::size_t i = 1; i < by_offset.size(); ++i) {
    const ZipEntry& a = *by_offset[i - 1];
    const ZipEntry& b = *by_offset[i];
    RENSA_CHECK(a.data_offset + a.compressed <= b.local_offset, IOError, ctx, ": entries ", quoted(a.name), " and ",
                quoted(b.name), " overlap (offsets ", a.local_offset, " and ", b.local_offset, ")");
  }
  return entries;
}

}  // namespace

namespace detail {

std::map<std::string, Array> read_npz_from(const ByteSource& source, const std::string& what) {
  const std::vector<ZipEntry> entries = read_central_directory(source, what);
  std::map<std::string, Array> out;
  for (const auto& e : entries) {
    const std::string ectx = what + ", entry " + quoted(e.name);
    // Directory entries (some zip tools add them) hold no array.
    if (e.name.back() == '/' && e.uncompressed == 0) continue;
    std::string key = e.name;
    if (key.size() > 4 && key.compare(key.size() - 4, 4, ".npy") == 0) key.resize(key.size() - 4);
    RENSA_CHECK(out.count(key) == 0, IOError, ectx, ": duplicate array name ", quoted(key));
    EntryStream in(source, e, ectx);
    Array a = read_npy(in, e.uncompressed, ectx);
    in.finish();
    out.emplace(std::move(key), std::move(a));
  }
  return out;
}

}  // namespace detail

// ---- public: .npz ------------------------------------------------------------------------------

void write_npz(const std::string& path, const std::map<std::string, Array>& arrays) {
  const std::string op = "write_npz: '" + path + "'";
  detail::AtomicFileWriter file(path, "write_npz");
  detail::write_npz_to(file, arrays, {}, op);
  file.commit();
}

std::string encode_npz(const std::map<std::string, Array>& arrays) {
  detail::StringSink sink;
  detail::write_npz_to(sink, arrays, {}, "encode_npz");
  return std::move(sink.bytes());
}

std::map<std::string, Array> read_npz(const std::string& path) {
  const std::string ctx = "read_npz: '" + path + "'";
  FileSource source(path, ctx);
  return detail::read_npz_from(source, ctx);
}

std::map<std::string, Array> read_npz_bytes(const void* data, std::size_t size, const std::string& what) {
  const std::string ctx = "read_npz: " + what;
  RENSA_CHECK(data != nullptr || size == 0, IOError, ctx, ": null data pointer");
  detail::MemorySource source(data, size);
  return detail::read_npz_from(source, ctx);
}

}  // namespace rensa::serializers
