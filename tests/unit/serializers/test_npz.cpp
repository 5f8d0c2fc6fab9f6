// .npy images and .npz archives: round trips, NumPy compatibility (checked-in fixtures and, when
// NumPy is installed, NumPy itself), atomic writes, and malformed input of every kind.

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "rensa/serializers/npz.h"
#include "src/serializers/npz_internal.h"
#include "tests/unit/serializers/npz_test_util.h"
#include "tests/unit/test_util.h"

namespace rensa::test {
namespace {

namespace S = rensa::serializers;

constexpr Dtype kAllDtypes[] = {Dtype::float32, Dtype::float64, Dtype::float16, Dtype::bfloat16,
                                Dtype::int32,   Dtype::int64,   Dtype::uint8,   Dtype::bool_};

// The dtype an array has after a trip through a file: bfloat16 is stored as float32.
Dtype stored_dtype(Dtype d) {
  return d == Dtype::bfloat16 ? Dtype::float32 : d;
}

std::string npy_image(const std::string& dict, int major = 1) {
  std::string out = "\x93NUMPY";
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  const std::size_t len = dict.size();
  if (major == 1) {
    out.push_back(static_cast<char>(len & 0xff));
    out.push_back(static_cast<char>(len >> 8));
  } else {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
  }
  return out + dict;
}

template <class T>
std::string raw(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

Array parse(const std::string& image, const std::string& what = "test image") {
  return S::parse_npy(image.data(), image.size(), what);
}

// ---- .npy --------------------------------------------------------------------------------------

TEST(Npy, RoundTripEveryDtypeAndShape) {
  const Shape shapes[] = {Shape{}, Shape{0}, Shape{5}, Shape{2, 3}, Shape{3, 0, 2}, Shape{2, 1, 3, 2}};
  for (Dtype d : kAllDtypes) {
    for (const Shape& s : shapes) {
      SCOPED_TRACE(::testing::Message() << d << " " << s);
      const Array a = sample(s, d);
      const std::string image = S::encode_npy(a);
      const Array b = parse(image);
      EXPECT_TRUE(same_array(b, a.astype(stored_dtype(d))));
      EXPECT_TRUE(b.is_contiguous());
    }
  }
}

TEST(Npy, HeaderIsWhatNumpyWrites) {
  const std::string image = S::encode_npy(Array::zeros({2, 3}, Dtype::float32));
  ASSERT_GE(image.size(), 10u);
  const std::size_t header_len = static_cast<unsigned char>(image[8]) | (static_cast<unsigned char>(image[9]) << 8);
  EXPECT_EQ((10 + header_len) % 64, 0u);
  EXPECT_EQ(image.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(image.substr(10, 59), "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
  EXPECT_EQ(image[10 + header_len - 1], '\n');
  EXPECT_EQ(image.size(), 10 + header_len + 24);
  EXPECT_NE(S::encode_npy(Array::zeros({4}, Dtype::int64)).find("'shape': (4,), }"), std::string::npos);
  EXPECT_NE(S::encode_npy(Array::zeros({}, Dtype::bool_)).find("'descr': '|b1', 'fortran_order': False, 'shape': ()"),
            std::string::npos);
}

TEST(Npy, NonContiguousAndBroadcastInputs) {
  const Array base = sample({4, 6}, Dtype::float64);
  const Array views[] = {base.transpose(), base.slice(1, 1, 6, 2), rensa::testing::make_noncontiguous(base),
                         Array::from_vector(std::vector<double>{1, 2, 3}).broadcast_to({2, 3}),
                         base.index({int64_t{2}})};
  for (const Array& v : views) {
    ASSERT_FALSE(v.is_contiguous() && v.offset() == 0 && v.shape() == base.shape());
    EXPECT_TRUE(same_array(parse(S::encode_npy(v)), v.copy()));
  }
}

TEST(Npy, ReadsVersions2And3) {
  const std::string data = raw(std::vector<int32_t>{7, -8});
  for (int major : {2, 3}) {
    const Array a = parse(npy_image("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }\n", major) + data);
    EXPECT_TRUE(same_array(a, Array::from_vector(std::vector<int32_t>{7, -8})));
  }
}

TEST(Npy, ReadsFortranOrderBigEndianAndOddSpacing) {
  // Column-major (2, 3): memory holds column after column.
  const Array f = parse(npy_image("{\"shape\":(2,3),\"fortran_order\":True,\"descr\":\"<f8\"}") +
                        raw(std::vector<double>{0, 3, 1, 4, 2, 5}));
  EXPECT_TRUE(same_array(f, Array::arange(0, 6, 1, Dtype::float64).reshape({2, 3})));
  EXPECT_TRUE(f.is_contiguous());
  std::string be = raw(std::vector<float>{1.5f, -2.0f});
  for (std::size_t i = 0; i < be.size(); i += 4) std::reverse(be.begin() + i, be.begin() + i + 4);
  const Array b = parse(npy_image("{ 'descr' : '>f4' , 'fortran_order' : False , 'shape' : ( 2 , ) }   \n") + be);
  EXPECT_TRUE(same_array(b, Array::from_vector(std::vector<float>{1.5f, -2.0f})));
  const Array l = parse(npy_image("{'descr': '<i8', 'fortran_order': False, 'shape': (1L, 2L), }") +
                        raw(std::vector<int64_t>{4, 5}));
  EXPECT_EQ(l.shape(), (Shape{1, 2}));
}

TEST(Npy, BoolBytesOtherThanOneAreTrue) {
  const Array a =
      parse(npy_image("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }") + std::string("\x00\x02\xff", 3));
  EXPECT_EQ(a.to_vector<int>(), (std::vector<int>{0, 1, 1}));
}

TEST(Npy, BFloat16IsStoredAsFloat32) {
  const Array a = Array::from_vector(std::vector<float>{1.5f, -0.25f, 3.0f}).astype(Dtype::bfloat16);
  const std::string image = S::encode_npy(a);
  EXPECT_NE(image.find("'descr': '<f4'"), std::string::npos);
  const Array b = parse(image);
  EXPECT_EQ(b.dtype(), Dtype::float32);
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{1.5f, -0.25f, 3.0f}));
}

TEST(Npy, MalformedHeadersThrowIOError) {
  const std::string f4 = raw(std::vector<float>{1, 2});
  struct Case {
    std::string dict;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"", "bad .npy header"},
      {"{'descr': '<f4', 'fortran_order': False}", "missing key 'shape'"},
      {"{'descr': '<f4', 'shape': (2,)}", "missing key 'fortran_order'"},
      {"{'fortran_order': False, 'shape': (2,)}", "missing key 'descr'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", "duplicate key 'descr'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}", "unexpected key 'extra'"},
      {"{'descr': '<f4', 'fortran_order': false, 'shape': (2,)}", "not True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2)}", "not a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [2]}", "not a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", "non-negative integer"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", "overflows"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x", "unexpected text"},
      {"{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}", "expected ',' or '}'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", "expected ',' or '}'"},
      {"{'descr: '<f4', 'fortran_order': False, 'shape': (2,)}", "bad .npy header"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}", "structured dtypes"},
      {"{'descr': '<f\\x34', 'fortran_order': False, 'shape': (2,)}", "unsupported character"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.dict);
    expect_error<IOError>([&] { parse(npy_image(c.dict) + f4, "img.npy"); }, {"parse_npy: img.npy", c.message});
  }
}

TEST(Npy, UnsupportedDtypesThrowIOError) {
  for (const char* descr : {"<i2", "|i1", "<u4", "<c8", "|O", "<U3", "|f4", "f4", "<f16", "<M8[ns]"}) {
    SCOPED_TRACE(descr);
    const std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (1,), }";
    expect_error<IOError>([&] { parse(npy_image(dict) + std::string(8, '\0'), "x"); },
                          {"parse_npy: x", "unsupported dtype", descr, "rensa reads"});
  }
}

TEST(Npy, BadPreambleAndSizesThrowIOError) {
  const std::string good = S::encode_npy(sample({2, 2}, Dtype::int32));
  expect_error<IOError>([&] { parse(good.substr(0, 5)); }, {"truncated"});
  std::string bad_magic = good;
  bad_magic[1] = 'X';
  expect_error<IOError>([&] { parse(bad_magic); }, {"bad magic", "not a .npy"});
  std::string bad_version = good;
  bad_version[6] = 4;
  expect_error<IOError>([&] { parse(bad_version); }, {"unsupported .npy format version 4.0"});
  bad_version[6] = 1;
  bad_version[7] = 1;
  expect_error<IOError>([&] { parse(bad_version); }, {"version 1.1"});
  std::string long_header = good;
  long_header[8] = '\xff';
  long_header[9] = '\xff';
  expect_error<IOError>([&] { parse(long_header); }, {"header length 65535 exceeds"});
  expect_error<IOError>([&] { parse(good.substr(0, good.size() - 1)); },
                        {"shape (2, 2) of dtype int32 needs 16 data bytes but the image holds 15"});
  expect_error<IOError>([&] { parse(good + "x"); }, {"needs 16 data bytes but the image holds 17"});
  const std::string huge = npy_image("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296)}");
  expect_error<IOError>([&] { parse(huge); }, {"overflows 64-bit"});
  expect_error<IOError>([&] { S::parse_npy(nullptr, 0, "null"); }, {"parse_npy: null", "truncated"});
}

// ---- .npz round trips --------------------------------------------------------------------------

TEST(Npz, RoundTripEveryDtypeWithEdgeShapes) {
  TempDir dir;
  std::map<std::string, Array> arrays;
  int salt = 0;
  for (Dtype d : kAllDtypes) {
    const std::string n(dtype_name(d));
    arrays[n + "/scalar"] = sample({}, d, ++salt);
    arrays[n + "/empty"] = sample({0, 4}, d, ++salt);
    arrays[n + "/matrix"] = sample({3, 5}, d, ++salt);
    arrays[n + "/strided"] = rensa::testing::make_noncontiguous(sample({2, 3, 4}, d, ++salt));
    arrays[n + "/transposed"] = sample({3, 4}, d, ++salt).transpose();
  }
  const std::string path = dir.file("all.npz");
  S::write_npz(path, arrays);
  const auto back = S::read_npz(path);
  ASSERT_EQ(back.size(), arrays.size());
  for (const auto& [key, a] : arrays) {
    SCOPED_TRACE(key);
    ASSERT_EQ(back.count(key), 1u);
    EXPECT_TRUE(same_array(back.at(key), a.astype(stored_dtype(a.dtype()))));
    EXPECT_TRUE(back.at(key).is_contiguous());
  }
  // encode_npz gives the same bytes as the file, and the same bytes every time.
  EXPECT_EQ(S::encode_npz(arrays), read_bytes(path));
  EXPECT_EQ(S::encode_npz(arrays), S::encode_npz(arrays));
  const std::string bytes = S::encode_npz(arrays);
  EXPECT_EQ(S::read_npz_bytes(bytes.data(), bytes.size(), "buffer").size(), arrays.size());
}

TEST(Npz, EmptyArchiveAndOddNames) {
  TempDir dir;
  S::write_npz(dir.file("empty.npz"), {});
  EXPECT_TRUE(S::read_npz(dir.file("empty.npz")).empty());
  const std::map<std::string, Array> arrays = {
      {"a.npy", Array::ones({1})}, {"updater/model:main/l1/W", Array::ones({2, 2})}, {"caf\xc3\xa9", Array::zeros({})}};
  S::write_npz(dir.file("names.npz"), arrays);
  const auto back = S::read_npz(dir.file("names.npz"));
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back.count("a.npy"), 1u);
  EXPECT_EQ(back.count("updater/model:main/l1/W"), 1u);
  EXPECT_EQ(back.count("caf\xc3\xa9"), 1u);
}

