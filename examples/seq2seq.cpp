// An NStepLSTM encoder-decoder (Chainer's examples/seq2seq) that learns to reverse strings of
// random digits of random lengths. Batches are lists of sequences of different lengths, as NStepLSTM
// takes them. Training feeds the decoder the target after a BOS symbol and asks for the target
// followed by EOS (teacher forcing); evaluation reports that loss per token and, decoding greedily
// from BOS until EOS, the sequence accuracy: the fraction of reversals reproduced exactly.
//   build/release/examples/seq2seq --epoch 20
//   build/release/examples/seq2seq --max-length 12 --unit 256 --train-size 50000
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "rensa/rensa.h"
#include "rensa/training.h"
#include "optimizer_flag.h"
#include "run_flags.h"

namespace F = rensa::functions;
namespace L = rensa::links;
namespace E = rensa::extensions;
using rensa::Array;
using rensa::Variable;

constexpr int32_t kEos = 10, kBos = 11;  // after the digits 0-9

// Pairs (digits, the same digits reversed), lengths uniform in [1, max_length].
class ReversalDataset : public rensa::datasets::Dataset {
 public:
  ReversalDataset(int64_t size, int64_t max_length, uint64_t seed) {
    std::mt19937_64 gen(seed);
    for (int64_t i = 0; i < size; ++i) {
      std::vector<int32_t> x(1 + gen() % static_cast<uint64_t>(max_length));
      for (auto& d : x) d = static_cast<int32_t>(gen() % 10);
      std::vector<int32_t> y(x.rbegin(), x.rend());
      pairs_.push_back({Array::from_vector(x), Array::from_vector(y)});
    }
  }
  int64_t size() const override { return static_cast<int64_t>(pairs_.size()); }
  rensa::datasets::Example get_example(int64_t i) const override { return pairs_.at(static_cast<size_t>(i)); }

 private:
  std::vector<rensa::datasets::Example> pairs_;
};

// Chainer's seq2seq convert: no stacking. The columns are the B sources, then the B targets.
std::vector<Array> convert(const rensa::iterators::Batch& batch, rensa::Device device) {
  std::vector<Array> out;
  for (int column : {0, 1}) {
    for (const auto& example : batch) out.push_back(example.at(static_cast<size_t>(column)).to(device));
  }
  return out;
}

std::vector<int32_t> ids(const Variable& x) {
  return x.array().astype(rensa::Dtype::int32).to_vector<int32_t>();
}

// Embeds every sequence with one lookup (Chainer's sequence_embed).
std::vector<Variable> sequence_embed(L::EmbedID& embed, const std::vector<std::vector<int32_t>>& seqs) {
  std::vector<int32_t> all;
  std::vector<int64_t> splits;
  for (const auto& s : seqs) {
    if (!all.empty()) splits.push_back(static_cast<int64_t>(all.size()));
    all.insert(all.end(), s.begin(), s.end());
  }
  return F::split_axis(embed(Array::from_vector(all)), splits, 0);
}

struct Seq2seq : rensa::Chain {
  L::EmbedID embed_x, embed_y;
  L::NStepLSTM encoder, decoder;
  L::Linear W;
  Seq2seq(int64_t n_layers, int64_t n_units, double dropout)
      : embed_x(10, n_units),
        embed_y(12, n_units),
        encoder(n_layers, n_units, n_units, dropout),
        decoder(n_layers, n_units, n_units, dropout),
        W(n_units, 11) {
    add_link("embed_x", embed_x);
    add_link("embed_y", embed_y);
    add_link("encoder", encoder);
    add_link("decoder", decoder);
    add_link("W", W);
  }

  // inputs: B sources then B targets. Reports and returns the mean cross entropy per target token.
  // The source is read in order (Chainer reverses it for translation): for a reversal the last digit
  // read is the first one to write.
  Variable forward(const std::vector<Variable>& inputs) override {
    const size_t batch = inputs.size() / 2;
    std::vector<std::vector<int32_t>> xs, ys_in;
    std::vector<int32_t> ys_out;
    for (size_t i = 0; i < batch; ++i) {
      xs.push_back(ids(inputs[i]));
      std::vector<int32_t> y = ids(inputs[batch + i]);
      ys_in.push_back({kBos});
      ys_in.back().insert(ys_in.back().end(), y.begin(), y.end());
      ys_out.insert(ys_out.end(), y.begin(), y.end());
      ys_out.push_back(kEos);
    }
    auto encoded = encoder(Variable(), Variable(), sequence_embed(embed_x, xs));
    auto decoded = decoder(encoded.hy, encoded.cy, sequence_embed(embed_y, ys_in));
    Variable loss = F::softmax_cross_entropy(W(F::concat(decoded.ys, 0)), Array::from_vector(ys_out));
    rensa::report("loss", loss, this);
    return loss;
  }
  using Link::forward;

  // Greedy decoding from BOS, at most max_length symbols each; the outputs stop before EOS.
  std::vector<std::vector<int32_t>> translate(const std::vector<std::vector<int32_t>>& xs, int64_t max_length) {
    auto no_backprop = rensa::no_backprop_mode();
    auto test_mode = rensa::using_config("train", false);
    const auto batch = static_cast<int64_t>(xs.size());
    auto state = encoder(Variable(), Variable(), sequence_embed(embed_x, xs));
    std::vector<int32_t> last(xs.size(), kBos);
    std::vector<std::vector<int32_t>> outs(xs.size());
    std::vector<bool> done(xs.size(), false);
    for (int64_t step = 0; step < max_length && std::count(done.begin(), done.end(), false) > 0; ++step) {
      auto decoded = decoder(state.hy, state.cy, F::split_axis(embed_y(Array::from_vector(last)), batch, 0));
      state.hy = decoded.hy;
      state.cy = decoded.cy;
      const auto best = F::argmax(W(F::concat(decoded.ys, 0)), 1).array().to_vector<int64_t>();
      for (size_t i = 0; i < xs.size(); ++i) {
        last[i] = static_cast<int32_t>(best[i]);
        done[i] = done[i] || last[i] == kEos;
        if (!done[i]) outs[i].push_back(last[i]);
      }
    }
    return outs;
  }

