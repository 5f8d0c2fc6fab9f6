// Trains a multi-layer perceptron (784-1000-1000-10) on Fashion-MNIST (Adam by default), evaluating
// on the test set every epoch, with a log, a printed table, a progress bar, plots and snapshots.
//   build/release/examples/train_mnist --epoch 20
// Large minibatches (docs/large_batch.md): another optimizer, the linear scaling rule and a warm-up:
//   build/release/examples/train_mnist --optimizer momentum_sgd --batchsize 3200 --base-batchsize 100
//     --warmup-epochs 2 --epoch 10  (one command)
// Default learning rates (at the batch they are given for): momentum_sgd 0.01, adam 0.001 (alpha),
// lars 1.0 (trust coefficient 0.001), lamb 0.01, rmsprop_warmup 0.01.
// Mixed precision (docs/mixed_precision.md): float32 parameters, bfloat16 or float16 compute:
//   build/release/examples/train_mnist --dtype mixed_bf16
// Data-parallel over MPI (each rank trains on its shard; gradients are averaged over ranks):
//   mpirun -n 2 build/release/examples/train_mnist --communicator flat
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <map>

#include "large_batch_flags.h"
#include "mixed_precision_flags.h"
#include "models.h"
#include "rensa/mn.h"
#include "rensa/rensa.h"
#include "rensa/training.h"
#include "run_flags.h"

namespace L = rensa::links;
namespace E = rensa::extensions;

using rensa_examples::MLP;