TEST(Npz, WriteRejectsNullArraysAndEmptyNames) {
  TempDir dir;
  expect_error<ValueError>([&] { S::write_npz(dir.file("x.npz"), {{"w", Array()}}); }, {"write_npz", "'w'", "null"});
  expect_error<ValueError>(
      [&] {
        S::write_npz(dir.file("x.npz"), {{"", Array::ones({1})}});
      },
      {"write_npz", "empty array name"});
  EXPECT_TRUE(dir.listing().empty());  // no temporary file left behind
}

TEST(Npz, ForcedZip64RoundTrips) {
  std::map<std::string, Array> arrays = {{"a", sample({3, 2}, Dtype::float32)}, {"b", sample({}, Dtype::int64)}};
  S::detail::StringSink sink;
  S::detail::write_npz_to(sink, arrays, {.force_zip64 = true}, "test");
  const std::string& bytes = sink.bytes();
  EXPECT_NE(bytes.find(std::string("PK\x06\x06", 4)), std::string::npos);  // ZIP64 end record
  const auto back = S::read_npz_bytes(bytes.data(), bytes.size(), "zip64");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_TRUE(same_array(back.at("a"), arrays.at("a")));
  EXPECT_TRUE(same_array(back.at("b"), arrays.at("b")));
}

TEST(Npz, MoreThan65535EntriesUseZip64) {
  std::map<std::string, Array> arrays;
  const Array one = Array::ones({}, Dtype::uint8);
  for (int i = 0; i < 65540; ++i) arrays.emplace(std::to_string(i), one);
  const std::string bytes = S::encode_npz(arrays);
  EXPECT_NE(bytes.find(std::string("PK\x06\x06", 4)), std::string::npos);
  const auto back = S::read_npz_bytes(bytes.data(), bytes.size(), "many");
  EXPECT_EQ(back.size(), arrays.size());
  EXPECT_EQ(back.at("65539").item<int>(), 1);
}

