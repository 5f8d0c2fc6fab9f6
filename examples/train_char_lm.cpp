// Trains a character-level LSTM language model on a text file with truncated backpropagation through
// time, as Chainer's PTB example (examples/ptb/train_ptb.py) does for words: a parallel sequential
// iterator reads the text at --batchsize evenly spaced offsets; the updater sums the loss of
// --bproplen steps, then cleargrads, backward, unchain_backward (the graph is cut but the LSTM states
// carry on), and one Adam update with gradient clipping. The last 10% of the text is the validation
// set, read in one stream from a reset state. Perplexity is exp of the mean cross entropy per character.
// Dropout (0.2 by default; Chainer's example uses 0.5 on words) keeps the small default text from
// being memorized.
//   build/release/examples/train_char_lm --epoch 20
//   build/release/examples/train_char_lm --text book.txt --unit 256 --layer 2 --epoch 10
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "rensa/rensa.h"
#include "rensa/training.h"
#include "run_flags.h"

namespace F = rensa::functions;
namespace L = rensa::links;
namespace E = rensa::extensions;
using rensa::Variable;

// Chainer's ParallelSequentialIterator: batch row i reads position (offset_i + iteration) mod length
// with offset_i = i * length / batch_size; each example is (character, next character).
class ParallelSequentialIterator : public rensa::iterators::Iterator {
 public:
  ParallelSequentialIterator(std::shared_ptr<const std::vector<int32_t>> text, int64_t batch_size, bool repeat)
      : text_(std::move(text)), batch_size_(batch_size), repeat_(repeat) {}

  std::optional<rensa::iterators::Batch> next() override {
    const auto length = static_cast<int64_t>(text_->size());
    if (!repeat_ && iteration_ * batch_size_ >= length) return std::nullopt;
    previous_epoch_detail_ = epoch_detail();
    rensa::iterators::Batch batch;
    for (int64_t i = 0; i < batch_size_; ++i) {
      const int64_t offset = i * length / batch_size_;
      batch.push_back({char_at(offset + iteration_), char_at(offset + iteration_ + 1)});
    }
    ++iteration_;
    const int64_t epoch = iteration_ * batch_size_ / length;
    is_new_epoch_ = epoch_ < epoch;
    epoch_ = std::max(epoch_, epoch);
    return batch;
  }
  int64_t epoch() const override { return epoch_; }
  double epoch_detail() const override {
    return static_cast<double>(iteration_ * batch_size_) / static_cast<double>(text_->size());
  }
  std::optional<double> previous_epoch_detail() const override {
    return previous_epoch_detail_ < 0 ? std::nullopt : std::optional<double>(previous_epoch_detail_);
  }
  bool is_new_epoch() const override { return is_new_epoch_; }
  int64_t batch_size() const override { return batch_size_; }
  void reset() override {
    iteration_ = epoch_ = 0;
    is_new_epoch_ = false;
    previous_epoch_detail_ = -1;
  }
  void serialize(rensa::serializers::Serializer& s) override {
    s.scalar("iteration", iteration_);
    s.scalar("epoch", epoch_);
    s.scalar("is_new_epoch", is_new_epoch_);
    s.scalar("previous_epoch_detail", previous_epoch_detail_);
  }

 private:
  rensa::Array char_at(int64_t i) const {
    return rensa::Array::scalar((*text_)[static_cast<size_t>(i % static_cast<int64_t>(text_->size()))],
                                rensa::Dtype::int32);
  }
  std::shared_ptr<const std::vector<int32_t>> text_;
  int64_t batch_size_;
  bool repeat_;
  int64_t iteration_ = 0, epoch_ = 0;
  bool is_new_epoch_ = false;
  double previous_epoch_detail_ = -1;
};

// Chainer's BPTTUpdater: one update per --bproplen steps of the iterator.
class BPTTUpdater : public rensa::training::StandardUpdater {
 public:
  BPTTUpdater(rensa::iterators::Iterator& iterator, rensa::optimizers::Optimizer& optimizer, int64_t bprop_len)
      : StandardUpdater(iterator, optimizer), bprop_len_(bprop_len) {}

