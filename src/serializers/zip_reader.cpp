// The zip reader: the central directory, each entry's local header and data (stored or deflate),
// and the .npz built from them. Every offset and length is checked against the file before it is
// used, sizes are checked before memory is allocated, and every problem is an IOError naming the
// file, the entry and what is wrong.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_map>
#include <utility>
#include <vector>

#include "src/serializers/binary_io.h"
#include "src/serializers/npy_codec.h"
#include "src/serializers/npz_internal.h"
#include "src/serializers/zip_format.h"

namespace rensa::serializers::detail {
namespace {

// Deflate expands at most ~1032x; a larger claimed size is corrupt (and must not be allocated).
constexpr uint64_t kMaxDeflateRatio = 1033;

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
                " bytes left unread");
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

FileSource::FileSource(const std::string& path, const std::string& ctx) : ctx_(ctx) {
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

FileSource::~FileSource() {
  ::close(fd_);
}

void FileSource::read(uint64_t offset, void* dst, std::size_t n) const {
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

struct ZipArchive::Impl {
  std::string path;
  FileSource source;
  std::vector<ZipEntry> entries;
  std::vector<std::string> names;
  std::unordered_map<std::string, std::size_t> index;
  explicit Impl(const std::string& p) : path(p), source(p, p) {}
};

ZipArchive::ZipArchive(const std::string& path) : impl_(std::make_unique<Impl>(path)) {
  impl_->entries = read_central_directory(impl_->source, path);
  for (std::size_t k = 0; k < impl_->entries.size(); ++k) {
    const ZipEntry& e = impl_->entries[k];
    if (e.name.back() == '/') continue;
    RENSA_CHECK(impl_->index.emplace(e.name, k).second, IOError, path, ": duplicate entry ", quoted(e.name));
    impl_->names.push_back(e.name);
  }
}

ZipArchive::~ZipArchive() = default;
const std::string& ZipArchive::path() const { return impl_->path; }
const std::vector<std::string>& ZipArchive::names() const { return impl_->names; }
bool ZipArchive::contains(const std::string& name) const { return impl_->index.count(name) == 1; }

std::string ZipArchive::read(const std::string& name) const {
  const auto it = impl_->index.find(name);
  RENSA_CHECK(it != impl_->index.end(), IOError, impl_->path, ": no entry ", quoted(name), " in the archive");
  const ZipEntry& e = impl_->entries[it->second];
  const std::string ctx = impl_->path + ", entry " + quoted(e.name);
  RENSA_CHECK(e.uncompressed <= (uint64_t{1} << 34), IOError, ctx, ": ", e.uncompressed, " bytes is too large");
  std::string bytes(static_cast<std::size_t>(e.uncompressed), '\0');
  EntryStream in(impl_->source, e, ctx);
  in.read(bytes.data(), bytes.size());
  in.finish();
  return bytes;
}

}  // namespace rensa::serializers::detail
