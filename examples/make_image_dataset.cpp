// Builds a small dataset in ImageNet's layout from Fashion-MNIST (the dataset-fashion-mnist package):
// OUT/train/<class>/<n>.jpg and OUT/val/<class>/<n>.jpg, RGB JPEGs of --size pixels, the pairs files
// OUT/train.txt and OUT/val.txt ("path label" per line, paths relative to OUT), OUT/labels.txt
// (the class names), and OUT/mean.npy (the training images' per-pixel mean), so train_imagenet runs
// end to end in minutes on a fresh machine.
//   build/release/examples/make_image_dataset --out data/fmnist-images
#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <vector>

#include "rensa/rensa.h"
#include "rensa/training.h"
#include "run_flags.h"

namespace D = rensa::datasets;
namespace T = rensa::datasets::transforms;

int main(int argc, char** argv) {
  CLI::App app{"Write Fashion-MNIST as a small ImageNet-layout dataset of JPEG files"};
  app.option_defaults()->always_capture_default();
  std::string out = "data/fmnist-images", dataset_dir;
  int64_t per_class = 200, val_per_class = 50, size = 48;
  int quality = 90;
  app.add_option("-o,--out", out, "Directory to write");
  app.add_option("--per-class", per_class, "Training images per class")->check(CLI::Range(1, 6000));
  app.add_option("--val-per-class", val_per_class, "Validation images per class")->check(CLI::Range(1, 1000));
  app.add_option("--size", size, "Side of the square images (the 28 x 28 originals are resized)")
      ->check(CLI::Range(8, 1024));
  app.add_option("--quality", quality, "JPEG quality")->check(CLI::Range(1, 100));
  app.add_option("--dataset-dir", dataset_dir, "Directory of MNIST-format IDX files (default: Fashion-MNIST)");
  run_flags::guard_numbers(app);
  CLI11_PARSE(app, argc, argv);
  const std::vector<std::string> classes = {"tshirt", "trouser", "pullover", "dress", "coat",
                                            "sandal", "shirt",   "sneaker",  "bag",   "boot"};
  try {
    D::MnistOptions options;
    options.dtype = rensa::Dtype::uint8;
    options.ndim = 3;
    options.scale = 255.0;
    options.rgb_format = true;  // (3, 28, 28), the gray channel repeated
    auto [train, test] = dataset_dir.empty() ? D::get_fashion_mnist(options) : D::get_mnist(dataset_dir, options);
    const T::Resize resize({.size = std::array<int64_t, 2>{size, size}});
    std::vector<double> sum;
    int64_t n_train = 0;
    auto write_split = [&](const D::DatasetPtr& ds, const std::string& split, int64_t wanted) {
      std::vector<int64_t> taken(classes.size(), 0);
      std::ofstream pairs(out + "/" + split + ".txt.tmp");
      int64_t written = 0;
      for (int64_t i = 0; i < ds->size() && written < wanted * static_cast<int64_t>(classes.size()); ++i) {
        const D::Example ex = ds->get_example(i);
        const auto label = static_cast<std::size_t>(ex[1].astype(rensa::Dtype::int64).item<int64_t>());
        if (taken[label] >= wanted) continue;
        const rensa::Array rgb = resize.apply(ex[0].astype(rensa::Dtype::uint8));
        const std::string rel = split + "/" + classes[label] + "/" + std::to_string(taken[label]) + ".jpg";
        std::filesystem::create_directories(out + "/" + split + "/" + classes[label]);
        D::write_image(out + "/" + rel, rgb, quality);
        pairs << rel << ' ' << label << '\n';
        if (split == "train") {
          // The mean of the decoded JPEGs, as compute_mean would find.
          const rensa::Array back = D::read_image(out + "/" + rel, {.dtype = rensa::Dtype::float64});
          const std::vector<double> v = back.to_vector<double>();
          if (sum.empty()) sum.assign(v.size(), 0.0);
          for (std::size_t k = 0; k < v.size(); ++k) sum[k] += v[k];
          ++n_train;
        }
        ++taken[label];
        ++written;
      }
      pairs.close();
      std::filesystem::rename(out + "/" + split + ".txt.tmp", out + "/" + split + ".txt");
      std::cout << "make_image_dataset: " << written << " images in " << out << "/" << split << "\n";
    };
    std::filesystem::create_directories(out);
    write_split(train, "train", per_class);
    write_split(test, "val", val_per_class);
    std::vector<float> mean(sum.size());
    for (std::size_t k = 0; k < sum.size(); ++k) mean[k] = static_cast<float>(sum[k] / static_cast<double>(n_train));
    rensa::serializers::write_npy(out + "/mean.npy", rensa::Array::from_vector(mean, rensa::Shape{3, size, size}));
    std::ofstream labels(out + "/labels.txt");
    for (const auto& c : classes) labels << c << '\n';
  } catch (const rensa::Error& e) {
    std::cerr << "make_image_dataset: " << e.what() << '\n';
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    std::cerr << "make_image_dataset: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
