// The .npy codec: the header NumPy writes, a strict parser of it, and the public encode_npy and
// parse_npy. Every byte read is untrusted; errors are IOErrors starting with the caller's context.

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

#include "rensa/serializers/npz.h"
#include "src/serializers/binary_io.h"
#include "src/serializers/npy_codec.h"

namespace rensa::serializers {
namespace detail {
namespace {

using ::rensa::detail::concat;

// No legitimate header comes near this; it bounds what a corrupt length makes us allocate.
constexpr uint64_t kMaxNpyHeaderBytes = uint64_t{1} << 20;
constexpr std::size_t kMaxNpyDims = 64;

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
    case Dtype::mixed16:
    case Dtype::mixed_bf16:
      break;
  }
  RENSA_THROW(DtypeError, "encode_npy: ", dtype_name(dtype), " is not an array dtype");
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

}  // namespace

Array npy_ready(const Array& array, const std::string& ctx) {
  RENSA_CHECK(!array.is_null(), ValueError, ctx, ": null array");
  Array a = array.device().is_host() ? array : array.to(Device::cpu());
  if (a.dtype() == Dtype::bfloat16) return a.astype(Dtype::float32);
  return a.contiguous();
}

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

}  // namespace detail

// ---- public: .npy ------------------------------------------------------------------------------

std::string encode_npy(const Array& array) {
  const Array a = detail::npy_ready(array, "encode_npy");
  std::string out = detail::npy_header(a);
  if (a.nbytes() > 0) out.append(static_cast<const char*>(a.raw_data()), a.nbytes());
  return out;
}

Array parse_npy(const void* data, std::size_t size, const std::string& what) {
  const std::string ctx = "parse_npy: " + what;
  RENSA_CHECK(data != nullptr || size == 0, IOError, ctx, ": null data pointer");
  detail::MemoryStream in(data, size);
  return detail::read_npy(in, size, ctx);
}

}  // namespace rensa::serializers
