#include "src/extensions/gnuplot.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "rensa/core/error.h"
#include "rensa/serializers/npz.h"

namespace rensa::extensions::detail {
namespace {

// Beside the plot `path`, the names of its temporary files (the image is renamed over the plot).
const char* const kTempSuffixes[] = {".data", ".gp", ".tmp"};

// A file that exists only for the duration of one plot; removed on destruction. Named as atomic
// writes name theirs, so a run killed while plotting leaves nothing that a later run keeps.
class TempFile {
 public:
  TempFile(const std::string& path, const char* owner) : path_(serializers::create_temporary_beside(path, owner)) {}
  ~TempFile() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }
  void release() { path_.clear(); }

 private:
  std::string path_;
};

// A single-quoted shell word.
std::string sh_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

void fsync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

void write_file(const std::string& path, const std::string& text, const char* owner) {
  std::ofstream out(path);
  out << text;
  RENSA_CHECK(out.good(), IOError, owner, ": cannot write '", path, "'");
}

}  // namespace

bool gnuplot_found(const std::string& program) {
  if (program.find('/') != std::string::npos) return ::access(program.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = ((dir.empty() ? std::filesystem::path(".") : std::filesystem::path(dir)) / program).string();
    if (::access(candidate.c_str(), X_OK) == 0 && !std::filesystem::is_directory(candidate)) return true;
  }
  return false;
}

std::string gp_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

void remove_plot_temporaries(const std::filesystem::path& target, const char* /*owner*/) {
  const std::string stem = target.filename().string();
  serializers::remove_stale_temporaries(target.parent_path().string(), [&](std::string_view f) {
    for (const char* suffix : kTempSuffixes) {
      if (f == stem + suffix) return true;
    }
    return false;
  });
}

std::optional<std::string> draw_png(const std::string& program, const std::string& path, const char* owner,
                                    const std::string& data,
                                    const std::function<std::string(const std::string&, const std::string&)>& script) {
  TempFile data_file(path + kTempSuffixes[0], owner);
  TempFile script_file(path + kTempSuffixes[1], owner);
  TempFile png_file(path + kTempSuffixes[2], owner);
  write_file(data_file.path(), data, owner);
  write_file(script_file.path(), script(data_file.path(), png_file.path()), owner);

  const std::string command = sh_quote(program) + " " + sh_quote(script_file.path()) + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return "cannot run gnuplot: " + std::string(std::strerror(errno));
  std::string output;
  char buf[512];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) output += buf;
  const int status = ::pclose(pipe);
  struct stat st{};
  if (status != 0 || ::stat(png_file.path().c_str(), &st) != 0 || st.st_size == 0) {
    return "gnuplot failed to draw '" + path + "' (status " + std::to_string(status) + "): " + output;
  }
  // Atomic replacement: sync the finished image, rename it over the target, sync the directory.
  fsync_path(png_file.path(), O_RDONLY);
  RENSA_CHECK(::rename(png_file.path().c_str(), path.c_str()) == 0, IOError, owner, ": cannot rename '",
              png_file.path(), "' to '", path, "': ", std::strerror(errno));
  png_file.release();
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  fsync_path(parent.empty() ? "." : parent.string(), O_RDONLY | O_DIRECTORY);
  return std::nullopt;
}

}  // namespace rensa::extensions::detail