// ---- NumPy's own files -------------------------------------------------------------------------

void expect_fixture_arrays(const std::map<std::string, Array>& a) {
  EXPECT_TRUE(
      same_array(a.at("f32"), Array::from_vector(std::vector<float>{1.5f, -2.0f, 3.25f, 0.0f, 1e-3f, -7.5f}, {2, 3})));
  EXPECT_TRUE(same_array(a.at("i64"), Array::from_vector(std::vector<int64_t>{-3, 0, 7, int64_t{1} << 40})));
  EXPECT_TRUE(same_array(a.at("flags"), Array::from_vector(std::vector<bool>{true, false, true})));
  EXPECT_TRUE(same_array(a.at("scalar"), Array::scalar(2.5, Dtype::float64)));
  EXPECT_TRUE(same_array(a.at("fortran"), Array::arange(0, 6, 1, Dtype::float64).reshape({2, 3})));
}

TEST(Npz, ReadsNumpySavezFixture) {
  const auto a = S::read_npz((fixtures_dir() / "numpy_savez.npz").string());
  ASSERT_EQ(a.size(), 5u);
  expect_fixture_arrays(a);
}

TEST(Npz, ReadsNumpySavezCompressedFixture) {
  const auto a = S::read_npz((fixtures_dir() / "numpy_savez_compressed.npz").string());
  ASSERT_EQ(a.size(), 10u);
  expect_fixture_arrays(a);
  EXPECT_TRUE(same_array(a.at("child/u8"), Array::from_vector(std::vector<uint8_t>{0, 1, 255})));
  EXPECT_TRUE(same_array(a.at("f16"), Array::from_vector(std::vector<float>{0.5f, -1.0f}).astype(Dtype::float16)));
  EXPECT_TRUE(same_array(a.at("i32"), Array::from_vector(std::vector<int32_t>{1, -2}, {2, 1})));
  EXPECT_TRUE(same_array(a.at("empty"), Array::zeros({0, 3})));
  EXPECT_TRUE(same_array(a.at("big_endian"), Array::from_vector(std::vector<double>{1.0, -2.0})));
}

