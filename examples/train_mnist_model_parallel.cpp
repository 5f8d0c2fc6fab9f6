// Model parallelism (ChainerMN's train_mnist_model_parallel): one MLP split across the ranks of an
// MPI job. Rank 0 holds the first layer and the classifier's output; ranks 1..N-1 hold one hidden
// layer each, the last one also the output layer, and the activations go around 0 -> 1 -> ... -> 0.
// Only rank 0 reads data; the others train on an empty dataset of the same length, in step.
//   mpirun -n 2 build/release/examples/train_mnist_model_parallel --epoch 5
#include "model_parallel_common.h"

namespace E = rensa::extensions;
using model_parallel::Identity;
using model_parallel::Piece;

int main(int argc, char** argv) {
  CLI::App app{"Train an MLP split across MPI ranks on Fashion-MNIST (model parallelism)"};
  app.option_defaults()->always_capture_default();  // --help shows every default
  model_parallel::Flags f;
  model_parallel::add_flags(app, f, "train_mnist_model_parallel", "Units in each hidden layer");
  CLI11_PARSE(app, argc, argv);

  auto comm = model_parallel::communicator(f, argc, argv);
  const int n = comm.size(), rank = comm.rank();
  if (n < 2) throw rensa::ValueError("train_mnist_model_parallel: run it on 2 or more ranks (mpirun -n 2 ...)");
  rensa::seed(0);

  auto [train, test] = model_parallel::datasets(f);
  auto model = std::make_shared<rensa::mn::MultiNodeChainList>(comm);
  std::shared_ptr<rensa::Link> target = model;  // what the optimizer trains and the evaluator runs
  if (rank == 0) {
    model->add_link(model_parallel::first_layer(f.unit), std::nullopt, 1);  // x -> rank 1
    model->add_link(std::make_shared<Identity>(), n - 1, std::nullopt);     // rank n-1 -> the output
    target = std::make_shared<rensa::links::Classifier>(model);
  } else {
    model->add_link(std::make_shared<Piece>(f.unit, rank == n - 1), rank - 1, (rank + 1) % n);
    // No data here: the updater calls the model with no inputs, and backward starts from the
    // delegate variable it returns. Same length, so every rank steps and evaluates in time.
    train = rensa::mn::create_empty_dataset(train);
    test = rensa::mn::create_empty_dataset(test);
  }
  // Each rank owns different parameters: a plain optimizer, no gradient averaging.
  rensa::optimizers::Adam optimizer;
  optimizer.setup(*target);

  rensa::iterators::SerialIterator train_iter(train, f.batchsize, {.seed = 0});
  rensa::iterators::SerialIterator test_iter(test, f.batchsize, {.repeat = false, .shuffle = false});
  rensa::training::StandardUpdater updater(train_iter, optimizer);
  rensa::training::Trainer trainer(updater, {f.epoch, "epoch"}, f.out);
  trainer.extend(E::Evaluator(test_iter, *target));
  if (rank == 0) model_parallel::extend_log(trainer);
  return model_parallel::run("train_mnist_model_parallel", trainer, f, comm);
}
