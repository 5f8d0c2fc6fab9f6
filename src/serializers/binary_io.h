#pragma once
// Byte-level helpers shared by the .npy codec and the zip writer and reader: little-endian fields,
// CRC-32, and quoting of untrusted bytes in error messages.

#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace rensa::serializers::detail {

inline uint16_t le16(const unsigned char* p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}
inline uint32_t le32(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}
inline uint64_t le64(const unsigned char* p) {
  return le32(p) | (static_cast<uint64_t>(le32(p + 4)) << 32);
}

inline void put16(std::string& s, uint64_t v) {
  for (int i = 0; i < 2; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
inline void put32(std::string& s, uint64_t v) {
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
inline void put64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

inline uint32_t crc32_update(uint32_t crc, const void* data, std::size_t n) {
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

inline std::string quoted(std::string_view s, std::size_t limit = 200) {
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

}  // namespace rensa::serializers::detail
