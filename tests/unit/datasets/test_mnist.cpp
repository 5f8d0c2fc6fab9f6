// The IDX reader and get_mnist / get_fashion_mnist: synthetic files (valid and broken in every way
// the reader checks) and, when installed, the real Fashion-MNIST.

#include <unistd.h>
#include <zlib.h>

#include <array>
#include <filesystem>
#include <fstream>

#include "rensa/datasets/mnist.h"
#include "rensa/datasets/tuple_dataset.h"
#include "tests/unit/test_util.h"

namespace rensa::datasets {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<unsigned char>;
using test::expect_error;

void put_be32(Bytes& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<unsigned char>(v >> s));
}

/// An IDX image: magic, dimensions, then `data`.
Bytes idx(uint32_t magic, const std::vector<uint32_t>& dims, const Bytes& data) {
  Bytes b;
  put_be32(b, magic);
  for (uint32_t d : dims) put_be32(b, d);
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

/// n images whose pixel k of image i is (i * 7 + k) % 256.
Bytes pixels(uint32_t n, uint32_t rows = 28, uint32_t cols = 28) {
  Bytes b;
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t k = 0; k < rows * cols; ++k) b.push_back(static_cast<unsigned char>((i * 7 + k) % 256));
  return b;
}

Bytes labels(uint32_t n) {
  Bytes b;
  for (uint32_t i = 0; i < n; ++i) b.push_back(static_cast<unsigned char>((i * 3) % 10));
  return b;
}

Bytes gzip(const Bytes& raw) {
  const fs::path tmp = fs::temp_directory_path() / ("rensa_gz_" + std::to_string(::getpid()));
  gzFile f = gzopen(tmp.c_str(), "wb");
  EXPECT_NE(f, nullptr);
  EXPECT_EQ(gzwrite(f, raw.data(), static_cast<unsigned>(raw.size())), static_cast<int>(raw.size()));
  gzclose(f);
  std::ifstream in(tmp, std::ios::binary);
  Bytes out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  fs::remove(tmp);
  return out;
}

void write_file(const fs::path& path, const Bytes& b) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

