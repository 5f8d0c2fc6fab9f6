// Writes a synthetic set in the layout of the CMP Facade Database's "base" set, for
// examples/train_pix2pix's smoke test: DIR/cmp_bNNNN.png, a palette PNG of class indices 1..12
// (a wall, a facade and rectangles of the other classes), and DIR/cmp_bNNNN.jpg, the photo: each
// class one colour plus slight noise, so a generator can learn the mapping.
//   make_facades DIR [--count 12] [--width 72] [--height 64] [--seed 1]
// Checks that rensa's read_image (ImageColor::palette) gives back the written indices.
#include <png.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "rensa/rensa.h"

namespace D = rensa::datasets;

namespace {

struct Lcg {
  uint64_t state;
  uint32_t next() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<uint32_t>(state >> 33);
  }
  int64_t below(int64_t n) { return static_cast<int64_t>(next() % static_cast<uint32_t>(n)); }
};

// The photo's colour of class c (1..12), well apart from one another.
const uint8_t kColor[13][3] = {{0, 0, 0},      {20, 20, 110},   {200, 190, 170}, {40, 90, 200},  {220, 60, 40},
                               {250, 200, 40}, {60, 160, 60},   {120, 40, 140},  {30, 200, 200}, {240, 120, 200},
                               {110, 70, 30},  {150, 150, 150}, {250, 250, 250}};

int usage(const char* what) {
  std::cerr << "make_facades: " << what
            << "\nusage: make_facades DIR [--count N] [--width W] [--height H] [--seed S]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return usage("the output directory comes first");
  const std::string dir = argv[1];
  long count = 12, width = 72, height = 64, seed = 1;
  for (int i = 2; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) return usage((flag + " needs a value").c_str());
    char* end = nullptr;
    const long v = std::strtol(argv[i + 1], &end, 10);
    if (*end != '\0' || v < 1 || v > 100000) return usage((flag + " needs a whole number from 1 to 100000").c_str());
    if (flag == "--count") {
      count = v;
    } else if (flag == "--width") {
      width = v;
    } else if (flag == "--height") {
      height = v;
    } else if (flag == "--seed") {
      seed = v;
    } else {
      return usage(("unknown flag " + flag).c_str());
    }
  }
  if (width < 16 || height < 16) return usage("--width and --height must be at least 16");
  try {
    std::filesystem::create_directories(dir);
    // The palette of the label PNGs: index 0 unused, 1..12 the classes (the colours do not matter);
    // 256 entries make libpng write 8-bit indices, as the real files have.
    png_color palette[256];
    for (int c = 0; c < 256; ++c) {
      palette[c] = {static_cast<png_byte>(c * 20), static_cast<png_byte>(255 - c), static_cast<png_byte>(c * 7)};
    }
    for (long n = 1; n <= count; ++n) {
      Lcg rng{static_cast<uint64_t>(seed) * 1000003ULL + static_cast<uint64_t>(n)};
      std::vector<uint8_t> label(static_cast<size_t>(width * height), 1);  // 1: the background
      auto fill = [&](int64_t top, int64_t left, int64_t h, int64_t w, uint8_t c) {
        for (int64_t y = top; y < std::min<int64_t>(top + h, height); ++y) {
          for (int64_t x = left; x < std::min<int64_t>(left + w, width); ++x)
            label[static_cast<size_t>(y * width + x)] = c;
        }
      };
      fill(height / 8, width / 10, height, width - width / 5, 2);  // the facade
      for (int k = 0; k < 6 + rng.below(5); ++k) {
        const int64_t h = 4 + rng.below(height / 4), w = 4 + rng.below(width / 4);
        fill(rng.below(height - h), rng.below(width - w), h, w, static_cast<uint8_t>(3 + rng.below(10)));
      }
      std::vector<uint8_t> photo(static_cast<size_t>(3 * width * height));
      for (int64_t y = 0; y < height; ++y) {
        for (int64_t x = 0; x < width; ++x) {
          const uint8_t c = label[static_cast<size_t>(y * width + x)];
          for (int ch = 0; ch < 3; ++ch) {
            const int v = kColor[c][ch] + static_cast<int>(rng.below(13)) - 6;
            photo[static_cast<size_t>((ch * height + y) * width + x)] = static_cast<uint8_t>(std::clamp(v, 0, 255));
          }
        }
      }
      char name[32];
      std::snprintf(name, sizeof name, "/cmp_b%04ld", n);
      const std::string base = dir + name;
      D::write_image(base + ".jpg", rensa::Array::from_vector(photo, rensa::Shape{3, height, width}), 95);

      png_image image{};
      image.version = PNG_IMAGE_VERSION;
      image.width = static_cast<png_uint_32>(width);
      image.height = static_cast<png_uint_32>(height);
      image.format = PNG_FORMAT_RGB_COLORMAP;
      image.colormap_entries = 256;
      if (!png_image_write_to_file(&image, (base + ".png").c_str(), 0, label.data(), static_cast<png_int_32>(width),
                                   palette)) {
        std::cerr << "make_facades: cannot write " << base << ".png: " << image.message << '\n';
        return 1;
      }
      const rensa::Array back =
          D::read_image(base + ".png", {.dtype = rensa::Dtype::uint8, .color = D::ImageColor::palette});
      if (back.to_vector<uint8_t>() != label) {
        std::cerr << "make_facades: " << base << ".png does not read back as the indices written\n";
        return 1;
      }
    }
    std::cout << "make_facades: " << count << " pairs of " << width << " x " << height << " in " << dir << '\n';
  } catch (const rensa::Error& e) {
    std::cerr << "make_facades: " << e.what() << '\n';
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    std::cerr << "make_facades: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
