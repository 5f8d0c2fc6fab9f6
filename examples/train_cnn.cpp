// Trains a convolutional network on Fashion-MNIST, evaluating on the test set every epoch, with a
// log, a printed table, a progress bar, plots and snapshots (the outputs of train_mnist).
//   --arch cnn:    conv(1->32, 3x3)-relu-conv(32->64, 3x3)-relu-maxpool2-fc(9216->128)-relu-fc(128->10),
//                  MomentumSGD (lr 0.01, momentum 0.9).
//   --arch resnet: a ResNet-20-style network (3 stages of 3 basic blocks, 16/32/64 channels, batch
//                  normalization) for 28x28 inputs, MomentumSGD (lr 0.1, momentum 0.9, weight decay
//                  5e-4), random crops (pad 2) and flips.
// Both step the learning rate down x0.1 at 50% and 75% of training.
// Large minibatches (docs/large_batch.md): --optimizer momentum_sgd|adam|lars|lamb|rmsprop_warmup,
// --lr, --base-batchsize (linear scaling rule), --warmup-epochs (a warm-up before the step decay),
// --ghost-batch M (ghost batch normalization: one process with batch B computes B / M workers).
// Default learning rates: momentum_sgd and rmsprop_warmup 0.01 (cnn) or 0.1 (resnet), adam 0.001
// (alpha), lars 1.0 (trust coefficient 0.001), lamb 0.01.
// --dtype mixed_bf16 or mixed16 trains with float32 parameters and 16-bit compute
// (docs/mixed_precision.md).
// With --communicator (built with rensa::mn), data-parallel under mpirun as train_mnist is; --mnbn
// takes the resnet's batch statistics over the global batch (multi-node batch normalization).
//   build/release/examples/train_cnn --arch cnn --epoch 20
//   build/release/examples/train_cnn --arch resnet --epoch 30 --bn-population
//   scripts/mpirun -n 2 build/release/examples/train_cnn --arch resnet --communicator flat --mnbn
#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <vector>

#include "large_batch_flags.h"
#include "mixed_precision_flags.h"
#include "models.h"
#include "rensa/rensa.h"
#include "rensa/training.h"
#include "run_flags.h"
#ifdef RENSA_WITH_MN
#include "rensa/mn.h"
#endif

namespace L = rensa::links;
namespace E = rensa::extensions;

using rensa_examples::CNN;
using rensa_examples::ResNet;

