#pragma once
/// \file
/// TextDataset: the lines of one or more text files, read on access (Chainer's TextDataset).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rensa/datasets/dataset.h"

namespace rensa::serializers::detail {
class FileSource;
}

namespace rensa::datasets {

/// Options of TextDataset.
struct TextDatasetOptions {
  /// Keeps line i when it returns true for the lines of every file at i (Chainer's filter_func);
  /// null keeps all.
  std::function<bool(const std::vector<std::string>& lines)> filter_func = nullptr;
};

/// Example i is line i of each file (of the lines the filter keeps), as a 1-d uint8 array of the
/// line's bytes with its newline, as Python's readline gives it (to_string turns it back). The
/// line offsets are indexed once; lines are read with pread, so get_example is thread-safe.
class TextDataset final : public Dataset {
 public:
  /// ValueError when `paths` is empty or the files have different numbers of lines (naming the
  /// files and the counts); IOError naming a file that cannot be read.
  explicit TextDataset(std::vector<std::string> paths, const TextDatasetOptions& options = {});
  /// TextDataset({path}, options).
  explicit TextDataset(const std::string& path, const TextDatasetOptions& options = {})
      : TextDataset(std::vector<std::string>{path}, options) {}
  ~TextDataset() override;
  int64_t size() const override { return static_cast<int64_t>(lines_.size()); }
  Example get_example(int64_t i) const override;
  /// The lines of example i as strings (with their newlines).
  std::vector<std::string> get_lines(int64_t i) const;
  /// The files, one column each.
  const std::vector<std::string>& paths() const { return paths_; }

 private:
  std::vector<std::string> paths_;
  std::vector<std::shared_ptr<serializers::detail::FileSource>> files_;
  std::vector<std::vector<uint64_t>> bounds_;  // bounds_[f][k]: offset of line k of file f (and the end)
  std::vector<int64_t> lines_;                 // the kept line numbers
};

/// The bytes of a 1-d uint8 array as a string (TextDataset's examples). ValueError otherwise.
std::string to_string(const Array& bytes);

}  // namespace rensa::datasets