// A Python 3 with NumPy, or "" (the interpreter first on PATH may lack NumPy while the system's has it).
std::string python_with_numpy() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("RENSA_PYTHON")) candidates.emplace_back(env);
  candidates.emplace_back("python3");
  candidates.emplace_back("/usr/bin/python3");
  for (const auto& py : candidates) {
    if (std::system((py + " -c 'import numpy' > /dev/null 2>&1").c_str()) == 0) return py;
  }
  return {};
}

std::string python_list(const Array& a) {
  std::ostringstream os;
  os.precision(17);
  os << "[";
  for (double v : a.to_vector<double>()) os << v << ",";
  os << "]";
  return os.str();
}

TEST(Npz, NumpyReadsRensaFilesAndRensaReadsThemBack) {
  const std::string py = python_with_numpy();
  if (py.empty()) GTEST_SKIP() << "NumPy is not installed";
  TempDir dir;
  std::map<std::string, Array> arrays;
  for (Dtype d : kAllDtypes) {
    const std::string n(dtype_name(d));
    arrays[n] = sample({2, 3}, d, 1);
    arrays["scalar/" + n] = sample({}, d, 2);
    arrays["empty/" + n] = sample({0, 2}, d, 3);
    arrays["strided/" + n] = sample({4, 3}, d, 4).transpose();
  }
  S::write_npz(dir.file("rensa.npz"), arrays);
  S::detail::StringSink sink;
  S::detail::write_npz_to(sink, arrays, {.force_zip64 = true}, "test");
  write_bytes(dir.file("zip64.npz"), sink.bytes());

  std::ostringstream script;
  script << "import numpy as np, sys\n"
         << "expected = {\n";
  for (const auto& [key, a] : arrays) {
    const Dtype d = stored_dtype(a.dtype());
    const std::string descr = d == Dtype::bool_ ? "bool" : std::string(dtype_name(d));
    script << "  '" << key << "': ('" << descr << "', (";
    for (int64_t e : a.shape()) script << e << ",";
    script << "), " << python_list(a) << "),\n";
  }
  script
      << "}\n"
      << "for name in sys.argv[1:3]:\n"
      << "  f = np.load(name)\n"
      << "  assert sorted(f.files) == sorted(expected), (name, f.files)\n"
      << "  for k, (dt, shape, vals) in expected.items():\n"
      << "    a = f[k]\n"
      << "    assert a.dtype == np.dtype(dt), (k, a.dtype, dt)\n"
      << "    assert a.shape == shape, (k, a.shape, shape)\n"
      << "    assert np.array_equal(a.ravel(), np.array(vals).astype(dt)), (k, a, vals)\n"
      << "f = np.load(sys.argv[1])\n"
      << "np.savez_compressed(sys.argv[3], **{k: np.asfortranarray(f[k]) if f[k].ndim else f[k] for k in f.files})\n";
  write_bytes(dir.file("check.py"), script.str());
  const std::string cmd = py + " " + dir.file("check.py") + " " + dir.file("rensa.npz") + " " + dir.file("zip64.npz") +
                          " " + dir.file("numpy.npz");
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "NumPy rejected rensa's file: " << cmd;

  const auto back = S::read_npz(dir.file("numpy.npz"));
  ASSERT_EQ(back.size(), arrays.size());
  for (const auto& [key, a] : arrays) {
    SCOPED_TRACE(key);
    EXPECT_TRUE(same_array(back.at(key), a.astype(stored_dtype(a.dtype()))));
  }
}

