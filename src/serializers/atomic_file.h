#pragma once
// The atomic file writer, for every file rensa writes (npz archives and snapshots, LogReport's log,
// DumpGraph's graph): a temporary file in the target's directory, fsync, rename, fsync of the
// directory. Internal (rensa::serializers::detail).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rensa::serializers::detail {

/// Sequential output with a running position.
class ByteSink {
 public:
  virtual ~ByteSink() = default;
  virtual void write(const void* data, std::size_t n) = 0;
  virtual uint64_t position() const = 0;
};

/// A temporary file name of AtomicFileWriter, taken apart: the file it was to become and the
/// writer's process id.
struct TempFileName {
  std::string target;
  long pid = 0;
};
/// Parses ".<target>.tmp<pid>-<hex>-<attempt>"; std::nullopt for any other name.
std::optional<TempFileName> parse_temp_name(std::string_view name);

/// Creates a new temporary file beside `path` (".<file>.tmp<pid>-<hex>-<n>"), open for writing;
/// returns its descriptor and sets `temp_path`. IOError starting with `op` when it cannot.
int open_temporary_beside(const std::string& path, const std::string& op, std::string* temp_path);

/// Writes `path` atomically: the bytes go to a new temporary file in the same directory, which
/// commit() flushes, fsyncs, renames over `path` and makes durable by fsyncing the directory.
/// Destroyed without commit(), it removes the temporary file and leaves `path` untouched. Errors
/// throw IOError starting with `op` and naming the file.
class AtomicFileWriter final : public ByteSink {
 public:
  AtomicFileWriter(std::string path, std::string op);
  ~AtomicFileWriter() override;
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  void write(const void* data, std::size_t n) override;
  uint64_t position() const override { return position_; }
  void commit();
  /// The temporary file's path (for tests).
  const std::string& temp_path() const { return temp_path_; }

 private:
  void flush();
  [[noreturn]] void fail(const std::string& action, int err) const;

  std::string path_, op_, dir_, temp_path_;
  int fd_ = -1;
  bool committed_ = false;
  uint64_t position_ = 0;
  std::string buffer_;
};

/// Writes `text` to `path` atomically (AtomicFileWriter); IOError starting with `op`.
void write_file_atomically(const std::string& path, std::string_view text, const std::string& op);

}  // namespace rensa::serializers::detail
