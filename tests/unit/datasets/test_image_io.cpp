// Image decoding and encoding: pixels against values PIL decodes from the same files, the colour
// modes, reduced-size decoding, round trips, and what corrupt, truncated and foreign bytes get.
#include <filesystem>
#include <fstream>
#include <cmath>
#include <numeric>
#include <thread>

#include "rensa/datasets/image_io.h"
#include "rensa/serializers/npz.h"
#include "tests/unit/serializers/npz_test_util.h"
#include "tests/unit/test_util.h"

namespace rensa::datasets {
namespace {

using test::expect_error;

std::string fixture(const std::string& name) { return std::string(RENSA_TEST_IMAGES_DIR) + "/" + name; }

int64_t pixel_sum(const Array& a) {
  const std::vector<int64_t> v = a.astype(Dtype::int64).to_vector<int64_t>();
  return std::accumulate(v.begin(), v.end(), int64_t{0});
}

/// The first `n` values in (H, W, C) order, as PIL's numpy.asarray lists them.
std::vector<int64_t> first_hwc(const Array& chw, std::size_t n) {
  const Array hwc = chw.transpose({1, 2, 0}).astype(Dtype::int64).copy();
  std::vector<int64_t> v = hwc.to_vector<int64_t>();
  v.resize(n);
  return v;
}

TEST(ImageIo, DecodesAsPilDoes) {
  // Values from PIL 9.4 (numpy.asarray(Image.open(f))) on the same files.
  const Array png = read_image(fixture("rgb.png"), {.dtype = Dtype::uint8});
  EXPECT_EQ(png.shape(), (Shape{3, 12, 16}));
  EXPECT_EQ(png.dtype(), Dtype::uint8);
  EXPECT_EQ(first_hwc(png, 6), (std::vector<int64_t>{162, 68, 10, 4, 207, 232}));
  EXPECT_EQ(pixel_sum(png), 76737);
  // libjpeg-turbo with its default (accurate) DCT, as PIL.
  const Array jpg = read_image(fixture("rgb.jpg"), {.dtype = Dtype::uint8});
  EXPECT_EQ(first_hwc(jpg, 6), (std::vector<int64_t>{14, 132, 74, 104, 179, 122}));
  EXPECT_EQ(pixel_sum(jpg), 76811);
  const Array gray = read_image(fixture("gray.jpg"), {.dtype = Dtype::uint8});
  EXPECT_EQ(gray.shape(), (Shape{1, 12, 16}));
  EXPECT_EQ(first_hwc(gray, 6), (std::vector<int64_t>{164, 3, 161, 246, 203, 48}));
  EXPECT_EQ(pixel_sum(gray), 25939);
}

TEST(ImageIo, FloatDtypeHoldsTheSameValues) {
  const Array u8 = read_image(fixture("rgb.png"), {.dtype = Dtype::uint8});
  const Array f32 = read_image(fixture("rgb.png"));  // Chainer's default dtype
  EXPECT_EQ(f32.dtype(), Dtype::float32);
  EXPECT_TRUE(array_equal(u8.astype(Dtype::float32), f32));
  expect_error<ValueError>([&] { read_image(fixture("rgb.png"), {.dtype = Dtype::int32}); },
                           {"decode_image", "uint8 or floating", "int32"});
}

TEST(ImageIo, ColorModes) {
  struct Case {
    const char* file;
    int64_t stored;
  };
  for (const Case& c : {Case{"rgb.png", 3}, Case{"gray.png", 1}, Case{"rgba.png", 4}, Case{"palette.png", 3},
                        Case{"gray16.png", 1}, Case{"rgb.jpg", 3}, Case{"gray.jpg", 1}, Case{"cmyk.jpg", 3},
                        Case{"rgb_progressive.jpg", 3}}) {
    SCOPED_TRACE(c.file);
    const Array stored = read_image(fixture(c.file), {.dtype = Dtype::uint8});
    EXPECT_EQ(stored.shape()[0], c.stored);
    const Array rgb = read_image(fixture(c.file), {.dtype = Dtype::uint8, .color = ImageColor::rgb});
    const Array gray = read_image(fixture(c.file), {.dtype = Dtype::uint8, .color = ImageColor::gray});
    EXPECT_EQ(rgb.shape(), (Shape{3, stored.shape()[1], stored.shape()[2]}));
    EXPECT_EQ(gray.shape(), (Shape{1, stored.shape()[1], stored.shape()[2]}));
    const std::string bytes = read_file_bytes(fixture(c.file));
    const ImageInfo info = image_info(bytes.data(), bytes.size(), c.file);
    EXPECT_EQ(info.height, stored.shape()[1]);
    EXPECT_EQ(info.width, stored.shape()[2]);
  }
  // Gray to RGB repeats the channel; RGBA to RGB drops alpha.
  const Array g = read_image(fixture("gray.png"), {.dtype = Dtype::uint8});
  const Array g3 = read_image(fixture("gray.png"), {.dtype = Dtype::uint8, .color = ImageColor::rgb});
  for (int64_t c = 0; c < 3; ++c) EXPECT_TRUE(array_equal(g3.slice(0, c, c + 1), g));
  const Array rgba = read_image(fixture("rgba.png"), {.dtype = Dtype::uint8});
  const Array rgb = read_image(fixture("rgba.png"), {.dtype = Dtype::uint8, .color = ImageColor::rgb});
  EXPECT_TRUE(array_equal(rgba.slice(0, 0, 3), rgb));
  // RGB to gray: ITU-R 601 luma, rounded, as PIL's convert("L").
  const Array px = read_image(fixture("rgb.png"), {.dtype = Dtype::uint8});
  const Array lum = read_image(fixture("rgb.png"), {.dtype = Dtype::uint8, .color = ImageColor::gray});
  EXPECT_EQ(first_hwc(lum, 1)[0], (162 * 299 + 68 * 587 + 10 * 114 + 500) / 1000);
  (void)px;
}

TEST(ImageIo, PaletteIndicesAsPilGivesThem) {
  // Values from PIL 9.4 (numpy.asarray(Image.open(f)), mode "P"). palette4.png: 4 bits per pixel,
  // entry 7 the same colour as entry 3, entry 2 transparent; the indices must stay apart.
  const Array small = read_image(fixture("palette4.png"), {.dtype = Dtype::uint8, .color = ImageColor::palette});
  EXPECT_EQ(small.shape(), (Shape{1, 6, 10}));
  EXPECT_EQ(first_hwc(small, 12), (std::vector<int64_t>{3, 6, 6, 0, 9, 8, 4, 7, 11, 0, 0, 7}));
  EXPECT_EQ(pixel_sum(small), 316);
  const Array big = read_image(fixture("palette.png"), {.color = ImageColor::palette});
  EXPECT_EQ(big.dtype(), Dtype::float32);
  EXPECT_EQ(first_hwc(big, 6), (std::vector<int64_t>{19, 214, 145, 39, 158, 143}));
  EXPECT_EQ(pixel_sum(big), 22749);
  // Without a palette there are no indices to give.
  expect_error<IOError>([&] { read_image(fixture("rgb.png"), {.color = ImageColor::palette}); },
                        {"rgb.png", "palette PNG", "3 channels"});
  expect_error<IOError>([&] { read_image(fixture("rgb.jpg"), {.color = ImageColor::palette}); },
                        {"rgb.jpg", "JPEG has no palette"});
}

TEST(ImageIo, RoundTripsAndReducedSizeDecoding) {
  test::TempDir dir;
  // A smooth 3 x 64 x 96 image survives PNG exactly and JPEG closely.
  std::vector<uint8_t> v(3 * 64 * 96);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>((i % 96) + (i / 96 % 64) + 40 * (i / 6144));
  const Array image = Array::from_vector(v, Shape{3, 64, 96});
  write_image(dir.path().string() + "/a.png", image);
  EXPECT_TRUE(array_equal(read_image(dir.path().string() + "/a.png", {.dtype = Dtype::uint8}), image));
  write_image(dir.path().string() + "/a.jpg", image, 95);
  const Array jpg = read_image(dir.path().string() + "/a.jpg");
  EXPECT_EQ(jpg.shape(), image.shape());
  {
    const std::vector<float> a = jpg.to_vector<float>();
    double worst = 0;
    for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(static_cast<double>(a[i]) - v[i]));
    EXPECT_LT(worst, 12.0);
  }
  // min_size picks the smallest DCT scale whose shorter side is still >= min_size.
  EXPECT_EQ(read_image(dir.path().string() + "/a.jpg", {.min_size = 30}).shape(), (Shape{3, 32, 48}));
  EXPECT_EQ(read_image(dir.path().string() + "/a.jpg", {.min_size = 8}).shape(), (Shape{3, 8, 12}));
  EXPECT_EQ(read_image(dir.path().string() + "/a.jpg", {.min_size = 17}).shape(), (Shape{3, 32, 48}));
  EXPECT_EQ(read_image(dir.path().string() + "/a.jpg", {.min_size = 33}).shape(), (Shape{3, 64, 96}));
  EXPECT_EQ(read_image(dir.path().string() + "/a.jpg", {.min_size = 1000}).shape(), (Shape{3, 64, 96}));
  EXPECT_EQ(read_image(dir.path().string() + "/a.png", {.min_size = 8}).shape(), (Shape{3, 64, 96}));  // PNG: full size
  // 2-d and float images are written too; the extension picks the format.
  write_image(dir.path().string() + "/g.png", Array::full(Shape{5, 6}, 300.0));
  EXPECT_EQ(pixel_sum(read_image(dir.path().string() + "/g.png", {.dtype = Dtype::uint8})), 255 * 30);  // clamped
  expect_error<ValueError>([&] { write_image(dir.path().string() + "/a.gif", image); }, {"write_image", "a.gif", ".png"});
  expect_error<ShapeError>([&] { encode_image(Array::zeros(Shape{2, 4, 4})); }, {"encode_image", "(2, 4, 4)"});
  // No temporary file is left behind.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) files += e.is_regular_file();
  EXPECT_EQ(files, 3);
}

TEST(ImageIo, BadBytesAreErrorsNamingTheFile) {
  test::TempDir dir;
  const std::string good = read_file_bytes(fixture("rgb.jpg"));
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir.path().string() + "/" + name, std::ios::binary) << bytes;
    return dir.path().string() + "/" + name;
  };
  expect_error<IOError>([&] { read_image(write("text.jpg", "hello world")); },
                        {"text.jpg", "not a JPEG or PNG", "68 65 6c 6c"});
  expect_error<IOError>([&] { read_image(write("empty.png", "")); }, {"empty.png", "empty"});
  expect_error<IOError>([&] { read_image(write("cut.jpg", good.substr(0, good.size() / 2))); },
                        {"cut.jpg", "JPEG", "libjpeg-turbo"});
  std::string corrupt = good;
  for (std::size_t i = 200; i < corrupt.size() - 2; i += 7) corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5a);
  expect_error<IOError>([&] { read_image(write("bad.jpg", corrupt)); }, {"bad.jpg", "JPEG"});
  const std::string png = read_file_bytes(fixture("rgb.png"));
  expect_error<IOError>([&] { read_image(write("cut.png", png.substr(0, png.size() - 30))); },
                        {"cut.png", "PNG", "libpng"});
  expect_error<IOError>([&] { read_image(dir.path().string() + "/missing.png"); }, {"missing.png", "cannot open"});
  // Every prefix of a valid file is an error or an image, never a crash.
  for (std::size_t n = 0; n < good.size(); n += 13) {
    try {
      (void)decode_image(good.data(), n, "prefix");
    } catch (const IOError&) {
    }
  }
}