// ---- atomic writes -----------------------------------------------------------------------------

TEST(NpzAtomicWrite, LeavesNoTemporaryFile) {
  TempDir dir;
  S::write_npz(dir.file("m.npz"), {{"w", Array::ones({3})}});
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"m.npz"});
}

TEST(NpzAtomicWrite, ReplacesAnExistingFileWhole) {
  TempDir dir;
  const std::string path = dir.file("m.npz");
  S::write_npz(path, {{"big", Array::ones({4096}, Dtype::float64)}, {"other", Array::ones({3})}});
  const auto big_size = std::filesystem::file_size(path);
  S::write_npz(path, {{"small", Array::zeros({2})}});
  EXPECT_LT(std::filesystem::file_size(path), big_size);
  EXPECT_EQ(read_bytes(path), S::encode_npz({{"small", Array::zeros({2})}}));
  const auto back = S::read_npz(path);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back.count("small"), 1u);
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"m.npz"});
}

TEST(NpzAtomicWrite, FailureLeavesTheOldFile) {
  TempDir dir;
  const std::string path = dir.file("m.npz");
  S::write_npz(path, {{"w", Array::ones({3})}});
  const std::string before = read_bytes(path);
  EXPECT_THROW(S::write_npz(path, {{"a", Array::ones({2})}, {"b", Array()}}), ValueError);
  EXPECT_EQ(read_bytes(path), before);
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"m.npz"});
  {
    S::detail::AtomicFileWriter w(dir.file("n.npz"), "test");
    w.write("abc", 3);
    EXPECT_TRUE(std::filesystem::exists(w.temp_path()));
    EXPECT_EQ(std::filesystem::path(w.temp_path()).parent_path(), dir.path());
  }
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"m.npz"});
}

