// Image loader throughput: images per second that rensa's loader decodes, augments and stacks into
// batches, on `--workers` threads, from a pairs file of JPEGs (bench/image_loader/make_photos.py).
// bench/image_loader/compare runs it beside torchvision's DataLoader and Chainer's
// MultiprocessIterator on the same files with the same transforms.
//   --recipe goyal:     RandomResizedCrop(224) + horizontal flip + per-channel normalization;
//   --recipe chainermn: per-pixel mean subtracted, a random 224 crop, flip, / 255 (256 x 256 inputs).
//   bench_image_loader PHOTOS/photos.txt --root PHOTOS --recipe goyal --workers 1
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "rensa/rensa.h"
#include "rensa/training.h"

namespace D = rensa::datasets;
namespace T = rensa::datasets::transforms;

int main(int argc, char** argv) {
  CLI::App app{"Images per second through rensa's loader"};
  std::string pairs, root = ".", recipe = "goyal", mean_path;
  int workers = 1, repeats = 3, batchsize = 32;
  int64_t decode_size = 0;
  app.add_option("pairs", pairs, "Pairs file")->required()->check(CLI::ExistingFile);
  app.add_option("--root", root, "Directory of the pairs file's paths");
  app.add_option("--recipe", recipe, "goyal or chainermn")->check(CLI::IsMember({"goyal", "chainermn"}));
  app.add_option("--mean", mean_path, "Per-pixel mean .npy (chainermn)");
  app.add_option("--workers", workers, "Loader threads")->check(CLI::Range(1, 256));
  app.add_option("--batchsize", batchsize, "Batch size")->check(CLI::Range(1, 4096));
  app.add_option("--repeats", repeats, "Timed passes over the files")->check(CLI::Range(1, 100));
  app.add_option("--decode-size", decode_size, "Reduced-size JPEG decoding: shorter side at least this (0: off)");
  CLI11_PARSE(app, argc, argv);
  std::printf("cpu: %s\n", rensa::cpu_description().c_str());
  auto base = std::make_shared<D::LabeledImageDataset>(
      pairs, D::ImageDatasetOptions{.root = root, .dtype = rensa::Dtype::uint8, .color = D::ImageColor::rgb,
                                    .min_size = decode_size});
  D::TransformDataset::Transform tf;
  if (recipe == "goyal") {
    tf = T::compose({T::RandomResizedCrop({.size = {224, 224}, .seed = 1}), T::RandomFlip({.seed = 1}),
                     T::Normalize({123.675, 116.28, 103.53}, {58.395, 57.12, 57.375})});
  } else {
    const rensa::Array mean = rensa::serializers::read_npy(mean_path);
    tf = T::compose({T::SubtractMean(mean), T::RandomCrop({.size = std::array<int64_t, 2>{224, 224}, .seed = 1}),
                     T::RandomFlip({.seed = 1}), T::Scale(1.0 / 255)});
  }
  auto ds = std::make_shared<D::TransformDataset>(base, tf);
  // One iterator for the whole run, as a Trainer has: a pass is an epoch's worth of batches, and the
  // first pass warms the page cache, the allocator and the loader's batch buffers.
  rensa::iterators::MultithreadIterator it(ds, batchsize, {.seed = 0, .n_threads = workers, .stack = true});
  const int64_t batches = (ds->size() + batchsize - 1) / batchsize;
  std::vector<double> rates;
  for (int r = 0; r < repeats + 1; ++r) {
    const auto start = std::chrono::steady_clock::now();
    int64_t images = 0;
    for (int64_t b = 0; b < batches; ++b) images += it.next_arrays()->at(0).shape()[0];
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (r > 0) rates.push_back(static_cast<double>(images) / s);
  }
  std::sort(rates.begin(), rates.end());
  std::printf("rensa %s, %d workers%s: images/s min %.1f median %.1f max %.1f\n", recipe.c_str(), workers,
              decode_size > 0 ? (", decode-size " + std::to_string(decode_size)).c_str() : "", rates.front(),
              rates[rates.size() / 2], rates.back());
  return 0;
}
