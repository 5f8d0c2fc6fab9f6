// ChainerMN's imagenet example in rensa: a ConvNet trained from image files listed in pairs files
// ("path label" per line), data-parallel under mpirun with --communicator.
//   --arch alex|nin|googlenet|resnet50 (examples/imagenet_models.h), MomentumSGD (lr 0.01, momentum
//   0.9, weight decay 1e-4), as ChainerMN's example.
//   Augmentation, with --mean (ChainerMN's recipe): per-pixel mean subtracted, a random crop of the
//   network's size (--crop to override), a random flip, then / 255; validation: the central crop.
//   Without --mean (Goyal et al.'s recipe): random-resized-crop and flip, per-channel normalization;
//   validation: resize the shorter side to crop * 8 / 7, then the central crop.
//   Images are decoded as uint8 RGB on --loaderjob worker threads, which also stack the batches.
//   Only the root reads the pairs files under mpirun; the other ranks get their shard's file names.
//
//   build/release/examples/make_image_dataset --out data/fmnist-images
//   build/release/examples/train_imagenet data/fmnist-images/train.txt data/fmnist-images/val.txt
//       --root data/fmnist-images --arch resnet50 --crop 32 --epoch 2
//   scripts/mpirun -n 2 build/release/examples/train_imagenet TRAIN VAL --root ROOT --mean mean.npy
//       --communicator hierarchical --loaderjob 2
#include <CLI/CLI.hpp>
#include <chrono>
#include <iostream>
#include <memory>
#include <vector>

#include "imagenet_models.h"
#include "rensa/rensa.h"
#include "rensa/training.h"
#include "run_flags.h"
#ifdef RENSA_WITH_MN
#include "rensa/mn.h"
#endif

namespace D = rensa::datasets;
namespace T = rensa::datasets::transforms;
namespace E = rensa::extensions;

