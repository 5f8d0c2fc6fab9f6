// A picture of what random augmentation does to one image: the image resized, then `--count` draws
// of random-resized-crop and horizontal flip (train_imagenet's recipe without --mean) and colour
// jitter, all with torchvision's defaults, as a TransformDataset gives them to examples 0, 1, 2, ...
// of an epoch; in a grid PNG.
//   build/release/examples/augmentation_grid photo.jpg --output augmentation.png --count 11
#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>

#include "rensa/rensa.h"
#include "rensa/training.h"
#include "run_flags.h"

namespace D = rensa::datasets;
namespace T = rensa::datasets::transforms;
using rensa::Array;

int main(int argc, char** argv) {
  CLI::App app{"Write a grid of random augmentations of one image"};
  app.option_defaults()->always_capture_default();
  std::string input, output = "augmentation.png";
  int64_t count = 11, size = 160, columns = 4;
  uint64_t seed = 0;
  app.add_option("image", input, "A JPEG or PNG file")->required()->check(CLI::ExistingFile);
  app.add_option("-o,--output", output, "The PNG to write");
  app.add_option("-n,--count", count, "Augmented draws after the original")->check(CLI::Range(1, 1000));
  app.add_option("--size", size, "Side of each cell in pixels")->check(CLI::Range(8, 4096));
  app.add_option("--columns", columns, "Cells per row")->check(CLI::Range(1, 100));
  run_flags::add_seed(app, seed, "Seed of the transforms' random streams");
  run_flags::guard_numbers(app);
  CLI11_PARSE(app, argc, argv);
  try {
    const Array image = D::read_image(input, {.dtype = rensa::Dtype::uint8, .color = D::ImageColor::rgb});
    const T::Resize original({.size = std::array<int64_t, 2>{size, size}});
    const T::RandomResizedCrop crop({.size = {size, size}, .seed = seed});
    const T::RandomFlip flip({.seed = seed});
    const T::ColorJitter jitter({.seed = seed});

    const int64_t cells = count + 1, rows = (cells + columns - 1) / columns, gap = 4;
    const Array canvas = Array::full({3, rows * (size + gap) - gap, columns * (size + gap) - gap}, 255.0);
    for (int64_t i = 0; i < cells; ++i) {
      Array cell;
      if (i == 0) {
        cell = original.apply(image);
      } else {
        // The key a TransformDataset gives example i - 1 of epoch 0: the draws of that example.
        const D::ExampleIndexScope key(i - 1);
        cell = jitter.apply(flip.apply(crop.apply(image)));
      }
      const int64_t top = (i / columns) * (size + gap), left = (i % columns) * (size + gap);
      canvas.slice(1, top, top + size).slice(2, left, left + size).assign(cell.astype(rensa::Dtype::float32));
    }
    D::write_image(output, canvas);  // rounds and clamps to 0..255
    std::cout << "augmentation_grid: wrote " << output << " (" << cells << " cells of " << size << " x " << size
              << ")\n";
  } catch (const rensa::Error& e) {
    std::cerr << "augmentation_grid: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
