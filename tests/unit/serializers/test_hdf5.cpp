// HDF5 files in Chainer's layout: files Chainer 7.8.1's save_hdf5 wrote (tests/fixtures) load, files
// rensa writes read back and (with python3-h5py) read in h5py, every dtype, compression and chunking,
// Chainer's None, atomic writes and the errors of bad files.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "rensa/serializers/hdf5.h"
#include "tests/unit/serializers/npz_test_util.h"
#include "tests/unit/test_util.h"

namespace rensa::test {
namespace {

namespace L = rensa::links;
namespace S = rensa::serializers;

// Chainer's net of the fixtures: Linear(3, 4), BatchNormalization(4), Linear(4, 2).
struct Net : Chain {
  L::Linear l1{3, 4}, l2{4, 2};
  L::BatchNormalization bn{4};
  Net() {
    add_link("l1", l1);
    add_link("bn", bn);
    add_link("l2", l2);
  }
};

void expect_same_state(Link& a, Link& b) {
  S::DictionarySerializer sa, sb;
  a.serialize(sa);
  b.serialize(sb);
  ASSERT_EQ(sa.target().size(), sb.target().size());
  for (const auto& [key, value] : sa.target()) {
    SCOPED_TRACE(key);
    ASSERT_EQ(sb.target().count(key), 1u);
    EXPECT_TRUE(array_equal(value, sb.target().at(key)));
  }
}

TEST(Hdf5, WithoutTheLibraryEveryCallSaysSo) {
  if (S::hdf5_available()) GTEST_SKIP() << "built with HDF5";
  expect_error<NotImplementedError>([] { S::read_hdf5("x.h5"); }, "built without HDF5 support");
}

class Hdf5Test : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!S::hdf5_available()) GTEST_SKIP() << "rensa was built without HDF5";
  }
};

TEST_F(Hdf5Test, ChainersModelFileLoadsAsItsNpz) {
  Net from_h5, from_npz;
  S::load_hdf5((fixtures_dir() / "chainer_model.h5").string(), from_h5);
  S::load_npz((fixtures_dir() / "chainer_model_h5.npz").string(), from_npz);
  expect_same_state(from_h5, from_npz);
  EXPECT_EQ(from_h5.bn.persistent("N").item<int64_t>(), 7);
}

TEST_F(Hdf5Test, ChainersArraysReadWithTheirDtypes) {
  const auto a = S::read_hdf5((fixtures_dir() / "chainer_arrays.h5").string());
  ASSERT_EQ(a.size(), 8u);
  EXPECT_EQ(a.at("f16").dtype(), Dtype::float16);
  EXPECT_EQ(a.at("f16").to_vector<double>(), (std::vector<double>{0.5, -1.0, 65504.0}));
  EXPECT_EQ(a.at("f64").shape(), (Shape{2, 3}));
  EXPECT_EQ(a.at("f64").to_vector<double>(), (std::vector<double>{0, 0.25, 0.5, 0.75, 1.0, 1.25}));
  EXPECT_EQ(a.at("group/i32").dtype(), Dtype::int32);
  EXPECT_EQ(a.at("group/i32").to_vector<int32_t>(), (std::vector<int32_t>{1, -2}));
  EXPECT_EQ(a.at("group/i64").to_vector<int64_t>(), (std::vector<int64_t>{-3, 0, int64_t{1} << 40}));
  EXPECT_EQ(a.at("u8").dtype(), Dtype::uint8);
  EXPECT_EQ(a.at("u8").to_vector<int>(), (std::vector<int>{0, 1, 255}));
  EXPECT_EQ(a.at("flags").dtype(), Dtype::bool_);
  EXPECT_EQ(a.at("flags").to_vector<int>(), (std::vector<int>{1, 0, 1}));
  EXPECT_EQ(a.at("scalar").shape(), Shape{});
  EXPECT_EQ(a.at("scalar").item<double>(), 2.5);
  EXPECT_EQ(a.at("empty").shape(), (Shape{0, 3}));
}