int main(int argc, char** argv) {
  CLI::App app{"Train an MLP on Fashion-MNIST (or MNIST-format files) with rensa"};
  app.option_defaults()->always_capture_default();  // --help shows every default
  int64_t epoch = 20, batchsize = 100, unit = 1000, limit = 0;
  uint64_t seed = 0;
  int threads = 1;
  std::string out = "result/train_mnist", dataset_dir, communicator, grad_dtype = "float32", dtype = "float32";
  bool no_overlap = false, double_buffering = false;
  app.add_option("-e,--epoch", epoch, "Number of sweeps over the training set")->check(CLI::Range(1, 100000));
  app.add_option("-b,--batchsize", batchsize, "Examples per minibatch")->check(CLI::Range(1, 60000));
  app.add_option("-u,--unit", unit, "Units in each hidden layer")->check(CLI::Range(1, 100000));
  app.add_option("-o,--out", out, "Directory for the log, plots and snapshots");
  run_flags::add_seed(app, seed, "Seed of initialization and shuffling");
  app.add_option("-t,--threads", threads, "Threads for the kernels")->check(CLI::Range(1, 1024));
  app.add_option("--dataset-dir", dataset_dir, "Directory of MNIST-format IDX files (default: Fashion-MNIST)");
  app.add_option("--limit", limit, "Use only the first N training and test examples (0: all)")
      ->check(CLI::Range(int64_t{0}, int64_t{60000}));
  run_flags::add_communicator(app, communicator);
  app.add_option("--grad-dtype", grad_dtype, "Dtype gradients travel in with --communicator")
      ->check(CLI::IsMember({"float32", "float16", "bfloat16"}));
  app.add_flag("--no-overlap", no_overlap,
               "With --communicator: average gradients after backward instead of during it");
  app.add_flag("--double-buffering", double_buffering,
               "With --communicator: apply each step's averaged gradients one step late, averaging them while "
               "the next step computes");
  double timeout = -1;
  app.add_option("--timeout", timeout,
                 "With --communicator: seconds a rank may wait in one communication before it ends the job "
                 "(0: never; default: RENSA_MN_TIMEOUT, else 300)")
      ->check(CLI::Range(0.0, 1e9));
  large_batch::Flags lb;
  const std::map<std::string, double> default_lr = {
      {"momentum_sgd", 0.01}, {"adam", 0.001}, {"lars", 1.0}, {"lamb", 0.01}, {"rmsprop_warmup", 0.01}};
  large_batch::add_flags(app, lb, "adam", "momentum_sgd 0.01, adam 0.001, lars 1.0, lamb 0.01, rmsprop_warmup 0.01");
  mixed_precision::add_flag(app, dtype);
  run_flags::Flags rf;
  run_flags::add_flags(app, rf);
  CLI11_PARSE(app, argc, argv);

  rensa::mn::Communicator comm;  // valid with --communicator: this process is one rank of an MPI job
  try {
    if (!communicator.empty()) {
      rensa::mn::CommunicatorOptions options{.allreduce_grad_dtype = rensa::dtype_from_name(grad_dtype)};
      if (timeout >= 0) options.timeout = std::chrono::milliseconds(std::llround(timeout * 1000));
      comm = rensa::mn::create_communicator(communicator, argc, argv, options);
    } else if (rensa::mn::refuse_several_processes("train_mnist")) {
      return 2;  // each process would train alone on all the data and write the same --out
    }
    const bool multi = comm.valid();
    rensa::set_num_threads(threads);
    rensa::seed(seed);
    mixed_precision::apply(dtype);
    rensa::datasets::MnistOptions data_options;
    data_options.dtype = mixed_precision::data_dtype();
    auto [train, test] = dataset_dir.empty() ? rensa::datasets::get_fashion_mnist(data_options)
                                             : rensa::datasets::get_mnist(dataset_dir, data_options);
    if (limit > 0) {
      train = std::make_shared<rensa::datasets::SubDataset>(train, 0, std::min(limit, train->size()));
      test = std::make_shared<rensa::datasets::SubDataset>(test, 0, std::min(limit, test->size()));
    }
    if (multi) {
      // Each rank trains on its shard; the test set is split exactly so the evaluation is too.
      train = rensa::mn::scatter_dataset(train, comm, {.shuffle = true, .seed = seed});
      test = rensa::mn::scatter_dataset(test, comm, {.force_equal_length = false});
    }

    L::Classifier model(std::make_shared<MLP>(unit));
    const int64_t n_ranks = multi ? comm.size() : 1;
    const int64_t per_epoch = (train->size() + batchsize - 1) / batchsize;
    const double lr = large_batch::learning_rate(lb, default_lr.at(lb.optimizer), batchsize, n_ranks);
    large_batch::apply_ghost_batch(model, lb, batchsize);  // the MLP has none: an error naming the flag
    std::unique_ptr<rensa::optimizers::Optimizer> optimizer = large_batch::make_optimizer(lb, lr, per_epoch);
    if (multi) {
      optimizer = rensa::mn::create_multi_node_optimizer(
          std::move(optimizer), comm, {.double_buffering = double_buffering, .overlap = !no_overlap});
    }
    optimizer->setup(model);
    mixed_precision::configure(dtype, *optimizer);

    const uint64_t data_seed = seed + (multi ? static_cast<uint64_t>(comm.rank()) : 0);
    rensa::iterators::SerialIterator train_iter(train, batchsize, {.seed = data_seed});
    rensa::iterators::SerialIterator test_iter(test, batchsize, {.repeat = false, .shuffle = false});
    rensa::training::StandardUpdater updater(train_iter, *optimizer);
    rensa::training::Trainer trainer(updater, {epoch, "epoch"}, out);
    if (auto schedule = large_batch::make_schedule(lb, per_epoch, batchsize, n_ranks, nullptr)) {
      trainer.extend(schedule);
    }

    if (multi) {
      trainer.extend(rensa::mn::create_multi_node_evaluator(E::Evaluator(test_iter, model), comm));
      trainer.extend(rensa::mn::ObservationAggregator(comm, {"main/loss", "main/accuracy"}));
    } else {
      trainer.extend(E::Evaluator(test_iter, model));
    }
    if (!multi || comm.rank() == 0) {  // one rank prints and writes the shared files
      std::cout << "train_mnist: " << lb.optimizer << ", " << large_batch::lr_name(lb) << " " << lr << ", global batch "
                << batchsize * n_ranks << std::endl;
      trainer.extend(E::LogReport());
      trainer.extend(E::PlotReport({"main/loss", "validation/main/loss"}, "epoch", {1, "epoch"}, "loss.png"));
      trainer.extend(
          E::PlotReport({"main/accuracy", "validation/main/accuracy"}, "epoch", {1, "epoch"}, "accuracy.png"));
      trainer.extend(E::PrintReport(
          {"epoch", "main/loss", "validation/main/loss", "main/accuracy", "validation/main/accuracy", "elapsed_time"}));
      trainer.extend(E::ProgressBar());
    }

    run_flags::Run run("train_mnist", trainer, rf, comm);
    if (!run.resume(static_cast<double>(epoch))) return 0;
    return run.run();
  } catch (const rensa::Error& e) {
    // A rank that returns while the others wait would hang the job: end it loudly instead (one line
    // naming the rank and host, then the job is aborted).
    if (comm.valid() && comm.size() > 1) throw;
    rensa::mn::print_error_line("train_mnist", e.what());
    return 1;
  }
  return 0;
}