 protected:
  void update_core() override {
    rensa::iterators::Iterator& iterator = get_iterator("main");
    rensa::optimizers::Optimizer& optimizer = get_optimizer("main");
    Variable loss;
    for (int64_t i = 0; i < bprop_len_; ++i) {
      const std::vector<rensa::Array> xt = converter()(*iterator.next(), device());
      const Variable step = optimizer.target()->forward(std::vector<Variable>(xt.begin(), xt.end()));
      loss = loss.is_null() ? step : loss + step;
    }
    optimizer.target()->cleargrads();
    loss.backward();
    loss.unchain_backward();  // the next segment starts from the LSTM states, not through them
    optimizer.update();
  }

 private:
  int64_t bprop_len_;
};

// EmbedID -> LSTM x n_layers -> Linear, every parameter drawn uniformly from [-0.1, 0.1) as in
// Chainer's example.
struct RNNLM : rensa::Chain {
  L::EmbedID embed;
  std::vector<std::unique_ptr<L::LSTM>> lstms;
  L::Linear out;
  double dropout;
  RNNLM(int64_t n_vocab, int64_t n_units, int64_t n_layers, double dropout_ratio)
      : embed(n_vocab, n_units), out(n_units, n_vocab), dropout(dropout_ratio) {
    add_link("embed", embed);
    for (int64_t k = 0; k < n_layers; ++k) {
      lstms.push_back(std::make_unique<L::LSTM>(n_units, n_units));
      add_link(std::string("l").append(std::to_string(k + 1)), *lstms.back());
    }
    add_link("out", out);
    for (const auto& [name, p] : namedparams()) p.set_array(rensa::random::uniform(p.shape(), -0.1, 0.1, p.dtype()));
  }
  void reset_state() {
    for (auto& lstm : lstms) lstm->reset_state();
  }
  Variable forward(const Variable& x) override {
    Variable h = embed(x);
    for (auto& lstm : lstms) h = (*lstm)(F::dropout(h, dropout));
    return out(F::dropout(h, dropout));
  }
  using Link::forward;
};

