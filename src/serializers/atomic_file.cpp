// The atomic file writer: temporary file in the target's directory, fsync, rename, fsync of the
// directory. A reader of `path` sees either the old file or the whole new one, never a mix.

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <thread>

#include "rensa/core/error.h"
#include "rensa/serializers/npz.h"
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

bool all_of(std::string_view s, bool (*pred)(char)) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!pred(c)) return false;
  }
  return true;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f'); }

}  // namespace

std::optional<TempFileName> parse_temp_name(std::string_view name) {
  // ".<base>.tmp<pid>-<hex>-<attempt>", as temp_name writes it.
  if (name.size() < 2 || name[0] != '.') return std::nullopt;
  const std::size_t tmp = name.rfind(".tmp");
  if (tmp == std::string_view::npos || tmp < 2) return std::nullopt;
  const std::string_view tail = name.substr(tmp + 4);
  const std::size_t dash1 = tail.find('-');
  const std::size_t dash2 = dash1 == std::string_view::npos ? dash1 : tail.find('-', dash1 + 1);
  if (dash2 == std::string_view::npos) return std::nullopt;
  const std::string_view pid = tail.substr(0, dash1);
  if (!all_of(pid, is_digit) || pid.size() > 9 || !all_of(tail.substr(dash1 + 1, dash2 - dash1 - 1), is_hex) ||
      !all_of(tail.substr(dash2 + 1), is_digit)) {
    return std::nullopt;
  }
  return TempFileName{std::string(name.substr(1, tmp - 1)), std::stol(std::string(pid))};
}

}  // namespace rensa::serializers::detail

namespace rensa::serializers {

std::string create_temporary_beside(const std::string& path, const std::string& op) {
  std::string temp;
  ::close(detail::open_temporary_beside(path, op, &temp));
  return temp;
}

std::vector<std::string> remove_stale_temporaries(const std::string& directory,
                                                  const std::function<bool(std::string_view)>& is_target) {
  namespace fs = std::filesystem;
  std::vector<std::string> removed;
  std::error_code ec;
  fs::directory_iterator it(directory, ec);
  if (ec) return removed;  // no directory yet: nothing was left behind
  const long self = static_cast<long>(::getpid());
  for (const fs::directory_entry& entry : it) {
    const std::string name = entry.path().filename().string();
    const auto parsed = detail::parse_temp_name(name);
    if (!parsed || !is_target(parsed->target)) continue;
    // A writer that is still alive on this host may be about to rename its file.
    if (parsed->pid == self || ::kill(static_cast<pid_t>(parsed->pid), 0) == 0 || errno != ESRCH) continue;
    std::error_code fec;
    if (!entry.is_regular_file(fec)) continue;
    if (fs::remove(entry.path(), fec)) {
      removed.push_back(entry.path().string());
    } else if (fec) {
      std::cerr << "remove_stale_temporaries: cannot remove '" << entry.path().string() << "': " << fec.message()
                << "\n";
    }
  }
  return removed;
}

}  // namespace rensa::serializers

namespace rensa::serializers::detail {

void MemorySource::read(uint64_t offset, void* dst, std::size_t n) const {
  // Callers validate ranges; this guards against a bug turning into an out-of-bounds read.
  RENSA_CHECK(offset <= size_ && n <= size_ - offset, IOError, "MemorySource: read of ", n, " bytes at offset ", offset,
              " past the end (", size_, " bytes)");
  if (n > 0) std::memcpy(dst, data_ + offset, n);
}

int open_temporary_beside(const std::string& path, const std::string& op, std::string* temp_path) {
  RENSA_CHECK(!path.empty(), IOError, op, ": empty file name");
  const std::filesystem::path p(path);
  RENSA_CHECK(p.has_filename(), IOError, op, ": '", path, "' names a directory, not a file");
  const std::string dir = p.has_parent_path() ? p.parent_path().string() : std::string(1, '.');
  const std::string base = p.filename().string();
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string candidate = (std::filesystem::path(dir) / temp_name(base, attempt)).string();
    const int fd = ::open(candidate.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      *temp_path = candidate;
      return fd;
    }
    if (errno != EEXIST) {
      const int err = errno;
      RENSA_THROW(IOError, op, ": cannot write '", path, "': creating a temporary file in '", dir, "' failed: ",
                  errno_text(err));
    }
  }
  RENSA_THROW(IOError, op, ": cannot write '", path, "': no free temporary file name in '", dir, "'");
}

AtomicFileWriter::AtomicFileWriter(std::string path, std::string op) : path_(std::move(path)), op_(std::move(op)) {
  fd_ = open_temporary_beside(path_, op_, &temp_path_);
  const std::filesystem::path p(path_);
  dir_ = p.has_parent_path() ? p.parent_path().string() : std::string(1, '.');
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

void write_file_atomically(const std::string& path, std::string_view text, const std::string& op) {
  AtomicFileWriter writer(path, op);
  writer.write(text.data(), text.size());
  writer.commit();
}

}  // namespace rensa::serializers::detail