int main(int argc, char** argv) {
  CLI::App app{"Train a ConvNet on image files listed in pairs files (ChainerMN's imagenet example)"};
  app.option_defaults()->always_capture_default();
  std::string train_pairs, val_pairs, arch = "resnet50", root = ".", mean_path, out = "result/train_imagenet";
  int64_t batchsize = 32, val_batchsize = 250, epoch = 10, crop = 0, decode_size = 0, limit = 0;
  int loaderjob = 2, threads = 1;
  uint64_t seed = 0;
  bool test = false, skip_unreadable = false;
  app.add_option("train", train_pairs, "Pairs file of the training images")->required()->check(CLI::ExistingFile);
  app.add_option("val", val_pairs, "Pairs file of the validation images")->required()->check(CLI::ExistingFile);
  app.add_option("-a,--arch", arch, "Network")->check(CLI::IsMember({"alex", "nin", "googlenet", "googlenetbn", "resnet50", "resnext50"}));
  app.add_option("-B,--batchsize", batchsize, "Training minibatch size (per rank)")->check(CLI::Range(1, 100000));
  app.add_option("-b,--val-batchsize", val_batchsize, "Validation minibatch size")->check(CLI::Range(1, 100000));
  app.add_option("-E,--epoch", epoch, "Number of epochs")->check(CLI::Range(1, 100000));
  app.add_option("-j,--loaderjob", loaderjob, "Worker threads that decode, augment and stack the batches")
      ->check(CLI::Range(1, 256));
  app.add_option("-t,--threads", threads, "Threads for the kernels")->check(CLI::Range(1, 1024));
  app.add_option("-m,--mean", mean_path, "Per-pixel mean (C, H, W) .npy of the images (compute_mean); empty: "
                                         "random-resized-crop and per-channel normalization")
      ->check(CLI::ExistingFile);
  app.add_option("-R,--root", root, "Directory the pairs files' paths are relative to");
  app.add_option("--crop", crop, "Crop size (0: the network's, 227 or 224)")->check(CLI::Range(0, 4096));
  app.add_option("--decode-size", decode_size,
                 "Decode JPEGs at a reduced size whose shorter side is at least this (0: full size)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--limit", limit, "Use only the first N training and validation images (0: all)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  app.add_flag("--skip-unreadable", skip_unreadable, "Skip images that cannot be decoded (with a warning)");
  app.add_flag("--test", test, "Test mode: evaluate and log every 10 iterations");
  app.add_option("-o,--out", out, "Directory for the log and snapshots");
  run_flags::add_seed(app, seed, "Seed of initialization, shuffling and augmentation");
#ifdef RENSA_WITH_MN
  std::string communicator;
  run_flags::add_communicator(app, communicator);
  rensa::mn::Communicator comm;
#endif
  run_flags::Flags rf;
  run_flags::add_flags(app, rf);
  CLI11_PARSE(app, argc, argv);

  try {
#ifdef RENSA_WITH_MN
    if (!communicator.empty()) {
      comm = rensa::mn::create_communicator(communicator, argc, argv);
    } else if (rensa::mn::refuse_several_processes("train_imagenet")) {
      return 2;
    }
    const bool multi = comm.valid();
    const int rank = multi ? comm.rank() : 0;
#else
    const bool multi = false;
    const int rank = 0;
#endif
    rensa::set_num_threads(threads);
    rensa::seed(seed);
    std::shared_ptr<rensa_examples::ImagenetModel> model = rensa_examples::make_imagenet_model(arch);
    const int64_t size = crop > 0 ? crop : model->insize;

    // The file lists: read by the root only under mpirun (the other ranks get their shard's names).
    const D::ImageDatasetOptions train_options{.root = root, .dtype = rensa::Dtype::uint8, .color = D::ImageColor::rgb,
                                               .min_size = decode_size, .skip_unreadable = skip_unreadable};
    D::ImageDatasetOptions val_options = train_options;
    if (mean_path.empty() && decode_size == 0) val_options.min_size = size * 8 / 7;  // the resize's target
    D::DatasetPtr train, val;
    if (rank == 0) {
      train = std::make_shared<D::LabeledImageDataset>(train_pairs, train_options);
      val = std::make_shared<D::LabeledImageDataset>(val_pairs, val_options);
      if (limit > 0) {
        train = std::make_shared<D::SubDataset>(train, 0, std::min(limit, train->size()));
        val = std::make_shared<D::SubDataset>(val, 0, std::min(limit, val->size()));
      }
    }
#ifdef RENSA_WITH_MN
    if (multi) {
      train = rensa::mn::scatter_dataset(train, comm, {.shuffle = true, .seed = seed});
      val = rensa::mn::scatter_dataset(val, comm, {.force_equal_length = false});
    }
#endif
    // Augmentation after the scatter: transforms are code, built on every rank. Each rank draws
    // its own augmentation; within a rank the draws are keyed by (epoch, example).
    const uint64_t data_seed = seed + static_cast<uint64_t>(rank);
    D::TransformDataset::Transform train_tf, val_tf;
    if (!mean_path.empty()) {
      const rensa::Array mean = rensa::serializers::read_npy(mean_path);
      const double inv = 1.0 / 255.0;
      train_tf = T::compose({T::SubtractMean(mean), T::RandomCrop({.size = std::array<int64_t, 2>{size, size},
                                                                  .seed = data_seed}),
                             T::RandomFlip({.seed = data_seed}), T::Scale(inv)});
      val_tf = T::compose({T::SubtractMean(mean), T::CenterCrop({size, size}), T::Scale(inv)});
    } else {
      const T::Normalize normalize({123.675, 116.28, 103.53}, {58.395, 57.12, 57.375});
      train_tf = T::compose({T::RandomResizedCrop({.size = {size, size}, .seed = data_seed}),
                             T::RandomFlip({.seed = data_seed}), normalize});
      val_tf = T::compose({T::Resize({.shorter_side = size * 8 / 7}), T::CenterCrop({size, size}), normalize});
    }
    auto train_data = std::make_shared<D::TransformDataset>(train, train_tf);
    auto val_data = std::make_shared<D::TransformDataset>(val, val_tf);

    std::unique_ptr<rensa::optimizers::Optimizer> opt = std::make_unique<rensa::optimizers::MomentumSGD>(0.01, 0.9);
#ifdef RENSA_WITH_MN
    if (multi) opt = rensa::mn::create_multi_node_optimizer(std::move(opt), comm);
#endif
    opt->setup(*model);
    opt->add_hook(std::make_shared<rensa::optimizers::WeightDecay>(1e-4));

    rensa::iterators::MultithreadIterator train_iter(
        train_data, batchsize,
        {.seed = data_seed, .n_threads = loaderjob, .n_prefetch = 2, .stack = true, .dataset_timeout = 60});
    rensa::iterators::MultithreadIterator val_iter(
        val_data, val_batchsize, {.repeat = false, .shuffle = false, .n_threads = loaderjob, .stack = true});
    rensa::training::StandardUpdater updater(train_iter, *opt);
    rensa::training::Trainer trainer(updater, {epoch, "epoch"}, out);

    const rensa::training::Trigger val_interval = test ? rensa::training::Trigger(10, "iteration")
                                                       : rensa::training::Trigger(1, "epoch");
    const rensa::training::Trigger log_interval = test ? rensa::training::Trigger(10, "iteration")
                                                       : rensa::training::Trigger(1, "epoch");
    rf.log_trigger = log_interval;  // every rank: rensa::mn's timeline summary is collective
#ifdef RENSA_WITH_MN
    if (multi) {
      trainer.extend(rensa::mn::create_multi_node_evaluator(E::Evaluator(val_iter, *model), comm), "validation",
                     val_interval);
    }
#endif
    if (!multi) trainer.extend(E::Evaluator(val_iter, *model), "validation", val_interval);
    if (rank == 0) {
      trainer.extend(E::LogReport({}, log_interval));
      trainer.extend(E::observe_lr(), "observe_lr", log_interval);
      trainer.extend(E::PrintReport({"epoch", "iteration", "main/loss", "validation/main/loss", "main/accuracy",
                                     "validation/main/accuracy", "main/data_wait", "lr", "elapsed_time"}),
                     "PrintReport", log_interval);
      trainer.extend(E::ProgressBar(std::nullopt, 10));
      std::cout << "train_imagenet: " << arch << ", crop " << size << ", " << train->size() << " training images"
                << (multi ? " on this rank" : "") << ", batch " << batchsize << ", " << loaderjob
                << " loader threads, " << threads << " kernel threads" << std::endl;
    }
#ifdef RENSA_WITH_MN
    run_flags::Run run("train_imagenet", trainer, rf, comm);
#else
    run_flags::Run run("train_imagenet", trainer, rf);
#endif
    if (!run.resume(static_cast<double>(epoch))) return 0;
    return run.run();
  } catch (const rensa::Error& e) {
#ifdef RENSA_WITH_MN
    if (comm.valid() && comm.size() > 1) throw;
    rensa::mn::print_error_line("train_imagenet", e.what());
#else
    std::cerr << "train_imagenet: " << e.what() << '\n';
#endif
    return 1;
  }
}