TEST_F(Hdf5Test, ChainersNoneLeavesALazyParameterUninitialized) {
  const std::string path = (fixtures_dir() / "chainer_lazy.h5").string();
  EXPECT_TRUE(S::read_hdf5(path).at("l/W").is_null());
  struct Lazy : Chain {
    L::Linear l{2};
    Lazy() { add_link("l", l); }
  } lazy;
  S::load_hdf5(path, lazy);
  EXPECT_TRUE(lazy.l.W().array().is_null());
  EXPECT_EQ(lazy.l.b().array().to_vector<float>(), (std::vector<float>{0, 0}));
}

TEST_F(Hdf5Test, EveryDtypeRoundTripsAtEveryCompression) {
  TempDir dir;
  std::map<std::string, Array> arrays;
  for (Dtype d :
       {Dtype::float16, Dtype::float32, Dtype::float64, Dtype::int32, Dtype::int64, Dtype::uint8, Dtype::bool_}) {
    const std::string n(dtype_name(d));
    arrays[n] = sample({2, 3}, d, 1);
    arrays["scalar/" + n] = sample({}, d, 2);
    arrays["empty/" + n] = sample({0, 2}, d, 3);
  }
  arrays["deep/er/still"] = sample({4}, Dtype::float32, 4).transpose();  // strided input is fine
  arrays["big"] = randn({700, 600}, Dtype::float32);                     // chunked below 1 MiB
  for (int level : {0, 4, 9}) {
    const std::string path = dir.file("a" + std::to_string(level) + ".h5");
    S::write_hdf5(path, arrays, level);
    const auto back = S::read_hdf5(path);
    ASSERT_EQ(back.size(), arrays.size());
    for (const auto& [k, v] : arrays) EXPECT_TRUE(same_array(back.at(k), v)) << k;
  }
  // bfloat16 is stored as float32, as in .npz files.
  const Array bf = sample({3}, Dtype::bfloat16);
  S::write_hdf5(dir.file("bf.h5"), {{"x", bf}});
  EXPECT_EQ(S::read_hdf5(dir.file("bf.h5")).at("x").dtype(), Dtype::float32);
  EXPECT_LT(std::filesystem::file_size(dir.file("a9.h5")), std::filesystem::file_size(dir.file("a0.h5")));
  // Only the files: no temporary left behind.
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"a0.h5", "a4.h5", "a9.h5", "bf.h5"}));
}

TEST_F(Hdf5Test, SavedModelLoadsBack) {
  TempDir dir;
  Net a, b;
  S::load_npz((fixtures_dir() / "chainer_model_h5.npz").string(), a);
  S::save_hdf5(dir.file("net.h5"), a);
  S::load_hdf5(dir.file("net.h5"), b);
  expect_same_state(a, b);
}

TEST_F(Hdf5Test, CallsFromSeveralThreadsAtOnce) {
  // Debian's libhdf5 is not thread-safe; rensa serializes its calls (a background snapshot writer
  // and the training loop may both use it).
  TempDir dir;
  const std::map<std::string, Array> arrays{{"a/b", randn({64, 64}, Dtype::float32)}, {"c", Array::ones({3})}};
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        const std::string path = dir.file("t" + std::to_string(t) + ".h5");
        S::write_hdf5(path, arrays);
        if (array_equal(S::read_hdf5(path).at("a/b"), arrays.at("a/b"))) ++ok;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), 40);
}

// A Python 3 with h5py, or "".
std::string python_with_h5py() {
  for (const std::string py : {"python3", "/usr/bin/python3"}) {
    if (std::system((py + " -c 'import h5py' > /dev/null 2>&1").c_str()) == 0) return py;
  }
  return {};
}

