// The per-pixel mean of the images of a pairs file, as the mean.npy of ChainerMN's imagenet example
// (train_imagenet --mean). Every image must have the same size (ChainerMN resizes ImageNet to
// 256 x 256 beforehand), or pass --resize to bring each to that size first.
//   build/release/examples/compute_mean data/fmnist-images/train.txt --root data/fmnist-images
//       --output data/fmnist-images/mean.npy
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <iostream>
#include <memory>
#include <vector>

#include "rensa/rensa.h"
#include "rensa/training.h"
#include "run_flags.h"

namespace D = rensa::datasets;
namespace T = rensa::datasets::transforms;

int main(int argc, char** argv) {
  CLI::App app{"Compute the per-pixel mean of the images listed in a pairs file"};
  app.option_defaults()->always_capture_default();
  std::string pairs, root = ".", output = "mean.npy";
  int64_t resize = 0;
  int loaderjob = 2;
  app.add_option("dataset", pairs, "Pairs file (\"path label\" per line)")->required()->check(CLI::ExistingFile);
  app.add_option("-R,--root", root, "Directory the paths are relative to");
  app.add_option("-o,--output", output, "The .npy file to write");
  app.add_option("--resize", resize, "Resize each image to this square size first (0: as stored)")
      ->check(CLI::Range(0, 65535));
  app.add_option("-j,--loaderjob", loaderjob, "Worker threads that decode")->check(CLI::Range(1, 256));
  run_flags::guard_numbers(app);
  CLI11_PARSE(app, argc, argv);
  try {
    D::DatasetPtr ds = std::make_shared<D::LabeledImageDataset>(
        pairs, D::ImageDatasetOptions{.root = root, .dtype = rensa::Dtype::uint8, .color = D::ImageColor::rgb});
    if (resize > 0) {
      ds = std::make_shared<D::TransformDataset>(ds, T::Resize({.size = std::array<int64_t, 2>{resize, resize}}));
    }
    rensa::iterators::MultithreadIterator it(ds, 64,
                                             {.repeat = false, .shuffle = false, .n_threads = loaderjob, .stack = true});
    std::vector<double> sum;
    rensa::Shape shape;
    int64_t count = 0;
    const bool progress = ::isatty(2) != 0;  // no carriage returns in logs
    while (true) {
      const auto batch = it.next_arrays();
      if (!batch || batch->empty()) break;
      const rensa::Array& x = batch->at(0);  // (B, C, H, W) uint8: stacking checked every shape
      if (count == 0) {
        shape = rensa::Shape{x.shape()[1], x.shape()[2], x.shape()[3]};
        sum.assign(static_cast<std::size_t>(shape.numel()), 0.0);
      } else if (rensa::Shape{x.shape()[1], x.shape()[2], x.shape()[3]} != shape) {
        std::cerr << "compute_mean: images of shapes " << shape << " and " << x.shape()
                  << " (near image " << count << "); pass --resize\n";
        return 1;
      }
      const uint8_t* p = x.data<uint8_t>();
      const int64_t per = shape.numel();
      for (int64_t b = 0; b < x.shape()[0]; ++b) {
        for (int64_t k = 0; k < per; ++k) sum[static_cast<std::size_t>(k)] += p[b * per + k];
      }
      count += x.shape()[0];
      if (progress) std::cerr << "\rcompute_mean: " << count << " / " << ds->size() << std::flush;
    }
    if (progress) std::cerr << '\n';
    if (count == 0) {
      std::cerr << "compute_mean: " << pairs << " lists no images\n";
      return 1;
    }
    std::vector<float> mean(sum.size());
    for (std::size_t k = 0; k < sum.size(); ++k) mean[k] = static_cast<float>(sum[k] / static_cast<double>(count));
    rensa::serializers::write_npy(output, rensa::Array::from_vector(mean, shape));
    std::cout << "compute_mean: the mean of " << count << " images, shape " << shape << ", written to " << output
              << '\n';
  } catch (const rensa::Error& e) {
    std::cerr << "compute_mean: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
