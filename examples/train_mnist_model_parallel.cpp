// Model parallelism (ChainerMN's train_mnist_model_parallel): one MLP split across the ranks of an
// MPI job. Rank 0 holds the first layer and the classifier's output; ranks 1..N-1 hold one hidden
// layer each, the last one also the output layer, and the activations go around 0 -> 1 -> ... -> 0.
// Only rank 0 reads data; the others train on an empty dataset of the same length, in step.
//   mpirun -n 2 build/release/examples/train_mnist_model_parallel --epoch 5
#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <iostream>

#include "rensa/mn.h"
#include "rensa/rensa.h"
#include "rensa/training.h"

namespace F = rensa::functions;
namespace L = rensa::links;
namespace E = rensa::extensions;

// Linear + ReLU, then (on the last rank) the output layer.
struct Piece : rensa::Chain {
  L::Linear hidden, output;
  bool last;
  Piece(int64_t units, bool last_piece) : hidden(units), output(10), last(last_piece) {
    add_link("hidden", hidden);
    if (last) add_link("output", output);
  }
  rensa::Variable forward(const rensa::Variable& x) override {
    rensa::Variable h = F::relu(hidden(x));
    return last ? output(h) : h;
  }
  using Link::forward;
};

// Rank 0's second component: the output of the last rank, as the model's output.
struct Identity : rensa::Link {
  rensa::Variable forward(const rensa::Variable& x) override { return x; }
  using Link::forward;
};

int main(int argc, char** argv) {
  CLI::App app{"Train an MLP split across MPI ranks on Fashion-MNIST (model parallelism)"};
  int64_t epoch = 20, batchsize = 100, unit = 1000, limit = 0;
  double timeout = -1;
  std::string out = "result", dataset_dir;
  app.add_option("-e,--epoch", epoch, "Number of sweeps over the training set")->check(CLI::Range(1, 100000));
  app.add_option("-b,--batchsize", batchsize, "Examples per minibatch")->check(CLI::Range(1, 60000));
  app.add_option("-u,--unit", unit, "Units in each hidden layer")->check(CLI::Range(1, 100000));
  app.add_option("-o,--out", out, "Directory for the log");
  app.add_option("--dataset-dir", dataset_dir, "Directory of MNIST-format IDX files (default: Fashion-MNIST)");
  app.add_option("--limit", limit, "Use only the first N training and test examples (0: all)")
      ->check(CLI::Range(int64_t{0}, int64_t{60000}));
  app.add_option("--timeout", timeout, "Seconds a rank may wait in one communication (0: never)")
      ->check(CLI::Range(0.0, 1e9));
  CLI11_PARSE(app, argc, argv);

  rensa::mn::CommunicatorOptions options;
  if (timeout >= 0) options.timeout = std::chrono::milliseconds(std::llround(timeout * 1000));
  auto comm = rensa::mn::create_communicator("flat", argc, argv, options);
  const int n = comm.size(), rank = comm.rank();
  if (n < 2) throw rensa::ValueError("train_mnist_model_parallel: run it on 2 or more ranks (mpirun -n 2 ...)");
  rensa::seed(0);

  auto [train, test] =
      dataset_dir.empty() ? rensa::datasets::get_fashion_mnist() : rensa::datasets::get_mnist(dataset_dir);
  if (limit > 0) {
    train = std::make_shared<rensa::datasets::SubDataset>(train, 0, std::min(limit, train->size()));
    test = std::make_shared<rensa::datasets::SubDataset>(test, 0, std::min(limit, test->size()));
  }
  auto model = std::make_shared<rensa::mn::MultiNodeChainList>(comm);
  std::shared_ptr<rensa::Link> target = model;  // what the optimizer trains and the evaluator runs
  if (rank == 0) {
    auto first = std::make_shared<rensa::Sequential>();
    first->add(std::make_shared<L::Linear>(unit)).add([](const rensa::Variable& x) { return F::relu(x); });
    model->add_link(first, std::nullopt, 1);                             // x -> rank 1
    model->add_link(std::make_shared<Identity>(), n - 1, std::nullopt);  // rank n-1 -> the output
    target = std::make_shared<L::Classifier>(model);
  } else {
    model->add_link(std::make_shared<Piece>(unit, rank == n - 1), rank - 1, (rank + 1) % n);
    // No data here: the updater calls the model with no inputs, and backward starts from the
    // delegate variable it returns. Same length, so every rank steps and evaluates in time.
    train = rensa::mn::create_empty_dataset(train);
    test = rensa::mn::create_empty_dataset(test);
  }
  // Each rank owns different parameters: a plain optimizer, no gradient averaging.
  rensa::optimizers::Adam optimizer;
  optimizer.setup(*target);

  rensa::iterators::SerialIterator train_iter(train, batchsize, {.seed = 0});
  rensa::iterators::SerialIterator test_iter(test, batchsize, {.repeat = false, .shuffle = false});
  rensa::training::StandardUpdater updater(train_iter, optimizer);
  rensa::training::Trainer trainer(updater, {epoch, "epoch"}, out);
  trainer.extend(E::Evaluator(test_iter, *target));
  if (rank == 0) {
    trainer.extend(E::LogReport());
    trainer.extend(E::PrintReport(
        {"epoch", "main/loss", "validation/main/loss", "main/accuracy", "validation/main/accuracy", "elapsed_time"}));
  }
  trainer.run();
  return 0;
}
