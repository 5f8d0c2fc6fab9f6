// The readers of downloaded datasets on small files written here in each dataset's format: CIFAR-10
// and -100 binaries, SVHN's MAT-files (plain and compressed), Kuzushiji-MNIST's npz, PTB's text;
// TextDataset; and what missing or malformed files get.
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "rensa/datasets/cifar.h"
#include "rensa/datasets/dataset_root.h"
#include "rensa/datasets/mnist.h"
#include "rensa/datasets/ptb.h"
#include "rensa/datasets/svhn.h"
#include "rensa/datasets/text_dataset.h"
#include "rensa/serializers/npz.h"
#include "src/datasets/mat_file.h"
#include "tests/unit/serializers/npz_test_util.h"
#include "tests/unit/test_util.h"

namespace rensa::datasets {
namespace {

using test::expect_error;

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

/// A CIFAR record: label byte(s), then pixel k of the record = (seed + k) % 256.
std::string cifar_record(std::vector<int> labels, int seed) {
  std::string r;
  for (int l : labels) r += static_cast<char>(l);
  for (int k = 0; k < 3072; ++k) r += static_cast<char>((seed + k) % 256);
  return r;
}

TEST(Cifar, ReadsTheBinaryDistribution) {
  test::TempDir dir;
  const std::string d = dir.path().string();
  for (int b = 1; b <= 5; ++b) {
    write_bytes(d + "/data_batch_" + std::to_string(b) + ".bin", cifar_record({b}, b) + cifar_record({9}, 100 + b));
  }
  write_bytes(d + "/test_batch.bin", cifar_record({3}, 7));
  auto [train, test] = get_cifar10({.scale = 2.0, .dir = d});
  ASSERT_EQ(train->size(), 10);
  ASSERT_EQ(test->size(), 1);
  const Example ex = train->get_example(2);  // batch 2, record 0
  EXPECT_EQ(ex[0].shape(), (Shape{3, 32, 32}));
  EXPECT_EQ(ex[1].item<int32_t>(), 2);
  EXPECT_FLOAT_EQ(ex[0].to_vector<float>()[1024], static_cast<float>((2 + 1024) % 256) * 2.0f / 255.0f);
  auto [flat, flat_test] = get_cifar10({.withlabel = false, .ndim = 1, .dtype = Dtype::float64, .dir = d});
  EXPECT_EQ(flat->get_example(0).size(), 1u);
  EXPECT_EQ(flat->get_example(0)[0].shape(), (Shape{3072}));
  expect_error<ValueError>([&] { get_cifar10({.ndim = 2, .dir = d}); }, {"get_cifar10", "ndim"});
  // CIFAR-100: the fine label (second byte).
  write_bytes(d + "/train.bin", cifar_record({1, 77}, 0));
  write_bytes(d + "/test.bin", cifar_record({2, 99}, 0));
  auto [train100, test100] = get_cifar100({.dir = d});
  EXPECT_EQ(train100->get_example(0)[1].item<int32_t>(), 77);
  // Errors name the file and where the data comes from.
  std::filesystem::remove(d + "/test_batch.bin");
  expect_error<IOError>([&] { get_cifar10({.dir = d}); }, {"get_cifar10", "test_batch.bin", "cifar-10-binary.tar.gz"});
  write_bytes(d + "/test_batch.bin", cifar_record({3}, 7).substr(0, 100));
  expect_error<IOError>([&] { get_cifar10({.dir = d}); }, {"test_batch.bin", "100 bytes", "3073-byte records"});
  write_bytes(d + "/test_batch.bin", cifar_record({10}, 7));
  expect_error<IOError>([&] { get_cifar10({.dir = d}); }, {"test_batch.bin", "label 10"});
}

// --- MAT-files ---------------------------------------------------------------------------------

void put32(std::string& s, uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); }

/// An element: tag, data, padding to 8 bytes.
std::string element(uint32_t type, const std::string& data) {
  std::string s;
  put32(s, type);
  put32(s, static_cast<uint32_t>(data.size()));
  s += data;
  s.append((8 - data.size() % 8) % 8, '\0');
  return s;
}

/// A miMATRIX of class `cls` with MATLAB dims, name and data of type `data_type`.
std::string matrix(uint32_t cls, std::vector<int32_t> dims, const std::string& name, uint32_t data_type,
                   const std::string& data) {
  std::string flags;
  put32(flags, cls);
  put32(flags, 0);
  std::string d(reinterpret_cast<const char*>(dims.data()), dims.size() * 4);
  const std::string body =
      element(6, flags) + element(5, d) + element(1, name) + element(data_type, data);
  return element(14, body);
}

std::string mat_header() {
  std::string h = "MATLAB 5.0 MAT-file, written by a test";
  h.resize(124, ' ');
  h += '\x00';
  h += '\x01';
  h += "IM";
  return h;
}

std::string compressed(const std::string& inner) {
  uLongf n = compressBound(inner.size());
  std::string out(n, '\0');
  compress(reinterpret_cast<Bytef*>(out.data()), &n, reinterpret_cast<const Bytef*>(inner.data()), inner.size());
  out.resize(n);
  std::string s;
  put32(s, 15);
  put32(s, static_cast<uint32_t>(out.size()));
  return s + out;
}

/// SVHN's layout: X (32, 32, 3, N) uint8 with X[h][w][c][n] = (h + 2w + 3c + 5n) % 256, y (N, 1).
std::string svhn_mat(int n, const std::vector<double>& labels, bool zip) {
  std::string x(static_cast<std::size_t>(32 * 32 * 3 * n), '\0');
  for (int k = 0; k < n; ++k)
    for (int c = 0; c < 3; ++c)
      for (int w = 0; w < 32; ++w)
        for (int h = 0; h < 32; ++h) x[static_cast<std::size_t>(h + 32 * (w + 32 * (c + 3 * k)))] =
            static_cast<char>((h + 2 * w + 3 * c + 5 * k) % 256);
  const std::string y(reinterpret_cast<const char*>(labels.data()), labels.size() * 8);
  const std::string body = matrix(9, {32, 32, 3, n}, "X", 2, x) + matrix(6, {n, 1}, "y", 9, y);
  return mat_header() + (zip ? compressed(body) : body);
}

TEST(Svhn, ReadsTheMatFiles) {
  test::TempDir dir;
  const std::string d = dir.path().string();
  write_bytes(d + "/train_32x32.mat", svhn_mat(2, {10, 4}, false));
  write_bytes(d + "/test_32x32.mat", svhn_mat(1, {7}, true));
  const std::vector<DatasetPtr> s = get_svhn({.scale = 255.0, .label_dtype = Dtype::int64, .dir = d});
  ASSERT_EQ(s.size(), 2u);
  ASSERT_EQ(s[0]->size(), 2);
  const Example ex = s[0]->get_example(1);
  EXPECT_EQ(ex[0].shape(), (Shape{3, 32, 32}));
  EXPECT_EQ(ex[1].item<int64_t>(), 4);
  EXPECT_EQ(s[0]->get_example(0)[1].item<int64_t>(), 0);  // label 10 is the digit 0
  // Chainer's transpose(3, 2, 0, 1): image n, channel c, row h, column w.
  const std::vector<float> v = ex[0].to_vector<float>();
  EXPECT_FLOAT_EQ(v[2 * 1024 + 5 * 32 + 7], static_cast<float>((5 + 2 * 7 + 3 * 2 + 5 * 1) % 256));
  EXPECT_EQ(s[1]->get_example(0)[1].item<int64_t>(), 7);  // the compressed file
  expect_error<IOError>([&] { get_svhn({.add_extra = true, .dir = d}); },
                        {"get_svhn", "extra_32x32.mat", "ufldl.stanford.edu"});
}

TEST(MatFile, MalformedFilesAreErrors) {
  const std::string good = svhn_mat(1, {3}, true);
  EXPECT_EQ(detail::parse_mat(good.data(), good.size(), "m").size(), 2u);
  expect_error<IOError>([] { detail::parse_mat("short", 5, "a.mat"); }, {"a.mat", "too short"});
  std::string v73 = good;
  std::memcpy(v73.data(), "MATLAB 7.3 MAT-file", 19);
  expect_error<IOError>([&] { detail::parse_mat(v73.data(), v73.size(), "b.mat"); }, {"b.mat", "-v7.3"});
  for (std::size_t n = 128; n < good.size(); n += 5) {  // every prefix: an error, never a crash
    try {
      (void)detail::parse_mat(good.data(), n, "prefix");
    } catch (const IOError&) {
    }
  }
  std::string bad = good;
  bad[140] = static_cast<char>(bad[140] ^ 0x55);  // inside the zlib stream
  expect_error<IOError>([&] { detail::parse_mat(bad.data(), bad.size(), "c.mat"); }, {"c.mat"});
}

TEST(KuzushijiMnist, ReadsTheNpzFiles) {
  test::TempDir dir;
  const std::string d = dir.path().string();
  const Array imgs = Array::arange(0.0, 2 * 784, 1.0, Dtype::float64).reshape(Shape{2, 28, 28});
  std::vector<uint8_t> px(2 * 784);
  for (std::size_t k = 0; k < px.size(); ++k) px[k] = static_cast<uint8_t>(k % 256);
  for (const char* split : {"train", "test"}) {
    serializers::write_npz(d + "/kmnist-" + split + "-imgs.npz", {{"arr_0", Array::from_vector(px, Shape{2, 28, 28})}});
    serializers::write_npz(d + "/kmnist-" + split + "-labels.npz",
                           {{"arr_0", Array::from_vector(std::vector<uint8_t>{3, 9})}});
  }
  auto [train, test] = get_kuzushiji_mnist({.ndim = 3, .dir = d});
  EXPECT_EQ(train->get_example(1)[0].shape(), (Shape{1, 28, 28}));
  EXPECT_EQ(train->get_example(1)[1].item<int32_t>(), 9);
  EXPECT_FLOAT_EQ(train->get_example(0)[0].to_vector<float>()[300], 44.0f / 255.0f);
  EXPECT_EQ(get_kuzushiji_mnist_labels()[9], (std::pair<std::string, std::string>{"wo", "\u3092"}));
  EXPECT_EQ(get_fashion_mnist_labels()[9], "Ankle boot");
  std::filesystem::remove(d + "/kmnist-test-labels.npz");
  expect_error<IOError>([&] { get_kuzushiji_mnist({.dir = d}); }, {"kmnist-test-labels.npz", "codh.rois.ac.jp"});
  (void)imgs;
}

TEST(Ptb, WordsAndVocabularyAsChainer) {
  test::TempDir dir;
  const std::string d = dir.path().string();
  write_bytes(d + "/ptb.train.txt", " the cat <unk>\n the dog\n");
  write_bytes(d + "/ptb.valid.txt", " dog cat\n");
  write_bytes(d + "/ptb.test.txt", " the\n");
  const auto vocab = get_ptb_words_vocabulary(d);
  EXPECT_EQ(vocab.size(), 5u);
  EXPECT_EQ(vocab.at("the"), 0);
  EXPECT_EQ(vocab.at("<eos>"), 3);
  EXPECT_EQ(vocab.at("dog"), 4);
  auto [train, valid, test] = get_ptb_words(d);
  EXPECT_EQ(train.to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 2, 3, 0, 4, 3}));
  EXPECT_EQ(valid.to_vector<int32_t>(), (std::vector<int32_t>{4, 1, 3}));
  EXPECT_EQ(test.dtype(), Dtype::int32);
  write_bytes(d + "/ptb.test.txt", " the\n bird\n");
  expect_error<IOError>([&] { get_ptb_words(d); }, {"ptb.test.txt", "line 2", "'bird'"});
  expect_error<IOError>([&] { get_ptb_words(d + "/none"); }, {"ptb.train.txt", "not found", "wojzaremba"});
}

