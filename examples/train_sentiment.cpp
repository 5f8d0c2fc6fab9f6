// Chainer's sentiment example (examples/sentiment/train_sentiment.py): Socher's simple recursive
// neural network over the parse trees of the Stanford Sentiment Treebank. A leaf is its word's
// embedding, an inner node tanh(Linear(concat(left, right))), and every node is classified into
// --label sentiment classes; the loss is the sum of the nodes' cross entropies.
//   build/release/examples/train_sentiment --dataset-dir trees --epoch 400
// The directory holds train.txt, dev.txt and test.txt, one tree per line as "(3 (2 It) (4 (2 's)
// (2 good)))": the trees/ folder of https://nlp.stanford.edu/sentiment/trainDevTestTrees_PTB.zip
// (nothing is downloaded). Writes the log and snapshots to --out; main/accuracy and
// validation/main/accuracy are over all nodes, validation/main/root_accuracy over whole sentences.
// When training ends it prints the test set's node and root accuracy, as Chainer's does.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <unordered_map>

#include "rensa/rensa.h"
#include "rensa/training.h"
#include "run_flags.h"

namespace F = rensa::functions;
namespace L = rensa::links;
namespace E = rensa::extensions;
using rensa::Array;
using rensa::Variable;

namespace {

// A tree is an int32 array (nodes, 4) in post-order (children before their parent, the root last):
// label, word id (-1 for an inner node), left child's row, right child's row (-1 for a leaf).
enum Column { kLabel, kWord, kLeft, kRight };

// Chainer's SexpParser and convert_tree in one, strict: each node is "(label word)" or
// "(label subtree subtree)", and anything else is an error naming the file and line.
class TreeReader {
 public:
  TreeReader(std::unordered_map<std::string, int32_t>& vocab, int32_t n_label) : vocab_(vocab), n_label_(n_label) {}
  std::vector<Array> read(const std::string& path, int64_t max_trees) {
    std::ifstream f(path);
    std::error_code ec;
    if (!f || std::filesystem::is_directory(path, ec)) {
      throw rensa::IOError("cannot read " + path +
                           ": expected the Stanford Sentiment Treebank's trees (train.txt, dev.txt, test.txt from "
                           "https://nlp.stanford.edu/sentiment/trainDevTestTrees_PTB.zip) in --dataset-dir");
    }
    std::vector<Array> trees;
    std::string line;
    for (int64_t number = 1; (max_trees == 0 || std::ssize(trees) < max_trees) && std::getline(f, line); ++number) {
      where_ = path + ":" + std::to_string(number) + ": ";
      tokenize(line);
      if (tokens_.empty()) continue;  // blank lines (a trailing one) carry no tree
      rows_.clear();
      pos_ = 0;
      parse(0);
      if (pos_ < tokens_.size()) fail("unbalanced brackets: '" + tokens_[pos_] + "' after the tree's closing ')'");
      Array tree = Array::from_vector(rows_, {std::ssize(rows_) / 4, 4});
      trees.push_back(tree);
    }
    if (trees.empty()) throw rensa::ValueError(path + " holds no trees");
    return trees;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw rensa::ValueError(where_ + what); }
  void tokenize(const std::string& line) {
    tokens_.clear();
    for (size_t i = 0; i < line.size();) {
      if (std::isspace(static_cast<unsigned char>(line[i]))) {
        ++i;
      } else if (line[i] == '(' || line[i] == ')') {
        tokens_.emplace_back(1, line[i++]);
      } else {
        const size_t end = line.find_first_of("() \t\r\n", i);
        tokens_.push_back(line.substr(i, end - i));
        i = end == std::string::npos ? line.size() : end;
      }
    }
  }
  // Parses the node at pos_ into rows_ and returns its row.
  int32_t parse(int depth) {
    if (depth > 10000) fail("the tree is nested too deeply");
    if (tokens_[pos_] != "(") fail("expected '(' where '" + tokens_[pos_] + "' is");
    if (++pos_ >= tokens_.size() || tokens_[pos_] == "(" || tokens_[pos_] == ")") fail("a node lacks its label");
    const std::string& label = tokens_[pos_++];
    if (label.size() != 1 || label[0] < '0' || label[0] >= '0' + n_label_) {
      fail("label '" + label + "' is not one of 0-" + std::to_string(n_label_ - 1));
    }
    std::vector<int32_t> children;
    std::vector<std::string> words;
    while (true) {
      if (pos_ >= tokens_.size()) fail("unbalanced brackets: a ')' is missing");
      if (tokens_[pos_] == ")") break;
      if (tokens_[pos_] == "(") {
        children.push_back(parse(depth + 1));
      } else {
        words.push_back(tokens_[pos_++]);
      }
    }
    ++pos_;
    if (!(words.size() == 1 && children.empty()) && !(words.empty() && children.size() == 2)) {
      fail("a node has " + std::to_string(words.size()) + " words and " + std::to_string(children.size()) +
           " subtrees; it must have 1 word or 2 subtrees");
    }
    int32_t word = -1, left = -1, right = -1;
    if (!words.empty()) {
      word = vocab_.emplace(words[0], static_cast<int32_t>(vocab_.size())).first->second;
    } else {
      left = children[0];
      right = children[1];
    }
    rows_.insert(rows_.end(), {label[0] - '0', word, left, right});
    return static_cast<int32_t>(rows_.size() / 4 - 1);
  }
  std::unordered_map<std::string, int32_t>& vocab_;
  int32_t n_label_;
  std::string where_;
  std::vector<std::string> tokens_;
  size_t pos_ = 0;
  std::vector<int32_t> rows_;
};

// The trees as a dataset of one-column examples, batched as one array per tree (trees differ in size).
struct TreeDataset : rensa::datasets::Dataset {
  std::vector<Array> trees;
  explicit TreeDataset(std::vector<Array> t) : trees(std::move(t)) {}
  int64_t size() const override { return std::ssize(trees); }
  rensa::datasets::Example get_example(int64_t i) const override { return {trees.at(static_cast<size_t>(i))}; }
};
std::vector<Array> convert(const rensa::iterators::Batch& batch, rensa::Device) {
  std::vector<Array> arrays;
  for (const auto& example : batch) arrays.push_back(example.at(0));
  return arrays;
}

struct Counts {
  int64_t correct = 0, total = 0, root_correct = 0, roots = 0;
};

// Chainer's RecursiveNet. The nodes are composed one by one as there; the words of a batch are
// embedded in one call and its nodes classified in one call, which gives the same sums.
struct RecursiveNet : rensa::Chain {
  L::EmbedID embed;
  L::Linear l, w;
  RecursiveNet(int64_t n_vocab, int64_t n_units, int64_t n_label)
      : embed(n_vocab, n_units), l(n_units * 2, n_units), w(n_units, n_label) {
    add_link("embed", embed);
    add_link("l", l);
    add_link("w", w);
  }
  // The summed loss of the trees; adds their correct nodes and roots to `counts`.
  Variable loss(const std::vector<Variable>& trees, Counts& counts) {
    std::vector<int32_t> words, labels;
    for (const Variable& tree : trees) {
      const std::vector<int32_t> rows = tree.array().to_vector<int32_t>();
      for (size_t i = 0; i < rows.size(); i += 4) {
        labels.push_back(rows[i + kLabel]);
        if (rows[i + kWord] >= 0) words.push_back(rows[i + kWord]);
      }
    }
    const auto n_words = std::ssize(words);
    const std::vector<Variable> leaves = F::split_axis(embed(Variable(Array::from_vector(words))), n_words, 0);
    std::vector<Variable> nodes;
    std::vector<size_t> roots;
    size_t leaf = 0;
    for (const Variable& tree : trees) {
      const std::vector<int32_t> rows = tree.array().to_vector<int32_t>();
      const size_t base = nodes.size();
      for (size_t i = 0; i < rows.size(); i += 4) {
        if (rows[i + kWord] >= 0) {
          nodes.push_back(leaves[leaf++]);
        } else {
          const Variable& left = nodes[base + static_cast<size_t>(rows[i + kLeft])];
          const Variable& right = nodes[base + static_cast<size_t>(rows[i + kRight])];
          nodes.push_back(F::tanh(l(F::concat({left, right}, 1))));
        }
      }
      roots.push_back(nodes.size() - 1);
    }
    const Variable y = w(F::concat(nodes, 0));
    const Array t = Array::from_vector(labels);
    Variable loss = F::sum(F::softmax_cross_entropy(y, t, {.reduce = "no"}));
    const std::vector<float> scores = y.array().astype(rensa::Dtype::float32).to_vector<float>();
    const int64_t n_label = y.shape()[1];
    std::vector<bool> correct(labels.size());
    for (size_t i = 0; i < labels.size(); ++i) {
      const auto row = scores.begin() + static_cast<std::ptrdiff_t>(i) * n_label;
      correct[i] = std::max_element(row, row + n_label) - row == labels[i];
      counts.correct += correct[i];
    }
    counts.total += std::ssize(labels);
    for (size_t r : roots) counts.root_correct += correct[r];
    counts.roots += std::ssize(roots);
    return loss;
  }
  // Reports loss (summed over the batch, as Chainer's), and the correct and total nodes and the
  // correct roots per tree: the evaluator's mean over trees of these keeps their ratios exact.
  Variable forward(const std::vector<Variable>& trees) override {
    Counts c;
    Variable loss_value = loss(trees, c);
    const double n = static_cast<double>(trees.size());
    rensa::report("loss", loss_value, this);
    rensa::report({{"correct", static_cast<double>(c.correct) / n},
                   {"total", static_cast<double>(c.total) / n},
                   {"root_accuracy", static_cast<double>(c.root_correct) / n}},
                  this);
    return loss_value;
  }
  using Link::forward;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Sentiment of the Stanford Sentiment Treebank's parse trees with a recursive network (rensa)"};
  app.option_defaults()->always_capture_default();
  std::string dataset_dir = "trees", out = "result/train_sentiment";
  int64_t epoch = 400, unit = 30, batchsize = 25, label = 5, epocheval = 5;
  bool test = false;
  uint64_t seed = 0;
  int threads = 1;
  app.add_option("--dataset-dir", dataset_dir,
                 "Directory of train.txt, dev.txt, test.txt (the trees/ folder of "
                 "https://nlp.stanford.edu/sentiment/trainDevTestTrees_PTB.zip)");
  app.add_option("-e,--epoch", epoch, "Number of sweeps over the training trees")->check(CLI::Range(1, 100000));
  app.add_option("-u,--unit", unit, "Units of the word and node vectors")->check(CLI::Range(1, 100000));
  app.add_option("-b,--batchsize", batchsize, "Trees per minibatch")->check(CLI::Range(1, 1000000));
  app.add_option("-l,--label", label, "Number of sentiment labels (the trees' labels are 0 to label - 1)")
      ->check(CLI::Range(2, 10));
  app.add_option("-p,--epocheval", epocheval, "Epochs between evaluations on dev.txt")->check(CLI::Range(1, 100000));
  app.add_flag("--test", test, "Read only the first 10 trees of each file (a quick check)");
  app.add_option("-o,--out", out, "Directory for the log and snapshots");
  run_flags::add_seed(app, seed, "Seed of initialization and of the order of the trees");
  app.add_option("-t,--threads", threads, "Threads for the kernels")->check(CLI::Range(1, 1024));
  run_flags::Flags rf;
  run_flags::add_flags(app, rf);
  CLI11_PARSE(app, argc, argv);