TEST(NpzAtomicWrite, MissingDirectoryOrDirectoryTargetThrows) {
  TempDir dir;
  const std::string path = dir.file("no/such/dir/m.npz");
  expect_error<IOError>(
      [&] {
        S::write_npz(path, {{"w", Array::ones({1})}});
      },
      {"write_npz", path, "No such file or directory"});
  std::filesystem::create_directory(dir.file("sub"));
  expect_error<IOError>([&] { S::write_npz(dir.file("sub"), {{"w", Array::ones({1})}}); }, {"write_npz", "sub"});
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"sub"});
}

TEST(NpzAtomicWrite, LargeArraysBypassTheBuffer) {
  TempDir dir;
  const Array big = sample({3, 400000}, Dtype::float32);  // 4.8 MB, written past the 1 MiB buffer
  S::write_npz(dir.file("big.npz"), {{"a", Array::ones({5})}, {"big", big}, {"z", Array::ones({2})}});
  const auto back = S::read_npz(dir.file("big.npz"));
  EXPECT_TRUE(same_array(back.at("big"), big));
  EXPECT_TRUE(same_array(back.at("z"), Array::ones({2})));
}

TEST(NpzAtomicWrite, TemporaryNamesParse) {
  TempDir dir;
  S::detail::AtomicFileWriter w(dir.file("m.v1.npz"), "test");
  const auto parsed = S::detail::parse_temp_name(std::filesystem::path(w.temp_path()).filename().string());
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->target, "m.v1.npz");
  EXPECT_EQ(parsed->pid, static_cast<long>(::getpid()));
  for (const char* bad : {"m.npz", ".m.npz", ".m.npz.tmp", ".m.npz.tmp12-ab", ".m.npz.tmp12-xy-0", ".m.npz.tmp-ab-0",
                          ".m.npz.tmp12-ab-", ".tmp12-ab-0", ".m.npz.tmp1234567890123-ab-0"}) {
    EXPECT_FALSE(S::detail::parse_temp_name(bad).has_value()) << bad;
  }
}

TEST(NpzAtomicWrite, RemovesStaleTemporariesOnly) {
  TempDir dir;
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);  // a writer that died
  const std::string dead = std::to_string(child);
  std::ofstream(dir.file(".a.npz.tmp" + dead + "-ff-0")) << "partial";
  std::ofstream(dir.file(".b.npz.tmp" + dead + "-ff-0")) << "other target";
  std::ofstream(dir.file(".a.npz.tmp" + std::to_string(::getpid()) + "-ff-1")) << "live writer";
  std::ofstream(dir.file("a.npz")) << "complete";
  std::filesystem::create_directory(dir.file(".a.npz.tmp" + dead + "-ff-2"));  // not a regular file
  const auto removed = S::remove_stale_temporaries(dir.path().string(), [](std::string_view t) { return t == "a.npz"; });
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(std::filesystem::path(removed[0]).filename().string(), ".a.npz.tmp" + dead + "-ff-0");
  EXPECT_EQ(dir.listing().size(), 4u);
  EXPECT_TRUE(S::remove_stale_temporaries(dir.file("missing"), [](std::string_view) { return true; }).empty());
}

// ---- malformed files ---------------------------------------------------------------------------

TEST(NpzErrors, MissingOrNonRegularFiles) {
  TempDir dir;
  expect_error<IOError>([&] { S::read_npz(dir.file("none.npz")); }, {"read_npz", "none.npz", "cannot open"});
  expect_error<IOError>([&] { S::read_npz(dir.path().string()); }, {"read_npz", "not a regular file"});
  write_bytes(dir.file("empty.npz"), "");
  expect_error<IOError>([&] { S::read_npz(dir.file("empty.npz")); }, {"read_npz", "empty.npz", "not a zip file"});
  write_bytes(dir.file("text.npz"), std::string(100, 'x'));
  expect_error<IOError>([&] { S::read_npz(dir.file("text.npz")); }, {"text.npz", "no zip end-of-central-directory"});
}

