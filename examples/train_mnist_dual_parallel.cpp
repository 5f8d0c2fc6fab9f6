// Model and data parallelism together (ChainerMN's train_mnist_dual_parallel): the ranks form pairs
// {0,1}, {2,3}, ...; each pair holds one MLP split in two (rank 0 of the pair: the first layer and
// the output; rank 1: a hidden layer and the output layer), and the pairs are data-parallel
// replicas: each trains on its shard and the replicas of each half average their gradients.
//   mpirun -n 4 build/release/examples/train_mnist_dual_parallel --epoch 5
#include "model_parallel_common.h"

namespace E = rensa::extensions;
using model_parallel::Identity;
using model_parallel::Piece;

int main(int argc, char** argv) {
  CLI::App app{"Train an MLP on Fashion-MNIST split across pairs of MPI ranks, the pairs data-parallel"};
  app.option_defaults()->always_capture_default();  // --help shows every default
  model_parallel::Flags f;
  model_parallel::add_flags(app, f, "train_mnist_dual_parallel", "Units in each hidden layer");
  CLI11_PARSE(app, argc, argv);

  auto comm = model_parallel::communicator(f, argc, argv);
  if (comm.size() % 2 != 0) {
    throw rensa::ValueError("train_mnist_dual_parallel: run it on an even number of ranks (mpirun -n 4 ...)");
  }
  // The model axis (a pair) and the data axis (the replicas of one half): ChainerMN's comm.split.
  auto model_comm = comm.split(comm.rank() / 2, comm.rank());
  auto data_comm = comm.split(comm.rank() % 2, comm.rank());
  rensa::seed(0);

  auto [train, test] = model_parallel::datasets(f);
  // Each pair trains on its shard (both ranks of a pair get shards of the same length).
  train = rensa::mn::scatter_dataset(train, data_comm, {.shuffle = true, .seed = 0});
  test = rensa::mn::scatter_dataset(test, data_comm);

  auto model = std::make_shared<rensa::mn::MultiNodeChainList>(model_comm);
  std::shared_ptr<rensa::Link> target = model;
  if (model_comm.rank() == 0) {
    model->add_link(model_parallel::first_layer(f.unit), std::nullopt, 1);
    model->add_link(std::make_shared<Identity>(), 1, std::nullopt);
    target = std::make_shared<rensa::links::Classifier>(model);
  } else {
    model->add_link(std::make_shared<Piece>(f.unit, true), 0, 0);
    train = rensa::mn::create_empty_dataset(train);
    test = rensa::mn::create_empty_dataset(test);
  }
  // The replicas of each half average their gradients.
  auto optimizer = rensa::mn::create_multi_node_optimizer(std::make_unique<rensa::optimizers::Adam>(), data_comm);
  optimizer->setup(*target);

  rensa::iterators::SerialIterator train_iter(train, f.batchsize, {.seed = static_cast<uint64_t>(data_comm.rank())});
  rensa::iterators::SerialIterator test_iter(test, f.batchsize, {.repeat = false, .shuffle = false});
  rensa::training::StandardUpdater updater(train_iter, *optimizer);
  rensa::training::Trainer trainer(updater, {f.epoch, "epoch"}, f.out);
  trainer.extend(rensa::mn::create_multi_node_evaluator(E::Evaluator(test_iter, *target), data_comm));
  if (comm.rank() == 0) model_parallel::extend_log(trainer);
  return model_parallel::run("train_mnist_dual_parallel", trainer, f, comm);
}