TEST(ImageIo, AFailedDecodeLeavesNoStateBehind) {
  // Regression (found by fuzzing): after a failed decode, a JPEG with an Adobe marker was once
  // decoded at a size other than its header's. Each call now has its own decoder.
  const std::string good = read_file_bytes(fixture("regression-handle-reuse.jpg"));
  const std::string cut = read_file_bytes(fixture("rgb.jpg")).substr(0, 300);
  for (int k = 0; k < 3; ++k) {
    EXPECT_THROW((void)decode_image(cut.data(), cut.size(), "cut"), IOError);
    const ImageInfo info = image_info(good.data(), good.size(), "good");
    for (const ImageColor c : {ImageColor::stored, ImageColor::gray, ImageColor::rgb}) {
      const Array a = decode_image(good.data(), good.size(), "good", {.dtype = Dtype::uint8, .color = c});
      EXPECT_EQ(a.shape()[1], info.height);
      EXPECT_EQ(a.shape()[2], info.width);
    }
  }
}

TEST(ImageIo, ReusedBuffersGiveTheSameImages) {
  // Each thread decodes into a buffer it keeps: an image decoded after a larger one (whose pixels
  // are still in that buffer) equals the same image decoded on a fresh thread.
  const std::vector<std::string> files = {"rgb.jpg", "cmyk.jpg", "gray.jpg", "rgb_progressive.jpg",
                                          "rgb.png", "rgba.png", "gray.png", "palette.png"};
  std::vector<Array> fresh;
  std::thread([&] {
    for (const std::string& f : files) {
      for (const ImageColor c : {ImageColor::stored, ImageColor::rgb, ImageColor::gray}) {
        fresh.push_back(read_image(fixture(f), {.dtype = Dtype::uint8, .color = c}));
      }
    }
  }).join();
  std::vector<uint8_t> big(3 * 64 * 96);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 13 % 256);
  const std::string large = encode_image(Array::from_vector(big, Shape{3, 64, 96}), "png");
  std::size_t k = 0;
  for (const std::string& f : files) {
    for (const ImageColor c : {ImageColor::stored, ImageColor::rgb, ImageColor::gray}) {
      (void)decode_image(large.data(), large.size(), "large", {.dtype = Dtype::uint8});
      EXPECT_TRUE(array_equal(read_image(fixture(f), {.dtype = Dtype::uint8, .color = c}), fresh[k++])) << f;
    }
  }
}

TEST(ImageIo, ReadNpy) {
  test::TempDir dir;
  const Array mean = Array::arange(0.0, 24.0, 1.0, Dtype::float32).reshape(Shape{3, 2, 4});
  serializers::write_npy(dir.path().string() + "/mean.npy", mean);
  EXPECT_TRUE(array_equal(serializers::read_npy(dir.path().string() + "/mean.npy"), mean));
  expect_error<IOError>([&] { serializers::read_npy(dir.path().string() + "/none.npy"); }, {"read_npy", "none.npy"});
}

}  // namespace
}  // namespace rensa::datasets
