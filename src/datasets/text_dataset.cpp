// TextDataset: line offsets indexed once, lines read with pread.

#include "rensa/datasets/text_dataset.h"

#include <cstring>

#include "rensa/core/error.h"
#include "rensa/datasets/image_io.h"
#include "src/datasets/common.h"
#include "src/serializers/npz_internal.h"

namespace rensa::datasets {
namespace {

/// Offsets of the starts of the lines of `bytes`, and its end.
std::vector<uint64_t> line_bounds(const std::string& bytes) {
  std::vector<uint64_t> b{0};
  for (std::size_t k = 0; k < bytes.size(); ++k) {
    if (bytes[k] == '\n') b.push_back(k + 1);
  }
  if (b.back() != bytes.size()) b.push_back(bytes.size());  // a last line without a newline
  return b;
}

}  // namespace

TextDataset::TextDataset(std::vector<std::string> paths, const TextDatasetOptions& options) : paths_(std::move(paths)) {
  RENSA_CHECK(!paths_.empty(), ValueError, "TextDataset: at least one text file must be given");
  for (const std::string& p : paths_) {
    files_.push_back(std::make_shared<serializers::detail::FileSource>(p, "TextDataset: '" + p + "'"));
    bounds_.push_back(line_bounds(read_file_bytes(p)));
  }
  const std::size_t n = bounds_[0].size() - 1;
  for (std::size_t f = 1; f < paths_.size(); ++f) {
    RENSA_CHECK(bounds_[f].size() - 1 == n, ValueError, "TextDataset: '", paths_[0], "' has ", n, " lines but '",
                paths_[f], "' has ", bounds_[f].size() - 1);
  }
  for (std::size_t k = 0; k < n; ++k) {
    if (options.filter_func == nullptr) {
      lines_.push_back(static_cast<int64_t>(k));
      continue;
    }
    std::vector<std::string> lines;
    for (std::size_t f = 0; f < paths_.size(); ++f) {
      std::string line(bounds_[f][k + 1] - bounds_[f][k], '\0');
      files_[f]->read(bounds_[f][k], line.data(), line.size());
      lines.push_back(std::move(line));
    }
    if (options.filter_func(lines)) lines_.push_back(static_cast<int64_t>(k));
  }
}

TextDataset::~TextDataset() = default;

std::vector<std::string> TextDataset::get_lines(int64_t i) const {
  detail::check_index("TextDataset", i, size());
  const auto k = static_cast<std::size_t>(lines_[static_cast<std::size_t>(i)]);
  std::vector<std::string> out;
  for (std::size_t f = 0; f < files_.size(); ++f) {
    std::string line(bounds_[f][k + 1] - bounds_[f][k], '\0');
    files_[f]->read(bounds_[f][k], line.data(), line.size());
    out.push_back(std::move(line));
  }
  return out;
}

Example TextDataset::get_example(int64_t i) const {
  Example ex;
  for (const std::string& line : get_lines(i)) {
    Array a = Array::empty(Shape{static_cast<int64_t>(line.size())}, Dtype::uint8);
    if (!line.empty()) std::memcpy(a.raw_data(), line.data(), line.size());
    ex.push_back(a);
  }
  return ex;
}

std::string to_string(const Array& bytes) {
  RENSA_CHECK(!bytes.is_null() && bytes.ndim() == 1 && bytes.dtype() == Dtype::uint8, ValueError,
              "to_string: needs a 1-d uint8 array");
  const Array c = bytes.copy();
  return std::string(static_cast<const char*>(c.raw_data()), static_cast<std::size_t>(c.size()));
}

}  // namespace rensa::datasets
