// What the model-parallel examples share (train_mnist_model_parallel, train_mnist_dual_parallel,
// parallel_convolution): their flags, the communicator they make from them, the data, the log, and
// the pieces of the split MLP.
#pragma once
#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <utility>

#include "rensa/mn.h"
#include "rensa/rensa.h"
#include "rensa/training.h"
#include "run_flags.h"

namespace model_parallel {

struct Flags {
  int64_t epoch = 20, batchsize = 100, unit = 1000, limit = 0;
  double timeout = -1;
  std::string out, dataset_dir;
  run_flags::Flags run;
};

/// Adds --epoch, --batchsize, --unit (described by `unit_help`), --out (default result/<program>: each
/// example its own directory), --dataset-dir, --limit and --timeout.
inline void add_flags(CLI::App& app, Flags& f, const char* program, const char* unit_help) {
  f.out = std::string("result/") + program;
  app.add_option("-e,--epoch", f.epoch, "Number of sweeps over the training set")->check(CLI::Range(1, 100000));
  app.add_option("-b,--batchsize", f.batchsize, "Examples per minibatch")->check(CLI::Range(1, 60000));
  app.add_option("-u,--unit", f.unit, unit_help)->check(CLI::Range(1, 100000));
  app.add_option("-o,--out", f.out, "Directory for the log");
  app.add_option("--dataset-dir", f.dataset_dir, "Directory of MNIST-format IDX files (default: Fashion-MNIST)");
  app.add_option("--limit", f.limit, "Use only the first N training and test examples (0: all)")
      ->check(CLI::Range(int64_t{0}, int64_t{60000}));
  app.add_option("--timeout", f.timeout, "Seconds a rank may wait in one communication (0: never)")
      ->check(CLI::Range(0.0, 1e9));
  run_flags::add_flags(app, f.run);
}

/// The "flat" communicator over every rank, with the --timeout given.
inline rensa::mn::Communicator communicator(const Flags& f, int argc, char** argv) {
  rensa::mn::CommunicatorOptions options;
  if (f.timeout >= 0) options.timeout = std::chrono::milliseconds(std::llround(f.timeout * 1000));
  return rensa::mn::create_communicator("flat", argc, argv, options);
}

/// Fashion-MNIST (or the IDX files of --dataset-dir), cut to --limit examples.
inline std::pair<rensa::datasets::DatasetPtr, rensa::datasets::DatasetPtr> datasets(const Flags& f) {
  auto [train, test] =
      f.dataset_dir.empty() ? rensa::datasets::get_fashion_mnist() : rensa::datasets::get_mnist(f.dataset_dir);
  if (f.limit > 0) {
    train = std::make_shared<rensa::datasets::SubDataset>(train, 0, std::min(f.limit, train->size()));
    test = std::make_shared<rensa::datasets::SubDataset>(test, 0, std::min(f.limit, test->size()));
  }
  return {train, test};
}

/// LogReport, PrintReport of loss and accuracy, and a progress bar (on the rank that logs).
inline void extend_log(rensa::training::Trainer& trainer) {
  trainer.extend(rensa::extensions::LogReport());
  trainer.extend(rensa::extensions::PrintReport(
      {"epoch", "main/loss", "validation/main/loss", "main/accuracy", "validation/main/accuracy", "elapsed_time"}));
  trainer.extend(rensa::extensions::ProgressBar());
}

/// Snapshots, --resume and the reaction to signals (run_flags::Run), then training. Returns main's
/// status.
inline int run(const char* program, rensa::training::Trainer& trainer, const Flags& f,
               const rensa::mn::Communicator& comm) {
  run_flags::Run run(program, trainer, f.run, comm);
  if (!run.resume(static_cast<double>(f.epoch))) return 0;
  return run.run();
}

/// A hidden layer of the split MLP: Linear + ReLU, then, on the last rank, the output layer.
struct Piece : rensa::Chain {
  rensa::links::Linear hidden, output;
  bool last;
  Piece(int64_t units, bool last_piece) : hidden(units), output(10), last(last_piece) {
    add_link("hidden", hidden);
    if (last) add_link("output", output);
  }
  rensa::Variable forward(const rensa::Variable& x) override {
    rensa::Variable h = rensa::functions::relu(hidden(x));
    return last ? output(h) : h;
  }
  using Link::forward;
};

/// The first rank's last component: what the last rank sends back, as the model's output.
struct Identity : rensa::Link {
  rensa::Variable forward(const rensa::Variable& x) override { return x; }
  using Link::forward;
};

/// The first rank's first component: Linear + ReLU.
inline std::shared_ptr<rensa::Link> first_layer(int64_t units) {
  auto first = std::make_shared<rensa::Sequential>();
  first->add(std::make_shared<rensa::links::Linear>(units)).add([](const rensa::Variable& x) {
    return rensa::functions::relu(x);
  });
  return first;
}

}  // namespace model_parallel
