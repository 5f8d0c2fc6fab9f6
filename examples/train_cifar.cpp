// ChainerMN's cifar example in rensa: Chainer's VGG for CIFAR (13 convolutions with batch
// normalization and dropout, then two fully connected layers) on CIFAR-10 or CIFAR-100, MomentumSGD
// (lr 0.05, weight decay 5e-4, halved every 25 epochs), data-parallel under mpirun with
// --communicator. The data: the datasets' binary distribution (get_cifar10/get_cifar100), e.g.
// cifar-10-binary.tar.gz of https://www.cs.toronto.edu/~kriz/cifar.html extracted into
// $RENSA_DATASET_ROOT (default ~/.rensa/dataset), or --dataset-dir.
//   build/release/examples/train_cifar --dataset cifar10 --epoch 300
//   scripts/mpirun -n 4 build/release/examples/train_cifar --communicator hierarchical
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "rensa/mn.h"
#include "rensa/rensa.h"
#include "rensa/training.h"
#include "run_flags.h"

namespace F = rensa::functions;
namespace L = rensa::links;
namespace D = rensa::datasets;
namespace E = rensa::extensions;
using rensa::Variable;

namespace {

// A 3x3 convolution without bias, batch normalization, relu.
struct Block : rensa::Chain {
  L::Convolution2D conv;
  L::BatchNormalization bn;
  explicit Block(int64_t out) : conv(0, out, 3, {.pad = 1, .nobias = true}), bn(out) {
    add_link("conv", conv);
    add_link("bn", bn);
  }
  Variable forward(const Variable& x) override { return F::relu(bn(conv(x))); }
  using Link::forward;
};

// Chainer's examples/cifar VGG: blocks of 64, 128, 256, 512, 512 channels (2, 2, 3, 3, 3 blocks),
// dropout 0.3 after the first block and 0.4 between the others, max pooling after each group.
struct VGG : rensa::Chain {
  std::vector<std::shared_ptr<Block>> blocks;
  L::Linear fc1{512, {.nobias = true}}, fc2;
  L::BatchNormalization bn_fc1{512};
  explicit VGG(int64_t classes) : fc2(classes, {.nobias = true}) {
    const int64_t widths[] = {64, 64, 128, 128, 256, 256, 256, 512, 512, 512, 512, 512, 512};
    for (std::size_t k = 0; k < 13; ++k) {
      blocks.push_back(std::make_shared<Block>(widths[k]));
      add_link("block" + std::to_string(k), blocks.back());
    }
    add_link("fc1", fc1);
    add_link("bn_fc1", bn_fc1);
    add_link("fc2", fc2);
  }
  Variable forward(const Variable& x) override {
    const int groups[] = {2, 2, 3, 3, 3};
    Variable h = x;
    std::size_t k = 0;
    for (int g = 0; g < 5; ++g) {
      for (int b = 0; b < groups[g]; ++b) {
        if (b > 0) h = F::dropout(h, g == 0 ? 0.3 : 0.4);
        h = (*blocks[k++])(h);
      }
      h = F::max_pooling_2d(h, 2, 2);
    }
    h = F::dropout(h, 0.5);
    h = F::dropout(F::relu(bn_fc1(fc1(h))), 0.5);
    return fc2(h);
  }
  using Link::forward;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train Chainer's VGG on CIFAR-10 or CIFAR-100 (ChainerMN's cifar example)"};
  app.option_defaults()->always_capture_default();
  std::string dataset = "cifar10", dataset_dir, out = "result/train_cifar", communicator;
  int64_t batchsize = 64, epoch = 300, limit = 0;
  double lr = 0.05;
  int threads = 1;
  uint64_t seed = 0;
  app.add_option("-d,--dataset", dataset, "cifar10 or cifar100")->check(CLI::IsMember({"cifar10", "cifar100"}));
  app.add_option("--dataset-dir", dataset_dir, "Directory of the binary files (default: under RENSA_DATASET_ROOT)");
  app.add_option("-b,--batchsize", batchsize, "Minibatch size (per rank)")->check(CLI::Range(1, 100000));
  app.add_option("-l,--learnrate", lr, "Learning rate")->check(CLI::PositiveNumber);
  app.add_option("-e,--epoch", epoch, "Number of epochs")->check(CLI::Range(1, 100000));
  app.add_option("--limit", limit, "Use only the first N training and test examples (0: all)")
      ->check(CLI::Range(int64_t{0}, int64_t{50000}));
  app.add_option("-t,--threads", threads, "Threads for the kernels")->check(CLI::Range(1, 1024));
  app.add_option("-o,--out", out, "Directory for the log and snapshots");
  run_flags::add_seed(app, seed, "Seed of initialization and shuffling");
  run_flags::add_communicator(app, communicator);
  run_flags::Flags rf;
  run_flags::add_flags(app, rf);
  CLI11_PARSE(app, argc, argv);
  rensa::mn::Communicator comm;
  try {
    if (!communicator.empty()) {
      comm = rensa::mn::create_communicator(communicator, argc, argv);
    } else if (rensa::mn::refuse_several_processes("train_cifar")) {
      return 2;
    }
    const bool multi = comm.valid();
    const int rank = multi ? comm.rank() : 0;
    rensa::set_num_threads(threads);
    rensa::seed(seed);
    const D::CifarOptions options{.dir = dataset_dir};
    auto [train, test] = dataset == "cifar10" ? D::get_cifar10(options) : D::get_cifar100(options);
    if (limit > 0) {
      train = std::make_shared<D::SubDataset>(train, 0, std::min(limit, train->size()));
      test = std::make_shared<D::SubDataset>(test, 0, std::min(limit, test->size()));
    }
    if (multi) {
      train = rensa::mn::scatter_dataset(train, comm, {.shuffle = true, .seed = seed});
      test = rensa::mn::scatter_dataset(test, comm, {.force_equal_length = false});
    }
    L::Classifier model(std::make_shared<VGG>(dataset == "cifar10" ? 10 : 100));
    std::unique_ptr<rensa::optimizers::Optimizer> optimizer = std::make_unique<rensa::optimizers::MomentumSGD>(lr);
    if (multi) optimizer = rensa::mn::create_multi_node_optimizer(std::move(optimizer), comm);
    optimizer->setup(model);
    optimizer->add_hook(std::make_shared<rensa::optimizers::WeightDecay>(5e-4));

    rensa::iterators::SerialIterator train_iter(train, batchsize, {.seed = seed + static_cast<uint64_t>(rank)});
    rensa::iterators::SerialIterator test_iter(test, batchsize, {.repeat = false, .shuffle = false});
    rensa::training::StandardUpdater updater(train_iter, *optimizer);
    rensa::training::Trainer trainer(updater, {epoch, "epoch"}, out);
    if (multi) {
      trainer.extend(rensa::mn::create_multi_node_evaluator(E::Evaluator(test_iter, model), comm));
    } else {
      trainer.extend(E::Evaluator(test_iter, model));
    }
    trainer.extend(E::ExponentialShift("lr", 0.5), rensa::training::Trigger(25, "epoch"));
    if (rank == 0) {
      trainer.extend(E::LogReport());
      trainer.extend(E::observe_lr());
      trainer.extend(E::PrintReport({"epoch", "main/loss", "validation/main/loss", "main/accuracy",
                                     "validation/main/accuracy", "lr", "elapsed_time"}));
      trainer.extend(E::ProgressBar());
    }
    run_flags::Run run("train_cifar", trainer, rf, comm);
    if (!run.resume(static_cast<double>(epoch))) return 0;
    return run.run();
  } catch (const rensa::Error& e) {
    if (comm.valid() && comm.size() > 1) throw;
    rensa::mn::print_error_line("train_cifar", e.what());
    return 1;
  }
}