  try {
    rensa::set_num_threads(threads);
    rensa::seed(seed);
    std::unordered_map<std::string, int32_t> vocab;  // over all three files, as Chainer's
    TreeReader reader(vocab, static_cast<int32_t>(label));
    const int64_t max_trees = test ? 10 : 0;
    auto train = std::make_shared<TreeDataset>(reader.read(dataset_dir + "/train.txt", max_trees));
    auto dev = std::make_shared<TreeDataset>(reader.read(dataset_dir + "/dev.txt", max_trees));
    const std::vector<Array> test_trees = reader.read(dataset_dir + "/test.txt", max_trees);
    std::cout << "train_sentiment: " << train->size() << " training trees, " << dev->size() << " dev, "
              << test_trees.size() << " test; vocabulary of " << vocab.size() << std::endl;

    RecursiveNet model(std::ssize(vocab), unit, label);
    rensa::optimizers::AdaGrad optimizer(0.1);
    optimizer.setup(model);
    optimizer.add_hook(std::make_shared<rensa::optimizers::WeightDecay>(0.0001));

    rensa::iterators::SerialIterator train_iter(train, batchsize, {.seed = seed});
    rensa::iterators::SerialIterator dev_iter(dev, batchsize, {.repeat = false, .shuffle = false});
    rensa::training::StandardUpdater updater(train_iter, optimizer, {.converter = convert});
    rensa::training::Trainer trainer(updater, {epoch, "epoch"}, out);
    trainer.extend(E::Evaluator(dev_iter, model, {.converter = convert}), {epocheval, "epoch"});
    trainer.extend(E::MicroAverage("main/correct", "main/total", "main/accuracy"));
    trainer.extend(E::MicroAverage("validation/main/correct", "validation/main/total", "validation/main/accuracy"));
    trainer.extend(E::LogReport());
    trainer.extend(E::PrintReport({"epoch", "main/loss", "validation/main/loss", "main/accuracy",
                                   "validation/main/accuracy", "validation/main/root_accuracy", "elapsed_time"}));
    trainer.extend(E::ProgressBar(std::nullopt, 10));
    run_flags::Run run("train_sentiment", trainer, rf);
    if (!run.resume(static_cast<double>(epoch))) return 0;
    const int status = run.run();
    if (status != 0) return status;

    // Chainer's evaluate() on the test trees.
    Counts c;
    {
      auto train_off = rensa::using_config("train", false);
      auto no_backprop = rensa::no_backprop_mode();
      for (size_t i = 0; i < test_trees.size(); i += static_cast<size_t>(batchsize)) {
        const auto end = std::min(test_trees.size(), i + static_cast<size_t>(batchsize));
        model.loss(std::vector<Variable>(test_trees.begin() + static_cast<std::ptrdiff_t>(i),
                                         test_trees.begin() + static_cast<std::ptrdiff_t>(end)),
                   c);
      }
    }
    std::cout << "Test evaluation\n" << std::fixed << std::setprecision(2);
    std::cout << " Node accuracy: " << 100.0 * static_cast<double>(c.correct) / static_cast<double>(c.total) << " % ("
              << c.correct << "/" << c.total << ")\n";
    std::cout << " Root accuracy: " << 100.0 * static_cast<double>(c.root_correct) / static_cast<double>(c.roots)
              << " % (" << c.root_correct << "/" << c.roots << ")\n";
    return 0;
  } catch (const rensa::Error& e) {
    std::cerr << "train_sentiment: " << e.what() << '\n';
    return 1;
  }
}
