#include "rensa/extensions/plot_report.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "rensa/core/error.h"
#include "rensa/serializers/npz.h"
#include "rensa/training/trainer.h"

namespace rensa::extensions {
namespace {

// Beside the plot `path`, the names of its temporary files (the image is renamed over the plot).
const char* const kTempSuffixes[] = {".data", ".gp", ".tmp"};

// A file that exists only for the duration of one plot; removed on destruction. Named as atomic
// writes name theirs, so a run killed while plotting leaves nothing that a later run keeps.
class TempFile {
 public:
  explicit TempFile(const std::string& path)
      : path_(serializers::create_temporary_beside(path, "PlotReport")) {}
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

// A single-quoted gnuplot string ('' stands for ').
std::string gp_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// A single-quoted shell word.
std::string sh_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

int point_type(const std::string& marker) {
  if (marker == "+") return 1;
  if (marker == "x") return 2;
  if (marker == "*") return 3;
  if (marker == "s") return 4;
  if (marker == "o") return 6;
  if (marker == "^") return 8;
  return 2;
}

void fsync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

PlotReport::PlotReport(std::vector<std::string> y_keys, std::string x_key, training::Trigger trigger,
                       std::string file_name, std::string marker, bool grid)
    : y_keys_(std::move(y_keys)),
      x_key_(std::move(x_key)),
      trigger_(std::move(trigger)),
      file_name_(std::move(file_name)),
      marker_(std::move(marker)),
      grid_(grid) {
  RENSA_CHECK(!y_keys_.empty(), ValueError, "PlotReport: no y keys to plot");
  RENSA_CHECK(!file_name_.empty(), ValueError, "PlotReport: empty file name");
  RENSA_CHECK(!x_key_.empty(), ValueError, "PlotReport: empty x key");
  RENSA_CHECK(static_cast<bool>(trigger_), ValueError, "PlotReport: null trigger");
  for (const std::string& k : y_keys_) data_[k];
}

bool PlotReport::available() {
  if (available_.has_value()) return *available_;
  bool found = false;
  if (gnuplot_.find('/') != std::string::npos) {
    found = ::access(gnuplot_.c_str(), X_OK) == 0;
  } else if (const char* path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    std::string dir;
    while (!found && std::getline(dirs, dir, ':')) {
      if (dir.empty()) dir = ".";
      const std::string candidate = (std::filesystem::path(dir) / gnuplot_).string();
      found = ::access(candidate.c_str(), X_OK) == 0 && !std::filesystem::is_directory(candidate);
    }
  }
  available_ = found;
  return found;
}

void PlotReport::warn_once(const std::string& message) {
  if (warned_) return;
  warned_ = true;
  std::cerr << "PlotReport: " << message << "\n";
}

void PlotReport::initialize(training::Trainer& trainer) {
  const std::filesystem::path target = std::filesystem::path(trainer.out()) / file_name_;
  const std::string stem = target.filename().string();
  serializers::remove_stale_temporaries(target.parent_path().string(), [&](std::string_view f) {
    for (const char* suffix : kTempSuffixes) {
      if (f == stem + suffix) return true;
    }
    return false;
  });
}

void PlotReport::operator()(training::Trainer& trainer) {
  const training::Observation& obs = trainer.observation();
  for (const std::string& k : y_keys_) {
    if (auto it = obs.find(k); it != obs.end()) summary_.add(k, it->second);
  }
  if (!trigger_(trainer)) return;
  training::Observation stats = summary_.mean();
  summary_.reset();
  stats["epoch"] = static_cast<double>(trainer.updater().epoch());
  stats["iteration"] = static_cast<double>(trainer.updater().iteration());
  const auto xit = stats.find(x_key_);
  if (xit == stats.end()) return;
  bool added = false;
  for (const std::string& k : y_keys_) {
    if (auto it = stats.find(k); it != stats.end()) {
      data_[k].emplace_back(xit->second, it->second);
      added = true;
    }
  }
  if (!added) return;
  if (!available()) {
    warn_once("the gnuplot program ('" + gnuplot_ + "') was not found; no plots will be drawn");
    return;
  }
  plot((std::filesystem::path(trainer.out()) / file_name_).string());
}

void PlotReport::plot(const std::string& path) {
  TempFile data_file(path + kTempSuffixes[0]);
  TempFile script_file(path + kTempSuffixes[1]);
  TempFile png_file(path + kTempSuffixes[2]);

  std::vector<std::string> plots;
  {
    std::ofstream data(data_file.path());
    data.precision(17);
    int index = 0;
    for (const std::string& k : y_keys_) {
      int points = 0;
      for (const auto& [x, y] : data_.at(k)) {
        if (!std::isfinite(x) || !std::isfinite(y)) continue;
        data << x << ' ' << y << '\n';
        ++points;
      }
      if (points == 0) continue;
      data << "\n\n";
      plots.push_back(gp_quote(data_file.path()) + " index " + std::to_string(index++) +
                      " using 1:2 with linespoints pointtype " + std::to_string(point_type(marker_)) + " title " +
                      gp_quote(k));
    }
    RENSA_CHECK(data.good(), IOError, "PlotReport: cannot write '", data_file.path(), "'");
  }
  if (plots.empty()) return;
  {
    std::ofstream script(script_file.path());
    script << "if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) { set terminal pngcairo size 800,600 } "
              "else { set terminal png size 800,600 }\n"
           << "set termoption noenhanced\n"
           << "set output " << gp_quote(png_file.path()) << "\n"
           << "set xlabel " << gp_quote(x_key_) << "\n"
           << "set key below\n";
    if (grid_) script << "set grid\n";
    script << "plot ";
    for (std::size_t i = 0; i < plots.size(); ++i) script << (i ? ", " : "") << plots[i];
    script << "\nset output\n";
    RENSA_CHECK(script.good(), IOError, "PlotReport: cannot write '", script_file.path(), "'");
  }

  const std::string command = sh_quote(gnuplot_) + " " + sh_quote(script_file.path()) + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    warn_once("cannot run gnuplot: " + std::string(std::strerror(errno)));
    return;
  }
  std::string output;
  char buf[512];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) output += buf;
  const int status = ::pclose(pipe);
  struct stat st{};
  if (status != 0 || ::stat(png_file.path().c_str(), &st) != 0 || st.st_size == 0) {
    warn_once("gnuplot failed to draw '" + path + "' (status " + std::to_string(status) + "): " + output);
    return;
  }
  // Atomic replacement: sync the finished image, rename it over the target, sync the directory.
  fsync_path(png_file.path(), O_RDONLY);
  RENSA_CHECK(::rename(png_file.path().c_str(), path.c_str()) == 0, IOError, "PlotReport: cannot rename '",
              png_file.path(), "' to '", path, "': ", std::strerror(errno));
  png_file.release();
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  fsync_path(parent.empty() ? "." : parent.string(), O_RDONLY | O_DIRECTORY);
}

void PlotReport::serialize(serializers::Serializer& s) {
  trigger_.serialize(s.child("_trigger"));
  summary_.serialize(s.child("_summary"));
  const std::string key = "_plot_" + file_name_;
  if (s.is_loading()) {
    std::string text;
    s.string(key, text);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      RENSA_THROW(IOError, "PlotReport: '", s.path(), key, "' is not valid JSON: ", e.what());
    }
    RENSA_CHECK(j.is_object(), IOError, "PlotReport: '", s.path(), key, "' is not a JSON object");
    data_.clear();
    for (const std::string& k : y_keys_) data_[k];
    for (const auto& [k, points] : j.items()) {
      RENSA_CHECK(points.is_array(), IOError, "PlotReport: '", s.path(), key, "': '", k, "' is not a list");
      auto& dst = data_[k];
      for (const auto& p : points) {
        RENSA_CHECK(p.is_array() && p.size() == 2, IOError, "PlotReport: '", s.path(), key, "': a point of '", k,
                    "' is not an [x, y] pair");
        const auto num = [](const nlohmann::json& v) {
          return v.is_null() ? std::nan("") : v.get<double>();
        };
        dst.emplace_back(num(p[0]), num(p[1]));
      }
    }
  } else {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [k, points] : data_) {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& [x, y] : points) {
        list.push_back({std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr),
                        std::isfinite(y) ? nlohmann::json(y) : nlohmann::json(nullptr)});
      }
      j[k] = std::move(list);
    }
    std::string text = j.dump();
    s.string(key, text);
  }
}

}  // namespace rensa::extensions
