// Chainer's POS-tagging example (examples/pos/postagging.py): part-of-speech tags of the Brown
// corpus with a linear-chain CRF whose per-word scores are an EmbedID row, trained with Adam and
// weight decay. Accuracy is the micro-average of the correct and total tag counts (MicroAverage).
//   build/release/examples/train_pos --brown-dir ~/nltk_data/corpora/brown --epoch 20
// The corpus is read as NLTK distributes it (python3 -m nltk.downloader brown unpacks it into
// nltk_data/corpora/brown; nothing is downloaded here): the files ca01 ... cr09, one sentence of
// `word/tag` tokens per line. As NLTK's reader, the tag is what follows the last '/' and is
// uppercased; words are kept as they are. One tenth of the sentences, drawn as Chainer's
// split_dataset_random(seed=0) draws them, is the validation set. Writes the log and snapshots to --out.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "rensa/rensa.h"
#include "rensa/training.h"
#include "run_flags.h"

namespace F = rensa::functions;
namespace L = rensa::links;
namespace E = rensa::extensions;
using rensa::Array;
using rensa::Variable;

namespace {

// The tagged sentences of the corpus (each example: word ids, tag ids) and the two vocabularies,
// ids given in order of first appearance as Chainer's defaultdicts give them.
struct Corpus {
  std::vector<rensa::datasets::Example> sentences;
  std::unordered_map<std::string, int32_t> words, tags;
};

// Reads the corpus files of `dir` in name order, as NLTK's brown reader (fileids c[a-z]\d\d): every
// line with a token is a sentence; blank lines separate paragraphs.
// The corpus files are named c<category letter><two digits> (ca01 ... cr09). Matched by hand: GCC 12
// warns falsely inside std::regex under the sanitizers (GCC bug 105616), which fails the asan build.
bool is_brown_file_id(const std::string& name) {
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  return name.size() == 4 && name[0] == 'c' && name[1] >= 'a' && name[1] <= 'z' && digit(name[2]) && digit(name[3]);
}

Corpus read_brown(const std::string& dir) {
  const std::string where = "; get the corpus with NLTK (python3 -m nltk.downloader brown) and name its "
                            "nltk_data/corpora/brown directory with --brown-dir";
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw rensa::IOError("--brown-dir " + dir + " is not a directory (expected the files ca01 ... cr09)" + where);
  }
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_regular_file() && is_brown_file_id(entry.path().filename().string())) {
      files.push_back(entry.path());
    }
  }
  if (files.empty()) throw rensa::IOError("no corpus file (ca01 ... cr09) in --brown-dir " + dir + where);
  std::sort(files.begin(), files.end());
  Corpus corpus;
  for (const auto& path : files) {
    std::ifstream in(path);
    if (!in) throw rensa::IOError("cannot read " + path.string());
    std::string line, token;
    for (int64_t number = 1; std::getline(in, line); ++number) {
      std::istringstream tokens(line);
      std::vector<int32_t> x, y;
      while (tokens >> token) {
        const std::size_t slash = token.rfind('/');
        if (slash == std::string::npos || slash + 1 == token.size()) {
          throw rensa::ValueError(path.string() + ":" + std::to_string(number) + ": token '" + token +
                                  "' is not word/tag");
        }
        std::string tag = token.substr(slash + 1);
        for (char& c : tag) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        x.push_back(corpus.words.try_emplace(token.substr(0, slash), static_cast<int32_t>(corpus.words.size()))
                        .first->second);
        y.push_back(corpus.tags.try_emplace(tag, static_cast<int32_t>(corpus.tags.size())).first->second);
      }
      if (!x.empty()) corpus.sentences.push_back({Array::from_vector(x), Array::from_vector(y)});
    }
  }
  return corpus;
}

class SentenceDataset : public rensa::datasets::Dataset {
 public:
  explicit SentenceDataset(std::vector<rensa::datasets::Example> sentences) : sentences_(std::move(sentences)) {}
  int64_t size() const override { return static_cast<int64_t>(sentences_.size()); }
  rensa::datasets::Example get_example(int64_t i) const override { return sentences_.at(static_cast<size_t>(i)); }