class Mnist : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("rensa_mnist_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// Writes a valid set: 5 training and 3 test examples, gzip-compressed.
  void write_valid(bool compressed = true) {
    const std::string ext = compressed ? ".gz" : "";
    auto enc = [&](const Bytes& b) { return compressed ? gzip(b) : b; };
    write_file(dir_ / ("train-images-idx3-ubyte" + ext), enc(idx(0x803, {5, 28, 28}, pixels(5))));
    write_file(dir_ / ("train-labels-idx1-ubyte" + ext), enc(idx(0x801, {5}, labels(5))));
    write_file(dir_ / ("t10k-images-idx3-ubyte" + ext), enc(idx(0x803, {3, 28, 28}, pixels(3))));
    write_file(dir_ / ("t10k-labels-idx1-ubyte" + ext), enc(idx(0x801, {3}, labels(3))));
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

TEST_F(Mnist, LoadsAValidSet) {
  write_valid();
  auto [train, test] = get_mnist(dir_.string());
  ASSERT_EQ(train->size(), 5);
  ASSERT_EQ(test->size(), 3);
  const auto& cols = dynamic_cast<const TupleDataset&>(*train).columns();
  ASSERT_EQ(cols.size(), 2u);
  EXPECT_EQ(cols[0].shape(), (Shape{5, 784}));
  EXPECT_EQ(cols[0].dtype(), Dtype::float32);
  EXPECT_EQ(cols[1].shape(), (Shape{5}));
  EXPECT_EQ(cols[1].dtype(), Dtype::int32);
  const Example ex = train->get_example(2);
  EXPECT_EQ(ex[0].shape(), (Shape{784}));
  EXPECT_FLOAT_EQ(ex[0].at<float>({0}), 14.0f / 255.0f);
  EXPECT_FLOAT_EQ(ex[0].at<float>({250}), static_cast<float>((14 + 250) % 256) / 255.0f);
  EXPECT_EQ(ex[1].item<int>(), 6);
  EXPECT_EQ(test->get_example(1)[1].item<int>(), 3);
  // Every example is a view of the one column array.
  EXPECT_TRUE(ex[0].shares_storage(cols[0]));
}

TEST_F(Mnist, Options) {
  write_valid();
  auto [t2, _a] = get_mnist(dir_.string(), {.ndim = 2});
  EXPECT_EQ(t2->get_example(0)[0].shape(), (Shape{28, 28}));
  auto [t3, _b] = get_mnist(dir_.string(), {.ndim = 3, .scale = 2.0, .dtype = Dtype::float64, .label_dtype = Dtype::int64});
  const Example e3 = t3->get_example(1);
  EXPECT_EQ(e3[0].shape(), (Shape{1, 28, 28}));
  EXPECT_EQ(e3[0].dtype(), Dtype::float64);
  EXPECT_DOUBLE_EQ(e3[0].at<double>({0, 0, 3}), 10.0 * 2.0 / 255.0);
  EXPECT_EQ(e3[1].dtype(), Dtype::int64);
  auto [rgb, _c] = get_mnist(dir_.string(), {.ndim = 3, .rgb_format = true});
  const Example er = rgb->get_example(1);
  EXPECT_EQ(er[0].shape(), (Shape{3, 28, 28}));
  EXPECT_EQ(er[0].at<float>({2, 0, 3}), er[0].at<float>({0, 0, 3}));
  auto [nolabel, _d] = get_mnist(dir_.string(), {.withlabel = false});
  EXPECT_EQ(nolabel->get_example(0).size(), 1u);
  // Other dtypes hold the float32 values rounded once (loaded without a float32 copy of the split).
  auto [f32, _g] = get_mnist(dir_.string(), {.scale = 3.0});
  for (Dtype d : {Dtype::float16, Dtype::bfloat16, Dtype::int32}) {
    auto [other, _e] = get_mnist(dir_.string(), {.scale = 3.0, .dtype = d});
    for (int64_t i = 0; i < other->size(); ++i) {
      const Array got = other->get_example(i)[0];
      EXPECT_EQ(got.dtype(), d);
      EXPECT_EQ(got.to_vector<double>(), f32->get_example(i)[0].astype(d).to_vector<double>()) << dtype_name(d);
    }
  }
  auto [fashion, _f] = get_fashion_mnist({.dir = dir_.string()});
  EXPECT_EQ(fashion->size(), 5);
  expect_error<ValueError>([&] { get_mnist(dir_.string(), {.ndim = 4}); }, {"get_mnist", "ndim", "4"});
}

TEST_F(Mnist, AcceptsUncompressedFiles) {
  write_valid(false);
  auto [train, test] = get_mnist(dir_.string());
  EXPECT_EQ(train->size(), 5);
  EXPECT_EQ(test->get_example(2)[1].item<int>(), 6);
}

TEST_F(Mnist, MultiMemberGzip) {
  write_valid();
  Bytes whole = idx(0x801, {5}, labels(5));
  Bytes a(whole.begin(), whole.begin() + 6), b(whole.begin() + 6, whole.end());
  Bytes cat = gzip(a);
  const Bytes gb = gzip(b);
  cat.insert(cat.end(), gb.begin(), gb.end());
  write_file(dir_ / "train-labels-idx1-ubyte.gz", cat);
  EXPECT_EQ(get_mnist(dir_.string()).first->get_example(4)[1].item<int>(), 2);
}

TEST_F(Mnist, TruncatedPixels) {
  write_valid();
  Bytes short_data = idx(0x803, {5, 28, 28}, pixels(5));
  short_data.resize(16 + 1000);
  write_file(dir_ / "train-images-idx3-ubyte.gz", gzip(short_data));
  expect_error<IOError>([&] { get_mnist(dir_.string()); },
                        {path("train-images-idx3-ubyte.gz"), "expected 3920 bytes of pixels after the header, found 1000"});
}

TEST_F(Mnist, TruncatedHeader) {
  write_valid();
  write_file(dir_ / "t10k-images-idx3-ubyte.gz", gzip(Bytes{0, 0, 8, 3, 0, 0}));
  expect_error<IOError>([&] { get_mnist(dir_.string()); }, {path("t10k-images-idx3-ubyte.gz"), "truncated header"});
  write_file(dir_ / "t10k-images-idx3-ubyte.gz", gzip(Bytes{0, 0}));
  expect_error<IOError>([&] { get_mnist(dir_.string()); }, {path("t10k-images-idx3-ubyte.gz"), "truncated header"});
  write_file(dir_ / "t10k-images-idx3-ubyte.gz", gzip(Bytes{}));
  expect_error<IOError>([&] { get_mnist(dir_.string()); }, {path("t10k-images-idx3-ubyte.gz"), "truncated header"});
}

TEST_F(Mnist, TrailingBytes) {
  write_valid();
  Bytes data = idx(0x801, {3}, labels(3));
  data.insert(data.end(), {1, 2, 3, 4, 5});
  write_file(dir_ / "t10k-labels-idx1-ubyte.gz", gzip(data));
  expect_error<IOError>([&] { get_mnist(dir_.string()); },
                        {path("t10k-labels-idx1-ubyte.gz"), "expected 3 bytes of labels", "found 8", "5 trailing bytes"});
}

TEST_F(Mnist, WrongMagic) {
  write_valid();
  write_file(dir_ / "train-labels-idx1-ubyte.gz", gzip(idx(0x803, {5, 28, 28}, pixels(5))));
  expect_error<IOError>([&] { get_mnist(dir_.string()); },
                        {path("train-labels-idx1-ubyte.gz"), "bad magic number 0x00000803", "expected 0x00000801"});
  write_file(dir_ / "train-labels-idx1-ubyte.gz", gzip(Bytes{'h', 'e', 'l', 'l', 'o'}));
  expect_error<IOError>([&] { get_mnist(dir_.string()); }, {path("train-labels-idx1-ubyte.gz"), "bad magic number"});
}

TEST_F(Mnist, WrongCounts) {
  write_valid();
  write_file(dir_ / "train-labels-idx1-ubyte.gz", gzip(idx(0x801, {4}, labels(4))));
  expect_error<IOError>([&] { get_mnist(dir_.string()); },
                        {path("train-images-idx3-ubyte.gz"), "5 images", path("train-labels-idx1-ubyte.gz"), "4 labels"});
}

TEST_F(Mnist, WrongImageSize) {
  write_valid();
  write_file(dir_ / "train-images-idx3-ubyte.gz", gzip(idx(0x803, {5, 28, 27}, pixels(5, 28, 27))));
  expect_error<IOError>([&] { get_mnist(dir_.string()); },
                        {path("train-images-idx3-ubyte.gz"), "28x28", "(5, 28, 27)"});
}

TEST_F(Mnist, BadLabel) {
  write_valid();
  Bytes lab = labels(5);
  lab[3] = 12;
  write_file(dir_ / "train-labels-idx1-ubyte.gz", gzip(idx(0x801, {5}, lab)));
  expect_error<IOError>([&] { get_mnist(dir_.string()); },
                        {path("train-labels-idx1-ubyte.gz"), "label 12 of example 3", "0..9"});
}

TEST_F(Mnist, BrokenGzip) {
  write_valid();
  const Bytes good = gzip(idx(0x803, {5, 28, 28}, pixels(5)));
  Bytes cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(good.size() / 2));
  write_file(dir_ / "train-images-idx3-ubyte.gz", cut);
  expect_error<IOError>([&] { get_mnist(dir_.string()); }, {path("train-images-idx3-ubyte.gz"), "truncated"});
  Bytes corrupt = good;
  for (std::size_t i = 12; i < 40; ++i) corrupt[i] ^= 0x5a;
  write_file(dir_ / "train-images-idx3-ubyte.gz", corrupt);
  expect_error<IOError>([&] { get_mnist(dir_.string()); }, {path("train-images-idx3-ubyte.gz"), "gzip"});
  Bytes garbage = good;
  garbage.insert(garbage.end(), {'x', 'y', 'z'});
  write_file(dir_ / "train-images-idx3-ubyte.gz", garbage);
  expect_error<IOError>([&] { get_mnist(dir_.string()); },
                        {path("train-images-idx3-ubyte.gz"), "3 bytes of trailing garbage"});
}

TEST_F(Mnist, MissingFilesAndDirectories) {
  write_valid();
  fs::remove(dir_ / "t10k-labels-idx1-ubyte.gz");
  expect_error<IOError>([&] { get_mnist(dir_.string()); }, {"get_mnist", path("t10k-labels-idx1-ubyte.gz")});
  expect_error<IOError>([&] { get_fashion_mnist({.dir = dir_.string()}); },
                        {"get_fashion_mnist", path("t10k-labels-idx1-ubyte.gz"), "dataset-fashion-mnist", "scripts/setup"});
  const std::string missing = (dir_ / "nowhere").string();
  expect_error<IOError>([&] { get_mnist(missing); }, {"get_mnist", missing, "does not exist"});
  expect_error<IOError>([&] { get_fashion_mnist({.dir = missing}); },
                        {"get_fashion_mnist", missing, "dataset-fashion-mnist"});
  expect_error<IOError>([&] { read_idx(missing); }, {missing, "cannot open"});
  // Regression: a regular file was reported as "does not exist".
  const std::string file = path("t10k-images-idx3-ubyte.gz");
  expect_error<IOError>([&] { get_mnist(file); }, {"get_mnist", file, "is not a directory"});
  try {
    get_mnist(file);
  } catch (const IOError& e) {
    EXPECT_EQ(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
}

// ---- parse_idx ------------------------------------------------------------------------------------

TEST(ParseIdx, GenericShapesRawAndCompressed) {
  const Bytes raw = idx(0x802, {2, 3}, {1, 2, 3, 4, 5, 6});
  for (const Bytes& b : {raw, gzip(raw)}) {
    const Array a = parse_idx(b.data(), b.size(), "mem");
    EXPECT_EQ(a.shape(), (Shape{2, 3}));
    EXPECT_EQ(a.dtype(), Dtype::uint8);
    EXPECT_EQ(a.to_vector<int>(), (std::vector<int>{1, 2, 3, 4, 5, 6}));
  }
  const Bytes empty = idx(0x801, {0}, {});
  EXPECT_EQ(parse_idx(empty.data(), empty.size(), "mem").shape(), (Shape{0}));
  expect_error<IOError>([&] { parse_idx(raw.data(), raw.size(), "mem", 1); }, {"mem", "0x00000802", "0x00000801"});
}

TEST(ParseIdx, RejectsBadHeaders) {
  const Bytes floats = idx(0x0d01, {1}, {0, 0, 0, 0});
  expect_error<IOError>([&] { parse_idx(floats.data(), floats.size(), "mem"); }, {"mem", "data type 0x0000000d"});
  const Bytes not_idx = idx(0x12340801, {1}, {0});
  expect_error<IOError>([&] { parse_idx(not_idx.data(), not_idx.size(), "mem"); }, {"mem", "0x12340801"});
  // Dimensions whose product is absurd are refused before any allocation.
  const Bytes huge = idx(0x803, {0xffffffffu, 0xffffffffu, 0xffffffffu}, {});
  expect_error<IOError>([&] { parse_idx(huge.data(), huge.size(), "mem"); }, {"mem", "larger than"});
  const Bytes empty_but_huge = idx(0x803, {0, 0xffffffffu, 0xffffffffu}, {});
  expect_error<IOError>([&] { parse_idx(empty_but_huge.data(), empty_but_huge.size(), "mem"); }, {"mem", "larger than"});
  const Bytes big = idx(0x803, {60000, 28, 28}, {1, 2, 3});
  expect_error<IOError>([&] { parse_idx(big.data(), big.size(), "mem"); },
                        {"mem", "expected 47040000 bytes of data after the header, found 3"});
}

// ---- the real Fashion-MNIST -----------------------------------------------------------------------

TEST(FashionMnist, RealDataset) {
  if (!fs::is_directory(kFashionMnistDir)) GTEST_SKIP() << kFashionMnistDir << " is not installed";
  auto [train, test] = get_fashion_mnist();
  ASSERT_EQ(train->size(), 60000);
  ASSERT_EQ(test->size(), 10000);
  for (const auto& ds : {train, test}) {
    const auto& cols = dynamic_cast<const TupleDataset&>(*ds).columns();
    const std::vector<float> x = cols[0].to_vector<float>();
    const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
    EXPECT_EQ(*lo, 0.0f);
    EXPECT_EQ(*hi, 1.0f);
    std::array<int64_t, 10> hist{};
    for (int t : cols[1].to_vector<int>()) hist.at(static_cast<std::size_t>(t))++;
    for (int64_t h : hist) EXPECT_EQ(h, ds->size() / 10);
  }
}

}  // namespace
}  // namespace rensa::datasets
