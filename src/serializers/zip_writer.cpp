// The zip writer: arrays as stored (uncompressed) .npy entries of a zip archive, with ZIP64 records
// where sizes, offsets or the entry count need them.

#include <algorithm>
#include <initializer_list>
#include <vector>

#include "src/serializers/binary_io.h"
#include "src/serializers/npy_codec.h"
#include "src/serializers/npz_internal.h"
#include "src/serializers/zip_format.h"

namespace rensa::serializers::detail {
namespace {

// MS-DOS date of 1980-01-01, 00:00: archives do not depend on the clock, so equal models give
// equal files.
constexpr uint16_t kDosDate = (0 << 9) | (1 << 5) | 1;
constexpr uint16_t kDosTime = 0;

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

namespace {

/// One file of an archive: its name and its bytes, a prefix (the .npy header) then a body.
struct FileToWrite {
  std::string name;
  std::string prefix;
  const void* body = nullptr;
  uint64_t body_size = 0;
};

void write_zip(ByteSink& sink, const std::vector<FileToWrite>& files, const ZipWriteOptions& options) {
  std::vector<WrittenEntry> entries;
  entries.reserve(files.size());
  for (const FileToWrite& f : files) {
    WrittenEntry e;
    e.name = f.name;
    e.utf8 = std::any_of(e.name.begin(), e.name.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
    e.size = f.prefix.size() + f.body_size;
    e.offset = sink.position();
    e.crc = crc32_update(crc32_update(0, f.prefix.data(), f.prefix.size()), f.body_size ? f.body : f.prefix.data(),
                         f.body_size);
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
    write_all(sink, f.prefix);
    if (f.body_size > 0) sink.write(f.body, f.body_size);
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

}  // namespace

void write_npz_to(ByteSink& sink, const std::map<std::string, Array>& arrays, const ZipWriteOptions& options,
                  const std::string& op) {
  std::vector<Array> ready;  // keeps the bodies alive
  std::vector<FileToWrite> files;
  ready.reserve(arrays.size());
  for (const auto& [key, array] : arrays) {
    RENSA_CHECK(!key.empty(), ValueError, op, ": empty array name");
    RENSA_CHECK(key.size() <= 0xffff - 4, ValueError, op, ": array name of ", key.size(), " bytes is too long");
    RENSA_CHECK(!array.is_null(), ValueError, op, ": array ", quoted(key), " is null");
    ready.push_back(npy_ready(array, op));
    const Array& a = ready.back();
    files.push_back({key + ".npy", npy_header(a), a.nbytes() ? a.raw_data() : nullptr, a.nbytes()});
  }
  write_zip(sink, files, options);
}

void write_zip_to(ByteSink& sink, const std::vector<std::pair<std::string, std::string>>& files, const std::string& op) {
  std::vector<FileToWrite> out;
  for (const auto& [name, bytes] : files) {
    RENSA_CHECK(!name.empty() && name.size() <= 0xffff, ValueError, op, ": file name of ", name.size(),
                " bytes (must be 1..65535)");
    out.push_back({name, std::string(), bytes.data(), bytes.size()});
  }
  write_zip(sink, out, {});
}

}  // namespace rensa::serializers::detail