 private:
  std::vector<rensa::datasets::Example> sentences_;
};

// numpy.random.RandomState(seed).permutation(n): std::mt19937 is NumPy's MT19937 with the same
// seeding, and this is NumPy's legacy shuffle (bounded draws by masked rejection), so the split is
// the one Chainer's split_dataset_random makes.
std::vector<int64_t> numpy_permutation(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  for (int64_t i = n - 1; i > 0; --i) {
    auto mask = static_cast<uint32_t>(i);
    for (int shift : {1, 2, 4, 8, 16}) mask |= mask >> shift;
    uint32_t j = 0;
    do {
      j = static_cast<uint32_t>(gen()) & mask;
    } while (j > static_cast<uint64_t>(i));
    std::swap(order[static_cast<size_t>(i)], order[j]);
  }
  return order;
}

// Chainer's convert: no stacking, as the sentences differ in length. The columns are the B word
// sequences, then the B tag sequences.
std::vector<Array> convert(const rensa::iterators::Batch& batch, rensa::Device device) {
  std::vector<Array> out;
  for (size_t column : {0, 1}) {
    for (const auto& example : batch) out.push_back(example.at(column).to(device));
  }
  return out;
}

// Chainer's CRF chain: the score of each tag for a word is its EmbedID row.
struct CRF : rensa::Chain {
  L::EmbedID feature;
  L::CRF1d crf;
  CRF(int64_t n_vocab, int64_t n_pos) : feature(n_vocab, n_pos), crf(n_pos) {
    add_link("feature", feature);
    add_link("crf", crf);
  }
  Variable forward(const std::vector<Variable>& inputs) override {
    const size_t b = inputs.size() / 2;
    // One EmbedID call for the whole batch, split into sentences: the same values and gradients as
    // a call per sentence (Chainer's), without a dense gradient of W per sentence.
    std::vector<Variable> xs(inputs.begin(), inputs.begin() + static_cast<std::ptrdiff_t>(b));
    std::vector<int64_t> ends;
    for (size_t i = 0; i + 1 < b; ++i) ends.push_back((ends.empty() ? 0 : ends.back()) + xs[i].shape()[0]);
    const std::vector<Variable> hs = F::split_axis(feature(F::concat(xs, 0)), ends, 0);
    std::vector<Array> ys;
    for (size_t i = 0; i < b; ++i) ys.push_back(inputs[b + i].array());
    Variable loss = crf.forward(hs, ys, "mean", true);
    rensa::report("loss", loss, this);
    const std::vector<Array> predict = crf.argmax(hs, true).second;
    double correct = 0, total = 0;
    for (size_t i = 0; i < b; ++i) {
      const auto y = ys[i].to_vector<int32_t>();
      const auto p = predict[i].astype(rensa::Dtype::int32).to_vector<int32_t>();
      for (size_t t = 0; t < y.size(); ++t) correct += y[t] == p[t] ? 1 : 0;
      total += static_cast<double>(y.size());
    }
    // Per sentence: the Evaluator weights each batch's values by its size, so these average to
    // sums / sentences and their ratio stays exact with a short last batch.
    rensa::report({{"correct", correct / static_cast<double>(b)}, {"total", total / static_cast<double>(b)}}, this);
    return loss;
  }
  using Link::forward;
};