int main(int argc, char** argv) {
  CLI::App app{"Train a character-level LSTM language model with truncated BPTT (rensa)"};
  app.option_defaults()->always_capture_default();  // --help shows every default
  std::string text_path = "/usr/share/common-licenses/GPL-3", out = "result/train_char_lm";
  int64_t epoch = 20, batchsize = 32, bproplen = 35, unit = 128, layer = 2;
  double lr = 0.005, gradclip = 5.0, dropout = 0.2;
  uint64_t seed = 0;
  int threads = 1;
  app.add_option("--text", text_path, "Plain-text file to model (bytes are the characters)");
  app.add_option("-e,--epoch", epoch, "Number of sweeps over the training text")->check(CLI::Range(1, 100000));
  app.add_option("-b,--batchsize", batchsize, "Streams read in parallel")->check(CLI::Range(1, 100000));
  app.add_option("-l,--bproplen", bproplen, "Steps to backpropagate through per update")->check(CLI::Range(1, 100000));
  app.add_option("-u,--unit", unit, "Units in the embedding and each LSTM layer")->check(CLI::Range(1, 100000));
  app.add_option("--layer", layer, "LSTM layers")->check(CLI::Range(1, 100));
  app.add_option("--lr", lr, "Adam's alpha")->check(CLI::PositiveNumber);
  app.add_option("-c,--gradclip", gradclip, "Clip the gradients' L2 norm to this")->check(CLI::PositiveNumber);
  app.add_option("--dropout", dropout, "Dropout ratio on each layer's input")->check(CLI::Range(0.0, 0.99));
  app.add_option("-o,--out", out, "Directory for the log and snapshots");
  run_flags::add_seed(app, seed, "Seed of initialization and dropout");
  app.add_option("-t,--threads", threads, "Threads for the kernels")->check(CLI::Range(1, 1024));
  run_flags::Flags rf;
  run_flags::add_flags(app, rf);
  CLI11_PARSE(app, argc, argv);

  std::string text;
  {
    std::ifstream file(text_path, std::ios::binary);
    std::error_code ec;
    if (!file || std::filesystem::is_directory(text_path, ec)) {
      std::cerr << "train_char_lm: cannot read --text " << text_path << ": "
                << (file ? "it is a directory" : std::strerror(errno)) << '\n';
      return 1;
    }
    std::ostringstream bytes;
    bytes << file.rdbuf();
    text = bytes.str();
  }
  // The first 90% trains, the rest validates; every row of a batch needs a whole BPTT window.
  const auto n_val = static_cast<int64_t>(text.size()) / 10;
  const auto n_train = static_cast<int64_t>(text.size()) - n_val;
  if (n_train < batchsize * bproplen || n_val < 2) {
    std::cerr << "train_char_lm: --text " << text_path << " is too short: " << text.size()
              << " bytes; its first 90% must hold --batchsize x --bproplen = " << batchsize * bproplen
              << " and the rest at least 2\n";
    return 1;
  }
  // One id per byte that occurs anywhere in the text (validation included), in byte order.
  std::array<int32_t, 256> id{};
  id.fill(-1);
  for (unsigned char c : text) id[c] = 0;
  int32_t n_vocab = 0;
  for (auto& v : id) {
    if (v == 0) v = n_vocab++;
  }
  auto train = std::make_shared<std::vector<int32_t>>(), val = std::make_shared<std::vector<int32_t>>();
  for (int64_t i = 0; i < static_cast<int64_t>(text.size()); ++i) {
    (i < n_train ? train : val)->push_back(id[static_cast<unsigned char>(text[static_cast<size_t>(i)])]);
  }
  std::cout << "train_char_lm: " << text_path << ": " << n_train << " characters for training, " << n_val
            << " for validation, vocabulary of " << n_vocab << std::endl;

  try {
    rensa::set_num_threads(threads);
    rensa::seed(seed);
    auto rnn = std::make_shared<RNNLM>(n_vocab, unit, layer, dropout);
    L::Classifier model(rnn, {.compute_accuracy = false});
    // Evaluation runs a copy (batch 1, its own states) so the training streams keep theirs.
    auto eval_rnn = std::make_shared<RNNLM>(n_vocab, unit, layer, dropout);
    L::Classifier eval_model(eval_rnn, {.compute_accuracy = false});

    rensa::optimizers::Adam optimizer(lr);
    optimizer.setup(model);
    optimizer.add_hook(std::make_shared<rensa::optimizers::GradientClipping>(gradclip));

    ParallelSequentialIterator train_iter(train, batchsize, true);
    ParallelSequentialIterator val_iter(val, 1, false);
    BPTTUpdater updater(train_iter, optimizer, bproplen);
    rensa::training::Trainer trainer(updater, {epoch, "epoch"}, out);
    trainer.extend(E::Evaluator(val_iter, eval_model, {.eval_hook = [&](E::Evaluator&) {
                                  eval_model.copyparams(model);
                                  eval_rnn->reset_state();
                                }}));
    E::LogReport log;
    log.set_postprocess([](rensa::training::Observation& entry) {
      entry["perplexity"] = std::exp(entry.at("main/loss"));
      if (entry.count("validation/main/loss") != 0) entry["val_perplexity"] = std::exp(entry["validation/main/loss"]);
    });
    trainer.extend(log);
    trainer.extend(E::PrintReport({"epoch", "iteration", "perplexity", "val_perplexity", "elapsed_time"}));
    trainer.extend(E::ProgressBar());
    run_flags::Run run("train_char_lm", trainer, rf);
    if (!run.resume(static_cast<double>(epoch))) return 0;
    return run.run();
  } catch (const rensa::Error& e) {
    std::cerr << "train_char_lm: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