std::string fixture_bytes(const char* name) {
  return read_bytes((fixtures_dir() / name).string());
}

void put_le(std::string& s, std::size_t at, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s[at + static_cast<std::size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xff);
}
uint64_t get_le(const std::string& s, std::size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(s[at + i])) << (8 * i);
  return v;
}

// Offsets of the central directory records, in order.
std::vector<std::size_t> central_records(const std::string& zip) {
  std::vector<std::size_t> out;
  for (std::size_t p = zip.find("PK\x01\x02"); p != std::string::npos; p = zip.find("PK\x01\x02", p + 1)) {
    out.push_back(p);
  }
  return out;
}

std::map<std::string, Array> read_buffer(const std::string& bytes) {
  return S::read_npz_bytes(bytes.data(), bytes.size(), "'buf.npz'");
}

TEST(NpzErrors, BadCrcNamesTheEntry) {
  std::string z = fixture_bytes("numpy_savez.npz");
  const std::size_t data = z.find("{'descr': '<i8'");  // in i64.npy
  ASSERT_NE(data, std::string::npos);
  const std::size_t last = z.find("PK", data) - 1;  // last data byte of the entry
  z[last] = static_cast<char>(z[last] ^ 0x10);
  expect_error<IOError>([&] { read_buffer(z); }, {"read_npz: 'buf.npz'", "entry 'i64.npy'", "CRC-32 mismatch"});
}

TEST(NpzErrors, UnsupportedCompressionMethod) {
  std::string z = fixture_bytes("numpy_savez.npz");
  const auto cd = central_records(z);
  ASSERT_FALSE(cd.empty());
  put_le(z, cd[0] + 10, 12, 2);  // bzip2
  expect_error<IOError>([&] { read_buffer(z); }, {"entry 'f32.npy'", "unsupported compression method 12"});
  put_le(z, cd[0] + 10, 0, 2);
  put_le(z, cd[0] + 8, 1, 2);
  expect_error<IOError>([&] { read_buffer(z); }, {"entry 'f32.npy'", "encrypted"});
}

TEST(NpzErrors, OverlappingAndOutOfRangeOffsets) {
  const std::string orig = fixture_bytes("numpy_savez.npz");
  const auto cd = central_records(orig);
  ASSERT_EQ(cd.size(), 5u);
  std::string z = orig;
  // Entry 1's data and entry 2's local header overlap when entry 2 starts inside entry 1.
  put_le(z, cd[1] + 20, get_le(z, cd[1] + 20, 4) + 64, 4);
  put_le(z, cd[1] + 24, get_le(z, cd[1] + 24, 4) + 64, 4);
  expect_error<IOError>([&] { read_buffer(z); }, {"entries 'i64.npy' and 'flags.npy' overlap"});
  z = orig;
  put_le(z, cd[2] + 42, 0x7fffffff, 4);
  expect_error<IOError>([&] { read_buffer(z); },
                        {"entry 'flags.npy'", "local header offset 2147483647 is out of range"});
  z = orig;
  put_le(z, cd[2] + 42, get_le(orig, cd[0] + 42, 4), 4);  // points at entry 0's local header
  expect_error<IOError>([&] { read_buffer(z); }, {"entry 'flags.npy'", "local header name"});
  z = orig;
  put_le(z, cd[3] + 20, 0xfffffff0, 4);
  put_le(z, cd[3] + 24, 0xfffffff0, 4);
  expect_error<IOError>([&] { read_buffer(z); }, {"entry 'scalar.npy'", "runs past the central directory"});
  z = orig;
  const std::size_t end = z.rfind("PK\x05\x06");
  put_le(z, end + 16, z.size(), 4);
  expect_error<IOError>([&] { read_buffer(z); }, {"central directory (offset", "lies outside"});
  z = orig;
  put_le(z, end + 10, 60000, 2);
  put_le(z, end + 8, 60000, 2);
  expect_error<IOError>([&] { read_buffer(z); }, {"60000 entries cannot fit"});
}

