// The public .npz entry points: the zip writer (zip_writer.cpp) into a file or a string, and the
// zip reader (zip_reader.cpp) from a file or a buffer. The .npy codec is in npy.cpp.

#include "rensa/serializers/npz.h"

#include <utility>

#include "src/serializers/npz_internal.h"

namespace rensa::serializers {

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
  detail::FileSource source(path, ctx);
  return detail::read_npz_from(source, ctx);
}

std::map<std::string, Array> read_npz_bytes(const void* data, std::size_t size, const std::string& what) {
  const std::string ctx = "read_npz: " + what;
  RENSA_CHECK(data != nullptr || size == 0, IOError, ctx, ": null data pointer");
  detail::MemorySource source(data, size);
  return detail::read_npz_from(source, ctx);
}

Array read_npy(const std::string& path) {
  const std::string ctx = "read_npy: '" + path + "'";
  detail::FileSource source(path, ctx);
  RENSA_CHECK(source.size() <= (uint64_t{1} << 40), IOError, ctx, ": ", source.size(), " bytes is too large");
  std::string bytes(static_cast<std::size_t>(source.size()), '\0');
  source.read(0, bytes.data(), bytes.size());
  return parse_npy(bytes.data(), bytes.size(), "'" + path + "'");
}

void write_npy(const std::string& path, const Array& array) {
  const std::string bytes = encode_npy(array);
  detail::AtomicFileWriter file(path, "write_npy");
  file.write(bytes.data(), bytes.size());
  file.commit();
}

}  // namespace rensa::serializers