TEST(TextDataset, LinesOfParallelFiles) {
  test::TempDir dir;
  const std::string d = dir.path().string();
  write_bytes(d + "/en.txt", "hello\nworld\n\nlast");
  write_bytes(d + "/fr.txt", "bonjour\nmonde\nvide\nfin\n");
  TextDataset one(d + "/en.txt");
  ASSERT_EQ(one.size(), 4);
  EXPECT_EQ(to_string(one.get_example(1)[0]), "world\n");  // with its newline, as readline
  EXPECT_EQ(to_string(one.get_example(3)[0]), "last");
  TextDataset both({d + "/en.txt", d + "/fr.txt"},
                   {.filter_func = [](const std::vector<std::string>& l) { return l[0] != "\n"; }});
  ASSERT_EQ(both.size(), 3);
  EXPECT_EQ(both.get_lines(2), (std::vector<std::string>{"last", "fin\n"}));
  write_bytes(d + "/short.txt", "a\n");
  expect_error<ValueError>([&] { TextDataset({d + "/en.txt", d + "/short.txt"}); },
                           {"TextDataset", "4 lines", "short.txt", "has 1"});
  expect_error<IOError>([&] { TextDataset(d + "/none.txt"); }, {"none.txt"});
  expect_error<IndexError>([&] { one.get_example(4); }, {"TextDataset", "4"});
}

TEST(DatasetRoot, FollowsTheEnvironment) {
  ::setenv("RENSA_DATASET_ROOT", "/data/sets", 1);
  EXPECT_EQ(get_dataset_root(), "/data/sets");
  ::unsetenv("RENSA_DATASET_ROOT");
  EXPECT_NE(get_dataset_root().find("/.rensa/dataset"), std::string::npos);
}

}  // namespace
}  // namespace rensa::datasets