std::string default_brown_dir() {
  if (const char* nltk = std::getenv("NLTK_DATA"); nltk != nullptr && *nltk != '\0') {
    return std::string(nltk) + "/corpora/brown";
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : ".") + "/nltk_data/corpora/brown";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Tag the Brown corpus's words with their parts of speech by a CRF (Chainer's POS example) with rensa"};
  app.option_defaults()->always_capture_default();
  std::string brown_dir = default_brown_dir(), out = "result/train_pos";
  int64_t batchsize = 30, epoch = 20, log_interval = 100, eval_interval = 1000;
  uint64_t seed = 0;
  int threads = 1;
  app.add_option("--brown-dir", brown_dir,
                 "NLTK's Brown corpus directory (nltk_data/corpora/brown: ca01 ... cr09), as "
                 "python3 -m nltk.downloader brown unpacks it");
  app.add_option("-b,--batchsize", batchsize, "Sentences per minibatch")->check(CLI::Range(1, 1000000));
  app.add_option("-e,--epoch", epoch, "Number of sweeps over the training sentences")->check(CLI::Range(1, 100000));
  app.add_option("--log-interval", log_interval, "Iterations per log entry (Chainer's example: 100)")
      ->check(CLI::Range(1, 1 << 30));
  app.add_option("--eval-interval", eval_interval, "Iterations between validations (Chainer's example: 1000)")
      ->check(CLI::Range(1, 1 << 30));
  app.add_option("-o,--out", out, "Directory for the log and snapshots");
  run_flags::add_seed(app, seed, "Seed of initialization and shuffling (the split is Chainer's, seed 0)");
  app.add_option("-t,--threads", threads, "Threads for the kernels")->check(CLI::Range(1, 1024));
  run_flags::Flags rf;
  run_flags::add_flags(app, rf);
  CLI11_PARSE(app, argc, argv);

  try {
    rensa::set_num_threads(threads);
    rensa::seed(seed);
    Corpus corpus = read_brown(brown_dir);
    const auto n = static_cast<int64_t>(corpus.sentences.size());
    if (n < 10) {
      throw rensa::ValueError("--brown-dir " + brown_dir + " holds too few sentences (" + std::to_string(n) +
                              "); at least 10 are needed for a tenth to validate on");
    }
    std::cout << "# of sentences: " << n << "\n# of words: " << corpus.words.size()
              << "\n# of pos: " << corpus.tags.size() << std::endl;
    const auto n_vocab = static_cast<int64_t>(corpus.words.size()), n_pos = static_cast<int64_t>(corpus.tags.size());
    auto data = std::make_shared<SentenceDataset>(std::move(corpus.sentences));
    auto [test, train] = rensa::datasets::split_dataset(data, n / 10, numpy_permutation(n, 0));

    CRF model(n_vocab, n_pos);
    rensa::optimizers::Adam optimizer;
    optimizer.setup(model);
    optimizer.add_hook(std::make_shared<rensa::optimizers::WeightDecay>(0.0001));

    rensa::iterators::SerialIterator train_iter(train, batchsize, {.seed = seed});
    rensa::iterators::SerialIterator test_iter(test, batchsize, {.repeat = false, .shuffle = false});
    rensa::training::StandardUpdater updater(train_iter, optimizer, {.converter = convert});
    rensa::training::Trainer trainer(updater, {epoch, "epoch"}, out);
    trainer.extend(E::Evaluator(test_iter, model, {.converter = convert}), {eval_interval, "iteration"});
    // Called every iteration (Chainer's example calls it every 100th only, so its entries hold one
    // iteration's values and miss the accuracies MicroAverage reports at an epoch's end).
    trainer.extend(E::LogReport({}, {log_interval, "iteration"}));
    trainer.extend(E::MicroAverage("main/correct", "main/total", "main/accuracy"));
    trainer.extend(E::MicroAverage("validation/main/correct", "validation/main/total", "validation/main/accuracy"));
    trainer.extend(E::PrintReport({"epoch", "main/loss", "validation/main/loss", "main/accuracy",
                                   "validation/main/accuracy", "elapsed_time"}),
                   {log_interval, "iteration"});
    trainer.extend(E::ProgressBar(std::nullopt, 10));
    run_flags::Run run("train_pos", trainer, rf);
    if (!run.resume(static_cast<double>(epoch))) return 0;
    return run.run();
  } catch (const rensa::Error& e) {
    std::cerr << "train_pos: " << e.what() << '\n';
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    std::cerr << "train_pos: " << e.what() << '\n';
    return 1;
  }
}