  // The evaluation of one batch: the loss, and "accuracy", the fraction of exact outputs.
  Variable evaluate(const std::vector<Variable>& inputs) {
    Variable loss = forward(inputs);
    const size_t batch = inputs.size() / 2;
    std::vector<std::vector<int32_t>> xs;
    size_t longest = 0;
    for (size_t i = 0; i < batch; ++i) {
      xs.push_back(ids(inputs[i]));
      longest = std::max(longest, xs.back().size());
    }
    const auto outs = translate(xs, static_cast<int64_t>(longest) + 1);
    double exact = 0;
    for (size_t i = 0; i < batch; ++i) exact += outs[i] == ids(inputs[batch + i]) ? 1 : 0;
    rensa::report({{"accuracy", exact / static_cast<double>(batch)}}, this);
    return loss;
  }
};

std::string digits(const std::vector<int32_t>& s) {
  std::string out;
  for (int32_t d : s) out.push_back(static_cast<char>('0' + d));
  return out;
}

int main(int argc, char** argv) {
  CLI::App app{"Train an NStepLSTM encoder-decoder to reverse digit strings (rensa)"};
  app.option_defaults()->always_capture_default();  // --help shows every default
  int64_t epoch = 20, batchsize = 64, unit = 128, layer = 1, train_size = 10000, test_size = 1000, max_length = 8;
  double dropout = 0.0;
  uint64_t seed = 0;
  int threads = 1;
  std::string out = "result/seq2seq";
  std::string optimizer_spec = "adam()";
  app.add_option("-e,--epoch", epoch, "Number of sweeps over the training set")->check(CLI::Range(1, 100000));
  app.add_option("-b,--batchsize", batchsize, "Sequence pairs per minibatch")->check(CLI::Range(1, 100000));
  app.add_option("-u,--unit", unit, "Units in the embeddings and LSTM layers")->check(CLI::Range(1, 100000));
  app.add_option("-l,--layer", layer, "LSTM layers of the encoder and of the decoder")->check(CLI::Range(1, 100));
  app.add_option("--train-size", train_size, "Generated training pairs")->check(CLI::Range(1, 10000000));
  app.add_option("--test-size", test_size, "Generated validation pairs")->check(CLI::Range(1, 10000000));
  app.add_option("--max-length", max_length, "Longest digit string (lengths are uniform from 1)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--dropout", dropout, "Dropout ratio between LSTM layers")->check(CLI::Range(0.0, 0.99));
  app.add_option("-o,--out", out, "Directory for the log and snapshots");
  app.add_option("--optimizer", optimizer_spec,
                 "Optimizer and its hyperparameters, as ChainerMN's seq2seq: NAME(ARGS), positional in Chainer's "
                 "order, then key=value; e.g. 'adam(0.002, beta2=0.99)', 'rmspropgraves(lr=1e-3)', 'smorms3()'");
  run_flags::add_seed(app, seed, "Seed of the data, initialization and shuffling");
  app.add_option("-t,--threads", threads, "Threads for the kernels")->check(CLI::Range(1, 1024));
  run_flags::Flags rf;
  run_flags::add_flags(app, rf);
  CLI11_PARSE(app, argc, argv);

  try {
    rensa::set_num_threads(threads);
    rensa::seed(seed);
    auto train = std::make_shared<ReversalDataset>(train_size, max_length, seed);
    auto test = std::make_shared<ReversalDataset>(test_size, max_length, seed + 1);
    Seq2seq model(layer, unit, dropout);
    const auto optimizer_ptr = optimizer_flag::make(optimizer_spec);
    rensa::optimizers::Optimizer& optimizer = *optimizer_ptr;
    optimizer.setup(model);

    rensa::iterators::SerialIterator train_iter(train, batchsize, {.seed = seed});
    rensa::iterators::SerialIterator test_iter(test, batchsize, {.repeat = false, .shuffle = false});
    rensa::training::StandardUpdater updater(train_iter, optimizer, {.converter = convert});
    rensa::training::Trainer trainer(updater, {epoch, "epoch"}, out);
    trainer.extend(E::Evaluator(test_iter, model, {.converter = convert, .eval_func = [&](const auto& inputs) {
                                                     return model.evaluate(inputs);
                                                   }}));
    trainer.extend(E::LogReport());
    trainer.extend(E::PrintReport(
        {"epoch", "iteration", "main/loss", "validation/main/loss", "validation/main/accuracy", "elapsed_time"}));
    trainer.extend(E::ProgressBar());
    run_flags::Run run("seq2seq", trainer, rf);
    if (!run.resume(static_cast<double>(epoch))) return 0;
    if (const int status = run.run(); status != 0) return status;

    std::vector<std::vector<int32_t>> xs;
    for (int64_t i = 0; i < std::min<int64_t>(3, test->size()); ++i) xs.push_back(ids(test->get_example(i)[0]));
    const auto outs = model.translate(xs, max_length + 1);
    for (size_t i = 0; i < xs.size(); ++i) std::cout << digits(xs[i]) << " -> " << digits(outs[i]) << '\n';
  } catch (const rensa::Error& e) {
    std::cerr << "seq2seq: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
