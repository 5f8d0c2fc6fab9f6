#pragma once
// Internals of the .npz reader and writer, shared with their tests: byte sources and sinks, the
// zip writer's options, and the atomic file writer every rensa file write goes through.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "rensa/core/array.h"
#include "src/serializers/atomic_file.h"

namespace rensa::serializers::detail {

/// Random-access bytes to parse: a file (pread) or a buffer. `read` copies exactly `n` bytes at
/// `offset` or throws IOError naming `what`; callers check ranges against size() first.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual uint64_t size() const = 0;
  virtual void read(uint64_t offset, void* dst, std::size_t n) const = 0;
};

/// A buffer (not owned).
class MemorySource final : public ByteSource {
 public:
  MemorySource(const void* data, std::size_t size) : data_(static_cast<const unsigned char*>(data)), size_(size) {}
  uint64_t size() const override { return size_; }
  void read(uint64_t offset, void* dst, std::size_t n) const override;

 private:
  const unsigned char* data_;
  std::size_t size_;
};

/// A file read with pread; the size is taken once, so a file that shrinks meanwhile is an error,
/// not a crash. `ctx` starts every error message.
class FileSource final : public ByteSource {
 public:
  FileSource(const std::string& path, const std::string& ctx);
  ~FileSource() override;
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;
  uint64_t size() const override { return size_; }
  void read(uint64_t offset, void* dst, std::size_t n) const override;

 private:
  std::string ctx_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

/// Collects the bytes in a string.
class StringSink final : public ByteSink {
 public:
  void write(const void* data, std::size_t n) override { bytes_.append(static_cast<const char*>(data), n); }
  uint64_t position() const override { return bytes_.size(); }
  std::string& bytes() { return bytes_; }

 private:
  std::string bytes_;
};

/// A zip archive read entry by entry (the zipped image datasets). Thread-safe: entries are read
/// with pread, each into its own buffer.
class ZipArchive {
 public:
  /// Reads the central directory; IOError naming `path` when it is not a readable zip archive.
  explicit ZipArchive(const std::string& path);
  ~ZipArchive();
  ZipArchive(const ZipArchive&) = delete;
  ZipArchive& operator=(const ZipArchive&) = delete;
  const std::string& path() const;
  /// The names of the file entries (directory entries left out), in archive order.
  const std::vector<std::string>& names() const;
  bool contains(const std::string& name) const;
  /// The uncompressed bytes of entry `name`, CRC-checked. IOError naming the archive and the entry
  /// when it is missing or corrupt.
  std::string read(const std::string& name) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Options of the zip writer. `force_zip64` writes the ZIP64 records even when nothing needs them
/// (tests exercise the > 4 GiB and > 65535-entry paths with it).
struct ZipWriteOptions {
  bool force_zip64 = false;
};

/// Writes `arrays` as an uncompressed .npz (entries "<key>.npy") to `sink`. `op` starts errors.
void write_npz_to(ByteSink& sink, const std::map<std::string, Array>& arrays, const ZipWriteOptions& options,
                  const std::string& op);

/// Writes `files` (name, bytes) as an uncompressed zip archive to `sink`. `op` starts errors.
void write_zip_to(ByteSink& sink, const std::vector<std::pair<std::string, std::string>>& files, const std::string& op);
/// Reads every entry of the .npz in `source`; `what` names the source in errors.
std::map<std::string, Array> read_npz_from(const ByteSource& source, const std::string& what);

}  // namespace rensa::serializers::detail