int main(int argc, char** argv) {
  CLI::App app{"Train a CNN or a ResNet on Fashion-MNIST (or MNIST-format files) with rensa"};
  app.option_defaults()->always_capture_default();  // --help shows every default
  int64_t epoch = 20, batchsize = 64, unit = 128, limit = 0;
  uint64_t seed = 0;
  int threads = 1;
  bool bn_population = false;
  std::string arch = "cnn", out = "result/train_cnn", dataset_dir, dtype = "float32";
  app.add_option("-a,--arch", arch, "Network: cnn or resnet")->check(CLI::IsMember({"cnn", "resnet"}));
  app.add_option("-e,--epoch", epoch, "Number of sweeps over the training set")->check(CLI::Range(1, 100000));
  app.add_option("-b,--batchsize", batchsize, "Examples per minibatch")->check(CLI::Range(1, 60000));
  app.add_option("-u,--unit", unit, "Units in the hidden fully connected layer (cnn)")->check(CLI::Range(1, 100000));
  app.add_option("-o,--out", out, "Directory for the log, plots and snapshots");
  run_flags::add_seed(app, seed, "Seed of initialization, shuffling and augmentation");
  app.add_option("-t,--threads", threads, "Threads for the kernels")->check(CLI::Range(1, 1024));
  app.add_option("--dataset-dir", dataset_dir, "Directory of MNIST-format IDX files (default: Fashion-MNIST)");
  app.add_option("--limit", limit, "Use only the first N training and test examples (0: all)")
      ->check(CLI::Range(int64_t{0}, int64_t{60000}));
  app.add_flag("--bn-population", bn_population,
               "resnet: before each evaluation, recompute the batch normalization statistics over one pass "
               "of the training data (population statistics) instead of using the moving averages");
  mixed_precision::add_flag(app, dtype);
  large_batch::Flags lb;
  large_batch::add_flags(app, lb, "momentum_sgd",
                         "momentum_sgd and rmsprop_warmup 0.01 (cnn) or 0.1 (resnet), adam 0.001, lars 1.0, lamb 0.01");
#ifdef RENSA_WITH_MN
  std::string communicator, grad_dtype = "float32";
  bool mnbn = false;
  run_flags::add_communicator(app, communicator);
  app.add_option("--grad-dtype", grad_dtype, "Dtype gradients travel in with --communicator")
      ->check(CLI::IsMember({"float32", "float16", "bfloat16"}));
  app.add_flag("--mnbn", mnbn,
               "resnet with --communicator: batch normalization over the batches of all ranks (multi-node)");
  double timeout = -1;
  app.add_option("--timeout", timeout,
                 "With --communicator: seconds a rank may wait in one communication before it ends the job "
                 "(0: never; default: RENSA_MN_TIMEOUT, else 300)")
      ->check(CLI::Range(0.0, 1e9));
  rensa::mn::Communicator comm;  // valid with --communicator: this process is one rank of an MPI job
#endif
  run_flags::Flags rf;
  run_flags::add_flags(app, rf);
  CLI11_PARSE(app, argc, argv);

  try {
#ifdef RENSA_WITH_MN
    if (!communicator.empty()) {
      rensa::mn::CommunicatorOptions options{.allreduce_grad_dtype = rensa::dtype_from_name(grad_dtype)};
      if (timeout >= 0) options.timeout = std::chrono::milliseconds(std::llround(timeout * 1000));
      comm = rensa::mn::create_communicator(communicator, argc, argv, options);
    } else if (rensa::mn::refuse_several_processes("train_cnn")) {
      return 2;  // each process would train alone on all the data and write the same --out
    }
    const bool multi = comm.valid();
    const int rank = multi ? comm.rank() : 0;
#else
    const bool multi = false;
    const int rank = 0;
#endif
    rensa::set_num_threads(threads);
    mixed_precision::apply(dtype);
    rensa::seed(seed);
    rensa::datasets::MnistOptions data_options;
    data_options.dtype = mixed_precision::data_dtype();
    data_options.ndim = 3;  // (1, 28, 28) images
    auto [train, test] = dataset_dir.empty() ? rensa::datasets::get_fashion_mnist(data_options)
                                             : rensa::datasets::get_mnist(dataset_dir, data_options);
    if (limit > 0) {
      train = std::make_shared<rensa::datasets::SubDataset>(train, 0, std::min(limit, train->size()));
      test = std::make_shared<rensa::datasets::SubDataset>(test, 0, std::min(limit, test->size()));
    }
#ifdef RENSA_WITH_MN
    if (multi) {
      // Each rank trains on its shard; the test set is split exactly so the evaluation is too.
      train = rensa::mn::scatter_dataset(train, comm, {.shuffle = true, .seed = seed});
      test = rensa::mn::scatter_dataset(test, comm, {.force_equal_length = false});
    }
#endif
    const bool resnet = arch == "resnet";
    rensa::datasets::DatasetPtr train_data = train;
    // Each rank draws its own augmentation and shuffling.
    const uint64_t data_seed = seed + static_cast<uint64_t>(rank);
    if (resnet) {
      namespace T = rensa::datasets::transforms;
      train_data = std::make_shared<rensa::datasets::TransformDataset>(
          train, T::compose({T::RandomCrop({.pad = 2, .seed = data_seed}), T::RandomFlip({.seed = data_seed})}));
    }

    std::shared_ptr<rensa::Link> predictor;
    if (resnet) {
      predictor = std::make_shared<ResNet>();
    } else {
      predictor = std::make_shared<CNN>(unit);
    }
    L::Classifier model(predictor);
#ifdef RENSA_WITH_MN
    const int64_t n_ranks = multi ? comm.size() : 1;
#else
    const int64_t n_ranks = 1;
#endif
    const int64_t per_epoch = (train->size() + batchsize - 1) / batchsize;
    const double sgd_lr = resnet ? 0.1 : 0.01;
    const std::map<std::string, double> default_lr = {
        {"momentum_sgd", sgd_lr}, {"adam", 0.001}, {"lars", 1.0}, {"lamb", 0.01}, {"rmsprop_warmup", sgd_lr}};
    const double lr = large_batch::learning_rate(lb, default_lr.at(lb.optimizer), batchsize, n_ranks);
    std::unique_ptr<rensa::optimizers::Optimizer> optimizer = large_batch::make_optimizer(lb, lr, per_epoch);
#ifdef RENSA_WITH_MN
    if (mnbn && (!multi || !resnet)) {
      std::cerr << "train_cnn: --mnbn needs --arch resnet and --communicator\n";
      return 1;
    }
    if (multi) {
      if (mnbn) rensa::mn::convert_batch_normalization(*predictor, comm);
      optimizer = rensa::mn::create_multi_node_optimizer(std::move(optimizer), comm);
    }
#endif
#ifdef RENSA_WITH_MN
    if (mnbn && lb.ghost_batch > 0) {
      std::cerr << "train_cnn: --ghost-batch and --mnbn exclude each other (statistics over sub-batches of one "
                   "rank, or over the batches of all ranks)\n";
      return 1;
    }
#endif
    large_batch::apply_ghost_batch(model, lb, batchsize);
    optimizer->setup(model);
    mixed_precision::configure(dtype, *optimizer);
    if (resnet) optimizer->add_hook(std::make_shared<rensa::optimizers::WeightDecay>(5e-4));

    rensa::iterators::SerialIterator train_iter(train_data, batchsize, {.seed = data_seed});
    rensa::iterators::SerialIterator test_iter(test, batchsize, {.repeat = false, .shuffle = false});
    rensa::training::StandardUpdater updater(train_iter, *optimizer);
    rensa::training::Trainer trainer(updater, {epoch, "epoch"}, out);

    std::vector<int64_t> steps = {epoch * per_epoch / 2, epoch * per_epoch * 3 / 4};
    if (steps[0] == steps[1]) steps.pop_back();  // a run of a few iterations
    // The step decay, counted from the end of the warm-up when there is one: one schedule.
    const std::string attr = large_batch::lr_name(lb);
    steps = large_batch::steps_after(steps, large_batch::lr_warmup_iterations(lb, per_epoch));
    trainer.extend(large_batch::make_schedule(lb, per_epoch, batchsize, n_ranks,
                                              std::make_shared<E::MultistepShift>(attr, 0.1, steps)));
    if (rank == 0) {
      std::cout << "train_cnn: " << lb.optimizer << ", " << attr << " " << lr << ", global batch "
                << batchsize * n_ranks << std::endl;
    }
    if (resnet && bn_population) {
      // Over every rank's shard under mpirun.
      std::function<void(rensa::iterators::Iterator&)> recompute = [predictor](rensa::iterators::Iterator& pass) {
        L::recompute_batch_norm_statistics(*predictor, pass);
      };
#ifdef RENSA_WITH_MN
      if (multi) {
        recompute = [predictor, comm](rensa::iterators::Iterator& pass) {
          rensa::mn::recompute_batch_norm_statistics(*predictor, pass, comm);
        };
      }
#endif
      // Runs before the Evaluator (higher priority): test mode then uses the population statistics.
      // Under --ghost-batch M the pass runs plain batch normalization on batches of M: each batch's
      // statistics are then one virtual worker's, and a last partial batch is no error.
      const int64_t ghost = lb.ghost_batch;
      trainer.extend(
          [plain = train, batchsize, ghost, predictor, recompute](rensa::training::Trainer&) {
            if (ghost > 0) large_batch::set_ghost_batch(*predictor, std::nullopt);
            rensa::iterators::SerialIterator pass(plain, ghost > 0 ? ghost : batchsize,
                                                  {.repeat = false, .shuffle = false});
            recompute(pass);
            if (ghost > 0) large_batch::set_ghost_batch(*predictor, ghost);
          },
          "bn_population", rensa::training::Trigger(1, "epoch"), rensa::training::kPriorityWriter + 1);
    }
#ifdef RENSA_WITH_MN
    if (multi) {
      trainer.extend(rensa::mn::create_multi_node_evaluator(E::Evaluator(test_iter, model), comm));
      trainer.extend(rensa::mn::ObservationAggregator(comm, {"main/loss", "main/accuracy"}));
    }
#endif
    if (!multi) trainer.extend(E::Evaluator(test_iter, model));
    if (rank == 0) {  // one rank prints and writes the shared files
      trainer.extend(E::LogReport());
      trainer.extend(E::PlotReport({"main/loss", "validation/main/loss"}, "epoch", {1, "epoch"}, "loss.png"));
      trainer.extend(
          E::PlotReport({"main/accuracy", "validation/main/accuracy"}, "epoch", {1, "epoch"}, "accuracy.png"));
      trainer.extend(E::PrintReport(
          {"epoch", "main/loss", "validation/main/loss", "main/accuracy", "validation/main/accuracy", "elapsed_time"}));
      trainer.extend(E::ProgressBar());
    }

#ifdef RENSA_WITH_MN
    run_flags::Run run("train_cnn", trainer, rf, comm);
#else
    run_flags::Run run("train_cnn", trainer, rf);
#endif
    if (!run.resume(static_cast<double>(epoch))) return 0;
    return run.run();
  } catch (const rensa::Error& e) {
#ifdef RENSA_WITH_MN
    // A rank that returns while the others wait would hang the job: end it loudly instead (one line
    // naming the rank and host, then the job is aborted).
    if (comm.valid() && comm.size() > 1) throw;
    rensa::mn::print_error_line("train_cnn", e.what());
#else
    std::cerr << "train_cnn: " << e.what() << '\n';
#endif
    return 1;
  }
  return 0;
}
