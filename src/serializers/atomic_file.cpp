// The atomic file writer: temporary file in the target's directory, fsync, rename, fsync of the
// directory. A reader of `path` sees either the old file or the whole new one, never a mix.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <thread>

#include "rensa/core/error.h"
#include "src/serializers/npz_internal.h"

namespace rensa::serializers::detail {
namespace {

constexpr std::size_t kBufferBytes = std::size_t{1} << 20;

std::string errno_text(int err) {
  return std::strerror(err);
}

// A name no other writer picks: pid, thread, time and an attempt number.
std::string temp_name(const std::string& base, int attempt) {
  const auto now = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  const auto tid = static_cast<uint64_t>(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  return ::rensa::detail::concat(".", base, ".tmp", ::getpid(), "-", std::hex, (now ^ (tid << 17)) & 0xffffffffffull,
                                 "-", attempt);
}

}  // namespace

void MemorySource::read(uint64_t offset, void* dst, std::size_t n) const {
  // Callers validate ranges; this guards against a bug turning into an out-of-bounds read.
  RENSA_CHECK(offset <= size_ && n <= size_ - offset, IOError, "MemorySource: read of ", n, " bytes at offset ", offset,
              " past the end (", size_, " bytes)");
  if (n > 0) std::memcpy(dst, data_ + offset, n);
}

AtomicFileWriter::AtomicFileWriter(std::string path, std::string op) : path_(std::move(path)), op_(std::move(op)) {
  RENSA_CHECK(!path_.empty(), IOError, op_, ": empty file name");
  const std::filesystem::path p(path_);
  RENSA_CHECK(p.has_filename(), IOError, op_, ": '", path_, "' names a directory, not a file");
  dir_ = p.has_parent_path() ? p.parent_path().string() : std::string(1, '.');
  const std::string base = p.filename().string();
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string candidate = (std::filesystem::path(dir_) / temp_name(base, attempt)).string();
    fd_ = ::open(candidate.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ >= 0) {
      temp_path_ = candidate;
      break;
    }
    if (errno != EEXIST) {
      const int err = errno;
      RENSA_THROW(IOError, op_, ": cannot write '", path_, "': creating a temporary file in '", dir_,
                  "' failed: ", errno_text(err));
    }
  }
  RENSA_CHECK(fd_ >= 0, IOError, op_, ": cannot write '", path_, "': no free temporary file name in '", dir_, "'");
  buffer_.reserve(kBufferBytes);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temp_path_.empty()) ::unlink(temp_path_.c_str());
}

void AtomicFileWriter::fail(const std::string& action, int err) const {
  RENSA_THROW(IOError, op_, ": cannot write '", path_, "': ", action, " failed: ", errno_text(err));
}

void AtomicFileWriter::write(const void* data, std::size_t n) {
  RENSA_CHECK(fd_ >= 0 && !committed_, IOError, op_, ": write to '", path_, "' after commit");
  position_ += n;
  if (buffer_.size() + n <= kBufferBytes) {
    buffer_.append(static_cast<const char*>(data), n);
    return;
  }
  flush();
  if (n < kBufferBytes) {
    buffer_.append(static_cast<const char*>(data), n);
    return;
  }
  // Large blocks (array data) go straight to the file.
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, std::min<std::size_t>(n, std::size_t{1} << 30));
    if (w < 0) {
      if (errno == EINTR) continue;
      fail("write to '" + temp_path_ + "'", errno);
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void AtomicFileWriter::flush() {
  const char* p = buffer_.data();
  std::size_t n = buffer_.size();
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail("write to '" + temp_path_ + "'", errno);
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  buffer_.clear();
}

void AtomicFileWriter::commit() {
  RENSA_CHECK(fd_ >= 0 && !committed_, IOError, op_, ": '", path_, "' committed twice");
  flush();
  if (::fsync(fd_) != 0) fail("fsync of '" + temp_path_ + "'", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("close of '" + temp_path_ + "'", errno);
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) fail("rename of '" + temp_path_ + "'", errno);
  committed_ = true;
  // The rename is durable only once the directory entry is on disk.
  const int dir_fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) fail("opening directory '" + dir_ + "' for fsync", errno);
  const int rc = ::fsync(dir_fd);
  const int err = errno;
  ::close(dir_fd);
  // Some file systems cannot fsync a directory (EINVAL); the rename itself has happened.
  if (rc != 0 && err != EINVAL) fail("fsync of directory '" + dir_ + "'", err);
}

}  // namespace rensa::serializers::detail