TEST(NpzErrors, CompressedEntriesWithBadSizesOrData) {
  const std::string orig = fixture_bytes("numpy_savez_compressed.npz");
  const auto cd = central_records(orig);
  ASSERT_EQ(cd.size(), 10u);
  std::string z = orig;
  put_le(z, cd[0] + 24, get_le(z, cd[0] + 24, 4) + 1, 4);  // uncompressed size one too big
  expect_error<IOError>([&] { read_buffer(z); }, {"entry 'f32.npy'", "needs 24 data bytes but the image holds 25"});
  z = orig;
  put_le(z, cd[0] + 24, get_le(z, cd[0] + 24, 4) * 5000, 4);
  expect_error<IOError>([&] { read_buffer(z); }, {"entry 'f32.npy'", "is impossible for"});
  z = orig;
  const uint64_t local = get_le(z, cd[0] + 42, 4);
  const std::size_t data = local + 30 + get_le(z, local + 26, 2) + get_le(z, local + 28, 2);
  z[data] = static_cast<char>(0xff);  // an invalid block type
  expect_error<IOError>([&] { read_buffer(z); }, {"entry 'f32.npy'", "deflate"});
}

// Reading must throw rensa::Error or return exactly the original arrays; never crash.
void expect_error_or_original(const std::string& bytes, const std::map<std::string, Array>& original) {
  std::map<std::string, Array> got;
  try {
    got = read_buffer(bytes);
  } catch (const rensa::Error&) {
    return;
  }
  ASSERT_EQ(got.size(), original.size());
  for (const auto& [k, a] : original) {
    ASSERT_EQ(got.count(k), 1u) << k;
    EXPECT_TRUE(same_array(got.at(k), a)) << k;
  }
}

TEST(NpzCorruption, TruncationAtEveryLength) {
  for (const char* name : {"numpy_savez.npz", "numpy_savez_compressed.npz"}) {
    SCOPED_TRACE(name);
    const std::string z = fixture_bytes(name);
    ASSERT_GT(z.size(), 1000u);
    const auto original = read_buffer(z);
    for (std::size_t n = 0; n < z.size(); ++n) {
      // Keep the bytes in their own allocation so that AddressSanitizer sees any overread.
      const std::vector<char> cut(z.begin(), z.begin() + static_cast<std::ptrdiff_t>(n));
      EXPECT_THROW(S::read_npz_bytes(cut.data(), cut.size(), "cut"), rensa::Error) << "length " << n;
    }
    expect_error_or_original(z, original);
  }
}

TEST(NpzCorruption, ByteFlipsAtEveryOffset) {
  for (const char* name : {"numpy_savez.npz", "numpy_savez_compressed.npz"}) {
    SCOPED_TRACE(name);
    const std::string z = fixture_bytes(name);
    const auto original = read_buffer(z);
    for (std::size_t i = 0; i < z.size(); ++i) {
      for (unsigned char mask : {0x01, 0x80, 0xff}) {
        std::string c = z;
        c[i] = static_cast<char>(c[i] ^ mask);
        SCOPED_TRACE(::testing::Message() << "offset " << i << " mask " << int(mask));
        expect_error_or_original(c, original);
      }
    }
  }
}

TEST(NpzCorruption, RensaWrittenFileTruncatedAndFlipped) {
  const std::map<std::string, Array> arrays = {{"a", sample({2, 3}, Dtype::float32)}, {"b", sample({}, Dtype::bool_)}};
  const std::string z = S::encode_npz(arrays);
  for (std::size_t n = 0; n < z.size(); ++n) {
    EXPECT_THROW(read_buffer(z.substr(0, n)), rensa::Error) << "length " << n;
  }
  for (std::size_t i = 0; i < z.size(); ++i) {
    std::string c = z;
    c[i] = static_cast<char>(c[i] ^ 0x24);
    expect_error_or_original(c, arrays);
  }
}

}  // namespace
}  // namespace rensa::test