TEST_F(Hdf5Test, H5pyReadsRensaFiles) {
  const std::string py = python_with_h5py();
  if (py.empty()) GTEST_SKIP() << "h5py is not installed";
  TempDir dir;
  Net net;
  S::load_npz((fixtures_dir() / "chainer_model_h5.npz").string(), net);
  S::save_hdf5(dir.file("net.h5"), net);
  S::write_hdf5(dir.file("arrays.h5"), {{"f16", Array::from_vector<double>({0.5, -2}, {2}).astype(Dtype::float16)},
                                        {"flags", Array::from_vector<bool>({true, false}, {2})},
                                        {"g/i64", Array::from_vector<int64_t>({-7, 1}, {2})}});
  // h5py sees Chainer's layout and values (the float32 weights compared with the .npz Chainer wrote).
  std::ostringstream script;
  script << "import h5py, numpy as np\n"
         << "f = h5py.File('" << dir.file("net.h5") << "', 'r')\n"
         << "ref = np.load('" << (fixtures_dir() / "chainer_model_h5.npz").string() << "')\n"
         << "names = []\nf.visit(lambda n: names.append(n) if isinstance(f[n], h5py.Dataset) else None)\n"
         << "assert sorted(names) == sorted(ref.files), (names, ref.files)\n"
         << "for n in names:\n"
         << "    assert np.array_equal(f[n][()], ref[n]), n\n"
         << "    assert f[n].dtype == ref[n].dtype or n == 'bn/N', (n, f[n].dtype, ref[n].dtype)\n"
         << "assert f['l1/W'].compression == 'gzip'\n"
         << "g = h5py.File('" << dir.file("arrays.h5") << "', 'r')\n"
         << "assert g['f16'].dtype == np.float16 and list(g['f16'][()]) == [0.5, -2.0]\n"
         << "assert g['flags'].dtype == np.bool_ and list(g['flags'][()]) == [True, False]\n"
         << "assert list(g['g/i64'][()]) == [-7, 1]\n"
         << "print('h5py ok')\n";
  write_bytes(dir.file("check.py"), script.str());
  EXPECT_EQ(std::system((py + " " + dir.file("check.py")).c_str()), 0);
}

TEST_F(Hdf5Test, BadFilesAndArgumentsGetClearErrors) {
  TempDir dir;
  expect_error<IOError>([&] { S::read_hdf5(dir.file("missing.h5")); }, "missing.h5: no such file");
  write_bytes(dir.file("text.h5"), "not hdf5 at all");
  expect_error<IOError>([&] { S::read_hdf5(dir.file("text.h5")); }, "text.h5: not an HDF5 file");
  const std::string whole = read_bytes((fixtures_dir() / "chainer_model.h5").string());
  write_bytes(dir.file("cut.h5"), whole.substr(0, whole.size() / 2));
  expect_error<IOError>([&] { S::read_hdf5(dir.file("cut.h5")); }, "read_hdf5: " + dir.file("cut.h5"));
  expect_error<IOError>([&] { S::read_hdf5((fixtures_dir() / "h5py_string.h5").string()); },
                        "dataset 'names' has an HDF5 type");
  expect_error<ValueError>(
      [&] {
        S::write_hdf5(dir.file("x.h5"), {{"a", Array::ones({2})}}, 10);
      },
      "compression must be a gzip level 0..9, got 10");
  expect_error<IOError>(
      [&] {
        S::write_hdf5((dir.path() / "no" / "dir.h5").string(), {{"a", Array::ones({2})}});
      },
      "dir.h5");
  // A failed write leaves the old file as it was.
  S::write_hdf5(dir.file("keep.h5"), {{"a", Array::ones({2})}});
  const std::string before = read_bytes(dir.file("keep.h5"));
  expect_error<ValueError>([&] { S::write_hdf5(dir.file("keep.h5"), {{"a", Array()}}); }, "array 'a' is null");
  EXPECT_EQ(read_bytes(dir.file("keep.h5")), before);
  // Loading into a model of other shapes, or one with keys the file lacks.
  struct Wide : Chain {
    L::Linear l1{3, 5};
    Wide() { add_link("l1", l1); }
  } wide;
  expect_error<IOError>([&] { S::load_hdf5((fixtures_dir() / "chainer_model.h5").string(), wide); },
                        "load_hdf5: '" + (fixtures_dir() / "chainer_model.h5").string() +
                            "': key 'l1/W' has shape (4, 3) in the file but the target has shape (5, 3)");
  struct Other : Chain {
    L::Linear l9{3, 4};
    Other() { add_link("l9", l9); }
  } other;
  expect_error<IOError>([&] { S::load_hdf5((fixtures_dir() / "chainer_model.h5").string(), other); },
                        "key 'l9/W' not found");
  S::load_hdf5((fixtures_dir() / "chainer_model.h5").string(), other, /*strict=*/false);  // leaves l9 as it is
}

}  // namespace
}  // namespace rensa::test
