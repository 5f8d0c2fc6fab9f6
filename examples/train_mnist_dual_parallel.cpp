// Model and data parallelism together (ChainerMN's train_mnist_dual_parallel): the ranks form pairs
// {0,1}, {2,3}, ...; each pair holds one MLP split in two (rank 0 of the pair: the first layer and
// the output; rank 1: a hidden layer and the output layer), and the pairs are data-parallel
// replicas: each trains on its shard and the replicas of each half average their gradients.
//   mpirun -n 4 build/release/examples/train_mnist_dual_parallel --epoch 5
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
  CLI::App app{"Train an MLP on Fashion-MNIST split across pairs of MPI ranks, the pairs data-parallel"};
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
  if (comm.size() % 2 != 0) {
    throw rensa::ValueError("train_mnist_dual_parallel: run it on an even number of ranks (mpirun -n 4 ...)");
  }
  // The model axis (a pair) and the data axis (the replicas of one half): ChainerMN's comm.split.
  auto model_comm = comm.split(comm.rank() / 2, comm.rank());
  auto data_comm = comm.split(comm.rank() % 2, comm.rank());
  rensa::seed(0);

  auto [train, test] =
      dataset_dir.empty() ? rensa::datasets::get_fashion_mnist() : rensa::datasets::get_mnist(dataset_dir);
  if (limit > 0) {
    train = std::make_shared<rensa::datasets::SubDataset>(train, 0, std::min(limit, train->size()));
    test = std::make_shared<rensa::datasets::SubDataset>(test, 0, std::min(limit, test->size()));
  }
  // Each pair trains on its shard (both ranks of a pair get shards of the same length).
  train = rensa::mn::scatter_dataset(train, data_comm, {.shuffle = true, .seed = 0});
  test = rensa::mn::scatter_dataset(test, data_comm);

  auto model = std::make_shared<rensa::mn::MultiNodeChainList>(model_comm);
  std::shared_ptr<rensa::Link> target = model;
  if (model_comm.rank() == 0) {
    auto first = std::make_shared<rensa::Sequential>();
    first->add(std::make_shared<L::Linear>(unit)).add([](const rensa::Variable& x) { return F::relu(x); });
    model->add_link(first, std::nullopt, 1);
    model->add_link(std::make_shared<Identity>(), 1, std::nullopt);
    target = std::make_shared<L::Classifier>(model);
  } else {
    model->add_link(std::make_shared<Piece>(unit, true), 0, 0);
    train = rensa::mn::create_empty_dataset(train);
    test = rensa::mn::create_empty_dataset(test);
  }
  // The replicas of each half average their gradients.
  auto optimizer = rensa::mn::create_multi_node_optimizer(std::make_unique<rensa::optimizers::Adam>(), data_comm);
  optimizer->setup(*target);

  rensa::iterators::SerialIterator train_iter(train, batchsize, {.seed = static_cast<uint64_t>(data_comm.rank())});
  rensa::iterators::SerialIterator test_iter(test, batchsize, {.repeat = false, .shuffle = false});
  rensa::training::StandardUpdater updater(train_iter, *optimizer);
  rensa::training::Trainer trainer(updater, {epoch, "epoch"}, out);
  trainer.extend(rensa::mn::create_multi_node_evaluator(E::Evaluator(test_iter, *target), data_comm));
  if (comm.rank() == 0) {
    trainer.extend(E::LogReport());
    trainer.extend(E::PrintReport(
        {"epoch", "main/loss", "validation/main/loss", "main/accuracy", "validation/main/accuracy", "elapsed_time"}));
  }
  trainer.run();
  return 0;
}
