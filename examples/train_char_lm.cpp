// Trains a character-level LSTM language model on a text file with truncated backpropagation through
// time, as Chainer's PTB example (examples/ptb/train_ptb.py) does for words: a parallel sequential
// iterator reads the text at --batchsize evenly spaced offsets; the updater sums the loss of
// --bproplen steps, then cleargrads, backward, unchain_backward (the graph is cut but the LSTM states
// carry on), and one Adam update with gradient clipping (these parts, shared with train_ptb, are in
// rnnlm.h). The last 10% of the text is the validation set, read in one stream from a reset state.
// Perplexity is exp of the mean cross entropy per character.
// Dropout (0.2 by default; Chainer's example uses 0.5 on words) keeps the small default text from
// being memorized.
//   build/release/examples/train_char_lm --epoch 20
//   build/release/examples/train_char_lm --text book.txt --unit 256 --layer 2 --epoch 10
#include <CLI/CLI.hpp>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "rensa/rensa.h"
#include "rensa/training.h"
#include "rnnlm.h"
#include "run_flags.h"

namespace L = rensa::links;
namespace E = rensa::extensions;

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
    auto rnn = std::make_shared<rnnlm::RNNLM>(n_vocab, unit, layer, dropout);
    L::Classifier model(rnn, {.compute_accuracy = false});
    // Evaluation runs a copy (batch 1, its own states) so the training streams keep theirs.
    auto eval_rnn = std::make_shared<rnnlm::RNNLM>(n_vocab, unit, layer, dropout);
    L::Classifier eval_model(eval_rnn, {.compute_accuracy = false});

    rensa::optimizers::Adam optimizer(lr);
    optimizer.setup(model);
    optimizer.add_hook(std::make_shared<rensa::optimizers::GradientClipping>(gradclip));

    rnnlm::ParallelSequentialIterator train_iter(train, batchsize, true);
    rnnlm::ParallelSequentialIterator val_iter(val, 1, false);
    rnnlm::BPTTUpdater updater(train_iter, optimizer, bproplen);
    rensa::training::Trainer trainer(updater, {epoch, "epoch"}, out);
    trainer.extend(E::Evaluator(val_iter, eval_model, {.eval_hook = [&](E::Evaluator&) {
                                  eval_model.copyparams(model);
                                  eval_rnn->reset_state();
                                }}));
    trainer.extend(rnnlm::perplexity_log());
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
